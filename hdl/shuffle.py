"""Fragment shuffle networks, generated from the model's layout tables.

:class:`LoadShuffle` turns the row buffer into result beat ``beat`` of a load form;
:func:`store_shuffle` is the inverse wiring used by stmatrix (beats into rows).
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import forms

__all__ = ["LoadShuffle", "beat_rows"]

_ROW_BITS = 128


def beat_rows(inf: forms.FormInfo, r: int) -> int:
    """Mask of the rows register beat ``r`` of a form touches."""
    return sum(1 << int(x) for x in set(inf.table[:, r, :, 0].flat))


class LoadShuffle(wiring.Component):
    """Combinational: ``out`` is register beat ``beat`` of load form ``form`` (32 lanes × 32
    bits) taken from ``rows``, byte for byte as :func:`tensorlsu.sim.layouts.row_table` says;
    ``need`` is the mask of rows it reads. Forms that are not loads give zero.

    Members
    -------
    form : In(form_bits)
    beat : In(range(lanes + 1))
    rows : In(ArrayLayout(128, lanes))
    out : Out(32 * lanes)
    need : Out(lanes)
    """

    def __init__(self, *, lanes: int = 32, form_bits: int = 6):
        self.lanes = lanes
        super().__init__({
            "form": In(form_bits), "beat": In(range(lanes + 1)),
            "rows": In(data.ArrayLayout(unsigned(_ROW_BITS), lanes)),
            "out": Out(32 * lanes), "need": Out(lanes)})

    def elaborate(self, platform):
        m = Module()
        with m.Switch(self.form):
            for f, ins in enumerate(forms.ROW_FORMS):
                inf = forms.info(f)
                if not inf.load:
                    continue
                with m.Case(f):
                    with m.Switch(self.beat):
                        for r in range(inf.nregs):
                            with m.Case(r):
                                parts = []
                                for t in range(self.lanes):
                                    for b in range(4):
                                        row, byte = (int(x) for x in inf.table[t, r, b])
                                        parts.append(self.rows[row][8 * byte:8 * byte + 8])
                                m.d.comb += [self.out.eq(Cat(*parts)), self.need.eq(beat_rows(inf, r))]
        return m
