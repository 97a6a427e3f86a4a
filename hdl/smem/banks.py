"""Shared-memory banks: one memory of 16-byte rows per bank quad, and the fill / dump port."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import ROW_BITS as _ROW_BITS
from ..params import Params
from ..pipeline.records import fill_layout

__all__ = ["SharedBanks", "BankPortSignature"]



class BankPortSignature(wiring.Signature):
    """Access to every bank quad in one cycle, from the requester's side: each quad's line
    (one address for its read and its write), read and write enables, the rows written, and
    the rows read (``SharedBanks.READ_LATENCY`` cycles after the read)."""

    def __init__(self, p: Params):
        # one signal per quad (member arrays), not one wide vector: an event-driven simulator
        # then wakes only the logic of the quad whose data changed
        super().__init__({"line": Out(unsigned(p.line_bits)).array(p.quads),
                          "read": Out(p.quads), "write": Out(p.quads),
                          "wdata": Out(unsigned(_ROW_BITS)).array(p.quads),
                          "rdata": In(unsigned(_ROW_BITS)).array(p.quads)})


class SharedBanks(wiring.Component):
    """Shared memory as ``quads`` memories of ``lines`` 16-byte rows (one block RAM group per
    quad: a row lives in quad ``(addr / 16) mod quads``, line ``addr / line_bytes``), the
    port the bank stage uses, and a bank-parallel fill / dump port for DMA fills and test
    images that works while the unit is otherwise quiet.

    Each quad's read and write share one address: a quad is never read and written in one
    cycle (loads read, stores write, fill and dump run alone), which synth/run.py relies on to
    leave the block RAMs' read-during-write result open.

    Every macro input (address, enables, write data) comes from a register, the port's
    access of the cycle before, so that the macros' setup time shares no cycle with the
    requester's logic: a read's row is on ``rdata`` :attr:`READ_LATENCY` cycles after the
    read; a dump's line is on ``dump`` as long after ``dump_req`` is taken, and held until
    taken. Every access, fill and dump takes the same register, so they reach the macros in
    the order they were made.

    Members
    -------
    port : In(BankPortSignature(params))
        The bank stage's access.
    quiet : In(1)
        Nothing is in flight outside the banks: fill and dump may start.
    claim : Out(1)
        The banks are lent to fill / dump this cycle or a dump waits: take no instruction.
    fill : In(stream.Signature(fill_layout(params)))
    dump_req : In(stream.Signature(line_bits))
    dump : Out(stream.Signature(8 · line_bytes))
    """

    #: cycles from a read on the port to its row on ``rdata``: the register in front of the
    #: macros, then the macro's own cycle
    READ_LATENCY = 2

    def __init__(self, params: Params):
        self.params = p = params
        super().__init__({"port": In(BankPortSignature(p)), "quiet": In(1), "claim": Out(1),
                          "fill": In(stream.Signature(fill_layout(p))),
                          "dump_req": In(stream.Signature(unsigned(p.line_bits))),
                          "dump": Out(stream.Signature(unsigned(8 * p.line_bytes)))})

    def elaborate(self, platform):
        m = Module()
        p, port = self.params, self.port
        Q = p.quads
        # a dump's read on its way to the macros (a cycle), then its line on ``dump``
        issued, dumping = Signal(name="d_issued"), Signal(name="d_valid")
        idle = Signal()
        m.d.comb += [idle.eq(self.quiet & ~issued & ~dumping), self.fill.ready.eq(idle),
                     self.dump_req.ready.eq(idle & ~self.fill.valid),
                     self.claim.eq(issued | dumping | (idle & (self.fill.valid | self.dump_req.valid)))]
        filling = self.fill.valid & self.fill.ready
        reading = self.dump_req.valid & self.dump_req.ready
        for q in range(Q):
            mem = m.submodules[f"quad{q}"] = memory.Memory(shape=unsigned(_ROW_BITS), depth=p.lines, init=[])
            rd, wr = mem.read_port(), mem.write_port()
            # the macro's inputs, registered
            line = Signal(p.line_bits, name=f"d_quad{q}_line", reset_less=True)
            read, write = Signal(name=f"d_quad{q}_read"), Signal(name=f"d_quad{q}_write")
            wdata = Signal(_ROW_BITS, name=f"d_quad{q}_wdata", reset_less=True)
            m.d.sync += [line.eq(Mux(filling, self.fill.payload.line, Mux(reading, self.dump_req.payload,
                                                                          port.line[q]))),
                         read.eq(Mux(filling, 0, reading | port.read[q])),
                         write.eq(filling | port.write[q]),
                         wdata.eq(Mux(filling, self.fill.payload.data[_ROW_BITS * q:_ROW_BITS * (q + 1)],
                                      port.wdata[q]))]
            m.d.comb += [rd.addr.eq(line), wr.addr.eq(line), rd.en.eq(read), wr.en.eq(write), wr.data.eq(wdata),
                         port.rdata[q].eq(rd.data)]
        m.d.sync += issued.eq(reading)
        with m.If(issued):
            m.d.sync += dumping.eq(1)
        with m.Elif(self.dump.valid & self.dump.ready):
            m.d.sync += dumping.eq(0)
        m.d.comb += [self.dump.valid.eq(dumping), self.dump.payload.eq(Cat(*[port.rdata[q] for q in range(Q)]))]
        return m
