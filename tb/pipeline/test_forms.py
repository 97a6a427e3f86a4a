"""The form tables the RTL is generated from (hdl/pipeline/forms.py), executed in numpy the way the
unit's datapath uses them and compared with the model (itself pinned by the H200 vectors)."""

import numpy as np
import pytest
from tensorlsu.hdl.pipeline import forms
from tensorlsu.sim import model, ptx

WMMA_IDS = [f for f in range(len(forms.FORMS)) if forms.info(f).wmma]


def test_repeated_registers_share_a_beat():
    """The .f16 a / b fragments whose registers repeat give one beat per distinct register
    (the H200 vectors: m16n16k16's registers 4-7 hold what 0-3 hold; m8n32k16's a and
    m32n8k16's b hold two registers four times)."""
    def regs(text):
        return forms.info(forms.form_id(ptx.parse(text, "sm_90a"))).beat_regs
    assert regs("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16") == [0x11, 0x22, 0x44, 0x88]
    assert regs("wmma.load.b.sync.aligned.col.m32n8k16.shared.f16") == [0x55, 0xAA]
    assert regs("wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16") == [1, 2, 4, 8]
    assert regs("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == [1, 2, 4, 8]
    assert regs("wmma.load.c.sync.aligned.row.m16n16k16.shared.f32") == [1 << r for r in range(8)]


def test_form_ids():
    assert len(forms.ROW_FORMS) == 27 and len(forms.WMMA_FORMS) == 88
    shared = ptx.parse("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16", "sm_90a")
    generic = ptx.parse("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r0,%r1,%r2,%r3,%r4,%r5,%r6,%r7},"
                        " [%rd1], 16;", "sm_90a")
    assert forms.form_id(shared) == forms.form_id(generic) >= 27
    # the state space is the instruction's space field, not part of the form
    assert forms.form_id(ptx.parse("wmma.load.a.sync.aligned.row.m16n16k16.global.f16", "sm_90a")) == \
        forms.form_id(shared)
    with pytest.raises(ValueError, match="has no form tcgen05.ld"):
        forms.form_id(ptx.parse("tcgen05.ld.sync.aligned.32x32b.x1.b32"))


def _unit_wmma(inf: forms.FormInfo, smem: np.ndarray, base: int, stride: int) -> np.ndarray:
    """Registers as the unit forms them: each pass fills its slots with the 16-byte rows of
    its chunks (an 8-byte line in the upper half of its row lands swapped), then every beat
    gathers bytes (slot, byte) from its pass."""
    sb = stride * inf.bits // 8
    slots = []
    for chunks in inf.passes:
        rows = []
        for line, chunk in chunks:
            a = base + line * sb + forms.CHUNK * chunk
            row = smem[a & ~15: (a & ~15) + 16]
            rows.append(np.roll(row, -8) if a & 8 else row)
        slots.append(np.array(rows))
    out = np.zeros((32, inf.words, 4), dtype=np.uint8)
    for r in range(inf.nregs):
        rows = slots[inf.beat_pass[r]]
        for reg in range(inf.words):        # every register the beat names
            if inf.beat_regs[r] >> reg & 1:
                out[:, reg] = rows[inf.table[:, r, :, 0], inf.table[:, r, :, 1]]
    return out.view("<u4").reshape(32, inf.words)


@pytest.mark.parametrize("fid", WMMA_IDS, ids=[forms.FORMS[f].form for f in WMMA_IDS])
def test_wmma_plan_matches_model(fid):
    inf = forms.info(fid)
    # the beats name every register once
    assert sum(inf.beat_regs) == (1 << inf.words) - 1 and len(inf.beat_regs) == inf.nregs
    assert all(len(p) <= forms.SLOTS for p in inf.passes) and len(inf.passes) <= 2
    for r in range(inf.nregs):  # every beat reads one run of slots (the shuffle's window)
        used = sorted(set(inf.table[:, r, :, 0].flat))
        assert used == list(range(used[0], used[0] + len(used)))
    rng = np.random.default_rng(fid)
    smem = rng.integers(0, 256, 16 * 1024, dtype=np.uint8)
    for k in range(6):
        stride = inf.least + inf.stride_grain * int(rng.integers(0, 6)) * (k > 0)
        span = (inf.lines - 1) * stride * inf.bits // 8 + inf.line_bytes
        base = 32 * int(rng.integers(0, (len(smem) - span) // 32 + 1))
        want = model.wmma_load(forms.FORMS[fid], model.Memory(shared=smem), base, stride)
        assert (_unit_wmma(inf, smem, base, stride) == want).all()
