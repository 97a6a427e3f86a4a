"""The global fetch stage's pass contexts: slot addresses, which slots are requested and in, a
bus error, and which contexts hold a pass."""

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
    """``axi_contexts`` pass contexts in a ring, prefix ``g_c<k>_``: the pass being served and
    the global passes queued behind it, each fetched from the cycle it entered the pass queue.
    A pass's slots hold 16-byte chunks at 32-bit addresses; their rows are kept by the row
    store (:class:`~tensorlsu.hdl.gmem.rows.FetchRows`).

    A global pass not refused by the checks takes context ``alloc`` as it enters the pass
    queue (``admit``): nothing requested or in yet; that wins over a request or a write of the
    same cycle. Passes leave the queue in order, so the contexts are served in ring order
    (``cur``) and freed in it (``free``: the served pass finishes). A request marks the slots
    it covers requested; the row store's writes mark slots in, and a beat with SLVERR or
    DECERR marks its context refused (the first error stays).

    A 64-chunk fragment's two passes take neighbouring contexts; the second is the first's
    twin (``twin``). A request of the first also covers the twin's slots in its lines
    (``covered_twin``): they are marked requested and borrowed (``borrowed``), and the row
    store fills them from the first's beats, so a line both passes touch is read once (when
    the twin entered the queue before that request left). A refusing beat that fills twin slots
    refuses the twin too.

    Latency: the marks are in the registers the cycle after. ``room`` is a register's decode.

    Members
    -------
    enter, admit, pass_ : In
        A pass enters the pass queue this cycle; it takes a context (the caller checks
        ``room``); the pass.
    free, cur : In
        The served pass, in context ``cur``, finishes this cycle.
    room : Out(1)
        A context is free.
    alloc : Out(range(2 * axi_contexts))
        Passes admitted, modulo twice the contexts: its low bits name the context the next
        admitted pass takes; the extra bit tells a full ring from an empty one.
    filling, filled, fill_ctx, fill_resp : In
        A beat is written (``filling``) into the slots ``filled`` of context ``fill_ctx``, with
        the response ``fill_resp``.
    ar, sel_ctx, covered, covered_twin : In
        A request moves for context ``sel_ctx``, covering its slots ``covered`` and the slots
        ``covered_twin`` of the next context (its twin).
    fill_twin : In(lanes)
        The slots of the next context after ``fill_ctx`` (its twin) the beat fills.
    used, pending, got : Out(lanes).array(axi_contexts)
        Per context: the pass's slots, those not yet requested, those in.
    complete : Out(1).array(axi_contexts)
        Per context: every slot requested and in (a register, so that the landing reads one
        bit rather than reducing three vectors: from the slots in as they are written, and the
        slots requested as of the cycle before).
    err : Out(Error).array(axi_contexts)
    twin : Out(1).array(axi_contexts)
        The context holds the second pass of the instruction whose first is in the context
        before it.
    borrowed : Out(lanes).array(axi_contexts)
        The slots that the context before it fetches.
    line : Out(line index).array(axi_contexts, lanes)
        Each slot's data-width line; ``row``: its row in the line; ``upper``: its chunk starts
        in the upper half of the row (an 8-byte line), so it lands with its halves swapped.
    """

    def __init__(self, params: Params):
        self.params = p = params
        R, C = p.lanes, p.axi_contexts
        lb, lw = line_bits(p)
        super().__init__({
            "enter": In(1), "admit": In(1), "pass_": In(pass_layout(p)), "free": In(1), "cur": In(range(C)),
            "room": Out(1), "alloc": Out(range(2 * C)), "admit_twin": Out(1),
            "filling": In(1), "filled": In(R), "fill_ctx": In(range(C)), "fill_resp": In(2),
            "ar": In(1), "sel_ctx": In(range(C)), "covered": In(R), "covered_twin": In(R), "fill_twin": In(R),
            "used": Out(R).array(C), "pending": Out(R).array(C), "got": Out(R).array(C),
            "complete": Out(1).array(C), "err": Out(Error).array(C), "twin": Out(1).array(C),
            "borrowed": Out(R).array(C),
            "line": Out(lw).array(C, R), "row": Out(max(1, lb - 4)).array(C, R), "upper": Out(1).array(C, R)})

    def elaborate(self, platform):
        m = Module()
        p, R, C = self.params, self.params.lanes, self.params.axi_contexts
        lb, _ = line_bits(p)
        # only the address bits above the chunk's half are kept: line, row and upper half
        addr = [[Signal(range(1 << (ADDR_BITS - 3)), name=f"g_c{c}_addr{s}", reset_less=True) for s in range(R)]
                for c in range(C)]
        live = Signal(C, name="g_live")
        at = self.alloc[:(C - 1).bit_length()]           # the context the next pass takes
        m.d.comb += self.room.eq(~live.all())
        with m.If(self.admit):
            m.d.sync += self.alloc.eq(self.alloc + 1)
        m.d.sync += live.eq((live & ~Mux(self.free, 1 << self.cur, 0)) | Mux(self.admit, 1 << at, 0))
        # the last pass to enter the queue is the first of two and took a context: the next
        # one is its twin
        consts = self.pass_.consts
        first_of_two = Signal(name="g_first_of_two")
        with m.If(self.enter):
            m.d.sync += first_of_two.eq(self.admit & consts.lastpass & ~consts.final)
        m.d.comb += self.admit_twin.eq(consts.lastpass & consts.final & first_of_two)
        bad = self.fill_resp >= AxiResp.SLVERR
        refusal = Mux(self.fill_resp == AxiResp.DECERR, Error.DECERR, Error.SLVERR)
        for c in range(C):
            used, pending, got, err = self.used[c], self.pending[c], self.got[c], self.err[c]
            twin, borrowed = self.twin[c], self.borrowed[c]
            before = (c - 1) % C                     # the context whose twin c may be
            for s in range(R):
                m.d.comb += [self.line[c][s].eq(addr[c][s][lb - 3:]), self.upper[c][s].eq(addr[c][s][0]),
                             self.row[c][s].eq(addr[c][s][1:lb - 3] if lb > 4 else 0)]
            fill = self.filling & (self.fill_ctx == c)
            fill_as_twin = self.filling & (self.fill_ctx == before) & twin
            with m.If(((fill | (fill_as_twin & self.fill_twin.any())) & bad) & (err == Error.NONE)):
                m.d.sync += err.eq(refusal)
            ar_as_twin = self.ar & (self.sel_ctx == before) & twin
            got_next = Signal(R, name=f"g_c{c}_got_next")
            m.d.comb += got_next.eq(got | Mux(fill, self.filled, 0) | Mux(fill_as_twin, self.fill_twin, 0))
            m.d.sync += [pending.eq(pending & ~Mux(self.ar & (self.sel_ctx == c), self.covered, 0)
                                    & ~Mux(ar_as_twin, self.covered_twin, 0)),
                         got.eq(got_next),
                         borrowed.eq(borrowed | Mux(ar_as_twin, self.covered_twin, 0)),
                         # the marks of the cycle before for the requests: a slot is filled
                         # only well after its request left (at most a cycle late, never early)
                         self.complete[c].eq(((got_next & used) == used) & (pending == 0))]
            with m.If(self.admit & (at == c)):
                m.d.sync += [used.eq(consts.used), pending.eq(consts.used), got.eq(0), err.eq(Error.NONE),
                             self.complete[c].eq(consts.used == 0),
                             borrowed.eq(0), twin.eq(consts.lastpass & consts.final & first_of_two)]
                m.d.sync += [addr[c][s].eq(self.pass_.addr[s][3:]) for s in range(R)]
        return m
