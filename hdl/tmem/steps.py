"""The step sequencer of a quadrant: walks an instruction's rows of the step table and gives
each step's column addresses, from registers.

Every output describes the current row and is a register: the row's fields and its column
addresses are computed a cycle ahead, for the next row, whose fields are registers too (a
table indexed by the current row gives the row after the next); an instruction's first two
rows come from the decode stage ahead of the quadrant (:func:`first_step`,
:class:`~tensorlsu.hdl.tmem.decode.TmemDecode`). So no table lookup lies before an address
adder, and neither lies between a step and the memory's address pins.

``start`` loads the instruction's first row (``first``) at the clock edge; each ``advance``
moves to the next row (after a period's last row, back to the class's first row, the columns
moved one period on). The running sums the addresses need are registers too: the base
column with and without immHalfSplitoff, for this period and the next.

Assumes ``advance`` is not asserted past the instruction's last step (``final``); addresses
are 18 bits wide, so a legal taddr column plus immHalfSplitoff never wraps (the check refuses
columns past the memory first).
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.rom import hot_any, rom
from tensorlsu.sim.tmem_plan import BANKS, MAX_REGS, accesses, schedule

__all__ = ["TmemSteps", "ADDR_BITS", "first_layout", "first_step", "successors", "firsts"]

#: Width of a step's column address (a 16-bit taddr column plus a 16-bit split, no wrap).
ADDR_BITS = 18


def _row_layout(banks: int) -> data.StructLayout:
    """A row of the step table as the sequencer keeps it: each port's offset, half and use,
    and the row's marks and registers."""
    ports = accesses(banks)
    return data.StructLayout({
        **{f"off{k}": unsigned(9) for k in range(ports)}, **{f"half{k}": 1 for k in range(ports)},
        "on": ports, "last_step": 1, "last_beat": 1, "reg": unsigned(7), "reg2": unsigned(7), "two": 1})


def _row_values(banks: int, v) -> dict:
    ports = accesses(banks)
    return {**{f"off{k}": (v.ports[k] or (0, 0))[0] for k in range(ports)},
            **{f"half{k}": (v.ports[k] or (0, 0))[1] for k in range(ports)},
            "on": sum(1 << k for k in range(ports) if v.ports[k] is not None),
            "last_step": int(v.last_step), "last_beat": int(v.last_beat),
            "reg": v.regs[0], "reg2": v.regs[-1], "two": int(len(v.regs) == 2)}


def _next_row(sch, i: int) -> int:
    v = sch.variants[i]
    return i + 1 if not (v.last_step and v.last_beat) else sch.first[v.cls]


def successors(banks: int = BANKS) -> list[int]:
    """Each row's successor in the step table (after a period's last row, its class's first)."""
    sch = schedule(banks)
    return [_next_row(sch, i) for i in range(len(sch.variants))]


def firsts(banks: int = BANKS) -> list[int]:
    """Each class's first row in the step table."""
    return list(schedule(banks).first)


def _hot_successor(var_hot, banks: int):
    """The one-hot row after the one-hot row ``var_hot``: each bit the OR of its predecessors'."""
    succ = successors(banks)
    return Cat(*[hot_any(var_hot, [i for i, s in enumerate(succ) if s == j]) for j in range(len(succ))])


def _hot_first(cls_hot, banks: int):
    """The one-hot first row of the one-hot class ``cls_hot``."""
    first = firsts(banks)
    return Cat(*[hot_any(cls_hot, [k for k, f in enumerate(first) if f == j])
                 for j in range(len(schedule(banks).variants))])


def _table(m, index, rows: list, banks: int, name: str):
    """Row ``rows[index]`` of the step table as a view of :func:`_row_layout`."""
    layout = _row_layout(banks)
    values = [_row_values(banks, v) for v in rows]
    return rom(m, index, {k: (layout[k].shape, [x[k] for x in values]) for k in layout.members}, name)


def first_layout(banks: int = BANKS) -> data.StructLayout:
    """What ``start`` loads: the first row (its index ``var``, its fields, its addresses, the
    last-of-the-instruction mark), the row after it (``var_next``, ``row_next``) and the
    running sums (``base``: taddr's column; ``base2``: one period on; ``_split``: plus
    immHalfSplitoff); the class one-hot (``cls_hot``: the store's selects are read from it)."""
    sch = schedule(banks)
    nvar = range(max(len(sch.variants), 2))
    return data.StructLayout({
        "var": nvar, "cls_hot": unsigned(len(sch.keys)), "row": _row_layout(banks),
        "var_next": nvar, "row_next": _row_layout(banks),
        "addr": data.ArrayLayout(unsigned(ADDR_BITS), accesses(banks)), "final": 1,
        **{k: unsigned(ADDR_BITS) for k in ("base", "base_split", "base2", "base2_split")}})


