"""SharedBanks alone (Amaranth's simulator): the fill / dump port round trip, the bank stage's
port (read data ``READ_LATENCY`` cycles later, writes), and when fill and dump may take the banks.

Expected values: the port contract in hdl/smem/banks.py (a row lives in quad (addr / 16) mod quads,
line addr / line_bytes), derived by hand."""

import random

from stagesim import simulate
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.smem.banks import SharedBanks

P = Params(smem_bytes=1024)             # 8 lines of 128 bytes


def _run(bench):
    dut = SharedBanks(P)
    simulate(dut, bench, dut)


def test_fill_dump_round_trip_and_port_access():
    rng = random.Random(3)
    lines = [rng.getrandbits(8 * P.line_bytes) for _ in range(P.lines)]
    got = {}

    async def bench(ctx, dut):
        ctx.set(dut.quiet, 1)
        for k, v in enumerate(lines):
            ctx.set(dut.fill.payload.line, k)
            ctx.set(dut.fill.payload.data, v)
            ctx.set(dut.fill.valid, 1)
            assert ctx.get(dut.fill.ready) and ctx.get(dut.claim)
            await ctx.tick()
        ctx.set(dut.fill.valid, 0)
        dumped = []
        ctx.set(dut.dump.ready, 1)
        for k in reversed(range(P.lines)):
            ctx.set(dut.dump_req.payload, k)
            ctx.set(dut.dump_req.valid, 1)
            assert ctx.get(dut.dump_req.ready)
            await ctx.tick()
            ctx.set(dut.dump_req.valid, 0)
            for _ in range(SharedBanks.READ_LATENCY - 1):
                # on its way to the macros: no line yet, and no instruction
                assert not ctx.get(dut.dump.valid) and ctx.get(dut.claim) and not ctx.get(dut.dump_req.ready)
                await ctx.tick()
            assert ctx.get(dut.dump.valid) and ctx.get(dut.claim)     # a dump waits: no instruction
            assert not ctx.get(dut.dump_req.ready)
            dumped.append(ctx.get(dut.dump.payload))
            await ctx.tick()
        got["dump"] = dumped[::-1]
        # the bank stage's port: quad q reads line 7 - q; a row 16 bytes wide
        ctx.set(dut.quiet, 0)
        for q in range(P.quads):
            ctx.set(dut.port.line[q], P.lines - 1 - q)
            ctx.set(dut.port.read[q], 1)
        await ctx.tick()
        for q in range(P.quads):
            ctx.set(dut.port.read[q], 0)
        for _ in range(SharedBanks.READ_LATENCY - 1):
            await ctx.tick()
        got["read"] = [ctx.get(dut.port.rdata[q]) for q in range(P.quads)]
        # a write of quad 2, line 1; then fill and dump wait for quiet
        ctx.set(dut.port.line[2], 1)
        ctx.set(dut.port.wdata[2], 0x1234)
        ctx.set(dut.port.write[2], 1)
        await ctx.tick()
        ctx.set(dut.port.write[2], 0)
        ctx.set(dut.fill.valid, 1)
        ctx.set(dut.dump_req.valid, 1)
        assert not ctx.get(dut.fill.ready) and not ctx.get(dut.dump_req.ready) and not ctx.get(dut.claim)
        ctx.set(dut.fill.valid, 0)
        ctx.set(dut.quiet, 1)
        ctx.set(dut.dump_req.payload, 1)
        assert ctx.get(dut.dump_req.ready)
        await ctx.tick()
        ctx.set(dut.dump_req.valid, 0)
        for _ in range(SharedBanks.READ_LATENCY - 1):
            await ctx.tick()
        got["line1"] = ctx.get(dut.dump.payload)

    _run(bench)
    assert got["dump"] == lines
    row = (1 << 128) - 1
    assert got["read"] == [lines[P.lines - 1 - q] >> (128 * q) & row for q in range(P.quads)]
    assert got["line1"] == (lines[1] & ~(row << 256)) | 0x1234 << 256


def test_fill_goes_before_dump():
    async def bench(ctx, dut):
        ctx.set(dut.quiet, 1)
        ctx.set(dut.fill.valid, 1)
        ctx.set(dut.dump_req.valid, 1)
        assert ctx.get(dut.fill.ready) and not ctx.get(dut.dump_req.ready)

    _run(bench)
