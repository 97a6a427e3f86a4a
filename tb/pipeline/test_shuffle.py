# amaranth: UnusedElaboratable=no
"""The load shuffle against the layout tables in simulation: every load form's beats at the
ring's start, and a form of each beat span at every aligned place of an instruction in the
row-buffer ring (the formal spec proves all forms for all data; this is the quick check)."""

import random

import pytest
from amaranth.sim import Simulator
from tensorlsu.hdl.pipeline import forms
from tensorlsu.hdl.pipeline.shuffle import LoadShuffle
from tensorlsu.sim import ptx

# one form of each kind of beat span: 8-row (x4), 16-row (.m16n16), 32-slot (.c .f64 row),
# two passes (.c .f32 16×16)
TEXTS = ["ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
         "ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8",
         "wmma.load.c.sync.aligned.row.m8n8k4.shared.f64",
         "wmma.load.c.sync.aligned.col.m16n16k16.shared.f32"]


@pytest.mark.parametrize("blocks", [4, 8, 12])
def test_load_shuffle_matches_tables_at_every_aligned_start(blocks):
    dut = LoadShuffle(blocks=blocks)
    rng = random.Random(blocks)
    ring = [rng.getrandbits(128) for _ in range(forms.BLOCK * blocks)]
    ids = [forms.form_id(ptx.parse(t, "sm_100a")) for t in TEXTS]
    loads = [f for f in range(len(forms.FORMS)) if forms.info(f).load]
    checked = []

    async def bench(ctx):
        for i, v in enumerate(ring):
            ctx.set(dut.rows[i], v)
        for f in loads:
            inf = forms.info(f)
            assert inf.align == max(inf.beat_span(r)[1] for r in range(inf.nregs))
            for start in range(0, blocks, inf.align) if f in ids else [0]:
                for r in range(inf.nregs):
                    ctx.set(dut.form, f)
                    ctx.set(dut.start, start)
                    ctx.set(dut.beat, r)
                    out = ctx.get(dut.out)
                    for t in range(32):
                        for b in range(4):
                            slot, byte = (int(x) for x in inf.table[t, r, b])
                            src = ring[(forms.BLOCK * start + slot) % len(ring)] >> (8 * byte) & 0xFF
                            assert out >> (8 * (4 * t + b)) & 0xFF == src, (forms.FORMS[f].form, start, r, t, b)
                    assert ctx.get(dut.need) == sum(1 << s for s in inf.beat_slots(r))
                    checked.append((f, start, r))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert {f for f, _, _ in checked} == set(loads) and set(ids) <= set(loads)
    assert {s for _, s, _ in checked} == set(range(blocks))  # every start reached


def test_load_shuffle_refuses_a_ring_too_small():
    with pytest.raises(ValueError, match="blocks must be a multiple of 4, not 2"):
        LoadShuffle(blocks=2)
    with pytest.raises(ValueError, match="not 6"):
        LoadShuffle(blocks=6)
    LoadShuffle(blocks=12)                  # three instructions' worth: no power of two needed
