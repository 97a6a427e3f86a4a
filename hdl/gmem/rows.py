"""The global fetch stage's row store: each read beat's rows written to the slots that wait for
them, and the served pass's windows read out for landing."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..lib.lowest import lowest, lowest_value, two_or_more
from ..lib.mux import mux_tree
from ..params import ROW_BITS, Params
from .axi import line_bits
from .match import BeatMatch

__all__ = ["FetchRows", "row_write_layout"]


def row_write_layout(params: Params) -> data.StructLayout:
    """One row memory's write, decided a cycle before it is made: its word and row (the enable
    is kept apart, as the only part with a reset)."""
    return data.StructLayout({"addr": range(params.axi_contexts * params.windows), "row": ROW_BITS})


class FetchRows(wiring.Component):
    """The rows of every context, prefix ``g_rows_``: ``window`` memories of a word per (context,
    window). Memory ``k`` holds lane ``k - turn·w`` (mod ``window``) of window ``w``, ``turn``
    = ``window / windows`` (2 under h200): a window lands with one read of each memory, and the
    chunks one beat brings are in different memories for all but a few forms and strides
    (docs/log.md: the turn against a fixed lane).

    Three stages, each from registers:

    - **Match** (:class:`~tensorlsu.hdl.gmem.match.BeatMatch`): the beat's line against the
      waiting slots of its context and its twin, registered with the beat, and where each of
      those slots lies in the line.
    - **Select**: each memory takes one of the beat's slots (the lowest window first, the
      context's before the twin's), its row cut from the beat (a chunk in the upper half of
      its row, an 8-byte line, with its halves swapped, as it lands) and registered as the
      memory's write. A beat whose slots go to distinct memories leaves in that cycle, so the
      port takes a beat a clock; one that feeds two slots of one memory stays a cycle more for
      each (the slots it wrote are kept, ``taken``), and the match holds the beats behind it.
    - **Write**: the memories take the registered writes; ``filled`` names the slots in that
      cycle, so a slot is marked in (``got``) only once its row can be read.

    Latency: a beat that moves in cycle ``t`` is written at the end of ``t + 2`` (``filled``
    then), a held beat's further slots a cycle later each. A window read (``win`` of context
    ``cur``) is on ``rows`` the next cycle.

    Members
    -------
    rvalid, rdata, rresp, beat_line, beat_ctx : In
        The read channel's beat, and the line and context its id names.
    rready : Out(1)
        The read channel's ready (a register's output: no path from the channel's inputs to it).
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
        match = m.submodules.match = BeatMatch(p)
        m.d.comb += [match.rvalid.eq(self.rvalid), match.rdata.eq(self.rdata), match.rresp.eq(self.rresp),
                     match.beat_line.eq(self.beat_line), match.beat_ctx.eq(self.beat_ctx),
                     self.rready.eq(match.rready)]
        for c in range(C):
            m.d.comb += [match.used[c].eq(self.used[c]), match.got[c].eq(self.got[c]),
                         match.twin[c].eq(self.twin[c]), match.borrowed[c].eq(self.borrowed[c])]
            m.d.comb += [match.line[c][s].eq(self.line[c][s]) for s in range(R)]
            m.d.comb += [match.row[c][s].eq(self.row[c][s]) for s in range(R)]
            m.d.comb += [match.upper[c][s].eq(self.upper[c][s]) for s in range(R)]
        beats = match.beats
        beat = beats.payload
        beat_rows = [beat.data[ROW_BITS * k:ROW_BITS * (k + 1)] for k in range(p.axi_data_bits // ROW_BITS)]
        nxt = Signal(range(C), name="g_rows_twin_ctx")
        m.d.comb += nxt.eq(beat.ctx + 1)
        places = (beat.place, beat.twin_place)

        # the beat's slots not yet written in an earlier cycle of its own (it stays while a
        # memory has two of them)
        taken = [Signal(R, name="g_rows_taken"), Signal(R, name="g_rows_twin_taken")]
        rest = [Signal(R, name="g_rows_rest"), Signal(R, name="g_rows_twin_rest")]
        # (ungated by the beat's valid: `more` decides the slice's ready, the write its enable)
        m.d.comb += [rest[0].eq(beat.todo & ~taken[0]), rest[1].eq(beat.twin_todo & ~taken[1])]
        written = [Signal(R, name="g_rows_written"), Signal(R, name="g_rows_twin_written")]
        more = Signal(W, name="g_rows_more")
        turn, h = W // p.windows, ROW_BITS // 2
        nw = p.windows
        writes = [Signal(row_write_layout(p), name=f"g_rows_write{k}", reset_less=True) for k in range(W)]
        write_en = Signal(W, name="g_rows_write_en")
        read_win = Signal(range(p.windows), name="g_rows_read_win")     # the window on the read ports
        m.d.sync += read_win.eq(self.win)
        rdata = []
        for k in range(W):
            # memory k holds lane (k - turn·w) mod W of window w; candidates: the beat's
            # context's slots, then its twin's (index nw·t + w)
            slots = [w * W + (k - turn * w) % W for w in range(nw)]
            cands = [rest[t][s] for t in range(2) for s in slots]
            any_, first = lowest(cands)
            m.d.comb += [written[t][s].eq(any_ & (first == nw * t + w)) for t in range(2) for w, s in enumerate(slots)]
            m.d.comb += more[k].eq(two_or_more(cands))
            # the slot's place in the beat, picked by the candidates themselves (not behind the
            # index `first`, whose bits fan out to the address and the marks)
            _, pick = lowest_value(cands, [Cat(places[t][s].row, places[t][s].upper)
                                           for t in range(2) for s in slots])
            slot_row, slot_upper = pick[:-1], pick[-1]
            win = first[:len(first) - 1]                    # the window; the top bit: the twin's
            ctx = Mux(first[-1], nxt, beat.ctx)
            row = mux_tree(slot_row, beat_rows) if len(beat_rows) > 1 else beat_rows[0]
            m.d.sync += [write_en[k].eq(any_ & beats.valid), writes[k].addr.eq(Cat(win, ctx) if nw > 1 else ctx),
                         writes[k].row.eq(Mux(slot_upper, Cat(row[h:], row[:h]), row))]
            m.submodules[f"lane{k}"] = mem = Memory(shape=ROW_BITS, depth=C * nw, init=[])
            wr, rd = mem.write_port(), mem.read_port(transparent_for=())
            m.d.comb += [wr.addr.eq(writes[k].addr), wr.data.eq(writes[k].row), wr.en.eq(write_en[k]),
                         rd.addr.eq(Cat(self.win, self.cur) if nw > 1 else self.cur)]
            rdata.append(rd.data)
        for j in range(W):
            m.d.comb += self.rows[j].eq(mux_tree(read_win, [rdata[(j + turn * w) % W] for w in range(p.windows)])
                                        if p.windows > 1 else rdata[j])
        # the beat leaves once no memory has a second slot of it left
        m.d.comb += beats.ready.eq(~more.any())
        with m.If(beats.valid & beats.ready):
            m.d.sync += [taken[0].eq(0), taken[1].eq(0)]
        with m.Elif(beats.valid):
            m.d.sync += [taken[0].eq(taken[0] | written[0]), taken[1].eq(taken[1] | written[1])]
        # the write's report, in the cycle the memories take it
        m.d.sync += [self.filling.eq(beats.valid), self.filled.eq(Mux(beats.valid, written[0], 0)),
                     self.fill_twin.eq(Mux(beats.valid, written[1], 0)),
                     self.fill_ctx.eq(beat.ctx), self.fill_resp.eq(beat.resp)]
        return m
