# amaranth: UnusedElaboratable=no
"""The emitted Verilog and its header, used from plain Verilog: tb/verilog/example_tb.v runs on
Icarus with no Python (it states where its expected values come from, the PTX text's layout);
the header's numbers agree with the form table and the port layouts the cocotb benches use."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from tensorlsu.cosim.runner import layout_of
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline import forms
from tensorlsu.hdl.verilog.header import form_macro, wmma_layouts_text
from tensorlsu.sim import ptx


def _emit(folder: Path, axi_data_bits: int = 512) -> Path:
    out = folder / "tensorlsu_lsu.v"
    # 64 Tensor Memory columns: the build the cocotb tests use (its Verilog is cached)
    r = subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(out), "--tmem-columns",
                        "64", "--axi-data-bits", str(axi_data_bits)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    return _emit(tmp_path_factory.mktemp("verilog"))


def _macros(path: Path) -> dict:
    return {m[1]: int(m[2]) for m in re.finditer(r"`define (\w+) (\d+)", path.read_text())}


def test_header_numbers(emitted):
    d = _macros(emitted.with_suffix(".vh"))
    fid = forms.form_id(ptx.parse("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "sm_90a"))
    assert d["TENSORLSU_FORM_LDMATRIX_M8N8_X4_TRANS_B16"] == fid
    assert d["TENSORLSU_FORM_WMMA_LOAD_C_ROW_M16N16K16_F32"] == forms.form_id(
        ptx.parse("wmma.load.c.sync.aligned.row.m16n16k16.shared.f32", "sm_90a"))
    ids = [v for k, v in d.items() if k.startswith("TENSORLSU_FORM_")]
    assert sorted(ids) == list(range(len(forms.FORMS)))          # every form once
    assert len({form_macro(f) for f in range(len(forms.FORMS))}) == len(forms.FORMS)
    assert {k[len("TENSORLSU_ERROR_"):]: v for k, v in d.items() if k.startswith("TENSORLSU_ERROR_")} == \
        {e.name: e.value for e in Error}
    lay = layout_of(LoadStoreUnit(Params(tmem_columns=64)))   # what the cocotb benches pack and unpack with
    assert (d["TENSORLSU_RESULT_ERROR_OFFSET"], d["TENSORLSU_RESULT_LAST_OFFSET"],
            d["TENSORLSU_RESULT_CYCLES_OFFSET"]) == (lay.result_error, lay.result_last, lay.result_cycles)
    assert (d["TENSORLSU_RESULT_REGS_OFFSET"], d["TENSORLSU_RESULT_REGS_WIDTH"]) == (lay.result_regs, lay.regs_bits)
    assert d["TENSORLSU_INSTR_ADDR_OFFSET"] == lay.form_bits
    assert d["TENSORLSU_INSTR_STRIDE_OFFSET"] == lay.form_bits + lay.addr_bits * lay.lanes
    assert d["TENSORLSU_FILL_DATA_OFFSET"] == lay.line_bits
    assert (d["TENSORLSU_SMEM_BYTES"], d["TENSORLSU_LINES"], d["TENSORLSU_POLICY_H200"]) == (16384, 128, 1)
    # Tensor Memory: every instruction and result field where the benches put it
    for name, (off, width) in lay.tmem_instr.items():
        assert (d[f"TENSORLSU_TMEM_INSTR_{name.upper()}_OFFSET"], d[f"TENSORLSU_TMEM_INSTR_{name.upper()}_WIDTH"]) \
            == (off, width), name
    for name in ("reg", "reg2", "two", "kind", "last", "error"):
        assert d[f"TENSORLSU_TMEM_RESULT_{name.upper()}_OFFSET"] == lay.tmem_result[name][0], name
    assert (d["TENSORLSU_TMEM_COLUMNS"], d["TENSORLSU_TMEM_QUADRANTS"], d["TENSORLSU_TMEM_SHAPE_16X32BX2"]) == (64, 4, 1)
    # tcgen05.cp: the instruction's fields where the benches put them, the form and format codes
    for name, (off, width) in lay.cp_instr.items():
        assert (d[f"TENSORLSU_CP_INSTR_{name.upper()}_OFFSET"], d[f"TENSORLSU_CP_INSTR_{name.upper()}_WIDTH"]) \
            == (off, width), name
    assert (d["TENSORLSU_CP_FORM_128X256B"], d["TENSORLSU_CP_FORM_32X128B_WARPX4"], d["TENSORLSU_CP_FMT_B4X16_P64"]) \
        == (0, 5, 2)


@pytest.mark.parametrize("axi_data_bits", [128, pytest.param(256, marks=pytest.mark.long), 512])
def test_plain_verilog_example_passes(tmp_path, axi_data_bits):
    """The example bench, unchanged, at every AXI data width the unit offers (256 bits, between
    the two others, in ``make test-long``)."""
    emitted = _emit(tmp_path, axi_data_bits)
    assert f"`define TENSORLSU_AXI_DATA_BITS {axi_data_bits}" in emitted.with_suffix(".vh").read_text()
    exe = emitted.parent / "example_tb"
    r = subprocess.run(["iverilog", "-g2012", "-I", str(emitted.parent), "-o", str(exe), str(emitted),
                        str(ROOT / "tb/verilog/example_tb.v")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["vvp", "-n", str(exe)], capture_output=True, text=True, timeout=300)
    assert r.stdout.strip().splitlines()[-1] == "PASS", r.stdout[-3000:]


def test_wmma_layouts_doc_is_current():
    """docs/wmma-layouts.md is what the layout tables give now, and names every wmma.load form
    once, by its header macro (regenerate: python -m tensorlsu.hdl --wmma-layouts ...)."""
    text = (ROOT / "docs" / "wmma-layouts.md").read_text()
    assert text == wmma_layouts_text(), "stale: python -m tensorlsu.hdl --wmma-layouts docs/wmma-layouts.md"
    named = [f for f in range(len(forms.FORMS)) if f"`{form_macro(f)}` ({f})" in text]
    assert named == list(range(len(forms.ROW_FORMS), len(forms.FORMS)))


def test_register_copies_stay_copies(emitted):
    """The registers kept as copies of one another (a slice's skid registers, the result's
    head selects, the crossbar's write selects) carry ``keep`` in the Verilog, so that the
    integrator's synthesis does not merge them into one; no other attribute is written."""
    text = emitted.read_text()
    kept = set(re.findall(r"\(\* keep = 32'd1 \*\)\s*(?:reg|wire)\s*(?:\[[^\]]*\]\s*)?(\w+)", text))
    assert {"skid_valid", "skid_full", "e_head_select0", "e_head_select15"} <= kept
    assert {f"wsel{q}_{k}" for q in range(8) for k in range(2)} & kept
    assert not re.search(r"\(\*(?!\s*keep\b)", text)
