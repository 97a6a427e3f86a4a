"""Where an ECP5 netlist's cells go: LUT4, flip-flops, carry cells, wide multiplexers, LUT RAM,
block RAM and DSP blocks per component of the design, from the JSON netlist Yosys writes.

A flip-flop, RAM or DSP cell belongs to the component in its name (Yosys names a block RAM after
its memory, a flip-flop after its net), or where Yosys made the name up, in the name of the net
it drives (:func:`asic.component_path`: ``fetch.rows.lane3`` is ``fetch``'s; a name without a
dot, such as a port register's, is ``top``'s). A logic cell belongs to the component of the
nearest of those it feeds (:func:`asic.give_to_nearest`); logic that feeds only the block's
outputs is ``top``'s. So the logic between two stages counts for the later one.
"""

from __future__ import annotations

from collections import Counter

from asic import component_path, give_to_nearest

__all__ = ["KINDS", "by_component"]

#: the cell kinds counted, in the report's order
KINDS = ("LUT4", "TRELLIS_FF", "CCU2C", "PFUMX", "L6MUX21", "TRELLIS_DPR16X4", "DP16KD", "MULT18X18D")
#: the cells a search starts from: they hold state or are hard blocks
_SINKS = {"TRELLIS_FF", "TRELLIS_DPR16X4", "DP16KD", "MULT18X18D"}


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
    owner: dict[str, str] = {}
    for cname, cell in cells.items():
        if cell["type"] not in _SINKS:
            continue
        outs = [b for pin, bits in cell["connections"].items()
                if cell["port_directions"].get(pin) == "output" for b in bits if isinstance(b, int)]
        named = cname if not cname.startswith("$") else next((bit_name[b] for b in outs if b in bit_name), cname)
        owner[cname] = component_path(named, depth)
    give_to_nearest(cells, owner)
    counts: dict[str, Counter] = {}
    for cname, cell in cells.items():
        if cell["type"] in KINDS:
            counts.setdefault(owner.get(cname, "top"), Counter())[cell["type"]] += 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]["LUT4"]))
