"""The bank scheduler alone (Amaranth's simulator): every eligible row served exactly once, one
distinct address per bank quad per cycle, in the model's cycle count. Expected values: the
model's bank rule (model.wavefronts), itself checked against the H200."""

import numpy as np
from amaranth.sim import Simulator
from tensorlsu.hdl.smem.scheduler import BankScheduler
from tensorlsu.sim import model, ptx


def test_scheduler_serves_every_row_once_within_the_model_cycles():
    """Amaranth simulation of the scheduler alone: repeatedly serve the eligible rows of one
    matrix (the h200 policy's unit); the number of cycles equals model.wavefronts for x1."""
    dut = BankScheduler(rows=32, quads=8, line_bits=7)
    rng = np.random.default_rng(3)
    ins = ptx.parse("ldmatrix.sync.aligned.m8n8.x1.b16", "sm_90a")
    cases = []
    for _ in range(40):
        pool = rng.integers(0, 64, size=int(rng.integers(1, 9)))
        cases.append([int(x) * 16 for x in rng.choice(pool, 8)] + [0] * 24)

    async def bench(ctx):
        for addr in cases:
            pending, cycles, seen = 0xFF, 0, set()
            for i, a in enumerate(addr):
                ctx.set(dut.quad[i], (a // 16) % 8)
                ctx.set(dut.line[i], a // 128)
            while pending:
                ctx.set(dut.eligible, pending)
                await ctx.delay(1e-9)
                served = ctx.get(dut.served)
                assert served and not served & ~pending  # progress, only what was asked
                lines = {}
                for q in range(8):
                    g = ctx.get(dut.grant[q])
                    if g.valid:
                        lines[q] = int(g.line)
                for i in range(8):
                    if served >> i & 1:  # one distinct address per quad, served rows use it
                        assert lines[(addr[i] // 16) % 8] == addr[i] // 128
                        seen.add(i)
                pending &= ~served
                cycles += 1
            assert seen == set(range(8))
            assert cycles == model.wavefronts(ins, addr)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
