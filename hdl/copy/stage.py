"""Copy stage (C): tcgen05.cp through the shared banks into the Tensor Memory quadrants."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import ROW_BITS, TMEM_LANES, TMEM_QUADRANTS, Params
from ..smem.banks import BankPortSignature, SharedBanks
from ..smem.decompress import Decompressor
from tensorlsu.sim.tmem_plan import PORTS_PER_BANK
from ..tmem.records import COPY_COLUMNS, tmem_copy_signature
from .check import ADDR_BITS, CopyCheck
from .placement import CopyPlacement
from .records import FORMS, SLOTS, cp_instr_layout, cp_result_layout, form_lanes
from .walk import CopyWalk

__all__ = ["CopyStage", "CHECKED"]

#: Copies taken and not yet claimed or refused: those in the check's pipeline and those
#: checked and waiting. Three keep copies of two steps (a .4x256b) a copy every two clocks.
CHECKED = 3


class CopyStage(wiring.Component):
    """Takes a tcgen05.cp, checks it (:class:`~tensorlsu.hdl.copy.check.CopyCheck`), and, once
    the shared path is quiet and the quadrants it writes are idle, holds both and walks it
    (:class:`~tensorlsu.hdl.copy.walk.CopyWalk`): each step's eight chunks are read from the
    bank quads in one cycle (they lie in eight different quads whatever the descriptor:
    formal/copy_specs.py proves it, so each quad takes the one chunk whose quad it is),
    widened by the decompressor with a source format, and written into the quadrants, four
    columns of eight lanes a step (one lane a quadrant for a .4x256b). A result beat follows
    the last write; a refused copy gives one beat with its error and touches nothing.

    Rate: a step a cycle: 128 bytes a clock, a .128x256b (4 KiB) in 32 steps; with quadrants of
    one bank (``TmemParams.banks``: two ports, two columns a cycle) a step every two cycles, the
    same step offered twice, a half of its columns each (64 bytes a clock). Up to
    :data:`CHECKED` copies are taken and checked while one is walked (the check is a
    pipeline), and a copy's first step follows the last step of the one before.

    Latency, each a register: taken (the intake's beat) → the check's :data:`CopyCheck.LATENCY`
    stages → the checked queue → the claim (when the walk can take it, the shared path is
    quiet and its quadrants idle) → a step computed by the walk → its reads on the banks →
    the rows back (the banks' :data:`~tensorlsu.hdl.smem.banks.SharedBanks.READ_LATENCY`)
    and registered → the write into the quadrants → the result beat. A refused copy answers
    after every copy before it.

    Ordering: from the cycle a copy is taken until its reads are done the shared path takes
    no instruction (``waiting``, ``reading``), and an instruction already in it finishes first
    (the claim waits for ``quiet``); a copy is not taken while a shared-path instruction is
    offered (``defer``: copies back to back do not starve it); the quadrants a copy writes take
    no tcgen05 instruction, fill or dump (``hold``, a register, from the cycle after
    the claim) until its last write has landed, and it is claimed only when they are idle with
    nothing offered on their ports (``tmem_idle``): so nothing enters them in the claim's cycle
    either. A tcgen05.ld issued after a copy's result reads the copy, and a stmatrix issued
    after a copy was taken does not change what it reads.

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
        The copy drives the banks' port this cycle (a register: the port's select).
    reading : Out(1)
        The copy holds the banks: from the cycle after its claim until its last read's rows
        are back (a register's decode).
    waiting : Out(1)
        A copy has been taken and has not claimed or been refused: the shared path must take
        nothing (an instruction offered after the copy must not overtake it).
    defer : In(1)
        Take no copy this cycle (a shared-path instruction is offered: it goes first).
    tmem_idle : In(TMEM_QUADRANTS)
        The quadrant is idle and nothing is offered on its ports.
    hold : Out(TMEM_QUADRANTS)
        The quadrants the copy holds (a register).
    tmem : Out(tmem_copy_signature(columns)).array(TMEM_QUADRANTS)
        Per quadrant, a step's write (:func:`~tensorlsu.hdl.copy.records.tmem_copy_layout`),
        taken in the cycle it is offered (the quadrant is held: nothing else writes it).

    A step writes four columns of a quadrant, one per port of its two banks (with one bank,
    two a cycle: ``half`` says which).
    """

    def __init__(self, params: Params):
        if params.tmem is None:
            raise ValueError("tcgen05.cp needs Tensor Memory (tmem_columns > 0)")
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

    def phases(self) -> int:
        """Cycles a step's write takes: its columns over a quadrant's ports."""
        return COPY_COLUMNS // (PORTS_PER_BANK * self.params.tmem.banks)

    def _phase(self, m, walk):
        """A step is read in one cycle and written in :meth:`phases`: the step's phase, and
        whether it is its last (the walk moves on after it; with one phase, every cycle). Each
        phase reads the step again."""
        phases = self.phases()
        phase = Signal(range(phases), name="c_phase")
        at_end = Signal(name="c_phase_end")
        m.d.comb += at_end.eq(phase == phases - 1)
        with m.If(walk.valid):
            m.d.sync += phase.eq(Mux(at_end, 0, phase + 1))
        return phase, at_end

    def elaborate(self, platform):
        m = Module()
        p = self.params
        check = m.submodules.check = CopyCheck(p, p.tmem.columns)
        walk = m.submodules.walk = CopyWalk(p)

        # -- taken copies: the check's pipeline, then a queue of checked ones -------------------
        taken = Signal(range(CHECKED + 1), name="c_taken")     # taken, not yet claimed or refused
        take = Signal(name="c_take")
        m.d.comb += [self.instr.ready.eq((taken < CHECKED) & ~self.defer), take.eq(self.instr.valid & self.instr.ready),
                     check.valid.eq(take), check.instr.eq(self.instr.payload), check.smem_size.eq(self.smem_size),
                     self.waiting.eq(taken != 0)]
        checked = data.StructLayout({
            "valid": 1, "ok": 1, "form": unsigned(len(check.instr.form)), "fmt": unsigned(len(check.instr.fmt)),
            "taddr": unsigned(32), "targets": unsigned(TMEM_QUADRANTS), "error": Error,
            "start": unsigned(ADDR_BITS), "lbo": unsigned(ADDR_BITS), "sbo": unsigned(ADDR_BITS),
            "base_offset": 3, "swizzle_log": 2})
        queue = [Signal(checked, name=f"c_checked{i}") for i in range(CHECKED)]
        head = queue[0]
        entry = Signal(checked, name="c_entry")
        out = check.out_instr
        m.d.comb += [entry.valid.eq(check.out_valid), entry.ok.eq(check.out_valid & (check.error == Error.NONE)),
                     entry.form.eq(out.form), entry.fmt.eq(out.fmt),
                     entry.taddr.eq(out.taddr), entry.error.eq(check.error), entry.start.eq(check.start),
                     entry.lbo.eq(check.lbo), entry.sbo.eq(check.sbo), entry.base_offset.eq(check.base_offset),
                     entry.swizzle_log.eq(check.swizzle_log)]
        with m.Switch(out.form):
            for f in range(len(FORMS)):
                with m.Case(f):
                    # the quadrants the form writes, from the lane table (a .4x256b's lane
                    # origin stays in the first quadrant)
                    m.d.comb += entry.targets.eq(sum({1 << (int(lane) // TMEM_LANES) for lane in form_lanes(f).flat}))

        # -- the copy being walked: what its steps' writes need -------------------------------
        ctx = Signal(data.StructLayout({"form": unsigned(len(head.form)), "fmt": unsigned(len(head.fmt)),
                                        "taddr": unsigned(32), "targets": unsigned(TMEM_QUADRANTS)}),
                     name="c_copy")
        in_flight = Signal(name="c_in_flight")  # steps of a copy still to be read or written
        ok_results = Signal(range(4), name="c_ok_results")      # copies done, not yet answered
        refusal = Signal(Error, name="c_refusal")               # a refused copy's beat, waiting
        # a checked copy starts as the walk takes it, the shared path is quiet and its
        # quadrants are idle; a refused one answers once every copy before it has
        claim = Signal(name="c_claim")
        # (at most three answers wait: two done, one finishing)
        m.d.comb += claim.eq(head.ok & walk.ready & self.quiet
                             & ((self.tmem_idle & head.targets) == head.targets) & (ok_results < 2))
        refuse = Signal(name="c_refuse")
        m.d.comb += refuse.eq(head.valid & (head.error != Error.NONE) & ~in_flight & (ok_results == 0)
                              & (refusal == Error.NONE))
        pop = Signal(name="c_pop")
        m.d.comb += pop.eq(claim | refuse)
        m.d.sync += taken.eq(taken + take - pop)
        # the queue: the head leaves on a claim or refusal, the others move up, and a copy out
        # of the check lands behind the last (there is room: at most CHECKED are taken). Both
        # outcomes are built from the registers alone and the pop picks one (it comes late)
        held = Signal(range(CHECKED + 1), name="c_held")
        m.d.comb += held.eq(sum(q.valid for q in queue))
        for i, slot in enumerate(queue):
            stay, move = Signal(checked, name=f"c_stay{i}"), Signal(checked, name=f"c_move{i}")
            m.d.comb += [stay.eq(Mux(entry.valid & (held == i), entry, slot)),
                         move.eq(Mux(entry.valid & (held == i + 1), entry, queue[i + 1] if i + 1 < CHECKED else 0))]
            m.d.sync += slot.eq(Mux(pop, move, stay))
        with m.If(claim):
            m.d.sync += [ctx.form.eq(head.form), ctx.fmt.eq(head.fmt), ctx.taddr.eq(head.taddr),
                         ctx.targets.eq(head.targets)]
        with m.If(refuse):
            m.d.sync += refusal.eq(head.error)
        phase, at_end = self._phase(m, walk)
        m.d.comb += [walk.start.eq(claim), walk.form.eq(head.form), walk.addr.eq(head.start),
                     walk.lbo.eq(head.lbo), walk.sbo.eq(head.sbo), walk.base_offset.eq(head.base_offset),
                     walk.swizzle_log.eq(head.swizzle_log), walk.advance.eq(at_end)]

        # -- a step's reads, registered, then on the banks -------------------------------------
        # what a step's write needs, decided as it is walked: the columns, quadrants and lanes
        info = data.StructLayout({"valid": 1, "last": 1, "half": 1, "fmt": unsigned(len(head.fmt)),
                                  "col": unsigned((p.tmem.columns - 1).bit_length()),
                                  "quads": unsigned(TMEM_QUADRANTS), "lanes": unsigned(TMEM_LANES), "four": 1})
        step = walk.step
        place = m.submodules.place = CopyPlacement(p.tmem)
        now = Signal(info, name="c_step")
        m.d.comb += [place.form.eq(ctx.form), place.taddr.eq(ctx.taddr), place.group.eq(step.group),
                     place.chunk.eq(step.chunk),
                     now.valid.eq(walk.valid), now.last.eq(step.last & at_end), now.half.eq(phase),
                     now.fmt.eq(ctx.fmt), now.col.eq(place.col),
                     now.quads.eq(place.quads), now.lanes.eq(place.lanes), now.four.eq(place.four)]
        # the step on the banks: per slot whether it reads, its quad and its line (the quad's
        # one-hot is decoded after the register: the walk's adder and swizzle fill this cycle)
        read = Signal(info, name="c_read")
        read_slot = Signal(data.ArrayLayout(step.slots[0].shape(), SLOTS), name="c_read_slot")
        m.d.sync += [read.eq(now), read_slot.eq(step.slots)]
        read_quad = Signal(data.ArrayLayout(unsigned(p.quads), SLOTS), name="c_read_quad")
        for k in range(SLOTS):
            m.d.comb += read_quad[k].eq(Mux(read_slot[k].valid & read.valid, 1 << read_slot[k].quad, 0))
        for q in range(p.quads):
            # the one slot whose chunk lies in quad q, if any
            m.d.comb += [self.banks.read[q].eq(Cat(*[read_quad[k][q] for k in range(SLOTS)]).any()),
                         self.banks.line[q].eq(_or(*[Mux(read_quad[k][q], read_slot[k].line, 0)
                                                     for k in range(SLOTS)]))]
        # the reads on their way back (the banks' read latency), the rows of the last taken
        # each slot's from its quad; the write the cycle after
        back, rows_at, quad_d = [], read, read_quad
        for k in range(SharedBanks.READ_LATENCY):
            final = k == SharedBanks.READ_LATENCY - 1
            step_back = Signal(info, name="c_rows_at" if final else f"c_back{k}")
            quad_back = Signal.like(read_quad, name="c_quad_d" if final else f"c_back{k}_quad")
            m.d.sync += [step_back.eq(rows_at), quad_back.eq(quad_d)]
            back.append(step_back)
            rows_at, quad_d = step_back, quad_back
        write, returning = Signal(info, name="c_write"), Cat(*[b.valid for b in back]).any()
        m.d.sync += write.eq(rows_at)
        rows = [Signal(ROW_BITS, name=f"c_row{k}", reset_less=True) for k in range(SLOTS)]
        for k in range(SLOTS):
            with m.If(quad_d[k].any()):
                m.d.sync += rows[k].eq(_or(*[Mux(quad_d[k][q], self.banks.rdata[q], 0) for q in range(p.quads)]))
        m.d.comb += [in_flight.eq(walk.busy | read.valid | returning | write.valid),
                     self.active.eq(read.valid), self.reading.eq(walk.busy | read.valid | returning)]
        # held: the walking copy's quadrants, and those its steps still write; one register,
        # set a cycle ahead from what the walk, the reads and the rows will hold next (the
        # quadrants' memory enables wait on it)
        hold = Signal(TMEM_QUADRANTS, name="c_hold")
        m.d.sync += hold.eq(Mux(claim, head.targets, 0) | Mux(walk.valid & ~step.last, ctx.targets, 0)
                            | Mux(now.valid, now.quads, 0) | Mux(read.valid, read.quads, 0)
                            | _or(*[Mux(b.valid, b.quads, 0) for b in back]))
        m.d.comb += self.hold.eq(hold)

        # -- writes: widened rows into the quadrants -----------------------------------------
        wide = []
        for k in range(SLOTS):
            dec = m.submodules[f"decompress{k}"] = Decompressor()
            m.d.comb += [dec.row.eq(rows[k]), dec.fmt.eq(write.fmt)]
            wide.append(dec.out)
        for q in range(TMEM_QUADRANTS):
            port = self.tmem[q]
            m.d.comb += [port.valid.eq(write.valid & write.quads[q]), port.payload.col.eq(write.col),
                         port.payload.lanes.eq(write.lanes), port.payload.half.eq(write.half)]
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


def _or(*values):
    """The OR of one-hot-selected values (at most one is nonzero): a balanced tree."""
    while len(values) > 1:
        values = [values[i] | values[i + 1] if i + 1 < len(values) else values[i] for i in range(0, len(values), 2)]
    return values[0]
