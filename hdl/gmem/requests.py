"""The global fetch stage's read requests: which lines each burst reads, the ids in flight."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.lowest import lowest_value
from ..lib.mux import mux_tree
from ..params import Params
from ..pipeline.records import pass_layout
from .axi import AXI_PAGE, line_bits

__all__ = ["FetchRequests"]


class FetchRequests(wiring.Component):
    """Read requests of the global fetch stage, prefix ``g_``: the contexts' slots in ring
    order, from the served pass's on (the oldest first).

    Three steps, so that no loop closes within a cycle:

    - **S** chooses the burst's first line: that of the lowest slot of context ``rq`` not yet
      requested (``cand``, a copy of the context's marks, so the choice starts from a register).
    - **N** compares every slot of context ``rq``, and of its twin (the next context, holding
      the instruction's second pass, counted from the cycle it is admitted), with that line: on
      its 4 KiB page and at most ``axi_burst - 1`` lines after it (registered: ``near``,
      ``dist``). N runs again each cycle B waits.
    - **B** decides the burst: that line and the following ones while each holds a near slot
      (at most ``axi_burst``, never across 4 KiB), and the slots in them (``covered``,
      ``covered_twin``); the request leaves, marking them requested.

    S chooses the next line in the cycle B's request leaves, from the slots not near B's line:
    those are the slots not covered unless a line inside the burst's reach breaks the run (a
    gap), and then S waits a cycle for the marks. Once context ``rq`` has nothing left, ``rq``
    moves to the next context, unless that is the one the next pass takes (``alloc``). The
    ``axi_outstanding`` bursts in flight are tags used in turn (the next one a register, so the
    request's payload holds while it waits); each tag remembers its context and the line its
    next beat brings. A burst's AXI id is its tag modulo ``axi_ids`` (with one id per tag, the
    tag itself); a beat's tag is its id's oldest in flight.

    Latency: a request leaves three cycles after its slots become pending at the earliest,
    then every other cycle at most (a gap costs a cycle more); moving to the next context takes
    a cycle.

    Members
    -------
    alloc : In(range(2 * axi_contexts))
        Passes admitted, modulo twice the contexts (``rq`` counts the passes whose requests
        are all out, the same way): the contexts from ``rq`` up to ``alloc`` hold passes.
    admit, admit_pass, admit_twin : In
        A pass is admitted into context ``alloc`` this cycle; the pass; it is the twin of the
        pass before.
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
            "alloc": In(range(2 * NC)), "admit": In(1), "admit_pass": In(pass_layout(p)), "admit_twin": In(1),
            "cur": In(range(NC)),
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
        pb = (page_lines - 1).bit_length()         # a line's place in its page
        near_bits = (p.axi_burst - 1).bit_length()
        NC = p.axi_contexts
        pending, line = self.pending, self.line
        rq = Signal(range(2 * NC), name="g_rq")    # the candidate context
        at = rq[:(NC - 1).bit_length()]
        nxt = Signal(range(2 * NC), name="g_rq_next", init=1)   # rq + 1, a register of its own
        nat = nxt[:(NC - 1).bit_length()]
        # context rq holds a pass still requesting (rq is not alloc), and the next context is
        # the one the next pass takes (nxt is alloc): registers, each compared a cycle ahead
        # for every way the pointers may move (rq and nxt on a move, alloc on an admission)
        behind = Signal(name="g_rq_behind")
        entering = Signal(name="g_twin_entering")
        move = Signal(name="g_move")
        alloc, alloc1 = self.alloc, (self.alloc + 1)[:len(self.alloc)]
        m.d.sync += [behind.eq(Mux(move, Mux(self.admit, nxt != alloc1, nxt != alloc),
                                   Mux(self.admit, rq != alloc1, rq != alloc))),
                     entering.eq(Mux(move, Mux(self.admit, nxt == alloc, (nxt + 1)[:len(nxt)] == alloc),
                                     Mux(self.admit, nxt == alloc1, nxt == alloc)))]
        rq_line = [Signal(lw, name=f"g_rq_line{s}") for s in range(R)]
        twin_line = [Signal(lw, name=f"g_twin_line{s}") for s in range(R)]
        m.d.comb += [rq_line[s].eq(mux_tree(at, [line[c][s] for c in range(NC)])) for s in range(R)]
        # context rq's slots not yet requested, a copy of its `pending`: S starts from a
        # register rather than behind rq's multiplexers
        cand = Signal(R, name="g_cand")
        admit_here = self.admit & (self.alloc[:(NC - 1).bit_length()] == at)
        admit_next = self.admit & (self.alloc[:(NC - 1).bit_length()] == nat)
        # the twin's lines: a pass admitted this cycle brings them; the select waits on no
        # admission (a context not yet admitted holds no twin unless one enters now)
        m.d.comb += [twin_line[s].eq(Mux(entering, self.admit_pass.addr[s][lb:],
                                         mux_tree(nat, [line[c][s] for c in range(NC)]))) for s in range(R)]
        n_valid = Signal(name="g_n_valid")         # N holds S's line
        b_valid = Signal(name="g_b_valid")         # B holds a burst
        req_line = Signal(lw, name="g_sel_line")   # S's choice, read by N and B

        # B: the burst, from N's registers
        near, twin_near = Signal(R, name="g_near"), Signal(R, name="g_twin_near")
        dist = [Signal(near_bits, name=f"g_dist{s}") for s in range(R)]
        twin_dist = [Signal(near_bits, name=f"g_twin_dist{s}") for s in range(R)]
        on_page = Signal(p.axi_burst, name="g_on_page")   # line req_line + j is on its page
        holds = Signal(p.axi_burst, name="g_holds")       # line req_line + j has a near slot
        run = Signal(p.axi_burst, name="g_run")           # lines req_line .. + j all hold
        for j in range(p.axi_burst):
            m.d.comb += [holds[j].eq(on_page[j] & Cat(*[near[s] & (dist[s] == j) for s in range(R)]).any()),
                         run[j].eq(holds[j] if j == 0 else run[j - 1] & holds[j])]
        beats = Signal(range(p.axi_burst + 1), name="g_req_beats")
        m.d.comb += beats.eq(sum(run[j] for j in range(p.axi_burst)))
        gap = Signal(name="g_gap")                 # a line beyond the run holds a near slot
        m.d.comb += gap.eq((holds & ~run).any())
        m.d.comb += [self.covered.eq(Cat(*[near[s] & run.bit_select(dist[s], 1) for s in range(R)])),
                     self.covered_twin.eq(Cat(*[twin_near[s] & run.bit_select(twin_dist[s], 1)
                                                for s in range(R)]))]
        self._ids(m, b_valid, req_line, beats, lb)

        # S: the lowest slot not yet requested names the burst's first line. While B leaves, its
        # near slots are left out: they are the ones it covers unless it has a gap, and then S
        # waits for B's marks.
        avail = Signal(R, name="g_avail")
        m.d.comb += avail.eq(cand & ~Mux(b_valid, near, 0))
        first_line = Signal(lw, name="g_first_line")
        m.d.comb += first_line.eq(lowest_value([avail[s] for s in range(R)], rq_line)[1])
        s_free = Signal(name="g_s_free")
        m.d.comb += s_free.eq(~n_valid & (~b_valid | (self.ar & ~gap)))
        # whether a slot is left, for either state of B, picked by it: the marks' enable (a
        # move) waits on B's register after the OR tree, not before it
        avail_any = Signal(name="g_avail_any")
        m.d.comb += avail_any.eq(Mux(b_valid, (cand & ~near).any(), cand.any()))
        select = Signal(name="g_select")
        m.d.comb += [select.eq(s_free & behind & avail_any), move.eq(s_free & behind & ~avail_any)]
        with m.If(select):
            m.d.sync += req_line.eq(first_line)
        m.d.sync += [n_valid.eq(select), b_valid.eq(n_valid | (b_valid & ~self.ar))]
        # the copy follows context rq's marks: B's requests, a pass admitted into it, a move
        # to the next context (whose twin slots B may be covering this cycle)
        with m.If(move):
            m.d.sync += [rq.eq(nxt), nxt.eq(nxt + 1),
                         cand.eq(Mux(admit_next, self.admit_pass.consts.used,
                                     mux_tree(nat, list(pending)) & ~Mux(self.ar, self.covered_twin, 0)))]
        with m.Elif(admit_here):
            m.d.sync += cand.eq(self.admit_pass.consts.used)
        with m.Elif(self.ar):
            m.d.sync += cand.eq(cand & ~self.covered)

        # N: each slot of context rq, and of its twin (the next context, once it holds a pass
        # that is the second of rq's instruction), against the chosen line: on its page and
        # within a burst's reach of it. N runs again while B waits for an id or the channel: a
        # twin may enter meanwhile
        n_again = Signal(name="g_n_again")
        m.d.comb += n_again.eq(n_valid | (b_valid & ~self.ar))
        has_twin = Signal(name="g_has_twin")
        twin_pending = Signal(R, name="g_twin_pending")
        # (its twin admitted this cycle counts: B leaves as early as next cycle)
        m.d.comb += [has_twin.eq(Mux(admit_next, self.admit_twin,
                                     ~entering & mux_tree(nat, list(self.twin)))),
                     twin_pending.eq(Mux(has_twin, Mux(admit_next, self.admit_pass.consts.used,
                                                       mux_tree(nat, list(pending))), 0))]
        for slots, lines, near_r, dist_r in ((cand, rq_line, near, dist),
                                             (twin_pending, twin_line, twin_near, twin_dist)):
            for s in range(R):
                d = Signal(pb + 1, name=f"{near_r.name}_d{s}")
                m.d.comb += d.eq(lines[s][:pb] - req_line[:pb])
                with m.If(n_again):
                    m.d.sync += [near_r[s].eq(slots[s] & (lines[s][pb:] == req_line[pb:]) & (d[near_bits:] == 0)),
                                 dist_r[s].eq(d[:near_bits])]
        with m.If(n_again):
            m.d.sync += on_page.eq(Cat(*[req_line[:pb] <= page_lines - 1 - j for j in range(p.axi_burst)]))
        m.d.comb += self.sel_ctx.eq(at)
        return m

    def _ids(self, m, sel_valid, req_line, beats, lb):
        """The bursts in flight (``axi_outstanding`` tags, used in turn), what each one's next
        beat brings, and the request on the channel. A burst's id is its tag modulo the ids:
        the tags of one id go out in turn, and its beats come back in that order, so each id
        keeps which of its tags is the oldest in flight (``g_rid<i>_head``)."""
        p = self.params
        n, ids = p.axi_outstanding, p.axi_id_count
        pb = (AXI_PAGE // (p.axi_data_bits // 8) - 1).bit_length()
        # (the names of the build with a tag per id, whose tags are its ids)
        busy = Signal(n, name="g_busy_ids")
        tag_ctx = [Signal(range(p.axi_contexts), name=f"g_id{k}_ctx") for k in range(n)]
        next_line = [Signal(len(self.beat_line), name=f"g_id{k}_line") for k in range(n)]
        free_tag = Signal(range(n), name="g_next_id")
        if ids == n:
            m.d.comb += self.arid.eq(free_tag)
            beat_tag = self.rid
        else:
            id_bits = (ids - 1).bit_length()
            heads = [Signal(range(n // ids), name=f"g_rid{i}_head") for i in range(ids)]
            beat_tag = Signal(range(n), name="g_beat_tag")     # the burst of this cycle's beat
            m.d.comb += [self.arid.eq(free_tag[:id_bits]),
                         beat_tag.eq(Cat(self.rid[:id_bits], mux_tree(self.rid[:id_bits], heads)) if id_bits else heads[0])]
            for i in range(ids):
                with m.If(self.r_fire & self.rlast & (self.rid == i)):
                    m.d.sync += heads[i].eq(Mux(heads[i] == n // ids - 1, 0, heads[i] + 1))
        m.d.comb += [self.arvalid.eq(sel_valid & ~busy.bit_select(free_tag, 1)),
                     self.araddr.eq(req_line << lb), self.arlen.eq(beats - 1), self.arsize.eq(lb),
                     self.arburst.eq(1),                                      # INCR
                     self.ar.eq(self.arvalid & self.arready),
                     self.beat_line.eq(mux_tree(beat_tag, next_line)), self.beat_ctx.eq(mux_tree(beat_tag, tag_ctx)),
                     self.inflight.eq(Cat(*[Cat(*[busy[k] & (tag_ctx[k] == c) for k in range(n)]).any()
                                            for c in range(p.axi_contexts)]))]
        with m.If(self.ar):
            m.d.sync += free_tag.eq(Mux(free_tag == n - 1, 0, free_tag + 1))
        for k in range(n):
            with m.If(self.r_fire & (beat_tag == k)):
                # a burst stays on its 4 KiB page: only the line's place in the page counts up
                m.d.sync += next_line[k][:pb].eq(next_line[k][:pb] + 1)
            with m.If(self.ar & (free_tag == k)):
                m.d.sync += [next_line[k].eq(req_line), tag_ctx[k].eq(self.sel_ctx)]
        release = Signal(n)
        m.d.comb += release.eq(Mux(self.r_fire & self.rlast, 1 << beat_tag, 0))
        m.d.sync += busy.eq((busy & ~release) | Mux(self.ar, 1 << free_tag, 0))
