"""The take: the oldest queued pass leaves the pass queue into the next result entry."""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import Params
from .records import TakeSignature, pass_layout

__all__ = ["Take"]


class Take(wiring.Component):
    """The take: the pass at the head of the pass queue leaves into entry ``tail`` when that
    entry is free and, unless it was refused (it then only gives its error beats), the stages
    that serve passes (the bank stage, the global fetch stage) are free; it then starts in the
    stage of its memory and in the ring.

    With paired passes (:attr:`~tensorlsu.hdl.params.Params.pair_passes`) the two passes of a
    wmma.load from shared memory leave together, into two entries (``pair``): the first waits
    until the second is queued and the entry after ``tail`` is free too.

    Combinational (latency 0). This implementation assumes ``stages_free`` depends on no
    handshake of the same cycle (each stage's ``free`` comes from its registers and its own
    finish), and that the pass behind the first of a pair is its second (the pass queue keeps
    order; an instruction's passes are refused together or not at all).

    Members
    -------
    pop : In(stream.Signature(pass_layout(params)))
        The pass queue's head.
    free, tail : In(1), In(range(entries))
        The result stage's next entry, and whether it is free.
    start : In(range(row_blocks))
        The ring's first block for the pass (:class:`~tensorlsu.hdl.pipeline.ring.RowRing`).
    stages_free : In(1)
        The bank stage and the global fetch stage are free (or end their pass this cycle).
    store_room : In(1)
        The bank stage may owe a refused stmatrix's beats
        (:class:`~tensorlsu.hdl.smem.owed.StoreOwed`): a refused stmatrix waits until it may.
    second : In(stream.Signature(pass_layout(params))), with paired passes
        The pass behind the queue's head (its ``ready``: it leaves too).
    second_free, second_tail, second_start : with paired passes, the entry after ``tail`` is
        free, that entry, and the ring block after the first pass's blocks.
    take : Out(TakeSignature(params))
        The take as the result stage and the ring see it: ``ok`` for every pass served.
    shared, global_ : Out(TakeSignature(params))
        The same take, with ``ok`` only for the passes the bank stage serves (shared memory)
        or the global fetch stage serves (global memory).
    """

    def __init__(self, params: Params):
        self.params = p = params
        super().__init__({
            "pop": In(stream.Signature(pass_layout(p))), "free": In(1), "tail": In(range(p.entries)),
            "start": In(range(p.row_blocks)), "stages_free": In(1), "store_room": In(1),
            "take": Out(TakeSignature(p)), "shared": Out(TakeSignature(p)), "global_": Out(TakeSignature(p)),
            **({"second": In(stream.Signature(pass_layout(p))), "second_free": In(1),
                "second_tail": In(range(p.entries)), "second_start": In(range(p.row_blocks))}
               if p.pair_passes else {})})

    def elaborate(self, platform):
        m = Module()
        pop, tk = self.pop, self.take
        ok = pop.payload.err == Error.NONE
        c = pop.payload.consts
        room = Signal()                 # the entries and the second pass a pair needs are there
        owes = Signal()                 # a refused stmatrix, whose beats the bank stage takes
        m.d.comb += owes.eq(~ok & c.valid & ~c.load)
        m.d.comb += [tk.offered.eq(pop.valid), tk.pass_.eq(pop.payload), tk.free.eq(self.free),
                     tk.tail.eq(self.tail), tk.start.eq(self.start),
                     tk.take.eq(pop.valid & self.free & (~ok | self.stages_free) & room & (~owes | self.store_room)),
                     tk.ok.eq(tk.take & ok),
                     pop.ready.eq(tk.take)]
        names = ("offered", "pass_", "free", "tail", "take", "start")
        if self.params.pair_passes:
            pair = Signal()             # the head is the first pass of a shared-memory pair
            m.d.comb += [pair.eq(ok & c.load & c.wmma & ~c.final & ~pop.payload.glob),
                         room.eq(~pair | (self.second.valid & self.second_free)),
                         tk.pairs.eq(pair), tk.pair.eq(tk.take & pair), self.second.ready.eq(tk.pair),
                         tk.second_pass.eq(self.second.payload), tk.second_tail.eq(self.second_tail),
                         tk.second_start.eq(self.second_start)]
            names += ("pairs", "pair", "second_pass", "second_tail", "second_start")
        else:
            m.d.comb += room.eq(1)
        for out, glob in ((self.shared, 0), (self.global_, 1)):
            m.d.comb += [getattr(out, k).eq(getattr(tk, k)) for k in names]
            m.d.comb += out.ok.eq(tk.ok & (pop.payload.glob == glob))
        return m
