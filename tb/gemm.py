#!/usr/bin/env python3
"""A GEMM mainloop's shared-memory stream through the RTL: the ldmatrix / stmatrix addresses of a
CUTLASS-style f16 GEMM (SM80 tensor-core path) over tiles of 128-byte rows swizzled with
Swizzle<3,4,3>, checked against the model (data, bank cycles), with the bytes per clock the
RTL gives against the model's bank cycles.

The kernel: a 128 x 128 block tile, 64 elements of K a stage (A and B each 128 rows of 128
bytes, K-major), two stages; four warps of 64 x 64. Each k16 step a warp loads its A (four
ldmatrix.x4: 16 rows x 16 k each) and its B (four ldmatrix.x4: 16 n x 16 k each); thread t of
an .x4 names row t % 16 of its 16-row slab and the 16-byte chunk t / 16 of its k16 step. After
every K of 512 (eight stages) the epilogue stores each warp's 64 x 64 f16 accumulators through
stmatrix.x4 into a swizzled C tile (CUTLASS's SM90 epilogue path), over the A stage just read.
The byte address of row r, chunk c of a tile is ``base + 128 r + 16 (c ^ (r % 8))``: CuTe's
Swizzle<3,4,3> on byte addresses (bits 4-6 XOR bits 7-9).

    python tb/gemm.py --n 1000000 [--sim verilator] [--policy h200]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

import numpy as np
from tensorlsu.cosim.runner import run_jobs
from tensorlsu.hdl.pipeline import forms
from tensorlsu.sim import model, ptx

ROW = 128                     # bytes of a tile row (64 f16 of K)
TILE = 128 * ROW              # one operand's stage: 128 rows
SMEM = 4 * TILE               # A and B, two stages
WARPS = 4
LDSM = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
STSM = ptx.parse("stmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
BURST = 256                   # instructions a job (back to back in the unit)


def swizzled(base: int, row: int, chunk: int) -> int:
    """Swizzle<3,4,3>: the 16-byte chunk index XOR the row's low three bits."""
    return base + ROW * row + 16 * (chunk ^ (row % 8))


