"""Constant tables indexed by a signal, as one wide word per row.

Many small tables indexed by the same signal (the step row of a Tensor Memory quadrant) are
kept as one table of wide rows: one multiplexer instead of one per table, which is what
keeps the quadrant's netlist (and a Verilator model of it) small.
"""

from __future__ import annotations

from amaranth import Array, Signal
from amaranth.lib import data

__all__ = ["rom"]


def rom(m, index, fields: dict, name: str):
    """``fields``: name → (shape, list of values, one per row). Returns a view of a signal
    whose fields hold row ``index`` of every table (rows past the end read the last)."""
    layout = data.StructLayout({k: shape for k, (shape, _) in fields.items()})
    rows = len(next(iter(fields.values()))[1])
    assert all(len(v) == rows for _, v in fields.values()), "tables of different lengths"
    consts = [layout.const({k: v[r] for k, (_, v) in fields.items()}).as_value() for r in range(rows)]
    out = Signal(layout, name=name)
    m.d.comb += out.eq(Array(consts)[index])
    return out
