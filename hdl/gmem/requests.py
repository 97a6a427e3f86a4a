"""The global fetch stage's read requests: which lines each burst reads, the ids in flight."""

from __future__ import annotations

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.lowest import lowest
from ..lib.mux import mux_tree
from ..params import Params
from .axi import AXI_PAGE, line_bits

__all__ = ["FetchRequests"]


class FetchRequests(wiring.Component):
    """Read requests of the global fetch stage, prefix ``g_``: the contexts' slots in ring
    order, from the served pass's on (the oldest first).

    Two steps, so that no loop closes within a cycle: the lowest slot of context ``rq`` not
    yet requested names the burst's first line (a register, ``sel``); from it the burst (that
    line and the following ones while each holds a slot not yet requested, at most
    ``axi_burst``, never across 4 KiB) and the slots it covers are decided, and the request
    leaves; it also covers the slots of context ``rq``'s twin (the next context, holding the
    instruction's second pass) that are in its lines and not yet requested (``covered_twin``).
    The next line is chosen the cycle after; once context ``rq`` has nothing left to
    request, ``rq`` moves to the next context, unless that is the one the next pass takes
    (``alloc``). Ids are used in turn (the next one a register, so the request's payload
    holds while it waits); each id remembers its context and the line its next beat brings.

    Latency: a request leaves two cycles after its slots become pending at the earliest, then
    every other cycle at most; moving to the next context takes a cycle.

    Members
    -------
    alloc : In(range(2 * axi_contexts))
        Passes admitted, modulo twice the contexts (``rq`` counts the passes whose requests
        are all out, the same way): the contexts from ``rq`` up to ``alloc`` hold passes.
    cur : In(range(axi_contexts))
        The served context.
    pending : In(lanes).array(axi_contexts)
        Each context's slots not yet requested; ``line``: each slot's line.
    twin : In(1).array(axi_contexts)
        The context holds the second pass of the instruction whose first is in the context
        before it.
    arready, arvalid, arid, araddr, arlen, arsize, arburst
        The AXI4 read-address channel.
    r_fire, rid, rlast : In
        A read beat moves this cycle, its id, and whether it ends its burst.
    ar : Out(1)
        A request moves this cycle, for context ``sel_ctx``, covering the slots ``covered``,
        and its twin's slots ``covered_twin``.
    beat_line, beat_ctx : Out
        The line and the context of this cycle's read beat.
    inflight : Out(axi_contexts)
        Per context: it has bursts in flight.
    """

    def __init__(self, params: Params):
        self.params = p = params
        lb, lw = line_bits(p)
        R, NC, ids = p.lanes, p.axi_contexts, p.axi_id_bits
        super().__init__({
            "alloc": In(range(2 * NC)), "cur": In(range(NC)),
            "pending": In(R).array(NC), "line": In(lw).array(NC, R), "twin": In(1).array(NC),
            "arready": In(1), "arvalid": Out(1), "arid": Out(ids), "araddr": Out(32), "arlen": Out(8),
            "arsize": Out(3), "arburst": Out(2),
            "r_fire": In(1), "rid": In(ids), "rlast": In(1),
            "ar": Out(1), "sel_ctx": Out(range(NC)), "covered": Out(R), "covered_twin": Out(R),
            "beat_line": Out(lw), "beat_ctx": Out(range(NC)), "inflight": Out(NC)})

    def elaborate(self, platform):
        m = Module()
        p, R = self.params, self.params.lanes
        lb, lw = line_bits(p)
        page_lines = AXI_PAGE // (p.axi_data_bits // 8)
        NC = p.axi_contexts
        pending, line = self.pending, self.line
        # the candidate: context rq's lowest slot not yet requested
        rq = Signal(range(2 * NC), name="g_rq")
        at = rq[:(NC - 1).bit_length()]
        rq_pending = Signal(R, name="g_rq_pending")
        m.d.comb += rq_pending.eq(mux_tree(at, list(pending)))
        rq_line = [Signal(lw, name=f"g_rq_line{s}") for s in range(R)]
        m.d.comb += [rq_line[s].eq(mux_tree(at, [line[c][s] for c in range(NC)])) for s in range(R)]
        any_pending, first = lowest([rq_pending[s] for s in range(R)])
        behind = Signal(name="g_rq_behind")        # context rq holds a pass still requesting
        m.d.comb += behind.eq(rq != self.alloc)
        # the selected line is always context rq's: rq moves only while no line is selected
        sel_valid, sel_ctx, req_line = Signal(name="g_sel_valid"), self.sel_ctx, Signal(lw, name="g_sel_line")
        # each slot's distance in lines from the burst's first: a burst stays on its first
        # line's 4 KiB page, so only a slot on that page can be in it, and the distance is a
        # subtraction of the lines' places in the page (short, off the slot's whole line)
        pb = (page_lines - 1).bit_length()
        near_bits = (p.axi_burst - 1).bit_length()
        dist = [Signal(pb + 1, name=f"g_dist{s}") for s in range(R)]
        near = Signal(R, name="g_near")             # pending, on the page, within a burst's reach
        for s in range(R):
            slot_line = rq_line[s]
            m.d.comb += [dist[s].eq(slot_line[:pb] - req_line[:pb]),
                         near[s].eq(rq_pending[s] & (slot_line[pb:] == req_line[pb:]) & (dist[s][near_bits:] == 0))]
        # the twin's slots in the burst's reach: the next context, once it holds a pass (it
        # took one since rq did) that is the second of rq's instruction
        nxt = Signal(range(2 * NC), name="g_rq_next")
        m.d.comb += nxt.eq(rq + 1)
        nat = nxt[:(NC - 1).bit_length()]
        has_twin = Signal(name="g_has_twin")
        m.d.comb += has_twin.eq((nxt != self.alloc) & mux_tree(nat, list(self.twin)))
        twin_pending = Signal(R, name="g_twin_pending")
        m.d.comb += twin_pending.eq(Mux(has_twin, mux_tree(nat, list(pending)), 0))
        twin_dist = [Signal(pb + 1, name=f"g_twin_dist{s}") for s in range(R)]
        twin_near = Signal(R, name="g_twin_near")
        for s in range(R):
            slot_line = mux_tree(nat, [line[c][s] for c in range(NC)])
            m.d.comb += [twin_dist[s].eq(slot_line[:pb] - req_line[:pb]),
                         twin_near[s].eq(twin_pending[s] & (slot_line[pb:] == req_line[pb:])
                                         & (twin_dist[s][near_bits:] == 0))]
        holds = [Signal(name=f"g_holds{j}") for j in range(p.axi_burst)]
        for j in range(p.axi_burst):
            same_page = C(1, 1) if j == 0 else ((req_line + j)[pb:] == req_line[pb:])
            m.d.comb += holds[j].eq(same_page & Cat(*[near[s] & (dist[s][:near_bits] == j) for s in range(R)]).any())
        beats = Signal(range(p.axi_burst + 1), name="g_req_beats")   # leading run of `holds`
        run = C(1, 1)
        for j in range(p.axi_burst):
            run = run & holds[j]
            with m.If(run):
                m.d.comb += beats.eq(j + 1)
        m.d.comb += [self.covered.eq(Cat(*[near[s] & (dist[s][:near_bits] < beats) for s in range(R)])),
                     self.covered_twin.eq(Cat(*[twin_near[s] & (twin_dist[s][:near_bits] < beats)
                                                for s in range(R)]))]
        self._ids(m, sel_valid, req_line, beats, lb)
        with m.If(self.ar):
            m.d.sync += sel_valid.eq(0)
        with m.Elif(~sel_valid & behind & any_pending):
            m.d.sync += [sel_valid.eq(1), req_line.eq(mux_tree(first, rq_line))]
        with m.Elif(~sel_valid & behind):
            m.d.sync += rq.eq(rq + 1)
        m.d.comb += sel_ctx.eq(at)
        return m

    def _ids(self, m, sel_valid, req_line, beats, lb):
        """The ids in turn, what each one's next beat brings, and the request on the channel."""
        n = self.params.axi_outstanding
        busy_ids = Signal(n, name="g_busy_ids")
        id_ctx = [Signal(range(self.params.axi_contexts), name=f"g_id{k}_ctx") for k in range(n)]
        next_line = [Signal(len(self.beat_line), name=f"g_id{k}_line") for k in range(n)]
        free_id = Signal(range(n), name="g_next_id")
        m.d.comb += [self.arvalid.eq(sel_valid & ~busy_ids.bit_select(free_id, 1)), self.arid.eq(free_id),
                     self.araddr.eq(req_line << lb), self.arlen.eq(beats - 1), self.arsize.eq(lb),
                     self.arburst.eq(1),                                      # INCR
                     self.ar.eq(self.arvalid & self.arready),
                     self.beat_line.eq(mux_tree(self.rid, next_line)), self.beat_ctx.eq(mux_tree(self.rid, id_ctx)),
                     self.inflight.eq(Cat(*[Cat(*[busy_ids[k] & (id_ctx[k] == c) for k in range(n)]).any()
                                            for c in range(self.params.axi_contexts)]))]
        with m.If(self.ar):
            m.d.sync += free_id.eq(Mux(free_id == n - 1, 0, free_id + 1))
        for k in range(n):
            with m.If(self.r_fire & (self.rid == k)):
                m.d.sync += next_line[k].eq(next_line[k] + 1)
            with m.If(self.ar & (free_id == k)):
                m.d.sync += [next_line[k].eq(req_line), id_ctx[k].eq(self.sel_ctx)]
        release = Signal(n)
        m.d.comb += release.eq(Mux(self.r_fire & self.rlast, 1 << self.rid, 0))
        m.d.sync += busy_ids.eq((busy_ids & ~release) | Mux(self.ar, 1 << free_id, 0))
