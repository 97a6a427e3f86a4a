# amaranth: UnusedElaboratable=no
"""RowBufferMemory alone (Amaranth's simulator): the window it reads is the ring's, slot for
slot, at every base, and a row written in one cycle is read in the next.

Expected values: the ring's own definition (an entry's slot ``s`` is ring slot
``(8 · start + s) mod (8 · blocks)``, docs/ARCHITECTURE.md), kept here as a Python list."""

import random

import pytest
from amaranth.sim import Simulator
from tensorlsu.hdl.pipeline.rowbuf import RowBufferMemory

BLOCKS = 12


def test_the_window_is_the_rings_at_every_base():
    dut = RowBufferMemory(lanes=32, blocks=BLOCKS)
    rng = random.Random(5)
    ring = [0] * (8 * BLOCKS)
    checked = []

    async def bench(ctx):
        for rnd in range(2):                        # the second round writes over the first
            for block in rng.sample(range(BLOCKS), BLOCKS):
                slots = rng.getrandbits(8) | (0xFF if rnd == 0 else 0)
                rows = [rng.getrandbits(128) for _ in range(8)]
                ctx.set(dut.land_slots, slots)
                ctx.set(dut.land_block, block)
                for s in range(8):
                    ctx.set(dut.land_rows[s], rows[s])
                await ctx.tick()
                for s in range(8):
                    if slots >> s & 1:
                        ring[8 * block + s] = rows[s]
                ctx.set(dut.land_slots, 0)
                for base in range(BLOCKS):          # the write is read the next cycle
                    for w in range(32):
                        ctx.set(dut.base[w], base)
                    got = [ctx.get(dut.window[w]) for w in range(32)]
                    assert got == [ring[(8 * base + w) % len(ring)] for w in range(32)], (rnd, block, base)
                    checked.append(base)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert set(checked) == set(range(BLOCKS))


def test_a_ring_smaller_than_the_window_is_refused():
    with pytest.raises(ValueError, match="a ring of 3 blocks cannot hold a window of 32 slots"):
        RowBufferMemory(lanes=32, blocks=3)
