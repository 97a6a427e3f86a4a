"""ResultStage alone (Amaranth's simulator): a load's beats leave once their rows land and carry
the model's registers; a refused instruction gives all its beats with the error; a store gives
one completion beat once written, with its bank cycles.

Expected values: the model (tensorlsu.sim.model.ldmatrix, pinned by the H200 vectors) for the
registers; the result port's contract (docs, hdl/lsu.py) for beats, errors and cycles."""

import numpy as np
import pytest
from stagesim import simulate
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline import forms
from tensorlsu.hdl.pipeline.decode import form_constants
from tensorlsu.hdl.pipeline.result import ResultStage
from tensorlsu.sim import model, ptx

P = Params()
#: the row buffer in flip-flops (standard cells) and in memories (an FPGA's LUT RAM)
BUILDS = pytest.mark.parametrize("params", [P, Params(row_buffer_lutram=True)], ids=["flip-flops", "lutram"])


def _form(text):
    ins = ptx.parse(text, "sm_100a")
    return ins, forms.form_id(ins)


def _take(ctx, dut, fid, err=Error.NONE, tail=0, start=0):
    tk = dut.take
    for k, v in form_constants(P, forms.info(fid))[0].items():
        ctx.set(getattr(tk.pass_.consts, k), v)
    ctx.set(tk.pass_.form, fid)
    ctx.set(tk.pass_.err, err)
    ctx.set(tk.tail, tail)
    ctx.set(tk.start, start)
    ctx.set(tk.take, 1)
    ctx.set(tk.ok, err == Error.NONE)


async def _stop_take(ctx, dut):
    await ctx.tick()
    ctx.set(dut.take.take, 0)
    ctx.set(dut.take.ok, 0)


async def _beats(ctx, dut, limit=20):
    """Take result beats until the last: [(cycle, data, error, cycles)]."""
    out = []
    ctx.set(dut.result.ready, 1)
    for cycle in range(limit):
        if ctx.get(dut.result.valid):
            p = dut.result.payload
            data = [ctx.get(p.data[t]) for t in range(32)]
            out.append((cycle, data, ctx.get(p.error), ctx.get(p.cycles)))
            if ctx.get(p.last):
                await ctx.tick()
                return out
        await ctx.tick()
    raise AssertionError(f"no last beat in {limit} cycles: {out}")


def _run(bench, params=P):
    dut = ResultStage(params)
    simulate(dut, bench, dut)


@BUILDS
def test_load_beat_waits_for_its_rows_and_carries_the_model_registers(params):
    ins, fid = _form("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16")
    rng = np.random.default_rng(1)
    smem = rng.integers(0, 256, 8 * 16, dtype=np.uint8)
    addr = [16 * (t % 8) for t in range(32)]
    expect = model.ldmatrix(ins, smem, addr)             # (32, 1)
    got = {}

    async def bench(ctx, dut):
        _take(ctx, dut, fid, start=2)                    # its slots start at ring block 2
        await _stop_take(ctx, dut)
        pr = dut.progress
        ctx.set(pr.count, 1)                             # the banks work for it for 2 cycles
        for _ in range(2):
            assert not ctx.get(dut.result.valid)
            await ctx.tick()
        ctx.set(pr.count, 0)
        ctx.set(pr.finished, 1)                          # ... and are done with it
        await ctx.tick()
        ctx.set(pr.finished, 0)
        assert not ctx.get(dut.result.valid)
        ctx.set(pr.land.slots, 0xFF)
        ctx.set(pr.land.first, 2)
        for j in range(8):
            ctx.set(pr.land_rows[j], int.from_bytes(smem[16 * j:16 * j + 16].tobytes(), "little"))
        await ctx.tick()
        ctx.set(pr.land.slots, 0)
        got["beats"] = await _beats(ctx, dut)

    _run(bench, params)
    (cycle, data, err, cycles), = got["beats"]
    assert (cycle, err, cycles) == (0, Error.NONE, 2)
    assert data == [int(x) for x in expect[:, 0]]


