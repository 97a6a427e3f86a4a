"""The check and decode of a quadrant's instruction: is it legal here, and how does it run.

Combinational (latency 0). The checks come in the model's order (``tensorlsu.sim.model``
``_tmem_cells``): an unsupported form or reduction, then immHalfSplitoff, then the lanes (the
warp's quadrant), then the columns (past the memory); the first that fails is the error. The
last one is given as its operands (``early``: the error of the others; ``col_last``: taddr's
column plus the columns one access spans, less one), so that a caller may register them
first: :func:`verdict` ends it.

Assumes the quadrant index is fixed at build time; taddr's lane is in bits 31:16 and its
column in bits 15:0.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import TmemParams
from .plan import MAX_REGS, NUMS, SHAPES, cols_of, plan, schedule
from .records import LANES, RedType, tmem_instr_layout

__all__ = ["TmemCheck", "verdict"]


def _code(op: str, shape: str, num: int, pack: bool) -> int:
    """The form's code: num_log2, shape_id, pack, store, as the switch below reads them."""
    return NUMS.index(num) | SHAPES.index(shape) << 3 | int(pack) << 6 | int(op == "tcgen05.st") << 7


def verdict(early, col_last, x2, split, columns: int):
    """The instruction's error from :class:`TmemCheck`'s ``early`` and ``col_last``: the
    columns check is the last (``x2``: 16x32bx2, whose second half lies immHalfSplitoff on)."""
    return Mux(early != Error.NONE, early, Mux(col_last + Mux(x2, split, 0) >= columns, Error.COLUMNS, Error.NONE))


class TmemCheck(wiring.Component):
    """Error code and run constants of the instruction on ``instr``.

    Members
    -------
    instr : In(tmem_instr_layout())
    early : Out(Error)
        The first failing check but the columns'.
    col_last : Out(17), x2 : Out(1)
        taddr's column plus the columns one access spans, less one; the form is 16x32bx2.
    cls : Out
        The instruction's class in :func:`~tensorlsu.hdl.tmem.plan.schedule`.
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
            "early": Out(Error), "col_last": Out(17), "x2": Out(1),
            "cls": Out(range(max(len(sch.keys), 2))),
            "periods": Out(range(MAX_REGS + 1)),
            "nregs": Out(range(MAX_REGS + 1)),
            "lane_off": Out(range(LANES + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        ins = self.instr
        sch = schedule(self.params.banks)
        # columns one access (one half) spans
        span = Signal(range(max(cols_of(*f[1:]) for f in sch.forms()) + 1))
        known = Signal()
        with m.Switch(Cat(ins.num_log2, ins.shape_id, ins.pack, ins.store)):
            for op, shape, num, pack in sch.forms():
                pl = plan(op, shape, num, pack, self.params.banks)
                with m.Case(_code(op, shape, num, pack)):
                    m.d.comb += [known.eq(1), self.cls.eq(sch.cls_of(op, shape, num, pack)),
                                 self.periods.eq(pl.periods), self.nregs.eq(pl.periods * pl.period_regs),
                                 span.eq(cols_of(shape, num, pack))]

        lane0, col0 = ins.taddr[16:], ins.taddr[:16]
        base = self.quadrant * LANES
        wide = ins.shape_id == SHAPES.index("32x32b")
        x2 = ins.shape_id == SHAPES.index("16x32bx2")
        red_ok = (wide | x2) & ~ins.pack & ~ins.store & (ins.num_log2 != 0)
        red_ok &= (ins.red_type == RedType.F32) | (~ins.abs & ~ins.nan)
        red_ok &= ins.red_type.as_value() != 3
        # the span is a power of two, 2**e with e the shape's width, .num and .pack as logs:
        # the span less one is a mask of e ones, from a 4-bit sum rather than the form's
        # decode (which is deep); col_last is picked by e among col0 plus each mask (a form
        # the unit lacks is refused whatever its col_last)
        assert all(cols_of(*f[1:]) == cols_of(f[1], 1, False) * f[2] << f[3] for f in sch.forms())
        width_log = Signal(2)
        with m.Switch(ins.shape_id):
            for i, shape in enumerate(SHAPES):
                with m.Case(i):
                    m.d.comb += width_log.eq(cols_of(shape, 1, False).bit_length() - 1)
        e = Signal(4)
        m.d.comb += [e.eq(width_log + ins.num_log2 + ins.pack), self.x2.eq(x2)]
        # col0 plus each mask beside e's sum, then one picked (no adder after the sum)
        ones = len(span)
        with m.Switch(e):
            for i in range(ones):
                with m.Case(i):
                    m.d.comb += self.col_last.eq(col0 + ((1 << i) - 1))
            with m.Default():
                m.d.comb += self.col_last.eq(col0 + ((1 << ones) - 1))
        # immHalfSplitoff (not negative) below the span: none of its bits at e or above
        split_below = Signal()
        with m.Switch(e):
            for i in range(ones):
                with m.Case(i):
                    m.d.comb += split_below.eq(~ins.split.as_unsigned()[i:].any())
            with m.Default():
                m.d.comb += split_below.eq(~ins.split.as_unsigned()[ones:].any())
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

