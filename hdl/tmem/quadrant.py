"""One lane quadrant of Tensor Memory and the tcgen05.ld / tcgen05.st datapath that serves it.

Tensor Memory is 128 lanes × ``columns`` 32-bit columns; warp ``w`` of a warpgroup reaches only
lanes ``32 (w mod 4)`` … ``+31``, so each quadrant is its own memory with its own ports, and
four warps run at once. A quadrant's memory holds one *column* of its 32 lanes per word (1024
bits), in two banks by column parity (``TmemParams.banks``; or one), each with two ports:
every register of every form touches the same columns in all its lanes, so one step reads or
writes up to four whole columns, two groups of one column or two of opposite offset parity
(:mod:`tensorlsu.hdl.tmem_plan`).

======  ============  ===========================================================
stage   component     what it does
======  ============  ===========================================================
—       TmemCheck     checks the instruction, decodes its class (latency 0)
S       TmemSteps     walks the instruction's steps, gives the column addresses
M       Memory        banks by column parity, two read-or-write ports each
A, P    TmemGather    load: aligns a step's columns to the form's lanes (A), places them
                      into the beat's registers (P)
—, W    TmemScatter   store: places the held beat's registers into a step's columns; the
                      writes are registered (W) and reach the memory a cycle later
R       TmemReduce    .red: folds the register beats as they leave
======  ============  ===========================================================

Latency and rate (loads): the first step is issued the cycle after the instruction is taken;
the memory answers one cycle later; the words are aligned the next, and a beat leaves the
cycle after its last step's words were placed (x1: four cycles from acceptance).
A beat of one or two registers every one or two steps (:func:`~tensorlsu.hdl.tmem_plan.plan`);
a ``.red`` load adds one ``redval`` beat. Stores: the store port's registers are collected into
beats of two (a pending beat fills while the held one is written over its steps); one
completion beat follows the last write. The next instruction is taken in the cycle a load's
last step issues (its beats follow the load's), or once a store or refusal has ended; a
refused one gives one beat (its error) after its store beats, and touches nothing.

Assumptions: ``columns`` is a power of two from 32 to 512. Fill and dump are taken only while
no instruction is in flight (they use port 1 of the column's bank) and go before an
instruction offered in the same cycle; an instruction is taken only once a dumped column has
left.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import TmemParams
from .check import TmemCheck
from .gather import TmemGather
from .plan import MAX_REGS, PORTS_PER_BANK, SHAPES
from .records import LANES, Kind, RedType, beat_layout, tmem_fill_layout, tmem_instr_layout, tmem_result_layout
from .reduce import TmemReduce
from .scatter import TmemScatter
from .steps import TmemSteps

__all__ = ["TmemQuadrant"]


class TmemQuadrant(wiring.Component):
    """Lanes ``32 quadrant`` … ``+31`` of Tensor Memory and their tcgen05.ld / tcgen05.st port.

    Members
    -------
    instr : In(stream.Signature(tmem_instr_layout()))
    store : In(stream.Signature(ArrayLayout(unsigned(32), 32)))
        One source register of every thread per beat, register 0 first.
    result : Out(stream.Signature(tmem_result_layout()))
        Loads: register beats (``last`` on the final one), then for ``.red`` a REDVAL beat;
        stores: one DONE beat; a refusal: one DONE beat with ``error``.
    fill : In(stream.Signature(tmem_fill_layout()))
        One column of all 32 lanes per beat, while idle.
    dump_req, dump : In / Out(stream.Signature(...))
        A column index in; that column of all 32 lanes out the next cycle, while idle.
    idle : Out(1)
        No instruction in flight.
    """

    def __init__(self, params: TmemParams = TmemParams(), quadrant: int = 0):
        if not isinstance(params, TmemParams):
            raise TypeError(f"params must be a TmemParams, not {type(params).__name__}")
        if quadrant not in range(4):
            raise ValueError(f"quadrant must be 0 … 3, not {quadrant!r}")
        self.params, self.quadrant = params, quadrant
        super().__init__({
            "instr": In(stream.Signature(tmem_instr_layout())),
            "store": In(stream.Signature(data.ArrayLayout(unsigned(32), LANES))),
            "result": Out(stream.Signature(tmem_result_layout())),
            "fill": In(stream.Signature(tmem_fill_layout(params))),
            "dump_req": In(stream.Signature(unsigned(params.col_bits))),
            "dump": Out(stream.Signature(data.ArrayLayout(unsigned(32), LANES))),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.check = check = TmemCheck(p, self.quadrant)
        m.submodules.steps = steps = TmemSteps(p.banks)
        m.submodules.gather = gather = TmemGather(p.banks)
        m.submodules.scatter = scatter = TmemScatter(p.banks)
        m.submodules.reduce = reduce = TmemReduce()
        # One bank: its port g serves access g of a step. Two banks: bank b holds the columns of
        # parity b, and its port g serves group g of a step (the group's column in that bank).
        # Fill and dump use port 1 of the column's bank.
        banks, ports = p.banks, PORTS_PER_BANK
        depth = p.columns // banks
        rd = [[None] * ports for _ in range(banks)]
        wr = [[None] * ports for _ in range(banks)]
        bank_addr = [[Signal(range(depth), name=f"bank{b}_port{g}_addr") for g in range(ports)]
                     for b in range(banks)]
        read = [[Signal(name=f"bank{b}_port{g}_read") for g in range(ports)] for b in range(banks)]

        def bank_of(col):
            return col[0] if banks == 2 else 0

        def row_of(col):
            return col[1:] if banks == 2 else col

        def pick(b, g, values, parity):
            """Of a step's per-access ``values``, the one bank b's port g serves."""
            if banks == 1:
                return values[g]
            return Mux(parity != b, values[2 * g + 1], values[2 * g])

        for b in range(banks):
            m.submodules[f"bank{b}"] = mem = Memory(shape=unsigned(32 * LANES), depth=depth, init=[])
            for g in range(ports):
                rd[b][g], wr[b][g] = mem.read_port(domain="sync"), mem.write_port(granularity=32)
                # One address per port, read or write: an instruction only reads (a load) or
                # only writes (a store), and fill and dump run while idle, so each port is a
                # true read-or-write port (two per block RAM); never both in one cycle, said
                # outright so that synthesis sees it.
                m.d.comb += [rd[b][g].addr.eq(bank_addr[b][g]), wr[b][g].addr.eq(bank_addr[b][g]),
                             rd[b][g].en.eq(read[b][g] & ~wr[b][g].en.any())]

        ins = self.instr.payload
        m.d.comb += check.instr.eq(ins)

        # -- the instructions in flight ----------------------------------------------------
        # The issue side (steps, store beats, writes) serves the newest instruction; the result
        # side serves the oldest one whose beats have not all left. A load lets the next
        # instruction in with its last step, while its last beats drain (``queued``: that next
        # one waits for the result side); stores and refusals hold the issue side to their end.
        busy, store, refusing = Signal(), Signal(), Signal()   # refusing: drain, then one beat
        queued = Signal()
        lane_off = Signal(range(LANES + 1))
        wide = Signal()                                         # 32x32b
        drain = Signal(range(MAX_REGS + 1))                     # store beats still to take
        context = data.StructLayout({"err": Error, "red": 1, "red_max": 1, "red_type": RedType,
                                     "abs": 1, "nan": 1})
        issue_ctx, res_ctx = Signal(context), Signal(context)   # the newest; the result side's
        new_ctx = Signal(context)
        m.d.comb += [new_ctx.err.eq(check.error), new_ctx.red.eq(ins.red), new_ctx.red_max.eq(ins.red_max),
                     new_ctx.red_type.eq(ins.red_type), new_ctx.abs.eq(ins.abs), new_ctx.nan.eq(ins.nan)]
        accept, finishing, early = Signal(), Signal(), Signal()
        issued_all = Signal()
        dump_pending = Signal()                                 # a dumped column not yet taken
        # fill and dump go first while idle (they use port 1, which an instruction's steps need)
        m.d.comb += [self.instr.ready.eq((~busy | early) & ~dump_pending & ~self.fill.valid
                                         & ~self.dump_req.valid),
                     accept.eq(self.instr.valid & self.instr.ready), self.idle.eq(~busy & ~dump_pending)]
        with m.If(accept):
            m.d.sync += [busy.eq(1), store.eq(ins.store), issue_ctx.eq(new_ctx),
                         refusing.eq(check.error != Error.NONE), lane_off.eq(check.lane_off),
                         wide.eq(ins.shape_id == SHAPES.index("32x32b")), drain.eq(check.nregs)]
        m.d.comb += [steps.start.eq(accept), steps.cls.eq(check.cls), steps.periods.eq(check.periods),
                     steps.col.eq(ins.taddr[:16]), steps.split.eq(ins.split)]

        res = self.result.payload
        res_valid = Signal()
        res_taken = Signal()
        m.d.comb += [self.result.valid.eq(res_valid), res_taken.eq(res_valid & self.result.ready)]

        # -- load: issue a step, read, gather into the beat -----------------------------------
        # stage M: the step issued last cycle, its words at the memory's output; stage A:
        # those words aligned in the gather; then placed into the beat
        s1_valid, s1_last_step, s1_final = Signal(), Signal(), Signal()
        s1_var = Signal.like(steps.var)
        s1_reg, s1_reg2, s1_two = Signal.like(steps.reg), Signal.like(steps.reg2), Signal()
        s1_parity = Signal(ports)
        s1_lane_off = Signal.like(lane_off)
        s2_valid, s2_last_step, s2_final = Signal(), Signal(), Signal()
        s2_reg, s2_reg2, s2_two = Signal.like(steps.reg), Signal.like(steps.reg2), Signal()
        s2_take, s2_free, s1_move = Signal(), Signal(), Signal()
        # a .red load's last register beat and its redval beat keep the next instruction's
        # beats back (the redval beat does not come from the beat register)
        redval_ahead = Signal()
        m.d.comb += [s2_take.eq(s2_valid & ~redval_ahead & (~res_valid | self.result.ready)),
                     s2_free.eq(~s2_valid | s2_take),
                     s1_move.eq(s1_valid & s2_free)]
        can_issue = ~s1_valid | s1_move
        issuing = Signal()
        m.d.comb += issuing.eq(busy & ~store & ~refusing & ~issued_all & can_issue)
        # the next instruction may come in with the load's last step (its steps start next cycle)
        m.d.comb += early.eq(busy & ~queued & ~store & ~refusing & (issued_all | (issuing & steps.final)))
        # two banks: element e of group g is in bank (its first column's parity) ^ e
        parity = [Signal(name=f"group{g}_parity") for g in range(ports)]
        step_addr = [[Signal.like(bank_addr[b][g], name=f"step_bank{b}_port{g}_addr") for g in range(ports)]
                     for b in range(banks)]
        for g in range(ports):
            if banks == 2:
                m.d.comb += parity[g].eq(steps.addr[2 * g][0])
            for b in range(banks):
                m.d.comb += [step_addr[b][g].eq(row_of(pick(b, g, list(steps.addr), parity[g]))),
                             bank_addr[b][g].eq(step_addr[b][g]), read[b][g].eq(issuing)]
        with m.If(issuing & steps.final):
            m.d.sync += issued_all.eq(1)
        with m.If(can_issue):
            m.d.sync += [s1_valid.eq(issuing), s1_var.eq(steps.var), s1_last_step.eq(steps.last_step),
                         s1_final.eq(steps.final), s1_reg.eq(steps.reg), s1_reg2.eq(steps.reg2),
                         s1_two.eq(steps.two), s1_parity.eq(Cat(*parity)), s1_lane_off.eq(lane_off)]
        with m.If(s2_free):
            m.d.sync += [s2_valid.eq(s1_valid), s2_last_step.eq(s1_last_step), s2_final.eq(s1_final),
                         s2_reg.eq(s1_reg), s2_reg2.eq(s1_reg2), s2_two.eq(s1_two)]
        m.d.comb += [gather.var.eq(s1_var), gather.lane_off.eq(s1_lane_off), gather.load.eq(s1_move),
                     gather.take.eq(s2_take)]
        for g in range(ports):
            if banks == 1:
                m.d.comb += gather.words[g].eq(rd[0][g].data)
            else:
                for e in range(2):
                    m.d.comb += gather.words[2 * g + e].eq(Mux(s1_parity[g] ^ e, rd[1][g].data, rd[0][g].data))

        # the beat: whole the cycle after its last step's words were placed
        beat_reg, beat_reg2, beat_two, beat_final = Signal(7), Signal(7), Signal(), Signal()
        beat_in = Signal()
        m.d.comb += beat_in.eq(s2_take & s2_last_step)
        with m.If(beat_in):
            m.d.sync += [beat_reg.eq(s2_reg), beat_reg2.eq(s2_reg2), beat_two.eq(s2_two),
                         beat_final.eq(s2_final)]

        # -- store: a beat filling (pending) while the held one is written over its steps -----
        pending = Signal(beat_layout())
        pending_slot, pending_full, pair = Signal(), Signal(), Signal()
        held = Signal(beat_layout())
        held_valid = Signal()
        writing = Signal()
        m.d.comb += writing.eq(busy & store & ~refusing & held_valid)
        written_all = Signal()
        m.d.comb += [scatter.beat.eq(held), scatter.var.eq(steps.var), scatter.wide.eq(wide),
                     scatter.lane_off.eq(lane_off)]
        # stage W: a step's writes are registered per bank port, and reach the memory a cycle
        # later (so that the step table and the placement are not on the memory's input path)
        enables = [scatter.lanes[k] & steps.on[k].replicate(LANES) for k in range(len(steps.on))]
        for g in range(ports):
            for b in range(banks):
                w_addr = Signal.like(bank_addr[b][g], name=f"w_bank{b}_port{g}_addr")
                w_data = Signal.like(wr[b][g].data, name=f"w_bank{b}_port{g}_data")
                w_en = Signal.like(wr[b][g].en, name=f"w_bank{b}_port{g}_en")
                m.d.sync += [w_addr.eq(step_addr[b][g]),
                             w_data.eq(pick(b, g, list(scatter.words), parity[g])),
                             w_en.eq(pick(b, g, enables, parity[g]) & writing.replicate(LANES))]
                m.d.comb += [wr[b][g].data.eq(w_data), wr[b][g].en.eq(w_en)]
                with m.If(store):
                    m.d.comb += bank_addr[b][g].eq(w_addr)
        move = Signal()       # the pending beat becomes the held one at this edge
        m.d.comb += move.eq(pending_full & (~held_valid | (writing & steps.last_step)))
        with m.If(move):
            m.d.sync += [held.eq(pending), held_valid.eq(1), pending_full.eq(0)]
        with m.Elif(writing & steps.last_step):
            m.d.sync += held_valid.eq(0)
        with m.If(refusing):
            m.d.comb += self.store.ready.eq(busy & store & (drain != 0))
        with m.Else():
            m.d.comb += self.store.ready.eq(busy & store & (drain != 0) & (~pending_full | move))
        with m.If(self.store.valid & self.store.ready):
            m.d.sync += [pending[pending_slot].eq(self.store.payload), drain.eq(drain - 1)]
            with m.If(~refusing):
                m.d.sync += [pending_full.eq(pending_slot | ~pair), pending_slot.eq(pair & ~pending_slot)]
                # the register that completes a beat goes straight to the writes when they are free
                with m.If((pending_slot | ~pair) & ~pending_full & (~held_valid | (writing & steps.last_step))):
                    m.d.sync += [held.eq(pending), held[pending_slot].eq(self.store.payload),
                                 held_valid.eq(1), pending_full.eq(0)]
        with m.If(writing & steps.final):
            m.d.sync += written_all.eq(1)
        m.d.comb += steps.advance.eq(issuing | writing)
        with m.If(accept):
            m.d.sync += [written_all.eq(0), issued_all.eq(0), held_valid.eq(0), pending_full.eq(0),
                         pending_slot.eq(0), pair.eq(check.nregs > 1)]

        # -- reduction -----------------------------------------------------------------------
        # the result side takes an instruction on (and clears the reduction) when it is accepted
        # onto an idle or finishing result side, or when the one before it finishes
        res_next = Signal()
        m.d.comb += res_next.eq((accept & (~busy | finishing)) | (finishing & queued))
        m.d.comb += [reduce.beat.eq(gather.beat), reduce.two.eq(beat_two),
                     reduce.fold.eq(res_taken & (res.kind == Kind.REGS)), reduce.clear.eq(res_next),
                     reduce.red_max.eq(res_ctx.red_max), reduce.red_type.eq(res_ctx.red_type),
                     reduce.abs.eq(res_ctx.abs), reduce.nan.eq(res_ctx.nan)]

        # -- fill and dump (port 1, while idle) ----------------------------------------------
        fill = self.fill.payload
        # a dumped column waits on the port (the read port holds its data) until taken
        # port 1 serves one of them a cycle, the fill first
        m.d.comb += [self.fill.ready.eq(~busy & ~dump_pending),
                     self.dump_req.ready.eq(~busy & ~self.fill.valid & (~dump_pending | self.dump.ready))]
        dump_bank = Signal()
        for b in range(banks):
            with m.If(self.fill.valid & self.fill.ready & (bank_of(fill.col) == b)):
                m.d.comb += [bank_addr[b][1].eq(row_of(fill.col)), wr[b][1].data.eq(fill.data),
                             wr[b][1].en.eq((1 << LANES) - 1)]
            with m.If(self.dump_req.valid & self.dump_req.ready & (bank_of(self.dump_req.payload) == b)):
                m.d.comb += [bank_addr[b][1].eq(row_of(self.dump_req.payload)), read[b][1].eq(1)]
        with m.If(self.dump_req.valid & self.dump_req.ready):
            m.d.sync += [dump_pending.eq(1), dump_bank.eq(bank_of(self.dump_req.payload))]
        with m.Elif(self.dump.ready):
            m.d.sync += dump_pending.eq(0)
        m.d.comb += [self.dump.valid.eq(dump_pending),
                     self.dump.payload.eq(rd[0][1].data if banks == 1 else
                                          Mux(dump_bank, rd[1][1].data, rd[0][1].data))]

        # -- result beats --------------------------------------------------------------------
        with m.If(res_taken):
            m.d.sync += res_valid.eq(0)
        with m.If(beat_in):
            m.d.sync += res_valid.eq(1)
        m.d.comb += [res.data.eq(gather.beat), res.reg.eq(beat_reg), res.reg2.eq(beat_reg2),
                     res.two.eq(beat_two), res.error.eq(res_ctx.err),
                     finishing.eq(res_taken & res.last)]
        state = Signal(range(3))    # 0 register beats, 1 redval beat, 2 completion / refusal beat
        m.d.comb += redval_ahead.eq((state == 1) | (res_valid & (state == 0) & beat_final & res_ctx.red))
        with m.Switch(state):
            with m.Case(0):
                m.d.comb += [res.kind.eq(Kind.REGS), res.last.eq(beat_final & ~res_ctx.red)]
                with m.If(res_taken & beat_final & res_ctx.red):
                    m.d.sync += [state.eq(1), res_valid.eq(1)]
            with m.Case(1):
                m.d.comb += [res.kind.eq(Kind.REDVAL), res.last.eq(1), res.data[0].eq(reduce.redval)]
            with m.Case(2):
                m.d.comb += [res.kind.eq(Kind.DONE), res.last.eq(1)]
        with m.If(finishing):
            m.d.sync += state.eq(0)
            with m.If(queued):
                m.d.sync += [res_ctx.eq(issue_ctx), queued.eq(0)]
            with m.Else():
                m.d.sync += busy.eq(0)
        with m.If(accept):
            m.d.sync += busy.eq(1)
            with m.If(~busy | finishing):
                m.d.sync += res_ctx.eq(new_ctx)
            with m.Else():
                m.d.sync += queued.eq(1)
        # a store completes after its last write; a refusal once its store beats are drained
        # (each once the result side is theirs)
        with m.If(busy & ~queued & store & ~refusing & written_all & ~res_valid & (state == 0)):
            m.d.sync += [state.eq(2), res_valid.eq(1)]
        with m.If(busy & ~queued & refusing & ~res_valid & (state == 0) & (~store | (drain == 0))):
            m.d.sync += [state.eq(2), res_valid.eq(1)]
        return m
