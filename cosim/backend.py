"""The RTL backend of ``tensorlsu replay``: trace records as jobs through the unit's Verilog, and
what the unit produced as the model's outcomes."""

from __future__ import annotations

import concurrent.futures
import itertools
from collections.abc import Iterable, Iterator

from tensorlsu.hdl.codes import Error, Space
from tensorlsu.hdl.copy.records import instr_fields as cp_fields
from tensorlsu.hdl.gmem.axi import AXI_PAGE
from tensorlsu.hdl.params import MAX_SMEM_BYTES, ROW_BYTES, Params, TmemParams
from tensorlsu.hdl.pipeline.forms import form_id
from tensorlsu.sim import model
from tensorlsu.sim.layouts import wmma_lines
from tensorlsu.sim.model import TMEM_COLS, wmma_default_stride
from tensorlsu.sim.ptx import WMMA_BITS
from tensorlsu.sim.trace import emitted_image

from .jobs import quadrant_image, tmem_from_dumps, tmem_instr_job, tmem_outcome
from .layout import GMEM_AT
from .runner import prepare, run_jobs

__all__ = ["RtlBackend"]

#: The unit's default parameters: its line size and shared window (made once: a record is
#: made into a job in microseconds).
DEFAULT = Params()
#: A shared-memory line (the unit the bursts track writes in).
LINE_BYTES = DEFAULT.line_bytes
#: Records from which a Verilator run is worth the optimized build.
OPTIMIZE_FROM = 5000
#: An stmatrix's source beats when its record gives no registers, by register count (shared:
#: jobs only read them).
_ZERO_BEATS = {n: [[0] * DEFAULT.lanes] * n for n in (1, 2, 4)}
#: The most instructions of one burst (a job of back-to-back loads): the harness holds its
#: results until the last.
BURST = 4096


