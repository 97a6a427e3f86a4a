"""Decode stage of a quadrant (D): an instruction's check and its first step, over two register
stages ahead of the step sequencer."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..lib.stages import stage_pair
from ..params import TmemParams
from .check import TmemCheck, verdict
from tensorlsu.sim.tmem_plan import MAX_REGS, schedule
from .records import LANES, tmem_instr_layout
from .steps import ADDR_BITS, first_layout, first_step

__all__ = ["TmemDecode", "decoded_layout"]


def decoded_layout(p: TmemParams) -> data.StructLayout:
    """A decoded instruction: the instruction, its verdict and run constants
    (:class:`~tensorlsu.hdl.tmem.check.TmemCheck`), and its first step as the sequencer loads
    it (:func:`~tensorlsu.hdl.tmem.steps.first_layout`)."""
    sch = schedule(p.banks)
    return data.StructLayout({"instr": tmem_instr_layout(), "error": Error, "cls": range(max(len(sch.keys), 2)),
                              "periods": range(MAX_REGS + 1), "nregs": range(MAX_REGS + 1),
                              "lane_off": range(LANES + 1), "first": first_layout(p.banks)})


class TmemDecode(wiring.Component):
    """Decode stage of a quadrant, prefix ``d``: two registers, so that neither the check nor
    the step table nor an address adder lies between the quadrant's port and its memory.

    - **D1**: the instruction, its check and decode (:class:`~tensorlsu.hdl.tmem.check.TmemCheck`)
      but the columns' verdict, taddr's column and the column plus immHalfSplitoff.
    - **D2**: the columns' verdict (a comparison with a constant per span), and the first step of its class
      (:func:`~tensorlsu.hdl.tmem.steps.first_step`): the row's fields from a table, each
      port's column from one adder.

    Latency: an instruction taken in cycle ``t`` is offered in ``t + 2``. A beat a clock while
    the stages drain; while both are full, the port's ready waits for one to empty (it never
    depends on ``decoded.ready``).

    Members
    -------
    instr : In(stream.Signature(tmem_instr_layout()))
        The quadrant's instruction port.
    stall : In(1)
        Take nothing this cycle (fill, dump or a copy go first).
    decoded : Out(stream.Signature(decoded_layout(params)))
    busy : Out(1)
        An instruction is held.
    """

    def __init__(self, params: TmemParams, quadrant: int):
        self.params, self.quadrant = params, quadrant
        super().__init__({"instr": In(stream.Signature(tmem_instr_layout())), "stall": In(1),
                          "decoded": Out(stream.Signature(decoded_layout(params))), "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        out = self.decoded
        # decoupled: the port's ready and D1's enables wait on no state past the decode stage
        # (an instruction takes two cycles or more past it, so the rate holds)
        stages = stage_pair(m, "d", self.instr.valid, out.ready, self.stall, decoupled=True)
        m.d.comb += [self.instr.ready.eq(stages.in_ready), self.busy.eq(stages.valid1 | stages.valid2),
                     out.valid.eq(stages.valid2)]

        # --- D1 ----------------------------------------------------------------------------
        m.submodules.check = check = TmemCheck(p, self.quadrant)
        ins = self.instr.payload
        d1 = Signal(data.StructLayout({k: decoded_layout(p)[k].shape
                                       for k in ("instr", "error", "cls", "periods", "nregs", "lane_off")}
                                      | {"col": unsigned(ADDR_BITS), "col_split": unsigned(ADDR_BITS),
                                         "span_log": 4, "x2": 1}),
                    name="d1", reset_less=True)
        m.d.comb += check.instr.eq(ins)
        with m.If(stages.take):
            m.d.sync += [d1.instr.eq(ins), d1.error.eq(check.early), d1.span_log.eq(check.span_log), d1.x2.eq(check.x2),
                         d1.cls.eq(check.cls),
                         d1.periods.eq(check.periods), d1.nregs.eq(check.nregs), d1.lane_off.eq(check.lane_off),
                         d1.col.eq(ins.taddr[:16]), d1.col_split.eq(ins.taddr[:16] + ins.split)]

        # --- D2 ----------------------------------------------------------------------------
        first = first_step(m, p.banks, d1.cls, d1.periods, d1.col, d1.col_split, "d_first")
        d2 = Signal(decoded_layout(p), name="d2", reset_less=True)
        with m.If(stages.move):
            m.d.sync += [*[getattr(d2, k).eq(getattr(d1, k)) for k in ("instr", "cls", "periods", "nregs", "lane_off")],
                         d2.error.eq(verdict(m, d1.error, Mux(d1.x2, d1.col_split, d1.col), d1.span_log,
                                             p.columns)),
                         d2.first.eq(first)]
        m.d.comb += out.payload.eq(d2)
        return m
