"""Copy stage (C): tcgen05.cp through the shared banks into the Tensor Memory quadrants."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..lib.mux import mux_tree
from ..params import ROW_BITS, TMEM_LANES, TMEM_QUADRANTS, Params
from ..smem.banks import BankPortSignature
from ..smem.decompress import Decompressor
from ..smem.scheduler import BankScheduler
from .check import CopyCheck
from .placement import CopyPlacement
from ..tmem.records import tmem_copy_signature
from .records import FORMS, SLOTS, cp_instr_layout, cp_result_layout, form_lanes
from .walk import CopyWalk

__all__ = ["CopyStage"]

class CopyStage(wiring.Component):
    """Takes a tcgen05.cp, checks it (:class:`~tensorlsu.hdl.copy.check.CopyCheck`), and, once
    the shared path is quiet and the quadrants it writes are idle, holds both and walks it
    (:class:`~tensorlsu.hdl.copy.walk.CopyWalk`): each step's eight chunks are read from the
    bank quads (:class:`~tensorlsu.hdl.smem.scheduler.BankScheduler`: one line a quad a cycle;
    a step's chunks never share a quad, formal/copy_specs.py proves it), widened by the
    decompressor with a source format, and written into the quadrants, four columns of
    eight lanes a step (one lane a quadrant for a .4x256b). A result beat follows the last
    write; a refused copy gives one beat with its error and touches nothing.

    Rate: a step a cycle (its chunks lie in eight different quads, whatever the descriptor):
    128 bytes a clock, a .128x256b (4 KiB) in 32 steps. The next copy is taken and
    checked while one is walked, and its first step follows the last step of the one before.
    Latency: the instruction is checked the cycle after it is taken and its verdict registered;
    the claim can be made the cycle after; the walk starts the cycle the claim is made; a step's chunks are read in the cycle it is served, registered the
    next, written the one after; the result beat is offered the cycle after the last write.
    A refused copy answers after every copy before it.

    Ordering: from the cycle a copy is taken until its reads are done the shared path takes
    no instruction (``waiting``, ``active``), and an instruction already in it finishes first
    (the claim waits for ``quiet``); a copy is not taken while a shared-path instruction is
    offered (``defer``: copies back to back do not starve it); the quadrants a
    copy writes take no tcgen05 instruction, fill or dump (``hold``) until its last write has
    landed, and it waits for them to be idle. So a tcgen05.ld issued after a copy's result reads the
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
    waiting : Out(1)
        A copy has been taken and has not claimed yet: the shared path must take nothing
        (an instruction offered after the copy must not overtake it).
    defer : In(1)
        Take no copy this cycle (a shared-path instruction is offered: it goes first).
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
            "quiet": In(1), "active": Out(1), "reading": Out(1), "defer": In(1), "waiting": Out(1),
            "tmem_idle": In(TMEM_QUADRANTS), "hold": Out(TMEM_QUADRANTS),
            "tmem": Out(tmem_copy_signature(p.tmem.columns)).array(TMEM_QUADRANTS),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        check = m.submodules.check = CopyCheck(p, p.tmem.columns)
        walk = m.submodules.walk = CopyWalk(p)
        sched = m.submodules.sched = BankScheduler(rows=SLOTS, quads=p.quads, line_bits=p.line_bits)

        # -- the next copy: held and checked while the one before is walked ----------------
        held = Signal(cp_instr_layout(), name="c_instr")
        size = Signal.like(self.smem_size, name="c_smem_size")
        taken, checking, checked = Signal(name="c_taken"), Signal(name="c_checking"), Signal(name="c_checked")
        # the check's verdict and fields, registered (the check is deep: a multiply-add and a
        # comparison; nothing waits on it while a copy is walked)
        verdict = Signal(Error, name="c_verdict")
        fields = Signal(data.StructLayout({"start": unsigned(len(check.start)), "lbo": unsigned(len(check.lbo)),
                                           "sbo": unsigned(len(check.sbo)), "base_offset": 3, "swizzle_log": 2}),
                        name="c_fields")
        m.d.comb += [check.instr.eq(held), check.smem_size.eq(size), self.instr.ready.eq(~taken & ~self.defer),
                     self.waiting.eq(taken)]
        with m.If(self.instr.valid & self.instr.ready):
            m.d.sync += [held.eq(self.instr.payload), size.eq(self.smem_size), taken.eq(1), checking.eq(1)]
        with m.If(checking):
            m.d.sync += [checking.eq(0), checked.eq(1), verdict.eq(check.error), fields.start.eq(check.start),
                         fields.lbo.eq(check.lbo), fields.sbo.eq(check.sbo), fields.base_offset.eq(check.base_offset),
                         fields.swizzle_log.eq(check.swizzle_log)]
        targets = Signal(TMEM_QUADRANTS, name="c_targets")      # the quadrants the form writes
        with m.Switch(held.form):
            for f in range(len(FORMS)):
                with m.Case(f):
                    # from the lane table (a .4x256b's lane origin stays in the first quadrant)
                    m.d.comb += targets.eq(sum({1 << (int(lane) // TMEM_LANES) for lane in form_lanes(f).flat}))

        # -- the copy being walked: what its steps' writes need -------------------------------
        ctx = Signal(data.StructLayout({"form": unsigned(len(held.form)), "fmt": unsigned(len(held.fmt)),
                                        "taddr": unsigned(32), "targets": unsigned(TMEM_QUADRANTS)}),
                     name="c_copy")
        in_flight = Signal(name="c_in_flight")  # steps of a copy still to be read or written
        ok_results = Signal(range(4), name="c_ok_results")      # copies done, not yet answered
        refusal = Signal(Error, name="c_refusal")               # a refused copy's beat, waiting
        # a checked copy starts as the walk takes it, the shared path is quiet and its
        # quadrants are idle; a refused one answers once every copy before it has
        claim = Signal(name="c_claim")
        # (at most three answers wait: two done, one finishing)
        m.d.comb += claim.eq(checked & (verdict == Error.NONE) & walk.ready & self.quiet
                             & ((self.tmem_idle & targets) == targets) & (ok_results < 2))
        refuse = Signal(name="c_refuse")
        m.d.comb += refuse.eq(checked & (verdict != Error.NONE) & ~in_flight & (ok_results == 0)
                              & (refusal == Error.NONE))
        with m.If(claim):
            m.d.sync += [checked.eq(0), taken.eq(0), ctx.form.eq(held.form), ctx.fmt.eq(held.fmt),
                         ctx.taddr.eq(held.taddr), ctx.targets.eq(targets)]
        with m.If(refuse):
            m.d.sync += [checked.eq(0), taken.eq(0), refusal.eq(verdict)]
        m.d.comb += [walk.start.eq(claim), walk.form.eq(held.form), walk.addr.eq(fields.start),
                     walk.lbo.eq(fields.lbo), walk.sbo.eq(fields.sbo), walk.base_offset.eq(fields.base_offset),
                     walk.swizzle_log.eq(fields.swizzle_log)]

        # -- reads: a step's chunks onto the quads -------------------------------------------
        step = walk.step
        valid_slots = Cat(*[step.slots[k].valid for k in range(SLOTS)])
        done = Signal(SLOTS, name="c_served")           # slots of this step already read
        m.d.comb += sched.eligible.eq(valid_slots & ~done)
        for k in range(SLOTS):
            m.d.comb += [sched.quad[k].eq(step.slots[k].quad), sched.line[k].eq(step.slots[k].line)]
        for q in range(p.quads):
            g = sched.grant[q]
            m.d.comb += [self.banks.line[q].eq(g.line), self.banks.read[q].eq(g.valid)]
        complete = Signal(name="c_complete")            # every slot of the step is read by now
        m.d.comb += [complete.eq(walk.valid & ((done | sched.served) == valid_slots)), walk.advance.eq(complete)]
        with m.If(complete):
            m.d.sync += done.eq(0)
        with m.Elif(walk.valid):
            m.d.sync += done.eq(done | sched.served)

        # a step's write, decided as it is read: the columns, quadrants and lanes
        info = data.StructLayout({"valid": 1, "last": 1, "fmt": unsigned(len(held.fmt)),
                                  "col": unsigned((p.tmem.columns - 1).bit_length()),
                                  "quads": unsigned(TMEM_QUADRANTS), "lanes": unsigned(TMEM_LANES), "four": 1})
        now = Signal(info, name="c_step")
        place = m.submodules.place = CopyPlacement(p.tmem)
        m.d.comb += [place.form.eq(ctx.form), place.taddr.eq(ctx.taddr), place.group.eq(step.group),
                     place.chunk.eq(step.chunk),
                     now.valid.eq(complete), now.last.eq(step.last), now.fmt.eq(ctx.fmt), now.col.eq(place.col),
                     now.quads.eq(place.quads), now.lanes.eq(place.lanes), now.four.eq(place.four)]
        # the reads a cycle later: each slot's row from its quad; the write the cycle after
        served_d = Signal(SLOTS, name="c_served_d")
        quad_d = Signal(data.ArrayLayout(unsigned(3), SLOTS), name="c_quad_d")
        step_d, write = Signal(info, name="c_step_d"), Signal(info, name="c_write")
        reading = Signal(name="c_reading")      # the last reads of a copy hold the banks a cycle more
        m.d.sync += [served_d.eq(sched.served), reading.eq(complete & step.last), step_d.eq(now), write.eq(step_d)]
        m.d.sync += [quad_d[k].eq(step.slots[k].quad) for k in range(SLOTS)]
        rows = [Signal(ROW_BITS, name=f"c_row{k}") for k in range(SLOTS)]
        for k in range(SLOTS):
            with m.If(served_d[k]):
                m.d.sync += rows[k].eq(mux_tree(quad_d[k], [self.banks.rdata[q] for q in range(p.quads)]))
        m.d.comb += [in_flight.eq(walk.busy | step_d.valid | write.valid),
                     self.reading.eq(walk.busy | reading), self.active.eq(claim | walk.busy | reading),
                     # held: the walking copy's quadrants, those its steps still write, the claim's
                     self.hold.eq(Mux(walk.busy, ctx.targets, 0) | Mux(step_d.valid, step_d.quads, 0)
                                  | Mux(write.valid, write.quads, 0) | Mux(claim, targets, 0))]

        # -- writes: widened rows into the quadrants -----------------------------------------
        wide = []
        for k in range(SLOTS):
            dec = m.submodules[f"decompress{k}"] = Decompressor()
            m.d.comb += [dec.row.eq(rows[k]), dec.fmt.eq(write.fmt)]
            wide.append(dec.out)
        for q in range(TMEM_QUADRANTS):
            port = self.tmem[q]
            m.d.comb += [port.valid.eq(write.valid & write.quads[q]), port.payload.col.eq(write.col),
                         port.payload.lanes.eq(write.lanes)]
            for k in range(SLOTS):
                # lane 8a + k takes slot k; a .4x256b's quadrant takes its one row in every slot
                m.d.comb += port.payload.rows[k].eq(Mux(write.four, wide[q], wide[k]))

        # -- result beats, in order: the copies done, then a refusal -------------------------
        answered = Signal(name="c_answered")
        finished = Signal(name="c_finished")
        m.d.comb += [finished.eq(write.valid & write.last),
                     self.result.valid.eq((ok_results != 0) | (refusal != Error.NONE)),
                     self.result.payload.error.eq(Mux(ok_results != 0, Error.NONE, refusal)),
                     answered.eq(self.result.valid & self.result.ready)]
        with m.If(answered & (ok_results == 0)):
            m.d.sync += refusal.eq(Error.NONE)
        m.d.sync += ok_results.eq(ok_results + finished - (answered & (ok_results != 0)))
        return m
