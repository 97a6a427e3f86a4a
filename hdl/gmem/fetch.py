"""Global fetch stage (G): a wmma.load pass from global memory, through an AXI4 read port."""

from __future__ import annotations

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..lib.lowest import lowest
from ..lib.mux import mux_tree
from ..params import ROW_BITS, ROW_BYTES, Params
from ..pipeline.forms import BLOCK
from ..pipeline.records import ADDR_BITS, ENTRIES, ProgressSignature, TakeSignature

__all__ = ["GlobalFetch", "AxiSignature", "AXI_PAGE", "AxiResp"]

#: An INCR burst never crosses a 4 KiB boundary (AXI4).
AXI_PAGE = 4096


class AxiResp:
    """AXI response codes (RRESP)."""
    OKAY, EXOKAY, SLVERR, DECERR = 0, 1, 2, 3


class AxiSignature(wiring.Signature):
    """An AXI4 manager port, from the manager's side: the read channels carry the traffic, the
    write channels are present and idle (``awvalid`` = ``wvalid`` = 0, ``bready`` = 1).
    Member names are the AXI signal names, so a subordinate model finds them by prefix."""

    def __init__(self, data_bits: int, id_bits: int, addr_bits: int = ADDR_BITS):
        def channel(out, inn):
            return {**{k: Out(v) for k, v in out.items()}, **{k: In(v) for k, v in inn.items()}}
        super().__init__({
            **channel({"arid": id_bits, "araddr": addr_bits, "arlen": 8, "arsize": 3, "arburst": 2,
                       "arvalid": 1}, {"arready": 1}),
            **channel({"rready": 1}, {"rid": id_bits, "rdata": data_bits, "rresp": 2, "rlast": 1, "rvalid": 1}),
            **channel({"awid": id_bits, "awaddr": addr_bits, "awlen": 8, "awsize": 3, "awburst": 2,
                       "awvalid": 1}, {"awready": 1}),
            **channel({"wdata": data_bits, "wstrb": data_bits // 8, "wlast": 1, "wvalid": 1}, {"wready": 1}),
            **channel({"bready": 1}, {"bid": id_bits, "bresp": 2, "bvalid": 1})})


class GlobalFetch(wiring.Component):
    """Global fetch stage, prefix ``g_``: serves a wmma.load pass whose chunks lie in global
    memory, in the bank stage's place (:class:`~tensorlsu.hdl.serve.BankStage`): the same take,
    ring go-ahead and landing, so the result stage gathers the fragment with the same shuffle.

    A pass's slots hold 16-byte chunks at 32-bit addresses (a chunk of an 8-byte line may start
    in the upper half of its row, which lands with its halves swapped, as from the banks).

    - **Requests.** The lowest slot not yet requested names a data-width line (registered:
      a request every other cycle at most); the burst takes that line and the following ones
      (up to ``axi_burst``, never across 4 KiB) while each holds a slot not yet requested, and
      marks every slot in them requested. So every line
      the pass touches is read exactly once, in INCR bursts of full-width beats, one burst per
      free id (``axi_outstanding``).
    - **Data.** Each beat (any id order, beats of one id in order) fills every slot whose row
      lies in it. A beat with SLVERR or DECERR marks the pass refused.
    - **Ahead.** Two contexts: while one pass is served, the next one, offered from the head of
      the pass queue (``offer``, with ``used`` / ``addr``), is requested into the other (the
      served pass's requests go first; each id remembers its context). Its take then only
      switches contexts, so the port streams across instructions.
    - **Landing.** Once every slot is filled, the pass lands window by window (one a cycle,
      each when the ring allows, :class:`~tensorlsu.hdl.ring.RowRing`), then finishes; a
      refused pass lands nothing and finishes with its error (``progress.error``), so that its
      beats leave with the error and no data.

    Latency: the first request leaves the cycle after the take; a pass finishes the cycle its
    last window lands, one cycle after its last beat at the earliest. ``progress.count`` is 0:
    a global pass occupies no bank.

    Members
    -------
    take : In(TakeSignature(params))
        The take (:class:`~tensorlsu.hdl.pipeline.take.Take`), ``ok`` for the global passes:
        start the pass into entry ``tail`` at ring block ``start``. A global pass offered
        and not refused (the pass queue's head) is fetched ahead; it is held until its take.
    blocked : In(1)
        The ring's go-ahead.
    axi : Out(AxiSignature(...))
    progress : Out(ProgressSignature(params))
    busy, free, advance : Out(1)
        As the bank stage's.
    """

    def __init__(self, params: Params):
        self.params = p = params
        self.line_bytes = p.axi_data_bits // 8
        self.id_bits = p.axi_id_bits
        super().__init__({
            "take": In(TakeSignature(p)), "blocked": In(1),
            "axi": Out(AxiSignature(p.axi_data_bits, self.id_bits)),
            "progress": Out(ProgressSignature(p)),
            "busy": Out(1), "free": Out(1), "advance": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p, axi = self.params, self.axi
        R, W = p.lanes, p.window
        lb = (self.line_bytes - 1).bit_length()          # address bits within a line
        lw = ADDR_BITS - lb                              # line-index width
        page_lines = AXI_PAGE // self.line_bytes
        valid, buf = Signal(name="g_valid"), Signal(range(ENTRIES), name="g_buf")
        start, lastwin, win = (Signal(range(p.row_blocks), name="g_start"), Signal(range(p.windows), name="g_lastwin"),
                               Signal(range(p.windows), name="g_win"))
        # two contexts: the pass being served (`cur`) and the next one, fetched ahead (`pre`)
        cur, pre = Signal(name="g_cur"), Signal(name="g_pre")
        addr = [[Signal(ADDR_BITS, name=f"g_c{c}_addr{s}", reset_less=True) for s in range(R)] for c in range(2)]
        rows = [[Signal(ROW_BITS, name=f"g_c{c}_row{s}", reset_less=True) for s in range(R)] for c in range(2)]
        used = [Signal(R, name=f"g_c{c}_used") for c in range(2)]
        pending = [Signal(R, name=f"g_c{c}_pending") for c in range(2)]
        got = [Signal(R, name=f"g_c{c}_got") for c in range(2)]
        err = [Signal(Error, name=f"g_c{c}_err") for c in range(2)]
        line = [[addr[c][s][lb:] for s in range(R)] for c in range(2)]

        # -- requests: the served pass's first, then the next one's ------------------------
        # Two steps, so that no loop closes within a cycle: the lowest slot not yet requested
        # names the burst's first line (a register, `sel`); from it, the burst and the slots it
        # covers are decided, and the request leaves. The next line is chosen the cycle after.
        rc = Signal(name="g_cand_ctx")
        m.d.comb += rc.eq(Mux(valid & pending[0].bool() & ~cur, 0,
                              Mux(valid & pending[1].bool() & cur, 1, ~cur)))
        cand_pending = Signal(R, name="g_cand_pending")
        m.d.comb += cand_pending.eq(Mux(rc, pending[1], pending[0]))
        any_pending, first = lowest([cand_pending[s] for s in range(R)])
        cand_line = Signal(lw, name="g_cand_line")
        m.d.comb += cand_line.eq(mux_tree(first, [Mux(rc, line[1][s], line[0][s]) for s in range(R)]))
        sel_valid, sel_ctx, req_line = Signal(name="g_sel_valid"), Signal(name="g_sel_ctx"), Signal(lw, name="g_sel_line")
        req_pending = Signal(R, name="g_req_pending")
        m.d.comb += req_pending.eq(Mux(sel_ctx, pending[1], pending[0]))
        req_lines = [Mux(sel_ctx, line[1][s], line[0][s]) for s in range(R)]
        busy_ids = Signal(p.axi_outstanding, name="g_busy_ids")
        id_ctx = Signal(p.axi_outstanding, name="g_id_ctx")          # the context of each id
        next_line = [Signal(lw, name=f"g_id{k}_line") for k in range(p.axi_outstanding)]
        # line j of the burst holds a slot not yet requested, and is on the first one's page
        holds = [Signal(name=f"g_holds{j}") for j in range(p.axi_burst)]
        for j in range(p.axi_burst):
            same_page = C(1, 1) if j == 0 else ((req_line + j)[(page_lines - 1).bit_length():] ==
                                               req_line[(page_lines - 1).bit_length():])
            m.d.comb += holds[j].eq(same_page & Cat(*[req_pending[s] & (req_lines[s] == (req_line + j)[:lw])
                                                      for s in range(R)]).any())
        beats = Signal(range(p.axi_burst + 1), name="g_req_beats")   # leading run of `holds`
        run = C(1, 1)
        for j in range(p.axi_burst):
            run = run & holds[j]
            with m.If(run):
                m.d.comb += beats.eq(j + 1)
        covered = Signal(R, name="g_covered")
        m.d.comb += covered.eq(Cat(*[req_pending[s] & ((req_lines[s] - req_line)[:lw] < beats) for s in range(R)]))
        # ids in turn: the next one is a register, so the request's payload holds while it waits
        # (an id only becomes free meanwhile; `sel` and its context's pending slots change only
        # when it leaves)
        free_id = Signal(range(p.axi_outstanding), name="g_next_id")
        free_any = ~busy_ids.bit_select(free_id, 1)
        m.d.comb += [axi.arvalid.eq(sel_valid & free_any), axi.arid.eq(free_id),
                     axi.araddr.eq(req_line << lb), axi.arlen.eq(beats - 1), axi.arsize.eq(lb),
                     axi.arburst.eq(1),                                      # INCR
                     axi.bready.eq(1)]
        ar = axi.arvalid & axi.arready
        with m.If(ar):
            m.d.sync += [free_id.eq(Mux(free_id == p.axi_outstanding - 1, 0, free_id + 1)), sel_valid.eq(0)]
        with m.Elif(~sel_valid & (valid | pre) & any_pending):
            m.d.sync += [sel_valid.eq(1), sel_ctx.eq(rc), req_line.eq(cand_line)]

        # -- data ------------------------------------------------------------------------
        m.d.comb += axi.rready.eq(1)
        r = axi.rvalid & axi.rready
        beat_line, beat_ctx = Signal(lw, name="g_beat_line"), Signal(name="g_beat_ctx")
        m.d.comb += [beat_line.eq(mux_tree(axi.rid, next_line)), beat_ctx.eq(id_ctx.bit_select(axi.rid, 1))]
        beat_rows = [axi.rdata[ROW_BITS * k:ROW_BITS * (k + 1)] for k in range(self.line_bytes // ROW_BYTES)]
        hit = [Signal(R, name=f"g_c{c}_hit") for c in range(2)]
        for c in range(2):
            m.d.comb += hit[c].eq(Cat(*[r & (beat_ctx == c) & used[c][s] & (line[c][s] == beat_line)
                                        for s in range(R)]))
            for s in range(R):
                with m.If(hit[c][s]):
                    m.d.sync += rows[c][s].eq(mux_tree(addr[c][s][4:lb], beat_rows) if lb > 4 else beat_rows[0])
            with m.If(r & (beat_ctx == c) & (axi.rresp >= AxiResp.SLVERR) & (err[c] == Error.NONE)):
                m.d.sync += err[c].eq(Mux(axi.rresp == AxiResp.DECERR, Error.DECERR, Error.SLVERR))
        for k in range(p.axi_outstanding):
            with m.If(r & (axi.rid == k)):
                m.d.sync += next_line[k].eq(next_line[k] + 1)
            with m.If(ar & (free_id == k)):
                m.d.sync += [next_line[k].eq(req_line), id_ctx[k].eq(sel_ctx)]
        release = Signal(p.axi_outstanding)
        m.d.comb += release.eq(Mux(r & axi.rlast, 1 << axi.rid, 0))
        m.d.sync += busy_ids.eq((busy_ids & ~release) | Mux(ar, 1 << free_id, 0))

        # -- landing the served pass -----------------------------------------------------
        c_used, c_pending, c_got, c_err = (Signal(R, name="g_used"), Signal(R, name="g_pending"),
                                           Signal(R, name="g_got"), Signal(Error, name="g_err"))
        m.d.comb += [c_used.eq(Mux(cur, used[1], used[0])), c_pending.eq(Mux(cur, pending[1], pending[0])),
                     c_got.eq(Mux(cur, got[1], got[0])), c_err.eq(Mux(cur, err[1], err[0]))]
        c_ids = Signal(p.axi_outstanding, name="g_ids")          # ids the served pass has in flight
        m.d.comb += c_ids.eq(busy_ids & Mux(cur, id_ctx, ~id_ctx))
        arrived = Signal(name="g_arrived")      # every slot filled, nothing in flight
        m.d.comb += arrived.eq(valid & ((c_got & c_used) == c_used) & (c_pending == 0) & (c_ids == 0))
        ok = Signal(name="g_land_ok")
        m.d.comb += ok.eq(arrived & (c_err == Error.NONE) & ~self.blocked)
        finish = Signal(name="g_finish")
        m.d.comb += [self.advance.eq(ok & (win != lastwin)),
                     finish.eq(arrived & ((c_err != Error.NONE) | (ok & (win == lastwin))))]
        land = self.progress.land
        win_slots = Signal(W, name="g_win_slots")
        m.d.comb += win_slots.eq(mux_tree(win, [c_used[k * W:(k + 1) * W] for k in range(p.windows)]))
        m.d.sync += [land.slots.eq(Mux(ok, win_slots, 0)), land.win.eq(win), land.buf.eq(buf),
                     land.first.eq(start + win * (W // BLOCK))]
        h = ROW_BITS // 2
        for j in range(W):
            row = mux_tree(win, [Mux(cur, rows[1][k * W + j], rows[0][k * W + j]) for k in range(p.windows)])
            upper = mux_tree(win, [Mux(cur, addr[1][k * W + j][3], addr[0][k * W + j][3]) for k in range(p.windows)])
            land_row = Signal(ROW_BITS, name=f"g_land_row{j}")
            m.d.sync += land_row.eq(Mux(upper, Cat(row[h:], row[:h]), row))
            m.d.comb += self.progress.land_rows[j].eq(land_row)
        m.d.comb += [self.progress.buf.eq(buf), self.progress.count.eq(0),
                     self.progress.finished.eq(finish), self.progress.error.eq(c_err),
                     self.busy.eq(valid), self.free.eq(~valid | finish)]

        # -- contexts ----------------------------------------------------------------------
        for c in range(2):
            m.d.sync += [pending[c].eq(Mux(ar & (sel_ctx == c), pending[c] & ~covered, pending[c])),
                         got[c].eq(got[c] | hit[c])]
        with m.If(self.advance):
            m.d.sync += win.eq(win + 1)
        with m.If(finish):
            m.d.sync += valid.eq(0)
        nxt = ~cur
        # the next pass, fetched ahead while it waits at the head of the pass queue
        tk = self.take
        offer = tk.offered & tk.pass_.glob & (tk.pass_.err == Error.NONE)
        with m.If(offer & ~pre & ~tk.ok):
            m.d.sync += pre.eq(1)
            self._start(m, nxt, addr, used, pending, got, err)
        with m.If(tk.ok):
            m.d.sync += [valid.eq(1), cur.eq(nxt), pre.eq(0), buf.eq(tk.tail), start.eq(tk.start),
                         lastwin.eq(tk.pass_.consts.lastwin), win.eq(0)]
            with m.If(~pre):
                self._start(m, nxt, addr, used, pending, got, err)
        return m

    def _start(self, m, c, addr, used, pending, got, err):
        """Context ``c`` takes the pass on ``take``: nothing requested or in yet."""
        ps = self.take.pass_
        with m.Switch(c):
            for k in range(2):
                with m.Case(k):
                    m.d.sync += [used[k].eq(ps.consts.used), pending[k].eq(ps.consts.used), got[k].eq(0),
                                 err[k].eq(Error.NONE)]
                    m.d.sync += [addr[k][s].eq(ps.addr[s]) for s in range(len(addr[k]))]
