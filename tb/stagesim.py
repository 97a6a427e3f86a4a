"""Shared helper of the stage tests: run a testbench on a component in Amaranth's simulator."""

from amaranth.sim import Simulator


def simulate(dut, bench, *args) -> None:
    """Run ``await bench(ctx, *args)`` on ``dut`` with a 1 MHz clock until it returns."""
    sim = Simulator(dut)
    sim.add_clock(1e-6)

    async def testbench(ctx):
        await bench(ctx, *args)
    sim.add_testbench(testbench)
    sim.run()
