"""Result stage (E): the instruction entries, the row buffer and the result beats."""

from __future__ import annotations

import operator
from functools import reduce

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..lib.modular import is_at_mod
from ..params import ROW_BITS, Params, Policy
from . import forms
from .forms import BLOCK
from .records import (
    CYCLE_BITS,
    FORM_BITS,
    EntriesSignature,
    ProgressSignature,
    TakeSignature,
    consts_layout,
    result_layout,
)
from .rowbuf import RowBufferMemory
from .shuffle import ShuffleNetwork, ShuffleSelect, beat_rows, place_select, shuffle_select_layout

__all__ = ["ResultStage", "entry_layout", "head_copy_layout"]


def entry_layout(p: Params) -> data.StructLayout:
    """What an entry keeps of its pass for the result beats: form, error, the constants the
    beats need, and the first ring block of its slots."""
    c = consts_layout(p)
    return data.StructLayout({"form": unsigned(FORM_BITS), "err": Error, "start": range(p.row_blocks),
                              **{k: c[k].shape for k in ("load", "wmma", "nregs", "pend", "lastbeat")}})


def head_copy_layout(p: Params) -> data.StructLayout:
    """What the head entry's copy keeps (registers: the beats' handshake and the lookups a beat
    ahead start from them): whether it is live, its error, whether a bus error refused it,
    whether its pass is finished, its form, first block and the constants of its beats; and
    whether it is refused (its error is not ``NONE``: decided with each source of the error, so
    that the handshake reads a register's bit and a late bus error compares nothing)."""
    c = consts_layout(p)
    return data.StructLayout({"valid": 1, "err": Error, "refused": 1, "bus_err": 1, "finished": 1,
                              "form": unsigned(FORM_BITS),
                              "start": range(p.row_blocks), **{k: c[k].shape for k in ("load", "pend", "lastbeat")}})


