"""CuTe's layouts, for users who think in them: written from CuTe's published definitions
(a layout is a hierarchical shape with a stride, evaluated colexicographically; Swizzle<B,M,S>
XORs B bits at M+S into the B bits at M; a swizzle composes with a layout on its offsets).

What it does with them:

- :func:`row_addresses`: a shared-memory tile (a :class:`Layout` or :class:`ComposedLayout` of
  (row, column) element coordinates to element offsets) and an ldmatrix / stmatrix form give the
  32 row addresses the threads pass, one 8-row matrix after another at the tile coordinates you
  name (default: CuTe's order for an MMA A fragment: (0,0), (8,0), (0,8), (8,8) elements).
- :func:`cp_descriptor`: a tcgen05.cp's shared-memory matrix, given as a byte layout of
  (row, byte) with its swizzle, gives the 64-bit descriptor, checked chunk by chunk.
- :func:`tv_layout`: a form's fragment table (:mod:`.layouts`) as a CuTe thread-value layout
  ``(thread, value) -> element``, the way CuTe writes a copy atom's layouts.

tb/cute.py, the tests' own evaluation of CuTe, stays the oracle these are checked against.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Union

import numpy as np

from . import descriptor, layouts, ptx
from .ptx import Instr

__all__ = ["Layout", "Swizzle", "ComposedLayout", "CuteError", "row_addresses", "cp_descriptor", "tv_layout",
           "MMA_A_ORIGINS"]

Shape = Union[int, tuple]


class CuteError(ValueError):
    """A layout that cannot express what was asked (the message says what)."""


def _flat(x) -> list[int]:
    return [y for e in x for y in _flat(e)] if isinstance(x, tuple) else [x]


def _congruent(shape, stride) -> bool:
    if isinstance(shape, tuple):
        return isinstance(stride, tuple) and len(shape) == len(stride) and all(
            _congruent(a, b) for a, b in zip(shape, stride))
    return not isinstance(stride, tuple)


@dataclass(frozen=True)
class Layout:
    """``shape : stride``, each an int or a nested tuple of them, as CuTe writes them."""

    shape: Shape
    stride: Shape

    def __post_init__(self):
        if not _congruent(self.shape, self.stride):
            raise CuteError(f"shape {self.shape} and stride {self.stride} are not congruent")

    def size(self) -> int:
        return prod(_flat(self.shape))

    def __call__(self, *coord) -> int:
        """The offset of a coordinate: one int (the 1-D index, colexicographic) or one
        coordinate per top-level mode (each an int or a nested tuple)."""
        if len(coord) == 1 and not isinstance(coord[0], tuple):
            return self._index(self.shape, self.stride, coord[0])
        if not isinstance(self.shape, tuple) or not isinstance(self.stride, tuple) or len(coord) != len(self.shape):
            raise CuteError(f"{len(coord)} coordinates for a layout of shape {self.shape}")
        return sum(self._coord(s, d, c) for s, d, c in zip(self.shape, self.stride, coord))

    @classmethod
    def _coord(cls, shape, stride, c) -> int:
        if isinstance(c, tuple):
            return sum((cls._coord(s, d, x) for s, d, x in zip(shape, stride, c)), 0)
        return cls._index(shape, stride, c)

    @staticmethod
    def _index(shape, stride, i: int) -> int:
        out = 0
        for s, d in zip(_flat(shape), _flat(stride)):
            out += (i % s) * d
            i //= s
        return out

    def __repr__(self) -> str:
        return f"{self.shape}:{self.stride}".replace(" ", "")


@dataclass(frozen=True)
class Swizzle:
    """CuTe's ``Swizzle<B, M, S>`` on an offset: bits ``[M, M+B)`` ^= bits ``[M+S, M+S+B)``."""

    bits: int
    base: int
    shift: int

    def __call__(self, offset: int) -> int:
        mask = ((1 << self.bits) - 1) << (self.base + max(0, self.shift))
        moved = offset & mask
        return offset ^ (moved >> self.shift if self.shift >= 0 else moved << -self.shift)


@dataclass(frozen=True)
class ComposedLayout:
    """``swizzle ∘ (offset + layout)``, as CuTe composes a swizzle with a layout."""

    swizzle: Swizzle
    layout: Layout
    offset: int = 0

    def size(self) -> int:
        return self.layout.size()

    def __call__(self, *coord) -> int:
        return self.swizzle(self.offset + self.layout(*coord))


