"""Priority encoder and a two-or-more test, as binary trees."""

from __future__ import annotations

from amaranth import C, Cat, Mux

__all__ = ["lowest", "lowest_value", "two_or_more"]


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


def lowest_value(bits: list, values: list) -> tuple:
    """``(any, value)``: ``values[i]`` of the lowest set bit ``i`` of ``bits`` (0 when none),
    as a binary tree of two-way multiplexers, each picking its low half when that has a set
    bit: log2(n) levels behind the halves' ORs, not an OR chain of n terms."""
    if len(bits) != len(values):
        raise ValueError(f"{len(bits)} bits but {len(values)} values")
    if len(bits) == 1:
        return bits[0], Mux(bits[0], values[0], 0)
    half = len(bits) // 2
    lo_any, lo_val = lowest_value(bits[:half], values[:half])
    hi_any, hi_val = lowest_value(bits[half:], values[half:])
    return lo_any | hi_any, Mux(lo_any, lo_val, hi_val)


def two_or_more(bits: list):
    """Whether two or more of ``bits`` are set, as a binary tree of (any, two) pairs: log2(n)
    levels, not the carry chain of ``(x & (x - 1)) != 0``."""
    level = [(b, C(0, 1)) for b in bits]
    while len(level) > 1:
        nxt = [(a1 | a2, t1 | t2 | (a1 & a2)) for (a1, t1), (a2, t2) in zip(level[::2], level[1::2])]
        level = nxt + level[len(level) // 2 * 2:]
    return level[0][1]
