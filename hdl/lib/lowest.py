"""Priority encoder as a binary tree."""

from __future__ import annotations

from amaranth import C, Cat, Mux

__all__ = ["lowest"]


def lowest(bits: list) -> tuple:
    """``(any, index)`` of the lowest set bit of ``bits``, as a binary tree: log2(n) levels, not
    a chain of n priority multiplexers."""
    n = 1 << (len(bits) - 1).bit_length()
    bits = list(bits) + [C(0, 1)] * (n - len(bits))   # a power of two of them
    if len(bits) <= 2:
        lo, hi = bits[0], bits[-1]
        return (lo | hi, ~lo) if len(bits) == 2 else (lo, C(0, 1))
    half = len(bits) // 2
    lo_any, lo_idx = lowest(bits[:half])
    hi_any, hi_idx = lowest(bits[half:])
    return lo_any | hi_any, Cat(Mux(lo_any, lo_idx, hi_idx), ~lo_any)
