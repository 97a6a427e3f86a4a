"""The global fetch stage's row store: each read beat's rows written to the slots that wait for
them, and the served pass's windows read out for landing."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..lib.lowest import lowest
from ..lib.mux import mux_tree
from ..params import ROW_BITS, ROW_BYTES, Params
from .axi import line_bits

__all__ = ["FetchRows", "held_beat_layout"]


def held_beat_layout(params: Params) -> data.StructLayout:
    """A read beat as the row store writes it: its data, response, line and context."""
    _, lw = line_bits(params)
    return data.StructLayout({"valid": 1, "data": params.axi_data_bits, "resp": 2, "line": lw,
                              "ctx": range(params.axi_contexts)})


class FetchRows(wiring.Component):
    """The rows of every context, prefix ``g_rows_``: ``window`` memories of a word per (context,
    window). Memory ``k`` holds lane ``k - turn·w`` (mod ``window``) of window ``w``, ``turn``
    = ``window / windows`` (2 under h200): a window lands with one read of each memory, and the
    chunks one beat brings are in different memories for all but a few forms and strides
    (docs/log.md: the turn against a fixed lane).

    A read beat is written in the cycle it moves: every used slot of its context whose row lies
    in its line and is not yet in takes its row (a chunk in the upper half of its row, an
    8-byte line, stored with its halves swapped, as it lands), and so does every slot its twin
    (the next context, :class:`~tensorlsu.hdl.gmem.contexts.FetchContexts`) borrowed; one slot
    per memory a cycle, the lowest window first, the context's before the twin's. A beat whose rows go to distinct memories is done in that cycle, so the port
    takes a beat a clock; one that feeds two slots of one memory is held in a register and
    finished from there, a cycle more for each, while ``rready`` (a register's output: no path
    from the channel's inputs to it) is low.

    Latency: a beat's rows are in the memories the cycle after it moves (``filled`` names the
    slots it fills in that cycle), a held beat's the cycle after each further one. A window
    read (``win`` of context ``cur``) is on ``rows`` the next cycle.

    Members
    -------
    rvalid, rdata, rresp, beat_line, beat_ctx : In
        The read channel's beat, and the line and context its id names.
    rready : Out(1)
        The read channel's ready: the beat moves this cycle.
    used, got : In(lanes).array(axi_contexts)
        Each context's slots, and those already in.
    twin, borrowed : In
        Whether a context is its predecessor's twin, and the slots that predecessor fetches.
    line : In(line index).array(axi_contexts, lanes)
        Each slot's data-width line; ``row``: its row in the line; ``upper``: its chunk starts
        in the upper half of the row.
    filling, filled, fill_twin, fill_ctx, fill_resp : Out
        A beat is written this cycle (``filling``) into the slots ``filled`` of context
        ``fill_ctx`` and ``fill_twin`` of its twin; its response.
    cur, win : In
        The window to read for landing.
    rows : Out(ROW_BITS).array(window)
        The window read the cycle before.
    """

    def __init__(self, params: Params):
        self.params = p = params
        R, C = p.lanes, p.axi_contexts
        lb, lw = line_bits(p)
        super().__init__({
            "rvalid": In(1), "rdata": In(p.axi_data_bits), "rresp": In(2), "beat_line": In(lw),
            "beat_ctx": In(range(C)), "rready": Out(1),
            "used": In(R).array(C), "got": In(R).array(C), "twin": In(1).array(C), "borrowed": In(R).array(C),
            "line": In(lw).array(C, R), "row": In(max(1, lb - 4)).array(C, R), "upper": In(1).array(C, R),
            "filling": Out(1), "filled": Out(R), "fill_twin": Out(R), "fill_ctx": Out(range(C)),
            "fill_resp": Out(2),
            "cur": In(range(C)), "win": In(range(p.windows)),
            "rows": Out(ROW_BITS).array(p.window)})

    def elaborate(self, platform):
        m = Module()
        p, R, W, C = self.params, self.params.lanes, self.params.window, self.params.axi_contexts
        lb, _ = line_bits(p)
        # the beat written this cycle: the held one, else the channel's
        held, beat = Signal(held_beat_layout(p), name="g_rows_held"), Signal(held_beat_layout(p), name="g_rows_beat")
        m.d.comb += beat.eq(Mux(held.valid, held, Cat(self.rvalid, self.rdata, self.rresp, self.beat_line,
                                                        self.beat_ctx)))
        beat_rows = [beat.data[ROW_BITS * k:ROW_BITS * (k + 1)] for k in range(p.axi_data_bits // 8 // ROW_BYTES)]
        # the slots it still has to fill, in its context and in the next one where that is its
        # twin and borrowed them (each field as that context has it)
        nxt = Signal(range(C), name="g_rows_twin_ctx")
        m.d.comb += nxt.eq(beat.ctx + 1)
        ctxs = (beat.ctx, nxt)

        def of_beat(field, s, t):
            return mux_tree(ctxs[t], [field[c][s] for c in range(C)])

        waiting = [Signal(R, name="g_rows_waiting"), Signal(R, name="g_rows_twin_waiting")]
        m.d.comb += [waiting[0].eq(mux_tree(beat.ctx, [self.used[c] & ~self.got[c] for c in range(C)])),
                     waiting[1].eq(mux_tree(nxt, [Mux(self.twin[c], self.borrowed[c] & ~self.got[c], 0)
                                                  for c in range(C)]))]
        todo = [Signal(R, name="g_rows_todo"), Signal(R, name="g_rows_twin_todo")]
        for t in range(2):
            for s in range(R):
                m.d.comb += todo[t][s].eq(beat.valid & waiting[t][s] & (of_beat(self.line, s, t) == beat.line))
        written = [Signal(R, name="g_rows_written"), Signal(R, name="g_rows_twin_written")]
        more = Signal(W, name="g_rows_more")
        turn, h = W // p.windows, ROW_BITS // 2
        read_win = Signal(range(p.windows), name="g_rows_read_win")     # the window on the read ports
        m.d.sync += read_win.eq(self.win)
        rdata = []
        nw = p.windows
        for k in range(W):
            # memory k holds lane (k - turn·w) mod W of window w; candidates: the beat's
            # context's slots, then its twin's (index nw·t + w)
            slots = [w * W + (k - turn * w) % W for w in range(nw)]
            cands = [todo[t][s] for t in range(2) for s in slots]
            any_, first = lowest(cands)
            m.d.comb += [written[t][s].eq(any_ & (first == nw * t + w)) for t in range(2) for w, s in enumerate(slots)]
            bits = Cat(*cands)
            m.d.comb += more[k].eq((bits & (bits - 1)) != 0)       # two or more
            m.submodules[f"lane{k}"] = mem = Memory(shape=ROW_BITS, depth=C * nw, init=[])
            wr, rd = mem.write_port(), mem.read_port(transparent_for=())
            slot_row = mux_tree(first, [of_beat(self.row, s, t) for t in range(2) for s in slots])
            slot_upper = mux_tree(first, [of_beat(self.upper, s, t) for t in range(2) for s in slots])
            win = first[:len(first) - 1]                    # the window; the top bit: the twin's
            ctx = Mux(first[-1], nxt, beat.ctx)
            row = mux_tree(slot_row, beat_rows) if len(beat_rows) > 1 else beat_rows[0]
            m.d.comb += [wr.addr.eq(Cat(win, ctx) if nw > 1 else ctx),
                         wr.data.eq(Mux(slot_upper, Cat(row[h:], row[:h]), row)), wr.en.eq(any_),
                         rd.addr.eq(Cat(self.win, self.cur) if nw > 1 else self.cur)]
            rdata.append(rd.data)
        for j in range(W):
            m.d.comb += self.rows[j].eq(mux_tree(read_win, [rdata[(j + turn * w) % W] for w in range(p.windows)])
                                        if p.windows > 1 else rdata[j])
        done = Signal(name="g_rows_done")
        m.d.comb += [done.eq(~more.any()), self.rready.eq(~held.valid),
                     self.filling.eq(beat.valid), self.filled.eq(written[0]), self.fill_twin.eq(written[1]),
                     self.fill_ctx.eq(beat.ctx),
                     self.fill_resp.eq(beat.resp)]
        # a beat with slots left for a second cycle is held (the channel waits) until they are in
        m.d.sync += held.eq(beat)
        m.d.sync += held.valid.eq(beat.valid & ~done)
        return m