def first_step(m, banks: int, cls, periods, col, col_split, name: str):
    """The first row of class ``cls`` as :func:`first_layout` describes it, from taddr's
    column (``col``) and the column plus immHalfSplitoff (``col_split``): a table lookup and
    one adder per port (the decode stage's second register)."""
    sch = schedule(banks)
    out = Signal(first_layout(banks), name=name)
    var = Array(Const(f, out.var.shape()) for f in sch.first)[cls]
    row_at = _table(m, cls, [sch.variants[f] for f in sch.first], banks, f"{name}_first")
    seconds = [_next_row(sch, f) for f in sch.first]
    period_cols = Array(Const(pl.period_cols, unsigned(9)) for pl in sch.plans)[cls]
    m.d.comb += [out.var.eq(var), out.row.eq(row_at), out.cls_hot.eq(Cat(*[cls == k for k in range(len(sch.keys))])),
                 out.var_next.eq(Array(Const(v, out.var.shape()) for v in seconds)[cls]),
                 out.row_next.eq(_table(m, cls, [sch.variants[v] for v in seconds], banks, f"{name}_second")),
                 out.base.eq(col), out.base_split.eq(col_split),
                 out.base2.eq(col + period_cols), out.base2_split.eq(col_split + period_cols),
                 out.final.eq(row_at.last_step & row_at.last_beat & (periods == 1))]
    for k in range(accesses(banks)):
        m.d.comb += out.addr[k].eq(Mux(row_at[f"half{k}"], col_split, col) + row_at[f"off{k}"])
    return out


class TmemSteps(wiring.Component):
    """Members
    -------
    start : In(1)
        Load the instruction's first row (``first``, :func:`first_step`) at this edge.
    first : In(first_layout(banks))
    cls, periods : In
        Its class and the periods of its class's steps it runs.
    advance : In(1)
        The current step was issued: go to the next.
    var, var_hot : Out
        The current row of :func:`~tensorlsu.sim.tmem_plan.schedule`, and one-hot (what the
        store's selects are read from, a cycle ahead).
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
            "start": In(1), "first": In(first_layout(banks)), "cls": In(range(max(len(sch.keys), 2))),
            "periods": In(range(MAX_REGS + 1)),
            "advance": In(1),
            "var": Out(range(max(len(sch.variants), 2))), "var_hot": Out(len(sch.variants)),
            "addr": Out(data.ArrayLayout(unsigned(ADDR_BITS), ports)), "on": Out(ports),
            "last_step": Out(1), "final": Out(1),
            "reg": Out(range(MAX_REGS)), "reg2": Out(range(MAX_REGS)), "two": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        sch = schedule(self.banks)
        ports = accesses(self.banks)
        rows = sch.variants
        # the current row's fields and the next row's (registers), and the row after the next
        # (a table indexed by the current row)
        row, nxt = Signal(_row_layout(self.banks), name="row"), Signal(_row_layout(self.banks), name="row_next")
        nxt_var = Signal.like(self.var, name="var_next")
        after = [_next_row(sch, _next_row(sch, i)) for i in range(len(rows))]
        row_after = _table(m, self.var, [rows[i] for i in after], self.banks, "row_after")
        var_after = Array(Const(i, self.var.shape()) for i in after)[self.var]
        period_cols = Array(Const(pl.period_cols, unsigned(9)) for pl in sch.plans)
        period_regs = Array(Const(pl.period_regs, unsigned(8)) for pl in sch.plans)

        cls = Signal.like(self.cls)
        period, periods = Signal(range(MAX_REGS + 1)), Signal(range(MAX_REGS + 1))
        # taddr's column (+ period · the period's columns), with and without the split, for
        # this period and the next; the period's first register
        base, base_split = Signal(ADDR_BITS), Signal(ADDR_BITS)
        base2, base2_split = Signal(ADDR_BITS), Signal(ADDR_BITS)
        first_reg = Signal(range(MAX_REGS + 1))
        wrap = Signal()                 # the current row is its period's last
        m.d.comb += wrap.eq(row.last_step & row.last_beat)
        f = self.first
        with m.If(self.start):
            m.d.sync += [self.var.eq(f.var), row.eq(f.row), nxt_var.eq(f.var_next), nxt.eq(f.row_next),
                         cls.eq(self.cls), period.eq(0), periods.eq(self.periods),
                         base.eq(f.base), base_split.eq(f.base_split), base2.eq(f.base2),
                         base2_split.eq(f.base2_split), first_reg.eq(0), self.final.eq(f.final),
                         self.var_hot.eq(_hot_first(f.cls_hot, self.banks)),
                         *[self.addr[k].eq(f.addr[k]) for k in range(ports)],
                         self.reg.eq(f.row.reg), self.reg2.eq(f.row.reg2)]
        with m.Elif(self.advance):
            # the next row, in this period or (after a wrap) the next
            b, bs = Mux(wrap, base2, base), Mux(wrap, base2_split, base_split)
            period_next = Mux(wrap, period + 1, period)
            first_next = Mux(wrap, first_reg + period_regs[cls], first_reg)
            m.d.sync += [self.var.eq(nxt_var), row.eq(nxt), nxt_var.eq(var_after), nxt.eq(row_after),
                         self.var_hot.eq(_hot_successor(self.var_hot, self.banks)),
                         *[self.addr[k].eq(Mux(nxt[f"half{k}"], bs, b) + nxt[f"off{k}"]) for k in range(ports)],
                         self.final.eq(nxt.last_step & nxt.last_beat & (period_next == periods - 1)),
                         self.reg.eq(first_next + nxt.reg), self.reg2.eq(first_next + nxt.reg2)]
            with m.If(wrap):
                m.d.sync += [period.eq(period + 1), first_reg.eq(first_next),
                             base.eq(base2), base_split.eq(base2_split),
                             base2.eq(base2 + period_cols[cls]), base2_split.eq(base2_split + period_cols[cls])]

        m.d.comb += [self.on.eq(row.on), self.last_step.eq(row.last_step), self.two.eq(row.two)]
        return m
