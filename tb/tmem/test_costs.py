"""The model's Tensor Memory and copy clocks (model.tmem_steps, model.copy_steps) against the
RTL's back-to-back clocks on Verilator: a copy takes exactly its steps; a load of four steps or
more takes its steps; nothing runs faster than its steps (the memory's occupancy). Shorter loads
and every store pay the quadrant's issue overhead on top (reports/bench.md lists each form)."""

import cute
import numpy as np
import pytest
from tensorlsu.cosim.jobs import tmem_instr_job
from tensorlsu.cosim.runner import run_jobs
from tensorlsu.hdl.copy.records import instr_fields as copy_fields
from tensorlsu.sim import descriptor, model, ptx

BURST = 6
LOADS = ["tcgen05.ld.sync.aligned.32x32b.x1.b32", "tcgen05.ld.sync.aligned.32x32b.x8.b32",
         "tcgen05.ld.sync.aligned.32x32b.x64.b32", "tcgen05.ld.sync.aligned.16x256b.x4.pack::16b.b32",
         "tcgen05.ld.sync.aligned.16x64b.x16.b32"]
STORES = ["tcgen05.st.sync.aligned.32x32b.x1.b32", "tcgen05.st.sync.aligned.16x128b.x8.unpack::16b.b32"]
COPIES = ["128x256b", "4x256b", "128x128b", "64x128b.warpx2::02_13", "32x128b.warpx4"]


def _every(done):
    return (done[-1] - done[0]) / (len(done) - 1)


@pytest.fixture(scope="module")
def measured():
    jobs, forms = [], []
    for text in LOADS + STORES:
        ins = ptx.parse(text, "sm_100a")
        jobs.append({"tmem": {"0": [tmem_instr_job(ins, 0, 0, None)] * BURST}})
        forms.append(ins)
    rng = np.random.default_rng(3)
    for shape in COPIES:
        ins = ptx.parse(f"tcgen05.cp.cta_group::1.{shape}", "sm_100a")
        rows, bits = ptx.CP_SHAPES[ins.shape]
        sbo = 8 * 16 * (2 if bits == 256 else 1)
        smem = cute.place(rng.integers(0, 256, (rows, bits // 8), dtype=np.uint8), 0, 128, sbo, 0, smem_bytes=16384)
        fields = copy_fields(ins, descriptor.encode(0, 128, sbo, 0), 0)
        jobs.append({"cp": fields, "cps": [fields] * BURST, "image": smem.tobytes().hex(), "smem_size": 16384,
                     "tmem_dump": False})
        forms.append(ins)
    results, _ = run_jobs(jobs, sim="verilator", tmem_columns=512)
    out = {}
    for ins, res in zip(forms, results):
        done = [c["done"] for c in res["copies"]] if "copies" in res else [x["done"] for x in res["tmem"]["0"]]
        out[ins.form] = (ins, _every(done))
    return out


def test_copies_take_their_steps(measured):
    for ins, every in measured.values():
        if ins.op == "tcgen05.cp":
            assert every == model.copy_steps(ins) == model.wavefronts(ins, None), ins.form


def test_loads_take_their_steps_and_nothing_is_faster(measured):
    for ins, every in measured.values():
        if ins.op == "tcgen05.cp":
            continue
        steps = model.tmem_steps(ins)
        assert every >= steps, ins.form
        if ins.op == "tcgen05.ld" and steps >= 4:
            assert every == steps, ins.form


def test_the_steps_are_the_plans():
    """By hand: a 32x32b .x64 load returns 64 registers of one column each, a beat of two a
    step (the result port's 256 bytes a clock), 32 steps with one bank or two; a .x1 store
    writes its one column in one step."""
    ld = ptx.parse("tcgen05.ld.sync.aligned.32x32b.x64.b32", "sm_100a")
    assert model.tmem_steps(ld) == 32 and model.tmem_steps(ld, banks=1) == 32
    assert model.tmem_steps("tcgen05.st.sync.aligned.32x32b.x1.b32") == 1
    with pytest.raises(model.ModelError, match="tmem_steps"):
        model.wavefronts(ld, [0] * 32)
