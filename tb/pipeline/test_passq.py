# amaranth: UnusedElaboratable=no
"""PassQueue alone (Amaranth's simulator): passes leave in order, none lost or duplicated, the
overlap verdict becomes the OVERLAP error, and a full or held queue refuses a push.

Expected values: the queue's contract (hdl/pipeline/passq.py's docstring), derived by hand."""

import random

import pytest
from stagesim import simulate
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline.passq import PassQueue


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_depth_must_be_a_power_of_two(depth):
    with pytest.raises(ValueError, match="depth must be a power of two of at least 2"):
        PassQueue(Params(), depth=depth)


@pytest.mark.parametrize("seed,depth", [(1, 2), (2, 2), (3, 8)])
def test_passes_leave_in_order_with_backpressure(seed, depth):
    dut = PassQueue(Params(), depth)
    rng = random.Random(seed)
    # (form, err, ovl): the queue only carries them; form numbers the passes
    sent = [(k % 100, rng.choice([Error.NONE, Error.NONE, Error.STRIDE]), rng.random() < 0.3)
            for k in range(60)]
    got, full_refusals, most = [], [], [0]

    async def bench(ctx):
        k = 0
        for _ in range(400):
            push = k < len(sent) and rng.random() < 0.7
            if push:
                form, err, ovl = sent[k]
                ctx.set(dut.push.payload.form, form)
                ctx.set(dut.push.payload.err, err)
                ctx.set(dut.push.payload.ovl, ovl)
            hold = rng.random() < 0.1
            ctx.set(dut.push.valid, push)
            ctx.set(dut.hold, hold)
            ctx.set(dut.pop.ready, rng.random() < (0.5 if depth == 2 else 0.3))
            await ctx.delay(1e-9)
            assert not (hold and ctx.get(dut.push.ready)), "a held queue took a pass"
            if ctx.get(dut.pop.valid) and ctx.get(dut.pop.ready):
                got.append((ctx.get(dut.pop.payload.form), ctx.get(dut.pop.payload.err),
                            ctx.get(dut.pop.payload.ovl)))
            if push and ctx.get(dut.push.ready):
                k += 1
                most[0] = max(most[0], k - len(got))
            elif push:
                full_refusals.append(k)
            await ctx.tick()
        assert k == len(sent)

    simulate(dut, bench)
    expect = [(f, Error.OVERLAP if (ovl and e == Error.NONE) else e, 0) for f, e, ovl in sent]
    assert got == expect
    assert full_refusals, "the random back-pressure never filled the queue"
    assert most[0] == depth, "the queue never held its depth"