def _burst_stream(jobs: Iterable[dict]) -> Iterator[tuple[dict, int]]:
    """The jobs, each run of shared-memory loads and stores with one image (records whose image
    is the same, absent ones all zero) made one burst: back to back through the unit, as a
    kernel issues them, rather than one by one. A store joins one only when nothing of it is read
    back (the record expects no image), and a load only when no store before it in the burst
    wrote a line it reads: so each instruction still sees its own record's image. (job, its
    instructions; 0 for a job run alone), each given once it is closed: a simulation runs the
    first while the rest are made."""
    burst: dict | None = None   # the burst being filled, its instructions, image and size
    n = 0
    key = None
    written: set = set()    # the lines its stores may have written
    for job in jobs:
        if "form" not in job or job.get("gmem") or job.get("dump_lines"):
            if burst is not None:
                yield _closed(burst, written), n
                burst = None
            yield job, 0
            continue
        this = (job["image"], job["smem_size"])
        # (a wmma.load's lines are not known; ldmatrix's are its rows' lines, found only when
        # a store came before it in the burst)
        free = ("store" in job or not written
                or (isinstance(job["addr"], list) and not {a // LINE_BYTES for a in job["addr"]} & written))
        if not (burst is not None and this == key and n < BURST and free):
            if burst is not None:
                yield _closed(burst, written), n
            burst, n = {"burst": [], "image": job["image"], "smem_size": job["smem_size"], "writes": []}, 0
            key, written = this, set()
        burst["burst"].append(_instr(job))
        if "store" in job:
            written.update(job["writes"])
        n += 1
    if burst is not None:
        yield _closed(burst, written), n


def _closed(burst: dict, written: set) -> dict:
    """A burst once nothing more joins it: the lines its stores may write, in order."""
    if written:
        burst["writes"] = sorted(written)
    return burst


def _slices(batches: list[tuple[dict, int]], n: int) -> list[list[tuple[dict, int]]]:
    """The batches in at most ``n`` runs of consecutive ones, of about as many instructions
    each (a job run alone counts as one)."""
    total = sum(max(k, 1) for _, k in batches)
    out: list[list[tuple[dict, int]]] = [[]]
    done = 0
    for b in batches:
        # a new run where this batch would end further past the current run's share than short of it
        if out[-1] and done + max(b[1], 1) / 2 > total * len(out) / n and len(out) < n:
            out.append([])
        out[-1].append(b)
        done += max(b[1], 1)
    return out


def _instr(job: dict) -> dict:
    return {k: job[k] for k in ("form", "addr", "stride", "space", "store") if k in job}


#: What a refusal's error code says, in words the model's messages share.
_REFUSALS = {"QUADRANT": "lanes outside the warp's quadrant",
             "COLUMNS": "columns reach beyond the last column",
             "SPLIT": "immHalfSplitoff missing, negative, not for this shape or overlapping",
             "UNSUPPORTED": "a form or reduction the unit does not have",
             "MISALIGNED": "an address is not aligned (a copy: its start breaks its swizzle row, or its "
                           "column is not a multiple of 4)",
             "OUT_OF_RANGE": "a row or matrix is outside the memory (a copy: a chunk reaches past shared memory)",
             "OVERLAP": "two threads store the same row",
             "STRIDE": "a stride below the matrix's leading dimension or off its grain",
             "SLVERR": "a global read answered SLVERR",
             "DECERR": "a global read answered DECERR",
             "DESCRIPTOR": "a descriptor field no copy may use (reserved or fixed bits, swizzle code)",
             "LANES": "lanes reach beyond lane 127"}


def _refusal(code: int) -> str:
    name = Error(code).name
    return f"the RTL refused the instruction: {name} ({_REFUSALS.get(name, '?')})"


class RtlBackend:
    """``tensorlsu replay --backend rtl``: the records through the unit's Verilog.

    Records are collected by :meth:`execute_all`. Shared-memory records run in one
    simulation. tcgen05 records run in one simulation per Tensor Memory size (a record's
    ``tmem_cols``, 512 when absent: the unit is built with that many columns, so that its
    column check is the allocation's), the shared-memory records with the first of them, so
    one unit runs every family; with ``tmem_columns`` given, every record runs on a unit of that
    many columns (0: none), and a tcgen05 record of another allocation is refused by name. A record's global image goes into the testbench's AXI memory
    (its page offset kept). Builds go under ``build_root`` (default ``build``), a folder per
    configuration; ``progress`` says when one is being built and how far a simulation is.
    With ``images`` false, what a record does not expect is left out of what it produced (a
    store's image is not read back, a load's registers not kept): a replay that only checks
    does less; what an emitted trace holds needs them.
    """

    name = "rtl"

    def __init__(self, sim: str = "icarus", policy: str = "h200", smem_bytes: int = 16 * 1024,
                 waves: bool = False, progress: bool = False, build_root=None, images: bool = True,
                 engine: str | None = None, tmem_columns: int | None = None, processes: int = 1,
                 optimize: bool | None = None):
        self.sim, self.policy, self.smem_bytes, self.waves = sim, policy, smem_bytes, waves
        self.progress, self.build_root, self.images = progress, build_root, images
        if tmem_columns:
            TmemParams(tmem_columns)        # a size the unit has, or ValueError naming why
        if processes < 1:
            raise ValueError(f"{processes} simulator processes: at least 1")
        self.engine, self.tmem_columns, self.processes, self.optimize = engine, tmem_columns, processes, optimize
        self.seconds = 0.0

    @staticmethod
    def smem_bytes_for(records) -> int:
        """The smallest shared memory the unit can be built with (whole lines, at least the
        default size) that holds every record's image, the rows it addresses and a wmma.load's
        matrix; at most the largest the unit has (records beyond it are refused, by name)."""
        default = DEFAULT
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

        r, ins = rec.raw, rec.ins
        if ins.op in ("tcgen05.ld", "tcgen05.st"):
            return self.tmem_job(rec)
        if ins.op == "tcgen05.cp":
            return self.cp_job(rec)
        if ins.op not in ("ldmatrix", "stmatrix", "wmma.load"):
            raise ValueError(f"the RTL has no {ins.op}")
        fid = form_id(ins)
        image = bytes.fromhex(r.get("smem", ""))
        if len(image) > self.smem_bytes:
            raise ValueError(f"shared image of {len(image)} bytes exceeds the unit's {self.smem_bytes}")
        if ins.op == "wmma.load":
            stride = r.get("stride", ins.stride if isinstance(ins.stride, int) else None)
            if stride is None:
                stride = wmma_default_stride(ins)
            space = Space[ins.space.upper()].value   # type: ignore[misc]  # Amaranth's enum, untyped
            addr = int(r["addr"])
            # a record's image, when given, is the whole shared memory: the unit refuses past it
            job = {"form": fid, "stride": int(stride), "image": image.hex(), "space": space,
                   "smem_size": len(image) or self.smem_bytes}
            if rec.space == "shared":
                # a generic record's shared address is a window offset
                job["addr"] = addr + (DEFAULT.shared_window_base if ins.space == "generic" else 0)
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
        line_bytes = LINE_BYTES
        job = {"form": fid, "addr": r["addr"], "image": image.hex(), "smem_size": len(image) or self.smem_bytes}
        if ins.op == "stmatrix":
            regs = r.get("regs")
            # a beat a register, the threads' words in it; absent: zeros
            job["store"] = [list(beat) for beat in zip(*regs)] if regs else _ZERO_BEATS[ins.nregs]
            job["writes"] = sorted({a // line_bytes for a in r["addr"]})     # the lines its rows lie in
            if self.images or "smem" in rec.expect:
                # the whole image back; without one, all of shared memory (trailing zeros dropped)
                job["dump_lines"] = -(-(len(image) or self.smem_bytes) // line_bytes)
        return job

    @staticmethod
    def tmem_cols(rec) -> int:
        return int(rec.raw.get("tmem_cols", TMEM_COLS))

    def _unit_cols(self, rec) -> int:
        """The record's allocation, which must be the unit's when the unit's size is given."""
        cols = self.tmem_cols(rec)
        if self.tmem_columns is not None and cols != self.tmem_columns:
            unit = f"{self.tmem_columns} columns" if self.tmem_columns else "no Tensor Memory"
            raise ValueError(f"{rec.ins.op}: the record's allocation of {cols} columns is not the unit's "
                             f"({unit}: --tmem-columns)")
        return cols

    def tmem_job(self, rec) -> dict:
        """A tcgen05 record as a job: all four quadrants' images in, the instruction on the
        port of its warp's quadrant; after a store, all four quadrants out."""
        r, ins = rec.raw, rec.ins
        for k in ("taddr", "warp"):
            if not isinstance(r.get(k), int):
                raise ValueError(f"{ins.op} needs an integer '{k}'")
        taddr, warp, cols = r["taddr"], r["warp"], self._unit_cols(rec)
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

    def cp_job(self, rec) -> dict:
        """A tcgen05.cp record as a job: the shared image and all four quadrants' images in,
        the copy, all four quadrants out."""
        r, ins = rec.raw, rec.ins
        for key, imm in (("desc", ins.desc), ("taddr", ins.taddr)):
            if key in r and imm is not None and r[key] != imm:
                raise ValueError(f"tcgen05.cp: {key} 0x{r[key]:x} differs from the text's immediate 0x{imm:x}")
        desc, taddr = r.get("desc", ins.desc), r.get("taddr", ins.taddr)
        if desc is None or taddr is None:
            raise ValueError("tcgen05.cp needs 'desc' and 'taddr' (or immediates in the text)")
        if ins.taddr is None and not 0 <= taddr < 1 << 32:
            raise ValueError(f"tcgen05.cp: taddr 0x{taddr:x} is not a 32-bit Tensor Memory address")
        image = bytes.fromhex(r.get("smem", ""))
        if len(image) > self.smem_bytes:
            raise ValueError(f"shared image of {len(image)} bytes exceeds the unit's {self.smem_bytes}")
        try:
            tm = model.tmem_image(bytes.fromhex(r.get("tmem", "")), self._unit_cols(rec))
        except model.ModelError as e:
            raise ValueError(str(e)) from None
        return {"cp": cp_fields(ins, r.get("desc"), r.get("taddr")), "image": image.hex(),
                "smem_size": len(image) or self.smem_bytes,
                "tmem_image": {str(q): quadrant_image(tm, q) for q in range(4)}}

    def groups(self, records) -> dict:
        """Record indices per Tensor Memory size of the unit that runs them (0: none)."""
        if self.tmem_columns is not None:
            return {self.tmem_columns: list(range(len(records)))}

        def valid(rec):
            try:
                TmemParams(self.tmem_cols(rec))
                return True
            except ValueError:      # refused by its job, in any unit
                return False
        tm = [k for k, rec in enumerate(records)
              if rec.ins.op in ("tcgen05.ld", "tcgen05.st", "tcgen05.cp") and valid(rec)]
        out: dict[int, list[int]] = {}
        for k in tm:
            out.setdefault(self.tmem_cols(records[k]), []).append(k)
        first = next(iter(out), 0)
        out.setdefault(first, [])
        out[first] = sorted(out[first] + [k for k in range(len(records)) if k not in set(tm)])
        return out

    @staticmethod
    def family(records) -> dict:
        """The build parameters beyond the memories' sizes: the unit without its global port
        when no record reads global memory (a smaller unit simulates faster). Used for the unit
        without Tensor Memory, where the port is a third of the logic a clock."""
        return {} if any(rec.space == "global" for rec in records) else {"global_bytes": 0}

    def execute_all(self, records) -> list[dict]:
        produced: list[dict] = [{} for _ in records]
        self.seconds = 0.0
        for cols, members in self.groups(records).items():
            for k, out in zip(members, self._execute([records[k] for k in members], cols)):
                produced[k] = out
        return produced

    def _execute(self, records, tmem_columns: int) -> list[dict]:
        jobs: list[dict] = []
        index: list[int] = []
        batches: list[tuple[dict, int]] = []
        produced: list[dict] = [{} for _ in records]

        def made() -> Iterator[dict]:
            # the jobs as the simulation takes them (the first burst runs while the rest are
            # made); a record the unit cannot take gets its refusal here
            for k, rec in enumerate(records):
                try:
                    job = self.job(rec)
                except ValueError as e:
                    produced[k] = {"error": str(e)}
                    continue
                jobs.append(job)
                index.append(k)
                yield job

        def batched(first: dict) -> Iterator[tuple[dict, int]]:
            for b in _burst_stream(itertools.chain([first], rest)):
                batches.append(b)
                yield b

        rest = made()
        first = next(rest, None)
        if first is not None:
            # a long run on Verilator takes the harness compiled with -O2: its build takes about
            # a minute longer, it simulates 20-40 times faster
            optimize = len(records) >= OPTIMIZE_FROM if self.optimize is None else self.optimize
            build = dict(sim=self.sim, policy=self.policy, progress=self.progress, build_root=self.build_root,
                         smem_bytes=self.smem_bytes, tmem_columns=tmem_columns, waves=self.waves,
                         optimize=optimize, engine=self.engine,
                         params=self.family(records) if not tmem_columns else {})
            ran, seconds = self._run(batched(first), build)
            results = [r for (_, n), res in zip(batches, ran) for r in (res["burst"] if n else [res])]
            self.seconds += seconds
            for k, job, res in zip(index, jobs, results):
                rec = records[k]
                if "cp" in job:
                    produced[k] = ({"error": _refusal(res["error"])} if res["error"] else
                                   {"tmem": emitted_image(rec.raw, tmem_from_dumps(res["tmem_dump"], tmem_columns)
                                                          .astype("<u4").tobytes(), "tmem")})
                    produced[k]["_at"] = {"accepted": res["accepted"], "done": res["done"]}
                    continue
                if "tmem" in job:
                    produced[k] = self._tmem_produced(rec, job, res, tmem_columns)
                    continue
                if res["error"]:
                    produced[k] = {"error": _refusal(res["error"])}
                elif rec.ins.op == "ldmatrix":
                    produced[k] = {"wavefronts": res["cycles"]}
                    if self.images or "regs" in rec.expect:
                        produced[k]["regs"] = list(map(list, zip(*res["beats"])))
                elif rec.ins.op == "wmma.load":
                    produced[k] = {}
                    if self.images or "regs" in rec.expect:
                        produced[k]["regs"] = list(map(list, zip(*res["beats"])))
                    if rec.ins.space == "shared":     # the bank rule is shared memory's
                        produced[k]["wavefronts"] = res["cycles"]
                else:
                    produced[k] = {"wavefronts": res["cycles"]}
                    if "dump" in res:
                        n = len(bytes.fromhex(job["image"])) or self.smem_bytes
                        produced[k]["smem"] = emitted_image(rec.raw, bytes.fromhex(res["dump"])[:n])
                # where it ran, for failure messages (not part of an emitted record)
                produced[k]["_at"] = {"accepted": res["accepted"], "done": res["done"]}
        return produced

    def _run(self, batches: Iterable[tuple[dict, int]], build: dict) -> tuple[list[dict], float]:
        """The batches' results: in one simulation, which takes them as they come, or split in
        order over ``processes`` simulations of the same build at once (each job brings its
        images, so a slice runs on its own); the seconds are the slowest slice's."""
        if self.waves or self.processes <= 1:       # (a waveform is one simulation's)
            return run_jobs((b for b, _ in batches), **build)
        slices = _slices(list(batches), self.processes)
        if len(slices) == 1:
            return run_jobs([b for b, _ in slices[0]], **build)
        prepare(**build)        # built once, before the slices share it
        with concurrent.futures.ThreadPoolExecutor(len(slices)) as pool:
            done = list(pool.map(lambda part: run_jobs([b for b, _ in part], **build), slices))
        return [r for res, _ in done for r in res], max(sec for _, sec in done)

    @staticmethod
    def _tmem_produced(rec, job, res, cols) -> dict:
        (port_results,) = res["tmem"].values()
        (one,) = port_results
        try:
            out = tmem_outcome(rec.ins, one)
        except AssertionError as e:
            return {"error": f"the RTL broke the result port's rules: {e}"}
        if "error" in out:
            return {"error": _refusal(out["error"])}
        if rec.ins.op == "tcgen05.st":
            image = tmem_from_dumps(res["tmem_dump"], cols)
            out = {"tmem": emitted_image(rec.raw, image.astype("<u4").tobytes(), "tmem")}
        out["_at"] = {"accepted": one["accepted"], "done": one["done"]}
        return out
