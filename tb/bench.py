#!/usr/bin/env python3
"""Benchmarks of the RTL: bytes per clock and cycles per instruction on address-pattern suites,
for both scheduling policies, against the 128 B/clk bank limit and the H200 rule; every
measured wmma.load form and stride against the H200's measured clocks; Tensor
Memory bytes per clock and latency per shape and .num, one quadrant and four at once, against
the goals and the B200 figures; tcgen05.cp bytes per clock per shape, swizzle and source
format; and simulation speed on Icarus and Verilator.

    python tb/bench.py [--out reports] [--sims icarus verilator]

Each pattern runs as a burst of back-to-back instructions with the same row addresses; the
steady-state cycles per instruction are measured between the last result beats of the
instructions (the banks are the bottleneck, as on the H200 at saturation).
"""

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cute  # noqa: E402
import gemm  # noqa: E402
import latency  # noqa: E402
import numpy as np  # noqa: E402
from tensorlsu.cosim.jobs import tmem_instr_job  # noqa: E402
from tensorlsu.cosim.layout import GMEM_AT  # noqa: E402
from tensorlsu.cosim.native import AxiMemory  # noqa: E402
from tensorlsu.cosim.runner import run_jobs  # noqa: E402
from tensorlsu.hdl.codes import Space  # noqa: E402
from tensorlsu.hdl.copy.records import FORMS as COPY_FORMS  # noqa: E402
from tensorlsu.hdl.copy.records import instr_fields as copy_fields  # noqa: E402
from tensorlsu.hdl.params import DEEP_GLOBAL_PORT, FPGA_GLOBAL_PORT, Params  # noqa: E402
from tensorlsu.hdl.pipeline import forms  # noqa: E402
from tensorlsu.sim import (  # noqa: E402
    descriptor,
    layouts,  # noqa: E402
    model,
    ptx,
)

ROOT = Path(__file__).resolve().parent.parent
BURST = 24
LINE = 128
#: wmma.load forms and strides (elements) benchmarked: the leading dimension (rows packed
#: back to back) and padded strides (skewed rows, the usual way around bank conflicts)
WMMA_BENCH = (
    ("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16", (16, 24, 64)),
    ("wmma.load.b.sync.aligned.col.m16n16k16.shared.f16", (16, 24)),
    ("wmma.load.c.sync.aligned.row.m16n16k16.shared.f32", (16, 20, 32)),
    ("wmma.load.a.sync.aligned.row.m16n16k16.shared.s8", (16, 48)),
    ("wmma.load.c.sync.aligned.row.m8n8k4.shared.f64", (8, 16)),
)


def suites(rng: random.Random) -> dict:
    rows = 16 * 1024 // 16
    out = {"conflict-free": [16 * t for t in range(32)]}
    for ways, stride in ((2, 32), (4, 64), (8, 128)):
        out[f"strided {ways}-way"] = [stride * t for t in range(32)]
    out["random"] = [16 * r for r in rng.sample(range(rows), 32)]
    base = [16 * r for r in rng.sample(range(rows), 8)]
    out["duplicates"] = [base[t % 8] for t in range(32)]
    return out


def bench_patterns(sim: str, policy: str, rng: random.Random):
    rows = []
    jobs, meta = [], []
    for op in ("ldmatrix", "stmatrix"):
        for num in (1, 2, 4):
            ins = ptx.parse(f"{op}.sync.aligned.m8n8.x{num}.shared.b16", "sm_90a")
            fid = forms.form_id(ins)
            for name, addr in suites(rng).items():
                if op == "stmatrix" and name == "duplicates":
                    continue  # overlapping rows in one stmatrix are refused
                item = {"form": fid, "addr": addr}
                if op == "stmatrix":
                    item["store"] = [[0] * 32 for _ in range(num)]
                jobs.append({"burst": [item] * BURST})
                meta.append((ins, name, addr))
    for text, strides in WMMA_BENCH:
        ins = ptx.parse(text, "sm_90a")
        fid = forms.form_id(ins)
        for stride in strides:
            jobs.append({"burst": [{"form": fid, "addr": 0, "stride": stride}] * BURST})
            meta.append((ins, f"stride {stride}", stride))
    jobs[0]["image"] = ""
    results, _ = run_jobs(jobs, sim=sim, policy=policy)
    for (ins, name, addr), res in zip(meta, results):
        b = res["burst"]
        cpi = (b[-1]["done"] - b[0]["done"]) / (len(b) - 1)
        if ins.op == "wmma.load":
            inf = forms.info(forms.form_id(ins))
            rows.append({
                "instr": f"wmma {ins.frag}.{ins.layout}.{ins.shape}.{ins.type}", "pattern": name,
                "policy": policy, "cpi": round(cpi, 2),
                "bytes_per_clk": round(inf.lines * inf.line_bytes / cpi, 1),
                # the H200's measured rule and the packed bound (model)
                "h200_rule": model.wavefronts(ins, 0, "h200", stride=addr),
                "packed_bound": model.wavefronts(ins, 0, "packed", stride=addr),
                "latency": b[0]["done"] - b[0]["accepted"], "bank_cycles": b[0]["cycles"],
            })
            continue
        nbytes = 16 * 8 * ins.num
        rows.append({
            "instr": f"{ins.op} x{ins.num}", "pattern": name, "policy": policy,
            "cpi": round(cpi, 2), "bytes_per_clk": round(nbytes / cpi, 1),
            "h200_rule": model.wavefronts(ins, addr, "h200"),
            "packed_bound": model.wavefronts(ins, addr, "packed"),
            "latency": b[0]["done"] - b[0]["accepted"], "bank_cycles": b[0]["cycles"],
        })
    return rows


