#!/usr/bin/env python3
"""Rank the register-to-register paths of a mapped ECP5 netlist, before routing finishes.

    python synth/paths.py build/synth/unit_h200/top.json [--show NAME]

nextpnr prints its critical path only after routing, which takes hours for the whole unit.
This adds cell delays (LUT4, PFUMX, L6MUX21, CCU2C carry, block-RAM clock to output) and a
fixed delay per routed net along every path from a register or block RAM to a register or
block-RAM input (multipliers count as combinational: synth_ecp5 maps a product without their
registers), then prints the worst paths grouped by their start and end registers. The
figures rank paths; they do not predict the routed clock (routing delays vary).
"""

import argparse
import json
import re
import sys

NET_NS = 0.9                    # per routed net: a rough average for the ECP5 fabric
# combinational cells (a MULT18X18D without its registers, as synth_ecp5 maps a product: a
# rough figure)
CELL_NS = {"LUT4": 0.45, "PFUMX": 0.25, "L6MUX21": 0.25, "MULT18X18D": 4.0}
# sequential cells: clock to output
SEQ_NS = {"TRELLIS_FF": 0.55, "DP16KD": 4.3, "TRELLIS_DPR16X4": 1.5}
SETUP_NS = 0.2
CLOCKS = ("CLK", "CLKA", "CLKB", "WCK")


def analyse(netlist: dict, top: str):
    mod = netlist["modules"][top]
    cells = mod["cells"]
    names = {}
    for n, v in mod["netnames"].items():
        for i, b in enumerate(v["bits"]):
            if isinstance(b, int):
                nm = f"{n}[{i}]" if len(v["bits"]) > 1 else n
                if b not in names or (names[b].startswith("$") and not n.startswith("$")):
                    names[b] = nm
    driver = {}
    for cn, c in cells.items():
        for port, bits in c["connections"].items():
            if c["port_directions"].get(port) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = (cn, port)
    arrival = {}                # bit -> (ns, previous bit, driving cell)

    def bit_time(b):
        if b in arrival:
            return arrival[b]
        arrival[b] = (float("-inf"), None, None)    # inputs, constants, loops
        if b not in driver:
            return arrival[b]
        cn, out = driver[b]
        c = cells[cn]
        if c["type"] in SEQ_NS:
            arrival[b] = (SEQ_NS[c["type"]], None, cn)
            return arrival[b]
        best = (float("-inf"), None)
        for port, bits in c["connections"].items():
            if c["port_directions"].get(port) != "input":
                continue
            for x in bits:
                if not isinstance(x, int):
                    continue
                if c["type"] == "CCU2C":
                    delay = (0.06 if out == "COUT" else 0.3) if port == "CIN" else 0.5 + NET_NS
                elif c["type"] in ("PFUMX", "L6MUX21") and port != "SD":
                    delay = CELL_NS[c["type"]]          # inside the slice
                else:
                    delay = CELL_NS.get(c["type"], 0.5) + NET_NS
                t = bit_time(x)[0] + delay
                if t > best[0]:
                    best = (t, x)
        arrival[b] = (best[0], best[1], cn)
        return arrival[b]

    ends = []
    for cn, c in cells.items():
        if c["type"] not in SEQ_NS:
            continue
        for port, bits in c["connections"].items():
            if c["port_directions"].get(port) != "input" or port in CLOCKS:
                continue
            for b in bits:
                if isinstance(b, int):
                    t = bit_time(b)[0]
                    if t > float("-inf"):
                        ends.append((t + NET_NS + SETUP_NS, b, cn))
    ends.sort(key=lambda e: -e[0])
    return cells, names, arrival, ends


def trace(b, arrival):
    path = []
    while b is not None:
        t, prev, cn = arrival[b]
        path.append((t, b, cn))
        b = prev
    return path


def base(name) -> str:
    return re.sub(r"(_TRELLIS_FF_Q.*|\[\d+\]|\d+)$", "", str(name))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("netlist", help="Yosys JSON after synth_ecp5")
    ap.add_argument("--top", default="top")
    ap.add_argument("--groups", type=int, default=30, help="worst (start, end) groups to list")
    ap.add_argument("--show", help="print the worst path into an end whose name contains this")
    args = ap.parse_args(argv)
    sys.setrecursionlimit(1_000_000)
    cells, names, arrival, ends = analyse(json.load(open(args.netlist)), args.top)
    groups = {}
    for t, b, cn in ends:
        path = trace(b, arrival)
        start = names.get(path[-1][1], path[-1][1])
        end = names.get(b, b) if cells[cn]["type"] == "TRELLIS_FF" else f"{cells[cn]['type']}"
        key = (base(start), base(end))
        groups[key] = max(groups.get(key, 0), t)
    print(f"{'ns':>6}  start -> end")
    for (s, e), t in sorted(groups.items(), key=lambda kv: -kv[1])[:args.groups]:
        print(f"{t:6.2f}  {s} -> {e}")
    if args.show:
        for t, b, cn in ends:
            if args.show in str(names.get(b, b)):
                print(f"\nworst path into {names.get(b, b)}: {t:.2f} ns")
                for tt, x, c in trace(b, arrival):
                    print(f"  {tt:6.2f}  {cells[c]['type'] if c else '':10} {str(names.get(x, x))[:100]}")
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
