"""Short runs of the formal and synthesis flows (the full runs are `make formal`, `make synth`)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_formal_smoke():
    """Both scheduler contracts, the decompressor and the store shuffle prove; the broken
    schedulers must fail."""
    r = subprocess.run([sys.executable, "formal/run.py", "scheduler", "scheduler_pairs", "decompress",
                        "scheduler_cover", "store_shuffle", "broken", "broken_pairs"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = {ln.split()[1]: ln.split()[0] for ln in r.stdout.splitlines() if ln[:4] in ("PASS", "FAIL")}
    assert lines == {"scheduler": "PASS", "scheduler_pairs": "PASS", "decompress": "PASS",
                     "scheduler_cover": "PASS", "store_shuffle": "PASS", "broken": "FAIL",
                     "broken_pairs": "FAIL"}


def test_synthesis_smoke(tmp_path):
    """The decompressor synthesizes for ECP5 and places and routes with a reported Fmax."""
    r = subprocess.run([sys.executable, "synth/run.py", "--blocks", "decompress", "--out", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    import json
    rows = json.loads((tmp_path / "synth.json").read_text())
    assert rows[0]["lut4"] > 0 and rows[0]["fmax_mhz"] and rows[0]["fmax_mhz"] > 150
    # the path ranking reads the same netlist: the wrapper's input registers feed its outputs
    r = subprocess.run([sys.executable, "synth/paths.py", "build/synth/decompress_h200/top.json",
                        "--show", "out"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    worst = [ln for ln in r.stdout.splitlines() if ln[:6].strip().replace(".", "").isdigit()]
    assert worst and 1.0 < float(worst[0].split()[0]) < 1000.0 / 150, r.stdout
    assert "worst path into" in r.stdout


def test_verilog_emission(tmp_path):
    out = tmp_path / "lsu.v"
    r = subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(out), "--policy", "packed"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "module tensorlsu_lsu(" in text and "always @*" not in text
    r = subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(out), "--smem-bytes", "1000"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "smem_bytes must be a multiple" in r.stderr
