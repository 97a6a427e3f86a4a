"""The check, accept and address stages together (Amaranth's simulator), as the unit connects
them: the error each refused instruction gets, the passes a two-pass wmma.load gives, the
stmatrix overlap verdict and a wmma.load's chunk addresses.

Expected values: the model's refusals (tensorlsu.sim.model raises ModelError for exactly these
inputs; the unit's codes are named in hdl/codes.py), and the pass counts of the form tables."""

import pytest
from amaranth import Elaboratable, Module
from amaranth.lib import wiring
from stagesim import simulate
from tensorlsu.hdl.codes import Error, Space
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline import forms
from tensorlsu.hdl.pipeline.accept import AcceptStage
from tensorlsu.hdl.pipeline.address import AddressStage
from tensorlsu.hdl.pipeline.check_stage import CheckStage
from tensorlsu.sim import ptx

SMEM = 16 * 1024


def _fid(text):
    return forms.form_id(ptx.parse(text, "sm_90a"))


class Front(Elaboratable):
    """The check stage, the accept stage and the address stage in a row."""

    def __init__(self, params):
        self.check, self.accept, self.address = CheckStage(params), AcceptStage(params), AddressStage(params)
        self.instr, self.smem_size, self.passes = self.check.instr, self.check.smem_size, self.address.addressed

    def elaborate(self, platform):
        m = Module()
        m.submodules.check, m.submodules.accept, m.submodules.address = self.check, self.accept, self.address
        wiring.connect(m, self.check.checked, self.accept.instr)
        wiring.connect(m, self.accept.passes, self.address.passes)
        return m


def passes_of(form, addr, stride=0, space=Space.SHARED, params=None, smem_size=None):
    """Accept one instruction and collect its passes: per pass (err, ovl, glob, the 32 slot
    addresses). ``smem_size``: the shared memory the instruction may address (None: the port's
    default, all of it). The stages are idle again afterwards."""
    dut = Front(params or Params(smem_bytes=SMEM))
    out = []

    async def bench(ctx):
        if smem_size is not None:
            ctx.set(dut.smem_size, smem_size)
        ctx.set(dut.instr.payload.form, form)
        for i in range(32):
            ctx.set(dut.instr.payload.addr[i], addr[i] if isinstance(addr, list) else addr)
        ctx.set(dut.instr.payload.stride, stride)
        ctx.set(dut.instr.payload.space, space)
        ctx.set(dut.instr.valid, 1)
        ctx.set(dut.passes.ready, 1)
        await ctx.tick()
        ctx.set(dut.instr.valid, 0)
        for _ in range(10):
            if ctx.get(dut.passes.valid):
                pl = dut.passes.payload
                out.append((ctx.get(pl.err), ctx.get(pl.ovl), ctx.get(pl.glob),
                            [ctx.get(pl.addr[s]) for s in range(32)]))
            await ctx.tick()
        assert not any(ctx.get(s.busy) for s in (dut.check, dut.accept, dut.address))

    simulate(dut, bench)
    return out


def run_one(form, addr, stride=0, space=Space.SHARED, params=None, smem_size=None):
    """The passes as [(err, ovl)], with (glob, first slot's address) appended for a wmma.load in
    another space than shared."""
    return [(err, ovl) + (() if space == Space.SHARED else (glob, addrs[0]))
            for err, ovl, glob, addrs in passes_of(form, addr, stride, space, params, smem_size)]


ROWS = [16 * t for t in range(32)]
LD4 = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
ST4 = "stmatrix.sync.aligned.m8n8.x4.shared.b16"
WMMA_A = "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16"
WMMA_C64 = "wmma.load.c.sync.aligned.row.m16n16k16.shared.f32"


@pytest.mark.parametrize("text,addr,stride,expect", [
    (LD4, ROWS, 0, [(Error.NONE, 0)]),
    (LD4, ROWS[:5] + [ROWS[5] + 4] + ROWS[6:], 0, [(Error.MISALIGNED, 0)]),
    (LD4, ROWS[:31] + [SMEM], 0, [(Error.OUT_OF_RANGE, 0)]),
    (LD4, ROWS[:31] + [SMEM - 16], 0, [(Error.NONE, 0)]),
    (ST4, ROWS, 0, [(Error.NONE, 0)]),
    (ST4, ROWS[:20] + [ROWS[3]] + ROWS[21:], 0, [(Error.NONE, 1)]),       # rows 3 and 20: distance 17
    (WMMA_A, 0, 16, [(Error.NONE, 0)]),
    (WMMA_A, 16, 16, [(Error.MISALIGNED, 0)]),                              # not 32-byte aligned
    (WMMA_A, 0, 15, [(Error.STRIDE, 0)]),                                   # below the leading dimension
    (WMMA_A, 0, 20, [(Error.STRIDE, 0)]),                                   # not a multiple of 16 bytes
    (WMMA_A, SMEM - 256, 16, [(Error.OUT_OF_RANGE, 0)]),                   # 16 lines of 32 bytes
    (WMMA_A, SMEM - 512, 16, [(Error.NONE, 0)]),
    (WMMA_C64, 0, 16, [(Error.NONE, 0), (Error.NONE, 0)]),                 # 64 chunks: two passes
])
def test_checks_and_passes(text, addr, stride, expect):
    assert run_one(_fid(text), addr, stride) == expect


