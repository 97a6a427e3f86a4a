"""One lane quadrant of Tensor Memory and the tcgen05.ld / tcgen05.st datapath that serves it.

Tensor Memory is 128 lanes × ``columns`` 32-bit columns; warp ``w`` of a warpgroup reaches only
lanes ``32 (w mod 4)`` … ``+31``, so each quadrant is its own memory with its own ports, and
four warps run at once. A quadrant's memory holds one *column* of its 32 lanes per word (1024
bits), in two banks by column parity (``TmemParams.banks``; or one), each with two ports:
every register of every form touches the same columns in all its lanes, so one step reads or
writes up to four whole columns, two groups of one column or two of opposite offset parity
(:mod:`tensorlsu.sim.tmem_plan`).

======  ============  ===========================================================
stage   component     what it does
======  ============  ===========================================================
D1, D2  TmemDecode    checks the instruction, decodes its class (TmemCheck); its first
                      step's row and column addresses
S       TmemSteps     walks the instruction's steps; each step's row and column
                      addresses are registers, made a step ahead
M       TmemBanks     banks by column parity, two read-or-write ports each; dump
A, P    TmemLoad      load: a step's words aligned to the form's lanes (A, TmemGather),
                      placed into the beat's registers (P)
—, W    TmemStore     store: beats from the store port, placed into a step's columns
                      (TmemScatter); the writes registered (W), in memory a cycle later;
                      W also carries the copy's writes and the fill's
R       TmemResult    the instructions in flight and their result beats; .red: folds the
                      register beats as they leave (TmemReduce)
======  ============  ===========================================================

The quadrant itself holds the issue side: the newest instruction's class, whether its steps
have all issued (a load) or been written (a store), and each bank port's address in the step.

Latency and rate (loads): an instruction taken at the port reaches the sequencer two cycles
later (the decode stage); its first step is issued the cycle after;
the memory answers one cycle later; the words are aligned the next, and a beat leaves the
cycle after its last step's words were placed (x1: four cycles from acceptance).
A beat of one or two registers every one or two steps (:func:`~tensorlsu.sim.tmem_plan.plan`);
a ``.red`` load adds one ``redval`` beat. Stores: the store port brings beats of two
consecutive registers (a pending beat waits while the held one is written over its steps),
so a store writes as fast as a load of its form reads; one completion beat follows the last
write. The next instruction is taken in the cycle a load's
last step issues (its beats follow the load's), or once a store or refusal has ended; a
refused one gives one beat (its error) after its store beats, and touches nothing.

Assumptions: ``columns`` is a power of two from 32 to 512. Fill and dump are taken only while
no instruction is in flight (they use port 1 of the column's bank) and go before an
instruction offered in the same cycle; an instruction is taken only once a dumped column has
left.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import TmemParams
from .banks import TmemBanks, pick, row_of
from .decode import TmemDecode
from .load import TmemLoad
from tensorlsu.sim.tmem_plan import PORTS_PER_BANK, SHAPES
from .records import (
    COPY_ROWS,
    LANES,
    beat_layout,
    tmem_copy_signature,
    tmem_fill_layout,
    tmem_instr_layout,
    tmem_result_layout,
)
from .result import TmemResult
from .steps import TmemSteps
from .store import TmemStore

__all__ = ["TmemQuadrant"]


class TmemQuadrant(wiring.Component):
    """Lanes ``32 quadrant`` … ``+31`` of Tensor Memory and their tcgen05.ld / tcgen05.st port.

    Members
    -------
    instr : In(stream.Signature(tmem_instr_layout()))
    store : In(stream.Signature(beat_layout()))
        Two source registers of every thread per beat (``2k`` and ``2k + 1`` in beat ``k``; one
        in an instruction of one register), register 0 first.
    result : Out(stream.Signature(tmem_result_layout()))
        Loads: register beats (``last`` on the final one), then for ``.red`` a REDVAL beat;
        stores: one DONE beat; a refusal: one DONE beat with ``error``.
    fill : In(stream.Signature(tmem_fill_layout()))
        One column of all 32 lanes per beat, while idle; written the cycle after it is taken.
    dump_req, dump : In / Out(stream.Signature(...))
        A column index in; that column of all 32 lanes out the next cycle, while idle.
    idle : Out(1)
        No instruction in flight.
    copy : In(tmem_copy_signature(columns))
        A tcgen05.cp step's write (:class:`~tensorlsu.hdl.copy.stage.CopyStage`): four columns
        from ``col``, taken in the cycle it is offered and written the next, through both ports
        of both banks (with one bank, two columns a cycle: its ``half``).
    hold : In(1)
        A copy holds the quadrant: no instruction, fill or dump is taken.
    """

    def __init__(self, params: TmemParams = TmemParams(), quadrant: int = 0):
        if not isinstance(params, TmemParams):
            raise TypeError(f"params must be a TmemParams, not {type(params).__name__}")
        if quadrant not in range(4):
            raise ValueError(f"quadrant must be 0 … 3, not {quadrant!r}")
        self.params, self.quadrant = params, quadrant
        super().__init__({
            "instr": In(stream.Signature(tmem_instr_layout())),
            "store": In(stream.Signature(beat_layout())),
            "result": Out(stream.Signature(tmem_result_layout())),
            "fill": In(stream.Signature(tmem_fill_layout(params))),
            "dump_req": In(stream.Signature(unsigned(params.col_bits))),
            "dump": Out(stream.Signature(data.ArrayLayout(unsigned(32), LANES))),
            "idle": Out(1),
            "copy": In(tmem_copy_signature(params.columns)),
            "hold": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        p, ports = self.params, PORTS_PER_BANK
        m.submodules.decode = decode = TmemDecode(p, self.quadrant)
        m.submodules.steps = steps = TmemSteps(p.banks)
        m.submodules.banks = banks = TmemBanks(p)
        m.submodules.load = load = TmemLoad(p)
        m.submodules.store = store = TmemStore(p)
        m.submodules.result = result = TmemResult()
        wiring.connect(m, wiring.flipped(self.fill), store.fill)
        wiring.connect(m, wiring.flipped(self.dump_req), banks.dump_req)
        wiring.connect(m, banks.dump, wiring.flipped(self.dump))
        wiring.connect(m, wiring.flipped(self.store), store.store)
        wiring.connect(m, result.result, wiring.flipped(self.result))

        # -- the issue side: the newest instruction's steps, reads and writes ---------------
        wiring.connect(m, wiring.flipped(self.instr), decode.instr)
        dec = decode.decoded
        check, ins = dec.payload, dec.payload.instr
        is_store, refusing = Signal(), Signal()                 # refusing: drain, then one beat
        store_writes = Signal(name="store_writes", attrs={"keep": 1})
        lane_off, wide = Signal(range(LANES + 1)), Signal()     # wide: 32x32b
        issued_all, written_all = Signal(), Signal()
        accept, early, issuing, writing = Signal(), Signal(), Signal(), Signal()
        busy = result.busy
        # fill and dump go first while idle (they use port 1, which an instruction's steps
        # need): the port takes no instruction while one is offered or a dumped column waits,
        # and they wait for the instructions taken before them (the decode stage's too)
        m.d.comb += [decode.stall.eq(banks.dump_pending | self.fill.valid | self.dump_req.valid | self.hold),
                     dec.ready.eq((~busy | early) & ~self.hold),
                     accept.eq(dec.valid & dec.ready),
                     self.idle.eq(~busy & ~banks.dump_pending & ~decode.busy)]
        with m.If(accept):
            m.d.sync += [is_store.eq(ins.store), refusing.eq(check.error != Error.NONE),
                         lane_off.eq(check.lane_off), wide.eq(ins.shape_id == SHAPES.index("32x32b"))]
        m.d.comb += [steps.start.eq(accept), steps.first.eq(check.first), steps.cls.eq(check.cls),
                     steps.periods.eq(check.periods), steps.advance.eq(issuing | writing)]
        m.d.comb += [issuing.eq(busy & ~is_store & ~refusing & ~issued_all & load.can_issue),
                     # a store's beat is written while it is held (``store_writes``: a store,
                     # not refused, from its acceptance to its last write; from a register of its
                     # own, so that the held beat's enables do not wait on the refusal's decode)
                     writing.eq(store_writes & store.held_valid),
                     # the next instruction may come in with a load's last step (its steps start
                     # next cycle)
                     early.eq(busy & ~result.queued & ~is_store & ~refusing &
                              (issued_all | (issuing & steps.final)))]
        with m.If(issuing & steps.final):
            m.d.sync += issued_all.eq(1)
        # the write registers follow a store from its acceptance to its last write, and else
        # carry a copy's or a fill's writes: a register of its own, so that its fanout (every
        # bit of W's inputs) is not the store port's handshake's
        with m.If(writing & steps.final):
            m.d.sync += [written_all.eq(1), store_writes.eq(0)]
        with m.If(accept):      # after the above: a load's last step may issue as the next one comes in
            m.d.sync += [written_all.eq(0), issued_all.eq(0),
                         store_writes.eq(ins.store & (check.error == Error.NONE))]
        # each bank port's address in the step; two banks: element e of group g is in bank (its
        # first column's parity) ^ e
        parity = Signal(ports)
        if p.banks == 2:
            m.d.comb += [parity[g].eq(steps.addr[2 * g][0]) for g in range(ports)]
        for b in range(p.banks):
            for g in range(ports):
                m.d.comb += banks.addr[b][g].eq(row_of(p.banks, pick(p.banks, b, g, list(steps.addr), parity[g])))
        # the copy's write and the fill's go through the store's write registers (W), so the
        # memory's inputs come from registers alone (written a cycle after they are taken: the
        # dump waits for them, and no instruction reaches the memory that soon)
        copying, in_use = Signal(name="copy_valid"), Signal()
        m.d.sync += copying.eq(self.copy.valid)
        m.d.comb += [in_use.eq(busy | self.hold | decode.busy | copying),
                     store.fill_free.eq(~in_use & ~banks.dump_pending), banks.fill_offered.eq(self.fill.valid),
                     banks.read.eq(issuing), banks.store.eq(is_store | copying | store.fill_writing),
                     banks.busy.eq(in_use | store.fill_writing)]

        # -- load, store and result sides ------------------------------------------------------
        step = load.step
        m.d.comb += [load.issuing.eq(issuing), step.var.eq(steps.var), step.last_step.eq(steps.last_step),
                     step.final.eq(steps.final), step.reg.eq(steps.reg), step.reg2.eq(steps.reg2),
                     step.two.eq(steps.two), step.parity.eq(parity), step.lane_off.eq(lane_off),
                     load.beat_free.eq(result.beat_free)]
        m.d.comb += [store.start.eq(accept), store.nregs.eq(check.nregs), store.take.eq(busy & is_store),
                     store.stores.eq(store_writes),
                     store.refusing.eq(refusing), store.writing.eq(writing), store.last_step.eq(steps.last_step),
                     store.var_hot.eq(steps.var_hot), store.cls_hot.eq(check.first.cls_hot), store.advance.eq(steps.advance),
                     store.on.eq(steps.on), store.wide.eq(wide),
                     store.lane_off.eq(lane_off), store.parity.eq(parity),
                     store.copy.eq(self.copy.valid)]
        cp = self.copy.payload
        for b in range(p.banks):
            for g in range(ports):
                m.d.comb += [load.rdata[b][g].eq(banks.rdata[b][g]), store.addr[b][g].eq(banks.addr[b][g])]
                # a copy's column j = 2g + b goes to port g of bank b (its four columns start
                # at a multiple of 4: two even, two odd); one bank: j = g + 2 half (a half a
                # cycle). Lane l takes row l mod 8
                def word(j):
                    return Cat(*[cp.rows[lane % COPY_ROWS][32 * j:32 * j + 32] for lane in range(LANES)])
                if p.banks == 2:
                    j = PORTS_PER_BANK * g + b
                    copy_col, copy_word = cp.col + j, word(j)
                else:
                    copy_col = Cat(Const(g, 1), cp.half, cp.col[2:])
                    copy_word = Mux(cp.half, word(PORTS_PER_BANK + g), word(g))
                m.d.comb += [store.copy_addr[b][g].eq(row_of(p.banks, copy_col)), store.copy_data[b][g].eq(copy_word),
                             store.copy_en[b][g].eq(cp.lanes),
                             banks.w_addr[b][g].eq(store.w_addr[b][g]), banks.w_data[b][g].eq(store.w_data[b][g]),
                             banks.w_en[b][g].eq(store.w_en[b][g])]
        ctx = result.ctx
        m.d.comb += [result.accept.eq(accept), ctx.err.eq(check.error), ctx.red.eq(ins.red),
                     ctx.red_max.eq(ins.red_max), ctx.red_type.eq(ins.red_type), ctx.abs.eq(ins.abs),
                     ctx.nan.eq(ins.nan), result.beat_in.eq(load.beat_in), result.beat.eq(load.beat),
                     result.words.eq(load.words),
                     # a store completes after its last write; a refusal once its store beats are in
                     result.complete.eq(Mux(refusing, ~is_store | store.drained, is_store & written_all))]
        return m
