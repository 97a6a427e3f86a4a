"""Row ring: where each load's slots go in the row buffer, and when the bank stage may write."""

from __future__ import annotations

import operator
from functools import reduce

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import Params
from . import forms
from .decode import form_constants
from .forms import BLOCK
from .records import EntriesSignature, TakeSignature

__all__ = ["RowRing"]


class RowRing(wiring.Component):
    """Row ring, prefix ``r_``: allocation of the load row buffer's blocks and the bank
    stage's go-ahead.

    Each load takes the next ``blocks`` blocks of the ring after the previous load's, its
    first block aligned to its form's ``align`` (so that no beat reads across the ring's end).
    The bank stage serves a load window by window; a window may be served (``blocked`` = 0)
    unless its blocks are still read by another entry: the head, when the bank stage fills a
    later entry, by the beats it has not given yet, or a filled entry waiting behind the head.
    That is the ring rule: a served window never writes a block that a live entry's remaining
    beats still read (formal/specs.py, ``RingRule``). With paired passes the second pass of a
    pair has its own window (its whole pass) and go-ahead, by the same rule.

    Latency: ``blocked`` is a register, set from the next cycle's head, entries, bank-stage
    entry and window, and the head's release, so that the bank stage's loop (go-ahead →
    window end → next pass → take) starts from a flip-flop. The release it sees is the head's
    ``reading`` of the cycle before (one cycle late only delays a window).

    Members
    -------
    take : In(TakeSignature(params))
        The pass leaving the pass queue (``start`` is not read: it is this block's output).
    start : Out(range(row_blocks))
        The first ring block of the pass ``take`` carries (valid for a load).
    entries : In(EntriesSignature(params))
        The result stage's entries (:class:`~tensorlsu.hdl.pipeline.result.ResultStage`).
    fill_buf : In(range(entries))
        The entry the bank stage fills; ``advance``: it moves on to its next window.
    blocked : Out(1)
        The bank stage's current window may not be served this cycle.
    window : Out(row_blocks)
        The ring blocks of the bank stage's current window.
    second_start : Out(range(row_blocks)), with paired passes
        The first ring block of the second pass a pair take carries (``take.second_pass``).
    second_buf, second_blocked, second_window : with paired passes, the entry, go-ahead and
        window of the second pass of the pair the bank stage serves.
    """

    def __init__(self, params: Params):
        self.params = p = params
        NB = p.row_blocks
        super().__init__({
            "take": In(TakeSignature(p)), "start": Out(range(NB)),
            "entries": In(EntriesSignature(p)),
            "fill_buf": In(range(p.entries)), "advance": In(1),
            "blocked": Out(1), "window": Out(NB),
            **({"second_start": Out(range(NB)), "second_buf": In(range(p.entries)), "second_blocked": Out(1),
                "second_window": Out(NB)} if p.pair_passes else {})})
        # named here for the proof's invariants (formal/specs.py): each entry's ring blocks,
        # and the blocks the head still read as of the last cycle
        self.state = {"blocks": [Signal(NB, name=f"r_blocks{b}") for b in range(p.entries)],
                      "busy": Signal(NB, name="r_busy")}

    @staticmethod
    def check(head, fill_buf, valid, blocks, window, busy):
        """The go-ahead rule: the window's blocks meet the blocks the head still reads
        (``busy``) or those of a waiting entry, while the bank stage fills a later entry."""
        waiting = reduce(operator.or_, [Mux(valid[b] & (head != b) & (fill_buf != b), blocks[b], 0)
                                        for b in range(len(blocks))])
        return (head != fill_buf) & (window & (busy | waiting)).any()

    def _check_pairs(self):
        """Each pass of a pair fills one whole pass of the ring, aligned to a pass: the second
        starts a pass after the first."""
        p = self.params
        for f in range(len(forms.FORMS)):
            consts = form_constants(p, forms.info(f))
            if len(consts) == 2 and consts[0]["load"] and consts[0]["wmma"]:
                for c in consts:
                    if (c["blocks"], c["align"] + 1) != (p.pass_blocks, p.pass_blocks):
                        raise ValueError(f"form {forms.FORMS[f]}: a pass of a pair must fill and be aligned to "
                                         f"{p.pass_blocks} ring blocks, not {c['blocks']} / {c['align'] + 1}")

    def _aligns(self) -> list[int]:
        """The alignments (masks of low block bits) the forms' passes ask for; each must divide
        the ring's size, so that rounding up never passes its end but onto block 0."""
        p = self.params
        aligns = sorted({k["align"] for f in range(len(forms.FORMS)) for k in form_constants(p, forms.info(f))})
        for a in aligns:
            if p.row_blocks % (a + 1):
                raise ValueError(f"an alignment of {a + 1} blocks does not divide the ring's {p.row_blocks}")
        return aligns

    @staticmethod
    def _rounded(hot, align: int):
        """A one-hot ring position rounded up to a multiple of ``align + 1`` (which divides the
        ring's size), past the ring's end onto block 0: OR gates, no adder."""
        n = len(hot)
        return Cat(*[Cat(*[hot[(pb - k) % n] for k in range(align + 1)]).any() if pb % (align + 1) == 0
                     else Const(0, 1) for pb in range(n)])

    @staticmethod
    def _index(hot):
        """The position of a one-hot ring block."""
        width = max(1, (len(hot) - 1).bit_length())
        return Cat(*[Cat(*[hot[pb] for pb in range(len(hot)) if pb >> i & 1]).any() for i in range(width)])

    def _place(self, m, hot, c, name):
        """The ring blocks a pass with constants ``c`` fills from the one-hot block ``hot``, and
        those of its first window (rotations by constants: no decode of a block number)."""
        p = self.params
        NB, wb = p.row_blocks, p.window // BLOCK
        blocks, window = Signal(NB, name=f"r_{name}_blocks"), Signal(NB, name=f"r_{name}_window")
        m.d.comb += blocks.eq(Mux(c.load, reduce(operator.or_, [
            Mux(k < c.blocks, hot.rotate_left(k), 0) for k in range(p.pass_blocks)]), 0))
        m.d.comb += window.eq(reduce(operator.or_, [hot.rotate_left(k) for k in range(wb)]))
        return blocks, window

    def _moved(self, m, hot, c, name):
        """The one-hot block after a pass of ``c.blocks`` blocks from ``hot``."""
        p = self.params
        moved = Signal(p.row_blocks, name=f"r_{name}_moved")
        with m.Switch(c.blocks):
            for k in range(1, p.pass_blocks + 1):
                with m.Case(k):
                    m.d.comb += moved.eq(hot.rotate_left(k))
            with m.Default():
                m.d.comb += moved.eq(hot)
        return moved

    def elaborate(self, platform):
        m = Module()
        p, tk = self.params, self.take
        NB, W = p.row_blocks, p.window
        wb = W // BLOCK                 # blocks of one window
        c = tk.pass_.consts
        # Where a load taken now starts, for each alignment the forms ask (``align``, a mask of
        # low block bits): the block after the last load's, rounded up. Kept one-hot in
        # registers, so that the take's blocks and window (and the go-ahead made from them) are
        # rotations of a register, with no adder, rounding or decode in front of them.
        aligns = self._aligns()
        start_hot = {a: Signal(NB, init=1, name=f"r_start_hot_a{a}") for a in aligns}
        hot = Signal(NB, name="r_take_hot")
        with m.Switch(c.align):
            for a in aligns[:-1]:
                with m.Case(a):
                    m.d.comb += hot.eq(start_hot[a])
            with m.Default():
                m.d.comb += hot.eq(start_hot[aligns[-1]])
        m.d.comb += self.start.eq(self._index(hot))
        take_blocks, take_window = self._place(m, hot, c, "take")
        after = self._moved(m, hot, c, "take")
        if p.pair_passes:
            # the second pass of a pair taken with the first: the pass after the first's (a
            # constant offset, so that the second's go-ahead is no later than the first's)
            c2 = tk.second_pass.consts
            self._check_pairs()
            second_hot = hot.rotate_left(p.pass_blocks)
            m.d.comb += self.second_start.eq(self._index(second_hot))
            second_blocks, second_take_window = self._place(m, second_hot, c2, "second")
            after = Mux(tk.pair, self._moved(m, second_hot, c2, "second"), after)
        with m.If(tk.ok & c.load | (tk.pair if p.pair_passes else 0)):
            m.d.sync += [start_hot[a].eq(self._rounded(after, a)) for a in aligns]

        blocks, busy = self.state["blocks"], self.state["busy"]
        nxt = Signal(NB)                    # the entry after the head's blocks
        E = p.entries
        with m.Switch(self.entries.head):
            for b in range(E):
                with m.Case(b):
                    m.d.comb += nxt.eq(Mux(self.entries.valid[(b + 1) % E], blocks[(b + 1) % E], 0))
        # The next state of every register the check reads: each register takes it, and the
        # check is made from it, so the go-ahead is a register too. The head's last beat and
        # the take are the cycle's last decisions (they wait on the result port and on the
        # stages' finish): the check is made for each outcome of both, and they pick one at
        # the register.
        ents = self.entries
        ok = tk.pass_.err == Error.NONE     # the head pass, if it leaves, is served
        window_kept = Signal(NB, name="r_window_kept")
        m.d.comb += window_kept.eq(Mux(self.advance, self.window.rotate_left(wb), self.window))
        # as if the head entry ends: the next one is the head, and may read all of its blocks
        head_after = Signal.like(ents.head, name="r_head_after")
        m.d.comb += head_after.eq(Mux(ents.head == E - 1, 0, ents.head + 1))
        ending = {False: (ents.head, ents.valid, ents.reading),
                  True: (head_after, ents.valid & ~(1 << ents.head)[:E], nxt)}
        # as if the head pass leaves: it fills entry ``tail`` (a refused one fills no block),
        # the bank stage serves it (when not refused), and a pair's second fills the entry after
        fill_buf_t = Signal.like(self.fill_buf, name="r_fill_buf_t")
        window_t = Signal(NB, name="r_window_t")
        blocks_t = [Signal(NB, name=f"r_blocks{b}_t") for b in range(E)]
        set_t = Signal(E, name="r_set_t")
        m.d.comb += [fill_buf_t.eq(Mux(ok, tk.tail, self.fill_buf)), window_t.eq(Mux(ok, take_window, window_kept))]
        for b in range(E):
            took = Mux(tk.tail == b, Mux(ok, take_blocks, 0), blocks[b])
            if p.pair_passes:
                took = Mux(tk.pairs & (tk.second_tail == b), second_blocks, took)
            m.d.comb += blocks_t[b].eq(took)
        if not p.pair_passes:
            m.d.comb += set_t.eq(1 << tk.tail)
        else:
            m.d.comb += set_t.eq((1 << tk.tail) | Mux(tk.pairs, 1 << tk.second_tail, 0))
            second_window = Signal(NB, name="r_second_window")
            m.d.comb += self.second_window.eq(second_window)
            second_buf_t = Mux(tk.pairs, tk.second_tail, self.second_buf)
            second_window_t = Mux(tk.pairs, second_take_window, second_window)
        taking = {False: (self.fill_buf, 0, blocks, window_kept), True: (fill_buf_t, set_t, blocks_t, window_t)}

        def pick(values):
            """The register's next value from the four outcomes ``values[take, end]``."""
            return Mux(tk.take, Mux(ents.end, values[True, True], values[True, False]),
                       Mux(ents.end, values[False, True], values[False, False]))
        blocked, second_blocked = {}, {}
        for took in (False, True):
            fill_buf_n, set_n, blocks_n, window_n = taking[took]
            for end in (False, True):
                head_n, live, busy_n = ending[end]
                blocked[took, end] = self.check(head_n, fill_buf_n, live | set_n, blocks_n, window_n, busy_n)
                if p.pair_passes:
                    # the second pass of a pair: one window, its whole pass (the bank stage's
                    # window is a pass when passes are paired). The head may be the first pass
                    # of the pair itself (the ring was empty): the ring does not follow its
                    # reads (``busy``), so all of its blocks count
                    head_blocks = Signal(NB, name=f"r_head_blocks_{int(took)}{int(end)}")
                    with m.Switch(head_n):
                        for b in range(E):
                            with m.Case(b):
                                m.d.comb += head_blocks.eq(blocks_n[b])
                    second_blocked[took, end] = self.check(
                        head_n, second_buf_t if took else self.second_buf, live | set_n, blocks_n,
                        second_window_t if took else second_window, Mux(head_n == fill_buf_n, head_blocks, busy_n))
        window = Signal(NB, name="r_window")
        m.d.comb += self.window.eq(window)
        m.d.sync += [window.eq(Mux(tk.take, window_t, window_kept)), busy.eq(Mux(ents.end, nxt, ents.reading)),
                     self.blocked.eq(pick(blocked))]
        with m.If(tk.take):
            m.d.sync += [blocks[b].eq(blocks_t[b]) for b in range(E)]
        if p.pair_passes:
            m.d.sync += [second_window.eq(Mux(tk.pair, second_take_window, second_window)),
                         self.second_blocked.eq(pick(second_blocked))]
        return m
