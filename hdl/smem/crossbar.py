"""The bank crossbar datapath: the scheduler of one window of rows, each quad's line (its
block-RAM address), the write crossbar (each quad takes the row it writes) and the landing
crossbar (each window slot takes its quad's row read a cycle earlier).

The write crossbar's selects are registers. A store writes distinct rows (two threads on one
row are refused before the banks), so each quad writes the rows of the window that lie in it
one per cycle, lowest first: the order the scheduler grants them in. The crossbar tracks those
rows per quad and registers the next one's index a cycle ahead, so the 128-bit multiplexers'
selects come from flip-flops, not from the scheduler.

The unit builds its banks around this component, and ``synth/run.py`` synthesizes it alone
for the crossbar's own clock, so both measure the same logic.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.lowest import lowest
from ..lib.mux import mux_tree
from ..params import ROW_BITS
from .scheduler import BankScheduler

__all__ = ["BankCrossbar", "land_rows"]


class BankCrossbar(wiring.Component):
    """Which rows of the window the bank quads serve this cycle, and the 128-bit rows they
    write and deliver, through binary multiplexer trees.

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
        As :class:`~tensorlsu.hdl.smem.scheduler.BankScheduler`.
    access : Out(quads)
        The quad serves a row this cycle.
    addr : Out(ArrayLayout(line_bits, quads))
        Each quad's granted line.
    rows : In(ArrayLayout(128, rows))
        The window's rows to store; ``write[q]`` is the row quad ``q`` writes: the lowest of
        the window's rows in it (``take_rows`` or ``next_rows``) not yet written.
    write : Out(ArrayLayout(128, quads))
    take, take_quad, take_rows : In(1), In(ArrayLayout(quad_bits, rows)), In(rows)
        A new window comes next cycle: the quad of each of its rows and the rows it stores.
    advance, next_quad, next_rows : the same, for a second source of windows
        (the unit: ``take`` for the pass F takes, ``advance`` for F's next window); each
        source's next select is encoded from its own rows, and the strobes only choose.
    step : In(1)
        The window is written this cycle: each quad wrote its row (else it writes it again).
    quad_data : In(ArrayLayout(128, quads))
        The rows the quads read ``read_latency`` cycles ago; ``land[j]`` is the one of the
        quad slot ``j`` read then (``quad[j]`` as of then).
    land : Out(ArrayLayout(128, rows))
    """

    #: copies of each quad's write select, one per slice of the row: no flip-flop drives all
    #: 128 bits' multiplexers
    SLICES = 4

    def __init__(self, *, rows: int = 8, quads: int = 8, line_bits: int = 7, pairs: bool = True,
                 read_latency: int = 1):
        bits, qb = ROW_BITS, max(1, (quads - 1).bit_length())
        self.nrows, self.quads, self.line_bits, self.pairs = rows, quads, line_bits, pairs
        self.read_latency = read_latency
        members = {"eligible": In(rows), "quad": In(data.ArrayLayout(qb, rows)),
                   "line": In(data.ArrayLayout(line_bits, rows)), "served": Out(rows),
                   "access": Out(quads), "addr": Out(data.ArrayLayout(line_bits, quads)),
                   "rows": In(data.ArrayLayout(bits, rows)), "write": Out(data.ArrayLayout(bits, quads)),
                   "quad_data": In(data.ArrayLayout(bits, quads)),
                   "land": Out(data.ArrayLayout(bits, rows)),
                   "take": In(1), "take_quad": In(data.ArrayLayout(qb, rows)), "take_rows": In(rows),
                   "advance": In(1), "next_quad": In(data.ArrayLayout(qb, rows)), "next_rows": In(rows),
                   "step": In(1)}
        if pairs:
            npairs = max(1, rows * (rows - 1) // 2)
            members.update({"same_quad": In(npairs), "same_line": In(npairs)})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        R, Q = self.nrows, self.quads
        bits = ROW_BITS
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
            m.d.comb += [self.access[q].eq(g.valid), self.addr[q].eq(g.line)]
            # the rows of the window in this quad still to write, and the lowest one's index
            left = Signal(R, name=f"left{q}")
            # one copy of the select per slice of the row (kept through synthesis), so that no
            # flip-flop drives all 128 bits' multiplexers across the chip
            sels = [Signal.like(g.row, name=f"wsel{q}_{k}", attrs={"keep": 1}) for k in range(self.SLICES)]
            # ... and one more copy for the next step's logic alone, placed next to it (the
            # copies of the multiplexers are spread out over the row's slices)
            cur = Signal.like(g.row, name=f"wsel{q}", attrs={"keep": 1})
            taken = Signal(R, name=f"left{q}_taken")
            advanced = Signal(R, name=f"left{q}_advanced")
            stepped = Signal(R, name=f"left{q}_stepped")
            m.d.comb += [taken.eq(Cat(*[self.take_rows[j] & (self.take_quad[j] == q) for j in range(R)])),
                         advanced.eq(Cat(*[self.next_rows[j] & (self.next_quad[j] == q) for j in range(R)])),
                         stepped.eq(Cat(*[left[j] & (cur != j) for j in range(R)]))]
            # each case's next index is encoded on its own and chosen last, so the strobes
            # (late in the unit's cycle) only pick one
            i_taken, i_advanced, i_stepped = (lowest([v[j] for j in range(R)])[1]
                                              for v in (taken, advanced, stepped))
            with m.If(self.take):
                m.d.sync += [left.eq(taken)] + [sel.eq(i_taken) for sel in sels + [cur]]
            with m.Elif(self.advance):
                m.d.sync += [left.eq(advanced)] + [sel.eq(i_advanced) for sel in sels + [cur]]
            with m.Elif(self.step):
                m.d.sync += [left.eq(stepped)] + [sel.eq(i_stepped) for sel in sels + [cur]]
            parts = []
            for k, sel in enumerate(sels):
                lo, hi = k * bits // len(sels), (k + 1) * bits // len(sels)
                parts.append(mux_tree(sel, [r[lo:hi] for r in rows]))
            m.d.comb += self.write[q].eq(Cat(*parts))
        land_rows(m, [self.quad[j] for j in range(R)], quads, [self.land[j] for j in range(R)], self.read_latency)
        return m


def land_rows(m, quad, quad_data, land, read_latency: int = 1):
    """The landing crossbar: ``land[j]`` takes the row read ``read_latency`` cycles ago by the
    quad slot ``j`` named then (``quad[j]``), through a binary multiplexer tree."""
    for j, (q, out) in enumerate(zip(quad, land)):
        # the slot's quad as of the read. One copy: copies per slice made an event-driven
        # simulator (Icarus) six times slower, as the read data change every cycle and each
        # slice's update wakes the whole row again.
        lq = q
        for k in range(read_latency):
            lq_k = Signal.like(q, name=f"land_quad{j}" + (f"_{k}" if k < read_latency - 1 else ""))
            m.d.sync += lq_k.eq(lq)
            lq = lq_k
        m.d.comb += out.eq(mux_tree(lq, quad_data))