class ResultStage(wiring.Component):
    """Result stage, prefix ``e_``: ``Params.entries`` instruction entries in order (one emitting,
    one filled and waiting, one filling, one more while its rows come), the load row buffer,
    and the result beats of the oldest entry (the head), through the fragment shuffle
    (:class:`~tensorlsu.hdl.pipeline.shuffle.ShuffleNetwork`, its selects looked up two beats
    ahead).

    The row buffer is a ring of ``row_blocks`` blocks of 8 slots: an entry's slot ``s`` is ring
    slot ``(8 · start + s) mod (8 · row_blocks)``: flip-flops, or memories with asynchronous
    reads with ``Params.row_buffer_lutram`` (:class:`~tensorlsu.hdl.pipeline.rowbuf.RowBufferMemory`,
    the same cycles). A load's beat leaves as soon as the rows it
    reads have landed: the slots the head's next beat reads (``need``) and the blocks its
    remaining beats read (``rest``) are kept per entry and decoded one beat ahead, so that the
    result's valid is a register's bit (``head_ready``: the slots the head's next beat reads
    are in, computed as they land and as the beats move). A pass's last beat also waits for the bank
    stage to finish the pass (``progress.finished``: an h200 wmma.load may hold the banks
    after its reads), so that its cycle count is final. A store gives one completion beat once
    its rows are written; a refused instruction gives its beats at once, with the error and zero
    data.

    Latency: a beat whose rows landed in cycle ``t`` (written at the end of ``t``) may leave
    in ``t + 1``. This implementation assumes the bank stage lands only rows of the entry it
    fills, into blocks no live entry's remaining beats read (:class:`~tensorlsu.hdl.pipeline.ring.RowRing`).

    ``cycles``, on the last beat, is the number of cycles the instruction occupied the banks,
    summed over its passes; under :attr:`Policy.PACKED` at least one per register beat of an
    ldmatrix (a packer still delivers one 128-byte register per cycle).

    Members
    -------
    take : In(TakeSignature(params))
        A pass leaves the pass queue into entry ``tail``.
    progress : In(ProgressSignature(params))
        The bank stage's progress on the entry it fills.
    result : Out(stream.Signature(result_layout(params)))
        The unit's result port.
    tail : Out(range(entries))
        The entry the next take fills; ``free``: it is free.
    second_tail, second_free : with paired passes, the entry after ``tail``, and whether it is
        free (a pair takes both).
    entries : Out(EntriesSignature(params))
        The entries as the ring sees them: head, live entries, their next values, the
        head's last beat, the ring blocks its beats still read.
    """

    #: copies of the head's shuffle selects, each driving its share of the network (one of the
    #: window's 32 rows, four of the beat's 128 bytes), so that no select bit needs a long
    #: buffer tree
    SELECT_COPIES = 32

    def __init__(self, params: Params):
        self.params = p = params
        super().__init__({
            "take": In(TakeSignature(p)), "progress": In(ProgressSignature(p)),
            "result": Out(stream.Signature(result_layout(p))),
            "tail": Out(range(p.entries)), "free": Out(1), "entries": Out(EntriesSignature(p)),
            **({"second_tail": Out(range(p.entries)), "second_free": Out(1)} if p.pair_passes else {})})

    def after(self, b):
        """The entry after ``b``, in order."""
        return Mux(b == self.params.entries - 1, 0, b + 1)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        R, NB, E = p.lanes, p.row_blocks, p.entries
        self._entries = e = [Signal(entry_layout(p), name=f"e{b}") for b in range(E)]
        # the slots the entry's next beat reads, and the ring blocks its beats read from the
        # next one on: set from the pass's constants at the take, then one beat ahead
        self._need = [Signal(R, name=f"e{b}_need") for b in range(E)]
        # ... and the slots of the beat after it, so that the ready of the beat after the head's
        # compares registers
        self._need2 = [Signal(R, name=f"e{b}_need2") for b in range(E)]
        self._rest = [Signal(R // BLOCK, name=f"e{b}_rest") for b in range(E)]
        # the shuffle's selects for the entry's next beat and for the beat after it, set at the
        # take, then a beat ahead (the table's lookup, two beats ahead, only feeds ``select2``);
        # their next values, and copies of the head's (so the network reads registers)
        sel_layout = shuffle_select_layout(NB)
        self._select = [Signal(sel_layout, name=f"e{b}_select") for b in range(E)]
        self._select_next = [Signal(sel_layout, name=f"e{b}_select_next") for b in range(E)]
        self._select2 = [Signal(sel_layout, name=f"e{b}_select2") for b in range(E)]
        self._select2_next = [Signal(sel_layout, name=f"e{b}_select2_next") for b in range(E)]
        # ... but for the head's beat leaving (the head's copy takes ``select2`` directly)
        self._select_kept = [Signal(sel_layout, name=f"e{b}_select_kept") for b in range(E)]
        self._head_select = [Signal(sel_layout, name=f"e_head_select{k}", attrs={"keep": 1})
                             for k in range(self.SELECT_COPIES)]
        # a copy of the head entry, for the beats' handshake and the lookups a beat ahead
        self._hc = Signal(head_copy_layout(p), name="e_hc")
        for b in range(E):
            m.d.comb += [self._select_kept[b].eq(self._select[b]), self._select_next[b].eq(self._select_kept[b]),
                         self._select2_next[b].eq(self._select2[b])]
            m.d.sync += [self._select[b].eq(self._select_next[b]), self._select2[b].eq(self._select2_next[b])]
        self._landed = [Signal(R, name=f"e{b}_landed") for b in range(E)]
        # the slots landing into each entry this cycle; an entry written with the offered pass
        # this cycle (free and next in line), and the pass's first beat's slots
        self._landing = [Signal(R, name=f"e{b}_landing") for b in range(E)]
        self._written = [Signal(name=f"e{b}_written") for b in range(E)]
        self._written_need = [Signal(R, name=f"e{b}_written_need") for b in range(E)]
        # the head's next beat has all its slots in (its ``landed`` covers its ``need``), a
        # register
        self._head_ready = Signal(name="e_head_ready")
        self._cycles = [Signal(CYCLE_BITS, name=f"e{b}_cycles") for b in range(E)]
        self._finished = Signal(E, name="e_finished")
        # refused by a bus error: the entry is one pass of its instruction, not all of it
        self._bus_err = Signal(E, name="e_bus_err")
        if p.row_buffer_lutram:
            rowbuf = m.submodules.rows = RowBufferMemory(lanes=R, blocks=NB)
        else:
            rowbuf = [Signal(ROW_BITS, name=f"e_row{i}", reset_less=True) for i in range(BLOCK * NB)]
        valid, head, tail = Signal(E, name="e_valid"), Signal(range(E), name="e_head"), \
            Signal(range(E), name="e_tail")
        e_set, e_clr = Signal(E), Signal(E)
        m.d.comb += [self.entries.valid.eq(valid), self.entries.head.eq(head), self.tail.eq(tail),
                     self.free.eq(~valid.bit_select(tail, 1))]
        self._progress(m, rowbuf)
        tk = self.take
        takes = [(tk.take, tail, tk.pass_, tk.start)]
        if p.pair_passes:
            # a pair's second pass, into the entry after the first's
            second = Signal(range(E), name="e_second")
            m.d.comb += [second.eq(self.after(tail)), self.second_tail.eq(second),
                         self.second_free.eq(~valid.bit_select(second, 1))]
            takes.append((tk.pair, second, tk.second_pass, tk.second_start))
            with m.If(tk.pair):
                m.d.sync += tail.eq(self.after(second))
        for n, (took, at, pass_, start) in enumerate(takes):
            # the selects of the pass's first two beats come looked up with the pass; here
            # they are only placed where it lands
            first = place_select(m, pass_.consts.sel0, start, NB, f"e_take{n}_select0")
            then = place_select(m, pass_.consts.sel1, start, NB, f"e_take{n}_select1")
            need1 = self._beat_need(m, pass_.form, pass_.consts.beat0 + 1, f"e_take{n}_need1")
            with m.If(took):
                m.d.comb += e_set.bit_select(at, 1).eq(1)
            # a free entry next in line is written with the offered pass whether or not the take
            # happens (its fields mean nothing until it is valid): the take's decision, late in
            # the cycle, only sets the valid bit
            with m.If(~valid.bit_select(at, 1)):
                c = pass_.consts
                with m.Switch(at):
                    for b in range(E):
                        with m.Case(b):
                            m.d.sync += [e[b].form.eq(pass_.form), e[b].err.eq(pass_.err),
                                         e[b].start.eq(start), self._landed[b].eq(0), self._cycles[b].eq(0),
                                         self._finished[b].eq(0), self._bus_err[b].eq(0),
                                         self._need[b].eq(c.need0), self._rest[b].eq(c.rest0),
                                         self._need2[b].eq(need1)]
                            m.d.comb += [self._select_kept[b].eq(first),
                                         self._select2_next[b].eq(then), self._written[b].eq(1),
                                         self._written_need[b].eq(c.need0)]
                            m.d.sync += [getattr(e[b], k).eq(getattr(c, k))
                                         for k in ("load", "wmma", "nregs", "pend", "lastbeat")]
        with m.If(tk.take & ~tk.pair if p.pair_passes else tk.take):
            m.d.sync += tail.eq(self.after(tail))
        self._takes = takes
        self._beats(m, rowbuf, valid, head, e_clr)
        m.d.comb += [self.entries.end.eq(e_clr.any()),
                     self.entries.head_next.eq(Mux(self.entries.end, self.after(head), head)),
                     self.entries.valid_next.eq((valid & ~e_clr) | e_set)]
        m.d.sync += [head.eq(self.entries.head_next), valid.eq(self.entries.valid_next)]
        self._copy_head(m, valid, head, takes)
        return m

    def _copy_head(self, m, valid, head, takes):
        """The head's copies (its entry, its selects, whether its beat carries data), computed
        for the entry at the head now and the one after it from their next values (neither is
        cleared in the case it is picked), then picked by the head's end (late in the cycle) at
        the registers."""
        p, e, pr = self.params, self._entries, self.progress
        layout = head_copy_layout(p)
        sources = [(pr.finished, pr.buf)] + ([(pr.second_finished, pr.second_buf)] if p.pair_passes else [])
        cands = []
        for k, at_ in enumerate((head, self.after(head))):
            c = Signal(layout, name=f"e_copy{k}")
            sel = Signal.like(self._head_select[0], name=f"e_copy{k}_select")
            # whether the entry's beats carry data, but for a bus error reported this cycle (the
            # fetch's served context decides that late; the data is gated by the copy's bus_err)
            gives = Signal(name=f"e_copy{k}_gives")
            with m.Switch(at_):
                for b in range(p.entries):
                    with m.Case(b):
                        m.d.comb += [sel.eq(self._select_kept[b]), c.valid.eq(valid[b]), c.err.eq(e[b].err),
                                     c.refused.eq(e[b].err != Error.NONE),
                                     c.bus_err.eq(self._bus_err[b]), c.finished.eq(self._finished[b]),
                                     *[getattr(c, f).eq(getattr(e[b], f))
                                       for f in ("form", "start", "load", "pend", "lastbeat")],
                                     gives.eq(valid[b] & e[b].load & (e[b].err == Error.NONE))]
            if k == 0:
                # the head's beat leaving: its next beat's selects (the entry after the head
                # never has a beat leaving)
                with m.If(self._fire):
                    m.d.comb += sel.eq(self._h_select2)
            for finished, buf in sources:
                with m.If(finished & (buf == at_)):
                    m.d.comb += c.finished.eq(1)
            with m.If(pr.finished & (pr.error != Error.NONE) & (pr.buf == at_)):
                m.d.comb += [c.err.eq(pr.error), c.refused.eq(1), c.bus_err.eq(1)]
            # a free entry takes the offered pass's copy (as it takes its fields), valid if taken
            for took, at, pass_, start in takes:
                with m.If(~valid.bit_select(at_, 1) & (at == at_)):
                    m.d.comb += [c.valid.eq(took), c.err.eq(pass_.err), c.refused.eq(pass_.err != Error.NONE),
                                 c.bus_err.eq(0), c.finished.eq(0),
                                 c.form.eq(pass_.form), c.start.eq(start),
                                 *[getattr(c, f).eq(getattr(pass_.consts, f)) for f in ("load", "pend", "lastbeat")],
                                 gives.eq(pass_.consts.load & (pass_.err == Error.NONE))]
            cands.append((c, sel, gives))
        end = self.entries.end
        m.d.sync += [self._hc.eq(Mux(end, cands[1][0], cands[0][0])),
                     *[copy.eq(Mux(end, cands[1][1], cands[0][1])) for copy in self._head_select]]
        # the beat's flags after this cycle: the beat moves on (or back to 0 after the
        # instruction's last) as a beat leaves; each comparison is made for both candidates and
        # picked by the handshake at the register
        beat, fire, last = self._beat, self._fire, self._last
        for flag, field in ((self._at_pend, "pend"), (self._at_last, "lastbeat")):
            def at(c, value):
                return getattr(c, field) == value
            stay = at(cands[0][0], beat)
            moved = Mux(end, at(cands[1][0], beat + 1), at(cands[0][0], beat + 1))
            restart = Mux(end, at(cands[1][0], 0), at(cands[0][0], 0))
            m.d.sync += flag.eq(Mux(fire, Mux(last, restart, moved), stay))
        # the data bits are gated by registers, not by the head's multiplexers: whether the
        # head's beat carries data (a load not refused), and the copy's bus error
        m.d.sync += self._data_ok.eq(Mux(end, cands[1][2], cands[0][2]) & ~self._inherited_any_next)

    def _progress(self, m, rowbuf):
        """The bank stage's progress: bank cycles, landed rows, written stores (with paired
        passes, of both passes of a pair: their entries and ring blocks differ)."""
        p, pr = self.params, self.progress
        W, NB, E = p.window, p.row_blocks, p.entries
        sources = [("", pr.buf, pr.count, pr.land, pr.land_rows, pr.finished)]
        if p.pair_passes:
            sources.append(("second_", pr.second_buf, pr.second_count, pr.second_land, pr.second_land_rows,
                            pr.second_finished))
        landing = []                    # (entry, slots) of each source
        for prefix, buf, count, land, land_rows, finished in sources:
            with m.If(count):
                with m.Switch(buf):
                    for b in range(E):
                        with m.Case(b):
                            m.d.sync += self._cycles[b].eq(self._cycles[b] + 1)
            land_all = Signal(p.lanes, name=f"e_{prefix}land_all")  # the landing slots, at their place in the pass
            with m.Switch(land.win):
                for w in range(p.windows):
                    with m.Case(w):
                        m.d.comb += land_all.eq(land.slots << (w * W))
            if p.row_buffer_lutram:
                # one landing a cycle, of one block (Params.row_buffer_lutram)
                m.d.comb += [rowbuf.land_slots.eq(land.slots), rowbuf.land_block.eq(land.first),
                             *[rowbuf.land_rows[j].eq(land_rows[j]) for j in range(W)]]
            for j in range(0 if p.row_buffer_lutram else W):
                # windows start at multiples of W // BLOCK blocks (packed: a pass)
                for first in range(0, NB, W // BLOCK):
                    with m.If(land.slots[j] & (land.first == first)):
                        m.d.sync += rowbuf[BLOCK * ((first + j // BLOCK) % NB) + j % BLOCK].eq(land_rows[j])
            landing.append((land.buf, land_all))
            with m.If(finished):
                m.d.sync += self._finished.bit_select(buf, 1).eq(1)
        # one statement per entry, so that neither source's landing overrides the other's
        for b in range(E):
            m.d.comb += self._landing[b].eq(reduce(operator.or_, [Mux(buf == b, slots, 0) for buf, slots in landing]))
            m.d.sync += self._landed[b].eq(self._landed[b] | self._landing[b])
        with m.If(pr.finished & (pr.error != Error.NONE)):
            # refused after all (a global read's bus error): its beats give the error
            m.d.sync += self._bus_err.bit_select(pr.buf, 1).eq(1)
            with m.Switch(pr.buf):
                for b in range(E):
                    with m.Case(b):
                        m.d.sync += self._entries[b].err.eq(pr.error)

    def _beats(self, m, rowbuf, valid, head, e_clr):
        """The head entry's result beats."""
        p = self.params
        R, NB = p.lanes, p.row_blocks
        h = Signal(entry_layout(p), name="e_h")
        h_cycles, rest = Signal(CYCLE_BITS, name="e_h_cycles"), Signal(R // BLOCK, name="e_h_rest")
        self._h_select2 = Signal(shuffle_select_layout(NB), name="e_h_select2")
        with m.Switch(head):
            for b in range(p.entries):
                with m.Case(b):
                    m.d.comb += [h.eq(self._entries[b]), h_cycles.eq(self._cycles[b]), rest.eq(self._rest[b]),
                                 self._h_select2.eq(self._select2[b])]
        self._beat = beat = Signal(range(R + 1), name="e_beat")
        # whether ``beat`` is the head's pass's last (``pend``) and its instruction's last
        # (``lastbeat``): registers, set from the next beat and the next head's copy, so the
        # handshake waits on no comparison
        self._at_pend = Signal(init=1, name="e_at_pend")
        self._at_last = Signal(init=1, name="e_at_last")
        # the network reads one register: the form's table is looked up two beats ahead, and
        # the head's selects copied as the head moves on
        hc = self._hc
        shuf = m.submodules.shuffle = ShuffleNetwork(lanes=R, blocks=NB, copies=self.SELECT_COPIES,
                                                     windowed=p.row_buffer_lutram)
        m.d.comb += [shuf.select[k].eq(self._head_select[k]) for k in range(self.SELECT_COPIES)]
        if p.row_buffer_lutram:
            # window row w reads its block at the base of the select copy that row w's
            # multiplexer would read
            m.d.comb += [*[rowbuf.base[w].eq(self._head_select[w * self.SELECT_COPIES // R].base) for w in range(R)],
                         *[shuf.window[w].eq(rowbuf.window[w]) for w in range(R)]]
        else:
            m.d.comb += [shuf.rows[i].eq(rowbuf[i]) for i in range(BLOCK * NB)]
        # the selects two beats ahead of the head's (its select2's next value as a beat leaves)
        after_select = m.submodules.after_select = ShuffleSelect(lanes=R, form_bits=FORM_BITS, blocks=NB)
        m.d.comb += [after_select.form.eq(hc.form), after_select.beat.eq(beat + 2), after_select.start.eq(hc.start)]
        need_after = self._beat_need(m, hc.form, beat + 2, "e_h_need_after")
        m.d.comb += self.entries.reading.eq(Mux(hc.valid & ~hc.refused, Cat(*[
            Cat(*[rest[k] & is_at_mod(hc.start, k, pb, NB) for k in range(R // BLOCK)]).any()
            for pb in range(NB)]), 0))
        rest_next = self._next_rest(m, hc.form, beat)
        beat_regs = self._beat_regs(m, hc.form, beat)
        carry = Signal(CYCLE_BITS, name="e_carry")   # bank cycles of the instruction's earlier pass
        reported = Signal(CYCLE_BITS)
        if p.schedule is Policy.PACKED:
            m.d.comb += reported.eq(Mux(~h.wmma & (h_cycles < h.nregs), h.nregs, h_cycles + carry))
        else:
            m.d.comb += reported.eq(h_cycles + carry)

        last = Signal()
        entry_end = Signal()            # the entry's last beat (a pass may end before `last`)
        # the error of an earlier pass of the head's instruction (a bus error): the later passes'
        # beats carry it too, so that the instruction's last beat gives its verdict
        inherited = Signal(Error, name="e_inherited")
        # whether ``inherited`` is not ``NONE``: a register beside it, so that the handshake
        # makes no comparison
        inherited_any = Signal(name="e_inherited_any")
        err = Signal(Error, name="e_h_err")
        m.d.comb += err.eq(Mux(hc.refused, hc.err, inherited))
        err_any = Signal(name="e_h_err_any")
        m.d.comb += err_any.eq(hc.refused | inherited_any)
        bus_pass = Signal(name="e_h_bus_pass")  # the head is one pass refused: its own beats only
        m.d.comb += bus_pass.eq(hc.bus_err | inherited_any)
        res = self.result.payload
        with m.If(hc.valid):
            with m.If(err_any):
                # a refused load gives all its beats (a pass refused by the bus, its own), anything
                # else one; a pass refused for an earlier one waits for its own reads to end
                m.d.comb += [self.result.valid.eq(hc.refused | hc.finished), res.error.eq(err),
                             last.eq(self._at_last), res.regs.eq(Mux(hc.load, beat_regs, 0)),
                             entry_end.eq(Mux(bus_pass, self._at_pend, last))]
            with m.Elif(hc.load):
                # the bank-cycle count is final (and reported) on the last beat only
                # the pass's last beat also waits for the bank stage to finish it (an h200
                # wmma.load's cost may outlast its reads), so its cycle count is final
                m.d.comb += [self.result.valid.eq(self._head_ready & (hc.finished | ~self._at_pend)),
                             res.regs.eq(beat_regs),
                             res.cycles.eq(Mux(last, reported, 0)), last.eq(self._at_last),
                             entry_end.eq(self._at_pend)]
            with m.Else():
                m.d.comb += [self.result.valid.eq(hc.finished), res.cycles.eq(reported),
                             last.eq(1), entry_end.eq(1)]
        m.d.comb += res.last.eq(last)
        self._last = last
        self._fire = fire = Signal(name="e_fire")
        m.d.comb += fire.eq(self.result.valid & self.result.ready)
        with m.If(fire):
            m.d.sync += beat.eq(beat + 1)
            # the head's next beat, whether or not its entry ends (an entry that ends is taken
            # anew before it is read, and a valid head is never the entry taken): the enables
            # wait on the handshake alone
            with m.Switch(head):
                for b in range(p.entries):
                    with m.Case(b):
                        m.d.sync += [self._need[b].eq(self._need2[b]), self._need2[b].eq(need_after),
                                     self._rest[b].eq(rest_next)]
                        m.d.comb += [self._select_next[b].eq(self._select2[b]),
                                     self._select2_next[b].eq(after_select.select)]
            with m.If(entry_end):
                m.d.comb += e_clr.bit_select(head, 1).eq(1)
                m.d.sync += [carry.eq(carry + h_cycles), inherited.eq(err), inherited_any.eq(err_any)]
            with m.If(last):
                m.d.sync += [beat.eq(0), carry.eq(0), inherited.eq(Error.NONE), inherited_any.eq(0)]
        self._ready_next(m, head, fire)
        self._data_ok = data_ok = Signal(name="e_data_ok")
        m.d.comb += res.data.eq(Mux(data_ok & ~hc.bus_err, shuf.out, 0))
        self._inherited_any_next = inherited_any_next = Signal(name="e_inherited_any_next")
        m.d.comb += inherited_any_next.eq(inherited_any)
        with m.If(fire):
            with m.If(last):
                m.d.comb += inherited_any_next.eq(0)
            with m.Elif(entry_end):
                m.d.comb += inherited_any_next.eq(err_any)

    def _ready_next(self, m, head, moves):
        """Whether the head's next beat has its slots in, for the next cycle (``head_ready``,
        what the result's valid reads): computed per entry both for the slots its next beat
        needs now and for those of the beat after (``need2``, for the head when its beat leaves:
        ``moves``), picked for the head and the entry after it before the handshake is known,
        so that the handshake only picks between them; an entry written with a pass has nothing
        landed."""
        E = self.params.entries
        now, moved = Signal(E, name="e_ready_now"), Signal(E, name="e_ready_moved")
        for b in range(E):
            landed = self._landed[b] | self._landing[b]
            m.d.comb += [now[b].eq(Mux(self._written[b], self._written_need[b] == 0,
                                       (landed & self._need[b]) == self._need[b])),
                         moved[b].eq(Mux(self._written[b], self._written_need[b] == 0,
                                         (landed & self._need2[b]) == self._need2[b]))]
        after_now = now.bit_select(self.after(head), 1)
        head_now, head_moved = now.bit_select(head, 1), moved.bit_select(head, 1)
        m.d.sync += self._head_ready.eq(Mux(self.entries.end, after_now, Mux(moves, head_moved, head_now)))

    def _beat_regs(self, m, form, beat):
        """The registers beat ``beat`` of a load form carries: register ``beat``, or, in a
        fragment that repeats registers, the register and its copies."""
        regs = Signal(forms.RESULT_REGS, name="e_beat_regs")
        m.d.comb += regs.eq(1 << beat)
        with m.Switch(form):
            for f in range(len(forms.FORMS)):
                inf = forms.info(f)
                if inf.load and inf.beat_regs != [1 << r for r in range(inf.nregs)]:
                    with m.Case(f):
                        with m.Switch(beat):
                            for r, mask in enumerate(inf.beat_regs):
                                with m.Case(r):
                                    m.d.comb += regs.eq(mask)
        return regs

    @staticmethod
    def _load_table(m, form, beat, out, value, beats):
        """``out`` = ``value(inf, r)`` for beat ``r`` of load form ``form`` (``r`` below
        ``beats(inf)``); 0 otherwise."""
        with m.Switch(form):
            for f in range(len(forms.FORMS)):
                inf = forms.info(f)
                if inf.load:
                    with m.Case(f):
                        with m.Switch(beat):
                            for r in range(beats(inf)):
                                with m.Case(r):
                                    m.d.comb += out.eq(value(inf, r))
        return out

    def _beat_need(self, m, form, beat, name):
        """The slots beat ``beat`` of a load form reads (none past its last beat)."""
        return self._load_table(m, form, beat, Signal(self.params.lanes, name=name),
                                beat_rows, lambda inf: inf.nregs)

    def _next_rest(self, m, form, beat):
        """The blocks the beats of a load form from ``beat + 1`` to the end of its pass read."""
        return self._load_table(m, form, beat, Signal(self.params.lanes // BLOCK, name="e_h_rest_next"),
                                lambda inf, r: inf.rest_blocks(r + 1), lambda inf: inf.nregs - 1)
