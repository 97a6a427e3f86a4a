"""Binary multiplexer trees.

Synthesis maps a tree of two-way multiplexers onto LUT4 + PFUMX / L6MUX cells; a one-hot
AND-OR (what ``Switch`` and ``Mux(sel, x, 0) | …`` become) maps far worse: about twice the LUTs
for the load shuffle (docs/log.md has the measurement). The wide data paths (row landing,
window, byte patterns, store writes) are built with :func:`mux_tree`.
"""

from __future__ import annotations

from amaranth import Mux, Value

__all__ = ["mux_tree"]


def mux_tree(sel: Value, options: list) -> Value:
    """``options[sel]`` as a tree of two-way multiplexers on the bits of ``sel``, low bit
    first. Missing options (past the end) repeat the last; neighbours that are the same object
    merge, so options that agree cost nothing (pass the same Value for the same source)."""
    if not options:
        raise ValueError("mux_tree needs at least one option")
    sel = Value.cast(sel)
    if len(options) > 1 << len(sel):
        raise ValueError(f"{len(options)} options need more than {len(sel)} select bits")
    level = list(options)
    for k in range(len(sel)):
        if len(level) == 1:
            break
        if len(level) % 2:
            level.append(level[-1])
        level = [a if a is b else Mux(sel[k], b, a) for a, b in zip(level[::2], level[1::2])]
    return level[0]
