"""A quadrant's result side: the instructions in flight, their result beats, and the reduction
that folds a ``.red`` load's beats as they leave."""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from .load import beat_info_layout
from .records import Kind, RedType, beat_layout, tmem_result_layout
from .reduce import TmemReduce

__all__ = ["TmemResult", "context_layout"]


def context_layout() -> data.StructLayout:
    """What the result side keeps of an instruction: its error (a refusal's) and its
    reduction (``red``: a ``.red`` load, and its kind)."""
    return data.StructLayout({"err": Error, "red": 1, "red_max": 1, "red_type": RedType, "abs": 1, "nan": 1})


class TmemResult(wiring.Component):
    """The result side of a quadrant: at most two instructions in flight, the newest on the
    issue side and the oldest whose beats have not all left (``queued``: the newest waits for
    the result side). A load's register beats leave as the load side makes them, then a
    ``.red`` load's REDVAL beat (:class:`~tensorlsu.hdl.tmem.reduce.TmemReduce` folds the
    register beats as they leave); a store gives one DONE beat after its last write, a refusal
    one DONE beat with its error once its store beats are drained.

    Latency: a beat that becomes whole at an edge is offered in the next cycle; the DONE beat
    the cycle after ``complete`` (the result side being the instruction's).

    Members
    -------
    result : Out(stream.Signature(tmem_result_layout()))
        The quadrant's result port.
    accept : In(1)
        An instruction is accepted, with ``ctx`` (:func:`context_layout`).
    beat_in, beat, words : In
        The load side's beat becomes whole (:class:`~tensorlsu.hdl.tmem.load.TmemLoad`).
    complete : In(1)
        The issue side is done with a store or a refusal: its DONE beat may follow.
    busy : Out(1)
        An instruction is in flight; ``queued``: a second one, behind it.
    beat_free : Out(1)
        A whole beat would be taken this cycle (the port is free, no REDVAL beat ahead).
    """

    def __init__(self):
        super().__init__({
            "result": Out(stream.Signature(tmem_result_layout())),
            "accept": In(1), "ctx": In(context_layout()),
            "beat_in": In(1), "beat": In(beat_info_layout()), "words": In(beat_layout()), "complete": In(1),
            "busy": Out(1), "queued": Out(1), "beat_free": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.reduce = reduce = TmemReduce()
        res, busy, queued = self.result.payload, self.busy, self.queued
        issue_ctx, res_ctx = Signal(context_layout()), Signal(context_layout())   # the newest; the result side's
        res_valid, res_taken, finishing = Signal(), Signal(), Signal()
        # 0 register beats, 1 redval beat, 2 completion / refusal beat, 3 the last register beat's
        # fold on its way (the redval beat follows once the reduction holds it)
        state = Signal(range(4))
        # the cycles state 3 lasts: the reduction's stages after the one the fold is taken in
        red_wait = Signal(range(TmemReduce.LATENCY), name="red_wait")
        # a .red load's last register beat and its redval beat keep the next instruction's
        # beats back (the redval beat does not come from the beat register)
        redval_ahead = Signal()
        m.d.comb += [self.result.valid.eq(res_valid), res_taken.eq(res_valid & self.result.ready),
                     redval_ahead.eq((state == 1) | (state == 3) |
                                     (res_valid & (state == 0) & self.beat.final & res_ctx.red)),
                     self.beat_free.eq(~redval_ahead & (~res_valid | self.result.ready))]
        # the result side takes an instruction on (and clears the reduction) when it is accepted
        # onto an idle or finishing result side, or when the one before it finishes
        res_next = Signal()
        m.d.comb += res_next.eq((self.accept & (~busy | finishing)) | (finishing & queued))
        m.d.comb += [reduce.beat.eq(self.words), reduce.two.eq(self.beat.two),
                     reduce.fold.eq(res_taken & (res.kind == Kind.REGS)), reduce.clear.eq(res_next),
                     reduce.red_max.eq(res_ctx.red_max), reduce.red_type.eq(res_ctx.red_type),
                     reduce.abs.eq(res_ctx.abs), reduce.nan.eq(res_ctx.nan)]

        with m.If(res_taken):
            m.d.sync += res_valid.eq(0)
        with m.If(self.beat_in):
            m.d.sync += res_valid.eq(1)
        m.d.comb += [res.data.eq(self.words), res.reg.eq(self.beat.reg), res.reg2.eq(self.beat.reg2),
                     res.two.eq(self.beat.two), res.error.eq(res_ctx.err), finishing.eq(res_taken & res.last)]
        with m.Switch(state):
            with m.Case(0):
                m.d.comb += [res.kind.eq(Kind.REGS), res.last.eq(self.beat.final & ~res_ctx.red)]
                with m.If(res_taken & self.beat.final & res_ctx.red):
                    m.d.sync += [state.eq(3), red_wait.eq(TmemReduce.LATENCY - 2)]
            with m.Case(3):
                m.d.sync += red_wait.eq(red_wait - 1)
                with m.If(red_wait == 0):
                    m.d.sync += [state.eq(1), res_valid.eq(1)]
            with m.Case(1):
                m.d.comb += [res.kind.eq(Kind.REDVAL), res.last.eq(1), res.data[0].eq(reduce.redval)]
            with m.Case(2):
                m.d.comb += [res.kind.eq(Kind.DONE), res.last.eq(1)]
        with m.If(finishing):
            m.d.sync += state.eq(0)
            with m.If(queued):
                m.d.sync += [res_ctx.eq(issue_ctx), queued.eq(0)]
            with m.Else():
                m.d.sync += busy.eq(0)
        with m.If(self.accept):
            m.d.sync += [busy.eq(1), issue_ctx.eq(self.ctx)]
            with m.If(~busy | finishing):
                m.d.sync += res_ctx.eq(self.ctx)
            with m.Else():
                m.d.sync += queued.eq(1)
        # a store's or a refusal's one beat, once the result side is theirs
        with m.If(busy & ~queued & self.complete & ~res_valid & (state == 0)):
            m.d.sync += [state.eq(2), res_valid.eq(1)]
        return m
