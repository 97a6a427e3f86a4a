"""Behavioral reference model: plain numpy, executed from the layout tables.

Every function takes a parsed :class:`~tensorlsu.sim.ptx.Instr` (or instruction text, parsed
for the default target) and refuses undefined behavior with :class:`ModelError` naming what
is wrong: misaligned or out-of-range rows, wmma addresses and strides breaking the alignment
rules, Tensor Memory lanes outside the warp's quadrant, columns beyond the last one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, cast

import numpy as np

from . import descriptor, layouts, ptx, tmem_plan
from .decompress import decompress
from .ptx import WMMA_BITS, Instr

__all__ = ["ModelError", "Memory", "RowRequest", "SharedLoads", "wmma_shared_loads", "wmma_wavefront_groups",
           "ldmatrix", "stmatrix", "wmma_load", "tcgen05_ld", "tcgen05_st", "tcgen05_cp", "tmem_image",
           "plan", "wavefronts", "shared_wavefronts", "tmem_steps", "copy_steps", "SHARED_WIDTHS", "POLICIES",
           "TMEM_LANES", "TMEM_COLS", "wmma_default_stride",
           "integer", "registers", "ADDR_BITS", "STRIDE_BITS", "REG_BITS"]

#: Tensor Memory per CTA: lanes × 32-bit columns (docs/facts.md).
TMEM_LANES = 128
TMEM_COLS = 512
#: Lanes of Tensor Memory one warp of a warpgroup may access.
TMEM_QUADRANT = 32
#: Shared memory per SM of sm_90 and sm_100 (228 KiB), the largest of the targets the forms
#: come from: the unit's largest size, and what a trace record without an image has.
SMEM_BYTES = 228 * 1024
#: Scheduling policies of :func:`wavefronts`.
POLICIES = ("h200", "packed")
#: wmma matrices must start on a 256-bit boundary; strides must be a multiple of 16 bytes.
WMMA_ADDR_ALIGN = 32
WMMA_STRIDE_ALIGN = 16
_CANONICAL_NAN = 0x7FFFFFFF


class ModelError(ValueError):
    """The instruction is legal but this execution would be undefined behavior."""


def _ins(ins: Instr | str) -> Instr:
    return ptx.parse(ins) if isinstance(ins, str) else ins


def _u8(img, what: str) -> np.ndarray:
    a = np.asarray(img)
    if a.dtype != np.uint8:
        if isinstance(img, (bytes, bytearray, memoryview)):
            a = np.frombuffer(img, dtype=np.uint8)
        else:
            raise ModelError(f"{what} must be a uint8 array or bytes, not {a.dtype}")
    if a.ndim != 1:
        raise ModelError(f"{what} must be one-dimensional, not of shape {a.shape}")
    return a


#: Operand widths as PTX gives them: a shared-memory address (``.shared::cta`` window), a
#: wmma.load's stride, a register.
ADDR_BITS, STRIDE_BITS, REG_BITS = 32, 32, 32


def integer(v, what: str, bits: int | None = None, signed: bool = False) -> int:
    """``v`` as a Python int: an integer (not a bool, a float or a string) that fits ``bits``
    bits (unsigned, or two's complement with ``signed``); else :class:`ModelError` naming
    ``what``."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ModelError(f"{what} must be an integer, not {type(v).__name__} {v!r}"[:200])
    v = int(v)
    if bits is not None:
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        if not lo <= v < hi:
            shown = f"{v:#x}" if abs(v) < 1 << 128 else f"a {v.bit_length()}-bit number"
            span = f"-2^{bits - 1} … 2^{bits - 1} - 1" if signed else f"0 … 2^{bits} - 1"
            raise ModelError(f"{what} {shown} is outside {span}: not a {bits}-bit operand")
    return v


def _addr32(addr, what: str = "addr") -> np.ndarray:
    """32 thread addresses, each a 32-bit shared-memory address."""
    if isinstance(addr, np.ndarray) and addr.dtype.kind in "iu" and addr.shape == (layouts.LANES,):
        vals = addr.tolist()
    elif isinstance(addr, (list, tuple, np.ndarray)):
        vals = list(addr)
    else:
        raise ModelError(f"{what} must hold {layouts.LANES} thread addresses, not {type(addr).__name__}")
    if len(vals) != layouts.LANES:
        raise ModelError(f"{what} must hold {layouts.LANES} thread addresses, not {len(vals)}")
    return np.array([integer(a, f"{what} of thread {t}", ADDR_BITS) for t, a in enumerate(vals)],
                    dtype=np.int64)


def registers(regs, nregs: int, what: str) -> np.ndarray:
    """``uint64[32, nregs]`` of ``regs``: 32 threads of ``nregs`` 32-bit register values."""
    if isinstance(regs, np.ndarray) and regs.dtype.kind in "iu":
        r = regs
        if r.shape != (layouts.LANES, nregs):
            raise ModelError(f"{what}: regs must have shape ({layouts.LANES}, {nregs}), not {r.shape}")
        if r.size and (int(r.min()) < 0 or int(r.max()) >> REG_BITS):
            raise ModelError(f"{what}: register values must be 32-bit")
        return r.astype(np.uint64)
    try:
        rows = [list(x) for x in regs]
    except TypeError:
        raise ModelError(f"{what}: regs must be {layouts.LANES} lists of {nregs} registers") from None
    if len(rows) != layouts.LANES or any(len(x) != nregs for x in rows):
        shape = (len(rows), *sorted({len(x) for x in rows}))
        raise ModelError(f"{what}: regs must have shape ({layouts.LANES}, {nregs}), not {shape}")
    for t, x in enumerate(rows):
        for k, w in enumerate(x):
            if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, np.integer)) or not 0 <= w < 1 << REG_BITS:
                raise ModelError(f"{what}: register values must be 32-bit (thread {t} register {k}: {w!r})"[:200])
    return np.array(rows, dtype=np.uint64).reshape(layouts.LANES, nregs)


