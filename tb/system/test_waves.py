"""Waveforms with named payload fields (hdl/verilog/waves.py): the fields tile every payload,
both simulators write an FST whose named wires carry what the testbench drove and what the
unit answered (read back with pywellen, an FST reader of its own), and GTKWave itself, given
the save file, prints the form and the error by name. Expected values from the PTX form
table, the error codes and the model."""

import re
import shutil
import subprocess

import numpy as np
import pytest
import pywellen
from amaranth import Shape
from conftest import ROOT
from tensorlsu.cosim.runner import WAVES_SAVE, run_jobs
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline import forms
from tensorlsu.hdl.verilog.waves import _streams, filter_files, payload_fields
from tensorlsu.sim import model, ptx

LDM = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
ROWS = [16 * t for t in range(32)]
IMAGE = np.random.default_rng(5).integers(0, 256, 4096, dtype=np.uint8)
#: an ldmatrix that loads, one refused (a row 2 bytes off its 16-byte alignment), and one more
JOBS = [{"form": forms.form_id(LDM), "addr": ROWS, "image": IMAGE.tobytes().hex()},
        {"form": forms.form_id(LDM), "addr": [a + 2 for a in ROWS]},
        {"form": forms.form_id(LDM), "addr": ROWS[::-1]}]
#: where each engine's dump lies in its build folder, and the unit's scope in it
ENGINES = {"icarus": ("cocotb", "tensorlsu_lsu.fst", "tensorlsu_lsu"),
           "verilator": ("native", "native.fst", "TOP.tensorlsu_lsu")}


def test_the_fields_tile_every_payload():
    """Each stream payload's named fields cover its bits once each, no gap, no overlap."""
    dut = LoadStoreUnit(Params(tmem_columns=32))
    dut._MustUse__silence = True
    fields = payload_fields(dut)
    for port, _, shape in _streams(dut):
        bits = np.zeros(Shape.cast(shape).width, int)
        for f in (f for f in fields if f.port == port):
            bits[f.offset:f.offset + f.width] += 1
        assert (bits == 1).all(), f"{port}: bits covered {sorted(set(bits.tolist()))} times"
    names = [f.name for f in fields]
    assert len(names) == len(set(names))
    assert "tmem_result__3__payload__data__1__31" in names and "instr__payload__addr__31" in names


def test_the_filter_files_name_every_code():
    dut = LoadStoreUnit(Params(tmem_columns=32))
    dut._MustUse__silence = True
    files = filter_files(dut)
    lines = dict(line.split(" ", 1) for line in files["error.txt"].splitlines())
    assert {int(k): v for k, v in lines.items()} == {e.value: e.name.lower() for e in Error}
    assert "4 ldmatrix.m8n8.x4.b16" in files["instr_form.txt"].splitlines()
    assert len(files["instr_form.txt"].splitlines()) == len(forms.FORMS)
    assert "0 tcgen05.cp.128x256b" in files["cp_instr_form.txt"].splitlines()
    assert "0 32x32b" in files["tmem_instr_shape_id.txt"].splitlines()


def _values(wave, name: str) -> list:
    return [v for _, v in wave[name].tv]


@pytest.fixture(scope="module", params=sorted(ENGINES))
def waves(request, tmp_path_factory):
    """(simulator, the waveform's variables by name, the results, the build folder)."""
    sim = request.param
    engine, dump, _ = ENGINES[sim]
    root = tmp_path_factory.mktemp(f"waves_{sim}")
    results, _ = run_jobs(JOBS, sim=sim, engine=engine, smem_bytes=4096, waves=True, build_root=root)
    folder = next(root.iterdir())
    wave = {v.full_name: v for v in pywellen.Waveform(str(folder / dump)).all_vars()}
    return sim, wave, results, folder


def test_the_named_fields_carry_what_moved(waves):
    sim, wave, results, _ = waves
    scope = ENGINES[sim][2]
    assert [r["error"] for r in results] == [0, Error.MISALIGNED.value, 0]
    assert forms.form_id(LDM) in _values(wave, f"{scope}.instr__payload__form")
    assert ROWS[0] + 2 in _values(wave, f"{scope}.instr__payload__addr__0")
    assert ROWS[31] in _values(wave, f"{scope}.instr__payload__addr__0")     # the reversed rows
    assert Error.MISALIGNED.value in _values(wave, f"{scope}.result__payload__error")
    # thread 5's first register of the first load: the model's
    regs = model.ldmatrix(LDM, IMAGE, ROWS)
    assert int(regs[5, 0]) in _values(wave, f"{scope}.result__payload__data__5")


def test_the_save_file_names_signals_of_the_dump(waves):
    sim, wave, _, folder = waves
    save = (folder / WAVES_SAVE).read_text()
    traced = [re.sub(r"^\+\{[^}]*\} ", "", line) for line in save.splitlines()
              if line and line[0] not in "[*@^-"]
    assert len(traced) > 100
    missing = [t for t in traced if re.sub(r"\[\d+:0\]$", "", t) not in wave]
    assert not missing, missing[:5]
    for line in save.splitlines():
        if line.startswith("^"):
            assert (folder / "filters" / line.split("/")[-1]).exists(), line


@pytest.mark.skipif(not (shutil.which("gtkwave") and shutil.which("xvfb-run")),
                    reason="GTKWave and xvfb-run: make debs installs them")
def test_gtkwave_shows_the_form_and_the_error_by_name(waves, tmp_path):
    """GTKWave loads the dump with the save file and prints the decoded values."""
    sim, wave, _, folder = waves
    scope = ENGINES[sim][2]
    when = next(t for t, v in wave[f"{scope}.result__payload__error"].tv if v == Error.MISALIGNED.value)
    edges = [t for t, _ in wave[f"{scope}.clk"].tv]
    period = edges[3] - edges[1]
    script, out = tmp_path / "print.tcl", tmp_path / "waves.ps"
    # ten clocks around the refusal: room for the names
    script.write_text(f"gtkwave::setZoomRangeTimes {when - 6 * period} {when + 4 * period}\n"
                      f"gtkwave::/File/Print_To_File PS {{Letter (8.5\" x 11\")}} Full {out}\n"
                      "gtkwave::/File/Quit\n")
    r = subprocess.run(["xvfb-run", "-a", "gtkwave", "-S", str(script), str(folder / ENGINES[sim][1]),
                        str(folder / WAVES_SAVE)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.exists(), r.stdout[-2000:] + r.stderr[-2000:]
    shown = re.findall(r"\((.*)\) show", out.read_text(errors="replace"))
    assert "ldmatrix.m8n8.x4.b16" in shown, shown[:40]
    assert any(s.startswith("misal") for s in shown), shown[:40]
    assert "shared" in shown
