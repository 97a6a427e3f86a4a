"""The load/store unit: its stages, connected.

An instruction (form id, 32 thread addresses, a wmma.load's stride and state space) goes through

======  ==================  ===============================================================
stage   component           what it does
======  ==================  ===============================================================
K       CheckStage          checks it and decodes its form's constants, over two registers
A       AcceptStage         makes 1-2 checked passes, with a wmma.load's chunk indexes
X       AddressStage        a wmma.load pass's chunk addresses, over two registers
B       PassQueue           holds checked passes (two; more with more global contexts), registered
—       Take                the oldest pass leaves the queue into an entry, into F or G and the ring
F       BankStage           serves a pass's rows window by window through the bank crossbar
G       GlobalFetch         serves a global wmma.load pass through the AXI port, in F's place
—       ProgressMerge       F's and G's progress as one, for E
—       RowRing             places each load in the row buffer; F's and G's go-ahead (the ring rule)
E       ResultStage         instruction entries, row buffer, result beats via the shuffle
—       SharedBanks         the bank quads' memories and the fill / dump port
T0…T3   TmemQuadrant        Tensor Memory: one lane quadrant each, its own tcgen05 port
C       CopyStage           tcgen05.cp: shared banks → decompressor → quadrants
======  ==================  ===============================================================

Every port is registered inside the unit: an intake slice (``hdl/lib/slice.py``) on each
input stream, an outlet slice on each output stream, an ``AxiSlice`` on the AXI4 port's read
channels and a register on ``smem_size``; each adds a clock where it sits and nothing else.
(With ``Params.port_slices = "forward"``, the FPGA build's, each ``ready`` passes through its
slice.) The reset is registered too (``core_rst``, the reset of the unit's ``core`` domain):
the unit enters and leaves reset a clock after ``rst``, and its input streams are not ready
while in reset.

The four Tensor Memory quadrants sit beside the shared-memory path and share nothing with it
or with each other: warp ``w`` of a warpgroup drives ``tmem_*[w mod 4]``. The copy stage
joins them: it takes the banks while the shared path is quiet (which then takes no
instruction) and holds the quadrants it writes (docs/tcgen05-cp.md).

docs/ARCHITECTURE.md describes the flow; each component's docstring its latency and contract.
"""

from __future__ import annotations

from amaranth import Cat, ClockDomain, ClockSignal, DomainRenamer, Module, Mux, ResetSignal, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .copy.records import cp_instr_layout, cp_result_layout
from .copy.stage import CopyStage
from .gmem.axi import AxiSignature
from .gmem.axi_slice import AxiSlice
from .gmem.fetch import GlobalFetch
from .lib.slice import port_slice
from .params import Params
from .pipeline.accept import AcceptStage
from .pipeline.address import AddressStage
from .pipeline.check_stage import CheckStage
from .pipeline.passq import PassQueue
from .pipeline.progress import ProgressMerge
from .pipeline.records import fill_layout, instr_layout, result_layout
from .pipeline.result import ResultStage
from .pipeline.ring import RowRing
from .pipeline.take import Take
from .smem.banks import SharedBanks
from .smem.serve import BankStage
from .tmem.quadrant import TmemQuadrant
from .tmem.records import LANES, QUADRANTS, beat_layout, tmem_fill_layout, tmem_instr_layout, tmem_result_layout

__all__ = ["LoadStoreUnit"]


#: The clock domain of everything inside the unit: ``sync``'s clock, its reset registered
#: (``core_rst``), so that the reset's fanout tree starts from a flip-flop, not from the port.
CORE = "core"


def _core(m, name: str, component):
    """Add ``component`` to ``m`` as ``name``, in the unit's :data:`CORE` domain; returns it."""
    m.submodules[name] = DomainRenamer(CORE)(component)
    return component


def _intake(m, p: Params, name: str, shape, port, closed):
    """An intake slice (``p.port_slices``) between the unit's input stream ``port`` and the
    stage it feeds: returns the slice's output, which the stage connects to. The port is not
    ready while ``closed`` (the unit's registered reset: a beat taken then would be lost)."""
    s = _core(m, f"{name}_intake", port_slice(p.port_slices, shape))
    m.d.comb += [s.i.valid.eq(port.valid), s.i.payload.eq(port.payload), port.ready.eq(s.i.ready & ~closed)]
    return s.o


def _outlet(m, p: Params, name: str, shape, port):
    """An outlet slice (``p.port_slices``) between a stage and the unit's output stream
    ``port``: returns the slice's input, which the stage connects to."""
    s = _core(m, f"{name}_outlet", port_slice(p.port_slices, shape))
    wiring.connect(m, s.o, wiring.flipped(port))
    return s.i


