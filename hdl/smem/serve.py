"""Bank stage (F): serves one pass's rows window by window, and lands what it reads."""

from __future__ import annotations

from amaranth import C, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import FMT_BITS, Error
from ..lib.modular import add_mod
from ..lib.mux import mux_tree
from ..params import GROUP_ROWS, ROW_BITS, ROW_BYTES, Params
from ..pipeline import forms
from ..pipeline.forms import BLOCK
from ..pipeline.records import CYCLE_BITS, FORM_BITS, ProgressSignature, TakeSignature
from ..pipeline.shuffle import StoreShuffle, store_pattern
from .banks import BankPortSignature, SharedBanks
from .crossbar import BankCrossbar
from .decompress import Decompressor
from .owed import StoreOwed
from .pair import PairCrossbar
from .scheduler import BankScheduler

__all__ = ["BankStage"]


class BankStage(wiring.Component):
    """Bank stage, prefix ``f_``: the pass the banks serve.

    A pass's slots are served in windows of ``Params.window`` slots, in order (under
    :attr:`~tensorlsu.hdl.params.Policy.H200` one 8-row group at a time, wmma chunks too;
    under ``PACKED`` the whole pass). The bank crossbar
    (:class:`~tensorlsu.hdl.smem.crossbar.BankCrossbar`) grants one distinct line per bank quad per
    cycle; a load's rows land in the row buffer a cycle later, through the decompressors; an
    stmatrix's rows come from its source beats through the store shuffle and are written.
    The slots shift down by a window as one is done, so the window is always slots 0 … W − 1
    (no multiplexer on the scheduler's loop). A window is served or waits as a whole: a load
    while the ring says ``blocked``, an h200 stmatrix until its beat is on the store port
    (each beat is one window, written straight from the port, whose producer holds it), a
    packed one until all its beats are in (a packer that mixes matrices waits for all, so
    that its cycles stay the busiest quad's row count). The scheduler sees the pending rows
    regardless, so the lines it picks (the bank addresses) do not wait for that decision.

    Under ``H200`` the row comparisons of a window (same quad, same line) are registers: the
    first window's are made when the pass is taken, each next one's while the window before
    is served; whether the window is empty and whether two of its rows want different lines
    of one quad (it takes more than a cycle) are registers too, so the window's end is a gate
    after the go-ahead.

    A pass with a ``cost`` (a wmma.load's last pass under ``"h200"``: the H200's bank cycles)
    holds the banks after its last window until the instruction has taken that many cycles
    (its passes' cycles together), counting them as bank cycles: the unit's windows never take
    more than the H200's (tb/pipeline/test_wmma_cost.py), so the instruction takes exactly the H200's
    count.

    With paired passes (:attr:`~tensorlsu.hdl.params.Params.pair_passes`, one window a pass)
    the two passes of a wmma.load are taken together (``take.pair``; the second into the
    ``second_`` registers), and start together once neither is ``blocked`` (``blocked``,
    ``second_blocked``): the second's rows take the quads the first leaves free each cycle
    (:class:`~tensorlsu.hdl.smem.pair.PairCrossbar`), and each lands through its own landing
    crossbar. Starting together, the pair takes its busiest quad's distinct lines, the same
    count however the ports wait; the second's cycles are counted only where the first's are
    not, so that the entries' counts add up to the pair's.

    Priorities: a take overrides a window's step, which overrides nothing else. This
    implementation assumes a store's rows are distinct (the accept stage refuses others) and
    that the store port's producer holds its payload until ready.

    Latency: the first window is served the cycle after the take; a conflict-free window
    takes one cycle; rows land (``progress.land``) :attr:`LAND_AFTER` cycles after their read
    (the banks' :attr:`~tensorlsu.hdl.smem.banks.SharedBanks.READ_LATENCY`, whose register in
    front of the macros takes the granted lines, then a register on the macros' output: the
    memory sits between registers on both sides, and neither its setup nor its read time
    shares a cycle with the crossbars).

    Members
    -------
    take : In(TakeSignature(params))
    blocked : In(1)
        The ring's go-ahead (:class:`~tensorlsu.hdl.pipeline.ring.RowRing`).
    store : In(stream.Signature(ArrayLayout(32, lanes)))
        The unit's store-data port.
    banks : Out(BankPortSignature(params))
    progress : Out(ProgressSignature(params))
    busy : Out(1)
        A pass is being served; ``free``: none is, or it ends this cycle; ``advance``: its
        next window comes next cycle.
    store_room : Out(1)
        A refused stmatrix may be taken: its source beats, which the store port owes it, fit
        (they are taken and dropped in their turn, :class:`~tensorlsu.hdl.smem.owed.StoreOwed`).
    second_blocked : In(1), with paired passes
        The ring's go-ahead for the second pass of the pair.
    """

    #: cycles from a bank read to its rows in ``progress.land``
    LAND_AFTER = SharedBanks.READ_LATENCY + 1
    #: copies of a direct store's byte pattern register (:class:`StoreShuffle`)
    PATTERN_COPIES = 4

    def __init__(self, params: Params):
        self.params = p = params
        super().__init__({
            "take": In(TakeSignature(p)), "blocked": In(1),
            "store": In(stream.Signature(data.ArrayLayout(unsigned(32), p.lanes))),
            "banks": Out(BankPortSignature(p)), "progress": Out(ProgressSignature(p)),
            "busy": Out(1), "free": Out(1), "advance": Out(1), "store_room": Out(1),
            **({"second_blocked": In(1)} if p.pair_passes else {})})

    def elaborate(self, platform):
        m = Module()
        p, tk = self.params, self.take
        R, W, NW = p.lanes, p.window, p.windows
        s = self._s = {}                # the stage's registers, by name
        s["valid"], s["buf"] = Signal(name="f_valid"), Signal(range(p.entries), name="f_buf")
        s["start"], s["form"] = Signal(range(p.row_blocks), name="f_start"), Signal(FORM_BITS, name="f_form")
        s["addr"] = [Signal(p.smem_addr_bits, name=f"f_addr{i}", reset_less=True) for i in range(R)]
        s["pending"], s["recv"] = Signal(R, name="f_pending"), Signal(range(R + 1), name="f_recv")
        s["load"], s["nregs"], s["fmt"] = Signal(name="f_load"), Signal(range(R + 1), name="f_nregs"), \
            Signal(FMT_BITS, name="f_fmt")
        s["win"], s["lastwin"] = Signal(range(NW), name="f_win"), Signal(range(NW), name="f_lastwin")
        s["at_last"] = Signal(name="f_at_last")     # win == lastwin, a register
        xbar = m.submodules.crossbar = BankCrossbar(rows=W, quads=p.quads, line_bits=p.line_bits,
                                                    pairs=p.precompare, read_latency=self.LAND_AFTER)
        # the window may be served this cycle, and the rows it serves
        s["ok"], s["served"] = Signal(name="f_win_ok"), Signal(W, name="f_served")
        s["done"], s["granted"] = Signal(name="f_win_done"), Signal(name="f_any_grant")
        s["finish"] = Signal(name="f_finish")
        # the instruction's bank cycles so far (over its passes), and the least it takes
        s["spent"], s["cost"] = Signal(CYCLE_BITS, name="f_spent"), Signal(CYCLE_BITS, name="f_cost")
        s["final"], s["count"] = Signal(name="f_final"), Signal(name="f_count")
        # the second pass of a pair may not take its turn, or is not there: free of it
        second_free = Signal(name="f_second_free")
        self._owed = m.submodules.owed = StoreOwed()
        self._window(m, xbar)
        second = self._second(m, xbar, second_free) if p.pair_passes else None
        if second is None:
            m.d.comb += second_free.eq(1)
        pre = self._stores(m, xbar, second_free)
        self._banks(m, xbar, second)
        self._landing(m, xbar)
        m.d.comb += [self.busy.eq(s["valid"] | (second["valid"] if second else 0)),
                     self.free.eq((~s["valid"] | s["finish"]) & second_free),
                     self.progress.buf.eq(s["buf"]), self.progress.count.eq(s["count"]),
                     self.progress.finished.eq(s["finish"])]
        with m.If(s["finish"] & s["final"]):
            m.d.sync += s["spent"].eq(0)
        with m.Elif(s["count"]):
            m.d.sync += s["spent"].eq(s["spent"] + 1)
        with m.If(s["valid"]):
            m.d.sync += s["pending"].eq(Mux(self.advance, s["pending"] >> W,
                                            s["pending"] & ~Cat(s["served"], C(0, R - W))))
        with m.If(s["finish"]):
            m.d.sync += s["valid"].eq(0)
        with m.If(tk.ok):
            if p.pair_passes:
                m.d.sync += s["pair"].eq(tk.pair)
            m.d.sync += [s["valid"].eq(1), s["win"].eq(0), s["recv"].eq(self.store.valid & pre)]
        # the wide registers (the rows and their comparisons) and the pass's constants load
        # whenever the stage may take a pass, taken or not: their enable waits on the stage's
        # own finish, not on the take (what they hold while no pass is served is never read)
        if p.precompare:
            # (their signals assigned outside the enables: a combinational assignment under
            # an If would also gate them with its condition)
            tsq, tsl = self._pairs(m, tk.pass_.addr[:W], "f_take")
        with m.If(self.free):
            c = tk.pass_.consts
            m.d.sync += [s["addr"][i].eq(tk.pass_.addr[i]) for i in range(R)]
            m.d.sync += [s["pending"].eq(c.used), s["buf"].eq(tk.tail), s["form"].eq(tk.pass_.form),
                         s["start"].eq(tk.start),
                         s["lastwin"].eq(c.lastwin), s["at_last"].eq(c.lastwin == 0), s["cost"].eq(tk.pass_.cost),
                         s["final"].eq(c.final), s["load"].eq(c.load), s["nregs"].eq(c.nregs), s["fmt"].eq(c.fmt)]
            if p.precompare:
                m.d.sync += [s["same_quad"].eq(tsq), s["same_line"].eq(tsl), s["empty"].eq(c.used[:W] == 0),
                             s["clash"].eq(self._clash(c.used[:W], tsq, tsl))]
        return m

    # -- the window ------------------------------------------------------------------------
    def _pairs(self, m, rows, name):
        """Which pairs of ``rows`` share a quad, and which an address (bit ``pair(i, j)``), as
        signals: each bit feeds both vectors and the clash, and an expression would be copied
        into every use when the design is lowered."""
        W, qb = self.params.window, self.params.quad_bits
        npairs = W * (W - 1) // 2
        same_quad = Signal(npairs, name=f"{name}_same_quad")
        same_line = Signal(npairs, name=f"{name}_same_line")
        for i in range(W):
            for j in range(i):
                a, b = rows[i][:self.params.smem_addr_bits], rows[j][:self.params.smem_addr_bits]
                k = BankScheduler.pair(i, j)
                m.d.comb += [same_quad[k].eq(a[4:4 + qb] == b[4:4 + qb]),
                             same_line[k].eq(same_quad[k] & (a[4 + qb:] == b[4 + qb:]))]
        return same_quad, same_line

    def _clash(self, pend, sq, sl):
        """Two of the rows ``pend`` want different lines of one quad: the window is not served
        in one cycle (the scheduler's contract, formal/specs.py)."""
        W, pair = self.params.window, BankScheduler.pair
        return Cat(*[pend[i] & pend[j] & sq[pair(i, j)] & ~sl[pair(i, j)] for i in range(W) for j in range(i)]).any()

    def _window(self, m, xbar):
        p, s, tk = self.params, self._s, self.take
        R, W, qb, LB = p.lanes, p.window, p.quad_bits, p.line_bits
        addr, pending = s["addr"], s["pending"]
        direct = p.store_direct
        all_recv = Signal(name="f_all_recv")    # every stmatrix beat is in (direct: by its window)
        m.d.comb += all_recv.eq(s["load"] | (s["recv"] == s["nregs"]) | direct)
        go = Signal(name="f_go")                # a load's window may be served (the ring, a pair)
        if not p.pair_passes:
            m.d.comb += go.eq(~self.blocked)
        else:
            # the pass is the first of a pair, not yet started: it goes with its second, and
            # from then on alone (a window no longer blocked stays so: the entries it waits for
            # only read less)
            s["pair"], s["pair_go"] = Signal(name="f_pair"), Signal(name="f_pair_go")
            m.d.comb += go.eq(~self.blocked & (~s["pair"] | s["pair_go"]))
            with m.If(s["ok"]):
                m.d.sync += s["pair"].eq(0)
        # a direct store's window waits for its own beat: none while older beats are owed
        own_beat = self.store.valid & ~self._owed.ahead
        m.d.comb += s["ok"].eq(s["valid"] & Mux(s["load"], go, own_beat if direct else all_recv))
        m.d.comb += [xbar.eligible.eq(pending[:W]), s["served"].eq(Mux(s["ok"], xbar.served, 0))]
        m.d.comb += [xbar.quad[j].eq(addr[j][4:4 + qb]) for j in range(W)]
        m.d.comb += [xbar.line[j].eq(addr[j][4 + qb:4 + qb + LB]) for j in range(W)]
        # the write crossbar's next window: the pass offered, whenever the stage may take one
        # (as the wide registers load: if it is not taken the stage idles, and what the
        # crossbar holds then is never read), or the next window
        m.d.comb += [xbar.take.eq(self.free), xbar.take_rows.eq(tk.pass_.consts.used[:W]), xbar.step.eq(s["ok"])]
        m.d.comb += [xbar.take_quad[j].eq(tk.pass_.addr[j][4:4 + qb]) for j in range(W)]
        if p.precompare:
            npairs = W * (W - 1) // 2
            s["same_quad"], s["same_line"] = Signal(npairs, name="f_same_quad"), Signal(npairs, name="f_same_line")
            s["empty"], s["clash"] = Signal(init=1, name="f_win_empty"), Signal(name="f_win_clash")
            m.d.comb += [xbar.same_quad.eq(s["same_quad"]), xbar.same_line.eq(s["same_line"])]
            m.d.comb += [xbar.advance.eq(self.advance), xbar.next_rows.eq(pending[W:2 * W])]
            m.d.comb += [xbar.next_quad[j].eq(addr[W + j][4:4 + qb]) for j in range(W)]
            # every pending row is served this cycle when the window may be served and none
            # of its rows clash
            m.d.comb += [s["done"].eq(s["empty"] | (s["ok"] & ~s["clash"])), s["granted"].eq(s["ok"] & ~s["empty"])]
        else:
            m.d.comb += [s["done"].eq((pending[:W] & ~s["served"]) == 0), s["granted"].eq(s["ok"] & pending[:W].any())]
        m.d.comb += self.advance.eq(s["valid"] & s["done"] & ~s["at_last"])
        # the last window is served; the pass ends unless its cost is not yet spent: the banks
        # then stay the instruction's, one idle cycle at a time, until it is
        last_done = Signal(name="f_last_done")
        # the cost not spent, not counting this cycle (``short``), or counting it (``short1``)
        short, short1 = self._cost_left(m)
        m.d.comb += [last_done.eq(s["valid"] & all_recv & s["at_last"] & s["done"]),
                     s["count"].eq(s["granted"] | (last_done & short))]
        if p.precompare:
            # the finish for either go-ahead, from registers alone, picked by it: the take
            # waits on the go-ahead's few gates, not on the window's end behind it
            def finish_if(ok: int):
                done = s["empty"] | (C(ok, 1) & ~s["clash"])
                ends = s["valid"] & all_recv & s["at_last"] & done
                count = (C(ok, 1) & ~s["empty"]) | (ends & short)
                return ends & ~Mux(count, short1, short)
            m.d.comb += s["finish"].eq(Mux(s["ok"], finish_if(1), finish_if(0)))
        else:
            m.d.comb += s["finish"].eq(last_done & ~Mux(s["count"], short1, short))
        if p.precompare:
            nsq, nsl = self._pairs(m, addr[W:2 * W], "f_next")
        with m.If(self.advance):
            m.d.sync += [s["win"].eq(s["win"] + 1), s["at_last"].eq(s["win"] + 1 == s["lastwin"])]
            m.d.sync += [addr[i].eq(addr[i + W]) for i in range(R - W)]
            if p.precompare:
                m.d.sync += [s["same_quad"].eq(nsq), s["same_line"].eq(nsl), s["empty"].eq(pending[W:2 * W] == 0),
                             s["clash"].eq(self._clash(pending[W:2 * W], nsq, nsl))]
        if p.precompare:
            # the same window after this cycle: empty once done; its rows left clash as the
            # rows not served now do (nothing is served unless the window may be)
            with m.Elif(s["valid"]):
                m.d.sync += s["empty"].eq(s["done"])
                with m.If(s["ok"]):
                    m.d.sync += s["clash"].eq(self._clash(pending[:W] & ~xbar.served, s["same_quad"],
                                                          s["same_line"]))

    def _cost_left(self, m):
        """``spent < cost`` and ``spent + 1 < cost`` as registers, so that no adder or
        comparator lies between the window's end and the finish: each is computed for every
        value ``spent`` and ``cost`` may take next, and the cycle's decisions pick one."""
        s, tk = self._s, self.take
        spent, cost = s["spent"], s["cost"]
        short, short1 = Signal(name="f_short"), Signal(name="f_short1")

        def ahead(c):
            # (spent_next < c, spent_next + 1 < c) as spent restarts, counts or stays
            restart = Cat(c > 0, c > 1)
            counted = Cat(spent + 1 < c, spent + 2 < c)
            return Mux(s["finish"] & s["final"], restart, Mux(s["count"], counted, Cat(spent < c, spent + 1 < c)))
        # (for the offered pass whenever the stage may take one, as ``cost`` loads)
        m.d.sync += Cat(short, short1).eq(Mux(self.free, ahead(tk.pass_.cost), ahead(cost)))
        return short, short1

    # -- the banks ---------------------------------------------------------------------------
    def _banks(self, m, xbar, second):
        """Loads read, stores write, the granted line of every quad (the first pass's, else
        the second's of a pair)."""
        p, s = self.params, self._s
        for q in range(p.quads):
            access = xbar.access[q] & s["ok"]
            line, read = xbar.addr[q], s["load"] & access
            if second:
                pq = second["xbar"]
                line = Mux(access, line, pq.addr[q])
                read = read | (pq.access[q] & second["ok"])
            m.d.comb += [self.banks.line[q].eq(line), self.banks.read[q].eq(read),
                         self.banks.write[q].eq(~s["load"] & access), self.banks.wdata[q].eq(xbar.write[q])]

    # -- the second pass of a pair -------------------------------------------------------------
    def _second(self, m, xbar, second_free):
        """The second pass of a pair: its registers, its rows on the quads the first leaves
        free, its progress; returns its registers by name."""
        p, s, tk, pr = self.params, self._s, self.take, self.progress
        R, qb, LB = p.lanes, p.quad_bits, p.line_bits
        n = {"valid": Signal(name="f2_valid"), "buf": Signal(range(p.entries), name="f2_buf"),
             "start": Signal(range(p.row_blocks), name="f2_start"),
             "addr": [Signal(p.smem_addr_bits, name=f"f2_addr{i}", reset_less=True) for i in range(R)],
             "pending": Signal(R, name="f2_pending"), "ok": Signal(name="f2_ok"),
             "served": Signal(R, name="f2_served"), "finish": Signal(name="f2_finish")}
        px = n["xbar"] = m.submodules.pair_crossbar = PairCrossbar(rows=R, quads=p.quads, line_bits=LB,
                                                                     read_latency=self.LAND_AFTER)
        # both start once neither is blocked; then each goes on its own go-ahead
        m.d.comb += [s["pair_go"].eq(n["valid"] & ~self.second_blocked),
                     n["ok"].eq(n["valid"] & ~self.second_blocked & ~(s["pair"] & self.blocked))]
        m.d.comb += [px.eligible.eq(n["pending"]), n["served"].eq(Mux(n["ok"], px.served, 0))]
        m.d.comb += [px.quad[j].eq(n["addr"][j][4:4 + qb]) for j in range(R)]
        m.d.comb += [px.line[j].eq(n["addr"][j][4 + qb:4 + qb + LB]) for j in range(R)]
        m.d.comb += [px.first_access[q].eq(xbar.access[q] & s["ok"]) for q in range(p.quads)]
        m.d.comb += [px.quad_data[q].eq(xbar.quad_data[q]) for q in range(p.quads)]
        m.d.comb += [n["finish"].eq(n["valid"] & ((n["pending"] & ~n["served"]) == 0)),
                     second_free.eq(~n["valid"] | n["finish"])]
        with m.If(n["valid"]):
            m.d.sync += n["pending"].eq(n["pending"] & ~n["served"])
        with m.If(n["finish"]):
            m.d.sync += n["valid"].eq(0)
        with m.If(tk.ok & tk.pair):
            m.d.sync += [n["valid"].eq(1), n["buf"].eq(tk.second_tail), n["start"].eq(tk.second_start),
                         n["pending"].eq(tk.second_pass.consts.used)]
            m.d.sync += [n["addr"][i].eq(tk.second_pass.addr[i]) for i in range(R)]
        # its cycles: those the banks worked for it and not for the first pass
        m.d.comb += [pr.second_buf.eq(n["buf"]), pr.second_finished.eq(n["finish"]),
                     pr.second_count.eq(n["ok"] & n["pending"].any() & ~s["granted"])]
        land = pr.second_land
        m.d.comb += land.eq(self._at_landing(m, "f2_land", {"slots": n["served"], "win": 0, "buf": n["buf"],
                                                            "first": n["start"]}, land.shape()))
        self._half_swap(m, n["addr"], [px.land[j] for j in range(R)], pr.second_land_rows, "f2_", pairs_only=True)
        return n

    # -- stmatrix source beats ---------------------------------------------------------------
    def _stores(self, m, xbar, second_free):
        """The window's store rows, and the beats owed by refused stmatrix instructions
        (:class:`~tensorlsu.hdl.smem.owed.StoreOwed`); returns ``pre``: the next stmatrix's
        first beat is taken in the cycle the current one ends (packed)."""
        p, s, tk, owed = self.params, self._s, self.take, self._owed
        R, W = p.lanes, p.window
        c = tk.pass_.consts
        sshuf = m.submodules.store_shuffle = StoreShuffle(lanes=R, form_bits=FORM_BITS,
                                                          copies=self.PATTERN_COPIES if p.store_direct else 0)
        pre = Signal(name="f_pre")
        own = Signal(name="f_store_own")        # the bank stage's ready for its own beat
        hs = self.store.valid & own
        store = c.valid & ~c.load
        m.d.comb += [owed.refused.eq(tk.take & (tk.pass_.err != Error.NONE) & store),
                     owed.refused_beats.eq(c.nregs), owed.taken.eq(tk.ok & store),
                     owed.beat.eq(self.store.valid), self.store_room.eq(owed.room),
                     self.store.ready.eq(own | owed.drain)]
        if p.store_direct:
            # a beat is taken in the cycle its window's last rows are written
            m.d.comb += [owed.wants.eq(s["valid"] & ~s["load"]),
                         own.eq(s["valid"] & ~s["load"] & s["done"] & ~owed.ahead)]
            m.d.comb += [sshuf.form.eq(s["form"]), sshuf.beat.eq(s["win"]), sshuf.data.eq(self.store.payload)]
            m.d.comb += [xbar.rows[j].eq(sshuf.rows[j]) for j in range(W)]
            # the form's byte pattern, registered in copies as the form is (each drives a share
            # of the row multiplexers in front of the memories' write data)
            pattern = store_pattern(m, tk.pass_.form, "f_take_store_pattern")
            for k in range(self.PATTERN_COPIES):
                copy = Signal.like(pattern, name=f"f_store_pattern{k}", attrs={"keep": 1})
                with m.If(self.free):
                    m.d.sync += copy.eq(pattern)
                m.d.comb += sshuf.pat[k].eq(copy)
            return pre
        # The first beat of the next stmatrix may arrive in the cycle the current one writes
        # its last rows (it fills other rows, or rows already read): stores run back to back.
        rows = [Signal(ROW_BITS, name=f"f_store_row{i}", reset_less=True) for i in range(R)]
        wants = s["valid"] & ~s["load"] & (s["recv"] != s["nregs"])
        m.d.comb += pre.eq(s["finish"] & second_free & tk.offered & (tk.pass_.err == Error.NONE) & tk.free & store
                           & ~owed.ahead & ~owed.behind)
        m.d.comb += [owed.wants.eq(wants), own.eq((wants & ~owed.ahead) | pre)]
        m.d.comb += [sshuf.form.eq(Mux(pre, tk.pass_.form, s["form"])), sshuf.beat.eq(Mux(pre, 0, s["recv"])),
                     sshuf.data.eq(self.store.payload)]
        with m.If(hs):
            with m.Switch(sshuf.group):
                for g in range(R // GROUP_ROWS):
                    with m.Case(g):
                        m.d.sync += [rows[GROUP_ROWS * g + j].eq(sshuf.rows[j]) for j in range(GROUP_ROWS)]
        with m.If(hs & ~pre):
            m.d.sync += s["recv"].eq(s["recv"] + 1)
        m.d.comb += [xbar.rows[j].eq(mux_tree(s["win"], rows[j::W])) for j in range(W)]
        return pre

    # -- rows land LAND_AFTER cycles after their read -------------------------------------
    def _landing(self, m, xbar):
        p, s, land = self.params, self._s, self.progress.land
        W = p.window
        win_first = Signal(range(p.row_blocks), name="f_win_first")   # the window's first ring block
        m.d.comb += win_first.eq(add_mod(s["start"], s["win"] * (W // BLOCK), p.row_blocks))
        m.d.comb += land.eq(self._at_landing(m, "f_land", {"slots": Mux(s["load"], s["served"], 0), "win": s["win"],
                                                           "buf": s["buf"], "first": win_first}, land.shape()))
        # the format, a register copy for each quad's decompressor (one copy would drive all
        # 1,024 of their row bits' multiplexers)
        fmt_read = self._at_landing(m, "f_land_fmt_read", s["fmt"], stages=self.LAND_AFTER - 1)
        for q in range(p.quads):
            land_fmt = Signal.like(fmt_read, name=f"f_land_fmt{q}", attrs={"keep": 1})
            m.d.sync += land_fmt.eq(fmt_read)
            # the memory's output, registered (LAND_AFTER less the banks' read latency)
            rdata = self.banks.rdata[q]
            for k in range(self.LAND_AFTER - SharedBanks.READ_LATENCY):
                held = Signal.like(rdata, name=f"f_rdata{q}" + (f"_{k}" if k else ""), reset_less=True)
                m.d.sync += held.eq(rdata)
                rdata = held
            d = m.submodules[f"decompress{q}"] = Decompressor()
            m.d.comb += [d.row.eq(rdata), d.fmt.eq(land_fmt), xbar.quad_data[q].eq(d.out)]
        self._half_swap(m, s["addr"], [xbar.land[j] for j in range(W)], self.progress.land_rows, "f_")

    def _at_landing(self, m, name, value, shape=None, stages=None):
        """``value`` (as of a read) delayed to its rows' landing, :attr:`LAND_AFTER` cycles
        (or ``stages``)."""
        stages = self.LAND_AFTER if stages is None else stages
        if isinstance(value, dict):
            v = Signal(shape, name=f"{name}_read")
            m.d.comb += [getattr(v, k).eq(x) for k, x in value.items()]
            value = v
        for k in range(stages):
            r = Signal.like(value, name=f"{name}{k}" if k < stages - 1 else name)
            m.d.sync += r.eq(value)
            value = r
        return value

    def _half_swap(self, m, addr, rows, land_rows, prefix, pairs_only=False):
        """``land_rows[j]`` is ``rows[j]``, but that a wmma line narrower than a row (8 bytes)
        may start in the upper half of its row: such a slot lands with its halves swapped, so
        its bytes are always bytes 0-7 (``addr``: the slots' addresses as of the read;
        ``pairs_only``: the rows are those of a pair's second pass, whose forms have two)."""
        W = len(rows)
        half_slots = sorted({j % W for inf in map(forms.info, range(len(forms.FORMS)))
                             if inf.wmma and inf.line_bytes < ROW_BYTES and (len(inf.passes) == 2 or not pairs_only)
                             for q in inf.passes for j in range(len(q))})
        land_half = self._at_landing(m, f"{prefix}land_half", Cat(*[addr[j][3] if j in half_slots else C(0, 1)
                                                                     for j in range(W)]))
        h = ROW_BITS // 2
        for j in range(W):
            row = rows[j]
            if j in half_slots:
                # only the low half of such a slot is ever read
                row = Cat(Mux(land_half[j], row[h:], row[:h]), row[h:])
            m.d.comb += land_rows[j].eq(row)
