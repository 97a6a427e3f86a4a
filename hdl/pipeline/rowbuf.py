"""The load row buffer as memories with asynchronous reads: the result stage's ring on an FPGA."""

from __future__ import annotations

from amaranth import Module, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..lib.modular import add_mod
from ..params import ASYNC_MEMORY, ROW_BITS
from .forms import BLOCK

__all__ = ["RowBufferMemory"]


class RowBufferMemory(wiring.Component):
    """The load row buffer (a ring of ``blocks`` blocks of 8 row slots) as memories, and the
    window of ``lanes`` slots a result beat reads from it (``Params.row_buffer_lutram``).

    Slot ``s`` of every block is one memory of ``blocks`` rows, addressed by the block, so a
    landing group (up to 8 rows into one block, ``land_block``) writes each memory at most
    once. Window row ``w`` is slot ``w mod 8`` of block ``(base + w // 8) mod blocks``: each
    memory has a read port for each block of the window (``lanes // 8``), which an FPGA builds
    as a copy of the memory (the ECP5's DPR16X4 has one read port), and those reads are the
    window's multiplexers. The flip-flop ring's window
    (:class:`~tensorlsu.hdl.pipeline.shuffle.ShuffleNetwork` reading ``rows``) gives the same
    rows.

    Latency: a row written in cycle ``t`` is read from cycle ``t + 1`` (the write is at the
    clock edge, the read is combinational). Assumes one landing a cycle (the ``"h200"``
    policy; a pair's two would need a second write port).

    Members
    -------
    land_slots : In(8)
        The slots of ``land_block`` written this cycle.
    land_block : In(range(blocks))
    land_rows : In(ArrayLayout(128, 8))
        Row ``s`` is slot ``s``'s.
    base : In(ArrayLayout(range(blocks), lanes))
        Copies of the window's first block, one a window row (registers kept apart, so that no
        one flip-flop drives every read address).
    window : Out(ArrayLayout(128, lanes))
    """

    def __init__(self, *, lanes: int = 32, blocks: int = 12):
        if lanes % BLOCK or blocks < lanes // BLOCK:
            raise ValueError(f"a ring of {blocks} blocks cannot hold a window of {lanes} slots")
        self.lanes, self.blocks = lanes, blocks
        super().__init__({"land_slots": In(BLOCK), "land_block": In(range(blocks)),
                          "land_rows": In(data.ArrayLayout(unsigned(ROW_BITS), BLOCK)),
                          "base": In(data.ArrayLayout(range(blocks), lanes)),
                          "window": Out(data.ArrayLayout(unsigned(ROW_BITS), lanes))})

    def elaborate(self, platform):
        m = Module()
        for s in range(BLOCK):
            mem = m.submodules[f"slot{s}"] = Memory(shape=unsigned(ROW_BITS), depth=self.blocks, init=[],
                                                     attrs=ASYNC_MEMORY)
            wr = mem.write_port()
            m.d.comb += [wr.en.eq(self.land_slots[s]), wr.addr.eq(self.land_block), wr.data.eq(self.land_rows[s])]
            for k in range(self.lanes // BLOCK):
                w = BLOCK * k + s
                rd = mem.read_port(domain="comb")
                m.d.comb += [rd.addr.eq(add_mod(self.base[w], k, self.blocks)), self.window[w].eq(rd.data)]
        return m
