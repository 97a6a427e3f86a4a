"""The hardware capture harness: its records replay clean, and it still builds.

data/h200_capture.jsonl was captured by tb/hw/capture.py on an NVIDIA H200 (sm_90a):
1,176 functional records (every ldmatrix/stmatrix .m8n8 form, 88 wmma.load forms in
shared, global and generic spaces) and 72 saturated-throughput measurements.
"""

import json
import subprocess
import sys

import ptxgen
import pytest
from conftest import DATA, HW
from tensorlsu.sim import trace

CAPTURE = DATA / "h200_capture.jsonl"


def test_captured_vectors_replay_clean():
    outcomes = list(trace.run(trace.load(CAPTURE), trace.ModelBackend("h200")))
    bad = [f"line {o.record.line} {o.record.form}: {o.failures}" for o in outcomes if not o.passed]
    assert not bad, "\n".join(bad[:10])
    tp = [o for o in outcomes if "wavefronts" in o.record.expect]
    assert len(tp) >= 60  # random address patterns measured at saturation
    assert len(outcomes) - len(tp) >= 1000


def test_measured_cycles_are_whole_wavefronts():
    """Bank-bound patterns sit within 5% of a whole number of cycles; the only exception is
    the conflict-free .x1, bounded by issue (about 1.4 clocks) rather than by the banks."""
    for line in CAPTURE.read_text().splitlines():
        r = json.loads(line)
        if "measured_cpi" not in r:
            continue
        cpi, n = r["measured_cpi"], r["expect"]["wavefronts"]
        if n == 1 and ".x1." in r["instr"]:
            assert 0.95 <= cpi <= 1.5
        else:
            assert abs(cpi - n) <= 0.05 * n, (r["instr"], cpi, n)


def test_packed_policy_is_a_lower_bound_on_the_measurements():
    outcomes = list(trace.run(trace.load(CAPTURE), trace.ModelBackend("packed")))
    for o in outcomes:
        if "wavefronts" in o.record.expect:
            assert o.produced["wavefronts"] <= o.record.expect["wavefronts"]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_harness_compiles(tmp_path, arch):
    ptxas = ptxgen.ptxas_path()
    assert ptxas is not None
    nvcc = ptxas.parent / "nvcc"
    r = subprocess.run([sys.executable, str(HW / "capture.py"), "--out", str(tmp_path / "x.jsonl"),
                        "--arch", arch, "--build-only", "--build-dir", str(tmp_path)],
                       env={"NVCC": str(nvcc), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    src = (tmp_path / "forms.cu").read_text()
    assert ("tcgen05.ld.red" in src) == (arch == "sm_103a")
    if arch != "sm_90a":  # the sm_100-family forms are generated only for such GPUs
        for needle in ("m16n16.x2.trans.shared.b8x16.b4x16_p64", "m8n16.x4.shared.b8x16.b6x16_p32",
                       "stmatrix.sync.aligned.m16n8.x4.trans", "tcgen05.ld.sync.aligned.16x256b.x32"):
            assert needle in src
    else:
        assert "tcgen05" not in src


def test_wmma_cost_harness_compiles(tmp_path):
    """tb/hw/wmma_cost.py (the H200's wmma.load costs) still builds: one kernel per form."""
    nvcc = ptxgen.ptxas_path().parent / "nvcc"
    r = subprocess.run([sys.executable, str(HW / "wmma_cost.py"), "--out", str(tmp_path / "x.jsonl"),
                        "--arch", "sm_90a", "--build-only", "--build-dir", str(tmp_path)],
                       env={"NVCC": str(nvcc), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "wmma_cost.cu").read_text().count("asm volatile(\"wmma.load.") == 88


def test_wmma_cost_data():
    """The committed H200 run: every form's loads (a whole number per instruction) and its
    cost at every stride and offset; the examples the PTX-level facts quote hold."""
    recs = [json.loads(x) for x in (DATA / "h200_wmma_cost.jsonl").read_text().splitlines()]
    meta = [r for r in recs if r["kind"] == "meta"]
    assert len(meta) == 1 and meta[0]["target"] == "sm_90a" and "V13.0" in meta[0]["nvcc"][0]
    sass = {r["instr"]: r for r in recs if r["kind"] == "sass"}
    assert len(sass) == 88 and all(r["per_instruction"] and r["total"] == 8 * r["per_instruction"]
                                   for r in sass.values())
    cost = {(r["instr"], r["stride"], r["offset"]): r["cpi"] for r in recs if r["kind"] == "cost"}
    assert len(cost) == 88 * 11 * 4
    a = "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16"
    assert sass[a]["loads"] == ["LDSM.16.M88.4"]
    for stride, cpi in ((16, 8), (24, 4), (32, 16)):
        assert abs(cost[(a, stride, 0)] - cpi) < 0.1
    assert sass["wmma.load.a.sync.aligned.col.m16n16k16.shared.s8"]["loads"] == ["LDS.U8"] * 8


def test_sass_capture_harness_compiles(tmp_path):
    """tb/hw/sass_capture.py (the real kernels' streams in Accel-Sim's format) still builds."""
    nvcc = ptxgen.ptxas_path().parent / "nvcc"
    r = subprocess.run([sys.executable, str(HW / "sass_capture.py"), "--out-dir", str(tmp_path),
                        "--arch", "sm_90a", "--build-only", "--build-dir", str(tmp_path)],
                       env={"NVCC": str(nvcc), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "kernels.o").stat().st_size > 0
