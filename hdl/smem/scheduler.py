"""Bank scheduler: which rows the banks serve this cycle.

Each bank quad serves at most one distinct row address per cycle; every requesting row with
that address is served by the same access (broadcast). Rows are requested through
``eligible``; the policy (which matrices may share a cycle) is applied by the caller.
"""

from __future__ import annotations

import operator
from functools import reduce

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.lowest import lowest
from ..lib.mux import mux_tree

__all__ = ["BankScheduler"]


class BankScheduler(wiring.Component):
    """Combinational selection of one row address per bank quad.

    Parameters
    ----------
    rows : int
        Row requests (32: one per thread).
    quads : int
        Bank quads (8 for 32 banks of 4 bytes).
    line_bits : int
        Width of a row's line index within its quad.
    pairs : bool
        Take the row comparisons as inputs (``same_quad``, ``same_line``), computed ahead of
        time by the caller, instead of comparing quads and lines here: the decision then
        costs a few gates after the eligibility, which is what a pipelined caller needs.

    Members
    -------
    eligible : In(rows)
        Rows that may be served this cycle.
    quad : In(ArrayLayout(quad_bits, rows))
        The bank quad of each row.
    line : In(ArrayLayout(line_bits, rows))
        The line of each row within its quad.
    served : Out(rows)
        Rows served this cycle (every eligible row sharing a chosen address).
    grant : Out(ArrayLayout(StructLayout{valid, row, line}, quads))
        Per quad: whether it is accessed, the lowest eligible row chosen, and its line.
    same_quad, same_line : In(rows * (rows - 1) // 2), only with ``pairs``
        For each pair of rows ``j < i`` (bit ``i * (i - 1) // 2 + j``): whether they lie in
        one quad, and whether they also have one line (one address).
    """

    def __init__(self, *, rows: int = 32, quads: int = 8, line_bits: int = 7, pairs: bool = False):
        if rows < 1 or quads < 1 or line_bits < 1:
            raise ValueError("rows, quads and line_bits must be positive")
        self.rows, self.quads, self.line_bits, self.pairs = rows, quads, line_bits, pairs
        qbits = max(1, (quads - 1).bit_length())
        rbits = max(1, (rows - 1).bit_length())
        grant = data.StructLayout({"valid": 1, "row": unsigned(rbits), "line": unsigned(line_bits)})
        members = {
            "eligible": In(rows),
            "quad": In(data.ArrayLayout(unsigned(qbits), rows)),
            "line": In(data.ArrayLayout(unsigned(line_bits), rows)),
            "served": Out(rows),
            "grant": Out(data.ArrayLayout(grant, quads)),
        }
        if pairs:
            npairs = max(1, rows * (rows - 1) // 2)
            members.update({"same_quad": In(npairs), "same_line": In(npairs)})
        super().__init__(members)

    @staticmethod
    def pair(i: int, j: int) -> int:
        """Bit of the pair of rows ``j < i`` in ``same_quad`` / ``same_line``."""
        return i * (i - 1) // 2 + j

    def elaborate(self, platform):
        m = Module()
        R, Q = self.rows, self.quads
        # one-hot decode of each row's quad
        in_quad = [[Signal(name=f"row{i}_in_q{q}") for q in range(Q)] for i in range(R)]
        for i in range(R):
            m.d.comb += [in_quad[i][q].eq(self.quad[i] == q) for q in range(Q)]
        if self.pairs:
            return self._elaborate_pairs(m, in_quad)
        for q in range(Q):
            self._grant(m, q, Cat(*[self.eligible[i] & in_quad[i][q] for i in range(R)]))
        for i in range(R):
            # every eligible row whose quad reads its line is served by that access (broadcast)
            hit = 0
            for q in range(Q):
                hit = hit | (in_quad[i][q] & self.grant[q].valid & (self.grant[q].line == self.line[i]))
            m.d.comb += self.served[i].eq(self.eligible[i] & hit)
        return m

    def _grant(self, m, q, req):
        """Quad ``q`` serves the lowest of the rows ``req``: a priority encoder, then the line
        through a multiplexer tree (the slices' wide multiplexers), which is shallower than
        isolating the lowest bit and AND-OR-ing the lines (one fan-out per row and quad)."""
        g = self.grant[q]
        found, index = lowest([req[i] for i in range(self.rows)])
        row = Signal.like(g.row, name=f"row{q}")
        m.d.comb += row.eq(index)
        m.d.comb += [g.valid.eq(found), g.row.eq(row),
                     g.line.eq(mux_tree(row, [self.line[i] for i in range(self.rows)]))]

    def _elaborate_pairs(self, m, in_quad):
        R, Q = self.rows, self.quads
        el, sq, sl = self.eligible, self.same_quad, self.same_line
        # a row is its quad's choice when no lower eligible row shares the quad
        first = Signal(R)
        for i in range(R):
            lower = [el[j] & sq[self.pair(i, j)] for j in range(i)]
            m.d.comb += first[i].eq(el[i] & ~Cat(*lower).any() if lower else el[i])
        for q in range(Q):
            # the quad's choice is one-hot in `first`: its line is an AND-OR of the rows' lines
            # (no priority encoder and index multiplexer after the eligibility, which a macro's
            # address waits on)
            mine = [first[i] & in_quad[i][q] for i in range(R)]
            g = self.grant[q]
            # (whether the quad is accessed needs no choice: a write enable waits on it)
            m.d.comb += [g.valid.eq(Cat(*[el[i] & in_quad[i][q] for i in range(R)]).any()),
                         g.row.eq(reduce(operator.or_, [Mux(mine[i], i, 0) for i in range(R)])),
                         g.line.eq(reduce(operator.or_, [Mux(mine[i], self.line[i], 0) for i in range(R)]))]
        for i in range(R):
            # served with its quad's choice: that row, or a lower one with the same address
            same = [first[j] & sl[self.pair(i, j)] for j in range(i)]
            m.d.comb += self.served[i].eq(first[i] | (el[i] & Cat(*same).any()) if same else first[i])
        return m
