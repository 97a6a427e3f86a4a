"""The second pass of a pair: its rows on the bank quads the first pass leaves free, and its
landing crossbar."""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..params import ROW_BITS
from .crossbar import land_rows
from .scheduler import BankScheduler

__all__ = ["PairCrossbar"]


class PairCrossbar(wiring.Component):
    """Which rows of the second pass of a pair the bank quads serve beside the first pass's,
    and the rows they deliver (:attr:`~tensorlsu.hdl.params.Params.pair_passes`).

    A quad the first pass reads this cycle serves nothing of the second; each other quad
    serves its lowest eligible row of the second pass and every row with that line, as
    :class:`~tensorlsu.hdl.smem.scheduler.BankScheduler` does. So while both passes are
    served, every quad holding a row of either reads one of its lines each cycle, and the pair
    takes as many cycles as its busiest quad has distinct lines (formal/specs.py, ``pair``).
    This implementation assumes the two passes hold no 16-byte row in common, which is so for
    every two-pass fragment at every legal stride (lines of 32 bytes or more, at least a line
    apart): a row of both would be read once for each.

    Combinational, except the landing: ``land[j]`` is the row slot ``j``'s quad read
    ``read_latency`` cycles ago (the quad registered, as in
    :class:`~tensorlsu.hdl.smem.crossbar.BankCrossbar`).

    Parameters
    ----------
    rows, quads, line_bits : int
        As :class:`~tensorlsu.hdl.smem.scheduler.BankScheduler`.

    Members
    -------
    eligible : In(rows)
        Rows of the second pass that may be served this cycle.
    quad, line : In(ArrayLayout(quad_bits, rows)), In(ArrayLayout(line_bits, rows))
        Each row's bank quad and line within it.
    first_access : In(quads)
        The quads the first pass reads this cycle.
    served : Out(rows)
        Rows served this cycle.
    access : Out(quads)
        The quads that read for the second pass alone; ``addr``: the line each reads.
    addr : Out(ArrayLayout(line_bits, quads))
    quad_data : In(ArrayLayout(128, quads))
        The rows the quads read ``read_latency`` cycles ago.
    land : Out(ArrayLayout(128, rows))
    """

    def __init__(self, *, rows: int = 32, quads: int = 8, line_bits: int = 7, read_latency: int = 1):
        qb = max(1, (quads - 1).bit_length())
        self.nrows, self.quads, self.line_bits, self.read_latency = rows, quads, line_bits, read_latency
        super().__init__({
            "eligible": In(rows), "quad": In(data.ArrayLayout(qb, rows)),
            "line": In(data.ArrayLayout(line_bits, rows)),
            "first_access": In(quads),
            "served": Out(rows), "access": Out(quads), "addr": Out(data.ArrayLayout(line_bits, quads)),
            "quad_data": In(data.ArrayLayout(ROW_BITS, quads)), "land": Out(data.ArrayLayout(ROW_BITS, rows))})

    def elaborate(self, platform):
        m = Module()
        R, Q = self.nrows, self.quads
        sched = m.submodules.sched = BankScheduler(rows=R, quads=Q, line_bits=self.line_bits)
        # per row: the first pass reads its quad this cycle
        taken = Signal(R)
        m.d.comb += [taken[j].eq(self.first_access.bit_select(self.quad[j], 1)) for j in range(R)]
        m.d.comb += [sched.eligible.eq(self.eligible & ~taken), self.served.eq(sched.served)]
        m.d.comb += [sched.quad[j].eq(self.quad[j]) for j in range(R)]
        m.d.comb += [sched.line[j].eq(self.line[j]) for j in range(R)]
        m.d.comb += [self.access[q].eq(sched.grant[q].valid) for q in range(Q)]
        m.d.comb += [self.addr[q].eq(sched.grant[q].line) for q in range(Q)]
        land_rows(m, [self.quad[j] for j in range(R)], [self.quad_data[q] for q in range(Q)],
                  [self.land[j] for j in range(R)], self.read_latency)
        return m