def ldsm_rows(base: int, slab: int, kstep: int) -> list[int]:
    """An .x4 of a 16 x 16 block: rows 16 slab .. +15, chunks 2 kstep and 2 kstep + 1."""
    return [swizzled(base, 16 * slab + t % 16, 2 * kstep + t // 16) for t in range(32)]


def _program():
    """(instruction job, form) of the kernel, without end: stages of four k16 steps, and after
    every eight stages the epilogue."""
    stage = 0
    while True:
        a, b = 2 * TILE * (stage % 2), 2 * TILE * (stage % 2) + TILE
        for kstep in range(4):                      # four k16 steps a 64-wide stage
            for w in range(WARPS):
                wm, wn = w // 2, w % 2
                for s in range(4):
                    yield {"form": forms.form_id(LDSM), "addr": ldsm_rows(a, 4 * wm + s, kstep)}, LDSM
                for s in range(4):
                    yield {"form": forms.form_id(LDSM), "addr": ldsm_rows(b, 4 * wn + s, kstep)}, LDSM
        stage += 1
        if stage % 8 == 0:                           # the epilogue: 64 x 64 f16 a warp
            for w in range(WARPS):
                for s in range(16):                  # sixteen 16 x 16 blocks
                    yield {"form": forms.form_id(STSM), "addr": ldsm_rows(a, 4 * (w % 2) + s // 4, s % 4)}, STSM


def stream(n: int):
    """The first ``n`` instructions of the kernel."""
    for k, item in enumerate(_program()):
        if k == n:
            return
        yield item


def run(n: int, policy: str = "h200", seed: int = 1, sim: str = "verilator") -> dict:
    """The stream's ``n`` instructions through the RTL: totals (instructions, cycles, bytes,
    the RTL's and the model's bank cycles, failures), the first failures, and the seconds."""
    rng = np.random.default_rng(seed)
    mem = rng.integers(0, 256, SMEM, dtype=np.uint8)
    expects: collections.deque = collections.deque()
    totals = collections.Counter()
    fails: list[str] = []

    def jobs():
        nonlocal mem
        first = True
        burst, exps = [], []
        for job, ins in stream(n):
            exp = {"cycles": model.wavefronts(ins, job["addr"], policy), "bytes": 16 * 8 * ins.num}
            if ins.op == "ldmatrix":
                exp["regs"] = model.ldmatrix(ins, mem, job["addr"])
            else:
                regs = rng.integers(0, 1 << 32, (32, ins.nregs), dtype=np.uint64)
                mem = model.stmatrix(ins, mem, job["addr"], regs)
                job["store"] = [[int(regs[t, r]) for t in range(32)] for r in range(ins.nregs)]
            burst.append(job)
            exps.append(exp)
            if len(burst) == BURST:
                out = {"burst": burst}
                if first:
                    out["image"], first = mem.tobytes().hex(), False
                expects.append(exps)
                yield out
                burst, exps = [], []
        if burst:
            expects.append(exps)
            yield {"burst": burst, **({"image": mem.tobytes().hex()} if first else {})}

    def on_result(_, res):
        exps = expects.popleft()
        b = res["burst"]
        totals["cycles"] += b[-1]["done"] - b[0]["accepted"] + 1
        # back to back: from the first instruction's last beat to the last's, the burst's other
        # instructions; the first one's latency (the pipeline filling) is counted apart
        totals["steady_cycles"] += b[-1]["done"] - b[0]["done"]
        totals["fill_cycles"] += b[0]["done"] - b[0]["accepted"] + 1
        totals["bursts"] += 1
        for k, (r, e) in enumerate(zip(b, exps, strict=True)):
            totals["instructions"] += 1
            totals["bytes"] += e["bytes"]
            if k:
                totals["steady_bytes"] += e["bytes"]
                totals["steady_model_cycles"] += e["cycles"]
            totals["bank_cycles"] += r["cycles"]
            totals["model_cycles"] += e["cycles"]
            bad = r["error"] or r["cycles"] != e["cycles"] or (
                "regs" in e and not np.array_equal(np.array(r["beats"], dtype=np.uint64).T, e["regs"]))
            if bad:
                totals["failures"] += 1
                if len(fails) < 10:
                    fails.append(f"instruction {totals['instructions']}: error {r['error']}, "
                                 f"{r['cycles']} bank cycles (model {e['cycles']})")

    t0 = time.perf_counter()
    _, sim_s = run_jobs(jobs(), sim=sim, policy=policy, smem_bytes=SMEM, optimize=True, on_result=on_result)
    t = dict(totals)
    t.update(policy=policy, seconds=round(sim_s, 2), wall_s=round(time.perf_counter() - t0, 1), fails=fails,
             bytes_per_clk=round(t["bytes"] / t["cycles"], 1),
             model_bytes_per_clk=round(t["bytes"] / t["model_cycles"], 1),
             # (none when every burst holds one instruction)
             steady_bytes_per_clk=(round(t["steady_bytes"] / t["steady_cycles"], 1)
                                   if t.get("steady_cycles") else None),
             steady_model_bytes_per_clk=(round(t["steady_bytes"] / t["steady_model_cycles"], 1)
                                         if t.get("steady_model_cycles") else None),
             fill=round(t["fill_cycles"] / t["bursts"], 1))
    t.setdefault("failures", 0)
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--sim", choices=["verilator", "icarus"], default="verilator")
    ap.add_argument("--policy", choices=["h200", "packed"], default="h200")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    t = run(args.n, args.policy, args.seed, args.sim)
    print(f"gemm mainloop ({args.policy}): {t['instructions']} instructions (ldmatrix.x4 and the epilogue's "
          f"stmatrix.x4), {t['failures']} failures")
    print(f"  RTL: {t['cycles']} cycles, {t['bytes_per_clk']} B/clk; bank cycles {t['bank_cycles']}, "
          f"the model's {t['model_cycles']} ({t['model_bytes_per_clk']} B/clk at the bank rule); limit 128 B/clk")
    if t["steady_bytes_per_clk"] is not None:
        print(f"  back to back (each burst of {BURST} after its first instruction): {t['steady_bytes_per_clk']} "
              f"B/clk, {t['steady_model_bytes_per_clk']} at the bank rule; a burst's first instruction "
              f"{t['fill']} clocks")
    rate = f"{t['instructions'] / t['seconds']:.0f}" if t["seconds"] else "—"
    print(f"  {t['seconds']} s simulating ({rate} instructions/s), "
          f"{t['wall_s']} s in all")
    for f in t["fails"]:
        print("FAIL", f)
    return 1 if t["failures"] or t["instructions"] != args.n else 0


if __name__ == "__main__":
    sys.exit(main())