# --------------------------------------------------------------------------------------
# Memories
# --------------------------------------------------------------------------------------

@dataclass
class Memory:
    """Shared and global memory images for wmma.load.

    Shared addresses are offsets in ``shared``; global addresses are absolute and the image
    ``global_`` starts at ``global_base``. A generic address inside the global image is a
    global access, otherwise a shared-window offset.
    """

    shared: np.ndarray | bytes | None = None
    global_: np.ndarray | bytes | None = None
    global_base: int = 0

    def __post_init__(self):
        self.shared = _u8(self.shared if self.shared is not None else b"", "shared image")
        self.global_ = _u8(self.global_ if self.global_ is not None else b"", "global image")

    def image(self, space: str) -> np.ndarray:
        """The ``shared`` or ``global`` image (``__post_init__`` made both uint8 arrays)."""
        return cast(np.ndarray, self.global_ if space == "global" else self.shared)

    def space_of(self, space: str, addr: int) -> str:
        """``shared`` or ``global``: a generic address is global when it lies in the global image."""
        size = len(self.image("global"))
        if space == "generic":
            return "global" if size and self.global_base <= addr < self.global_base + size else "shared"
        return space

    def resolve(self, space: str, addr: int, nbytes: int) -> tuple[np.ndarray, int, str]:
        """(image, offset, space) of ``nbytes`` at ``addr``; refuses addresses outside the image."""
        g0 = self.global_base
        space = self.space_of(space, addr)
        img, off = self.image(space), addr - g0 if space == "global" else addr
        if off < 0 or off + nbytes > len(img):
            raise ModelError(f"{space} address range 0x{addr:x}..0x{addr + nbytes - 1:x} is outside "
                             f"the {len(img)}-byte {space} image"
                             + (f" at 0x{g0:x}" if space == "global" else ""))
        return img, off, space


# --------------------------------------------------------------------------------------
# ldmatrix / stmatrix
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RowRequest:
    """One 16-byte row an ldmatrix / stmatrix moves: matrix index, row in matrix, address."""

    matrix: int
    row: int
    addr: int


def _rows(ins: Instr, smem_len: int | None, addr) -> np.ndarray:
    """Validated row addresses of the threads that supply rows (the others are ignored)."""
    a = _addr32(addr)[: layouts.row_count(ins)]
    bad = np.nonzero(a % layouts.ROW_BYTES)[0]
    if bad.size:
        t = int(bad[0])
        raise ModelError(f"{ins.op}: row address 0x{int(a[t]):x} of thread {t} is not "
                         f"{layouts.ROW_BYTES}-byte aligned")
    if smem_len is not None:
        out = np.nonzero((a < 0) | (a + layouts.ROW_BYTES > smem_len))[0]
        if out.size:
            t = int(out[0])
            raise ModelError(f"{ins.op}: row 0x{int(a[t]):x}..0x{int(a[t]) + layouts.ROW_BYTES - 1:x}"
                             f" of thread {t} is outside the {smem_len}-byte shared memory")
    return a


