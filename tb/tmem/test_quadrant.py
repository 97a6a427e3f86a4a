"""One Tensor Memory quadrant (hdl/tmem/quadrant.py) alone, in Amaranth's simulator: random tcgen05.ld /
tcgen05.st forms, taddrs, splits and data against the model, refusals included, with random
back-pressure on the result port.

Expected values: tensorlsu.sim.model (tcgen05_ld / tcgen05_st, whose tables are checked against
CuTe's copy atoms and the PTX text in test_layouts_cute.py and test_model.py)."""

import random

import numpy as np
import pytest
from stagesim import simulate
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.params import TmemParams
from tensorlsu.sim.tmem_plan import NUMS, SHAPES, plan, schedule
from tensorlsu.hdl.tmem.quadrant import TmemQuadrant
from tensorlsu.hdl.tmem.records import LANES, Kind, instr_fields
from tensorlsu.sim import layouts, model, ptx
from tensorlsu.sim.ptx import TCGEN05_REGS_PER_X1
from tmemgen import random_case

COLS = 64


def _drive(ctx, dut, ins, taddr, warp, split):
    for k, v in instr_fields(ins, taddr, warp, split).items():
        ctx.set(getattr(dut.instr.payload, k), v)
    ctx.set(dut.instr.valid, 1)


