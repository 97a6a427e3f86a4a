"""The unit's registered reset (docs/ports.md): it enters and leaves reset a clock after `rst`,
its input streams are not ready while it is in reset, and a beat a producer offers as reset
ends is taken once the unit is out of it, not lost. Expected values: the port contract as
docs/ports.md states it; the line written comes back through the dump port."""

from amaranth import ClockDomain, Module
from amaranth.sim import DomainReset, Simulator

from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import Params


def _streams_in(dut):
    return {"instr": dut.instr, "store": dut.store, "fill": dut.fill, "dump_req": dut.dump_req}


def test_reset_is_registered_and_a_beat_offered_as_it_ends_is_kept():
    dut = LoadStoreUnit(Params(smem_bytes=2048, tmem_columns=0))
    m = Module()
    m.domains.sync = cd = ClockDomain()
    m.submodules.dut = dut
    line, word = 5, int.from_bytes(bytes(range(7, 7 + dut.params.line_bytes)), "little")
    seen = {}

    async def bench(ctx):
        ctx.set(cd.rst, 1)
        for _ in range(3):
            try:
                await ctx.tick()
            except DomainReset:     # the testbench is told of each clock in reset
                pass
        # in reset (the registered reset has reached the unit): no input stream is ready
        seen["in_reset"] = {n: ctx.get(s.ready) for n, s in _streams_in(dut).items()}
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
        for _ in range(30):
            await ctx.tick()
            if ctx.get(dut.dump_req.ready):
                ctx.set(dut.dump_req.valid, 0)
            if ctx.get(dut.dump.valid):
                seen["dumped"] = ctx.get(dut.dump.payload)
                break

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen["in_reset"] == {"instr": 0, "store": 0, "fill": 0, "dump_req": 0}
    assert seen["ready_as_reset_ends"] == 0, "ready in the clock the unit is still in reset"
    assert seen["moved"], "the offered fill was never taken"
    assert seen.get("dumped") == word, "the fill offered as reset ended was lost"
