"""The step sequencer of a quadrant: walks an instruction's rows of the step table and gives
each step's column addresses.

Registered: ``start`` loads the instruction's first row at the clock edge; each ``advance``
moves to the next row (after a period's last row, back to the class's first row, the columns
moved one period on). The outputs describe the current row, combinationally.

Assumes ``advance`` is not asserted past the instruction's last step (``final``); addresses
are 17 bits wide, so a legal taddr column plus immHalfSplitoff never wraps (the check refuses
columns past the memory first).
"""

from __future__ import annotations

from amaranth import Array, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.rom import rom
from .plan import BANKS, MAX_REGS, accesses, schedule

__all__ = ["TmemSteps", "ADDR_BITS"]

#: Width of a step's column address (a 16-bit taddr column plus a 16-bit split, no wrap).
ADDR_BITS = 18


class TmemSteps(wiring.Component):
    """Members
    -------
    start : In(1)
        Load the instruction below at this edge.
    cls, periods, col, split : In
        Its class, periods, taddr's column and immHalfSplitoff.
    advance : In(1)
        The current step was issued: go to the next.
    var : Out
        The current row of :func:`~tensorlsu.hdl.tmem.plan.schedule`.
    addr, on : Out
        Per port, the column of the current step and whether the port is used.
    last_step, final : Out(1)
        The step is its beat's last; the instruction's last.
    reg, reg2, two : Out
        The beat's registers (in the instruction) and whether it has two.
    """

    def __init__(self, banks: int = BANKS):
        self.banks = banks
        sch = schedule(banks)
        ports = accesses(banks)
        super().__init__({
            "start": In(1), "cls": In(range(max(len(sch.keys), 2))),
            "periods": In(range(MAX_REGS + 1)), "col": In(16), "split": In(signed(17)),
            "advance": In(1),
            "var": Out(range(max(len(sch.variants), 2))),
            "addr": Out(data.ArrayLayout(unsigned(ADDR_BITS), ports)), "on": Out(ports),
            "last_step": Out(1), "final": Out(1),
            "reg": Out(range(MAX_REGS)), "reg2": Out(range(MAX_REGS)), "two": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        sch = schedule(self.banks)
        ports = accesses(self.banks)
        rows = sch.variants

        def column(f, shape):
            return (shape, [f(v) for v in rows])
        row = rom(m, self.var, {
            **{f"off{k}": column(lambda v, k=k: (v.ports[k] or (0, 0))[0], unsigned(9)) for k in range(ports)},
            **{f"half{k}": column(lambda v, k=k: (v.ports[k] or (0, 0))[1], 1) for k in range(ports)},
            **{f"on{k}": column(lambda v, k=k: v.ports[k] is not None, 1) for k in range(ports)},
            "last_step": column(lambda v: v.last_step, 1),
            "last_beat": column(lambda v: v.last_beat, 1),
            "reg": column(lambda v: v.regs[0], unsigned(7)),
            "reg2": column(lambda v: v.regs[-1], unsigned(7)),
            "two": column(lambda v: len(v.regs) == 2, 1),
            "next": column(lambda v: rows.index(v) + 1 if not (v.last_step and v.last_beat)
                           else sch.first[v.cls], unsigned(16)),
        }, "row")
        period_cols = Array(Const(pl.period_cols, unsigned(9)) for pl in sch.plans)
        period_regs = Array(Const(pl.period_regs, unsigned(8)) for pl in sch.plans)
        first = Array(Const(f, unsigned(16)) for f in sch.first)

        var, cls = self.var, Signal.like(self.cls)
        period, periods = Signal(range(MAX_REGS + 1)), Signal(range(MAX_REGS + 1))
        base = Signal(ADDR_BITS)           # taddr's column + period · the period's columns
        split = Signal(signed(17))
        with m.If(self.start):
            m.d.sync += [var.eq(first[self.cls]), cls.eq(self.cls), period.eq(0),
                         periods.eq(self.periods), base.eq(self.col), split.eq(self.split)]
        with m.Elif(self.advance):
            with m.If(row.last_step & row.last_beat):
                m.d.sync += [period.eq(period + 1), base.eq(base + period_cols[cls])]
            m.d.sync += var.eq(row.next)

        for k in range(ports):
            m.d.comb += [self.addr[k].eq(base + row[f"off{k}"] + Mux(row[f"half{k}"], split, 0)),
                         self.on[k].eq(row[f"on{k}"])]
        first_reg = Signal(range(MAX_REGS + 1))
        m.d.comb += [first_reg.eq(period * period_regs[cls]),
                     self.last_step.eq(row.last_step),
                     self.final.eq(row.last_step & row.last_beat & (period == periods - 1)),
                     self.reg.eq(first_reg + row.reg), self.reg2.eq(first_reg + row.reg2),
                     self.two.eq(row.two)]
        return m