class LoadStoreUnit(wiring.Component):
    """Warp-level matrix load/store unit: ldmatrix, stmatrix, wmma.load from shared and global
    memory, tcgen05.ld / tcgen05.st on Tensor Memory.

    Pipelined: while the banks serve one pass, the result stage emits the previous
    instruction's beats and the next instruction waits checked in the pass queue; a load's
    beat leaves as soon as the rows it reads have landed.

    Parameters
    ----------
    params : Params
        Validated parameters; keyword arguments build one when ``params`` is omitted.

    Raises
    ------
    ValueError
        Bad parameters (:class:`~tensorlsu.hdl.params.Params`).
    TypeError
        Both ``params`` and keyword arguments, or ``params`` not a :class:`Params`.

    Members
    -------
    instr : In(stream.Signature(instr_layout(params)))
        Form id (:func:`tensorlsu.hdl.pipeline.forms.form_id`) and each thread's row address; for
        wmma.load ``addr[0]`` is the matrix address in its ``space`` (shared offset, global or
        generic address) and ``stride`` the stride operand in elements.
    smem_size : In(range(smem_bytes + 1))
        The shared memory the running CTA may address, in bytes: a row or a wmma.load matrix
        past it is refused (``OUT_OF_RANGE``); registered, and read as an instruction enters
        the check stage, so change it only while no instruction waits at the port. Tie it to
        ``smem_bytes`` for all of it (a larger value counts as ``smem_bytes``).
    store : In(stream.Signature(ArrayLayout(32, lanes)))
        stmatrix source registers, one beat per register, after the instruction.
    result : Out(stream.Signature(result_layout(params)))
        ldmatrix / wmma.load: one beat per distinct destination register, ``regs`` naming the
        registers it is (a .f64 register is two, low word first); stmatrix: one completion
        beat. A refused instruction gives the same
        number of beats with ``error`` set and zero data. ``cycles``, on the last beat, is
        the number of cycles the instruction occupied the banks (earlier beats may leave
        before the last rows are read, and carry 0).
    fill : In(stream.Signature(fill_layout(params)))
        Bank-parallel write of one line (all banks) while idle: DMA fills, test images.
    dump_req, dump : In / Out(stream.Signature(...))
        Bank-parallel read of one line while idle.
    axi : Out(AxiSignature(...))
        The global-memory AXI4 manager port (:class:`~tensorlsu.hdl.gmem.fetch.GlobalFetch`);
        absent when ``params.global_bytes`` is 0.
    tmem_instr, tmem_store, tmem_result, tmem_fill, tmem_dump_req, tmem_dump : arrays of 4
        Each Tensor Memory quadrant's ports (:class:`~tensorlsu.hdl.tmem.quadrant.TmemQuadrant`);
        absent when ``params.tmem_columns`` is 0.
    cp_instr, cp_result : In / Out(stream.Signature(...))
        tcgen05.cp: the form, source format, descriptor and taddr in; one beat per copy out,
        after its last write, with its error (:class:`~tensorlsu.hdl.copy.stage.CopyStage`);
        present with Tensor Memory (``params.copy_port``).
    """

    def __init__(self, params: Params | None = None, **kwargs):
        if params is None:
            params = Params(**kwargs)
        elif kwargs:
            raise TypeError("give either params or keyword parameters, not both")
        if not isinstance(params, Params):
            raise TypeError(f"params must be a Params, not {type(params).__name__}")
        self.params = p = params
        self.line_bits = p.line_bits
        self.instr_layout, self.result_layout = instr_layout(p), result_layout(p)
        self.fill_layout = fill_layout(p)
        self.store_layout = data.ArrayLayout(unsigned(32), p.lanes)
        self.tmem_layouts = {} if p.tmem is None else {
            "instr": tmem_instr_layout(), "store": beat_layout(),
            "result": tmem_result_layout(), "fill": tmem_fill_layout(p.tmem),
            "dump_req": unsigned(p.tmem.col_bits), "dump": data.ArrayLayout(unsigned(32), LANES)}
        super().__init__({
            "instr": In(stream.Signature(self.instr_layout)),
            "smem_size": In(range(p.smem_bytes + 1), init=p.smem_bytes),
            "store": In(stream.Signature(self.store_layout)),
            "result": Out(stream.Signature(self.result_layout)),
            "fill": In(stream.Signature(self.fill_layout)),
            "dump_req": In(stream.Signature(unsigned(p.line_bits))),
            "dump": Out(stream.Signature(unsigned(8 * p.line_bytes))),
        } | ({} if not p.global_port else {
            "axi": Out(AxiSignature(p.axi_data_bits, p.axi_id_bits)),
        }) | ({} if p.tmem is None else {
            f"tmem_{port}": (Out if port in ("result", "dump") else In)(stream.Signature(shape)).array(QUADRANTS)
            for port, shape in self.tmem_layouts.items()
        }) | ({} if not p.copy_port else {
            "cp_instr": In(stream.Signature(cp_instr_layout())),
            "cp_result": Out(stream.Signature(cp_result_layout())),
        }))

    def elaborate(self, platform):
        m = Module()
        p = self.params
        # the reset, registered: the unit enters and leaves reset a clock after `rst`, and its
        # input streams are not ready until it has left
        core_rst = Signal(init=1, reset_less=True, name="core_rst")
        m.d.sync += core_rst.eq(ResetSignal("sync"))
        m.domains.core = core = ClockDomain(CORE, local=True)
        m.d.comb += [core.clk.eq(ClockSignal("sync")), core.rst.eq(core_rst)]

        check = _core(m, "check", CheckStage(p))
        accept = _core(m, "accept", AcceptStage(p))
        address = _core(m, "address", AddressStage(p))
        passq = _core(m, "passq", PassQueue(p, p.pass_queue_depth))
        take = _core(m, "take", Take(p))
        bank = _core(m, "bank", BankStage(p))
        ring = _core(m, "ring", RowRing(p))
        result = _core(m, "result", ResultStage(p))
        banks = _core(m, "banks", SharedBanks(p))

        # every port is registered inside the unit: an intake slice on each input stream, an
        # outlet slice on each output stream, a register on each level input
        instr = _intake(m, p, "instr", self.instr_layout, self.instr, core_rst)
        smem_size = Signal.like(self.smem_size, name="smem_size_reg")
        m.d.core += smem_size.eq(self.smem_size)
        wiring.connect(m, instr, check.instr)
        wiring.connect(m, check.checked, accept.instr)
        wiring.connect(m, accept.passes, address.passes)
        wiring.connect(m, address.addressed, passq.push)
        wiring.connect(m, passq.pop, take.pop)
        wiring.connect(m, take.take, result.take, ring.take)
        wiring.connect(m, take.shared, bank.take)
        wiring.connect(m, _intake(m, p, "store", self.store_layout, self.store, core_rst), bank.store)
        wiring.connect(m, result.entries, ring.entries)
        wiring.connect(m, result.result, _outlet(m, p, "result", self.result_layout, self.result))
        wiring.connect(m, _intake(m, p, "fill", self.fill_layout, self.fill, core_rst), banks.fill)
        wiring.connect(m, _intake(m, p, "dump_req", unsigned(p.line_bits), self.dump_req, core_rst), banks.dump_req)
        wiring.connect(m, banks.dump, _outlet(m, p, "dump", unsigned(8 * p.line_bytes), self.dump))
        m.d.comb += [check.smem_size.eq(smem_size), take.free.eq(result.free), take.tail.eq(result.tail),
                     take.start.eq(ring.start), bank.blocked.eq(ring.blocked),
                     take.store_room.eq(bank.store_room)]

        if p.global_port:
            fetch = _core(m, "fetch", GlobalFetch(p))
            merge = _core(m, "progress", ProgressMerge(p))
            wiring.connect(m, take.global_, fetch.take)
            # a global pass takes its fetch context as it enters the pass queue
            m.d.comb += [fetch.enter.eq(passq.push.valid & passq.push.ready),
                         fetch.enter_pass.eq(passq.push.payload), passq.hold.eq(~fetch.room)]
            axi = _core(m, "axi_slice", AxiSlice(p.axi_data_bits, p.axi_id_bits, p.port_slices))
            m.d.comb += axi.closed.eq(core_rst)
            wiring.connect(m, fetch.axi, axi.fetch)
            wiring.connect(m, axi.port, wiring.flipped(self.axi))
            wiring.connect(m, bank.progress, merge.bank)
            wiring.connect(m, fetch.progress, merge.fetch)
            m.d.comb += [merge.fetch_busy.eq(fetch.busy), fetch.blocked.eq(ring.blocked)]
            progress = merge.progress
            stages = (bank, fetch)
        else:
            progress = bank.progress
            stages = (bank,)
        wiring.connect(m, progress, result.progress)
        m.d.comb += [take.stages_free.eq(Cat(*[s.free for s in stages]).all()),
                     ring.fill_buf.eq(progress.buf),
                     ring.advance.eq(Cat(*[s.advance for s in stages]).any())]
        if p.pair_passes:
            wiring.connect(m, passq.second, take.second)
            m.d.comb += [take.second_free.eq(result.second_free), take.second_tail.eq(result.second_tail),
                         take.second_start.eq(ring.second_start), bank.second_blocked.eq(ring.second_blocked),
                         ring.second_buf.eq(progress.second_buf)]
        # fill, dump and a copy run while nothing is in flight; they hold the instruction port.
        # `quiet` is a register (the banks' wide enables wait on no stage's state): nothing was
        # in flight last cycle and no instruction entered, so nothing is now; it turns true a
        # cycle after the last stage empties
        quiet_now = Signal(name="quiet_now")
        quiet = Signal(name="quiet", init=1)
        m.d.comb += quiet_now.eq(~check.busy & ~accept.busy & ~address.busy & ~passq.busy &
                                 ~Cat(*[s.busy for s in stages]).any() & (result.entries.valid == 0))
        m.d.core += quiet.eq(quiet_now & ~(check.instr.valid & check.instr.ready))
        if p.tmem is None:
            m.d.comb += [banks.quiet.eq(quiet), check.stall.eq(banks.claim)]
            wiring.connect(m, bank.banks, banks.port)
            return m
        quads = [TmemQuadrant(p.tmem, q) for q in range(QUADRANTS)]
        offered = []        # per quadrant: an instruction, fill or dump offered on its ports
        for q, quad in enumerate(quads):
            _core(m, f"tmem{q}", quad)
            inner = {}
            for port in ("instr", "store", "fill", "dump_req"):
                inner[port] = _intake(m, p, f"tmem{q}_{port}", self.tmem_layouts[port],
                                      getattr(self, f"tmem_{port}")[q], core_rst)
                wiring.connect(m, inner[port], getattr(quad, port))
            offered.append(inner["instr"].valid | inner["fill"].valid | inner["dump_req"].valid)
            for port in ("result", "dump"):
                outer = _outlet(m, p, f"tmem{q}_{port}", self.tmem_layouts[port], getattr(self, f"tmem_{port}")[q])
                wiring.connect(m, getattr(quad, port), outer)
        if not p.copy_port:
            m.d.comb += [banks.quiet.eq(quiet), check.stall.eq(banks.claim)]
            wiring.connect(m, bank.banks, banks.port)
            return m
        cp = _core(m, "copy", CopyStage(p))
        wiring.connect(m, _intake(m, p, "cp_instr", cp_instr_layout(), self.cp_instr, core_rst), cp.instr)
        wiring.connect(m, cp.result, _outlet(m, p, "cp_result", cp_result_layout(), self.cp_result))
        # a fill or dump claims the banks first; a fill waits for a copy that holds them. A copy,
        # once taken, goes before any instruction offered after it; an instruction offered on
        # the shared port goes before a copy not yet taken, and one waiting on a quadrant's port
        # before the copy that would write it (copies back to back starve nothing)
        m.d.comb += [cp.smem_size.eq(smem_size), cp.quiet.eq(quiet & ~banks.claim), cp.defer.eq(instr.valid),
                     banks.quiet.eq(quiet & ~cp.reading),
                     check.stall.eq(banks.claim | cp.reading | cp.waiting)]
        for q, quad in enumerate(quads):
            # idle last cycle with nothing offered (so idle now: nothing entered) and nothing
            # offered now: the copy's claim waits on a register, not on the quadrant's state
            was_idle = Signal(name=f"tmem{q}_was_idle")
            m.d.core += was_idle.eq(quad.idle & ~offered[q])
            m.d.comb += [cp.tmem_idle[q].eq(was_idle & ~offered[q]), quad.hold.eq(cp.hold[q])]
            wiring.connect(m, cp.tmem[q], quad.copy)
        # the banks' port: the bank stage's, or the copy's reads while it holds them
        port, own = banks.port, cp.active
        for q in range(p.quads):
            m.d.comb += [port.line[q].eq(Mux(own, cp.banks.line[q], bank.banks.line[q])),
                         port.wdata[q].eq(bank.banks.wdata[q]),
                         bank.banks.rdata[q].eq(port.rdata[q]), cp.banks.rdata[q].eq(port.rdata[q])]
        m.d.comb += [port.read.eq(Mux(own, cp.banks.read, bank.banks.read)), port.write.eq(bank.banks.write)]
        return m
