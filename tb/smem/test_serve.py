"""BankStage with the banks (Amaranth's simulator): a load's rows land, each in its slot, in
the bank cycles the H200 rule (or the packer's bound) gives; a store writes the model's image.

Expected values: the model (tensorlsu.sim.model: wavefronts, stmatrix; pinned by the H200
vectors) and the shared-memory image itself for the landed rows."""

import random

import numpy as np
import pytest
from amaranth import Elaboratable, Module
from amaranth.lib import wiring
from stagesim import simulate
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline import forms
from tensorlsu.hdl.pipeline.decode import form_constants
from tensorlsu.hdl.smem.banks import SharedBanks
from tensorlsu.hdl.smem.serve import BankStage
from tensorlsu.sim import model, ptx

SMEM = 4096


class _Rig(Elaboratable):
    def __init__(self, p):
        self.bank, self.banks = BankStage(p), SharedBanks(p)

    def elaborate(self, platform):
        m = Module()
        m.submodules.bank, m.submodules.banks = self.bank, self.banks
        wiring.connect(m, self.bank.banks, self.banks.port)
        return m


def _addresses(kind, rng):
    if kind == "free":
        return [16 * t for t in range(32)]
    if kind == "4-way":
        return [64 * t for t in range(32)]
    pool = [16 * r for r in rng.sample(range(SMEM // 16), 8)]
    return [rng.choice(pool) for _ in range(32)]


def _bank_cycles(ins, addr, policy):
    """h200: the model's wavefronts. packed: the busiest quad's distinct rows over the whole
    instruction, the banks' share of the model's bound (the result stage adds its floor of one
    cycle per register beat)."""
    if policy == "h200":
        return model.wavefronts(ins, addr, policy)
    rows = {a // 16 for a in addr[:8 * ins.num]}
    return max(sum(1 for r in rows if r % 8 == q) for q in range(8))


def _run(p, bench):
    rig = _Rig(p)
    simulate(rig, bench, rig.bank, rig.banks)


async def _fill(ctx, banks, p, smem):
    ctx.set(banks.quiet, 1)
    for line in range(p.lines):
        ctx.set(banks.fill.payload.line, line)
        ctx.set(banks.fill.payload.data, int.from_bytes(smem[line * 128:(line + 1) * 128].tobytes(), "little"))
        ctx.set(banks.fill.valid, 1)
        await ctx.tick()
    ctx.set(banks.fill.valid, 0)
    ctx.set(banks.quiet, 0)


async def _take(ctx, bank, fid, addr, p):
    """Hand the bank stage one pass, for one cycle."""
    tk = bank.take
    for k, v in form_constants(p, forms.info(fid))[0].items():
        ctx.set(getattr(tk.pass_.consts, k), v)
    ctx.set(tk.pass_.form, fid)
    for i, a in enumerate(addr):
        ctx.set(tk.pass_.addr[i], a)
    ctx.set(tk.take, 1)
    ctx.set(tk.ok, 1)
    await ctx.tick()
    ctx.set(tk.take, 0)
    ctx.set(tk.ok, 0)


@pytest.mark.parametrize("policy", ["h200", "packed"])
@pytest.mark.parametrize("kind", ["free", "4-way", "pool"])
def test_load_rows_land_in_their_slots_in_the_model_cycles(policy, kind):
    p = Params(smem_bytes=SMEM, schedule=policy)
    ins = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
    fid = forms.form_id(ins)
    rng = random.Random(kind)
    smem = np.random.default_rng(5).integers(0, 256, SMEM, dtype=np.uint8)
    addr = _addresses(kind, rng)
    landed, got = {}, {}

    async def bench(ctx, bank, banks):
        await _fill(ctx, banks, p, smem)
        await _take(ctx, bank, fid, addr, p)
        cycles = 0
        for _ in range(40):
            cycles += ctx.get(bank.progress.count)
            land = bank.progress.land
            for j in range(p.window):
                if ctx.get(land.slots) >> j & 1:
                    slot = p.window * ctx.get(land.win) + j
                    assert slot not in landed, f"slot {slot} landed twice"
                    landed[slot] = ctx.get(bank.progress.land_rows[j])
            await ctx.tick()
        got["cycles"] = cycles
        assert not ctx.get(bank.busy)

    _run(p, bench)
    assert got["cycles"] == _bank_cycles(ins, addr, policy)
    assert sorted(landed) == list(range(32))
    for s, row in landed.items():
        assert row == int.from_bytes(smem[addr[s]:addr[s] + 16].tobytes(), "little"), s


@pytest.mark.parametrize("policy", ["h200", "packed"])
def test_store_writes_the_model_image(policy):
    p = Params(smem_bytes=SMEM, schedule=policy)
    ins = ptx.parse("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "sm_90a")
    fid = forms.form_id(ins)
    rng = random.Random(7)
    addr = [16 * r for r in rng.sample(range(SMEM // 16), 16)] + [0] * 16
    regs = np.random.default_rng(8).integers(0, 1 << 32, (32, ins.nregs), dtype=np.uint64)
    smem = np.random.default_rng(9).integers(0, 256, SMEM, dtype=np.uint8)
    got = {}

    async def bench(ctx, bank, banks):
        await _fill(ctx, banks, p, smem)
        await _take(ctx, bank, fid, addr, p)
        beat, cycles, stored = 0, 0, False
        for _ in range(40):
            if beat < ins.nregs:
                ctx.set(bank.store.valid, 1)
                for t in range(32):
                    ctx.set(bank.store.payload[t], int(regs[t, beat]))
            cycles += ctx.get(bank.progress.count)
            stored |= bool(ctx.get(bank.progress.finished))
            if ctx.get(bank.store.valid) and ctx.get(bank.store.ready):
                beat += 1
            await ctx.tick()
            ctx.set(bank.store.valid, 0)
        got["cycles"], got["stored"] = cycles, stored
        ctx.set(banks.quiet, 1)
        ctx.set(banks.dump.ready, 1)
        image = bytearray()
        for line in range(p.lines):
            ctx.set(banks.dump_req.payload, line)
            ctx.set(banks.dump_req.valid, 1)
            await ctx.tick()
            ctx.set(banks.dump_req.valid, 0)
            while not ctx.get(banks.dump.valid):
                await ctx.tick()
            image += ctx.get(banks.dump.payload).to_bytes(128, "little")
            await ctx.tick()
        got["image"] = bytes(image)

    _run(p, bench)
    assert got["stored"]
    assert got["cycles"] == _bank_cycles(ins, addr, policy)
    assert got["image"] == model.stmatrix(ins, smem, addr, regs).tobytes()


PAIR_FORM = "wmma.load.c.sync.aligned.row.m16n16k16.shared.f32"


async def _take_pair(ctx, bank, fid, passes, p):
    """Hand the bank stage both passes of a wmma.load at once (a pair take), for one cycle:
    the first into entry 0 at ring block 0, the second into entry 1 at block 4."""
    tk = bank.take
    consts = form_constants(p, forms.info(fid))
    for k, v in consts[0].items():
        ctx.set(getattr(tk.pass_.consts, k), v)
    for k, v in consts[1].items():
        ctx.set(getattr(tk.second_pass.consts, k), v)
    ctx.set(tk.pass_.form, fid)
    ctx.set(tk.second_pass.form, fid)
    for i, a in enumerate(passes[0]):
        ctx.set(tk.pass_.addr[i], a)
    for i, a in enumerate(passes[1]):
        ctx.set(tk.second_pass.addr[i], a)
    ctx.set(tk.second_tail, 1)
    ctx.set(tk.second_start, p.pass_blocks)
    for s in (tk.take, tk.ok, tk.pair):
        ctx.set(s, 1)
    await ctx.tick()
    for s in (tk.take, tk.ok, tk.pair):
        ctx.set(s, 0)


@pytest.mark.parametrize("stride,blocked", [(16, None), (32, "first"), (20, "second")])
def test_a_pair_takes_its_busiest_quad_once(stride, blocked):
    """packed: both passes of a 1 KiB fragment served side by side land every slot with its
    row and take the model's bound for the whole fragment (its busiest quad's distinct rows),
    not each pass's in turn; while either pass is blocked, neither starts."""
    p = Params(smem_bytes=SMEM, schedule="packed")
    ins = ptx.parse(PAIR_FORM, "sm_90a")
    fid, inf = forms.form_id(ins), forms.info(forms.form_id(ins))
    assert len(inf.passes) == 2
    smem = np.random.default_rng(stride).integers(0, 256, SMEM, dtype=np.uint8)
    step = stride * inf.bits // 8
    passes = [[line * step + 16 * chunk for line, chunk in q] + [0] * (32 - len(q)) for q in inf.passes]
    landed, got = [{}, {}], {}

    async def bench(ctx, bank, banks):
        await _fill(ctx, banks, p, smem)
        if blocked:
            ctx.set(bank.blocked if blocked == "first" else bank.second_blocked, 1)
        await _take_pair(ctx, bank, fid, passes, p)
        cycles, waited = 0, 0
        for k in range(40):
            if blocked and k == 5:
                ctx.set(bank.blocked, 0)
                ctx.set(bank.second_blocked, 0)
            if blocked and k < 5:
                waited += ctx.get(bank.banks.read) != 0
            cycles += ctx.get(bank.progress.count) + ctx.get(bank.progress.second_count)
            for n, (land, rows) in enumerate(((bank.progress.land, bank.progress.land_rows),
                                              (bank.progress.second_land, bank.progress.second_land_rows))):
                assert ctx.get(land.buf) == n or not ctx.get(land.slots)
                for j in range(32):
                    if ctx.get(land.slots) >> j & 1:
                        assert j not in landed[n], f"pass {n} slot {j} landed twice"
                        landed[n][j] = ctx.get(rows[j])
            await ctx.tick()
        got["cycles"], got["waited"] = cycles, waited
        assert not ctx.get(bank.busy)

    _run(p, bench)
    assert got["waited"] == 0
    assert got["cycles"] == model.wavefronts(ins, 0, "packed", stride=stride)
    for n, q in enumerate(inf.passes):
        assert sorted(landed[n]) == list(range(len(q)))
        for j, a in enumerate(passes[n][:len(q)]):
            assert landed[n][j] == int.from_bytes(smem[a:a + 16].tobytes(), "little"), (n, j)
