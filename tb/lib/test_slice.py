# amaranth: UnusedElaboratable=no
"""The register slice alone (Amaranth's simulator).

Expected values: a stream's rules (each beat taken once, in order, none made up) and the slice's
contract: a beat a clock when the consumer is always ready, a clock of latency, and its input's
ready and output's offer unchanged by anything its neighbours do in the same cycle.
"""

import random

from amaranth.sim import Simulator
from tensorlsu.hdl.lib.slice import StreamSlice

WIDTH = 8


def _run(seed: int, cycles: int, p_offer: float, p_ready: float):
    """Random offers and readies; returns (beats sent, beats received, cycles each took)."""
    rng = random.Random(seed)
    dut = StreamSlice(WIDTH)
    sent, got, offered = [], [], []

    async def bench(ctx):
        nxt = 0
        for _ in range(cycles):
            offer, ready = rng.random() < p_offer, rng.random() < p_ready
            ctx.set(dut.i.valid, offer)
            ctx.set(dut.i.payload, nxt & 0xFF)
            ready_before = ctx.get(dut.i.ready)
            valid_before, payload_before = ctx.get(dut.o.valid), ctx.get(dut.o.payload)
            ctx.set(dut.o.ready, ready)
            # registered both ways: this cycle's offer and ready change neither side
            assert ctx.get(dut.i.ready) == ready_before
            assert (ctx.get(dut.o.valid), ctx.get(dut.o.payload)) == (valid_before, payload_before)
            if offer and ready_before:
                sent.append(nxt & 0xFF)
                nxt += 1
            if valid_before and ready:
                got.append(payload_before)
            offered.append(valid_before)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return sent, got, offered


def test_every_beat_leaves_once_in_order():
    for seed in range(4):
        sent, got, _ = _run(seed, 3000, p_offer=0.7, p_ready=0.6)
        assert got == sent[:len(got)]
        assert len(sent) - len(got) <= 2, "the slice holds at most two beats"
        assert len(got) > 1000


def test_a_beat_a_clock_one_clock_late():
    sent, got, offered = _run(0, 200, p_offer=1.0, p_ready=1.0)
    assert offered[0] == 0 and all(offered[1:]), "the first beat is offered a clock after it is taken"
    assert len(sent) == 200 and got == sent[:199]


def test_a_stalled_output_fills_both_entries_then_refuses():
    sent, got, _ = _run(1, 100, p_offer=1.0, p_ready=0.0)
    assert got == [] and len(sent) == 2
