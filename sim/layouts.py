"""Fragment layouts: the one source of truth for where every register byte comes from.

Every function returns a read-only numpy table that the model executes with and that the
RTL generator, the testbenches and the formal specs import. Each table is built from a
closed form; where the form comes from is stated next to it.

Shared-memory row forms (ldmatrix / stmatrix), :func:`row_table`
    ``T[t, r, b] = (row, byte)``: byte ``b`` of register ``r`` of thread ``t`` is byte ``byte``
    of row ``row``, whose 16-byte address is held by thread ``row``. For the decompressing
    forms ``byte`` indexes the row after decompression (16 bytes, one element each).

wmma fragments, :func:`wmma_table`
    ``T[t, s] = (i, j)``: element slot ``s`` of thread ``t`` (bits ``s*w … s*w+w-1`` of the
    thread's registers taken as one little-endian number, ``w`` the element width) holds
    element ``(i, j)`` of the matrix (a: m×k, b: k×n, c: m×n).

Tensor Memory forms (tcgen05.ld, tcgen05.st), :func:`tmem_table`
    ``T[t, r] = (lane, column, half)``: register ``r`` of thread ``t`` comes from (or, for a
    store, goes to) lane
    ``taddr.lane + lane`` and column ``taddr.column + column + half * immHalfSplitoff``, in
    32-bit columns; with ``.pack::16b`` / ``.unpack::16b`` ``column`` counts 16-bit pairs (see
    :func:`tmem_table`).

tcgen05.cp, :func:`cp_lane_table`
    ``L[row, copy]``: row ``row`` of the copied matrix lands in lane ``taddr.lane + L[row,
    copy]`` for every ``copy`` (one, two or four with the multicast), its bytes little-endian
    from taddr's column on. Where each row is read from is the descriptor's
    (:func:`tensorlsu.sim.descriptor.chunk_addresses`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .ptx import CP_SHAPES, TCGEN05_REGS_PER_X1, WMMA_BITS, WMMA_SHAPES, Instr

__all__ = ["ROW_BYTES", "rows_per_matrix", "row_count", "row_table", "wmma_table", "wmma_dims",
           "wmma_lines", "wmma_byte_table", "tmem_table", "cp_lane_table", "LANES"]

#: Threads in a warp.
LANES = 32
#: Bytes in one shared-memory matrix row of every ldmatrix / stmatrix form.
ROW_BYTES = 16


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def rows_per_matrix(ins: Instr) -> int:
    """16-byte rows per matrix: 16 for ldmatrix .m16n16, else 8 (stmatrix .m16n8 stores its
    16×8 byte matrix transposed, as 8 rows of 16 bytes)."""
    return 16 if ins.shape == "m16n16" else 8


def row_count(ins: Instr) -> int:
    """Row addresses the instruction uses: those of threads 0 … row_count-1."""
    return rows_per_matrix(ins) * ins.num


@lru_cache(maxsize=None)
def _row_table(op: str, shape: str, num: int, trans: bool) -> np.ndarray:
    nregs = {"m16n16": 2 * num}.get(shape, num)
    T = np.zeros((LANES, nregs, 4, 2), dtype=np.int16)
    for t in range(LANES):
        g, c = divmod(t, 4)
        for r in range(nregs):
            for b in range(4):
                if shape == "m8n8" and not trans:
                    # docs/facts.md (measured): word at byte 4·(t mod 4) of row ⌊t/4⌋ of matrix r.
                    row, col = 8 * r + g, 4 * c + b
                elif shape == "m8n8":
                    # docs/facts.md (measured): low half = element (2c, g), high half = (2c+1, g).
                    row, col = 8 * r + 2 * c + b // 2, 2 * g + b % 2
                elif shape == "m8n16":
                    # PTX text (Figure 106) and CuTe SM100_SU{4,6}_DU8x16_x{1,2,4}_LDSM_N:
                    # thread t gets 4 consecutive elements of row ⌊t/4⌋ of matrix r.
                    row, col = 8 * r + g, 4 * c + b
                elif shape == "m16n16":
                    # CuTe SM100_U8x{8,16}_LDSM_T with its register shuffle undone: register
                    # 2i+h byte b is byte g+8h of row 16i+4c+b (the matrix read column-major).
                    i, h = divmod(r, 2)
                    row, col = 16 * i + 4 * c + b, g + 8 * h
                else:  # stmatrix m16n8 .trans
                    # CuTe SM100_U8x{4,8,16}_STSM_T: byte b of register r is element
                    # (g + 8·⌊b/2⌋, 2c + b mod 2) of the 16×8 matrix r, stored column-major.
                    row, col = 8 * r + 2 * c + b % 2, g + 8 * (b // 2)
                T[t, r, b] = (row, col)
    return _frozen(T)


def row_table(ins: Instr) -> np.ndarray:
    """``(32, nregs, 4, 2)`` table of (row, byte) for an ldmatrix / stmatrix form."""
    if ins.op not in ("ldmatrix", "stmatrix"):
        raise ValueError(f"row_table: {ins.op} is not a shared-memory row instruction")
    return _row_table(ins.op, ins.shape, ins.num, ins.trans)


# --------------------------------------------------------------------------------------
# wmma: the fragments are mma.sync tiles (docs/facts.md), pinned by the H200 vectors.
# --------------------------------------------------------------------------------------

def _frag_a(t: int, M: int, K: int, w: int) -> list[tuple[int, int]]:
    """mma.sync A tiles (16 rows × 4w columns, 8-row halves first) for an M×K operand with
    w elements per 32-bit register: rows g, g+8 (+16 …); columns (c + 4·kg)·w + s."""
    g, c = divmod(t, 4)
    out = []
    for mt in range(max(1, M // 16)):
        for kg in range(max(1, K // (4 * w))):
            for m8 in range(min(2, M // 8)):
                for s in range(w):
                    out.append((16 * mt + 8 * m8 + g, (c + 4 * kg) * w + s))
    return out


def _frag_b(t: int, K: int, N: int, w: int) -> list[tuple[int, int]]:
    """mma.sync B tiles (4w rows × 8 columns) for a K×N operand: column g of each 8-column
    tile, rows (c + 4·kg)·w + s, k groups inside column tiles."""
    g, c = divmod(t, 4)
    out = []
    for nt in range(N // 8):
        for kg in range(max(1, K // (4 * w))):
            for s in range(w):
                out.append(((c + 4 * kg) * w + s, 8 * nt + g))
    return out


def _frag_c(t: int, M: int, N: int) -> list[tuple[int, int]]:
    """mma.sync accumulator tiles: (g, 2c), (g, 2c+1), (g+8, …) per 16×8 tile, columns outer."""
    g, c = divmod(t, 4)
    out = []
    for nt in range(N // 8):
        for mt in range(max(1, M // 16)):
            for m8 in range(min(2, M // 8)):
                for s in range(2):
                    out.append((16 * mt + 8 * m8 + g, 8 * nt + 2 * c + s))
    return out


def wmma_dims(frag: str | None, shape: str) -> tuple[int, int]:
    """(rows, columns) of the wmma fragment ``frag`` (``a``, ``b`` or ``c``) of ``shape``."""
    if frag is None:
        raise ValueError("not a wmma form: it names no fragment")
    m, n, k = WMMA_SHAPES[shape]
    return {"a": (m, k), "b": (k, n), "c": (m, n)}[frag]


@lru_cache(maxsize=None)
def _wmma_table(frag: str, shape: str, type_: str, nregs: int) -> np.ndarray:
    m, n, k = WMMA_SHAPES[shape]
    bits = WMMA_BITS[type_]
    w = max(1, 32 // bits)  # elements per register (f64: one element per register pair)
    rows = []
    for t in range(LANES):
        if shape == "m8n32k16":
            # sm_90 runs m8n32k16 as the transpose of m32n8k16: its a is the transposed b of
            # m32n8k16, its b the transposed a, its c the transposed c.
            if frag == "a":
                seq = [(j, i) for i, j in _frag_b(t, k, m, w)]
            elif frag == "b":
                seq = [(j, i) for i, j in _frag_a(t, n, k, w)]
            else:
                seq = [(j, i) for i, j in _frag_c(t, n, m)]
        elif frag == "a":
            seq = _frag_a(t, m, k, w)
        elif frag == "b":
            seq = _frag_b(t, k, n, w)
        else:
            seq = _frag_c(t, m, n)
        slots = nregs * 32 // bits if type_ != "f64" else nregs
        # .f16 a/b fragments are always 8 registers; shorter tiles repeat (docs/facts.md).
        seq = (seq * (slots // len(seq) + 1))[:slots]
        rows.append(seq)
    return _frozen(np.array(rows, dtype=np.int16))


def wmma_table(ins: Instr) -> np.ndarray:
    """``(32, slots, 2)`` table of matrix element (i, j) per thread and element slot."""
    if ins.op != "wmma.load":
        raise ValueError(f"wmma_table: {ins.op} is not wmma.load")
    return _wmma_table(ins.frag, ins.shape, ins.type, ins.nregs)


def wmma_lines(ins: Instr) -> tuple[int, int]:
    """(lines, bytes per line) of the stored matrix: a line is a row (``.row``) or a column
    (``.col``), consecutive in memory; consecutive lines lie ``stride`` elements apart."""
    rows, cols = wmma_dims(ins.frag, ins.shape)
    lines, length = (rows, cols) if ins.layout == "row" else (cols, rows)
    return lines, length * WMMA_BITS[ins.type] // 8


@lru_cache(maxsize=None)
def _wmma_byte_table(frag: str, layout: str, shape: str, type_: str, nregs: int) -> np.ndarray:
    bits = WMMA_BITS[type_]
    ins = Instr(op="wmma.load", shape=shape, frag=frag, layout=layout, type=type_, nregs=nregs)
    T = wmma_table(ins)
    words = ins.words
    out = np.zeros((LANES, words, 4, 2), dtype=np.int16)
    for t in range(LANES):
        for w in range(words):
            for b in range(4):
                bit = 32 * w + 8 * b
                s0 = bit // bits
                place = []
                # every element sharing this byte must follow the first one in its line
                for e in range(max(1, 8 // bits)):
                    i, j = (int(x) for x in T[t, s0 + e])
                    place.append((i, j) if layout == "row" else (j, i))
                line, pos = place[0]
                if any(p != (line, pos + e) for e, p in enumerate(place)):
                    raise AssertionError(f"{ins.form}: register byte {t}/{w}/{b} is not one memory byte")
                out[t, w, b] = (line, (pos * bits + bit - s0 * bits) // 8)
    return _frozen(out)


def wmma_byte_table(ins: Instr) -> np.ndarray:
    """``(32, words, 4, 2)`` table of (line, byte in line) for byte ``b`` of word ``w`` of
    thread ``t``: every wmma register byte is one whole memory byte (sub-byte elements stay
    together in their line), so a wmma.load is a byte gather from its lines. Derived from
    :func:`wmma_table`; the line of the matrix starts at ``addr + line · stride``."""
    if ins.op != "wmma.load":
        raise ValueError(f"wmma_byte_table: {ins.op} is not wmma.load")
    return _wmma_byte_table(ins.frag, ins.layout, ins.shape, ins.type, ins.nregs)


# --------------------------------------------------------------------------------------
# tcgen05.ld: Tensor Memory data-movement shapes (CuTe SM100_TMEM_LOAD_* traits).
# --------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _tmem_table(shape: str, num: int) -> np.ndarray:
    per = TCGEN05_REGS_PER_X1[shape]
    T = np.zeros((LANES, per * num, 3), dtype=np.int16)
    for t in range(LANES):
        g, c = divmod(t, 4)
        for r in range(per * num):
            rep, j = divmod(r, per)
            if shape == "32x32b":      # thread t reads lane t; register r is column r
                T[t, r] = (t, r, 0)
            elif shape == "16x32bx2":  # threads 0-15 at taddr, 16-31 at taddr+immHalfSplitoff
                T[t, r] = (t % 16, r, t // 16)
            elif shape == "16x64b":    # 16 lanes × 2 columns per repetition
                T[t, r] = (8 * (t % 2) + g, 2 * rep + (t // 2) % 2, 0)
            elif shape == "16x128b":   # 16 lanes × 4 columns; register pairs split lanes +8
                T[t, r] = (g + 8 * j, 4 * rep + c, 0)
            else:                      # 16x256b: 16 lanes × 8 columns
                T[t, r] = (g + 8 * (j // 2), 8 * rep + 2 * c + j % 2, 0)
    return _frozen(T)


def tmem_table(ins: Instr) -> np.ndarray:
    """``(32, nregs, 3)`` table of (lane offset, column offset, half) per thread and register.

    Without ``.pack::16b`` the column offset is a 32-bit Tensor Memory column. With it, the
    register holds the low 16 bits of columns ``2·column`` (low half) and ``2·column + 1``
    (high half): the shape then spans twice as many columns. tcgen05.st is the mirror: the
    same table, each register written where the same-shaped load reads it (``.unpack::16b``
    the mirror of ``.pack::16b``).
    """
    if ins.op not in ("tcgen05.ld", "tcgen05.st"):
        raise ValueError(f"tmem_table: {ins.op} is not tcgen05.ld or tcgen05.st")
    return _tmem_table(ins.shape, ins.num)


# --------------------------------------------------------------------------------------
# tcgen05.cp: the lanes each row lands in (CuTe SM100_UTCCP_* traits; tb/sim/test_layouts_cute.py)
# --------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _cp_lane_table(shape: str, multicast: str | None) -> np.ndarray:
    rows = CP_SHAPES[shape][0]
    r = np.arange(rows)
    if multicast == "warpx4":            # every quadrant gets the 32 rows
        L = np.stack([r + 32 * k for k in range(4)], axis=1)
    elif multicast == "warpx2::02_13":   # rows 0-31 to quadrants 0 and 2, rows 32-63 to 1 and 3
        L = np.stack([r, r + 64], axis=1)
    elif multicast == "warpx2::01_23":   # rows 0-31 to quadrants 0 and 1, rows 32-63 to 2 and 3
        first = 64 * (r // 32) + r % 32
        L = np.stack([first, first + 32], axis=1)
    elif shape == "4x256b":              # one row into the first lane of each quadrant
        L = (32 * r)[:, None]
    else:                                # 128 rows, one lane each
        L = r[:, None]
    return _frozen(L.astype(np.int16))


def cp_lane_table(ins: Instr) -> np.ndarray:
    """``(rows, copies)`` lane offsets from taddr's lane of every row of a tcgen05.cp."""
    if ins.op != "tcgen05.cp":
        raise ValueError(f"cp_lane_table: {ins.op} is not tcgen05.cp")
    return _cp_lane_table(ins.shape, ins.multicast)
