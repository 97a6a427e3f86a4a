# amaranth: UnusedElaboratable=no
"""The register slices alone (Amaranth's simulator).

Expected values: a stream's rules (each beat taken once, in order, none made up) and each
slice's contract: a beat a clock when the consumer is always ready, a clock of latency, its
output's offer unchanged by anything its neighbours do in the same cycle; the input's ready too
for the registered slice, the consumer's ready passed through for the forward one.
"""

import random

from amaranth.sim import Simulator
import pytest
from tensorlsu.hdl.lib.slice import ForwardSlice, StreamSlice

WIDTH = 8


def _run(seed: int, cycles: int, p_offer: float, p_ready: float, slice_cls=StreamSlice):
    """Random offers and readies; returns (beats sent, beats received, cycles each took)."""
    rng = random.Random(seed)
    dut = slice_cls(WIDTH)
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
            # the offer is registered: this cycle's offer and ready do not change it
            assert (ctx.get(dut.o.valid), ctx.get(dut.o.payload)) == (valid_before, payload_before)
            taken = ctx.get(dut.i.ready)
            if slice_cls is StreamSlice:
                assert taken == ready_before, "the registered slice's ready follows nothing this cycle"
            else:
                assert taken == (not valid_before or ready), "the forward slice's ready is its consumer's, or empty"
            if offer and taken:
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


SLICES = pytest.mark.parametrize("slice_cls, entries", [(StreamSlice, 2), (ForwardSlice, 1)],
                                 ids=["registered", "forward"])


@SLICES
def test_every_beat_leaves_once_in_order(slice_cls, entries):
    for seed in range(4):
        sent, got, _ = _run(seed, 3000, p_offer=0.7, p_ready=0.6, slice_cls=slice_cls)
        assert got == sent[:len(got)]
        assert len(sent) - len(got) <= entries, f"the slice holds at most {entries} beats"
        assert len(got) > 1000


@SLICES
def test_a_beat_a_clock_one_clock_late(slice_cls, entries):
    sent, got, offered = _run(0, 200, p_offer=1.0, p_ready=1.0, slice_cls=slice_cls)
    assert offered[0] == 0 and all(offered[1:]), "the first beat is offered a clock after it is taken"
    assert len(sent) == 200 and got == sent[:199]


@SLICES
def test_a_stalled_output_fills_every_entry_then_refuses(slice_cls, entries):
    sent, got, _ = _run(1, 100, p_offer=1.0, p_ready=0.0, slice_cls=slice_cls)
    assert got == [] and len(sent) == entries