def test_unknown_form_is_refused():
    assert run_one(len(forms.FORMS), ROWS) == [(Error.UNSUPPORTED, 0)]


def test_two_pass_forms_match_the_tables():
    """Every wmma form with more than 32 chunks is the one the tables split in two."""
    two = [f for f in range(len(forms.FORMS)) if len(forms.info(f).passes) == 2]
    assert _fid(WMMA_C64) in two


def test_state_spaces():
    """A global matrix goes to the fetch stage with its global addresses; a generic one in the
    shared window becomes its shared offset; ranges and the port's absence are refused."""
    p = Params(smem_bytes=SMEM)
    fid, win = _fid(WMMA_A), p.shared_window_base
    # slot 0 is chunk (0, 0) of the H200's issue order: the matrix address itself
    assert forms.info(fid).passes[0][0] == (0, 0)
    assert run_one(fid, 0x1234_5660, 16, Space.GLOBAL) == [(Error.NONE, 0, 1, 0x1234_5660)]
    assert run_one(fid, 0x1234_5660, 16, Space.GENERIC) == [(Error.NONE, 0, 1, 0x1234_5660)]
    assert run_one(fid, win + 0x40, 16, Space.GENERIC) == [(Error.NONE, 0, 0, 0x40)]
    assert run_one(fid, win + SMEM - 256, 16, Space.GENERIC)[0][:3] == (Error.OUT_OF_RANGE, 0, 0)
    assert run_one(fid, p.global_base + p.global_bytes - 256, 16, Space.GLOBAL)[0][0] == Error.OUT_OF_RANGE
    assert run_one(fid, 0x40, 16, Space.GLOBAL, Params(smem_bytes=SMEM, global_bytes=0))[0][0] == \
        Error.UNSUPPORTED


@pytest.mark.parametrize("text,addr,size,expect", [
    # a 4 KiB allocation: its last row is in, the next one out (ldmatrix), as the model refuses
    # rows past a 4 KiB image
    (LD4, ROWS[:31] + [4096 - 16], 4096, Error.NONE),
    (LD4, ROWS[:31] + [4096], 4096, Error.OUT_OF_RANGE),
    # a size that is not whole rows: a row must end within it (672 bytes: rows up to 656)
    (LD4, ROWS[:31] + [656], 672, Error.NONE),
    (LD4, ROWS[:31] + [664 & ~15], 670, Error.OUT_OF_RANGE),
    # a matrix of 16 lines of 32 bytes ending exactly at the size, and one 32 bytes past it
    (WMMA_A, 4096 - 512, 4096, Error.NONE),
    (WMMA_A, 4096 - 480, 4096, Error.OUT_OF_RANGE),
    # more than the unit has counts as all of it (the port is wider than smem_bytes needs)
    (LD4, ROWS[:31] + [SMEM - 16], (1 << 15) - 1, Error.NONE),
    (LD4, ROWS[:31] + [SMEM], (1 << 15) - 1, Error.OUT_OF_RANGE),
])
def test_rows_and_matrices_past_smem_size_are_refused(text, addr, size, expect):
    stride = 16 if text == WMMA_A else 0
    assert run_one(_fid(text), addr, stride, smem_size=size)[-1] == (expect, 0)


@pytest.mark.parametrize("text,base,stride,space", [
    (WMMA_C64, 0x0E40, 24, Space.SHARED),                       # two passes of 32 chunks
    ("wmma.load.b.sync.aligned.col.m8n32k16.global.f16", 0xFE12_3460, 4088, Space.GLOBAL),
    ("wmma.load.a.sync.aligned.row.m32n8k16.global.s8", 0x8000_0020, 65520, Space.GLOBAL),
])
@pytest.mark.parametrize("dsp", [False, True], ids=["carry_save", "dsp"])
def test_every_chunk_address(text, base, stride, space, dsp):
    """Every slot of every pass holds its chunk's address, base + line · stride + 16 k, with
    (line, k) from the form's pass table: the address stage's carry-save sum and its adder, or
    (``dsp_multipliers``) its multipliers and adders."""
    fid = _fid(text.replace(".global", ".shared") if space == Space.SHARED else text)
    inf = forms.info(fid)
    got = passes_of(fid, [base] + [0] * 31, stride, space, params=Params(smem_bytes=SMEM, dsp_multipliers=dsp))
    assert all(err == Error.NONE for err, *_ in got)
    got = [addrs for *_, addrs in got]
    sb = stride * inf.bits // 8
    assert len(got) == len(inf.passes)
    for q, slots in enumerate(inf.passes):
        assert got[q][:len(slots)] == [base + line * sb + forms.CHUNK * k for line, k in slots], q
