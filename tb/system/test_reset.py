# amaranth: UnusedElaboratable=no
"""The unit's registered reset (docs/ports.md): it enters and leaves reset a clock after `rst`,
its input streams are not ready while it is in reset, and a beat a producer offers as reset
ends is taken once the unit is out of it, not lost. Expected values: the port contract as
docs/ports.md states it; the line written comes back through the dump port."""

from amaranth import ClockDomain, Module
from amaranth.sim import DomainReset, Simulator

from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import Params


def _readies_in(dut):
    """Every input's ready: the shared-memory streams, the AXI read data channel, and with
    Tensor Memory each quadrant's input streams and the copy's instruction stream."""
    r = {n: getattr(dut, n).ready for n in ("instr", "store", "fill", "dump_req")}
    if dut.params.global_port:
        r["axi.rready"] = dut.axi.rready
    if dut.params.tmem is not None:
        for port in ("instr", "store", "fill", "dump_req"):
            r |= {f"tmem_{port}[{q}]": getattr(dut, f"tmem_{port}")[q].ready for q in range(4)}
        r["cp_instr"] = dut.cp_instr.ready
    return r


def _clocks_in_reset(ctx, n):
    """``n`` clocks with ``rst`` high (the testbench is told of each one)."""
    async def run():
        for _ in range(n):
            try:
                await ctx.tick()
            except DomainReset:
                pass
    return run()


def _unit(params):
    dut = LoadStoreUnit(params)
    m = Module()
    m.domains.sync = cd = ClockDomain()
    m.submodules.dut = dut
    return dut, m, cd


def test_no_input_is_ready_in_reset():
    """Every input of the unit with Tensor Memory, the copy port and the global port."""
    dut, m, cd = _unit(Params(smem_bytes=2048, tmem_columns=32))
    seen = {}

    async def bench(ctx):
        ctx.set(cd.rst, 1)
        await _clocks_in_reset(ctx, 3)
        seen["in_reset"] = {n: ctx.get(s) for n, s in _readies_in(dut).items()}
        ctx.set(cd.rst, 0)
        await ctx.tick().repeat(2)
        seen["after"] = {n: ctx.get(s) for n, s in _readies_in(dut).items()}

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert "axi.rready" in seen["in_reset"] and "cp_instr" in seen["in_reset"]
    assert {n for n, v in seen["in_reset"].items() if v} == set(), seen["in_reset"]
    # out of reset, with nothing offered, every input takes a beat
    assert {n for n, v in seen["after"].items() if not v} == set(), seen["after"]


def test_reset_is_registered_and_a_beat_offered_as_it_ends_is_kept():
    dut, m, cd = _unit(Params(smem_bytes=2048, tmem_columns=0))
    m = Module()
    m.domains.sync = cd = ClockDomain()
    m.submodules.dut = dut
    line, word = 5, int.from_bytes(bytes(range(7, 7 + dut.params.line_bytes)), "little")
    seen = {}

    async def bench(ctx):
        ctx.set(cd.rst, 1)
        await _clocks_in_reset(ctx, 3)
        # reset ends, and a fill is offered in the same cycle
        ctx.set(cd.rst, 0)
        ctx.set(dut.fill.valid, 1)
        ctx.set(dut.fill.payload.line, line)
        ctx.set(dut.fill.payload.data, word)
        # the clock after rst falls the unit is still in reset: its ports are not ready
        seen["ready_as_reset_ends"] = ctx.get(dut.fill.ready)
        seen["moved"] = False
        for _ in range(6):
            ready = ctx.get(dut.fill.ready)
            await ctx.tick()
            if ready:           # the beat moves at this edge: valid and ready were high before it
                seen["moved"] = True
                break
        ctx.set(dut.fill.valid, 0)
        await ctx.tick().repeat(4)
        ctx.set(dut.dump.ready, 1)
        ctx.set(dut.dump_req.valid, 1)
        ctx.set(dut.dump_req.payload, line)
        dumps = []
        for _ in range(30):
            taken = ctx.get(dut.dump_req.valid) and ctx.get(dut.dump_req.ready)
            if ctx.get(dut.dump.valid):     # dump.ready is high: the beat moves at this edge
                dumps.append(ctx.get(dut.dump.payload))
            await ctx.tick()
            if taken:
                ctx.set(dut.dump_req.valid, 0)
        seen["dumps"] = dumps

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen["ready_as_reset_ends"] == 0, "ready in the clock the unit is still in reset"
    assert seen["moved"], "the offered fill was never taken"
    assert seen["dumps"] == [word], "the fill offered as reset ended was lost (or the line dumped twice)"
