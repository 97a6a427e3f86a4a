"""The independent oracle of the sm_100-family forms: a small evaluator of CuTe layouts and the
CUTLASS tables transcribed for it.

No GPU of the family is at hand, so expected values come from NVIDIA CUTLASS's public
headers, transcribed here and evaluated without the project's own tables:

- the UTCCP copy atoms of tcgen05.cp (include/cute/atom/copy_traits_sm100.hpp): which Tensor
  Memory lanes each row of the copied matrix lands in;
- the canonical K-major layouts an UMMA / tcgen05.cp shared-memory descriptor describes (the
  comment of make_umma_desc in include/cute/arch/mma_sm100_desc.hpp), composed with CuTe's
  Swizzle<B, 4, 3> on the byte address.

The ldmatrix / tcgen05.ld tables stay with their tests (tb/sim/test_layouts_cute.py).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["cute", "flat", "size", "DP", "UTCCP", "utccp_lanes", "CANONICAL", "swizzle", "place",
           "landed"]


def flat(x):
    return [y for e in x for y in flat(e)] if isinstance(x, tuple) else [x]


def cute(shape, stride, *coord):
    """Evaluate a CuTe layout at one coordinate per top-level mode (colexicographic)."""
    out = 0
    for sh, st, c in zip(shape, stride, coord):
        for s, d in zip(flat(sh), flat(st)):
            out += (c % s) * d
            c //= s
    return out


def size(shape):
    return int(np.prod(flat(shape)))


# ---- tcgen05.cp: the UTCCP atoms --------------------------------------------------------
# ValID maps a logical bit, numbered [rows of the matrix (the core-matrix strided mode), bits
# of a row (the leading mode), repeat, broadcast], to a Tensor Memory bit address (lane ·
# DP_b + bit); SrcLayout / DstLayout map the atom's values to logical bits. A value's data
# is logical bit Src(v) of the matrix and lands at ValID(Dst(v)).
DP = 1 << 21   # TMEM::DP_b: one lane, in bits
UTCCP = {  # (shape, multicast): (rows M0 of the strided mode, bits K, ValID, Src, Dst)
    ("128x256b", None): (128, 256, ((128, 256), (DP, 1)), (32768, 1), (32768, 1)),
    ("128x128b", None): (128, 128, ((128, 128), (DP, 1)), (16384, 1), (16384, 1)),
    ("4x256b", None): (128, 256, ((128, 256), (DP, 1)), ((4, 256), (32, 128)), ((4, 256), (32, 128))),
    ("32x128b", "warpx4"): (32, 128, ((32, 128, 4), (DP, 1, 32 * DP)), ((32, 128, 4), (1, 32, 0)), (16384, 1)),
    ("64x128b", "warpx2::02_13"): (64, 128, ((64, 128, 2), (DP, 1, 64 * DP)), ((64, 128, 2), (1, 64, 0)),
                                   (16384, 1)),
    ("64x128b", "warpx2::01_23"): (32, 128, ((32, 128, 2, 2), (DP, 1, 64 * DP, 32 * DP)),
                                   ((32, 128, 2, 2), (1, 32, 4096, 0)), (16384, 1)),
}


@lru_cache(maxsize=None)
def utccp_lanes(shape: str, cast: str | None) -> dict[int, frozenset[tuple[int, int]]]:
    """Per row of the matrix, the (lane offset, bit shift) pairs its bits land at: a row's
    bit ``b`` lands at bit ``b + shift`` of the lane (every pair should have shift 0)."""
    m0, kbits, (vshape, vstride), (sshape, sstride), (dshape, dstride) = UTCCP[(shape, cast)]
    landed_at: dict[int, set] = {}
    for v in range(size(sshape)):
        src = cute((sshape,), (sstride,), v)
        row, bit = src % m0 + m0 * (src // (m0 * kbits)), (src // m0) % kbits
        if shape == "4x256b":
            # the atom numbers the four rows as the logical rows 0, 32, 64, 96 it refreshes
            row //= 32
        lane, tbit = divmod(cute((vshape,), (vstride,), cute((dshape,), (dstride,), v)), DP)
        landed_at.setdefault(row, set()).add((lane, tbit - bit))
    return {r: frozenset(v) for r, v in landed_at.items()}


# ---- tcgen05.cp: the canonical K-major layouts ----------------------------------------------
#: swizzle code → (B of Swizzle<B,4,3>, the 8-row group's row stride in 16-byte units)
CANONICAL = {0: (0, 1), 6: (1, 2), 4: (2, 4), 2: (3, 8)}


def swizzle(addr: int, b: int) -> int:
    """CuTe's Swizzle<B, 4, 3> on a byte address: bits 4 … 3+B ^= bits 7 … 6+B."""
    return addr ^ (((addr >> 7) & ((1 << b) - 1)) << 4)


def place(matrix: np.ndarray, start: int, lbo: int, sbo: int, code: int, base_offset: int = 0,
          smem_bytes: int = 228 * 1024) -> np.ndarray:
    """Shared memory holding ``matrix`` (rows × bytes, rows of 16 or 32 bytes) in the
    canonical K-major layout ``((8, m), (T, 2)) : ((S/16, SBO), (1, LBO or 1))`` (uint128
    units), swizzled. With a base offset the swizzle pattern is anchored ``base_offset``
    128-byte rows before the absolute one (the pattern starts at the matrix)."""
    b, row_step = CANONICAL[code]
    rows, nbytes = matrix.shape
    chunks = nbytes // 16
    smem = np.zeros(smem_bytes, dtype=np.uint8)
    shape = ((8, max(rows // 8, 1)), chunks)
    stride = ((row_step, sbo // 16), lbo // 16 if code == 0 else 1)
    for r in range(rows):
        for c in range(chunks):
            unit = cute(shape, stride, r, c)
            for j in range(16):
                a = start + 16 * unit + j
                at = swizzle(a - 128 * base_offset, b) + 128 * base_offset if b else a
                smem[at] = matrix[r, 16 * c + j]
    return smem


def landed(shape: str, cast: str | None, matrix: np.ndarray, taddr: int, before: np.ndarray) -> np.ndarray:
    """The Tensor Memory image after the copy: each row's bytes little-endian from taddr's
    column on, in the lanes the UTCCP atom gives it."""
    out = before.copy()
    lane0, col0 = taddr >> 16, taddr & 0xFFFF
    words = np.ascontiguousarray(matrix).reshape(matrix.shape[0], -1).view("<u4")
    for r, places in utccp_lanes(shape, cast).items():
        for lane, shift in places:
            assert shift == 0
            out[lane0 + lane, col0:col0 + words.shape[1]] = words[r]
    return out
