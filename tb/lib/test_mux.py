"""hdl/lib/mux.py: the binary multiplexer tree picks options[sel] for every select value."""

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator
from tensorlsu.hdl.lib.mux import mux_tree


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_mux_tree_picks_the_selected_option(n):
    m = Module()
    sel = Signal(range(max(2, n)))
    opts = [Signal(8, name=f"o{k}") for k in range(n)]
    out = Signal(8)
    m.d.comb += out.eq(mux_tree(sel, opts))
    sim = Simulator(m)

    async def bench(ctx):
        for k in range(n):
            ctx.set(opts[k], 17 * k + 3)
        for k in range(n):
            ctx.set(sel, k)
            assert ctx.get(out) == 17 * k + 3

    sim.add_testbench(bench)
    sim.run()


def test_mux_tree_refuses_too_many_options():
    with pytest.raises(ValueError, match="3 options need more than 1 select bits"):
        mux_tree(Signal(1), [Signal(2), Signal(2), Signal(2)])
    with pytest.raises(ValueError, match="at least one option"):
        mux_tree(Signal(1), [])