AnyLayout = Union[Layout, ComposedLayout]

#: The tile origins (row, column) of an MMA A fragment's four 8x8 matrices, in CuTe's order.
MMA_A_ORIGINS = ((0, 0), (8, 0), (0, 8), (8, 8))


def row_addresses(ins: Instr | str, tile: AnyLayout, *, elem_bytes: int = 2, base: int = 0,
                  origins: tuple[tuple[int, int], ...] | None = None) -> list[int]:
    """The 32 row addresses of an ldmatrix / stmatrix reading ``tile``, a layout of (row,
    column) element coordinates to element offsets (swizzled or not), at byte address ``base``.

    Matrix ``j`` has its top-left element at ``origins[j]`` (default: 8-row matrices down then
    across, :data:`MMA_A_ORIGINS` for four); thread ``t`` passes the address of row ``t mod
    rows`` of matrix ``t div rows``. Each row must be 16 contiguous, 16-byte aligned bytes in
    the tile: CuteError otherwise. Threads past the rows the form uses repeat the first ones."""
    ins = ptx.parse(ins, "sm_100a") if isinstance(ins, str) else ins
    if ins.op not in ("ldmatrix", "stmatrix"):
        raise CuteError(f"row_addresses: {ins.op} is not ldmatrix or stmatrix")
    per, rows = layouts.rows_per_matrix(ins), layouts.row_count(ins)
    if origins is None:
        origins = MMA_A_ORIGINS if ins.num == 4 and per == 8 else tuple((8 * j, 0) for j in range(ins.num))
    if len(origins) != ins.num:
        raise CuteError(f"{len(origins)} origins for {ins.num} matrices")
    per_row = layouts.ROW_BYTES // elem_bytes
    out = []
    for t in range(rows):
        r0, c0 = origins[t // per]
        r = r0 + t % per
        at = [base + elem_bytes * tile(r, c0 + k) for k in range(per_row)]
        if at[0] % layouts.ROW_BYTES or at != [at[0] + elem_bytes * k for k in range(per_row)]:
            raise CuteError(f"row {r} at column {c0} is not 16 contiguous aligned bytes in the tile "
                            f"(byte addresses {at[0]:#x} ... {at[-1]:#x})")
        out.append(at[0])
    return [out[t % rows] for t in range(32)]


def cp_descriptor(ins: Instr | str, matrix: AnyLayout, start: int) -> int:
    """The descriptor of a tcgen05.cp whose source matrix lies in shared memory as ``matrix``:
    a layout of (row, byte in the row) to byte offsets, composed with ``Swizzle<B,4,3>`` (B = 1,
    2, 3 for 32, 64, 128-byte swizzling; none for a plain :class:`Layout`), starting at byte
    ``start``. The descriptor's fields are read off the layout (the 8-row group stride, the
    chunk stride) and every chunk's address is checked against it: CuteError when the layout is
    not one the descriptor can express."""
    ins = ptx.parse(ins, "sm_100a") if isinstance(ins, str) else ins
    if ins.op != "tcgen05.cp":
        raise CuteError(f"cp_descriptor: {ins.op} is not tcgen05.cp")
    rows, bits = ptx.CP_SHAPES[ins.shape]
    plain = matrix.layout if isinstance(matrix, ComposedLayout) else matrix
    b = matrix.swizzle.bits if isinstance(matrix, ComposedLayout) else 0
    if isinstance(matrix, ComposedLayout) and (matrix.swizzle.base, matrix.swizzle.shift) != (4, 3):
        raise CuteError(f"the copy's swizzles are Swizzle<B,4,3> on bytes, not {matrix.swizzle}")
    # Swizzle<B,4,3> swizzles rows of 16 << B bytes (B = 0: none), the descriptor's swizzle row
    code = next((k for k, nbytes in descriptor.SWIZZLE_BYTES.items() if nbytes == 16 << b), None)
    if code is None:
        raise CuteError(f"Swizzle<{b},4,3>: the copy swizzles 32, 64 or 128 bytes (B = 1, 2, 3)")
    sbo = plain(8, 0) - plain(0, 0) if rows > 8 else 0
    lbo = plain(0, 16) - plain(0, 0) if bits == 256 and code == 0 else 0
    origin = start + plain(0, 0)
    try:
        desc = descriptor.encode(origin, lbo, sbo, code)
        got = descriptor.chunk_addresses(ins, descriptor.decode(desc))
    except descriptor.DescriptorError as e:
        raise CuteError(f"the layout gives descriptor fields the copy cannot take: {e}") from None
    for r in range(rows):
        for c in range(got.shape[1]):
            want = start + matrix(r, 16 * c)
            if int(got[r, c]) != want:
                raise CuteError(f"row {r}, chunk {c}: the descriptor reads {int(got[r, c]):#x}, the layout "
                                f"puts it at {want:#x}: not a canonical layout the copy can walk")
    return desc


def _as_layout(f: np.ndarray) -> Layout:
    """A layout of the mapping ``f`` over an index space of power-of-two modes (``f.shape``):
    each mode split into bits, each bit's stride its offset, adjacent bits merged where the
    stride doubles. CuteError when ``f`` is not linear in the bits (no layout expresses it)."""
    shapes, strides = [], []
    for axis, n in enumerate(f.shape):
        if n & (n - 1):
            raise CuteError(f"a mode of {n}: only power-of-two modes are split")
        idx = [0] * f.ndim
        mode_shape: list[int] = []
        mode_stride: list[int] = []
        k = 1
        while k < n:
            idx[axis] = k
            d = int(f[tuple(idx)]) - int(f[(0,) * f.ndim])
            if mode_stride and d == mode_stride[-1] * mode_shape[-1]:
                mode_shape[-1] *= 2
            else:
                mode_shape.append(2)
                mode_stride.append(d)
            k *= 2
        if not mode_shape:
            mode_shape, mode_stride = [1], [0]
        shapes.append(mode_shape[0] if len(mode_shape) == 1 else tuple(mode_shape))
        strides.append(mode_stride[0] if len(mode_stride) == 1 else tuple(mode_stride))
    out = Layout(tuple(shapes), tuple(strides))
    grid = np.indices(f.shape).reshape(f.ndim, -1).T
    for c in grid:
        if out(*(int(x) for x in c)) != int(f[tuple(c)]) - int(f[(0,) * f.ndim]):
            raise CuteError(f"the table is not a layout (it is not linear at {tuple(int(x) for x in c)})")
    return out


def tv_layout(ins: Instr | str) -> tuple[Layout, tuple[int, int]]:
    """The form's fragment as a CuTe thread-value layout and the (rows, columns) of the tile
    its values index, column-major as CuTe numbers a tile (element ``row + rows·column``):

    - ldmatrix / stmatrix: (thread, value) → element of the matrices' rows stacked (rows of
      16 bytes; values are the bytes of a thread's registers, register-major);
    - wmma.load: (thread, value) → element of the fragment (values are the fragment's slots);
    - tcgen05.ld / tcgen05.st: (thread, register) → (lane, column) of Tensor Memory, lanes
      relative to the warp's first, column-major over the columns the form spans."""
    ins = ptx.parse(ins, "sm_100a") if isinstance(ins, str) else ins
    if ins.op in ("ldmatrix", "stmatrix"):
        T = layouts.row_table(ins)                       # (32, regs, 4, (row, byte))
        rows = layouts.row_count(ins)
        f = T[..., 0].astype(np.int64) + rows * T[..., 1].astype(np.int64)
        return _as_layout(f.reshape(32, -1)), (rows, layouts.ROW_BYTES)
    if ins.op == "wmma.load":
        W = layouts.wmma_table(ins)                      # (32, slots, (i, j))
        m, n = layouts.wmma_dims(ins.frag, ins.shape)
        return _as_layout(W[..., 0].astype(np.int64) + m * W[..., 1].astype(np.int64)), (m, n)
    if ins.op in ("tcgen05.ld", "tcgen05.st"):
        M = layouts.tmem_table(ins)                      # (32, regs, (lane, column, half))
        lanes = int(M[..., 0].max()) + 1
        cols = int(M[..., 1].max()) + 1
        f = M[..., 0].astype(np.int64) + lanes * (M[..., 1].astype(np.int64) + cols * M[..., 2].astype(np.int64))
        halves = int(M[..., 2].max()) + 1
        return _as_layout(f), (lanes, cols * halves)
    raise CuteError(f"tv_layout: no fragment table for {ins.op}")
