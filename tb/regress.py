#!/usr/bin/env python3
"""Random RTL regression: every ldmatrix / stmatrix / wmma.load form, random addresses
(conflicts, duplicates, strides), random wmma strides, random data, refusals, resets, idle
and back-pressure on the streams. With ``--ports``, every port (tb/deck.py): wmma.load from
global and generic addresses through the AXI port, tcgen05.ld / st on the four quadrants,
tcgen05.cp with shared-path instructions behind it, a level of idle and back-pressure per job;
the coverage (policy x family x form x error x level) is printed with the cells never hit.
Every stmatrix's source beats are sent, refused or not, as a producer sends them (the streams'
idle puts them before, with or after the instruction): a refused stmatrix's coverage cells
(MISALIGNED, OUT_OF_RANGE, OVERLAP) count refusals whose beats the unit had to drop.

Expected values come from the model (tensorlsu.sim.model), itself checked against the H200
vectors: data, error beats, and the bank cycles against ``model.wavefronts``. The unit does not
take the model's wmma.load cycles yet: its bank cycles are checked against the busiest bank quad
of each pass's chunk addresses (the packing the unit promises for wmma).

    python tb/regress.py --n 2000 --sim verilator --policy packed --seed 3
    python tb/regress.py --n 1000000 --sim verilator --ports --policy both      (make regress)
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import deck
from tensorlsu.cosim import farm
from tensorlsu.cosim.jobs import tmem_from_dumps, tmem_outcome
from tensorlsu.cosim.layout import GMEM_AT
from tensorlsu.cosim.runner import ENGINES, run_jobs
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.pipeline import forms
from tensorlsu.sim import layouts, model
from tensorlsu.sim.trace import format_table

ROW = 16
#: Each ldmatrix / stmatrix form comes this many times per deck, each wmma.load form once:
#: the first deck (142 instructions) runs every form.
ROW_WEIGHT = 2


def _addresses(rng: random.Random, ins, smem_bytes: int) -> list[int]:
    rows = layouts.row_count(ins)
    nrows = smem_bytes // ROW
    kind = rng.choice(["free", "stride", "pool", "dup", "random"])
    if kind == "free":  # consecutive rows: conflict-free
        base = rng.randrange(nrows - 32)
        a = [ROW * (base + t) for t in range(32)]
    elif kind == "stride":  # 2-, 4-, 8-way conflicts
        step = rng.choice([2, 4, 8, 16])
        base = rng.randrange(nrows - 32 * step)
        a = [ROW * (base + step * t) for t in range(32)]
    elif kind == "pool":  # a few rows, many conflicts
        pool = rng.sample(range(nrows), rng.choice([4, 8, 16]) if ins.op == "ldmatrix" else 32)
        a = [ROW * rng.choice(pool) for _ in range(32)]
    elif kind == "dup":  # repeated rows: broadcast
        base = [ROW * rng.randrange(nrows) for _ in range(8)]
        a = [base[t % 8] if rng.random() < 0.7 else ROW * rng.randrange(nrows) for t in range(32)]
    else:
        a = [ROW * rng.randrange(nrows) for _ in range(32)]
    if ins.op == "stmatrix":  # overlapping rows in one stmatrix are refused: make them distinct
        used = set()
        for i in range(rows):
            while a[i] in used:
                a[i] = ROW * rng.randrange(nrows)
            used.add(a[i])
    return a


def _break(rng: random.Random, ins, a: list[int], smem_bytes: int) -> list[int]:
    """Make the instruction undefined in one of the ways the unit must refuse."""
    rows = layouts.row_count(ins)
    a = list(a)
    i = rng.randrange(rows)
    how = rng.choice(["misaligned", "range", "overlap"] if ins.op == "stmatrix" else ["misaligned", "range"])
    if how == "misaligned":
        a[i] += rng.choice([1, 4, 8, 12])
    elif how == "range":
        a[i] = smem_bytes - ROW + rng.choice([4, ROW, 4096])
    else:
        j = (i + 1 + rng.randrange(rows - 1)) % rows
        a[j] = a[i]
    return a


def _wmma_operands(rng: random.Random, inf: forms.FormInfo, smem_bytes: int) -> tuple[int, int]:
    """A legal (matrix address, stride) inside shared memory, or a broken one (6%)."""
    grain, least = inf.stride_grain, inf.least
    stride = least + grain * rng.choice([0, 0, 1, 2, 3, rng.randrange(64)])
    while True:
        span = (inf.lines - 1) * stride * inf.bits // 8 + inf.line_bytes
        if span <= smem_bytes:
            break
        stride = least
    base = model.WMMA_ADDR_ALIGN * rng.randrange((smem_bytes - span) // model.WMMA_ADDR_ALIGN + 1)
    if rng.random() < 0.06:
        how = rng.choice(["misaligned", "narrow", "grain", "range"])
        if how == "misaligned":
            base += rng.choice([4, 8, 16])
        elif how == "narrow":
            stride = least - grain
        elif how == "grain" and grain > 1:
            stride += rng.randrange(1, grain)
        elif rng.random() < 0.5:
            base = smem_bytes - span + model.WMMA_ADDR_ALIGN * rng.choice([1, 4, 100])
        else:  # a stride far beyond shared memory (the unit checks its high bits only)
            stride = grain * rng.choice([1 << 17, 1 << 21, (1 << 32) // grain - 1])
    return base, stride


def wmma_cycles(inf: forms.FormInfo, base: int, stride: int, window: int, quads: int = 8) -> int:
    """Bank cycles of a wmma.load, window by window of each pass (``window`` slots: 8 under
    h200, the whole pass under packed): the most distinct 16-byte rows any bank quad holds
    among the window's chunks, summed."""
    total = 0
    for slots in inf.passes:
        for w in range(0, len(slots), window):
            rows = {(base + line * stride * inf.bits // 8 + ROW * chunk) // ROW
                    for line, chunk in slots[w:w + window]}
            total += max(collections.Counter(r % quads for r in rows).values())
    return total


class Deck:
    """The regression's jobs, made as they are taken (a long run keeps none): every form in
    turn (ROW_WEIGHT), random operands, 6 % broken, in bursts of 1 to 8 back-to-back
    instructions, a reset before 3 % of the jobs. With ``ports`` (Tensor Memory of
    ``tmem_columns``), a job may instead be a wmma.load from global or generic memory, every
    quadrant's tcgen05.ld / tcgen05.st at once, or a tcgen05.cp with shared-path instructions
    behind it (tb/deck.py); and each job draws its idle and back-pressure level (every port,
    the AXI memory's pauses too). Iterating gives (job, the model's expectation of each of its
    instructions, and of the Tensor Memory image when the job reads it back); ``mem`` is then
    the shared memory the model ends with (the last job reads it all back)."""

    def __init__(self, n: int, seed: int, policy: str, smem_bytes: int, ports: bool = False,
                 tmem_columns: int = 64):
        self.n, self.policy, self.smem_bytes, self.ports = n, policy, smem_bytes, ports
        self.cols = tmem_columns
        self.rng, self.nrng = random.Random(seed), np.random.default_rng(seed)
        self.mem = self.nrng.integers(0, 256, smem_bytes, dtype=np.uint8)
        self.deck: list[int] = []
        if ports:
            self.gmem = self.nrng.integers(0, 256, deck.GLOBAL_IMAGE, dtype=np.uint8)
            self.tm = self.nrng.integers(0, 1 << 32, (128, tmem_columns), dtype=np.uint64).astype(np.uint32)

    def __iter__(self):
        rng, k = self.rng, 0
        tmem_known = False      # the quadrants hold self.tm (filled since the last reset)
        while k < self.n:
            reset = k > 0 and rng.random() < 0.03
            tmem_known &= not reset
            kind = rng.random() if self.ports else 0.0
            if kind < 0.7:
                size = min(rng.choice([1, 1, 2, 3, 5, 8]), self.n - k)
                image = self.mem.tobytes().hex() if k == 0 else None   # before the first instruction runs
                group = [self._instruction() for _ in range(size)]
                job = group[0][0] if size == 1 else {"burst": [j for j, _ in group]}
                expects = [e for _, e in group]
                if image:
                    job["image"] = image
            elif kind < 0.8:
                job, exp = deck.global_wmma(rng, self.mem, self.gmem, self.smem_bytes, self._wmma_cycles)
                expects, size = [exp], 1
            elif kind < 0.9:
                before = self.tm
                job, expects, self.tm = deck.tmem_job(rng, self.nrng, self.tm, self.cols, per_port=4)
                size = len(expects)
                if not tmem_known:
                    job["tmem_image"] = deck.images(before)
                job["tmem_dump"] = rng.random() < 0.25
                if job["tmem_dump"]:
                    expects.append({"tmem": self.tm.copy()})
            else:
                before = self.tm
                # the banks hold self.mem already (the regression keeps them so): no image
                job, exp, self.tm = deck.copy_job(rng, self.mem, self.tm, self.cols)
                if not tmem_known:
                    job["tmem_image"] = deck.images(before)
                job["tmem_dump"] = rng.random() < 0.25
                expects, size = [exp], 1
                if rng.random() < 0.3:       # shared-path instructions behind the copy
                    group = [self._instruction(row_only=True) for _ in range(rng.randrange(1, 4))]
                    job["after"] = [j for j, _ in group]
                    expects += [e for _, e in group]
                    size += len(group)
                if job["tmem_dump"]:
                    expects.append({"tmem": self.tm.copy()})
            tmem_known |= "tmem" in job or "cp" in job
            if self.ports:
                if k == 0:
                    job["gmem"], job["gmem_at"] = self.gmem.tobytes().hex(), GMEM_AT
                level, job["rates"] = deck.rates(rng)
                for e in expects:
                    e["level"] = level
            if reset:
                job["reset"] = True
            k += size
            if k >= self.n and not self.ports:
                job["dump_lines"] = self.smem_bytes // 128
            yield job, expects
        if self.ports:      # both memories read back at the end
            yield {"burst": [], "dump_lines": self.smem_bytes // 128}, []
            yield {"tmem": {}, "tmem_dump": True}, [{"tmem": self.tm.copy()}]

    def _wmma_cycles(self, fid: int, base: int, stride: int) -> int:
        """A wmma.load's bank cycles: the model's, under either policy (under packed the whole
        fragment's busiest quad: the unit pairs a fragment's two passes)."""
        return model.wavefronts(forms.FORMS[fid], base, self.policy, stride=stride)

    def _instruction(self, row_only: bool = False) -> tuple[dict, dict]:
        rng, nrng, smem_bytes = self.rng, self.nrng, self.smem_bytes
        if row_only:
            fid = rng.randrange(len(forms.ROW_FORMS))
        else:
            if not self.deck:
                self.deck = list(range(len(forms.FORMS))) + list(range(len(forms.ROW_FORMS))) * (ROW_WEIGHT - 1)
                rng.shuffle(self.deck)
            fid = self.deck.pop()
        ins, inf = forms.FORMS[fid], forms.info(fid)
        exp = {"form": ins.form, "family": ins.op}

        if inf.wmma:
            base, stride = _wmma_operands(rng, inf, smem_bytes)
            try:
                exp["regs"] = model.wmma_load(ins, model.Memory(shared=self.mem), base, stride)
                exp["cycles"] = self._wmma_cycles(fid, base, stride)
            except model.ModelError as e:
                exp["error"] = str(e)
            return {"form": fid, "addr": base, "stride": stride}, exp
        a = _addresses(rng, ins, smem_bytes)
        if rng.random() < 0.06:
            a = _break(rng, ins, a, smem_bytes)
        job = {"form": fid, "addr": a}
        if ins.op == "stmatrix":
            # every stmatrix's beats, refused or not, as a producer sends them (the streams'
            # idle puts them before, with or after the instruction): the unit drops a refused one's
            regs = nrng.integers(0, 1 << 32, (32, ins.nregs), dtype=np.uint64)
            job["store"] = [[int(regs[t, r]) for t in range(32)] for r in range(ins.nregs)]
        try:
            cycles = model.wavefronts(ins, a, self.policy)
            if ins.op == "ldmatrix":
                exp["regs"] = model.ldmatrix(ins, self.mem, a)
            else:
                self.mem = model.stmatrix(ins, self.mem, a, regs)
            exp["cycles"] = cycles
        except model.ModelError as e:
            exp["error"] = str(e)
        return job, exp


def make_jobs(n: int, seed: int, policy: str, smem_bytes: int):
    """The whole deck at once: (jobs, expectations of every instruction, final memory)."""
    deck = Deck(n, seed, policy, smem_bytes)
    jobs, expect = [], []
    for job, exps in deck:
        jobs.append(job)
        expect += exps
    return jobs, expect, deck.mem


def flatten(results: list[dict]) -> list[dict]:
    out = []
    for r in results:
        out += r["burst"] if "burst" in r else [r]
    return out


def error_code(message: str) -> Error:
    """The result-stream code the unit must give for a model refusal."""
    for words, code in (("aligned", Error.MISALIGNED), ("stride", Error.STRIDE),
                        ("outside", Error.OUT_OF_RANGE), ("same row", Error.OVERLAP)):
        if words in message:
            return code
    raise ValueError(f"no error code for {message!r}")


class Checker:
    """Compares results with the model's expectations job by job (as they come from a long
    run), and keeps the per-form table, the failures and the coverage: (family, form, error
    code, idle / back-pressure level) of every instruction."""

    def __init__(self, policy: str = "h200", keep: int = 100):
        self.policy, self.keep = policy, keep
        self.table: dict = collections.OrderedDict()
        self.coverage: collections.Counter = collections.Counter()
        self.fails: list[str] = []
        self.failed = self.instructions = 0
        self.dump = b""

    def _fail(self, text: str):
        self.failed += 1
        if len(self.fails) < self.keep:
            self.fails.append(text)

    def job(self, result: dict, expect: list[dict]):
        if "dump" in result:
            self.dump = bytes.fromhex(result["dump"])
        images = [e for e in expect if "tmem" in e]
        expect = [e for e in expect if "tmem" not in e]
        if "tmem" in result:
            outs = [(int(q), got) for q, port in result["tmem"].items() for got in port]
            for (q, got), exp in zip(outs, expect, strict=True):
                self._tmem(got, exp)
        elif "copies" in result:
            self._copy(result, expect[0])
            for res, exp in zip(result.get("after", []), expect[1:], strict=True):
                self.instruction(res, exp)
        else:
            for res, exp in zip(result["burst"] if "burst" in result else [result], expect, strict=True):
                self.instruction(res, exp)
        for e in images:
            got = tmem_from_dumps(result["tmem_dump"], e["tmem"].shape[1])
            bad = np.argwhere(got != e["tmem"])
            if len(bad):
                self._fail(f"after instruction {self.instructions}: Tensor Memory differs from the model first at "
                           f"lane, column {bad[0].tolist()}")

    def _count(self, exp: dict, ok: bool, error: int):
        self.instructions += 1
        row = self.table.setdefault(exp["form"], [0, 0])
        row[0 if ok else 1] += 1
        family = exp.get("family") or exp["form"].split(".")[0]
        self.coverage[(family, exp["form"], Error(error).name, exp.get("level", "-"))] += 1

    def _code(self, exp: dict) -> int:
        if "code" in exp:
            return exp["code"].value
        return error_code(exp["error"]).value if "error" in exp else Error.NONE.value

    def instruction(self, res: dict, exp: dict, k: int | None = None):
        k = self.instructions if k is None else k
        ok, policy = True, self.policy
        want = self._code(exp)
        if res["error"] != want:
            ok = False
            why = exp.get("error") or (f"the model gives {Error(want).name}" if want else "the model takes it")
            self._fail(f"job {k} {exp['form']}: error code {Error(res['error']).name}; {why}")
        elif want == Error.NONE.value:
            if "regs" in exp:
                got = np.array(res["beats"], dtype=np.uint64).T
                if got.shape != exp["regs"].shape:
                    ok = False
                    self._fail(f"job {k} {exp['form']}: {got.shape[1]} result beats, the model has "
                               f"{exp['regs'].shape[1]} registers")
                elif (got != exp["regs"]).any():
                    ok = False
                    t, r = (int(x) for x in np.argwhere(got != exp["regs"])[np.argsort(
                        np.argwhere(got != exp["regs"])[:, 1], kind="stable")][0])
                    self._fail(f"job {k} {exp['form']} ({policy}): register {r} (result beat {r}) "
                               f"differs first at thread {t}: 0x{int(got[t, r]):08x}, model "
                               f"0x{int(exp['regs'][t, r]):08x}; accepted in cycle {res.get('accepted')}, "
                               f"last beat in cycle {res.get('done')}")
            if "cycles" in exp and res["cycles"] != exp["cycles"]:
                ok = False
                self._fail(f"job {k} {exp['form']}: {res['cycles']} bank cycles, model {exp['cycles']}")
        self._count(exp, ok, res["error"])

    def _tmem(self, got: dict, exp: dict):
        where = f"job {self.instructions} quadrant {exp['quadrant']} {exp['ins'].form}"
        try:
            out = tmem_outcome(exp["ins"], got)
        except AssertionError as e:
            self._fail(f"{where}: {e}")
            self._count(exp, False, got["beats"][-1]["error"])
            return
        error = out.get("error", Error.NONE.value)
        want = self._code(exp)
        ok = error == want and all(out.get(key) == exp[key] for key in ("regs", "redval") if key in exp)
        if not ok:
            self._fail(f"{where}: error {Error(error).name} (model {Error(want).name})" if error != want
                       else f"{where}: registers differ from the model's")
        self._count(exp, ok, error)

    def _copy(self, res: dict, exp: dict):
        want = self._code(exp)
        ok = res["error"] == want
        if not ok:
            self._fail(f"job {self.instructions} {exp['form']}: error {Error(res['error']).name} "
                       f"(model {Error(want).name})")
        self._count(exp, ok, res["error"])

    def final(self, final_mem: np.ndarray):
        if self.dump != final_mem.tobytes():
            self._fail("final shared-memory image differs from the model")

def cell_errors(coverage: dict) -> dict:
    """(family, form) -> the error codes its coverage cells count, for every form a policy's
    coverage (a Checker's) met."""
    met = {(fam, form) for cov in coverage.values() for fam, form, _, _ in cov}
    return {(fam, form): deck.FAMILY_ERRORS[fam] + (("SPLIT",) if form.endswith("16x32bx2") else ())
            for fam, form in met}


def levels(ports: bool) -> list[str]:
    """The idle / back-pressure levels of the coverage's cells."""
    return list(deck.RATES) if ports else ["-"]


def coverage_text(coverage: dict, ports: bool = True, show: int = 60) -> str:
    """The cells hit and never hit (:func:`tensorlsu.cosim.farm.coverage_text`) of ``coverage``:
    policy -> a Checker's coverage."""
    return farm.coverage_text(coverage, cell_errors(coverage), levels(ports), show)


def compare(results, expect, final_mem, policy: str = "h200") -> tuple[dict, list[str]]:
    """The per-form table and the failures of a whole run."""
    check = Checker(policy, keep=1 << 30)
    if results and "dump" in results[-1]:
        check.dump = bytes.fromhex(results[-1]["dump"])
    for k, (res, exp) in enumerate(zip(flatten(results), expect, strict=True)):
        check.instruction(res, exp, k)
    check.final(final_mem)
    return check.table, check.fails


def _both(argv: list[str], args) -> int:
    """Each policy in its own process at once (a core each); their outputs, then the coverage
    of both."""
    rest, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--policy":
            skip = True
        elif not a.startswith("--policy="):
            rest.append(a)
    with tempfile.TemporaryDirectory() as d:
        procs = {p: subprocess.Popen([sys.executable, __file__, *rest, "--policy", p, "--coverage-out",
                                      str(Path(d) / f"{p}.json")], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True) for p in ("h200", "packed")}
        outs = {p: proc.communicate()[0] for p, proc in procs.items()}
        coverage = {}
        for p in procs:
            print(outs[p], flush=True)
            f = Path(d) / f"{p}.json"
            coverage[p] = {tuple(c[:-1]): c[-1] for c in json.loads(f.read_text())} if f.exists() else {}
    print(coverage_text(coverage, args.ports))
    return max(proc.returncode for proc in procs.values())


@dataclass
class Summary:
    """What one regression run found: the per-form table, the coverage cells (Checker's), the
    failures (the first ``Checker.keep``) and their count, and its seconds."""

    instructions: int
    failed: int
    fails: list[str]
    table: dict
    coverage: dict
    sim_s: float
    wall_s: float


def run(n: int, seed: int, policy: str, *, sim: str = "verilator", engine: str | None = None,
        ports: bool = False, tmem_columns: int = 64, smem_bytes: int = 16 * 1024, idle: float = 0.2,
        backpressure: float = 0.2, waves: bool = False, optimize: bool = True, progress: bool = True,
        build_root=None, mutate: bool = False) -> Summary:
    """One regression of ``n`` instructions from ``seed`` under ``policy``, checked as it runs
    (native) or at its end (cocotb). ``optimize``: the optimized build (the native harness's -O2, cocotb's
    Verilator model at -O1: slower to build, faster to run). ``mutate`` corrupts the model's shared memory before the last job's
    read-back: a run that must fail, to test what reports a failure."""
    engine = engine or ("native" if sim == "verilator" else "cocotb")
    cols = tmem_columns if ports else 0
    deck = Deck(n, seed, policy, smem_bytes, ports=ports, tmem_columns=tmem_columns)
    check = Checker(policy)
    t0 = time.perf_counter()
    common = dict(sim=sim, policy=policy, smem_bytes=smem_bytes, tmem_columns=cols, seed=seed, idle=idle,
                  backpressure=backpressure, waves=waves, build_root=build_root)
    if engine == "native":
        # jobs made as the harness runs; each result checked as it comes, then dropped
        expects: collections.deque = collections.deque()
        last = [time.perf_counter()]

        def jobs():
            for job, exps in deck:
                expects.append(exps)
                yield job

        def on_result(k, res):
            check.job(res, expects.popleft())
            if progress and time.perf_counter() - last[0] > 10:
                last[0] = time.perf_counter()
                print(f"  {check.instructions}/{n} instructions, {last[0] - t0:.0f} s, "
                      f"{check.failed} failures", flush=True)
        _, sim_s = run_jobs(jobs(), **common, optimize=optimize, on_result=on_result)
    else:
        jobs, expect = [], []
        for job, exps in deck:
            jobs.append(job)
            expect.append(exps)
        results, sim_s = run_jobs(jobs, **common, progress=progress, engine=engine, optimize=optimize)
        for res, exps in zip(results, expect, strict=True):
            check.job(res, exps)
    final = deck.mem
    if mutate:
        final = final.copy()
        final[0] ^= 1
    check.final(final)
    if check.instructions < n:
        check._fail(f"{check.instructions} of {n} instructions were checked")
    return Summary(check.instructions, check.failed, check.fails, dict(check.table), dict(check.coverage),
                   sim_s, time.perf_counter() - t0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sim", choices=["icarus", "verilator"], default="icarus")
    ap.add_argument("--engine", choices=ENGINES, help="native (Verilator's default) or cocotb")
    ap.add_argument("--policy", choices=["h200", "packed", "both"], default="h200",
                    help="both: one process a policy, at once, and the coverage of both")
    ap.add_argument("--coverage-out", help="write the coverage cells here (JSON)")
    ap.add_argument("--idle", type=float, default=0.2)
    ap.add_argument("--backpressure", type=float, default=0.2)
    ap.add_argument("--smem-bytes", type=int, default=16 * 1024)
    ap.add_argument("--ports", action="store_true",
                    help="every port: global and generic wmma.load, tcgen05.ld / st, tcgen05.cp, and a "
                         "level of idle and back-pressure per job (the rates above are then unused)")
    ap.add_argument("--tmem-columns", type=int, default=64)
    ap.add_argument("--waves", action="store_true")
    args = ap.parse_args(argv)
    if args.policy == "both":
        return _both(argv or sys.argv[1:], args)
    engine = args.engine or ("native" if args.sim == "verilator" else "cocotb")
    print(f"regression: {args.n} instructions, {args.sim} ({engine}), {args.policy}, seed {args.seed}; "
          f"simulator logs in build/", flush=True)
    s = run(args.n, args.seed, args.policy, sim=args.sim, engine=engine, ports=args.ports,
            tmem_columns=args.tmem_columns, smem_bytes=args.smem_bytes, idle=args.idle,
            backpressure=args.backpressure, waves=args.waves)
    print(format_table(s.table, "RTL regression form"))
    print(coverage_text({args.policy: s.coverage}, args.ports))
    if args.coverage_out:
        Path(args.coverage_out).write_text(json.dumps([[*k, n] for k, n in s.coverage.items()]))
    for f in s.fails[:20]:
        print("FAIL", f)
    print(f"regression: {args.n} instructions on {args.sim} ({engine}, {args.policy}), {s.failed} failures, "
          f"{s.sim_s:.1f} s simulating, {args.n / s.sim_s:.0f} instructions/s; {s.wall_s:.1f} s in all, the build, "
          f"the model's expectations and the checks included ({args.n / s.wall_s:.0f} instructions/s)")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