async def _run(ctx, dut, rng, ins, taddr, warp, split, regs):
    """One instruction: its beats; returns (regs or None, redval or None, error)."""
    _drive(ctx, dut, ins, taddr, warp, split)
    await ctx.tick().until(dut.instr.ready)   # taken at this edge
    ctx.set(dut.instr.valid, 0)
    got = np.zeros((LANES, ins.nregs), np.uint32)
    seen = np.zeros(ins.nregs, bool)
    sent = 0
    for _ in range(4000):
        if ins.op == "tcgen05.st" and sent < -(-ins.nregs // 2):
            # a beat of registers 2k and 2k + 1 (the second zero in a store of one register)
            ctx.set(dut.store.valid, 1)
            ctx.set(dut.store.payload, [[int(x) for x in regs[:, r]] if r < ins.nregs else [0] * LANES
                                        for r in (2 * sent, 2 * sent + 1)])
        else:
            ctx.set(dut.store.valid, 0)
        ready = rng.random() < 0.8
        ctx.set(dut.result.ready, ready)
        await ctx.delay(1e-8)
        took_store = ctx.get(dut.store.valid) and ctx.get(dut.store.ready)
        beat = None
        if ready and ctx.get(dut.result.valid):
            r = dut.result.payload
            beat = {"kind": ctx.get(r.kind), "last": ctx.get(r.last), "error": ctx.get(r.error),
                    "reg": ctx.get(r.reg), "reg2": ctx.get(r.reg2), "two": ctx.get(r.two),
                    "data": [[ctx.get(r.data[s][t]) for t in range(LANES)] for s in (0, 1)]}
        await ctx.tick()
        sent += bool(took_store)
        if beat is None:
            continue
        if beat["error"] != Error.NONE or beat["kind"] == Kind.DONE:
            assert beat["last"]
            ctx.set(dut.store.valid, 0)
            return None, None, beat["error"]
        if beat["kind"] == Kind.REDVAL:
            assert beat["last"]
            return got, np.array(beat["data"][0], np.uint32), Error.NONE
        regs_in = [beat["reg"]] + ([beat["reg2"]] if beat["two"] else [])
        for s, reg in enumerate(regs_in):
            assert not seen[reg], f"register {reg} twice"
            seen[reg] = True
            got[:, reg] = beat["data"][s]
        if beat["last"]:
            assert seen.all(), "last beat before every register"
            return got, None, Error.NONE
    raise AssertionError("no last beat")


async def _fill(ctx, dut, image):
    for c in range(image.shape[1]):
        ctx.set(dut.fill.valid, 1)
        ctx.set(dut.fill.payload.col, c)
        ctx.set(dut.fill.payload.data, [int(x) for x in image[:, c]])
        await ctx.tick()
    ctx.set(dut.fill.valid, 0)


async def _dump(ctx, dut, cols=COLS):
    out = np.zeros((LANES, cols), np.uint32)
    for c in range(cols):
        ctx.set(dut.dump_req.valid, 1)
        ctx.set(dut.dump_req.payload, c)
        await ctx.tick().until(dut.dump_req.ready)
        ctx.set(dut.dump_req.valid, 0)
        await ctx.delay(1e-8)
        assert ctx.get(dut.dump.valid)
        out[:, c] = [ctx.get(dut.dump.payload[t]) for t in range(LANES)]
        ctx.set(dut.dump.ready, 1)
        await ctx.tick()
        ctx.set(dut.dump.ready, 0)
    return out


@pytest.mark.parametrize("quadrant,seed,banks", [(0, 1, 2), (3, 2, 2), (1, 3, 1)])
def test_random_forms_against_the_model(quadrant, seed, banks):
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    dut = TmemQuadrant(TmemParams(COLS, banks), quadrant)
    tm = nrng.integers(0, 1 << 32, size=(128, COLS), dtype=np.uint64).astype(np.uint32)
    lanes = slice(32 * quadrant, 32 * quadrant + 32)
    counts = {"ok": 0, "refused": 0}

    async def bench(ctx):
        nonlocal tm
        await _fill(ctx, dut, tm[lanes])
        for _ in range(40):
            ins, taddr, warp, split = random_case(rng, quadrant, COLS, max_num=16)
            regs = nrng.integers(0, 1 << 32, size=(32, ins.nregs), dtype=np.uint64).astype(np.uint32)
            if ins.red == "max" or ins.red == "min":   # some NaN and signed-zero data
                for v in (0x7FC00001, 0x80000000, 0xFF800000):
                    tm[rng.randrange(128), rng.randrange(COLS)] = v
                await _fill(ctx, dut, tm[lanes])
            try:
                if ins.op == "tcgen05.ld":
                    want = model.tcgen05_ld(ins, tm, taddr, warp, split, cols=COLS)
                else:
                    want = model.tcgen05_st(ins, tm, taddr, warp, regs, split, cols=COLS)
                refused = None
            except model.ModelError as e:
                refused = str(e)
            got, red, err = await _run(ctx, dut, rng, ins, taddr, warp, split, regs)
            where = f"{ins.form} taddr=0x{taddr:x} warp={warp} split={split}"
            if refused:
                assert err != Error.NONE, f"{where}: the model refuses ({refused}), the RTL does not"
                counts["refused"] += 1
                continue
            assert err == Error.NONE, f"{where}: refused with {err}"
            counts["ok"] += 1
            if ins.op == "tcgen05.ld":
                assert (got == want[0]).all(), f"{where}: registers differ"
                if ins.red:
                    assert (red == want[1]).all(), f"{where}: redval differs"
            else:
                tm = want
                assert (await _dump(ctx, dut) == tm[lanes]).all(), f"{where}: memory differs"
        assert counts["ok"] >= 15 and counts["refused"] >= 1, counts

    simulate(dut, bench)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_form_of_a_shape(shape):
    """Every .num and packing of the shape, load and store (and .red where the shape has it),
    once each at a random legal taddr, against the model; quadrant 2."""
    quadrant = 2
    rng = random.Random(SHAPES.index(shape))
    nrng = np.random.default_rng(7)
    lanes = slice(32 * quadrant, 32 * quadrant + 32)
    forms = []
    for num in NUMS:
        if TCGEN05_REGS_PER_X1[shape] * num > 128:
            continue
        for op, q in (("tcgen05.ld", "pack::16b"), ("tcgen05.st", "unpack::16b")):
            for pack in (False, True):
                forms.append(f"{op}.sync.aligned.{shape}.x{num}{'.' + q if pack else ''}.b32")
        if shape in ("32x32b", "16x32bx2") and num >= 2:
            ty = rng.choice(["f32", "u32", "s32"])
            forms.append(f"tcgen05.ld.red.sync.aligned.{shape}.x{num}.{rng.choice(['min', 'max'])}.{ty}")
    cols = 512   # the .x128 forms span up to 256 columns: this test's memory has 512

    async def bench(ctx):
        nonlocal tm
        await _fill(ctx, dut, tm[lanes])
        for text in forms:
            ins = ptx.parse(text, "sm_103a")
            span = ins.num * (2 if ins.pack else 1) * {"32x32b": 1, "16x32bx2": 1, "16x64b": 2,
                                                        "16x128b": 4, "16x256b": 8}[shape]
            split = min(span + rng.randrange(4), cols - span) if shape == "16x32bx2" else None
            lane = 32 * quadrant + (0 if shape == "32x32b" else rng.randrange(17))
            col = rng.randrange(cols - span - (split or 0) + 1)
            taddr = (lane << 16) | col
            regs = nrng.integers(0, 1 << 32, size=(32, ins.nregs), dtype=np.uint64).astype(np.uint32)
            got, red, err = await _run(ctx, dut, rng, ins, taddr, quadrant, split, regs)
            assert err == Error.NONE, f"{text}: refused with {err}"
            if ins.op == "tcgen05.ld":
                want = model.tcgen05_ld(ins, tm, taddr, quadrant, split, cols=cols)
                assert (got == want[0]).all(), f"{text} at 0x{taddr:x}: registers differ"
                if ins.red:
                    assert (red == want[1]).all(), f"{text}: redval differs"
            else:
                tm = model.tcgen05_st(ins, tm, taddr, quadrant, regs, split, cols=cols)
        assert (await _dump(ctx, dut, cols) == tm[lanes]).all(), "memory differs after the stores"

    dut = TmemQuadrant(TmemParams(cols), quadrant)
    tm = nrng.integers(0, 1 << 32, size=(128, cols), dtype=np.uint64).astype(np.uint32)
    simulate(dut, bench)


@pytest.mark.parametrize("banks", [1, 2])
def test_step_table_is_the_layout_table(banks):
    """Walking a form's rows of the step table delivers (load) or writes (store) every register
    piece of every thread exactly once, at the lane and column ``layouts.tmem_table`` gives it
    (a packed register's halves in columns 2c and 2c + 1). The formal specs prove that the
    gather and scatter do what the rows say; this closes the loop to the PTX layout."""
    sch = schedule(banks)
    forms = list(sch.forms())
    assert len(forms) == 148
    for op, shape, num, pack in forms:
        q = ("pack::16b" if op == "tcgen05.ld" else "unpack::16b") if pack else ""
        ins = ptx.parse(f"{op}.sync.aligned.{shape}.x{num}{'.' + q if q else ''}.b32", "sm_100a")
        T = layouts.tmem_table(ins)
        pl = plan(op, shape, num, pack, banks)
        cls = sch.cls_of(op, shape, num, pack)
        rows = [v for v in sch.variants if v.cls == cls]
        if banks == 2:
            # a group's two columns must land in different banks whatever taddr's column and
            # the split: the same half, offsets of opposite parity
            for v in rows:
                for g in range(0, len(v.ports), 2):
                    a, b = v.ports[g], v.ports[g + 1]
                    assert a is not None or b is None, f"{ins.form}: a group without its first column"
                    if b is not None:
                        assert a[1] == b[1] and (a[0] - b[0]) % 2 == 1, f"{ins.form}: {a} and {b} may share a bank"
        seen = {}
        for p in range(pl.periods):
            for v in rows:
                for move in v.moves:
                    (slot, t, piece), (port, lane) = move if op == "tcgen05.ld" else move[::-1]
                    r = p * pl.period_regs + v.regs[slot]
                    off, half = v.ports[port]
                    key = (r, t, piece)
                    assert key not in seen, f"{ins.form}: register {r} thread {t} piece {piece} twice"
                    seen[key] = (lane, off + p * pl.period_cols, half)
        want = {}
        for t in range(32):
            for r in range(ins.nregs):
                lane, col, half = (int(x) for x in T[t, r])
                for piece in ((0, 1) if pack else (0,)):
                    want[(r, t, piece)] = (lane, 2 * col + piece if pack else col, half)
        assert seen == want, ins.form


@pytest.mark.parametrize("banks", [1, 2])
def test_a_dump_offered_with_the_fills_reads_the_last_fill(banks):
    """Fills back to back are each taken in their cycle (one a clock) while a dump of the last
    filled column is offered from the first: the dump waits for the fills (offered and being
    written) and reads the last one's data; an instruction offered with them waits too and then
    reads the filled memory."""
    quadrant, cols = 1, 8
    dut = TmemQuadrant(TmemParams(32, banks), quadrant)
    nrng = np.random.default_rng(11)
    image = nrng.integers(0, 1 << 32, size=(LANES, cols), dtype=np.uint64).astype(np.uint32)
    ins = ptx.parse("tcgen05.ld.sync.aligned.32x32b.x8.b32", "sm_103a")

    taddr = (32 * quadrant) << 16

    async def bench(ctx):
        _drive(ctx, dut, ins, taddr, quadrant, None)
        ctx.set(dut.dump_req.valid, 1)
        ctx.set(dut.dump_req.payload, cols - 1)
        for c in range(cols):
            ctx.set(dut.fill.valid, 1)
            ctx.set(dut.fill.payload.col, c)
            ctx.set(dut.fill.payload.data, [int(x) for x in image[:, c]])
            await ctx.delay(1e-9)
            assert ctx.get(dut.fill.ready), f"fill {c} not taken in its cycle"
            assert not ctx.get(dut.dump_req.ready), f"the dump went before fill {c}"
            assert not ctx.get(dut.instr.ready), f"the instruction went before fill {c}"
            await ctx.tick()
        ctx.set(dut.fill.valid, 0)
        await ctx.delay(1e-9)
        assert not ctx.get(dut.dump_req.ready), "the dump read while the last fill was written"
        await ctx.tick().until(dut.dump_req.ready)
        ctx.set(dut.dump_req.valid, 0)
        await ctx.delay(1e-9)
        assert ctx.get(dut.dump.valid)
        assert [ctx.get(dut.dump.payload[t]) for t in range(LANES)] == [int(x) for x in image[:, cols - 1]]
        ctx.set(dut.dump.ready, 1)
        await ctx.tick()
        ctx.set(dut.dump.ready, 0)
        tm = np.zeros((128, 32), np.uint32)
        tm[32 * quadrant:32 * quadrant + 32, :cols] = image
        got, _, err = await _run(ctx, dut, random.Random(1), ins, taddr, quadrant, None, np.zeros((LANES, 8), np.uint32))
        assert err == Error.NONE
        assert (got == model.tcgen05_ld(ins, tm, taddr, quadrant, None, cols=32)[0]).all()

    simulate(dut, bench)