def bench_wmma_measured(sim: str) -> dict:
    """Every form and stride measured on the H200 (data/h200_wmma_cost.jsonl, offset 0) as
    a burst of 16 under both policies: cycles per instruction against the H200's measured
    clocks per instruction at saturation."""
    import math
    cost = [r for r in map(json.loads, (ROOT / "data/h200_wmma_cost.jsonl").read_text().splitlines())
            if r["kind"] == "cost" and r["offset"] == 0]
    out = {"cases": len(cost)}
    for policy in ("h200", "packed"):
        jobs = [{"burst": [{"form": forms.form_id(ptx.parse(r["instr"], "sm_90a")), "addr": 0,
                            "stride": r["stride"]}] * 16} for r in cost]
        results, _ = run_jobs(jobs, sim=sim, policy=policy)
        ratios, slower, worst = [], [], None
        for r, res in zip(cost, results):
            b = res["burst"]
            cpi = (b[-1]["done"] - b[0]["done"]) / (len(b) - 1)
            ratios.append(cpi / r["cpi"])
            if cpi > 1.05 * r["cpi"] + 0.3:
                slower.append(r["instr"])
                if worst is None or cpi / r["cpi"] > worst[2]:
                    worst = (r["instr"], r["stride"], round(cpi / r["cpi"], 2))
        out[policy] = {"geomean_cpi_over_h200": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3),
                       "best": round(min(ratios), 3), "slower_cases": len(slower),
                       "slower_forms": sorted(set(slower)), "worst": worst}
    return out


def wmma_measured_text(w: dict) -> str:
    out = (f"Every form and stride measured on the H200 at offset 0 ({w['cases']} cases), 16 back to "
           "back: the unit's clocks per instruction over the H200's.\n\n"
           "| policy | geometric mean | best | cases slower than the H200 (over 5 % + 0.3 clk) | worst |\n"
           "|---|---|---|---|---|\n")
    for policy in ("h200", "packed"):
        r = w[policy]
        worst = f"{r['worst'][0]} stride {r['worst'][1]}: {r['worst'][2]}×" if r["worst"] else "—"
        out += (f"| {policy} | {r['geomean_cpi_over_h200']} | {r['best']} | {r['slower_cases']} "
                f"({len(r['slower_forms'])} forms) | {worst} |\n")
    return out


#: wmma.load forms from global memory, one per fragment size, and their strides (bytes beyond
#: the leading dimension: packed lines, one 16-byte skew, each line on its own 4 KiB page)
GLOBAL_BENCH = ("wmma.load.b.sync.aligned.col.m8n8k32.global.s4",        # 128 B
                "wmma.load.a.sync.aligned.row.m16n16k16.global.s8",       # 256 B
                "wmma.load.a.sync.aligned.row.m16n16k16.global.f16",      # 512 B
                "wmma.load.c.sync.aligned.row.m8n8k4.global.f64",         # 512 B, 64-byte lines
                "wmma.load.c.sync.aligned.row.m16n16k16.global.f32")      # 1 KiB: two passes
GLOBAL_PADS = (0, 16, 4096)


