"""The codes every wing puts on its result stream, and the state spaces of an address: the
ground floor of the RTL (no import from the rest of it)."""

from __future__ import annotations

from amaranth import unsigned
from amaranth.lib import enum

__all__ = ["Error", "Space", "FORMAT_CODES", "FMT_BITS"]

#: Decompressor source-format code of a pass (:class:`~tensorlsu.hdl.smem.decompress.Decompressor`):
#: 0 passes the row through.
FORMAT_CODES = {None: 0, "b6x16_p32": 1, "b4x16_p64": 2}
#: Width of a decompressor source-format code.
FMT_BITS = 2


class Error(enum.Enum, shape=unsigned(4)):  # type: ignore[call-arg]
    """Error code of a result beat."""

    #: The instruction completed.
    NONE = 0
    #: A row address is not 16-byte aligned (wmma.load: the matrix address not 32-byte).
    MISALIGNED = 1
    #: A row reaches outside shared memory.
    OUT_OF_RANGE = 2
    #: The form id names no form of this unit.
    UNSUPPORTED = 3
    #: Two threads of one stmatrix store the same row (a race the PTX leaves undefined).
    OVERLAP = 4
    #: A wmma.load stride below the leading dimension, or not a multiple of 16 bytes (of the
    #: whole line, where a line is narrower).
    STRIDE = 5
    #: Tensor Memory: a lane outside the warp's quadrant.
    QUADRANT = 6
    #: Tensor Memory: a column past the last one.
    COLUMNS = 7
    #: Tensor Memory: immHalfSplitoff missing (.16x32bx2), negative, given to another shape, or
    #: so small that a store's two halves overlap.
    SPLIT = 8
    #: Global memory: a read of the instruction's lines returned SLVERR.
    SLVERR = 9
    #: Global memory: a read of the instruction's lines returned DECERR (no subordinate there).
    DECERR = 10
    #: tcgen05.cp: a descriptor field no copy may use (reserved or fixed bits, the
    #: byte-address mode, swizzle code 1, 3, 5 or 7).
    DESCRIPTOR = 11
    #: tcgen05.cp: a lane past the last of Tensor Memory.
    LANES = 12


class Space(enum.Enum, shape=unsigned(2)):  # type: ignore[call-arg]
    """The state space of a wmma.load's address (ldmatrix / stmatrix: always shared-memory
    offsets)."""

    #: ``.shared``: a shared-memory offset.
    SHARED = 0
    #: ``.global``: a global address.
    GLOBAL = 1
    #: No state space: a generic address, in the shared window or global
    #: (:class:`~tensorlsu.hdl.params.Params`).
    GENERIC = 2
