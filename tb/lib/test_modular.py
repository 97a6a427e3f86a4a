"""Ring sums against Python's ``%``, for a ring of a power of two places and one of not."""

import itertools

import pytest
from amaranth import Const, Module, Signal
from amaranth.sim import Simulator

from tensorlsu.hdl.lib.modular import add_mod, is_at_mod


@pytest.mark.parametrize("n", [8, 12, 24])
def test_add_mod_and_is_at_mod_are_python_modulo(n):
    a, b = Signal(range(n)), Signal(range(n))
    m = Module()
    total = Signal(range(n))
    m.d.comb += total.eq(add_mod(a, b, n))
    hits = {(k, place): is_at_mod(a, k, place, n) for k, place in [(0, 0), (1, 0), (3, n - 1), (n - 1, 2)]}
    sim = Simulator(m)

    async def bench(ctx):
        for x, y in itertools.product(range(n), repeat=2):
            ctx.set(a, x)
            ctx.set(b, y)
            assert ctx.get(total) == (x + y) % n, (x, y)
            for (k, place), hit in hits.items():
                assert ctx.get(hit) == ((x + k) % n == place), (x, k, place)
    sim.add_testbench(bench)
    sim.run()


def test_is_at_mod_refuses_places_off_the_ring():
    with pytest.raises(ValueError, match="must lie in"):
        is_at_mod(Const(0, 4), 12, 0, 12)
