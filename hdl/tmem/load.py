"""tcgen05.ld: a step's words from the memory (stage M), aligned to the form's lanes (stage A)
and placed into the beat's registers (stage P), and the beat they make."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..params import TmemParams
from .gather import TmemGather
from tensorlsu.sim.tmem_plan import MAX_REGS, PORTS_PER_BANK, schedule
from .records import LANES, beat_layout

__all__ = ["TmemLoad", "step_layout", "beat_info_layout"]


def step_layout(banks: int) -> data.StructLayout:
    """A step as it moves down the load pipeline: its placement variant, whether it is its
    beat's last and the instruction's last, the beat's registers (``two``: the second is
    present), each group's first-column parity, and the warp's lane offset."""
    return data.StructLayout({"var": range(max(len(schedule(banks).variants), 2)), "last_step": 1, "final": 1,
                              "reg": range(MAX_REGS), "reg2": range(MAX_REGS), "two": 1,
                              "parity": unsigned(PORTS_PER_BANK), "lane_off": range(LANES + 1)})


def beat_info_layout() -> data.StructLayout:
    """A whole beat's registers, and whether it is the instruction's last."""
    return data.StructLayout({"reg": unsigned(7), "reg2": unsigned(7), "two": 1, "final": 1})


class TmemLoad(wiring.Component):
    """The load side of a quadrant, after a step has issued its reads.

    ======  =========================================================================
    stage   what it holds
    ======  =========================================================================
    M       the step issued last cycle (``s1``); its words at the memory's output
    A       the step whose words :class:`~tensorlsu.hdl.tmem.gather.TmemGather` aligned
            (``s2``), placed into the beat as it moves on
    beat    the beat's registers once its last step was placed (``beat``), the data in the
            gather's beat register
    ======  =========================================================================

    Latency: a step issued in cycle ``t`` is placed at the end of ``t + 2``; the beat is whole
    (``beat_in`` was 1) the cycle after its last step was placed. A stage moves on only when
    the next one is free: stage A when the result side takes a beat (``beat_free``).

    Members
    -------
    issuing : In(1)
        A step issues its reads this cycle; ``step``: what it is (:func:`step_layout`).
    rdata : In(unsigned(32 · LANES)), per bank and port
        The memory's words (:class:`~tensorlsu.hdl.tmem.banks.TmemBanks`).
    beat_free : In(1)
        The result side takes a beat this cycle if one is whole.
    can_issue : Out(1)
        Stage M is free (or moves on) this cycle: a step may issue.
    beat_in : Out(1)
        A beat becomes whole at this edge.
    beat : Out(beat_info_layout())
        The whole beat's registers; ``words``: its data.
    """

    def __init__(self, params: TmemParams):
        self.params = p = params
        super().__init__({
            "issuing": In(1), "step": In(step_layout(p.banks)),
            "rdata": In(unsigned(32 * LANES)).array(p.banks, PORTS_PER_BANK), "beat_free": In(1),
            "can_issue": Out(1), "beat_in": Out(1), "beat": Out(beat_info_layout()), "words": Out(beat_layout())})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.gather = gather = TmemGather(p.banks)
        s1 = Signal(data.StructLayout({"valid": 1, "step": step_layout(p.banks)}), name="s1")
        s2 = Signal(data.StructLayout({"valid": 1, **{k: step_layout(p.banks)[k].shape
                                                     for k in ("last_step", "final", "reg", "reg2", "two")}}),
                    name="s2")
        s2_take, s2_free, s1_move = Signal(), Signal(), Signal()
        m.d.comb += [s2_take.eq(s2.valid & self.beat_free), s2_free.eq(~s2.valid | s2_take),
                     s1_move.eq(s1.valid & s2_free), self.can_issue.eq(~s1.valid | s1_move)]
        with m.If(self.can_issue):
            m.d.sync += [s1.valid.eq(self.issuing), s1.step.eq(self.step)]
        with m.If(s2_free):
            m.d.sync += [s2.valid.eq(s1.valid)] + [getattr(s2, k).eq(getattr(s1.step, k))
                                                   for k in ("last_step", "final", "reg", "reg2", "two")]
        m.d.comb += [gather.var.eq(s1.step.var), gather.lane_off.eq(s1.step.lane_off), gather.load.eq(s1_move),
                     gather.take.eq(s2_take), self.words.eq(gather.beat)]
        # two banks: element e of group g is in bank (its first column's parity) ^ e
        for g in range(PORTS_PER_BANK):
            if p.banks == 1:
                m.d.comb += gather.words[g].eq(self.rdata[0][g])
            else:
                for e in range(2):
                    m.d.comb += gather.words[2 * g + e].eq(Mux(s1.step.parity[g] ^ e, self.rdata[1][g],
                                                               self.rdata[0][g]))
        m.d.comb += self.beat_in.eq(s2_take & s2.last_step)
        with m.If(self.beat_in):
            m.d.sync += [self.beat.reg.eq(s2.reg), self.beat.reg2.eq(s2.reg2), self.beat.two.eq(s2.two),
                         self.beat.final.eq(s2.final)]
        return m
