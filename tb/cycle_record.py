#!/usr/bin/env python3
"""Record, per instruction, the cycle the unit accepted it, the cycle of its last result beat,
its bank cycles, its error code and a digest of its data, for the random regression, the H200
traces (shared, global and generic records, the global ones with AXI pauses), the sm_100
Tensor Memory records and random four-warp Tensor Memory jobs with idle and back-pressure:
two recordings of the same jobs compare equal exactly when the unit's behaviour is
cycle-identical (the testbench's idle and back-pressure are seeded, so equal RTL behaviour
gives equal stimulus).

    python tb/cycle_record.py --out before.json [--sim verilator] [--n 600]
    python tb/cycle_record.py --out after.json  && cmp before.json after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "system"))

from regress import flatten, make_jobs  # noqa: E402
from tensorlsu.cosim.backend import RtlBackend  # noqa: E402
from tensorlsu.cosim.runner import run_jobs  # noqa: E402
from tensorlsu.sim import trace  # noqa: E402
from test_tmem_rtl import COLS, _random_jobs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRACES = ("tb/data/h200_sm90.jsonl", "tb/data/h200_capture.jsonl")


def _hash(x) -> str:
    return hashlib.sha1(json.dumps(x).encode()).hexdigest()[:12]


def digest(res: dict) -> dict:
    if "tmem" in res:
        return {"ports": {q: [{"accepted": r["accepted"], "done": r["done"], "data": _hash(r["beats"])}
                              for r in rs] for q, rs in res["tmem"].items()},
                "dump": _hash(res.get("tmem_dump"))}
    keep = {k: res[k] for k in ("accepted", "done", "cycles", "error") if k in res}
    keep["data"] = hashlib.sha1(json.dumps([res.get("beats"), res.get("dump")]).encode()).hexdigest()[:12]
    return keep


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sim", choices=["icarus", "verilator"], default="verilator")
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args(argv)
    out = {}
    for policy in ("h200", "packed"):
        for seed in args.seeds:
            jobs, _, _ = make_jobs(args.n, seed, policy, 16 * 1024)
            res, _ = run_jobs(jobs, sim=args.sim, policy=policy, seed=seed, idle=0.2, backpressure=0.2)
            out[f"regress {policy} seed {seed}"] = [digest(r) for r in flatten(res)]
            print(f"regress {policy} seed {seed}: {len(flatten(res))} instructions", flush=True)
        for path in TRACES:
            with open(ROOT / path) as f:
                records = [r for r in trace.read(f) if r.space == "shared"]
            be = RtlBackend(sim=args.sim, policy=policy)
            jobs = []
            for rec in records:
                try:
                    jobs.append(be.job(rec))
                except ValueError:
                    pass
            res, _ = run_jobs(jobs, sim=args.sim, policy=policy)
            out[f"{path} {policy}"] = [digest(r) for r in res]
            print(f"{path} {policy}: {len(res)} instructions", flush=True)
        # global and generic wmma.load records, with AXI pauses and stream back-pressure
        with open(ROOT / TRACES[1]) as f:
            records = [r for r in trace.read(f) if r.space == "global"]
        be = RtlBackend(sim=args.sim, policy=policy)
        res, _ = run_jobs([be.job(r) for r in records], sim=args.sim, policy=policy, idle=0.2,
                          backpressure=0.2)
        out[f"global {policy}"] = [digest(r) for r in res]
        print(f"global {policy}: {len(res)} instructions", flush=True)
    # Tensor Memory: the sm_100 records, and random jobs of four warps at once
    with open(ROOT / "tb/data/sm100_tmem.jsonl") as f:
        records = list(trace.read(f))
    be = RtlBackend(sim=args.sim)
    for cols, members in be.groups(records).items():
        jobs = []
        for k in members:
            try:
                jobs.append(be.job(records[k]))
            except ValueError:
                pass
        res, _ = run_jobs(jobs, sim=args.sim, tmem_columns=cols)
        out[f"sm100 tmem{cols}"] = [digest(r) for r in res]
        print(f"sm100 tmem{cols}: {len(res)} jobs", flush=True)
    for seed in args.seeds:
        jobs, _ = _random_jobs(seed, 12)
        res, _ = run_jobs(jobs, sim=args.sim, tmem_columns=COLS, seed=seed, idle=0.25, backpressure=0.25)
        out[f"tmem random seed {seed}"] = [digest(r) for r in res]
        print(f"tmem random seed {seed}: {len(res)} jobs", flush=True)
    Path(args.out).write_text(json.dumps(out, indent=0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
