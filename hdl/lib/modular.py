"""Sums on a ring of ``n`` places that need not be a power of two.

The load row buffer is a ring of blocks whose count follows the pipeline's depth
(``Params.ring_passes``), so its positions wrap by a comparison, not by truncation.
"""

from __future__ import annotations

from amaranth import Mux, Value

__all__ = ["add_mod", "is_at_mod"]


def add_mod(a, b, n: int) -> Value:
    """``(a + b) mod n`` for ``0 <= a, b < n``: one subtraction, chosen by the sum's carry past
    ``n``."""
    total = Value.cast(a) + b
    return Mux(total >= n, total - n, total)[:max(1, (n - 1).bit_length())]


def is_at_mod(a, k: int, place: int, n: int) -> Value:
    """``(a + k) mod n == place`` for ``0 <= a < n`` and constants ``0 <= k, place < n``,
    without the adder: ``a`` is one of the two places that reach ``place``."""
    if not (0 <= k < n and 0 <= place < n):
        raise ValueError(f"k and place must lie in 0 .. {n - 1}, not {k}, {place}")
    return Value.cast(a) == (place - k) % n
