"""hdl/lib/stages.py: two register stages in a row pass every beat once, in order, two cycles
after it is taken, a beat a clock when nothing waits, and take nothing while stalled."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator
from tensorlsu.hdl.lib.stages import stage_pair


def _pipe(stall):
    m = Module()
    in_valid, in_data, out_ready = Signal(), Signal(8), Signal()
    st = stage_pair(m, "t", in_valid, out_ready, stall)
    r1, r2 = Signal(8), Signal(8)
    with m.If(st.take):
        m.d.sync += r1.eq(in_data)
    with m.If(st.move):
        m.d.sync += r2.eq(r1)
    return m, in_valid, in_data, out_ready, st, r2


@pytest.mark.parametrize("seed,p_in,p_out", [(1, 1.0, 1.0), (2, 0.6, 0.5), (3, 0.9, 0.3)])
def test_every_beat_once_in_order(seed, p_in, p_out):
    rng = random.Random(seed)
    stall = Signal()
    m, in_valid, in_data, out_ready, st, r2 = _pipe(stall)
    sent, got, taken_at, out_at = list(range(1, 121)), [], {}, {}
    sim = Simulator(m)
    sim.add_clock(1e-6)

    async def bench(ctx):
        k, cycle = 0, 0
        while len(got) < len(sent):
            assert cycle < 20 * len(sent), f"beats lost: {len(got)} of {len(sent)} out"
            offer = k < len(sent) and rng.random() < p_in
            ready = rng.random() < p_out
            stalled = p_in < 1.0 and rng.random() < 0.1
            ctx.set(in_valid, offer)
            ctx.set(in_data, sent[k] if offer else 0)
            ctx.set(out_ready, ready)
            ctx.set(stall, stalled)
            if ctx.get(st.in_ready) and offer:
                assert not stalled
                taken_at[sent[k]] = cycle
                k += 1
            if ctx.get(st.valid2) and ready:
                got.append(ctx.get(r2))
                out_at[got[-1]] = cycle
            await ctx.tick()
            cycle += 1
        assert got == sent
        assert all(out_at[b] - taken_at[b] >= 2 for b in sent)
        if p_in == 1.0 and p_out == 1.0:
            # nothing waits: a beat a clock, each two cycles after it was taken
            assert all(out_at[b] - taken_at[b] == 2 for b in sent)
            assert out_at[sent[-1]] - out_at[sent[0]] == len(sent) - 1

    sim.add_testbench(bench)
    sim.run()
