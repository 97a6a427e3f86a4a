"""The 64-bit shared-memory matrix descriptor of tcgen05.cp, and the walk it describes.

A descriptor names a K-major matrix in shared memory: 8-row core-matrix groups of 16-byte
chunks, optionally swizzled. :func:`decode` gives its named fields and refuses every field a
copy cannot use; :func:`chunk_addresses` is the walk: the shared-memory address of every
16-byte chunk of every row. docs/tcgen05-cp.md states the layout and which points are
assumptions (no hardware of the family is at hand).

Fields (bit ranges inclusive):

=======  ===========================================================================
bits     field
=======  ===========================================================================
0–13     start address >> 4 (absolute shared-memory address)
14–15    reserved, zero
16–29    leading-dimension byte offset (LBO) >> 4
30–31    reserved, zero
32–45    stride-dimension byte offset (SBO) >> 4
46–48    fixed 0b001 (the descriptor version)
49–51    matrix base offset
52       leading-dimension stride mode: 0 (offsets); 1, absolute byte addresses, is not a
         mode tcgen05.cp reads
53–60    fixed zero
61–63    swizzle: 0 none, 6 32-byte, 4 64-byte, 2 128-byte; 1 (128-byte with 32-byte atoms,
         an MN-major layout) and 3, 5, 7 are refused
=======  ===========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ptx import CP_SHAPES, Instr

__all__ = ["DescriptorError", "SmemDescriptor", "decode", "encode", "SWIZZLE_BYTES", "CHUNK",
           "GROUP_ROWS", "chunk_addresses"]

#: Bytes in one chunk: the unit of the walk (and of decompression).
CHUNK = 16
#: Rows of one core-matrix group.
GROUP_ROWS = 8
#: Swizzle code → the swizzle row in bytes (16: no swizzle, one chunk per row of a group).
SWIZZLE_BYTES = {0: 16, 6: 32, 4: 64, 2: 128}
_VERSION = 0b001


class DescriptorError(ValueError):
    """A descriptor field that no copy may use, named."""


@dataclass(frozen=True)
class SmemDescriptor:
    """The fields of a descriptor, in bytes where the encoding shifts them."""

    start: int          #: absolute shared-memory address of the matrix
    lbo: int            #: leading-dimension byte offset: between a row's two chunks, unswizzled
    sbo: int            #: stride-dimension byte offset: between 8-row groups
    base_offset: int    #: matrix base offset (0–7), swizzled layouts only
    swizzle: int        #: the code (0, 2, 4, 6)

    @property
    def swizzle_bytes(self) -> int:
        """The swizzle row: 16 (none), 32, 64 or 128 bytes."""
        return SWIZZLE_BYTES[self.swizzle]

    @property
    def swizzle_bits(self) -> int:
        """B of CuTe's Swizzle<B, 4, 3>: address bits 4 … 3+B are XORed with bits 7 … 6+B."""
        return (self.swizzle_bytes // CHUNK).bit_length() - 1


def _field(d: int, lo: int, bits: int) -> int:
    return (d >> lo) & ((1 << bits) - 1)


def decode(desc: int) -> SmemDescriptor:
    """The named fields of ``desc``; :class:`DescriptorError` for a field a copy cannot use."""
    d = int(desc)
    if not 0 <= d < 1 << 64:
        raise DescriptorError(f"descriptor {desc:#x} is not a 64-bit value")
    for lo, bits, what in ((14, 2, "bits 14-15"), (30, 2, "bits 30-31")):
        if _field(d, lo, bits):
            raise DescriptorError(f"descriptor {d:#018x}: reserved {what} are {_field(d, lo, bits):#x}, not 0")
    if _field(d, 46, 3) != _VERSION:
        raise DescriptorError(f"descriptor {d:#018x}: the fixed bits 46-48 are {_field(d, 46, 3):#05b}, "
                              f"not 0b001")
    if _field(d, 52, 1):
        raise DescriptorError(f"descriptor {d:#018x}: bit 52 selects the absolute byte-address mode of the "
                              "leading dimension, which tcgen05.cp does not read")
    if _field(d, 53, 8):
        raise DescriptorError(f"descriptor {d:#018x}: the fixed bits 53-60 are {_field(d, 53, 8):#x}, not 0")
    code = _field(d, 61, 3)
    if code == 1:
        raise DescriptorError(f"descriptor {d:#018x}: swizzle code 1 (128-byte with 32-byte atoms) is an "
                              "MN-major layout; tcgen05.cp reads K-major ones")
    if code not in SWIZZLE_BYTES:
        raise DescriptorError(f"descriptor {d:#018x}: swizzle code {code} is invalid "
                              "(0 none, 6 32-byte, 4 64-byte, 2 128-byte)")
    return SmemDescriptor(start=_field(d, 0, 14) << 4, lbo=_field(d, 16, 14) << 4, sbo=_field(d, 32, 14) << 4,
                          base_offset=_field(d, 49, 3), swizzle=code)


def encode(start: int, lbo: int = 0, sbo: int = 0, swizzle: int = 0, base_offset: int = 0) -> int:
    """The descriptor of these fields (byte values, multiples of 16 below 256 KiB)."""
    for name, v in (("start", start), ("lbo", lbo), ("sbo", sbo)):
        if v % CHUNK or not 0 <= v < CHUNK << 14:
            raise DescriptorError(f"{name} {v} is not a multiple of {CHUNK} below {CHUNK << 14}")
    if swizzle not in SWIZZLE_BYTES or not 0 <= base_offset < 8:
        raise DescriptorError(f"swizzle {swizzle} / base offset {base_offset} out of range")
    return ((start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | _VERSION << 46 | base_offset << 49
            | swizzle << 61)


def chunk_addresses(ins: Instr, desc: SmemDescriptor) -> np.ndarray:
    """``A[row, chunk]``: the shared-memory address of every 16-byte chunk of every row the
    copy reads (rows of the shape, chunks per row: 2 for 256-bit rows, 1 for 128-bit).

    Before the swizzle, chunk ``c`` of row ``r`` is at ``start + (r mod 8)·S + (r div 8)·SBO
    + c·(LBO unswizzled, else 16)``, ``S`` the swizzle row. The swizzle XORs address bits
    4 … 3+B with ``((address >> 7) − base offset) mod 2^B`` (the absolute address's bits 7 …
    6+B when the base offset is 0). :class:`DescriptorError` when a row's chunks would cross
    their swizzle row (a start too far into it)."""
    rows, bits = CP_SHAPES[ins.shape]
    chunks = bits // (8 * CHUNK)
    s = desc.swizzle_bytes
    if s > CHUNK and desc.start % s + chunks * CHUNK > s:
        raise DescriptorError(f"start {desc.start:#x} is {desc.start % s} bytes into a {s}-byte swizzle row: "
                              f"a row of {chunks * CHUNK} bytes would cross it")
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(chunks, dtype=np.int64)[None, :]
    step = desc.lbo if s == CHUNK else CHUNK
    addr = desc.start + (r % GROUP_ROWS) * s + (r // GROUP_ROWS) * desc.sbo + c * step
    b = desc.swizzle_bits
    if b:
        key = ((addr >> 7) - desc.base_offset) & ((1 << b) - 1)
        addr = addr ^ (key << 4)
    return addr
