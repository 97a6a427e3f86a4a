"""One progress for the result stage from the two stages that fill entries."""

from __future__ import annotations

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import Params
from .records import ProgressSignature

__all__ = ["ProgressMerge"]


class ProgressMerge(wiring.Component):
    """The bank stage's and the global fetch stage's progress as one, for the result stage.

    The two stages never serve at once, but the fetch stage's last landing (registered) may
    come in the cycle the bank stage starts: rows landing come from the stage that lands them,
    the entry from the stage that is busy. Only the bank stage counts bank cycles; only the
    fetch stage finishes with an error (a bus error); only the bank stage pairs passes (the
    ``second_`` members are its own).

    Combinational (latency 0).

    Members
    -------
    bank, fetch : In(ProgressSignature(params))
        The two stages' progress.
    fetch_busy : In(1)
        The fetch stage serves a pass.
    progress : Out(ProgressSignature(params))
    """

    def __init__(self, params: Params):
        self.params = p = params
        super().__init__({"bank": In(ProgressSignature(p)), "fetch": In(ProgressSignature(p)),
                          "fetch_busy": In(1), "progress": Out(ProgressSignature(p))})

    def elaborate(self, platform):
        m = Module()
        b, f, out = self.bank, self.fetch, self.progress
        f_lands = f.land.slots.any()
        m.d.comb += [out.buf.eq(Mux(self.fetch_busy, f.buf, b.buf)),
                     out.count.eq(b.count),
                     out.finished.eq(b.finished | f.finished),
                     out.error.eq(Mux(f.finished, f.error, Error.NONE)),
                     out.land.eq(Mux(f_lands, f.land, b.land))]
        m.d.comb += [out.land_rows[j].eq(Mux(f_lands, f.land_rows[j], b.land_rows[j]))
                     for j in range(len(out.land_rows))]
        if self.params.pair_passes:
            m.d.comb += [getattr(out, k).eq(getattr(b, k)) for k in ("second_buf", "second_count",
                                                                      "second_finished", "second_land")]
            m.d.comb += [out.second_land_rows[j].eq(b.second_land_rows[j]) for j in range(len(out.land_rows))]
        return m