def plan(ins: Instr | str, addr) -> list[RowRequest]:
    """Row requests of an ldmatrix / stmatrix, in thread order (alignment checked)."""
    ins = _ins(ins)
    a = _rows(ins, None, addr)
    per = layouts.rows_per_matrix(ins)
    return [RowRequest(i // per, i % per, int(x)) for i, x in enumerate(a)]


def _words(b: np.ndarray) -> np.ndarray:
    """uint8[..., 4k] little-endian → uint32[..., k]."""
    return np.ascontiguousarray(b).view("<u4").astype(np.uint32)


def ldmatrix(ins: Instr | str, smem, addr) -> np.ndarray:
    """Registers ``uint32[32, nregs]`` an ldmatrix leaves in each thread."""
    ins = _ins(ins)
    if ins.op != "ldmatrix":
        raise ModelError(f"ldmatrix() cannot run {ins.op}")
    smem = _u8(smem, "shared image")
    a = _rows(ins, len(smem), addr)
    rows = smem[a[:, None] + np.arange(layouts.ROW_BYTES)]
    if ins.src_fmt:
        rows = decompress(rows, ins.src_fmt)
    T = layouts.row_table(ins)
    return _words(rows[T[..., 0], T[..., 1]]).reshape(layouts.LANES, ins.nregs)


def stmatrix(ins: Instr | str, smem, addr, regs) -> np.ndarray:
    """New shared image after an stmatrix storing ``regs`` (``uint32[32, nregs]``)."""
    ins = _ins(ins)
    if ins.op != "stmatrix":
        raise ModelError(f"stmatrix() cannot run {ins.op}")
    smem = _u8(smem, "shared image")
    a = _rows(ins, len(smem), addr)
    uniq, first, counts = np.unique(a, return_index=True, return_counts=True)
    if np.any(counts > 1):
        x = int(uniq[np.argmax(counts > 1)])
        ts = [int(t) for t in np.nonzero(a == x)[0]]
        raise ModelError(f"stmatrix: threads {ts[0]} and {ts[1]} store the same row 0x{x:x}; "
                         "overlapping rows in one stmatrix are a race the PTX leaves undefined")
    r = registers(regs, ins.nregs, "stmatrix")
    data = r.astype("<u4").view(np.uint8).reshape(layouts.LANES, ins.nregs, 4)
    T = layouts.row_table(ins)
    out = smem.copy()
    out[a[T[..., 0]] + T[..., 1]] = data
    return out


# --------------------------------------------------------------------------------------
# wmma.load
# --------------------------------------------------------------------------------------

def wmma_default_stride(ins: Instr) -> int:
    """The leading dimension of the stored matrix, in elements: the smallest legal stride."""
    rows, cols = layouts.wmma_dims(ins.frag, ins.shape)
    return cols if ins.layout == "row" else rows


def _wmma_offsets(ins: Instr, stride: int) -> np.ndarray:
    """Bit offset of every (thread, slot) element from the matrix address."""
    T = layouts.wmma_table(ins).astype(np.int64)
    i, j = T[..., 0], T[..., 1]
    elem = i * stride + j if ins.layout == "row" else i + j * stride
    return elem * WMMA_BITS[ins.type]


def _wmma_operands(ins: Instr, addr, stride) -> tuple[int, int]:
    """The matrix address and stride (elements; default: the instruction's, else the leading
    dimension) of a wmma.load, checked as the hardware takes them."""
    bits = WMMA_BITS[ins.type]
    name = f"wmma.load.{ins.frag}"
    if isinstance(addr, (list, tuple, np.ndarray)):
        raise ModelError(f"{name} takes one matrix address, not a list")
    if stride is None:
        stride = ins.stride if isinstance(ins.stride, int) else wmma_default_stride(ins)
    # a global address is 64-bit in PTX; a shared or generic one in the unit's 32-bit window too
    addr = integer(addr, f"{name}: the matrix address", 64)
    stride = integer(stride, f"{name}: the stride", STRIDE_BITS)
    if addr % WMMA_ADDR_ALIGN:
        raise ModelError(f"{name}: matrix address 0x{addr:x} is not {WMMA_ADDR_ALIGN}-byte "
                         "(256-bit) aligned")
    least = wmma_default_stride(ins)
    if stride < least:
        raise ModelError(f"{name}: stride {stride} is below the matrix's leading dimension {least}")
    # 16 bytes, or the whole leading dimension where it is narrower (8-bit types with 8
    # elements): the H200 vectors load those correctly with strides of 8, 24 and 40 bytes.
    grain = min(WMMA_STRIDE_ALIGN * 8, least * bits)
    if (stride * bits) % grain:
        raise ModelError(f"{name}: stride {stride} elements of .{ins.type} is "
                         f"{stride * bits / 8:g} bytes, not a multiple of {grain // 8}")
    return addr, stride


def wmma_load(ins: Instr | str, mem: Memory, addr: int, stride: int | None = None) -> np.ndarray:
    """Registers ``uint32[32, words]`` of a wmma.load (a .f64 register is two words, low first)."""
    ins = _ins(ins)
    if ins.op != "wmma.load":
        raise ModelError(f"wmma_load() cannot run {ins.op}")
    if not isinstance(mem, Memory):
        raise ModelError("wmma_load: mem must be a model.Memory")
    bits = WMMA_BITS[ins.type]
    addr, stride = _wmma_operands(ins, addr, stride)
    off = _wmma_offsets(ins, stride)
    span = (int(off.max()) + bits + 7) // 8
    img, base, _ = mem.resolve(ins.space, addr, span)
    win = img[base: base + span]
    if bits >= 8:
        nb = bits // 8
        by = win[(off // 8)[..., None] + np.arange(nb)]            # (32, slots, nb)
        return _words(by.reshape(layouts.LANES, -1))
    # sub-byte: gather each element's bits, then pack slots upwards from bit 0
    bitv = np.unpackbits(win, bitorder="little")
    el = bitv[off[..., None] + np.arange(bits)]                     # (32, slots, bits)
    packed = np.packbits(el.reshape(layouts.LANES, -1), axis=-1, bitorder="little")
    return _words(packed)


# --------------------------------------------------------------------------------------
# tcgen05.ld and tcgen05.st
# --------------------------------------------------------------------------------------

def _tmem_cols(cols: int) -> int:
    cols = integer(cols, "the Tensor Memory's column count")
    if cols < 32 or cols > TMEM_COLS or cols & (cols - 1):
        raise ModelError(f"Tensor Memory of {cols} columns: expected a power of two from 32 to {TMEM_COLS}")
    return cols


def tmem_image(data, cols: int = TMEM_COLS) -> np.ndarray:
    """A ``uint32[128, cols]`` Tensor Memory from an array of that shape or lane-major bytes
    (a shorter image fills the first bytes; the rest reads as zero). ``cols``, the columns a
    CTA allocated, is a power of two from 32 to 512."""
    cols = _tmem_cols(cols)
    if isinstance(data, np.ndarray) and data.dtype == np.uint32:
        if data.shape != (TMEM_LANES, cols):
            raise ModelError(f"Tensor Memory must have shape ({TMEM_LANES}, {cols}), not {data.shape}")
        return data
    b = _u8(data, "Tensor Memory image")
    full = TMEM_LANES * cols * 4
    if len(b) > full or len(b) % 4:
        raise ModelError(f"Tensor Memory image of {len(b)} bytes: expected a multiple of 4 up to {full}")
    out = np.zeros(full, dtype=np.uint8)
    out[: len(b)] = b
    return out.view("<u4").astype(np.uint32).reshape(TMEM_LANES, cols)


def _f32_key(v: np.ndarray) -> np.ndarray:
    """Order-preserving integer key of non-NaN float32 bit patterns (-0.0 below +0.0)."""
    v = v.astype(np.int64)
    return np.where(v & 0x80000000, 0xFFFFFFFF - v, v | 0x80000000)


def _reduce(ins: Instr, regs: np.ndarray) -> np.ndarray:
    """redval per thread: min or max over the thread's loaded columns."""
    pick = np.argmin if ins.red == "min" else np.argmax
    if ins.type in ("u32", "s32"):
        vals = regs.astype(np.int64)
        if ins.type == "s32":
            vals = np.where(vals & 0x80000000, vals - (1 << 32), vals)
        return regs[np.arange(len(regs)), pick(vals, axis=1)].astype(np.uint32)
    v = regs.astype(np.uint32)
    if ins.abs:
        v = v & np.uint32(0x7FFFFFFF)
    isnan = (v & 0x7F800000) == 0x7F800000
    isnan &= (v & 0x007FFFFF) != 0
    key = _f32_key(v)
    # NaN inputs never win; a lane of only NaN (or any NaN, with .NaN) gives the canonical NaN.
    key = np.where(isnan, -1 if ins.red == "max" else 1 << 40, key)
    out = v[np.arange(len(v)), pick(key, axis=1)]
    nan_out = isnan.any(axis=1) if ins.nan else isnan.all(axis=1)
    return np.where(nan_out, np.uint32(_CANONICAL_NAN), out).astype(np.uint32)


def _tmem_cells(ins: Instr, taddr: int, warp: int, split: int | None, ncols: int):
    """``(lanes, cols)`` int64 arrays ``(32, nregs)``: the Tensor Memory cell of every register
    (for a 16-bit packed form, the first of its two columns), after the checks both
    directions share: the warp's quadrant, the last column, the split."""
    op = ins.op
    taddr = integer(taddr, f"{op}: taddr", 32)
    warp = integer(warp, f"{op}: the warp index")
    if warp < 0:
        raise ModelError(f"{op}: warp index {warp} is negative")
    if split is not None:
        split = integer(split, f"{op}: immHalfSplitoff", 32, signed=True)
    lane0, col0 = taddr >> 16, taddr & 0xFFFF
    if ins.shape == "16x32bx2":
        if split is None:
            split = ins.split
        if split is None:
            raise ModelError(f"{op}: .16x32bx2 needs immHalfSplitoff")
        if ins.split is not None and split != ins.split:
            raise ModelError(f"{op}: immHalfSplitoff {split} differs from the operand {ins.split}")
        if split < 0:
            raise ModelError(f"{op}: immHalfSplitoff {split} is negative")
        span = ins.num * (2 if ins.pack else 1)
        if op == "tcgen05.st" and split < span:
            raise ModelError(f"{op}: immHalfSplitoff {split} is less than the {span} columns one half "
                             "stores: the halves would overlap, a race the PTX leaves undefined")
    elif split is not None:
        raise ModelError(f"{op}: immHalfSplitoff is only for .16x32bx2, not .{ins.shape}")
    T = layouts.tmem_table(ins).astype(np.int64)
    lanes = lane0 + T[..., 0]
    cols = T[..., 1] * (2 if ins.pack else 1) + col0 + T[..., 2] * (split or 0)
    lo, hi = TMEM_QUADRANT * (warp % 4), TMEM_QUADRANT * (warp % 4) + TMEM_QUADRANT - 1
    badl = (lanes < lo) | (lanes > hi)
    if badl.any():
        t = int(np.argwhere(badl)[0][0])
        verb = "reads" if ins.is_load else "writes"
        raise ModelError(f"{op}: lanes {int(lanes.min())}..{int(lanes.max())} (thread {t} {verb} "
                         f"lane {int(lanes[badl].flat[0])}) are outside warp {warp}'s quadrant, "
                         f"lanes {lo}..{hi}")
    last = cols + (1 if ins.pack else 0)
    if int(last.max()) >= ncols:
        raise ModelError(f"{op}: columns {int(cols.min())}..{int(last.max())} reach beyond "
                         f"column {ncols - 1}")
    return lanes, cols


def tcgen05_ld(ins: Instr | str, tmem, taddr: int, warp: int, split: int | None = None, *,
               cols: int = TMEM_COLS):
    """``(regs uint32[32, nregs], redval uint32[32] or None)`` of a tcgen05.ld.

    ``warp`` is the warp's index in its warpgroup (only ``warp mod 4`` matters); it may touch
    lanes ``32·(warp mod 4)`` … ``+31`` only. ``cols``: the columns of the Tensor Memory
    (:func:`tmem_image`).
    """
    ins = _ins(ins)
    if ins.op != "tcgen05.ld":
        raise ModelError(f"tcgen05_ld() cannot run {ins.op}")
    tm = tmem_image(tmem, cols)
    lanes, col = _tmem_cells(ins, taddr, warp, split, tm.shape[1])
    if ins.pack:
        regs = (tm[lanes, col] & 0xFFFF) | ((tm[lanes, col + 1] & 0xFFFF) << 16)
    else:
        regs = tm[lanes, col]
    regs = regs.astype(np.uint32)
    return regs, (_reduce(ins, regs) if ins.red else None)


def tcgen05_st(ins: Instr | str, tmem, taddr: int, warp: int, regs, split: int | None = None, *,
               cols: int = TMEM_COLS) -> np.ndarray:
    """New Tensor Memory image ``uint32[128, cols]`` after a tcgen05.st of ``regs``
    (``uint32[32, nregs]``); the input image is not changed.

    Each register goes where the same-shaped tcgen05.ld reads it from. With ``.unpack::16b``
    its low half goes to the low 16 bits of the first column and its high half to the low 16
    bits of the next; the upper 16 bits of both columns become zero (docs/facts.md). The two
    halves of a ``.16x32bx2`` store must not overlap (``immHalfSplitoff`` at least the columns
    one half spans).
    """
    ins = _ins(ins)
    if ins.op != "tcgen05.st":
        raise ModelError(f"tcgen05_st() cannot run {ins.op}")
    tm = tmem_image(tmem, cols)
    lanes, col = _tmem_cells(ins, taddr, warp, split, tm.shape[1])
    r = registers(regs, ins.nregs, "tcgen05.st")
    out = tm.copy()
    if ins.pack:
        out[lanes, col] = (r & 0xFFFF).astype(np.uint32)
        out[lanes, col + 1] = (r >> 16).astype(np.uint32)
    else:
        out[lanes, col] = r.astype(np.uint32)
    return out


def _operand(ins: Instr, given, from_text, what: str) -> int:
    """An operand the call gives and the text may have given as an immediate: they agree."""
    if given is None and from_text is None:
        raise ModelError(f"{ins.op}: {what} is needed (the text gives it as a register)")
    if given is not None:
        given = integer(given, f"{ins.op}: {what}")
    if given is not None and from_text is not None and given != from_text:
        raise ModelError(f"{ins.op}: {what} {given:#x} differs from the text's immediate {from_text:#x}")
    return int(from_text if given is None else given)


def tcgen05_cp(ins: Instr | str, smem, desc: int | None, taddr: int | None, tmem=None, *,
               cols: int = TMEM_COLS) -> np.ndarray:
    """New Tensor Memory image ``uint32[128, cols]`` after a tcgen05.cp; the inputs are not
    changed.

    ``smem``: the shared memory (bytes; its length is the size every byte read must lie in).
    ``desc``: the 64-bit matrix descriptor (:mod:`tensorlsu.sim.descriptor`), ``taddr`` the
    register's value; either may be None when the text gives it as an immediate. The Tensor
    Memory address is ``taddr`` plus the text's offset (``[taddr+imm]``), modulo 2^32.
    ``tmem``: the image before (None: zero). Row ``r`` of the matrix (its chunks read by the
    descriptor's walk, each decompressed to 16 bytes with a source format) lands in lanes
    ``taddr.lane + cp_lane_table[r]``, little-endian from taddr's column on.

    Refused (:class:`ModelError`, nothing written): a descriptor field no copy may use, a
    start that breaks its swizzle row, a byte outside ``smem``, a column origin not a
    multiple of 4, a lane or column outside the Tensor Memory.
    """
    ins = _ins(ins)
    if ins.op != "tcgen05.cp":
        raise ModelError(f"tcgen05_cp() cannot run {ins.op}")
    op = ins.op
    mem = _u8(smem, "shared memory")
    d = _operand(ins, desc, ins.desc, "the descriptor")
    reg = _operand(ins, taddr, ins.taddr, "taddr")
    if ins.taddr is None and not 0 <= reg < 1 << 32:
        raise ModelError(f"{op}: taddr {reg:#x} is not a 32-bit Tensor Memory address")
    addr = (reg + ins.offset) % (1 << 32)
    tm = np.zeros((TMEM_LANES, _tmem_cols(cols)), dtype=np.uint32) if tmem is None else tmem_image(tmem, cols)
    try:
        sd = descriptor.decode(d)
        chunks = descriptor.chunk_addresses(ins, sd)
    except descriptor.DescriptorError as e:
        raise ModelError(f"{op}: {e}") from None
    last = int(chunks.max()) + descriptor.CHUNK
    if last > len(mem):
        r, c = (int(x) for x in np.argwhere(chunks + descriptor.CHUNK > len(mem))[0])
        raise ModelError(f"{op}: row {r} chunk {c} at {int(chunks[r, c]):#x} reaches past the {len(mem)} bytes "
                         "of shared memory")
    lane0, col0 = addr >> 16, addr & 0xFFFF
    if col0 % 4:
        raise ModelError(f"{op}: taddr's column {col0} is not a multiple of 4")
    width = chunks.shape[1] * descriptor.CHUNK // 4          # columns a row spans
    if col0 + width > tm.shape[1]:
        raise ModelError(f"{op}: columns {col0}..{col0 + width - 1} reach beyond column {tm.shape[1] - 1}")
    lanes = lane0 + layouts.cp_lane_table(ins).astype(np.int64)
    if int(lanes.max()) >= TMEM_LANES:
        raise ModelError(f"{op}: lanes {lane0}..{int(lanes.max())} reach beyond lane {TMEM_LANES - 1} "
                         f"(taddr's lane {lane0})")
    data = mem[chunks[..., None] + np.arange(descriptor.CHUNK)]     # (rows, chunks, 16)
    if ins.src_fmt:
        data = decompress(data, ins.src_fmt)
    words = np.ascontiguousarray(data).reshape(len(chunks), -1).view("<u4").astype(np.uint32)
    out = tm.copy()
    for k in range(lanes.shape[1]):
        out[lanes[:, k, None], col0 + np.arange(width)[None, :]] = words
    return out


# --------------------------------------------------------------------------------------
# Shared-memory cycles
# --------------------------------------------------------------------------------------

#: Rows the H200 serves as one group (one .m8n8 matrix: 128 bytes).
GROUP_ROWS = 8


def _quads(addrs: Iterable[int], banks: int, bank_bytes: int) -> dict[int, set[int]]:
    groups = (banks * bank_bytes) // layouts.ROW_BYTES
    q: dict[int, set[int]] = {}
    for a in addrs:
        q.setdefault((a // layouts.ROW_BYTES) % groups, set()).add(a)
    return q


@dataclass(frozen=True)
class SharedLoads:
    """The shared-memory instructions ptxas 13.0 compiles one wmma.load into for sm_90
    (docs/facts.md; measured on the H200): ``ldsm`` (ldmatrix, its matrices the fragment's
    distinct registers, ``trans`` for .trans) or ``lds`` of ``width`` bytes a thread; ``movm``
    register-matrix transposes after the loads (the loads then read the other layout's
    pattern)."""

    kind: str
    width: int = 16
    trans: bool = False
    movm: int = 0


def wmma_shared_loads(ins: Instr | str) -> SharedLoads:
    """How a wmma.load from shared memory runs on sm_90 (:class:`SharedLoads`)."""
    ins = _ins(ins)
    if ins.op != "wmma.load":
        raise ModelError(f"wmma_shared_loads: {ins.op} is not wmma.load")
    bits = WMMA_BITS[ins.type]
    if ins.frag in ("a", "b"):
        trans = (ins.frag == "a") == (ins.layout == "col")
        if bits == 16 or bits < 8 or (bits == 8 and not trans):
            return SharedLoads("ldsm", trans=trans and bits == 16)
        return SharedLoads("lds", {8: 1, 32: 4, 64: 8}[bits])
    # accumulators: the layout the fragment's registers follow is "natural" (m8n32k16 is the
    # transpose of m32n8k16)
    natural = ins.layout == ("col" if ins.shape == "m8n32k16" else "row")
    if bits == 16:
        return SharedLoads("lds", 4, movm=0 if natural else ins.nregs)
    return SharedLoads("lds", (2 if natural else 1) * bits // 8)


def wmma_wavefront_groups(ins: Instr | str, addr: int, stride: int | None = None) -> list[frozenset[int]]:
    """The shared-memory accesses of a wmma.load on sm_90 (:func:`wmma_shared_loads`), one group
    per wavefront group the H200 serves together, in issue order: each a set of 4-byte word
    addresses. An LDSM group is one 8-row matrix (register ``j`` is matrix ``j``, its rows by
    the ldmatrix ``.x1`` table), an LDS group one phase of one instruction (128 bytes: 32
    threads of LDS.32 or LDS.U8, 16 of LDS.64, 8 of LDS.128; each thread's aligned chunks of
    the load's width, in memory order, one instruction each). A form with MOVM reads the other
    layout's pattern. A group costs its busiest bank's distinct words (32 banks of 4 bytes)."""
    ins = _ins(ins)
    addr, stride = _wmma_operands(ins, addr, stride)
    plan = wmma_shared_loads(ins)
    if plan.movm:
        other = dataclasses.replace(ins, layout="row" if ins.layout == "col" else "col")
        return wmma_wavefront_groups(other, addr, stride)
    B = layouts.wmma_byte_table(ins)
    step = stride * WMMA_BITS[ins.type] // 8

    def at(t, w, b):
        return addr + int(B[t, w, b, 0]) * step + int(B[t, w, b, 1])
    groups = []
    if plan.kind == "ldsm":
        rows, cols = layouts.wmma_dims(ins.frag, ins.shape)
        T = layouts.row_table(ptx.parse(f"ldmatrix.sync.aligned.m8n8.x1{'.trans' if plan.trans else ''}"
                                        ".shared.b16", "sm_90a"))
        for j in range(rows * cols * WMMA_BITS[ins.type] // 8 // 128):
            starts = {at(t, j, b) - int(T[t, 0, b, 1]) for t in range(32) for b in range(4)}
            groups.append(frozenset(a // 4 + k for a in starts for k in range(layouts.ROW_BYTES // 4)))
        return groups
    w = plan.width
    chunks = [sorted({at(t, k, b) // w * w for k in range(ins.words) for b in range(4)}) for t in range(32)]
    per_phase = 128 // max(w, 4)
    for k in range(len(chunks[0])):
        for p in range(0, 32, per_phase):
            groups.append(frozenset((chunks[t][k] + off) // 4 for t in range(p, p + per_phase)
                                    for off in range(0, max(w, 4), 4)))
    return groups


def _busiest_bank(words: Iterable[int], banks: int = 32) -> int:
    """Distinct 4-byte words in the busiest bank: the cycles one group of accesses costs."""
    count: dict[int, int] = {}
    for word in set(words):
        count[word % banks] = count.get(word % banks, 0) + 1
    return max(count.values(), default=0)


def _wmma_wavefronts(ins: Instr, addr: int, stride: int) -> int:
    return wmma_shared_loads(ins).movm + sum(_busiest_bank(words)
                                             for words in wmma_wavefront_groups(ins, addr, stride))


def tmem_steps(ins: Instr | str, banks: int = tmem_plan.BANKS) -> int:
    """Clocks a tcgen05.ld / tcgen05.st keeps its quadrant's memory busy: the steps of its
    plan (:mod:`.tmem_plan`, the table the RTL's sequencer walks; ``banks`` per quadrant, 2 by
    default, 1 in the area build). A .red load runs as the plain load of its shape. This is the
    memory's occupancy, the floor of any schedule; tb/tmem/test_costs.py compares it with the
    RTL's back-to-back clocks."""
    ins = _ins(ins)
    if ins.op not in ("tcgen05.ld", "tcgen05.st"):
        raise ModelError(f"tmem_steps: {ins.op} is not tcgen05.ld or tcgen05.st (tcgen05.cp: copy_steps)")
    pl = tmem_plan.plan(ins.op, ins.shape, ins.num, ins.pack, banks)
    return pl.periods * sum(len(beat.steps) for beat in pl.beats)


def copy_steps(ins: Instr | str, banks: int = tmem_plan.BANKS) -> int:
    """Clocks a tcgen05.cp takes back to back: a step reads one 16-byte chunk of each of 8 rows
    (128 bytes, one from each bank quad whatever the descriptor: formal/copy_specs.py), so
    ``ceil(rows / 8) × chunks a row`` steps; a quadrant of one bank writes a step in two clocks."""
    ins = _ins(ins)
    if ins.op != "tcgen05.cp":
        raise ModelError(f"copy_steps: {ins.op} is not tcgen05.cp")
    rows, bits = ptx.CP_SHAPES[ins.shape]
    steps = -(-rows // GROUP_ROWS) * (bits // 8 // layouts.ROW_BYTES)
    return steps * (2 if banks == 1 else 1)


#: Bytes a thread of a plain shared load or store (LDS / STS) may move.
SHARED_WIDTHS = (1, 2, 4, 8, 16)
#: Bytes the banks serve in one wavefront: 32 banks of 4 bytes.
WAVEFRONT_BYTES = 128


def shared_wavefronts(width: int, addr, policy: str = "h200") -> int:
    """Bank cycles of one plain shared load or store (SASS LDS / STS) of ``width`` bytes a
    thread, at the 32 lanes' byte addresses ``addr`` (``None``: an inactive lane).

    ``"h200"``: the warp in phases of 128 bytes, consecutive lanes (32 lanes of up to 4 bytes,
    16 of 8, 8 of 16), each phase costing its busiest bank's distinct 4-byte words; a phase
    without an active lane costs nothing. This is the rule that predicts the H200's cost of
    every wmma.load compiled to LDS sequences (docs/facts.md). ``"packed"``: the busiest bank's
    distinct words over the whole warp, phases mixed. Refuses a width it does not know and an
    address not aligned to the width (the hardware faults)."""
    if width not in SHARED_WIDTHS:
        raise ModelError(f"shared_wavefronts: a thread moves 1, 2, 4, 8 or 16 bytes, not {width}")
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    lanes = list(addr)
    if len(lanes) != 32:
        raise ModelError(f"shared_wavefronts: 32 lane addresses (None for an inactive lane), not {len(lanes)}")
    words: list[list[int]] = []
    for t, a in enumerate(lanes):
        if a is None:
            words.append([])
            continue
        a = integer(a, f"the address of lane {t}", ADDR_BITS)
        if a % width:
            raise ModelError(f"lane {t}'s address 0x{a:x} is not aligned to the {width}-byte access")
        words.append([(a + k) // 4 for k in range(0, max(width, 4), 4)])
    if policy == "packed":
        return _busiest_bank(w for lane in words for w in lane)
    per_phase = WAVEFRONT_BYTES // max(width, 4)
    return sum(_busiest_bank(w for lane in words[p:p + per_phase] for w in lane)
               for p in range(0, 32, per_phase))


def wavefronts(ins: Instr | str, addr, policy: str = "h200", *, banks: int = 32,
               bank_bytes: int = 4, stride: int | None = None) -> int:
    """Shared-memory cycles an ldmatrix / stmatrix occupies the banks (a tcgen05.cp: its
    :func:`copy_steps`, whatever ``addr``), or a wmma.load from
    shared memory at matrix address ``addr`` with ``stride`` (elements; default: the
    instruction's, else the leading dimension). wmma.load, ``"h200"``: the wavefronts of the
    loads ptxas compiles it into plus one per MOVM (:func:`wmma_shared_loads`; docs/facts.md:
    every one of 3,872 measured forms, strides and offsets on the H200, within 3.5 % where above
    2 cycles, the rest issue-bound at most 2.3); ``"packed"``: the busiest bank quad's distinct
    16-byte rows over the whole fragment (one access per distinct row and quad, 128 B/clk).

    ``"h200"``: per matrix, the largest number of distinct row addresses in one bank quad,
    summed over matrices (docs/facts.md: exact on every measured pattern). ``"packed"``: a
    scheduler that mixes matrices, bounded by one cycle per 8 rows and by the busiest quad.
    A ``.m16n16`` matrix (256 bytes) counts as two groups of 8 rows, each a 128-byte group
    like an ``.m8n8`` matrix (an extrapolation: not measured).
    """
    ins = _ins(ins)
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    if ins.op == "wmma.load":
        addr, stride = _wmma_operands(ins, addr, stride)
        if policy == "packed":
            # the whole fragment gathered at one access per distinct 16-byte row and bank quad
            B = layouts.wmma_byte_table(ins)
            step = stride * WMMA_BITS[ins.type] // 8
            rows = {(addr + int(line) * step + int(byte)) // layouts.ROW_BYTES * layouts.ROW_BYTES
                    for line, byte in B.reshape(-1, 2)}
            return max(len(v) for v in _quads(rows, banks, bank_bytes).values())
        if (banks, bank_bytes) != (32, 4):
            raise ModelError("wavefronts: the wmma.load rule is the H200's (32 banks of 4 bytes)")
        return _wmma_wavefronts(ins, addr, stride)
    if ins.op == "tcgen05.cp":      # a step reads 128 bytes from the eight quads, whatever the layout
        return copy_steps(ins)
    if ins.op not in ("ldmatrix", "stmatrix"):
        raise ModelError(f"wavefronts: {ins.op} does not use the shared banks (its Tensor Memory clocks: "
                         "model.tmem_steps)")
    reqs = plan(ins, addr)
    if policy == "h200":
        groups: dict[tuple[int, int], list[int]] = {}
        for r in reqs:
            groups.setdefault((r.matrix, r.row // GROUP_ROWS), []).append(r.addr)
        return sum(max(len(s) for s in _quads(g, banks, bank_bytes).values())
                   for g in groups.values())
    q = _quads((r.addr for r in reqs), banks, bank_bytes)
    per_cycle = (banks * bank_bytes) // layouts.ROW_BYTES
    return max(-(-len(reqs) // per_cycle), max(len(s) for s in q.values()))
