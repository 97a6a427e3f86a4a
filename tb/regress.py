#!/usr/bin/env python3
"""Random RTL regression: every ldmatrix / stmatrix form, random addresses (conflicts,
duplicates, strides), random data, refusals, resets, idle and back-pressure on the streams.

Expected values come from the model (tensorlsu.sim.model), itself checked against the H200
vectors: data, error beats, and the bank cycles against ``model.wavefronts``.

    python tb/regress.py --n 2000 --sim verilator --policy packed --seed 3
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time

import numpy as np

from tensorlsu.hdl import forms
from tensorlsu.hdl.cosim import run_jobs
from tensorlsu.hdl.lsu import Error
from tensorlsu.sim import layouts, model

ROW = 16


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


def make_jobs(n: int, seed: int, policy: str, smem_bytes: int):
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    mem = nrng.integers(0, 256, smem_bytes, dtype=np.uint8)
    jobs, expect = [], []
    for k in range(n):
        fid = rng.randrange(len(forms.ROW_FORMS))
        ins = forms.ROW_FORMS[fid]
        a = _addresses(rng, ins, smem_bytes)
        if rng.random() < 0.06:
            a = _break(rng, ins, a, smem_bytes)
        job = {"form": fid, "addr": a, "reset": k > 0 and rng.random() < 0.03}
        if k == 0:
            job["image"] = mem.tobytes().hex()
        exp = {"form": ins.form}
        try:
            cycles = model.wavefronts(ins, a, policy)
            if ins.op == "ldmatrix":
                exp["regs"] = model.ldmatrix(ins, mem, a)
            else:
                regs = nrng.integers(0, 1 << 32, (32, ins.nregs), dtype=np.uint64)
                mem = model.stmatrix(ins, mem, a, regs)
                job["store"] = [[int(regs[t, r]) for t in range(32)] for r in range(ins.nregs)]
            exp["cycles"] = cycles
        except model.ModelError as e:
            exp["error"] = str(e)
            if ins.op == "stmatrix":
                job["store"] = []
        jobs.append(job)
        expect.append(exp)
    jobs = _bursts(rng, jobs)
    jobs[-1]["dump_lines"] = smem_bytes // 128
    return jobs, expect, mem


def _bursts(rng: random.Random, jobs: list[dict]) -> list[dict]:
    """Group runs of instructions into back-to-back bursts (pipelined in the unit)."""
    out, k = [], 0
    while k < len(jobs):
        n = rng.choice([1, 1, 2, 3, 5, 8])
        group = jobs[k:k + n]
        if n == 1 or any(j.get("reset") or "image" in j for j in group[1:]):
            out.append(jobs[k])
            k += 1
            continue
        burst = {"burst": [{key: j[key] for key in ("form", "addr", "store") if key in j} for j in group]}
        for key in ("reset", "image"):
            if key in group[0]:
                burst[key] = group[0][key]
        out.append(burst)
        k += n
    return out


def flatten(results: list[dict]) -> list[dict]:
    out = []
    for r in results:
        out += r["burst"] if "burst" in r else [r]
    return out


def compare(results, expect, final_mem) -> tuple[dict, list[str]]:
    dump = bytes.fromhex(results[-1].get("dump", ""))
    results = flatten(results)
    table = collections.OrderedDict()
    fails = []
    for k, (res, exp) in enumerate(zip(results, expect)):
        ok = True
        if "error" in exp:
            if res["error"] == Error.NONE.value:
                ok = False
                fails.append(f"job {k} {exp['form']}: accepted, the model refuses: {exp['error']}")
        elif res["error"] != Error.NONE.value:
            ok = False
            fails.append(f"job {k} {exp['form']}: refused with {Error(res['error']).name}")
        else:
            if "regs" in exp:
                got = np.array(res["beats"], dtype=np.uint64).T
                if got.shape != exp["regs"].shape or (got != exp["regs"]).any():
                    ok = False
                    fails.append(f"job {k} {exp['form']}: registers differ from the model")
            if res["cycles"] != exp["cycles"]:
                ok = False
                fails.append(f"job {k} {exp['form']}: {res['cycles']} bank cycles, model {exp['cycles']}")
        row = table.setdefault(exp["form"], [0, 0])
        row[0 if ok else 1] += 1
    if dump != final_mem.tobytes():
        fails.append("final shared-memory image differs from the model")
    return table, fails


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sim", choices=["icarus", "verilator"], default="icarus")
    ap.add_argument("--policy", choices=["h200", "packed"], default="h200")
    ap.add_argument("--idle", type=float, default=0.2)
    ap.add_argument("--backpressure", type=float, default=0.2)
    ap.add_argument("--smem-bytes", type=int, default=16 * 1024)
    ap.add_argument("--waves", action="store_true")
    args = ap.parse_args(argv)
    jobs, expect, final = make_jobs(args.n, args.seed, args.policy, args.smem_bytes)
    t0 = time.perf_counter()
    results, sim_s = run_jobs(jobs, sim=args.sim, policy=args.policy, smem_bytes=args.smem_bytes,
                              seed=args.seed, idle=args.idle, backpressure=args.backpressure,
                              waves=args.waves)
    table, fails = compare(results, expect, final)
    from tensorlsu.sim.trace import format_table
    print(format_table(table, "RTL regression form"))
    for f in fails[:20]:
        print("FAIL", f)
    print(f"regression: {args.n} instructions on {args.sim} ({args.policy}), {len(fails)} failures, "
          f"{sim_s:.1f} s simulating, {args.n / sim_s:.0f} instructions/s "
          f"(build and setup {time.perf_counter() - t0 - sim_s:.1f} s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
