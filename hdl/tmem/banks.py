"""A quadrant's memory: banks by column parity, each with two read-or-write ports, and the
dump port."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..params import TmemParams
from tensorlsu.sim.tmem_plan import PORTS_PER_BANK
from .records import LANES

__all__ = ["TmemBanks", "FILL_PORT", "pick", "bank_of", "row_of"]

#: The port of a column's bank that fills and dumps use (while no instruction is in flight).
FILL_PORT = 1


def bank_of(banks: int, col):
    """The bank that holds column ``col``: its parity (two banks), or 0."""
    return col[0] if banks == 2 else 0


def row_of(banks: int, col):
    """The word of column ``col`` within its bank."""
    return col[1:] if banks == 2 else col


def pick(banks: int, b: int, g: int, values, parity):
    """Of a step's per-access ``values``, the one bank ``b``'s port ``g`` serves: one bank, its
    port g serves access g; two banks, group g's access in bank b (element e of group g is in
    bank ``parity ^ e``, ``parity`` the group's first column's)."""
    if banks == 1:
        return values[g]
    return Mux(parity != b, values[2 * g + 1], values[2 * g])


class TmemBanks(wiring.Component):
    """The memory of one quadrant: ``columns`` words of 32 lanes × 32 bits, in ``banks`` banks
    (two: by column parity), each with two ports. A port reads or writes a whole column of
    the 32 lanes (writes with a lane mask), never both in one cycle: an instruction only reads
    (a load) or only writes (a store), and fill and dump run while no instruction is in
    flight, so each port is a true read-or-write port (two per block RAM).

    Writes come from registers alone (``w_addr`` / ``w_data`` / ``w_en``: a store's, a copy's or
    a fill's, :class:`~tensorlsu.hdl.tmem.store.TmemStore`); they go before the instruction's
    reads, and a dump reads port ``FILL_PORT`` of the column's bank while idle, once a fill
    offered or being written has gone first.

    Latency: a read's word is at ``rdata`` the cycle after ``read``; a dumped column is on
    ``dump`` the cycle after its request and held there until taken. Writes land at the edge.

    Members
    -------
    addr : In(ArrayLayout(range(depth), ports)).array(banks)
        The instruction's read address of each port; ``read``: it reads this cycle.
    store : In(1)
        The ports are written (a store, a copy or a fill): they take ``w_addr`` for address.
    w_addr, w_data, w_en : In, per bank and port
        The registered writes.
    rdata : Out(unsigned(32 · LANES)), per bank and port
    busy : In(1)
        An instruction, a copy or a fill's write is in flight: the dump waits.
    fill_offered : In(1)
        A fill is offered: it goes before the dump.
    dump_req, dump : the quadrant's dump ports.
    dump_pending : Out(1)
        A dumped column waits on ``dump``.
    """

    def __init__(self, params: TmemParams):
        self.params = p = params
        self.depth = depth = p.columns // p.banks
        per_port = {"addr": In(range(depth)), "w_addr": In(range(depth)),
                    "w_data": In(unsigned(32 * LANES)), "w_en": In(LANES), "rdata": Out(unsigned(32 * LANES))}
        super().__init__({
            **{k: v.array(p.banks, PORTS_PER_BANK) for k, v in per_port.items()},
            "read": In(1), "store": In(1), "busy": In(1), "fill_offered": In(1), "dump_pending": Out(1),
            "dump_req": In(stream.Signature(unsigned(p.col_bits))),
            "dump": Out(stream.Signature(data.ArrayLayout(unsigned(32), LANES)))})

    def elaborate(self, platform):
        m = Module()
        banks = self.params.banks
        req = self.dump_req
        dump_now = req.valid & req.ready
        for b in range(banks):
            m.submodules[f"bank{b}"] = mem = Memory(shape=unsigned(32 * LANES), depth=self.depth, init=[])
            for g in range(PORTS_PER_BANK):
                rd, wr = mem.read_port(domain="sync"), mem.write_port(granularity=32)
                addr = Signal(range(self.depth), name=f"bank{b}_port{g}_addr")
                read = Signal(name=f"bank{b}_port{g}_read")
                m.d.comb += [addr.eq(Mux(self.store, self.w_addr[b][g], self.addr[b][g])), read.eq(self.read),
                             wr.data.eq(self.w_data[b][g]), wr.en.eq(self.w_en[b][g])]
                if g == FILL_PORT:      # the dump, while idle (its address whether or not taken)
                    with m.If(~self.busy):
                        m.d.comb += addr.eq(row_of(banks, req.payload))
                    with m.If(dump_now & (bank_of(banks, req.payload) == b)):
                        m.d.comb += read.eq(1)
                # never a read and a write in one cycle, said outright so that synthesis sees it
                m.d.comb += [rd.addr.eq(addr), wr.addr.eq(addr), rd.en.eq(read & ~wr.en.any()),
                             self.rdata[b][g].eq(rd.data)]
        # a dumped column waits on the port (the read port holds its data) until taken
        pending, dump_bank = self.dump_pending, Signal()
        m.d.comb += req.ready.eq(~self.busy & ~self.fill_offered & (~pending | self.dump.ready))
        with m.If(dump_now):
            m.d.sync += [pending.eq(1), dump_bank.eq(bank_of(banks, req.payload))]
        with m.Elif(self.dump.ready):
            m.d.sync += pending.eq(0)
        m.d.comb += [self.dump.valid.eq(pending),
                     self.dump.payload.eq(self.rdata[0][FILL_PORT] if banks == 1 else
                                          Mux(dump_bank, self.rdata[1][FILL_PORT], self.rdata[0][FILL_PORT]))]
        return m
