"""The check and decode of a quadrant's instruction: is it legal here, and how does it run.

Combinational (latency 0). The checks come in the model's order (``tensorlsu.sim.model``
``_tmem_cells``): an unsupported form or reduction, then immHalfSplitoff, then the lanes (the
warp's quadrant), then the columns (past the memory); the first that fails is the error. The
last one is given as its operands (``early``: the error of the others; ``span_log``: log2 of
the columns one access spans), so that a caller may register them first: :func:`verdict` ends
it.

Assumes the quadrant index is fixed at build time; taddr's lane is in bits 31:16 and its
column in bits 15:0.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import TmemParams
from tensorlsu.sim.tmem_plan import MAX_REGS, NUMS, SHAPES, cols_of, forms, plan, schedule
from .records import LANES, RedType, tmem_instr_layout

__all__ = ["TmemCheck", "verdict", "SPAN_LOG_MAX"]

#: log2 of the most columns one access of any form spans
SPAN_LOG_MAX = max(cols_of(*f[1:]) for f in forms()).bit_length() - 1


def _code(op: str, shape: str, num: int, pack: bool) -> int:
    """The form's code: num_log2, shape_id, pack, store, as the switch below reads them."""
    return NUMS.index(num) | SHAPES.index(shape) << 3 | int(pack) << 6 | int(op == "tcgen05.st") << 7


def _by_span_log(m, span_log, value, name):
    """A signal that is ``value(i)`` while ``span_log`` is ``i`` (``value(SPAN_LOG_MAX)`` past
    it: a form the unit lacks, refused before): a constant-indexed choice, no arithmetic on
    ``span_log``."""
    out = Signal(name=name)
    with m.Switch(span_log):
        for i in range(SPAN_LOG_MAX):
            with m.Case(i):
                m.d.comb += out.eq(value(i))
        with m.Default():
            m.d.comb += out.eq(value(SPAN_LOG_MAX))
    return out


def verdict(m, early, first_col, span_log, columns: int):
    """The instruction's error from :class:`TmemCheck`'s ``early`` and the columns' operands:
    the columns check is the last. ``first_col``: the column the last access starts at (taddr's
    column, or for .16x32bx2 that plus immHalfSplitoff); ``span_log``: log2 of the columns one
    access spans. The access passes the last column when ``first_col`` is at least ``columns``
    less the span plus one: a comparison with a constant for each span, one picked (no adder)."""
    past = _by_span_log(m, span_log, lambda i: first_col >= max(columns - ((1 << i) - 1), 0), "columns_past")
    return Mux(early != Error.NONE, early, Mux(past, Error.COLUMNS, Error.NONE))


class TmemCheck(wiring.Component):
    """Error code and run constants of the instruction on ``instr``.

    Members
    -------
    instr : In(tmem_instr_layout())
    early : Out(Error)
        The first failing check but the columns'.
    span_log, x2 : Out
        log2 of the columns one access spans (at most ``SPAN_LOG_MAX``); the form is 16x32bx2,
        whose second access lies immHalfSplitoff on.
    cls : Out
        The instruction's class in :func:`~tensorlsu.sim.tmem_plan.schedule`.
    periods, nregs : Out
        Periods of its class's steps it runs; registers per thread.
    lane_off : Out
        taddr's lane from the quadrant's first lane (0 … 16 when legal).
    """

    def __init__(self, params: TmemParams, quadrant: int):
        self.params, self.quadrant = params, quadrant
        sch = schedule(params.banks)
        super().__init__({
            "instr": In(tmem_instr_layout()),
            "early": Out(Error), "span_log": Out(4), "x2": Out(1),
            "cls": Out(range(max(len(sch.keys), 2))),
            "periods": Out(range(MAX_REGS + 1)),
            "nregs": Out(range(MAX_REGS + 1)),
            "lane_off": Out(range(LANES + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        ins = self.instr
        sch = schedule(self.params.banks)
        known = Signal()
        with m.Switch(Cat(ins.num_log2, ins.shape_id, ins.pack, ins.store)):
            for op, shape, num, pack in sch.forms():
                pl = plan(op, shape, num, pack, self.params.banks)
                with m.Case(_code(op, shape, num, pack)):
                    m.d.comb += [known.eq(1), self.cls.eq(sch.cls_of(op, shape, num, pack)),
                                 self.periods.eq(pl.periods), self.nregs.eq(pl.periods * pl.period_regs)]

        lane0, col0 = ins.taddr[16:], ins.taddr[:16]
        base = self.quadrant * LANES
        wide = ins.shape_id == SHAPES.index("32x32b")
        x2 = ins.shape_id == SHAPES.index("16x32bx2")
        red_ok = (wide | x2) & ~ins.pack & ~ins.store & (ins.num_log2 != 0)
        red_ok &= (ins.red_type == RedType.F32) | (~ins.abs & ~ins.nan)
        red_ok &= ins.red_type.as_value() != 3
        # the span is a power of two, 2**e with e the shape's width, .num and .pack as logs: a
        # 4-bit sum rather than the form's decode (which is deep); a form the unit lacks is
        # refused whatever its e
        assert all(cols_of(*f[1:]) == cols_of(f[1], 1, False) * f[2] << f[3] for f in sch.forms())
        width_log = Signal(2)
        with m.Switch(ins.shape_id):
            for i, shape in enumerate(SHAPES):
                with m.Case(i):
                    m.d.comb += width_log.eq(cols_of(shape, 1, False).bit_length() - 1)
        e = self.span_log
        m.d.comb += [e.eq(width_log + ins.num_log2 + ins.pack), self.x2.eq(x2)]
        # immHalfSplitoff (not negative) below the span: none of its bits at e or above
        split_below = _by_span_log(m, e, lambda i: ~ins.split.as_unsigned()[i:].any(), "split_below")
        with m.If(~known | (ins.red & ~red_ok)):
            m.d.comb += self.early.eq(Error.UNSUPPORTED)
        with m.Elif(x2 & (~ins.has_split | (ins.split < 0) | (ins.store & split_below))):
            m.d.comb += self.early.eq(Error.SPLIT)
        with m.Elif(~x2 & ins.has_split):
            m.d.comb += self.early.eq(Error.SPLIT)
        with m.Elif((ins.warp != self.quadrant) | (lane0 < base)
                    | (lane0 + Mux(wide, LANES, LANES // 2) > base + LANES)):
            m.d.comb += self.early.eq(Error.QUADRANT)
        m.d.comb += self.lane_off.eq(lane0 - base)
        return m

