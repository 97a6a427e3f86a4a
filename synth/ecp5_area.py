"""Where an ECP5 netlist's cells go: LUT4, flip-flops, carry cells, wide multiplexers, LUT RAM,
block RAM and DSP blocks per component of the design, from the JSON netlist Yosys writes.

A flip-flop, RAM or DSP cell belongs to the component in its name (Yosys names a block RAM after
its memory, a flip-flop after its net), or where Yosys made the name up, in the name of the net it
drives (the first part of ``fetch.rows.lane3``: ``fetch``; Amaranth's ``$N`` suffixes dropped; a
name without a dot, such as a port register's, is ``top``'s). A logic cell belongs to the component of the nearest of those
cells whose inputs it feeds (a breadth-first search backwards from all of them at once; a cell
that feeds several goes to the first reached, so shared logic is counted once); logic that feeds
only the block's outputs is ``top``'s. So the logic between two stages counts for the later one.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["KINDS", "by_component"]

#: the cell kinds counted, in the report's order
KINDS = ("LUT4", "TRELLIS_FF", "CCU2C", "PFUMX", "L6MUX21", "TRELLIS_DPR16X4", "DP16KD", "MULT18X18D")
#: the cells a search starts from: they hold state or are hard blocks
_SINKS = {"TRELLIS_FF", "TRELLIS_DPR16X4", "DP16KD", "MULT18X18D"}


def _component(name: str, depth: int) -> str:
    parts = [re.sub(r"\$\d+$", "", p) for p in name.split(".")[:-1]]
    return ".".join(parts[:depth]) or "top"


def by_component(netlist: dict, top: str = "top", depth: int = 1) -> dict[str, Counter]:
    """Cell counts (:data:`KINDS`) per component of the flattened module ``top``, the most LUT4
    first."""
    mod = netlist["modules"][top]
    cells = mod["cells"]
    bit_name: dict[int, str] = {}
    for name, net in mod["netnames"].items():
        if not net.get("hide_name"):
            for b in net["bits"]:
                if isinstance(b, int):
                    bit_name.setdefault(b, name)
    driver: dict[int, str] = {}
    for cname, cell in cells.items():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) == "output":
                driver.update((b, cname) for b in bits if isinstance(b, int))
    owner: dict[str, str] = {}
    counts: dict[str, Counter] = {}
    frontier = []
    for cname, cell in cells.items():
        if cell["type"] not in _SINKS:
            continue
        outs = [b for pin, bits in cell["connections"].items()
                if cell["port_directions"].get(pin) == "output" for b in bits if isinstance(b, int)]
        named = cname if not cname.startswith("$") else next((bit_name[b] for b in outs if b in bit_name), cname)
        owner[cname] = _component(named, depth)
        frontier.append(cname)
    while frontier:
        nxt = []
        for cname in frontier:
            cell = cells[cname]
            for pin, bits in cell["connections"].items():
                if cell["port_directions"].get(pin) != "input":
                    continue
                for b in bits:
                    src = driver.get(b) if isinstance(b, int) else None
                    if src is not None and src not in owner:
                        owner[src] = owner[cname]
                        nxt.append(src)
        frontier = nxt
    for cname, cell in cells.items():
        if cell["type"] in KINDS:
            counts.setdefault(owner.get(cname, "top"), Counter())[cell["type"]] += 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]["LUT4"]))
