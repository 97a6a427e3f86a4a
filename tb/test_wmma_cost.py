"""wmma.load's bank cost on the H200 (tb/data/h200_wmma_cost.jsonl, measured with
tb/hw/wmma_cost.py): the model's plan of shared loads is what ptxas emitted, and its cycles
are what the H200 took at saturation, for every form, stride and offset."""

import json
import re

import pytest

from conftest import DATA
from tensorlsu.sim import layouts, model, ptx
from tensorlsu.sim.model import ModelError

RECORDS = [json.loads(x) for x in (DATA / "h200_wmma_cost.jsonl").read_text().splitlines()]
SASS = {r["instr"]: r for r in RECORDS if r["kind"] == "sass"}
COST = [r for r in RECORDS if r["kind"] == "cost"]


@pytest.mark.parametrize("form", sorted(SASS))
def test_plan_is_what_ptxas_emitted(form):
    ins = ptx.parse(form, "sm_90a")
    plan = model.wmma_shared_loads(ins)
    loads = SASS[form]["loads"]
    kinds = {re.sub(r"\.\d$", "", x) for x in loads}
    assert len(kinds) == 1, loads
    (kind,) = kinds
    if plan.kind == "ldsm":
        assert kind == ("LDSM.16.MT88" if plan.trans else "LDSM.16.M88")
        matrices = sum(int(x.rsplit(".", 1)[1]) if x.count(".") == 3 else 1 for x in loads)
        rows, cols = layouts.wmma_dims(ins.frag, ins.shape)
        assert matrices == rows * cols * ptx.WMMA_BITS[ins.type] // 8 // 128
    else:
        assert kind == {1: "LDS.U8", 4: "LDS", 8: "LDS.64", 16: "LDS.128"}[plan.width]
        assert len(loads) == ins.words * 4 // plan.width
    assert len(SASS[form]["pipe"]) == plan.movm


def test_cycles_are_the_h200s():
    """Above 2 cycles within 4 %; at 1 or 2 the H200 is issue-bound (at most 2.3 clocks, as a
    conflict-free ldmatrix .x1 is at about 1.3)."""
    worst = 0.0
    for r in COST:
        ins = ptx.parse(r["instr"], "sm_90a")
        got = model.wavefronts(ins, r["offset"], stride=r["stride"])
        if got > 2:
            worst = max(worst, abs(r["cpi"] - got) / got)
        else:
            assert r["cpi"] <= 2.3, (r, got)
    assert worst <= 0.04


def test_examples_and_refusals():
    a = ptx.parse("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16", "sm_90a")
    assert [model.wavefronts(a, 0, stride=s) for s in (16, 24, 32)] == [8, 4, 16]
    # packed: the 16 lines × 2 chunks are 16-byte rows 2r + c, 3r + c, 4r + c for 32-, 48- and
    # 64-byte lines: evenly over the 8 quads (4 each) for the first two, on 4 quads (8 each)
    assert [model.wavefronts(a, 0, "packed", stride=s) for s in (16, 24, 32)] == [4, 4, 8]
    for policy in ("h200", "packed"):
        with pytest.raises(ModelError, match="0x10 is not 32-byte"):
            model.wavefronts(a, 16, policy)
        with pytest.raises(ModelError, match="stride 8 is below the matrix's leading dimension 16"):
            model.wavefronts(a, 0, policy, stride=8)
        with pytest.raises(ModelError, match="stride 20 elements of .f16 is 40 bytes, not a multiple of 16"):
            model.wavefronts(a, 0, policy, stride=20)
    with pytest.raises(ModelError, match="one matrix address"):
        model.wavefronts(a, [0] * 32)


def test_packed_is_never_slower_than_the_h200():
    """The packed bound (the whole fragment, one access per distinct row and quad) against the
    H200's rule and its measurements, over every measured form, stride and offset."""
    ratios = []
    for r in COST:
        ins = ptx.parse(r["instr"], "sm_90a")
        packed = model.wavefronts(ins, r["offset"], "packed", stride=r["stride"])
        h200 = model.wavefronts(ins, r["offset"], stride=r["stride"])
        assert packed <= h200 and packed <= r["cpi"] + 0.05, (r, packed, h200)
        ratios.append(packed / h200)
    assert min(ratios) < 0.5       # the H200 pays for its load sequence on many forms
