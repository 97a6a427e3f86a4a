"""tcgen05.st: the store port's registers collected into beats, placed into a step's columns,
and the writes registered (stage W), which also carry a copy's writes and a fill's."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import TmemParams
from .banks import FILL_PORT, bank_of, pick, row_of
from tensorlsu.sim.tmem_plan import MAX_REGS, PORTS_PER_BANK, accesses, schedule
from .records import LANES, beat_layout, store_beats, tmem_fill_layout
from .scatter import TmemScatter

__all__ = ["TmemStore"]


class TmemStore(wiring.Component):
    """The store side of a quadrant: beats of two consecutive registers (one where the
    instruction has one) from the store port, a *pending* beat waiting while the *held* one is
    written over its steps (:class:`~tensorlsu.hdl.tmem.scatter.TmemScatter` places it into
    the step's columns), and the writes registered per bank port (stage W), so that neither
    the step table nor the placement lies on the memory's input path. A copy's writes and a
    fill's go through the same registers, so that the memory's addresses, data and enables come
    from registers alone.

    Latency: a step's writes reach the memory the cycle after the step (``writing``); a copy's
    or a fill's the cycle after it is offered or taken (``fill_writing`` then). A beat
    goes straight to the held one when the writes are free, so a beat a step is taken back to
    back. A refused store's beats are taken and dropped (``drained`` once all are in).

    Members
    -------
    store : In(stream.Signature(beat_layout()))
        The quadrant's store port: registers ``2k`` and ``2k + 1`` of every thread in beat ``k``
        (slot 1 unused in an instruction of one register).
    start, nregs, take, refusing : In
        An instruction is accepted (``start``) with ``nregs`` registers to take; ``take``: a
        store is in flight whose beats are wanted; ``refusing``: it was refused.
    writing, last_step : In(1)
        The held beat is written this step; it is the beat's last step.
    var_hot, on, wide, lane_off : In
        The step's row (one-hot) and placement (:class:`~tensorlsu.hdl.tmem.steps.TmemSteps`) and the form's.
    stores : In(1)
        The write registers follow the store (from its acceptance to its last write); else they
        carry the copy's or the fill's.
    cls_hot, advance : In
        The class (one-hot) of the instruction ``start`` starts; the sequencer moves on (the
        placement's selects follow the sequencer a cycle ahead).
    addr, parity : In
        The step's address of each bank port and each group's parity (the quadrant's).
    held_valid : Out(1)
        A beat is held for writing.
    drained : Out(1)
        Every beat of the instruction has been taken.
    copy : In(1)
        A copy's write is offered (:class:`~tensorlsu.hdl.copy.stage.CopyStage`): it takes the
        write registers this cycle (no store is in flight while a copy holds the quadrant).
    copy_addr, copy_data, copy_en : In, per bank and port
        The copy's write.
    fill : In(stream.Signature(tmem_fill_layout(params)))
        A column of all 32 lanes to write through port ``FILL_PORT`` of its bank.
    fill_free : In(1)
        The memory is free for a fill (no instruction, copy or dumped column): ``fill.ready``.
    fill_writing : Out(1)
        A fill's column is written this cycle.
    w_addr, w_data, w_en : Out, per bank and port
        The registered writes (:class:`~tensorlsu.hdl.tmem.banks.TmemBanks`): the store's while
        it writes (``stores``), else the copy's or the fill's (only the enables say
        whether either was offered, so the handshakes never select a data bit).
    """

    def __init__(self, params: TmemParams):
        self.params = p = params
        depth, ports = p.columns // p.banks, PORTS_PER_BANK
        nvar = len(schedule(p.banks).variants)
        super().__init__({
            "store": In(stream.Signature(beat_layout())),
            "start": In(1), "nregs": In(range(MAX_REGS + 1)), "take": In(1), "refusing": In(1), "stores": In(1),
            "writing": In(1), "last_step": In(1),
            "var_hot": In(nvar), "cls_hot": In(len(schedule(p.banks).keys)), "advance": In(1),
            "on": In(accesses(p.banks)), "wide": In(1),
            "lane_off": In(range(LANES + 1)),
            "addr": In(range(depth)).array(p.banks, ports), "parity": In(ports),
            "held_valid": Out(1), "drained": Out(1), "copy": In(1),
            "copy_addr": In(range(depth)).array(p.banks, ports),
            "copy_data": In(unsigned(32 * LANES)).array(p.banks, ports),
            "copy_en": In(LANES).array(p.banks, ports),
            "fill": In(stream.Signature(tmem_fill_layout(p))), "fill_free": In(1), "fill_writing": Out(1),
            "w_addr": Out(range(depth)).array(p.banks, ports),
            "w_data": Out(unsigned(32 * LANES)).array(p.banks, ports),
            "w_en": Out(LANES).array(p.banks, ports)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.scatter = scatter = TmemScatter(p.banks)
        # the data registers have no reset (their valids and write enables do), which keeps
        # them off the reset's fanout tree
        pending = Signal(beat_layout(), name="pending", reset_less=True)
        held = Signal(beat_layout(), name="held", reset_less=True)
        pending_full = Signal()
        drain = Signal(range(store_beats(MAX_REGS) + 1))        # beats still to take
        held_valid, writing, done_beat = self.held_valid, self.writing, self.writing & self.last_step
        m.d.comb += [scatter.beat.eq(held), scatter.var_hot.eq(self.var_hot), scatter.start.eq(self.start),
                     scatter.cls_hot.eq(self.cls_hot), scatter.advance.eq(self.advance), scatter.wide.eq(self.wide),
                     scatter.lane_off.eq(self.lane_off), self.drained.eq(drain == 0)]
        enables = [scatter.lanes[k] & self.on[k].replicate(LANES) for k in range(len(self.on))]
        fill, fill_now = self.fill, Signal()
        m.d.comb += [fill.ready.eq(self.fill_free), fill_now.eq(fill.valid & self.fill_free)]
        m.d.sync += self.fill_writing.eq(fill_now)
        for g in range(PORTS_PER_BANK):
            for b in range(p.banks):
                w_addr = Signal.like(self.w_addr[b][g], name=f"w_addr_{b}_{g}", reset_less=True)
                w_data = Signal.like(self.w_data[b][g], name=f"w_data_{b}_{g}", reset_less=True)
                m.d.comb += [self.w_addr[b][g].eq(w_addr), self.w_data[b][g].eq(w_data)]
                # outside a store: the copy's write, or on the fill's port the fill's (the copy's
                # offer, a register, selects; the fill's handshake reaches only the enables)
                other_addr, other_data = self.copy_addr[b][g], self.copy_data[b][g]
                other_en = self.copy_en[b][g] & self.copy.replicate(LANES)
                if g == FILL_PORT:
                    other_addr = Mux(self.copy, other_addr, row_of(p.banks, fill.payload.col))
                    other_data = Mux(self.copy, other_data, fill.payload.data)
                    other_en |= (fill_now & (bank_of(p.banks, fill.payload.col) == b)).replicate(LANES)
                m.d.sync += [w_addr.eq(Mux(self.stores, self.addr[b][g], other_addr)),
                             w_data.eq(Mux(self.stores, pick(p.banks, b, g, list(scatter.words), self.parity[g]),
                                           other_data)),
                             self.w_en[b][g].eq(Mux(self.stores, pick(p.banks, b, g, enables, self.parity[g])
                                                    & writing.replicate(LANES), other_en))]
        free = Signal()       # the held beat is free for the next at this edge
        move = Signal()       # the pending beat becomes the held one at this edge
        m.d.comb += [free.eq(~held_valid | done_beat), move.eq(pending_full & free)]
        with m.If(move):
            m.d.sync += [held.eq(pending), held_valid.eq(1), pending_full.eq(0)]
        with m.Elif(done_beat):
            m.d.sync += held_valid.eq(0)
        port = self.store
        with m.If(self.refusing):
            m.d.comb += port.ready.eq(self.take & (drain != 0))
        with m.Else():
            m.d.comb += port.ready.eq(self.take & (drain != 0) & (~pending_full | move))
        with m.If(port.valid & port.ready):
            m.d.sync += drain.eq(drain - 1)
            with m.If(~self.refusing):
                # straight to the writes when they are free and nothing waits before it
                with m.If(~pending_full & free):
                    m.d.sync += [held.eq(port.payload), held_valid.eq(1)]
                with m.Else():
                    m.d.sync += [pending.eq(port.payload), pending_full.eq(1)]
        with m.If(self.start):
            m.d.sync += [held_valid.eq(0), pending_full.eq(0), drain.eq(store_beats(self.nregs))]
        return m
