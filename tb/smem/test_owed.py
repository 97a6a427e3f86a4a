# amaranth: UnusedElaboratable=no
"""The owed store beats alone (Amaranth's simulator), against the store stream's order.

Expected values: the stream rule (docs/ports.md): a producer sends every stmatrix's beats in
instruction order, refused or not, so the beats on the port are segments, one per stmatrix in
the order they leave the pass queue; a refused one's segment is dropped, a good one's goes to
the bank stage. The reference below keeps those segments and says whose beat is next; the
component must drop exactly the refused segments' beats, never hand the bank stage a beat
that is not its own, and report room as the owed count allows.
"""

import random

from amaranth.sim import Simulator
from tensorlsu.hdl.smem.owed import MAX_STORE_BEATS, OWED_BEATS, StoreOwed


class _Stream:
    """The store port's beats in order: ``[kind, beats left]`` per stmatrix ("drop" / "own")."""

    def __init__(self):
        self.segs = []

    def head(self):
        return next((k for k, n in self.segs if n), None)

    def owed(self):
        return sum(n for k, n in self.segs if k == "drop")

    def wants(self):
        return any(k == "own" and n for k, n in self.segs)

    def ahead(self):
        """Dropped beats come before the bank stage's own."""
        for k, n in self.segs:
            if n and k == "own":
                return False
            if n and k == "drop":
                return self.wants()
        return False

    def take(self):
        seg = next(s for s in self.segs if s[1])
        seg[1] -= 1
        self.segs = [s for s in self.segs if s[1]]


def _run(seed: int, cycles: int, p_beat: float):
    rng = random.Random(seed)
    dut, ref = StoreOwed(), _Stream()
    seen = {"drop": 0, "own": 0, "full": 0}

    async def bench(ctx):
        for _ in range(cycles):
            wants = ref.wants()
            room = ref.owed() <= OWED_BEATS - MAX_STORE_BEATS
            refused = room and rng.random() < 0.15
            taken = not refused and not wants and rng.random() < 0.4
            n = rng.choice([1, 2, MAX_STORE_BEATS])
            beat = rng.random() < p_beat
            for sig, v in ((dut.refused, refused), (dut.refused_beats, n), (dut.taken, taken),
                           (dut.wants, wants), (dut.beat, beat)):
                ctx.set(sig, v)
            await ctx.delay(1e-9)
            state = (ref.segs, refused, taken, beat)
            assert ctx.get(dut.room) == room, state
            assert ctx.get(dut.drain) == (ref.head() == "drop"), state
            assert ctx.get(dut.ahead) == ref.ahead(), state
            own = wants and not ctx.get(dut.ahead)
            assert not (own and ctx.get(dut.drain)), state
            if beat and (own or ctx.get(dut.drain)):
                assert ref.head() == ("own" if own else "drop"), state
                seen[ref.head()] += 1
                ref.take()
            seen["full"] += not room
            if refused:
                ref.segs.append(["drop", n])
            if taken:
                ref.segs.append(["own", n])
            await ctx.tick()
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen


def test_every_refused_beat_is_dropped_in_its_turn():
    """Refused and good stores in random order, beats offered at random: every dropped beat
    is a refused segment's, every beat the bank stage gets its own."""
    seen = _run(seed=1, cycles=4000, p_beat=0.6)
    assert seen["drop"] > 500 and seen["own"] > 500


def test_the_count_stops_at_its_bound():
    """Beats come rarely: refusals pile up until the count has no room, and room comes back
    as beats are dropped."""
    seen = _run(seed=2, cycles=3000, p_beat=0.1)
    assert seen["full"] > 100 and seen["drop"] > 100
