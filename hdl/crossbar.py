"""The bank crossbar datapath: the scheduler of one window of rows, each quad's line (its
block-RAM address), the write crossbar (each quad takes the row it granted) and the landing
crossbar (each window slot takes its quad's row read a cycle earlier).

The unit builds its banks around this component, and ``synth/run.py`` synthesizes it alone
for the crossbar's own clock, so both measure the same logic.
"""

from __future__ import annotations

from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .mux import mux_tree
from .params import ROW_BYTES
from .scheduler import BankScheduler

__all__ = ["BankCrossbar"]


class BankCrossbar(wiring.Component):
    """Combinational: which rows of the window the bank quads serve this cycle, and the
    128-bit rows they write and deliver, through binary multiplexer trees.

    Parameters
    ----------
    rows : int
        Rows (slots) of the window.
    quads : int
        Bank quads.
    line_bits : int
        Width of a line index within a quad.
    pairs : bool
        The scheduler takes the row comparisons as inputs (:class:`BankScheduler`).

    Members
    -------
    eligible, quad, line, same_quad, same_line, served
        As :class:`~tensorlsu.hdl.scheduler.BankScheduler`.
    access : Out(quads)
        The quad serves a row this cycle.
    addr : Out(ArrayLayout(line_bits, quads))
        Each quad's granted line.
    rows : In(ArrayLayout(128, rows))
        The window's rows to store; ``write[q]`` is the row quad ``q`` granted.
    write : Out(ArrayLayout(128, quads))
    quad_data : In(ArrayLayout(128, quads))
        The rows the quads read; ``land[j]`` is the one of quad ``land_quad[j]``.
    land_quad : In(ArrayLayout(quad_bits, rows))
    land : Out(ArrayLayout(128, rows))
    """

    def __init__(self, *, rows: int = 8, quads: int = 8, line_bits: int = 7, pairs: bool = True):
        bits, qb = 8 * ROW_BYTES, max(1, (quads - 1).bit_length())
        self.nrows, self.quads, self.line_bits, self.pairs = rows, quads, line_bits, pairs
        members = {"eligible": In(rows), "quad": In(data.ArrayLayout(qb, rows)),
                   "line": In(data.ArrayLayout(line_bits, rows)), "served": Out(rows),
                   "access": Out(quads), "addr": Out(data.ArrayLayout(line_bits, quads)),
                   "rows": In(data.ArrayLayout(bits, rows)), "write": Out(data.ArrayLayout(bits, quads)),
                   "quad_data": In(data.ArrayLayout(bits, quads)), "land_quad": In(data.ArrayLayout(qb, rows)),
                   "land": Out(data.ArrayLayout(bits, rows))}
        if pairs:
            npairs = max(1, rows * (rows - 1) // 2)
            members.update({"same_quad": In(npairs), "same_line": In(npairs)})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        R, Q = self.nrows, self.quads
        sched = m.submodules.sched = BankScheduler(rows=R, quads=Q, line_bits=self.line_bits, pairs=self.pairs)
        m.d.comb += [sched.eligible.eq(self.eligible), self.served.eq(sched.served)]
        m.d.comb += [sched.quad[j].eq(self.quad[j]) for j in range(R)]
        m.d.comb += [sched.line[j].eq(self.line[j]) for j in range(R)]
        if self.pairs:
            m.d.comb += [sched.same_quad.eq(self.same_quad), sched.same_line.eq(self.same_line)]
        rows = [self.rows[j] for j in range(R)]
        quads = [self.quad_data[q] for q in range(Q)]
        for q in range(Q):
            g = sched.grant[q]
            m.d.comb += [self.access[q].eq(g.valid), self.addr[q].eq(g.line),
                         self.write[q].eq(mux_tree(g.row, rows))]
        m.d.comb += [self.land[j].eq(mux_tree(self.land_quad[j], quads)) for j in range(R)]
        return m
