"""The pair crossbar alone (Amaranth's simulator): the second pass of a pair on the bank quads
the first leaves, and its landing.

Expected values: the rule written out here from its definition (each quad the first pass does
not read serves the second's lowest eligible row in it and every row with that line; nothing
in a quad the first reads), and, for a pair served side by side to the end, the busiest quad's
rows of both passes together (the packed bound's definition, model.wavefronts)."""

import numpy as np
from amaranth.sim import Simulator
from tensorlsu.hdl.smem.pair import PairCrossbar

QUADS, LINE_BITS = 8, 7


def _rule(eligible, quad, line, first):
    """The rows served, and each quad's line, by the rule."""
    lines = {}
    for q in range(QUADS):
        rows = [j for j in range(len(quad)) if eligible >> j & 1 and quad[j] == q]
        if rows and not first >> q & 1:
            lines[q] = line[rows[0]]
    served = sum(1 << j for j in range(len(quad))
                 if eligible >> j & 1 and lines.get(quad[j]) == line[j])
    return served, lines


def test_the_second_pass_takes_the_quads_the_first_leaves():
    dut = PairCrossbar(rows=32, quads=QUADS, line_bits=LINE_BITS)
    rng = np.random.default_rng(11)

    async def bench(ctx):
        for _ in range(40):
            quad = [int(x) for x in rng.integers(0, QUADS, 32)]
            line = [int(x) for x in rng.integers(0, 4, 32)]      # few lines: conflicts and broadcasts
            eligible, first = int(rng.integers(0, 1 << 32)), int(rng.integers(0, 1 << QUADS))
            for j in range(32):
                ctx.set(dut.quad[j], quad[j])
                ctx.set(dut.line[j], line[j])
            ctx.set(dut.eligible, eligible)
            ctx.set(dut.first_access, first)
            await ctx.delay(1e-9)
            served, lines = _rule(eligible, quad, line, first)
            assert ctx.get(dut.served) == served
            for q in range(QUADS):
                assert ctx.get(dut.access[q]) == (q in lines), q
                if q in lines:
                    assert ctx.get(dut.addr[q]) == lines[q], q

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


def test_a_pair_side_by_side_takes_its_busiest_quad_and_lands_each_row():
    """Both passes served to the end, the first by the lowest-row rule on all quads, the second
    through the crossbar (the passes hold no row in common, as a fragment's never do): every
    row of either is served once, in as many cycles as the busiest quad has rows over both; each
    slot of the second lands, a cycle after its read, the row its quad read."""
    dut = PairCrossbar(rows=32, quads=QUADS, line_bits=LINE_BITS)
    rng = np.random.default_rng(5)
    results = []

    async def bench(ctx):
        for _ in range(6):
            both = [int(x) for x in rng.choice(256, 64, replace=False)]
            rows = [both[:32], both[32:]]
            quad = [[r % QUADS for r in p] for p in rows]
            line = [[r // QUADS for r in p] for p in rows]
            for j in range(32):
                ctx.set(dut.quad[j], quad[1][j])
                ctx.set(dut.line[j], line[1][j])
            pending, cycles, landing = [(1 << 32) - 1] * 2, 0, {}
            while any(pending):
                first, _ = _rule(pending[0], quad[0], line[0], 0)
                reads = {quad[0][j] for j in range(32) if first >> j & 1}
                ctx.set(dut.eligible, pending[1])
                ctx.set(dut.first_access, sum(1 << q for q in reads))
                await ctx.delay(1e-9)
                second = ctx.get(dut.served)
                assert second & pending[1] == second
                quad_rows = {q: ctx.get(dut.addr[q]) * QUADS + q for q in range(QUADS) if ctx.get(dut.access[q])}
                assert not set(quad_rows) & reads
                pending = [pending[0] & ~first, pending[1] & ~second]
                cycles += 1
                # the quads deliver what they read, a cycle later
                await ctx.tick()
                for q in range(QUADS):
                    ctx.set(dut.quad_data[q], quad_rows.get(q, 0xDEAD))
                await ctx.delay(1e-9)
                for j in range(32):
                    if second >> j & 1:
                        landing[j] = ctx.get(dut.land[j])
            busiest = max(sum(1 for p in rows for r in p if r % QUADS == q) for q in range(QUADS))
            results.append((cycles, busiest, landing, rows[1]))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    for cycles, busiest, landing, second in results:
        assert cycles == busiest
        assert landing == {j: second[j] for j in range(32)}
