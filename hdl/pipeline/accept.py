"""Accept stage (A): holds the accepted instruction and hands it on as checked passes."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..params import GROUP_ROWS, Params, Policy
from .check_stage import checked_layout
from .address import unaddressed_layout
from .chunks import ChunkIndex
from .records import consts_layout
from .wmma_cost import WmmaCost

__all__ = ["AcceptStage"]


class AcceptStage(wiring.Component):
    """Accept stage, prefix ``a_``: takes a checked instruction from the check stage
    (:class:`~tensorlsu.hdl.pipeline.check_stage.CheckStage`: its error and its form's constants)
    and hands it to the pass queue as one or two
    checked passes (a wmma.load of 64 chunks has two), each with its slots' line and chunk
    indexes (:class:`~tensorlsu.hdl.pipeline.chunks.ChunkIndex`); under
    ``"h200"`` a wmma.load's last pass also carries the bank cycles the H200 takes for it
    (:class:`~tensorlsu.hdl.pipeline.wmma_cost.WmmaCost`).

    Latency: a pass is offered the cycle after the instruction is accepted; an stmatrix of
    more than 8 rows takes one more cycle for its overlap check. A new instruction is
    accepted in the cycle the last pass of the previous one moves on (the check stage's
    last range comparison ends in A's error register).

    The stmatrix overlap check (two threads storing one row) compares row ``i`` with rows
    ``i + d`` (``d`` = 1 … 8, mod 32) of a copy that turns by 8 rows a cycle: cycle ``c``
    covers distances ``8c + 1 … 8c + 8``, so an .x1 (8 rows) needs one cycle, .x2 / .x4 two
    (a distance ``d`` and ``32 − d`` are the same pairs). 256 comparators instead of 496
    pairs at once, and off the instruction port's path. Its verdict is only meaningful when
    every row is aligned and in range (then the row indices suffice); the pass carries it as
    ``ovl``, and the pass queue turns it into :attr:`~tensorlsu.hdl.codes.Error.OVERLAP`.

    Members
    -------
    instr : In(stream.Signature(checked_layout(params)))
        The checked instructions.
    passes : Out(stream.Signature(unaddressed_layout(params)))
        Checked passes, in order, for the address stage
        (:class:`~tensorlsu.hdl.pipeline.address.AddressStage`). A refused instruction gives one
        pass, with its error.
    busy : Out(1)
        An instruction is held.
    """

    def __init__(self, params: Params):
        self.params = params
        super().__init__({"instr": In(stream.Signature(checked_layout(params))),
                          "passes": Out(stream.Signature(unaddressed_layout(params))), "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        R, aw = p.lanes, p.pass_addr_bits
        ck = self.instr.payload
        ip = ck.instr
        chunks = m.submodules.chunks = ChunkIndex(p)
        m.d.comb += chunks.form.eq(ip.form)

        a_valid = Signal()
        a_form = Signal.like(ip.form)
        # wide data registers have no reset: nothing reads them before their valid bits say so
        a_addr = Signal.like(ip.addr, reset_less=True)
        a_err = Signal(Error)           # the checks of the accepted instruction but overlap
        a_stride_bytes = Signal.like(ck.stride_bytes)       # wmma (checked in range)
        a_glob = Signal()               # a wmma.load from global memory
        a_base = Signal(aw, reset_less=True)                 # its matrix address, resolved
        a_pass = Signal()
        # the constants of the pass in A, registered when the instruction is accepted (no form
        # decode between A and the stages after it); the second pass's wait in a_second
        a_consts = Signal(consts_layout(p))
        a_second = Signal(consts_layout(p))
        a_index = Signal.like(chunks.index)
        a_overlap, a_checked = self._overlap(m, a_valid, a_addr, a_consts, ck.first)

        out = self.passes
        move = Signal()                 # the pass moves on to the queue
        done = Signal()                 # ... and it is the instruction's last
        m.d.comb += [out.valid.eq(a_valid & a_checked), move.eq(out.valid & out.ready),
                     # an overlap refuses a store of one pass: the error decides when A is done
                     done.eq(move & ((a_err != Error.NONE) | (a_pass == a_consts.lastpass))),
                     self.instr.ready.eq(~a_valid | done), self.busy.eq(a_valid)]
        ps = out.payload.pass_
        m.d.comb += [out.payload.index.eq(a_index[0]), out.payload.base.eq(a_base),
                     out.payload.stride_bytes.eq(a_stride_bytes), ps.glob.eq(a_glob & a_consts.wmma)]
        m.d.comb += [ps.form.eq(a_form), ps.err.eq(a_err), ps.ovl.eq(a_overlap), ps.consts.eq(a_consts)]
        # the rows of an ldmatrix / stmatrix; a wmma.load's chunk addresses come from the
        # address stage
        m.d.comb += [ps.addr[i].eq(a_addr[i][:aw]) for i in range(R)]
        if p.schedule is Policy.H200:
            # the instruction's bank cycles as the H200 pays them, on its last pass
            cost = m.submodules.cost = WmmaCost()
            m.d.comb += [cost.form.eq(a_form), cost.base.eq(a_base), cost.stride_bytes.eq(a_stride_bytes),
                         ps.cost.eq(Mux((a_pass == a_consts.lastpass) & ~a_glob, cost.cycles, 0))]

        with m.If(self.instr.valid & self.instr.ready):
            m.d.sync += [a_valid.eq(1), a_form.eq(ip.form), a_addr.eq(ip.addr), a_err.eq(ck.err),
                         a_stride_bytes.eq(ck.stride_bytes), a_glob.eq(ck.glob), a_base.eq(ck.base),
                         a_pass.eq(0), a_consts.eq(ck.first),
                         a_second.eq(ck.second), a_index.eq(chunks.index)]
        with m.Elif(done):
            m.d.sync += a_valid.eq(0)
        with m.Elif(move):
            m.d.sync += [a_pass.eq(1), a_consts.eq(a_second), a_index[0].eq(a_index[1])]
        return m

    def _overlap(self, m, a_valid, a_addr, a_consts, in_consts):
        """The stmatrix overlap check over one or two cycles; returns (two threads store one
        row, the check is complete)."""
        p = self.params
        R, OD, rowbits = p.lanes, GROUP_ROWS, p.row_bits     # OD: distances per cycle
        ip = self.instr.payload.instr
        rot = [Signal(rowbits, name=f"a_rot{i}", reset_less=True) for i in range(R)]
        rot_used = Signal(R, name="a_rot_used")
        second = Signal(name="a_chk")   # the second check cycle
        found = Signal(name="a_found")
        overlap, checked = Signal(name="a_overlap"), Signal(name="a_checked")
        hits = [rot_used[(i + d) % R] & a_consts.used[i] & (a_addr[i][4:4 + rowbits] == rot[(i + d) % R])
                for i in range(R) for d in range(1, OD + 1)]
        m.d.comb += overlap.eq(~a_consts.load & (found | Cat(*hits).any()))
        # loads need no check, x1 stores one cycle
        m.d.comb += checked.eq(a_consts.load | ~a_consts.used[OD:].any() | second)
        with m.If(self.instr.valid & self.instr.ready):
            c = in_consts
            m.d.sync += [rot[i].eq(ip.addr[i][4:4 + rowbits]) for i in range(R)]
            m.d.sync += [rot_used.eq(Mux(c.load, 0, c.used)), second.eq(0), found.eq(0)]
        with m.Elif(a_valid & ~checked):
            m.d.sync += [rot[i].eq(rot[(i + OD) % R]) for i in range(R)]
            m.d.sync += [rot_used.eq(rot_used.rotate_right(OD)), second.eq(1), found.eq(overlap)]
        return overlap, checked
