"""The global fetch stage's beat match: which waiting slots a read beat fills, a stage ahead of
the row store's writes."""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.mux import mux_tree
from ..lib.slice import StreamSlice
from ..params import Params
from .axi import line_bits

__all__ = ["BeatMatch", "looked_up_layout", "matched_beat_layout", "slot_place_layout"]


def slot_place_layout(params: Params) -> data.StructLayout:
    """Where a slot's chunk lies in its line: its row, and whether it starts in the row's
    upper half (an 8-byte line)."""
    lb, _ = line_bits(params)
    return data.StructLayout({"row": max(1, lb - 4), "upper": 1})


def matched_beat_layout(params: Params) -> data.StructLayout:
    """A read beat with the slots it fills: its data and response, its context, the waiting
    slots of that context whose row lies in its line (``todo``) and those of the next context
    that context's requests borrowed (``twin_todo``), and where each slot of either lies in the
    line (``place``, ``twin_place``: the row store's write selects start from registers)."""
    R = params.lanes
    place = data.ArrayLayout(slot_place_layout(params), R)
    return data.StructLayout({"data": params.axi_data_bits, "resp": 2, "ctx": range(params.axi_contexts),
                              "todo": R, "twin_todo": R, "place": place, "twin_place": place})


def looked_up_layout(params: Params) -> data.StructLayout:
    """A read beat with what its id names: the line it brings and its context."""
    _, lw = line_bits(params)
    return data.StructLayout({"data": params.axi_data_bits, "resp": 2, "ctx": range(params.axi_contexts),
                              "line": lw})


class BeatMatch(wiring.Component):
    """The beat match, prefix ``g_match_``: a read beat's line against every waiting slot of
    its context and of that context's twin (the next context, where it borrowed slots), in two
    register slices (:class:`~tensorlsu.hdl.lib.slice.StreamSlice`): the id lookup (the beat's
    line and context, :class:`~tensorlsu.hdl.gmem.requests.FetchRequests`) is registered with
    the beat, then its 2 × ``lanes`` line comparators with the slots they match; the row
    store's write selection starts from registers.

    A slot's line comes back in one beat only (a pass reads each line once, and a slot its
    twin borrowed is requested by the first context alone), so the slots a beat matches are not
    filled by any other beat: the match may read ``got`` while earlier beats are still on their
    way to the row store.

    Latency: a beat that moves in cycle ``t`` is offered in ``t + 2``. ``rready`` is the first
    slice's registered ready: four beats are held while the row store waits.

    Members
    -------
    rvalid, rdata, rresp, beat_line, beat_ctx : In
        The read channel's beat, and the line and context its id names.
    rready : Out(1)
        The read channel's ready.
    used, got, twin, borrowed, line, row, upper : In
        The contexts' slots (:class:`~tensorlsu.hdl.gmem.contexts.FetchContexts`).
    beats : Out(stream.Signature(matched_beat_layout(params)))
        The matched beats, in order.
    """

    def __init__(self, params: Params):
        self.params = p = params
        R, C = p.lanes, p.axi_contexts
        _, lw = line_bits(p)
        super().__init__({
            "rvalid": In(1), "rdata": In(p.axi_data_bits), "rresp": In(2), "beat_line": In(lw),
            "beat_ctx": In(range(C)), "rready": Out(1),
            "used": In(R).array(C), "got": In(R).array(C), "twin": In(1).array(C), "borrowed": In(R).array(C),
            "line": In(lw).array(C, R), "row": In(max(1, line_bits(p)[0] - 4)).array(C, R),
            "upper": In(1).array(C, R),
            "beats": Out(stream.Signature(matched_beat_layout(p)))})

    def elaborate(self, platform):
        m = Module()
        p, R, C = self.params, self.params.lanes, self.params.axi_contexts
        m.submodules.lookup = looked = StreamSlice(looked_up_layout(p))
        lk = looked.i.payload
        m.d.comb += [looked.i.valid.eq(self.rvalid), lk.data.eq(self.rdata), lk.resp.eq(self.rresp),
                     lk.ctx.eq(self.beat_ctx), lk.line.eq(self.beat_line), self.rready.eq(looked.i.ready)]
        m.submodules.slice = held = StreamSlice(matched_beat_layout(p))
        wiring.connect(m, held.o, wiring.flipped(self.beats))
        beat, got = held.i.payload, looked.o.payload
        nxt = Signal(range(C), name="g_match_twin_ctx")
        m.d.comb += nxt.eq(got.ctx + 1)
        ctxs = (got.ctx, nxt)
        # the slots still waiting, in the beat's context and in its twin (as each context has them)
        waiting = [Signal(R, name="g_match_waiting"), Signal(R, name="g_match_twin_waiting")]
        m.d.comb += [waiting[0].eq(mux_tree(got.ctx, [self.used[c] & ~self.got[c] for c in range(C)])),
                     waiting[1].eq(mux_tree(nxt, [self.borrowed[c] & ~self.got[c] & self.twin[c].replicate(R)
                                                  for c in range(C)]))]
        todo, place = (beat.todo, beat.twin_todo), (beat.place, beat.twin_place)
        for t in range(2):
            m.d.comb += todo[t].eq(waiting[t] & Cat(
                mux_tree(ctxs[t], [self.line[c][s] for c in range(C)]) == got.line for s in range(R)))
            for s in range(R):
                m.d.comb += [place[t][s].row.eq(mux_tree(ctxs[t], [self.row[c][s] for c in range(C)])),
                             place[t][s].upper.eq(mux_tree(ctxs[t], [self.upper[c][s] for c in range(C)]))]
        m.d.comb += [held.i.valid.eq(looked.o.valid), beat.data.eq(got.data), beat.resp.eq(got.resp),
                     beat.ctx.eq(got.ctx), looked.o.ready.eq(held.i.ready)]
        return m
