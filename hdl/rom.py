"""Constant tables indexed by a signal, as one wide word per row.

Many small tables indexed by the same signal (the step row of a Tensor Memory quadrant) are
kept as one table of wide rows: one multiplexer instead of one per table, which is what
keeps the quadrant's netlist (and a Verilator model of it) small.

:func:`select` picks one of a few values by index as a binary tree of two-way multiplexers.
``Array(values)[index]`` makes a decoded one-hot AND/OR network instead, which neither the
FPGA mapping (no multiplexer to cover) nor the solvers handle well.
"""

from __future__ import annotations

from amaranth import Array, Mux, Signal
from amaranth.lib import data

__all__ = ["rom", "select"]


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


def select(values, index):
    """``values[index]`` as a tree of ``Mux`` on the bits of ``index`` (an index past the end
    gives one of the values: callers mask it)."""
    values = list(values)
    bit = 0
    while len(values) > 1:
        values = [Mux(index[bit], values[k + 1], values[k]) if k + 1 < len(values) else values[k]
                  for k in range(0, len(values), 2)]
        bit += 1
    return values[0]
