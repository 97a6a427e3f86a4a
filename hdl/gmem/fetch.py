"""Global fetch stage (G): a wmma.load pass from global memory, through an AXI4 read port."""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import Params
from ..pipeline.records import ProgressSignature, TakeSignature, pass_layout
from .axi import AxiSignature
from .contexts import FetchContexts
from .landing import FetchLanding
from .requests import FetchRequests
from .rows import FetchRows

__all__ = ["GlobalFetch"]


class GlobalFetch(wiring.Component):
    """Global fetch stage, prefix ``g_``: serves a wmma.load pass whose chunks lie in global
    memory, in the bank stage's place (:class:`~tensorlsu.hdl.smem.serve.BankStage`): the same take,
    ring go-ahead and landing, so the result stage gathers the fragment with the same shuffle.

    A pass's slots hold 16-byte chunks at 32-bit addresses (a chunk of an 8-byte line may start
    in the upper half of its row, which lands with its halves swapped, as from the banks).

    - **Requests** (:class:`~tensorlsu.hdl.gmem.requests.FetchRequests`). The lowest slot not
      yet requested names a data-width line (three steps: a request every other cycle at most);
      the burst takes that line and the following ones (up to ``axi_burst``, never across 4 KiB)
      while each holds a slot not yet requested, and marks every slot in them requested. So
      every line the pass touches is read exactly once, in INCR bursts of full-width beats, up to
      ``axi_outstanding`` in flight (on ``axi_ids`` ids in turn); a line the second pass of a 64-chunk fragment
      shares with the first is read once, for both (the twin,
      :class:`~tensorlsu.hdl.gmem.contexts.FetchContexts`).
    - **Data** (:class:`~tensorlsu.hdl.gmem.rows.FetchRows`, the slots' state in
      :class:`~tensorlsu.hdl.gmem.contexts.FetchContexts`). Each beat (any id order, beats of
      one id in order) fills every slot whose row lies in it, matched, selected and written in
      three stages (a beat that feeds one row memory twice holds the beats behind it a cycle
      more). A beat with SLVERR or DECERR marks the pass refused.
    - **Ahead.** ``axi_contexts`` contexts in a ring: a global pass the checks did not refuse
      takes the next one as it enters the pass queue (``enter``), and its requests go out
      behind those of the passes before it, while they wait in the queue or are served; the
      pass queue takes a pass only while a context is free (``room``). Its take then only
      starts the landing, so the port streams across instructions, with up to
      ``axi_contexts`` passes' lines in flight.
    - **Landing** (:class:`~tensorlsu.hdl.gmem.landing.FetchLanding`). Once every slot is
      filled, the pass lands window by window (one a cycle, each when the ring allows,
      :class:`~tensorlsu.hdl.pipeline.ring.RowRing`), then finishes; a
      refused pass lands nothing and finishes with its error (``progress.error``), so that its
      beats leave with the error and no data.

    Latency: a pass's first request leaves three cycles after it enters the pass queue at the
    earliest (behind the requests of the passes before it); a pass finishes the cycle its
    last window lands, three cycles after its last beat moves at the earliest. ``progress.count`` is 0:
    a global pass occupies no bank.

    Members
    -------
    enter, enter_pass : In
        A pass enters the pass queue this cycle, and the pass: a global one not refused takes
        a context.
    room : Out(1)
        A context is free (a register's decode).
    take : In(TakeSignature(params))
        The take (:class:`~tensorlsu.hdl.pipeline.take.Take`), ``ok`` for the global passes:
        start the pass (the oldest context) into entry ``tail`` at ring block ``start``.
    blocked : In(1)
        The ring's go-ahead.
    axi : Out(AxiSignature(...))
    progress : Out(ProgressSignature(params))
    busy, free, advance : Out(1)
        As the bank stage's.
    """

    def __init__(self, params: Params):
        self.params = p = params
        super().__init__({
            "enter": In(1), "enter_pass": In(pass_layout(p)), "room": Out(1),
            "take": In(TakeSignature(p)), "blocked": In(1),
            "axi": Out(AxiSignature(p.axi_data_bits, p.axi_id_bits)),
            "progress": Out(ProgressSignature(p)),
            "busy": Out(1), "free": Out(1), "advance": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p, axi, tk = self.params, self.axi, self.take
        m.submodules.requests = req = FetchRequests(p)
        m.submodules.contexts = ctx = FetchContexts(p)
        m.submodules.landing = land = FetchLanding(p)
        m.submodules.rows = rows = FetchRows(p)
        # the served pass (context `cur`: the contexts are served in ring order)
        valid, cur = Signal(name="g_valid"), Signal(range(p.axi_contexts), name="g_cur")
        buf, start = Signal(range(p.entries), name="g_buf"), Signal(range(p.row_blocks), name="g_start")
        lastwin = Signal(range(p.windows), name="g_lastwin")
        r_fire = axi.rvalid & axi.rready
        m.d.comb += [axi.rready.eq(rows.rready), axi.bready.eq(1), axi.arvalid.eq(req.arvalid),
                     req.arready.eq(axi.arready), req.alloc.eq(ctx.alloc), req.cur.eq(cur),
                     req.r_fire.eq(r_fire), req.rid.eq(axi.rid), req.rlast.eq(axi.rlast)]
        m.d.comb += [getattr(axi, k).eq(getattr(req, k)) for k in ("arid", "araddr", "arlen", "arsize", "arburst")]
        m.d.comb += [rows.rvalid.eq(axi.rvalid), rows.rdata.eq(axi.rdata), rows.rresp.eq(axi.rresp),
                     rows.beat_line.eq(req.beat_line), rows.beat_ctx.eq(req.beat_ctx),
                     rows.cur.eq(cur), rows.win.eq(land.win)]
        admit = self.enter & self.enter_pass.glob & (self.enter_pass.err == Error.NONE)
        m.d.comb += [req.admit.eq(admit), req.admit_pass.eq(self.enter_pass),
                     req.admit_twin.eq(ctx.admit_twin)]
        m.d.comb += [ctx.enter.eq(self.enter), ctx.admit.eq(admit), ctx.pass_.eq(self.enter_pass),
                     ctx.free.eq(land.finish), ctx.covered_twin.eq(req.covered_twin), ctx.fill_twin.eq(rows.fill_twin),
                     ctx.cur.eq(cur), self.room.eq(ctx.room),
                     ctx.filling.eq(rows.filling), ctx.filled.eq(rows.filled),
                     ctx.fill_ctx.eq(rows.fill_ctx), ctx.fill_resp.eq(rows.fill_resp), ctx.ar.eq(req.ar),
                     ctx.sel_ctx.eq(req.sel_ctx), ctx.covered.eq(req.covered)]
        cur_hot = Signal(p.axi_contexts, name="g_cur_hot", init=1)     # cur, one bit a context
        m.d.comb += [land.valid.eq(valid), land.cur.eq(cur), land.cur_hot.eq(cur_hot), land.restart.eq(tk.ok),
                     land.buf.eq(buf),
                     land.start.eq(start), land.lastwin.eq(lastwin), land.blocked.eq(self.blocked),
                     land.inflight.eq(req.inflight)]
        m.d.comb += [land.rows[j].eq(rows.rows[j]) for j in range(p.window)]
        for c in range(p.axi_contexts):
            m.d.comb += [req.pending[c].eq(ctx.pending[c]), land.used[c].eq(ctx.used[c]),
                         land.complete[c].eq(ctx.complete[c]), land.err[c].eq(ctx.err[c]),
                         rows.used[c].eq(ctx.used[c]), rows.got[c].eq(ctx.got[c]), req.twin[c].eq(ctx.twin[c]),
                         rows.twin[c].eq(ctx.twin[c]), rows.borrowed[c].eq(ctx.borrowed[c])]
            for s in range(p.lanes):
                m.d.comb += [req.line[c][s].eq(ctx.line[c][s]), rows.line[c][s].eq(ctx.line[c][s]),
                             rows.row[c][s].eq(ctx.row[c][s]), rows.upper[c][s].eq(ctx.upper[c][s])]
        wiring.connect(m, land.progress, wiring.flipped(self.progress))
        m.d.comb += [self.advance.eq(land.advance), self.busy.eq(valid), self.free.eq(~valid | land.finish)]

        # the take starts the landing of the oldest context; its end frees the context
        with m.If(land.finish):
            m.d.sync += [valid.eq(0), cur.eq(Mux(cur == p.axi_contexts - 1, 0, cur + 1)),
                         cur_hot.eq(cur_hot.rotate_left(1))]
        with m.If(tk.ok):
            m.d.sync += [valid.eq(1), buf.eq(tk.tail), start.eq(tk.start), lastwin.eq(tk.pass_.consts.lastwin)]
        return m
