"""The global fetch stage's two pass contexts: slot addresses, which slots are requested and
in, and a bus error."""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import Params
from ..pipeline.records import ADDR_BITS, pass_layout
from .axi import AxiResp, line_bits

__all__ = ["FetchContexts"]


class FetchContexts(wiring.Component):
    """Two pass contexts, prefix ``g_c<k>_``: the pass being served and the next one, fetched
    ahead. A pass's slots hold 16-byte chunks at 32-bit addresses; their rows are kept by the
    row store (:class:`~tensorlsu.hdl.gmem.rows.FetchRows`).

    A request marks the slots it covers requested; the row store's writes mark slots in, and a
    beat with SLVERR or DECERR marks its context refused (the first error stays). Starting a
    context (``start``, context ``start_ctx``) takes the pass ``pass_``: nothing requested or
    in yet; it wins over a request or a write of the same cycle.

    Latency: the marks are in the registers the cycle after.

    Members
    -------
    pass_, start, start_ctx : In
        The pass a context takes, when, and which context.
    filling, filled, fill_ctx, fill_resp : In
        A beat is written (``filling``) into the slots ``filled`` of context ``fill_ctx``, with
        the response ``fill_resp``.
    ar, sel_ctx, covered : In
        A request moves for context ``sel_ctx``, covering the slots ``covered``.
    used, pending, got : Out(lanes).array(2)
        Per context: the pass's slots, those not yet requested, those in.
    err : Out(Error).array(2)
    line : Out(line index).array(2, lanes)
        Each slot's data-width line; ``row``: its row in the line; ``upper``: its chunk starts
        in the upper half of the row (an 8-byte line), so it lands with its halves swapped.
    """

    def __init__(self, params: Params):
        self.params = p = params
        R = p.lanes
        lb, lw = line_bits(p)
        super().__init__({
            "pass_": In(pass_layout(p)), "start": In(1), "start_ctx": In(1),
            "filling": In(1), "filled": In(R), "fill_ctx": In(1), "fill_resp": In(2),
            "ar": In(1), "sel_ctx": In(1), "covered": In(R),
            "used": Out(R).array(2), "pending": Out(R).array(2), "got": Out(R).array(2), "err": Out(Error).array(2),
            "line": Out(lw).array(2, R), "row": Out(max(1, lb - 4)).array(2, R), "upper": Out(1).array(2, R)})

    def elaborate(self, platform):
        m = Module()
        p, R = self.params, self.params.lanes
        lb, _ = line_bits(p)
        addr = [[Signal(ADDR_BITS, name=f"g_c{c}_addr{s}", reset_less=True) for s in range(R)] for c in range(2)]
        for c in range(2):
            used, pending, got, err = self.used[c], self.pending[c], self.got[c], self.err[c]
            for s in range(R):
                m.d.comb += [self.line[c][s].eq(addr[c][s][lb:]), self.upper[c][s].eq(addr[c][s][3]),
                             self.row[c][s].eq(addr[c][s][4:lb] if lb > 4 else 0)]
            fill = self.filling & (self.fill_ctx == c)
            with m.If(fill & (self.fill_resp >= AxiResp.SLVERR) & (err == Error.NONE)):
                m.d.sync += err.eq(Mux(self.fill_resp == AxiResp.DECERR, Error.DECERR, Error.SLVERR))
            m.d.sync += [pending.eq(Mux(self.ar & (self.sel_ctx == c), pending & ~self.covered, pending)),
                         got.eq(got | Mux(fill, self.filled, 0))]
            with m.If(self.start & (self.start_ctx == c)):
                m.d.sync += [used.eq(self.pass_.consts.used), pending.eq(self.pass_.consts.used), got.eq(0),
                             err.eq(Error.NONE)]
                m.d.sync += [addr[c][s].eq(self.pass_.addr[s]) for s in range(R)]
        return m
