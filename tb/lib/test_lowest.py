"""hdl/lib/lowest.py: the priority encoder, its value select and the two-or-more test against a
count of the bits, for every input of a few widths."""

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator
from tensorlsu.hdl.lib.lowest import lowest, lowest_value, two_or_more


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_lowest_and_two_or_more_for_every_input(n):
    m = Module()
    bits = Signal(n)
    any_, index = lowest([bits[i] for i in range(n)])
    found, first, two = Signal(), Signal(max(1, len(index))), Signal()
    m.d.comb += [found.eq(any_), first.eq(index), two.eq(two_or_more([bits[i] for i in range(n)]))]
    sim = Simulator(m)

    async def bench(ctx):
        for x in range(1 << n):
            ctx.set(bits, x)
            assert ctx.get(found) == (x != 0)
            if x:
                assert ctx.get(first) == (x & -x).bit_length() - 1, x
            assert ctx.get(two) == (bin(x).count("1") >= 2), x

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("n", [1, 3, 8])
def test_lowest_value_for_every_input(n):
    """The value of the lowest set bit (each value distinct: 10 + i), 0 when none is set."""
    m = Module()
    bits = Signal(n)
    any_, value = lowest_value([bits[i] for i in range(n)], [10 + i for i in range(n)])
    found, got = Signal(), Signal(8)
    m.d.comb += [found.eq(any_), got.eq(value)]
    sim = Simulator(m)

    async def bench(ctx):
        for x in range(1 << n):
            ctx.set(bits, x)
            assert ctx.get(found) == (x != 0)
            assert ctx.get(got) == ((x & -x).bit_length() - 1 + 10 if x else 0), x

    sim.add_testbench(bench)
    sim.run()
