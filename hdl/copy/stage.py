"""Copy stage (C): tcgen05.cp through the shared banks into the Tensor Memory quadrants."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from tensorlsu.sim.descriptor import CHUNK

from ..codes import Error
from ..lib.mux import mux_tree
from ..params import ROW_BITS, TMEM_LANES, TMEM_QUADRANTS, Params
from ..smem.banks import BankPortSignature
from ..smem.decompress import Decompressor
from ..smem.scheduler import BankScheduler
from .check import CopyCheck
from ..tmem.records import tmem_copy_signature
from .records import FORMS, SLOTS, cp_instr_layout, cp_result_layout, group_targets
from .walk import CopyWalk

__all__ = ["CopyStage"]

#: Columns a chunk fills (16 bytes, 4 bytes a column).
CHUNK_COLS = CHUNK // 4


class CopyStage(wiring.Component):
    """Takes a tcgen05.cp, checks it (:class:`~tensorlsu.hdl.copy.check.CopyCheck`), and, once
    the shared path is quiet and the quadrants it writes are idle, holds both and walks it
    (:class:`~tensorlsu.hdl.copy.walk.CopyWalk`): each step's eight chunks are read from the
    bank quads (:class:`~tensorlsu.hdl.smem.scheduler.BankScheduler`: one line a quad a cycle,
    so chunks that collide in a quad take more cycles, the bank rule), widened by the
    decompressor with a source format, and written into the quadrants, four columns of
    eight lanes a step (one lane a quadrant for a .4x256b). A result beat follows the last
    write; a refused copy gives one beat with its error and touches nothing.

    Rate: a step a cycle when its chunks lie in eight different quads (every canonical
    layout): 128 bytes a clock, a .128x256b (4 KiB) in 32 steps. Latency: the instruction is
    held the cycle after it is taken and checked; the walk starts the cycle the claim is made;
    a step's chunks are read in the cycle it is served, registered the next, written the one
    after; the result beat is offered the cycle after the last write.

    Ordering: while a copy is held the shared path takes no instruction (``active``), and an
    instruction already in it finishes first (the claim waits for ``quiet``); the quadrants a
    copy writes take no tcgen05 instruction, fill or dump (``hold``) until its result beat,
    and it waits for them to be idle. So a tcgen05.ld issued after a copy's result reads the
    copy, and a stmatrix issued after a copy was taken does not change what it reads.

    Members
    -------
    instr : In(stream.Signature(cp_instr_layout()))
    smem_size : In(range(smem_bytes + 1))
    result : Out(stream.Signature(cp_result_layout()))
    banks : Out(BankPortSignature(params))
        The copy's reads, while ``active``.
    quiet : In(1)
        Nothing is in flight on the shared path and no fill or dump holds the banks.
    active : Out(1)
        The copy holds the banks (this cycle: the shared path must take nothing).
    reading : Out(1)
        ``active`` without the claim of this cycle (a register's decode: a fill may wait on
        it without a loop through the claim).
    tmem_idle : In(TMEM_QUADRANTS)
    hold : Out(TMEM_QUADRANTS)
        The quadrants the copy claims or holds (combinational with the claim).
    tmem : Out(tmem_copy_signature(columns)).array(TMEM_QUADRANTS)
        Per quadrant, a step's write (:func:`~tensorlsu.hdl.copy.records.tmem_copy_layout`),
        taken in the cycle it is offered (the quadrant is held: nothing else writes it).

    A step writes four columns of a quadrant at once, one per port of its two banks: the
    Tensor Memory must have two banks a quadrant (``TmemParams.banks``).
    """

    def __init__(self, params: Params):
        if params.tmem is None:
            raise ValueError("tcgen05.cp needs Tensor Memory (tmem_columns > 0)")
        if params.tmem.banks != 2:
            raise ValueError("tcgen05.cp writes four columns a step: it needs two Tensor Memory banks a "
                             f"quadrant, not {params.tmem.banks}")
        self.params = p = params
        super().__init__({
            "instr": In(stream.Signature(cp_instr_layout())),
            "smem_size": In(range(p.smem_bytes + 1), init=p.smem_bytes),
            "result": Out(stream.Signature(cp_result_layout())),
            "banks": Out(BankPortSignature(p)),
            "quiet": In(1), "active": Out(1), "reading": Out(1),
            "tmem_idle": In(TMEM_QUADRANTS), "hold": Out(TMEM_QUADRANTS),
            "tmem": Out(tmem_copy_signature(p.tmem.columns)).array(TMEM_QUADRANTS),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        check = m.submodules.check = CopyCheck(p, p.tmem.columns)
        walk = m.submodules.walk = CopyWalk(p)
        sched = m.submodules.sched = BankScheduler(rows=SLOTS, quads=p.quads, line_bits=p.line_bits)

        # -- the instruction, held and checked --------------------------------------------
        held = Signal(cp_instr_layout(), name="c_instr")
        size = Signal.like(self.smem_size, name="c_smem_size")
        checked, running, answering = Signal(name="c_checked"), Signal(name="c_running"), Signal(name="c_answer")
        error = Signal(Error, name="c_error")
        taken = Signal(name="c_taken")          # an instruction is held
        m.d.comb += [check.instr.eq(held), check.smem_size.eq(size),
                     self.instr.ready.eq(~taken)]
        with m.If(self.instr.valid & self.instr.ready):
            m.d.sync += [held.eq(self.instr.payload), size.eq(self.smem_size), taken.eq(1), checked.eq(1)]

        targets = Signal(TMEM_QUADRANTS, name="c_targets")      # the quadrants the form writes
        with m.Switch(held.form):
            for f, (shape, _) in enumerate(FORMS):
                with m.Case(f):
                    mask = 0b1111 if shape == "4x256b" else 0
                    for q_mask, _ in group_targets(f):
                        mask |= q_mask
                    m.d.comb += targets.eq(mask)

        claim = Signal(name="c_claim")
        m.d.comb += claim.eq(checked & (check.error == Error.NONE) & self.quiet
                             & ((self.tmem_idle & targets) == targets))
        with m.If(checked & (check.error != Error.NONE)):
            m.d.sync += [checked.eq(0), answering.eq(1), error.eq(check.error)]
        with m.Elif(claim):
            m.d.sync += [checked.eq(0), running.eq(1), error.eq(Error.NONE)]
        m.d.comb += [walk.start.eq(claim), walk.form.eq(held.form), walk.addr.eq(check.start),
                     walk.lbo.eq(check.lbo), walk.sbo.eq(check.sbo), walk.base_offset.eq(check.base_offset),
                     walk.swizzle_log.eq(check.swizzle_log)]
        reading = Signal(name="c_reading")      # the walk or its last reads still hold the banks
        m.d.comb += [self.reading.eq(walk.busy | reading), self.active.eq(claim | walk.busy | reading),
                     self.hold.eq(Mux(claim | running, targets, 0))]

        # -- reads: a step's chunks onto the quads -------------------------------------------
        step = walk.step
        done = Signal(SLOTS, name="c_served")           # slots of this step already read
        m.d.comb += [sched.eligible.eq(Cat(*[step.slots[k].valid for k in range(SLOTS)]) & ~done)]
        for k in range(SLOTS):
            m.d.comb += [sched.quad[k].eq(step.slots[k].quad), sched.line[k].eq(step.slots[k].line)]
        for q in range(p.quads):
            g = sched.grant[q]
            m.d.comb += [self.banks.line[q].eq(g.line), self.banks.read[q].eq(g.valid)]
        complete = Signal(name="c_complete")            # every slot of the step is read by now
        m.d.comb += [complete.eq(walk.valid & ((done | sched.served) == Cat(*[step.slots[k].valid
                                                                             for k in range(SLOTS)]))),
                     walk.advance.eq(complete)]
        with m.If(complete):
            m.d.sync += done.eq(0)
        with m.Elif(walk.valid):
            m.d.sync += done.eq(done | sched.served)

        # the reads a cycle later: each slot's row from its quad
        served_d = Signal(SLOTS, name="c_served_d")
        quad_d = Signal(data.ArrayLayout(unsigned(3), SLOTS), name="c_quad_d")
        info = data.StructLayout({"valid": 1, "chunk": 1, "group": unsigned(4), "last": 1})
        step_d, write = Signal(info, name="c_step_d"), Signal(info, name="c_write")
        m.d.sync += [served_d.eq(sched.served), reading.eq(complete & step.last),
                     step_d.valid.eq(complete), step_d.chunk.eq(step.chunk), step_d.group.eq(step.group),
                     step_d.last.eq(step.last)]
        m.d.sync += [quad_d[k].eq(step.slots[k].quad) for k in range(SLOTS)]
        rows = [Signal(ROW_BITS, name=f"c_row{k}") for k in range(SLOTS)]
        for k in range(SLOTS):
            with m.If(served_d[k]):
                m.d.sync += rows[k].eq(mux_tree(quad_d[k], [self.banks.rdata[q] for q in range(p.quads)]))
        m.d.sync += write.eq(step_d)

        # -- writes: widened rows into the quadrants -----------------------------------------
        wide = []
        for k in range(SLOTS):
            dec = m.submodules[f"decompress{k}"] = Decompressor()
            m.d.comb += [dec.row.eq(rows[k]), dec.fmt.eq(held.fmt)]
            wide.append(dec.out)
        lane0, col0 = held.taddr[16:21], held.taddr[0:16]
        four = Signal(name="c_four_rows")               # .4x256b: a row a quadrant
        first = Signal(range(TMEM_LANES), name="c_first_lane")      # of the group's eight
        qmask = Signal(TMEM_QUADRANTS, name="c_group_quadrants")
        with m.Switch(held.form):
            for f, (shape, _) in enumerate(FORMS):
                with m.Case(f):
                    if shape == "4x256b":
                        m.d.comb += [four.eq(1), qmask.eq(0b1111)]
                        continue
                    with m.Switch(write.group):
                        for g, (mask, lane) in enumerate(group_targets(f)):
                            with m.Case(g):
                                m.d.comb += [qmask.eq(mask), first.eq(lane)]
        for q in range(TMEM_QUADRANTS):
            port = self.tmem[q]
            m.d.comb += [port.valid.eq(write.valid & qmask[q]),
                         port.payload.col.eq(col0 + CHUNK_COLS * write.chunk)]
            for k in range(SLOTS):
                # lane 8a + k takes slot k; a .4x256b's quadrant takes its one row in every slot
                m.d.comb += port.payload.rows[k].eq(Mux(four, wide[q], wide[k]))
            m.d.comb += port.payload.lanes.eq(Mux(four, 1 << lane0, 0xFF << first))

        # -- the result beat -----------------------------------------------------------------
        with m.If(write.valid & write.last):
            m.d.sync += [running.eq(0), answering.eq(1)]
        m.d.comb += [self.result.valid.eq(answering), self.result.payload.error.eq(error)]
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += [answering.eq(0), taken.eq(0)]
        return m
