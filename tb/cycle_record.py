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
    python tb/cycle_record.py --compare before.json after.json

``--compare`` compares two recordings field by field: every record's data, error and bank
cycles must be equal (exit 1 if one is not); the accepted and done cycles may differ as the
pipeline's depth does, and are summarised per stream (how many records' accepted or done cycle
moved, how many records' latency changed, and the latencies before and after).
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
TRACES = ("data/h200_sm90.jsonl", "data/h200_capture.jsonl")


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


def _latencies(records: list) -> list[int]:
    """Each record's latency (done − accepted), a Tensor Memory job's per port record."""
    out = []
    for r in records:
        if "ports" in r:
            out += [x["done"] - x["accepted"] for rs in r["ports"].values() for x in rs]
        else:
            out.append(r["done"] - r["accepted"])
    return out


def _times(records: list) -> list[tuple]:
    """Each record's (accepted, done), a Tensor Memory job's per port record."""
    out = []
    for r in records:
        if "ports" in r:
            out += [(x["accepted"], x["done"]) for rs in r["ports"].values() for x in rs]
        else:
            out.append((r["accepted"], r["done"]))
    return out


def _fixed(r: dict):
    """What must not change: data, error and bank cycles (a job's data per port record)."""
    if "ports" in r:
        return {"ports": {q: [x["data"] for x in rs] for q, rs in r["ports"].items()}, "dump": r["dump"]}
    return {k: r.get(k) for k in ("cycles", "error", "data")}


def compare(before: dict, after: dict) -> int:
    """Print the field-by-field comparison of two recordings; 1 if any fixed field differs."""
    bad = 0
    if set(before) != set(after):
        print(f"streams differ: only before {sorted(set(before) - set(after))}, "
              f"only after {sorted(set(after) - set(before))}")
        bad = 1
    print(f"{'stream':44} {'records':>7} {'differ':>6} {'moved':>6} {'latency changed':>15}  "
          "latency before -> after (min/mean/max)")
    for key in sorted(set(before) & set(after)):
        b, a = before[key], after[key]
        if len(b) != len(a):
            print(f"{key:44} record counts differ: {len(b)} before, {len(a)} after")
            bad = 1
            continue
        differ = [k for k, (x, y) in enumerate(zip(b, a)) if _fixed(x) != _fixed(y)]
        lb, la = _latencies(b), _latencies(a)
        changed = sum(x != y for x, y in zip(lb, la))
        moved = sum(x != y for x, y in zip(_times(b), _times(a)))

        def stats(v):
            return f"{min(v)}/{sum(v) / len(v):.1f}/{max(v)}" if v else "-"
        print(f"{key:44} {len(b):>7} {len(differ):>6} {moved:>6} {changed:>15}  {stats(lb)} -> {stats(la)}")
        for k in differ[:3]:
            print(f"    record {k}: before {_fixed(b[k])}, after {_fixed(a[k])}")
        bad |= bool(differ)
    print("data, errors and bank cycles: " + ("DIFFER" if bad else "identical on every record"))
    return int(bad)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--out")
    ap.add_argument("--sim", choices=["icarus", "verilator"], default="verilator")
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args(argv)
    if args.compare:
        try:
            before, after = (json.loads(Path(f).read_text()) for f in args.compare)
        except (OSError, ValueError) as e:
            print(f"cycle_record: cannot read a recording: {e}", file=sys.stderr)
            return 2
        return compare(before, after)
    if not args.out:
        ap.error("--out is required (or --compare BEFORE AFTER)")
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
    with open(ROOT / "data/sm100_tmem.jsonl") as f:
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
