"""The global fetch stage's landing: the served pass's rows into the row buffer, window by
window, once all are in."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..lib.modular import add_mod
from ..lib.mux import mux_tree
from ..params import ROW_BITS, Params
from ..pipeline.forms import BLOCK
from ..pipeline.records import ProgressSignature

__all__ = ["FetchLanding"]


class FetchLanding(wiring.Component):
    """Landing of the served pass, prefix ``g_``: once every used slot of context ``cur`` is in
    and it has no burst in flight, its windows land one a cycle, each when the ring allows
    (``blocked`` low), like the bank stage's, with the rows the row store read for them; after
    the last one the pass finishes. A refused context lands nothing and finishes at once with
    its error.

    Latency: a window lands (``progress.land``, registered) the cycle after it is allowed;
    ``finish`` is the cycle its last window is allowed.

    Members
    -------
    valid, cur, cur_hot : In
        A pass is served, from context ``cur`` (``cur_hot``: the same, one bit a context, so
        that picking the served context's state is one gate, not a decode of ``cur``).
    restart : In(1)
        A pass is taken: its first window next.
    buf, start, lastwin : In
        Its entry, first ring block and last window.
    blocked : In(1)
        The ring's go-ahead.
    used, complete, err, inflight : In
        The contexts (:class:`~tensorlsu.hdl.gmem.contexts.FetchContexts`): their slots, whether
        each has every slot in, their errors; and which have bursts in flight.
    win : Out(range(windows))
        The window to land next: the row store (:class:`~tensorlsu.hdl.gmem.rows.FetchRows`)
        reads it, and its rows come back on ``rows`` the next cycle, as the window lands.
    rows : In(ROW_BITS).array(window)
        The rows of the window read the cycle before.
    progress : Out(ProgressSignature(params))
    advance, finish : Out(1)
        The next window comes next cycle; the pass ends this cycle.
    """

    def __init__(self, params: Params):
        self.params = p = params
        R, C = p.lanes, p.axi_contexts
        super().__init__({
            "valid": In(1), "cur": In(range(C)), "cur_hot": In(C), "restart": In(1), "buf": In(range(p.entries)),
            "start": In(range(p.row_blocks)), "lastwin": In(range(p.windows)), "blocked": In(1),
            "used": In(R).array(C), "complete": In(1).array(C), "err": In(Error).array(C),
            "rows": In(ROW_BITS).array(p.window), "win": Out(range(p.windows)), "inflight": In(C),
            "progress": Out(ProgressSignature(p)), "advance": Out(1), "finish": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p, cur = self.params, self.cur
        R, W = p.lanes, p.window
        win = self.win
        used, err = Signal(R, name="g_used"), Signal(Error, name="g_err")
        m.d.comb += [used.eq(mux_tree(cur, list(self.used))), err.eq(mux_tree(cur, list(self.err)))]
        hot = self.cur_hot
        arrived = Signal(name="g_arrived")      # every slot filled, nothing in flight
        refused = Signal(name="g_refused")
        m.d.comb += [arrived.eq(self.valid & (Cat(*self.complete) & hot).any() & ~(self.inflight & hot).any()),
                     refused.eq((Cat(*[e != Error.NONE for e in self.err]) & hot).any())]
        ok = Signal(name="g_land_ok")
        m.d.comb += [ok.eq(arrived & ~refused & ~self.blocked),
                     self.advance.eq(ok & (win != self.lastwin)),
                     self.finish.eq(arrived & (refused | (ok & (win == self.lastwin))))]
        land = self.progress.land
        win_slots = Signal(W, name="g_win_slots")
        m.d.comb += win_slots.eq(mux_tree(win, [used[k * W:(k + 1) * W] for k in range(p.windows)]))
        m.d.sync += [land.slots.eq(Mux(ok, win_slots, 0)), land.win.eq(win), land.buf.eq(self.buf),
                     land.first.eq(add_mod(self.start, win * (W // BLOCK), p.row_blocks))]
        m.d.comb += [self.progress.land_rows[j].eq(self.rows[j]) for j in range(W)]
        m.d.comb += [self.progress.buf.eq(self.buf), self.progress.count.eq(0),
                     self.progress.finished.eq(self.finish), self.progress.error.eq(err)]
        with m.If(self.advance):
            m.d.sync += win.eq(win + 1)
        with m.If(self.restart):
            m.d.sync += win.eq(0)
        return m