@BUILDS
@pytest.mark.parametrize("text,start", [("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 10),
                                        ("ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8", 6),
                                        ("wmma.load.c.sync.aligned.row.m8n8k4.shared.f64", 8)])
def test_a_load_of_four_blocks_reads_each_where_it_landed(text, start, params):
    """A load of four blocks at ring block ``start`` (an .x4 past the ring's end; beats that
    read two blocks, and all four), its rows landing a block a cycle: every beat carries the
    model's registers."""
    ins, fid = _form(text)
    inf = forms.info(fid)
    assert start % inf.align == 0 and len(inf.passes) == 1
    rng = np.random.default_rng(start)
    smem = rng.integers(0, 256, 32 * 16, dtype=np.uint8)
    if inf.wmma:                    # slot i is chunk (line, k) of a fragment at 0, 64 bytes a line
        stride = 64 * 8 // inf.bits
        expect = model.wmma_load(ins, model.Memory(shared=smem), 0, stride)
        at = [64 * line + 16 * k for line, k in inf.passes[0]]
    else:                           # slot i is thread i's row, at 16 i
        expect = model.ldmatrix(ins, smem, [16 * t for t in range(32)])
        at = [16 * i for i in range(32)]
    got = {}

    async def bench(ctx, dut):
        _take(ctx, dut, fid, start=start)
        await _stop_take(ctx, dut)
        pr = dut.progress
        ctx.set(pr.finished, 1)
        await ctx.tick()
        ctx.set(pr.finished, 0)
        for k in range(4):                               # block start + k: slots 8k … 8k + 7
            ctx.set(pr.land.slots, 0xFF)
            ctx.set(pr.land.first, (start + k) % params.row_blocks)
            ctx.set(pr.land.win, k)
            for j in range(8):
                a = at[8 * k + j]
                ctx.set(pr.land_rows[j], int.from_bytes(smem[a:a + 16].tobytes(), "little"))
            await ctx.tick()
        ctx.set(pr.land.slots, 0)
        got["beats"] = await _beats(ctx, dut)

    _run(bench, params)
    assert [err for _, _, err, _ in got["beats"]] == [Error.NONE] * inf.nregs
    assert [data for _, data, _, _ in got["beats"]] == [[int(x) for x in expect[:, r]] for r in range(inf.nregs)]


def test_refused_load_gives_every_beat_with_the_error():
    _, fid = _form("ldmatrix.sync.aligned.m8n8.x4.shared.b16")
    got = {}

    async def bench(ctx, dut):
        _take(ctx, dut, fid, err=Error.MISALIGNED)
        await _stop_take(ctx, dut)
        got["beats"] = await _beats(ctx, dut)
        assert ctx.get(dut.entries.valid) == 0                   # the entry is free again

    _run(bench)
    assert [(c, e, n) for c, _, e, n in got["beats"]] == [(k, Error.MISALIGNED, 0) for k in range(4)]
    assert all(d == [0] * 32 for _, d, _, _ in got["beats"])


def test_store_completes_once_written_with_its_bank_cycles():
    _, fid = _form("stmatrix.sync.aligned.m8n8.x2.shared.b16")
    got = {}

    async def bench(ctx, dut):
        _take(ctx, dut, fid, tail=0)
        await _stop_take(ctx, dut)
        ctx.set(dut.progress.count, 1)
        for _ in range(3):
            assert not ctx.get(dut.result.valid)
            await ctx.tick()
        ctx.set(dut.progress.count, 0)
        ctx.set(dut.progress.finished, 1)
        await ctx.tick()
        ctx.set(dut.progress.finished, 0)
        got["beats"] = await _beats(ctx, dut)

    _run(bench)
    assert [(c, e, n) for c, _, e, n in got["beats"]] == [(0, Error.NONE, 3)]


def test_entries_leave_in_order():
    """Two refused instructions taken back to back: the first one's beats all come first."""
    _, x2 = _form("ldmatrix.sync.aligned.m8n8.x2.shared.b16")
    _, x1 = _form("ldmatrix.sync.aligned.m8n8.x1.shared.b16")
    got = {}

    async def bench(ctx, dut):
        _take(ctx, dut, x2, err=Error.OUT_OF_RANGE, tail=0)
        assert ctx.get(dut.tail) == 0 and ctx.get(dut.free)
        await ctx.tick()
        _take(ctx, dut, x1, err=Error.MISALIGNED, tail=1)
        assert ctx.get(dut.tail) == 1
        await _stop_take(ctx, dut)
        got["first"] = await _beats(ctx, dut)
        got["second"] = await _beats(ctx, dut)

    _run(bench)
    assert [e for _, _, e, _ in got["first"]] == [Error.OUT_OF_RANGE] * 2
    assert [e for _, _, e, _ in got["second"]] == [Error.MISALIGNED]
