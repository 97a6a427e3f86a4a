"""Bank scheduler: which rows the banks serve this cycle.

Each bank quad serves at most one distinct row address per cycle; every requesting row with
that address is served by the same access (broadcast). Rows are requested through
``eligible``; the policy (which matrices may share a cycle) is applied by the caller.
"""

from __future__ import annotations

from amaranth import Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

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
    """

    def __init__(self, *, rows: int = 32, quads: int = 8, line_bits: int = 7):
        if rows < 1 or quads < 1 or line_bits < 1:
            raise ValueError("rows, quads and line_bits must be positive")
        self.rows, self.quads, self.line_bits = rows, quads, line_bits
        qbits = max(1, (quads - 1).bit_length())
        rbits = max(1, (rows - 1).bit_length())
        grant = data.StructLayout({"valid": 1, "row": unsigned(rbits), "line": unsigned(line_bits)})
        super().__init__({
            "eligible": In(rows),
            "quad": In(data.ArrayLayout(unsigned(qbits), rows)),
            "line": In(data.ArrayLayout(unsigned(line_bits), rows)),
            "served": Out(rows),
            "grant": Out(data.ArrayLayout(grant, quads)),
        })

    def elaborate(self, platform):
        m = Module()
        served = []
        for q in range(self.quads):
            g = self.grant[q]
            bits = [self.eligible[i] & (self.quad[i] == q) for i in range(self.rows)]
            # lowest requesting row wins (priority encoder, highest index assigned first)
            for i in reversed(range(self.rows)):
                with m.If(bits[i]):
                    m.d.comb += [g.valid.eq(1), g.row.eq(i), g.line.eq(self.line[i])]
        for i in range(self.rows):
            hit = Signal(name=f"hit{i}")
            for q in range(self.quads):
                with m.If(self.quad[i] == q):
                    m.d.comb += hit.eq(self.grant[q].valid & (self.grant[q].line == self.line[i]))
            served.append(self.eligible[i] & hit)
        for i, s in enumerate(served):
            m.d.comb += self.served[i].eq(s)
        return m