def bench_global(sim: str) -> list[dict]:
    """Every fragment size from global memory (cocotbext-axi's AxiRam behind the AXI port, no
    pauses), 16 back to back at each stride: cycles per instruction, fragment bytes per clock,
    and the port's line beats per clock against its limit (one beat a clock)."""
    p = Params()
    lb = p.axi_data_bits // 8
    jobs, meta = [], []
    for text in GLOBAL_BENCH:
        ins = ptx.parse(text, "sm_90a")
        inf = forms.info(forms.form_id(ins))
        for pad in GLOBAL_PADS:
            sb = inf.least * inf.bits // 8 + pad
            stride = sb * 8 // inf.bits
            lines = sorted({(GMEM_AT + line * sb + 16 * k) // lb for line, k in
                            {(int(a), int(b) // 16) for a, b in layouts.wmma_byte_table(ins).reshape(-1, 2)}})
            jobs.append({"burst": [{"form": forms.form_id(ins), "addr": GMEM_AT, "stride": stride,
                                    "space": Space.GLOBAL.value}] * 16})
            meta.append((ins, inf, pad, sb, len(lines)))
    results, _ = run_jobs(jobs, sim=sim)
    rows = []
    for (ins, inf, pad, sb, lines), res in zip(meta, results):
        b = res["burst"]
        assert all(x["error"] == 0 for x in b), ins.form
        cpi = (b[-1]["done"] - b[0]["done"]) / (len(b) - 1)
        nbytes = inf.lines * inf.line_bytes
        rows.append({"instr": f"wmma {ins.frag}.{ins.layout}.{ins.shape}.{ins.type}", "bytes": nbytes,
                     "stride_bytes": sb, "lines": lines, "cpi": round(cpi, 2),
                     "bytes_per_clk": round(nbytes / cpi, 1), "port_beats_per_clk": round(lines / cpi, 2),
                     "latency": b[0]["done"] - b[0]["accepted"]})
    return rows


#: the latency sweep: AXI read latencies (clocks from a burst's address to its first beat) and
#: global ports (contexts, ids, burst), on contiguous fragments; the memory answers in order,
#: and for the deepest port also with the beats of all due bursts interleaved at random (each
#: id's in order)
SWEEP_LATENCY = (2, 25, 50, 100, 200, 400)
SWEEP_PORTS = ({**FPGA_GLOBAL_PORT, "axi_outstanding": 4, "axi_burst": 4},
               {"axi_contexts": 2, "axi_outstanding": 4, "axi_burst": 4},
               {"axi_contexts": 8, "axi_outstanding": 8, "axi_burst": 8}, DEEP_GLOBAL_PORT)
#: the ports measured with the interleaving memory: an id per burst, and the bursts on two ids
SWEEP_INTERLEAVED = (DEEP_GLOBAL_PORT, {**DEEP_GLOBAL_PORT, "axi_ids": 2})
SWEEP_FORM = "wmma.load.a.sync.aligned.row.m16n16k16.global.f16"


def _port_name(port: dict, reorder: bool) -> str:
    bits = port.get("axi_data_bits", Params().axi_data_bits)
    return ((f"{bits}-bit (the FPGA build), " if port.get("axi_data_bits") == FPGA_GLOBAL_PORT["axi_data_bits"]
             else "" if bits == Params().axi_data_bits else f"{bits}-bit, ")
            + f"{port['axi_contexts']} contexts, "
            + (f"{port['axi_outstanding']} bursts on {port['axi_ids']} ids" if port.get("axi_ids")
               else f"{port['axi_outstanding']} ids") + f", bursts of {port['axi_burst']}"
            + (", beats in any order" if reorder else ""))


def bench_latency(n: int = 128) -> list[dict]:
    """Global wmma.load over the AXI memory's latency and the global port's build: ``n``
    fragments back to back, each row after the last (512 contiguous bytes, 8 beats), on the
    native harness's memory (a beat a clock once due, no pauses)."""
    ins = ptx.parse(SWEEP_FORM, "sm_90a")
    inf = forms.info(forms.form_id(ins))
    nbytes = inf.lines * inf.line_bytes
    burst = [{"form": forms.form_id(ins), "addr": GMEM_AT + nbytes * k, "stride": inf.least,
              "space": Space.GLOBAL.value} for k in range(n)]
    rows = []
    for port, reorder in [*((port, False) for port in SWEEP_PORTS), *((port, True) for port in SWEEP_INTERLEAVED)]:
        for lat in SWEEP_LATENCY:
            results, _ = run_jobs([{"burst": burst}], sim="verilator", optimize=True,
                                  axi=AxiMemory(latency=lat, reorder=reorder),
                                  params={k: v for k, v in port.items() if v != getattr(Params(), k)})
            b = results[0]["burst"]
            assert not any(r["error"] for r in b)
            cpi = (b[-1]["done"] - b[0]["done"]) / (len(b) - 1)
            lines = nbytes // (port.get("axi_data_bits", Params().axi_data_bits) // 8)
            rows.append({"port": _port_name(port, reorder), "latency": lat, "cpi": round(cpi, 2),
                         "bytes_per_clk": round(nbytes / cpi, 1), "port_beats_per_clk": round(lines / cpi, 2),
                         "first_latency": b[0]["done"] - b[0]["accepted"]})
    return rows


def latency_table(rows) -> str:
    ports = list(dict.fromkeys(r["port"] for r in rows))
    out = (f"`{SWEEP_FORM}`, 512 contiguous bytes a fragment (8 beats of 64 B; 32 of 16 B on a 128-bit "
           "port), fragments back to back; "
           "the native harness's AXI memory answers a burst `latency` clocks after its address, then a "
           "beat a clock. Port beats per clock (limit 1; goal: 1 at 200 clocks) by the global port's "
           "build (`axi_contexts`, `axi_outstanding`, `axi_ids`, `axi_burst`); \"beats in any order\": each beat from any "
           "due burst that is the oldest of its id:\n\n"
           "| latency (clk) | " + " | ".join(ports) + " |\n|---|" + "---|" * len(ports) + "\n")
    for lat in sorted({r["latency"] for r in rows}):
        cells = [next(r for r in rows if r["latency"] == lat and r["port"] == o) for o in ports]
        out += f"| {lat} | " + " | ".join(f"{c['port_beats_per_clk']} ({c['cpi']} clk/instr)" for c in cells) + " |\n"
    return out


def global_table(rows) -> str:
    out = ("AXI port: 512-bit data (64 B a beat), 4 ids, bursts of up to 4 beats; cocotbext-axi's "
           "AxiRam, no pauses. The limit is one beat a clock.\n\n"
           "| instruction | fragment bytes | stride (bytes) | lines read | cycles/instr | fragment B/clk | "
           "port beats/clk | latency (clk) |\n|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        out += (f"| {r['instr']} | {r['bytes']} | {r['stride_bytes']} | {r['lines']} | {r['cpi']} | "
                f"{r['bytes_per_clk']} | {r['port_beats_per_clk']} | {r['latency']} |\n")
    return out


#: Public B200 (sm_100a) clocks of tcgen05.ld.32x32b by .num: four warps, idle Tensor Memory,
#: including tcgen05.wait::ld and one dependent use (docs/facts.md)
B200_32X32B = {1: 13, 2: 13, 4: 14, 8: 16, 16: 20, 32: 28, 64: 44}
#: Public B200 clocks of tcgen05.st.32x32b + wait::st by .num, one warp (docs/facts.md)
B200_ST_32X32B = {1: 13.0, 4: 14.6, 8: 16.2, 16: 21.6, 32: 31.5, 64: 49.8}
#: A quadrant's byte limit per clock: loads, the result port's two registers a beat (the
#: memory's four column accesses a step could give 512); stores, the store port's one register
TMEM_LIMIT = {"tcgen05.ld": 256, "tcgen05.st": 256}


#: instructions of one form back to back on one quadrant in the Tensor Memory bench
TMEM_BURST = 8


def bench_tmem(sim: str, banks: int = 2):
    """Every tcgen05.ld / tcgen05.st shape, .num and packing on quadrant 0, ``TMEM_BURST`` back
    to back (no back-pressure): clocks per instruction between the last beats of the first and
    the last, bytes per clock at that rate, and the first's latency (acceptance to last beat);
    then four quadrants at once. ``banks``: of each quadrant (1: the area build, native
    engine only)."""
    jobs, meta = [], []
    for ins, split in latency.tmem_forms():
        jobs.append({"tmem": {"0": [tmem_instr_job(ins, 0, 0, split)] * TMEM_BURST}})
        meta.append(ins)
    # four quadrants at once: 8 back-to-back 32x32b.x32 loads on every port
    ins4 = ptx.parse("tcgen05.ld.sync.aligned.32x32b.x32.b32", "sm_100a")
    jobs.append({"tmem": {str(q): [tmem_instr_job(ins4, (32 * q) << 16, q)] * 8 for q in range(4)}})
    results, _ = run_jobs(jobs, sim=sim, tmem_columns=512, **_banks(banks))
    rows = []
    for ins, res in zip(meta, results):
        burst = res["tmem"]["0"]
        assert all(b["error"] == 0 for one in burst for b in one["beats"]), ins.form
        cpi = (burst[-1]["done"] - burst[0]["done"]) / (len(burst) - 1)
        nbytes = 128 * ins.nregs
        row = {"instr": f"{ins.op} {ins.shape}{' pack' if ins.pack else ''}", "num": ins.num,
               "bytes": nbytes, "latency": burst[0]["done"] - burst[0]["accepted"], "cpi": round(cpi, 2),
               "bytes_per_clk": round(nbytes / cpi, 1), "limit": TMEM_LIMIT[ins.op]}
        if ins.shape == "32x32b" and not ins.pack:
            row["b200_clk"] = (B200_32X32B if ins.op == "tcgen05.ld" else B200_ST_32X32B).get(ins.num)
        rows.append(row)
    four = results[-1]["tmem"]
    first = min(p[0]["accepted"] for p in four.values())
    last = max(p[-1]["done"] for p in four.values())
    total = 4 * 8 * 128 * ins4.nregs
    return rows, {"instr": "tcgen05.ld 32x32b x32, 8 per quadrant, 4 quadrants", "bytes": total,
                  "cycles": last - first, "bytes_per_clk": round(total / (last - first), 1),
                  "goal": 4 * TMEM_LIMIT["tcgen05.ld"]}


#: copies of one form back to back in the copy bench
COPY_BURST = 4


def _banks(banks: int) -> dict:
    """run_jobs's arguments for quadrants of ``banks`` banks."""
    return {} if banks == 2 else {"params": {"tmem_banks": banks}}


def bench_copy(sim: str, banks: int = 2) -> list[dict]:
    """Every tcgen05.cp form, plain and with each source format, under each swizzle: a canonical
    layout (every step's chunks in eight quads), ``COPY_BURST`` copies back to back; the first
    copy's cycles from acceptance to its result beat, and the cycles a copy takes back to back
    (between result beats), against the 128 B/clk of the banks."""
    rng = np.random.default_rng(7)
    jobs, meta = [], []
    for f, (shape, cast) in enumerate(COPY_FORMS):
        rows_, bits = ptx.CP_SHAPES[shape]
        for fmt in (None, "b6x16_p32", "b4x16_p64"):
            for code in (0, 6, 4, 2):
                s = descriptor.SWIZZLE_BYTES[code]
                sbo, lbo = 8 * s * (2 if bits == 256 and code == 0 else 1), 8 * s
                matrix = rng.integers(0, 256, (rows_, bits // 8), dtype=np.uint8)
                smem = cute.place(matrix, 0, lbo, sbo, code, smem_bytes=16 * 1024)
                ins = ptx.parse(f"tcgen05.cp.cta_group::1.{shape}" + (f".{cast}" if cast else "")
                                + (f".b8x16.{fmt}" if fmt else ""), "sm_100a")
                fields = copy_fields(ins, descriptor.encode(0, lbo, sbo, code), 0)
                jobs.append({"cp": fields, "cps": [fields] * COPY_BURST, "image": smem.tobytes().hex(),
                             "smem_size": 16 * 1024, "tmem_dump": False})
                meta.append((ins, code, rows_ * bits // 8, max(rows_ // 8, 1) * bits // 128))
    results, _ = run_jobs(jobs, sim=sim, tmem_columns=512, **_banks(banks))
    out = []
    for (ins, code, nbytes, steps), res in zip(meta, results):
        cps = res["copies"]
        assert all(c["error"] == 0 for c in cps), ins.form
        each = (cps[-1]["done"] - cps[0]["done"]) / (len(cps) - 1)
        out.append({"instr": ins.form.replace("tcgen05.cp.cta_group::1.", ""),
                    "swizzle": descriptor.SWIZZLE_BYTES[code] if code else "none", "bytes": nbytes,
                    "latency": cps[0]["done"] - cps[0]["accepted"], "cycles_back_to_back": round(each, 1),
                    "bytes_per_clk": round(nbytes / each, 1), "steps": steps})
    return out


def copy_table(rows) -> str:
    out = ("A copy is read a step a cycle (a step's chunks lie in eight quads whatever the descriptor: "
           "formal/copy_specs.py; no layout pays the bank rule); bytes are those "
           "read from shared memory (a multicast writes them into two or four quadrants). Goal: "
           "128 B/clk (a .128x256b every 32 clocks back to back); a B200 takes about 64-68 clocks "
           "per 4 KiB copy in public microbenchmarks. A .4x256b is two steps (a quadrant takes four "
           "columns a step) and waits for its check.\n\n"
           "| copy | swizzle | bytes | steps | latency (clk) | clk per copy back to back | bytes/clk |\n"
           "|---|---|---|---|---|---|---|\n")
    for r in rows:
        out += (f"| {r['instr']} | {r['swizzle']} | {r['bytes']} | {r['steps']} | {r['latency']} | "
                f"{r['cycles_back_to_back']} | {r['bytes_per_clk']} |\n")
    return out


def tmem_table(rows, four) -> str:
    out = (f"{TMEM_BURST} instructions of a form back to back on quadrant 0; clocks per instruction between "
           "last beats, bytes per clock at that rate against the port's limit, and the first instruction's "
           "latency beside the B200's (32x32b, the one shape measured; the latency report bounds them).\n\n"
           "| instruction | .num | clk/instr | bytes/clk | limit | latency (clk) | B200 clk |\n"
           "|---|---|---|---|---|---|---|\n")
    for r in rows:
        out += (f"| {r['instr']} | x{r['num']} | {r['cpi']} | {r['bytes_per_clk']} | {r['limit']} | "
                f"{r['latency']} | {r.get('b200_clk') or ''} |\n")
    out += (f"\nFour quadrants at once: {four['instr']}: {four['bytes']} bytes in {four['cycles']} clocks, "
            f"{four['bytes_per_clk']} B/clk (goal {four['goal']}).\n")
    return out


def plot_tmem(rows, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, op in zip(axes, ("tcgen05.ld", "tcgen05.st")):
        for instr in sorted({r["instr"] for r in rows if r["instr"].startswith(op)}):
            pts = sorted((r["num"], r["bytes_per_clk"]) for r in rows if r["instr"] == instr)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=instr.split(" ", 1)[1])
        if op == "tcgen05.ld":
            b = sorted(B200_32X32B.items())
            ax.plot([n for n, _ in b], [128 * n / c for n, c in b], "k:", marker="x",
                    label="B200 32x32b: bytes / latency (incl. wait + use)")
        ax.axhline(TMEM_LIMIT[op], color="k", linestyle="--", linewidth=1,
                   label=f"{TMEM_LIMIT[op]} B/clk port limit")
        ax.axhline(128, color="grey", linestyle="--", linewidth=1, label="128 B/clk goal")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(".num")
        ax.set_title(f"{op}: one quadrant, {TMEM_BURST} back to back")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("bytes per clock")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


#: instructions of the GEMM mainloop's stream in the bench (`make gemm N=1000000` for more)
GEMM_N = 20000


def gemm_table(runs) -> str:
    out = ("tb/gemm.py: a CUTLASS-style f16 GEMM's ldmatrix.x4 / stmatrix.x4 stream over Swizzle<3,4,3> "
           "tiles of 128-byte rows, back to back in bursts of 256; the RTL's data and bank cycles are checked "
           "against the model's. *cycles* and *B/clk* run from each burst's first acceptance to its last beat, "
           "so they hold one pipeline fill a burst; *back to back* is the rate after a burst's first "
           "instruction (the throughput contract), *fill* that first instruction's clocks.\n\n"
           "| policy | instructions | failures | cycles | B/clk | back to back B/clk | fill | bank cycles | "
           "model's bank cycles | B/clk at the bank rule |\n|---|---|---|---|---|---|---|---|---|---|\n")
    for t in runs:
        out += (f"| {t['policy']} | {t['instructions']} | {t['failures']} | {t['cycles']} | {t['bytes_per_clk']} | "
                f"{t['steady_bytes_per_clk']} | {t['fill']} | "
                f"{t['bank_cycles']} | {t['model_cycles']} | {t['model_bytes_per_clk']} |\n")
    return out


def _mix(n: int) -> dict:
    """The random regression's instructions (every form, conflicts, refusals) as one burst."""
    import regress
    jobs, _, _ = regress.make_jobs(n, seed=5, policy="h200", smem_bytes=16 * 1024)
    flat = []
    for j in jobs:
        flat += j["burst"] if "burst" in j else [{k: j[k] for k in ("form", "addr", "stride", "store") if k in j}]
    return {"burst": flat, "image": jobs[0]["image"]}


def _streams(n: int) -> list[tuple[str, int, dict]]:
    """(name, Tensor Memory columns, job) of the streams the native bench is timed on."""
    x4 = {"form": forms.form_id(ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")),
          "addr": [16 * t for t in range(32)]}
    st4 = {"form": forms.form_id(ptx.parse("stmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")),
           "addr": [16 * t for t in range(32)], "store": [list(range(32))] * 4}
    wmma = {"form": forms.form_id(ptx.parse("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16", "sm_90a")),
            "addr": 0, "stride": 16}
    ld = ptx.parse("tcgen05.ld.sync.aligned.32x32b.x16.b32", "sm_100a")
    st = ptx.parse("tcgen05.st.sync.aligned.32x32b.x16.b32", "sm_100a")
    cp = ptx.parse("tcgen05.cp.cta_group::1.128x256b", "sm_100a")
    per_q = n // 4
    return [
        ("ldmatrix.x4, conflict-free", 0, {"burst": [x4] * n, "image": ""}),
        ("stmatrix.x4, conflict-free", 0, {"burst": [st4] * n, "image": ""}),
        ("wmma.load.a m16n16k16 .f16", 0, {"burst": [wmma] * n, "image": ""}),
        ("random regression mix", 0, _mix(n)),
        ("tcgen05.ld 32x32b.x16, 4 quadrants", 512,
         {"tmem": {str(q): [tmem_instr_job(ld, (32 * q) << 16, q)] * per_q for q in range(4)}}),
        ("tcgen05.st 32x32b.x16, 4 quadrants", 512,
         {"tmem": {str(q): [tmem_instr_job(st, (32 * q) << 16, q)] * per_q for q in range(4)}}),
        ("tcgen05.cp 128x256b", 512,
         {"cp": copy_fields(cp, descriptor.encode(0, 128, 256), 0), "image": "", "tmem_dump": False,
          "cps": [copy_fields(cp, descriptor.encode(0, 128, 256), 0)] * (n // 16)}),
    ]


def _span(res: dict) -> tuple[int, int]:
    """(instructions, cycles from the first taken to the last answered) of a timed job; every
    instruction of a stream but the mix's must pass."""
    if "burst" in res:
        b = res["burst"]
        return len(b), b[-1]["done"] - b[0]["accepted"]
    if "tmem" in res:
        ports = list(res["tmem"].values())
        assert all(not b["error"] for p in ports for i in p for b in i["beats"])
        return (sum(len(p) for p in ports),
                max(p[-1]["done"] for p in ports) - min(p[0]["accepted"] for p in ports))
    assert not any(c["error"] for c in res["copies"])
    return len(res["copies"]), res["copies"][-1]["done"] - res["copies"][0]["accepted"]


#: the builds the speed rows run on
UNIT_FULL, UNIT_SHARED = "no Tensor Memory, global port", "no Tensor Memory, no global port"


def sim_speed(n_cocotb: int = 400, n_native: int = 20000) -> list[dict]:
    """Instructions and cycles a second of simulation: the regression's mix on every engine
    (Icarus and Verilator under cocotb, Verilator under the native harness), then each timed
    stream on the native harness; the harness's seconds are its own (not the host's)."""
    rows = []
    for sim, engine, n in (("icarus", "cocotb", n_cocotb), ("verilator", "cocotb", n_cocotb),
                           ("verilator", "native", n_native)):
        results, sim_s = run_jobs([_mix(n)], sim=sim, engine=engine, optimize=True)
        count, cycles = _span(results[0])
        rows.append({"simulator": sim, "engine": engine, "stream": "random regression mix", "unit": UNIT_FULL,
                     "instructions": count, "seconds": round(sim_s, 2),
                     "instructions_per_s": round(count / sim_s), "cycles_per_s": round(cycles / sim_s)})
    base = rows[1]["instructions_per_s"]
    rows[-1]["vs_cocotb_verilator"] = round(rows[-1]["instructions_per_s"] / base, 1)
    for name, cols, job in _streams(n_native):
        if name == "random regression mix":
            continue
        # a build per family, as replay takes: a shared-memory stream on the unit without global
        # port, a Tensor Memory one on the unit with its quadrants
        params = {} if cols else {"global_bytes": 0}
        results, sim_s = run_jobs([job], sim="verilator", tmem_columns=cols, optimize=True, params=params)
        if "burst" in job:
            assert not any(r["error"] for r in results[0]["burst"]), name
        count, cycles = _span(results[0])
        rows.append({"simulator": "verilator", "engine": "native", "stream": name, "instructions": count,
                     "unit": f"{cols} columns of Tensor Memory, global port" if cols else UNIT_SHARED,
                     "seconds": round(sim_s, 2), "instructions_per_s": round(count / sim_s),
                     "cycles_per_s": round(cycles / sim_s), "cycles_per_instruction": round(cycles / count, 2)})
    return rows


#: The forms of the replay-speed traces, in turn (address-only records).
REPLAY_FORMS = {"ldmatrix": ("ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                             "ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
                "stmatrix": ("stmatrix.sync.aligned.m8n8.x1.shared.b16", "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                             "stmatrix.sync.aligned.m8n8.x4.shared.b16")}


def replay_trace(path: Path, op: str, n: int, seed: int = 7) -> int:
    """``n`` independent address-only records of ``op`` (x1, x2.trans, x4 in turn; random rows
    of 16 KiB, distinct for a store) with the model's bank cycles as their expectation; returns
    the cycles they add up to."""
    rng, total = random.Random(seed), 0
    with open(path, "w") as f:
        for k in range(n):
            text = REPLAY_FORMS[op][k % 3]
            rows = rng.sample(range(1024), 32) if op == "stmatrix" else [rng.randrange(1024) for _ in range(32)]
            addr = [16 * r for r in rows]
            cycles = model.wavefronts(ptx.parse(text, "sm_90a"), addr)
            total += cycles
            f.write(json.dumps({"instr": text, "addr": addr, "expect": {"wavefronts": cycles}}) + "\n")
    return total


#: The replay-speed traces' lengths: the issue's, and one long enough that Python's start and
#: imports (about 0.3 s) no longer weigh.
REPLAY_RECORDS = (20000, 200000)


def replay_speed(sizes=REPLAY_RECORDS) -> list[dict]:
    """``tensorlsu replay --backend rtl --sim verilator`` of address-only ldmatrix and stmatrix
    traces: the whole command's wall time on its second run (the build cached), reading,
    running and checking included, and the seconds it says it spent simulating."""
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            for op in REPLAY_FORMS:
                path = Path(d) / f"{op}.jsonl"
                cycles = replay_trace(path, op, n)
                cmd = [sys.executable, "-m", "tensorlsu.cosim", "replay", str(path), "--backend", "rtl",
                       "--sim", "verilator", "--build-dir", str(ROOT / "build")]
                for _ in range(2):          # the first run builds
                    t0 = time.perf_counter()
                    run = subprocess.run(cmd, capture_output=True, text=True)
                    wall = time.perf_counter() - t0
                assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
                sim = re.search(r"verilator ([\d.]+) s simulating", run.stdout)
                rows.append({"trace": f"{n} address-only {op} records (x1, x2.trans, x4; random rows)",
                             "records": n, "seconds": round(wall, 2), "records_per_s": round(n / wall),
                             "sim_seconds": float(sim.group(1)) if sim else None, "bank_cycles": cycles})
    return rows


def replay_table(rows) -> str:
    out = ("The whole command's wall time, second run (the build cached): Python's start, reading, "
           "running and checking; simulating: the harness's own seconds in it. Goal: 50,000 records/s."
           "\n\n| trace | seconds | records/s | simulating (s) | bank cycles |\n|---|---|---|---|---|\n")
    for r in rows:
        out += (f"| {r['trace']} | {r['seconds']} | {r['records_per_s']} | {r['sim_seconds']} | "
                f"{r['bank_cycles']} |\n")
    return out


def speed_table(rows) -> str:
    out = ("Seconds are the simulator's (cocotb: the test, its Python driving the ports included; native: "
           "the harness's clock cycles, not the host making jobs or checking results). Goal: 50,000 "
           "instructions/s.\n\n| simulator | engine | stream | unit | instructions | instructions/s | "
           "cycles/s | clk/instr | x cocotb Verilator |\n|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        out += (f"| {r['simulator']} | {r['engine']} | {r['stream']} | {r['unit']} | "
                f"{r['instructions']} | "
                f"{r['instructions_per_s']} | {r['cycles_per_s']} | {r.get('cycles_per_instruction', '')} | "
                f"{r.get('vs_cocotb_verilator', '')} |\n")
    return out


def table(rows) -> str:
    out = ("| instruction | pattern | policy | cycles/instr | bytes/clk | H200 rule | packed bound | "
           "latency | \n|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        out += (f"| {r['instr']} | {r['pattern']} | {r['policy']} | {r['cpi']} | {r['bytes_per_clk']} | "
                f"{r['h200_rule']} | {r['packed_bound']} | {r['latency']} |\n")
    return out


def plot(rows, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(11, 4.5))
    labels = sorted({(r["instr"], r["pattern"]) for r in rows})
    x = range(len(labels))
    for k, policy in enumerate(("h200", "packed")):
        vals = [next((r["bytes_per_clk"] for r in rows if (r["instr"], r["pattern"]) == lab
                      and r["policy"] == policy), 0) for lab in labels]
        ax.bar([i + 0.4 * k for i in x], vals, width=0.4, label=f"RTL, {policy}")
    ax.axhline(LINE, color="k", linestyle="--", linewidth=1, label="128 B/clk bank limit")
    ax.set_xticks([i + 0.2 for i in x])
    ax.set_xticklabels([f"{a}\n{b}" for a, b in labels], rotation=90, fontsize=7)
    ax.set_ylabel("bytes per clock")
    ax.set_title("tensorlsu: shared-memory bandwidth at saturation")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


#: the bench's parts, in report order
PARTS = ("patterns", "gemm", "wmma", "global", "sweep", "tmem", "copy", "area", "latency", "speed", "replay")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "reports"))
    ap.add_argument("--sims", nargs="*", default=["icarus", "verilator"])
    ap.add_argument("--parts", nargs="*", choices=PARTS, default=list(PARTS),
                    help="the parts to run (default: all); the report holds those run")
    args = ap.parse_args(argv)
    parts, res, md = set(args.parts), {}, "# Benchmarks\n"
    if "patterns" in parts:
        res["patterns"] = rows = [r for policy in ("h200", "packed")
                                  for r in bench_patterns(args.sims[0], policy, random.Random(2026))]
        md += "\n## Shared memory\n\n" + table(rows)
    if "gemm" in parts:
        mainloop = [gemm.run(GEMM_N, policy) for policy in ("h200", "packed")]
        res["gemm"] = [{k: v for k, v in g.items() if k != "fails"} for g in mainloop]
        md += "\n\n### A GEMM mainloop\n\n" + gemm_table(mainloop)
    if "wmma" in parts:
        res["wmma_measured"] = measured = bench_wmma_measured(args.sims[-1])
        md += "\n\n### wmma.load against the H200\n\n" + wmma_measured_text(measured)
    if "global" in parts:
        res["global"] = glob = bench_global(args.sims[0])
        md += "\n\n## Global memory\n\n" + global_table(glob)
    if "sweep" in parts:
        res["latency"] = sweep = bench_latency()
        md += "\n\n### AXI latency\n\n" + latency_table(sweep)
    if "tmem" in parts:
        tmem_rows, res["tmem_four"] = bench_tmem(args.sims[0])
        res["tmem"] = tmem_rows
        md += "\n\n## Tensor Memory\n\n" + tmem_table(tmem_rows, res["tmem_four"])
    if "copy" in parts:
        res["copy"] = copies = bench_copy(args.sims[0])
        md += "\n\n## tcgen05.cp\n\n" + copy_table(copies)
    if "area" in parts:
        # the area build: one two-ported bank a quadrant (a build parameter, on Verilator)
        rows, four = bench_tmem("verilator", banks=1)
        res["area_build"] = {"tmem": rows, "tmem_four": four, "copy": bench_copy("verilator", banks=1)}
        md += ("\n\n## The area build (`tmem_banks=1`: one two-ported bank a quadrant)\n\n"
               "32x32b loads and stores keep their rates; the 16-lane forms, 32x32b .pack / .unpack and "
               "tcgen05.cp take half "
               "(docs/ARCHITECTURE.md).\n\n### Tensor Memory\n\n" + tmem_table(rows, four)
               + "\n### tcgen05.cp\n\nGoal for this build: 64 B/clk (a B200's public figure).\n\n"
               + copy_table(res["area_build"]["copy"]))
    if "latency" in parts:
        res["forms_latency"] = lat = latency.measure()
        md += "\n\n## Latency of every form against the silicon\n\n" + latency.table(lat)
    if "speed" in parts:
        res["simulation"] = speeds = sim_speed()
        md += "\n\n## Simulation speed\n\n" + speed_table(speeds)
    if "replay" in parts:
        res["replay"] = rep = replay_speed()
        md += "\n\n### Trace replay through the RTL\n\n" + replay_table(rep)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(res, indent=1))
    (out / "bench.md").write_text(md)
    if "patterns" in parts:
        plot(res["patterns"], out / "bench.png")
    if "tmem" in parts:
        plot_tmem(res["tmem"], out / "bench_tmem.png")
    print(md)
    # at saturation the h200 policy must not be slower than its bank rule (x1 excepted: three
    # entries of four cycles each bound it to 4/3 clocks)
    bad = [r for r in res.get("patterns", []) if r["policy"] == "h200" and r["instr"].split()[0] in ("ldmatrix", "stmatrix")
           and r["cpi"] > max(r["h200_rule"], 4 / 3 if r["instr"].endswith("x1") else 0) + 0.01]
    for r in bad:
        print(f"bench: {r['instr']} {r['pattern']} takes {r['cpi']} clocks, rule {r['h200_rule']}")
    return 1 if bad or any(g["failures"] for g in res.get("gemm", [])) else 0


if __name__ == "__main__":
    sys.exit(main())
