"""The global fetch stage's two pass contexts: slot addresses, which slots are requested and
in, the rows the read beats brought, and a bus error."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..lib.mux import mux_tree
from ..params import ROW_BITS, ROW_BYTES, Params
from ..pipeline.records import ADDR_BITS, pass_layout
from .axi import AxiResp, line_bits

__all__ = ["FetchContexts"]


class FetchContexts(wiring.Component):
    """Two pass contexts, prefix ``g_c<k>_``: the pass being served and the next one, fetched
    ahead. A pass's slots hold 16-byte chunks at 32-bit addresses.

    Each read beat (any id order) fills, in its context, every used slot whose row lies in its
    line; a beat with SLVERR or DECERR marks the context refused (the first error stays). A
    request marks the slots it covers requested. Starting a context (``start``, context
    ``start_ctx``) takes the pass ``pass_``: nothing requested or in yet; it wins over a beat
    or a request of the same cycle.

    Latency: a beat's rows are in the context's registers the cycle after it moves.

    Members
    -------
    pass_, start, start_ctx : In
        The pass a context takes, when, and which context.
    r_fire, rdata, rresp, beat_line, beat_ctx : In
        A read beat moves: its data, response, line and context.
    ar, sel_ctx, covered : In
        A request moves for context ``sel_ctx``, covering the slots ``covered``.
    used, pending, got : Out(lanes).array(2)
        Per context: the pass's slots, those not yet requested, those in.
    err : Out(Error).array(2)
    line : Out(line index).array(2, lanes)
        Each slot's data-width line.
    rows : Out(ROW_BITS).array(2, lanes)
        Each slot's row as the beat brought it; ``upper``: the chunk starts in the upper half of
        its row (an 8-byte line), so it lands with its halves swapped.
    """

    def __init__(self, params: Params):
        self.params = p = params
        R = p.lanes
        lb, lw = line_bits(p)
        super().__init__({
            "pass_": In(pass_layout(p)), "start": In(1), "start_ctx": In(1),
            "r_fire": In(1), "rdata": In(p.axi_data_bits), "rresp": In(2), "beat_line": In(lw), "beat_ctx": In(1),
            "ar": In(1), "sel_ctx": In(1), "covered": In(R),
            "used": Out(R).array(2), "pending": Out(R).array(2), "got": Out(R).array(2), "err": Out(Error).array(2),
            "line": Out(lw).array(2, R), "rows": Out(ROW_BITS).array(2, R), "upper": Out(1).array(2, R)})

    def elaborate(self, platform):
        m = Module()
        p, R = self.params, self.params.lanes
        lb, _ = line_bits(p)
        addr = [[Signal(ADDR_BITS, name=f"g_c{c}_addr{s}", reset_less=True) for s in range(R)] for c in range(2)]
        rows = [[Signal(ROW_BITS, name=f"g_c{c}_row{s}", reset_less=True) for s in range(R)] for c in range(2)]
        beat_rows = [self.rdata[ROW_BITS * k:ROW_BITS * (k + 1)] for k in range(p.axi_data_bits // 8 // ROW_BYTES)]
        # a beat belongs to one context: each slot selects its row and compares its line once,
        # with the beat's context's address, and only that context's registers take it
        beat_addr = [Signal(ADDR_BITS, name=f"g_beat_addr{s}") for s in range(R)]
        beat_row = [Signal(ROW_BITS, name=f"g_beat_row{s}") for s in range(R)]
        in_beat = Signal(R, name="g_in_beat")
        for s in range(R):
            m.d.comb += [beat_addr[s].eq(Mux(self.beat_ctx, addr[1][s], addr[0][s])),
                         beat_row[s].eq(mux_tree(beat_addr[s][4:lb], beat_rows) if lb > 4 else beat_rows[0]),
                         in_beat[s].eq(beat_addr[s][lb:] == self.beat_line)]
        for c in range(2):
            used, pending, got, err = self.used[c], self.pending[c], self.got[c], self.err[c]
            m.d.comb += [self.line[c][s].eq(addr[c][s][lb:]) for s in range(R)]
            m.d.comb += [self.upper[c][s].eq(addr[c][s][3]) for s in range(R)]
            m.d.comb += [self.rows[c][s].eq(rows[c][s]) for s in range(R)]
            beat = self.r_fire & (self.beat_ctx == c)
            hit = Signal(R, name=f"g_c{c}_hit")
            m.d.comb += hit.eq(beat.replicate(R) & used & in_beat)
            for s in range(R):
                with m.If(hit[s]):
                    m.d.sync += rows[c][s].eq(beat_row[s])
            with m.If(beat & (self.rresp >= AxiResp.SLVERR) & (err == Error.NONE)):
                m.d.sync += err.eq(Mux(self.rresp == AxiResp.DECERR, Error.DECERR, Error.SLVERR))
            m.d.sync += [pending.eq(Mux(self.ar & (self.sel_ctx == c), pending & ~self.covered, pending)),
                         got.eq(got | hit)]
            with m.If(self.start & (self.start_ctx == c)):
                m.d.sync += [used.eq(self.pass_.consts.used), pending.eq(self.pass_.consts.used), got.eq(0),
                             err.eq(Error.NONE)]
                m.d.sync += [addr[c][s].eq(self.pass_.addr[s]) for s in range(R)]
        return m
