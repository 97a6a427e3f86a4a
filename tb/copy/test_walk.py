"""CopyWalk alone (Amaranth's simulator): every step's chunks are the walk of the model's
descriptor (sim/descriptor.chunk_addresses, checked against CUTLASS's canonical layouts in
tb/sim/test_tcgen05_cp.py), in order, with the advance held back at random."""

import numpy as np
import pytest
from stagesim import simulate
from tensorlsu.hdl.copy.records import FORMS, form_chunks, form_rows
from tensorlsu.hdl.copy.walk import CopyWalk
from tensorlsu.hdl.params import Params
from tensorlsu.sim import descriptor, ptx

PARAMS = Params(smem_bytes=228 * 1024)


def _copies(rng, n):
    out = []
    for _ in range(n):
        f = int(rng.integers(0, len(FORMS)))
        code = int(rng.choice([0, 2, 4, 6]))
        s = descriptor.SWIZZLE_BYTES[code]
        chunks = form_chunks(f)
        start = 16 * int(rng.integers(0, 4096))
        if code and chunks == 2:
            start -= start % s - min(start % s, s - 32)
        desc = descriptor.encode(start, 16 * int(rng.integers(0, 512)), 16 * int(rng.integers(0, 512)), code,
                                 int(rng.integers(0, 8)))
        out.append((f, descriptor.decode(desc)))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_steps_are_the_walk(seed):
    rng = np.random.default_rng(seed)
    dut = CopyWalk(PARAMS)
    copies = _copies(rng, 40)

    async def bench(ctx):
        for f, d in copies:
            shape, cast = FORMS[f]
            ins = ptx.parse(f"tcgen05.cp.cta_group::1.{shape}" + (f".{cast}" if cast else ""))
            want = descriptor.chunk_addresses(ins, d)
            ctx.set(dut.form, f)
            ctx.set(dut.addr, d.start)
            ctx.set(dut.lbo, d.lbo)
            ctx.set(dut.sbo, d.sbo)
            ctx.set(dut.base_offset, d.base_offset)
            ctx.set(dut.swizzle_log, d.swizzle_bits)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            steps = []
            while ctx.get(dut.valid):
                st = dut.step
                slots = [(ctx.get(st.slots[k].valid), ctx.get(st.slots[k].quad), ctx.get(st.slots[k].line))
                         for k in range(8)]
                steps.append((ctx.get(st.group), ctx.get(st.chunk), ctx.get(st.last), slots))
                go = rng.random() < 0.7
                ctx.set(dut.advance, go)
                await ctx.tick()
                ctx.set(dut.advance, 0)
                if not go:
                    steps.pop()     # the same step again
            rows, chunks = form_rows(f), form_chunks(f)
            groups = max(rows // 8, 1)
            assert [(g, c) for g, c, _, _ in steps] == [(g, c) for g in range(groups) for c in range(chunks)]
            assert [last for *_, last, _ in steps] == [0] * (len(steps) - 1) + [1]
            for g, c, _, slots in steps:
                for k, (valid, quad, line) in enumerate(slots):
                    r = 8 * g + k
                    assert valid == (r < rows and k < 8), (f, g, c, k)
                    if valid:
                        a = int(want[r, c])
                        assert (quad, line) == ((a // 16) % 8, a // 128), (FORMS[f], d, g, c, k)

    simulate(dut, bench)
