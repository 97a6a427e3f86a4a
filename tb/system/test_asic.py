"""The ASIC flow (synth/asic.py): a short run in every test suite, the memories on SRAM macros
from RTLIL and from the emitted Verilog, and the netlist steps around the tools."""

import json
import subprocess
import sys

import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.back import rtlil
from conftest import ROOT
from tensorlsu.hdl.gmem.fetch import GlobalFetch
from tensorlsu.hdl.gmem.rows import FetchRows
from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import Params, TmemParams
from tensorlsu.hdl.smem.banks import SharedBanks
from tensorlsu.hdl.tmem.banks import TmemBanks
from tensorlsu.hdl.verilog.emit import verilog_text

sys.path.insert(0, str(ROOT / "synth"))
import asic  # noqa: E402
import ecp5_area  # noqa: E402


def test_asic_smoke(tmp_path):
    """The decompressor maps onto ASAP7 cells and OpenSTA times it: area by kind, a named
    register-to-register path, and the Fmax it gives."""
    r = subprocess.run([sys.executable, "synth/run.py", "--flows", "asic", "--blocks", "decompress",
                        "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    [row] = json.loads((tmp_path / "asic.json").read_text())
    assert row["logic_um2"] > 10 and row["ff_um2"] > 10 and row["macros"] == 0
    # the wrapper's input and output registers: one per port bit (decompress: 8 + 8 + 128 + ...)
    assert row["ffs"] > 150
    reg = row["paths"]["clk"]
    assert reg["start"].endswith("_reg") and reg["end"].endswith("_reg") and reg["cells"] >= 3
    # a few gates between registers: far above 2 GHz, far below what a single gate would give
    assert 2000 < row["reg2reg_fmax_mhz"] < 20000
    text = (tmp_path / "asic.md").read_text()
    assert "no placement, no wires" in text and "| decompress | h200 | RTLIL |" in text


def test_census_counts_the_registers_that_miss_the_goal(tmp_path):
    """At a clock goal the decompressor cannot meet (150 ps), the report lists the register
    inputs that miss it by component; the worst among them is the worst register-to-register
    path's end, with the same slack."""
    r = subprocess.run([sys.executable, "synth/run.py", "--flows", "asic", "--blocks", "decompress",
                        "--period-ps", "150", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    [row] = json.loads((tmp_path / "asic.json").read_text())
    census, reg = row["census"], row["paths"]["clk"]
    assert reg["slack_ps"] < 0 and census
    worst = min(v["worst_slack_ps"] for v in census.values())
    assert worst == pytest.approx(reg["slack_ps"], abs=0.1)
    assert census[asic.component_of(reg["end"])]["worst_slack_ps"] == worst
    # no more inputs miss than there are flip-flops; those that start late paths were enlarged
    assert 0 < sum(v["missing"] for v in census.values()) <= row["ffs"]
    assert row["flops_upsized"] > 0
    assert "miss 150 ps, by component" in (tmp_path / "asic.md").read_text()


class _RegisteredAdder(Elaboratable):
    """Two 32-bit registers and their sum, registered."""

    def __init__(self):
        self.a, self.b, self.sum = Signal(32), Signal(32), Signal(32)

    def elaborate(self, platform):
        m = Module()
        ra, rb = Signal(32), Signal(32)
        m.d.sync += [ra.eq(self.a), rb.eq(self.b), self.sum.eq(ra + rb)]
        return m


def test_an_adder_keeps_its_prefix_tree(tmp_path):
    """The carries go to ABC as a prefix tree; ABC's commands must keep it (an area-first
    rewrite folds it into a ripple chain: 18 cells, 150 ps late)."""
    dut = _RegisteredAdder()
    row = asic.run("adder", rtlil.convert(dut, name="top", ports=[dut.a, dut.b, dut.sum]), tmp_path / "adder",
                   say=lambda *a: None)
    reg = row["paths"]["clk"]
    assert reg["cells"] <= 12 and reg["slack_ps"] > 100, reg


def test_abc_gets_its_delay_goal(tmp_path):
    """ABC reads a script file as it is (Yosys fills ``{D}`` in its own scripts only): the goal,
    the period less the flip-flops' share, is written into the script the flow hands it."""
    dut = _RegisteredAdder()
    asic.run("adder", rtlil.convert(dut, name="top", ports=[dut.a, dut.b, dut.sum]), tmp_path / "adder",
             period_ps=600, say=lambda *a: None)
    script = (tmp_path / "adder" / "abc.script").read_text()
    assert "{D}" not in script
    assert script.count(f"-D {600 - asic.FLOP_OVERHEAD_PS}") == 3, script


class _CopiedRegister(Elaboratable):
    """One register and a copy of it (the same input), each driving its own logic."""

    def __init__(self, keep: bool):
        self.keep, self.a, self.x, self.y, self.z = keep, Signal(8), Signal(8), Signal(8), Signal(8)

    def elaborate(self, platform):
        m = Module()
        attrs = {"keep": 1} if self.keep else {}
        r, copy = Signal(8, attrs=attrs), Signal(8, attrs=attrs)
        m.d.sync += [r.eq(self.a), copy.eq(self.a), self.y.eq(r & self.x), self.z.eq(copy ^ self.x)]
        return m


def test_registers_marked_keep_stay_copies(tmp_path):
    """A register copied on purpose (its wire says ``keep``) keeps its own flip-flops; an
    unmarked copy is merged into the original."""
    ffs = {}
    for keep in (False, True):
        dut = _CopiedRegister(keep)
        row = asic.run("copies", rtlil.convert(dut, name="top", ports=[dut.a, dut.x, dut.y, dut.z]),
                       tmp_path / f"copies{int(keep)}", say=lambda *a: None)
        ffs[keep] = row["ffs"]
    assert ffs[True] == ffs[False] + 8, ffs


def test_component_of_names_the_top_level_component():
    assert asic.component_of("fetch.rows.lane3[0][63]_reg/D") == "fetch"
    assert asic.component_of("dut.steps.var[3]_reg/D") == "steps"
    assert asic.component_of("dut.valid_reg/D") == "top"
    assert asic.component_of("out[17]_reg/D") == "top"
    assert asic.component_of("dut.store$144.w_data__0__1[966]_reg/D") == "store"
    assert asic.component_of("tmem2/store$144.w_data__1__0[330]_reg/D") == "tmem2"
    assert asic.component_of("tmem3/banks.bank1.0.0.mem.0.16/addr_in_A[3]") == "tmem3"


@pytest.mark.parametrize("verilog", [False, True], ids=["rtlil", "emitted-verilog"])
def test_shared_memory_lands_on_macros(verilog):
    """The shared-memory banks (8 quads of 128 lines x 128 bits) become SRAM macros, not flip-flops,
    whether Yosys reads Amaranth's RTLIL or the emitted Verilog (its SRAM modules)."""
    params = Params()
    dut = SharedBanks(params)
    source = verilog_text(dut, "top") if verilog else rtlil.convert(dut, name="top")
    # (the YoWASP tools see a private /tmp: the work folder is under build/)
    work = ROOT / "build" / "test_asic" / ("banks_v" if verilog else "banks_il")
    row = asic.run("banks", source, work, verilog=verilog, say=lambda _: None)
    bits = 8 * 128 * 128
    assert row["macros"] >= 8
    assert sum(asic_bits(k) for k in row["macro_kinds"]) > 0
    # the banks hold 128 kbit; what is left in flip-flops is the macros' input registers (a
    # quad's line, read and write enables and write row) and the dump state, not the memory
    inputs = params.quads * (params.line_bits + 2 + 128)
    assert inputs <= row["ffs"] < inputs + 8 < bits


def test_tensor_memory_lands_on_macros_from_emitted_verilog():
    """The Tensor Memory banks leave the emitter as dual-port SRAM modules written under 32
    enables a port; read back by Yosys they are 64 write ports until the memory passes merge
    them, and still become macros, not 128 kbit of flip-flops."""
    dut = TmemBanks(TmemParams(128))
    work = ROOT / "build" / "test_asic" / "tmem_banks_v"
    row = asic.run("tmem_banks", verilog_text(dut, "top"), work, verilog=True, say=lambda _: None)
    assert row["macros"] >= 2 * 1024 // 32 and all(k.startswith("fakeram7_dp_") for k in row["macro_kinds"])
    assert row["ffs"] < 64


def asic_bits(kind: str) -> int:
    depth, width = kind.rsplit("_", 1)[1].split("x")
    return int(depth) * int(width)


def test_emitted_verilog_names_each_memory_by_shape():
    """Each memory leaves the emitter as an SRAM module named for its shape, with its ports; no
    memory written to is left as an array of the design's modules."""
    text = verilog_text(TmemBanks(TmemParams(64)), "tmem_banks")
    assert text.count("tensorlsu_sram_dp_32x1024_be32 ") == 2 + 1     # two instances, one module
    module = text[text.index("module tensorlsu_sram_dp_32x1024_be32"):]
    for port in ("a_re", "a_we", "a_addr", "a_wdata", "a_rdata", "b_re", "b_we", "b_addr", "b_wdata", "b_rdata"):
        assert port in module
    assert "input [31:0] a_we" in module and "input [4:0] a_addr" in module
    design = text[:text.index("module tensorlsu_sram_dp_32x1024_be32")]
    assert "reg [1023:0]" not in design


def test_row_store_leaves_as_register_files():
    """The global fetch stage's row store (a memory written at one address while it is read at
    another) leaves as register-file modules with a write and a read port; in the whole unit
    every memory takes the module of its own shape. (What the modules hold is checked by every
    global wmma.load through the emitted unit: tb/system/test_lsu_rtl.py.)"""
    text = verilog_text(GlobalFetch(Params(tmem_columns=0)), "fetch")
    # a memory per window lane, a word per context (4) and window (4), one module
    assert text.count("tensorlsu_rf_16x128 ") == 8 + 1
    module = text[text.index("module tensorlsu_rf_16x128"):]
    for port in ("we", "waddr", "wdata", "re", "raddr", "rdata"):
        assert f" {port}" in module
    assert "tensorlsu_sram_" not in text
    # in the whole unit, each memory takes the module of its own shape: the banks fit the
    # read-or-write port; the row store's lanes would fit a Tensor Memory bank's two ports too
    # (the smallest Tensor Memory keeps the emission short)
    unit = verilog_text(LoadStoreUnit(Params(tmem_columns=32)), "top")
    assert "module tensorlsu_sram_sp_128x128 " in unit and "module tensorlsu_rf_16x128 " in unit
    assert "module tensorlsu_rf_128x128 " not in unit
    assert unit.count("tensorlsu_rf_16x128 ") == 8 + 1
    assert unit.count("tensorlsu_sram_dp_16x1024_be32 ") == 4 * 2 + 1
    assert unit.count("tensorlsu_sram_sp_128x128 ") == 8 + 1


def test_small_memories_become_flip_flops_and_large_ones_macros():
    """A memory becomes macros or flip-flops, whichever costs less area: the fetch stage's row
    store with two contexts (eight words of 128 bits a memory) is flip-flops, from RTLIL and
    from the emitted Verilog; with the default four (sixteen words) it is macros (the banks,
    far larger, are macros: the tests above)."""
    for verilog in (False, True):
        dut = FetchRows(Params(tmem_columns=0, axi_contexts=2))
        source = verilog_text(dut, "top") if verilog else rtlil.convert(dut, name="top")
        work = ROOT / "build" / "test_asic" / ("rows_v" if verilog else "rows_il")
        row = asic.run("rows", source, work, verilog=verilog, say=lambda _: None)
        assert row["macros"] == 0 and row["ffs"] > 2 * 32 * 128, verilog


def _fanout(mod: dict) -> dict:
    sinks = {}
    for cell in mod["cells"].values():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"][pin] == "input":
                for b in bits:
                    sinks[b] = sinks.get(b, 0) + 1
    return sinks


def test_buffer_trees_bound_every_fanout():
    """A net with 150 sinks gets a tree of buffers: no net then drives more than MAX_FANOUT
    inputs, and every sink is still reached from the original driver."""
    inv = {"type": "INVx2_ASAP7_75t_R", "port_directions": {"A": "input", "Y": "output"}}
    cells = {"drv": dict(inv, connections={"A": [2], "Y": [3]})}
    for k in range(150):
        cells[f"s{k}"] = dict(inv, connections={"A": [3], "Y": [10 + k]})
    netlist = {"modules": {"top": {"ports": {}, "cells": cells,
                                   "netnames": {"n": {"hide_name": 0, "bits": list(range(2, 160))}}}}}
    added = asic.buffer_fanout(netlist)
    mod = netlist["modules"]["top"]
    assert max(_fanout(mod).values()) <= asic.MAX_FANOUT
    assert added == 13 + 2      # 150 sinks: 13 buffers, then 2 above them
    driven = {}
    for name, cell in mod["cells"].items():
        driven.setdefault(cell["connections"]["A"][0], []).append(name)
    reached, todo = set(), [3]
    while todo:
        for name in driven.get(todo.pop(), []):
            reached.add(name)
            if name.startswith("fanout_buf"):
                todo.append(mod["cells"][name]["connections"]["Y"][0])
    assert {f"s{k}" for k in range(150)} <= reached


def test_macro_pins_weigh_more_in_the_buffer_trees():
    """A net into 10 macro pins and 2 gate inputs (weight 10 x MACRO_PIN_WEIGHT + 2): each
    buffer drives at most MAX_FANOUT // MACRO_PIN_WEIGHT macro pins (four); counted as gate
    inputs, the twelve sinks would stay on the driver."""
    ram_type = "fakeram7_sp_256x32"

    def netlist():
        inv = {"type": "INVx2_ASAP7_75t_R", "port_directions": {"A": "input", "Y": "output"}}
        cells = {"drv": dict(inv, connections={"A": [2], "Y": [3]})}
        for k in range(10):
            cells[f"m{k}"] = {"type": ram_type, "port_directions": {"w_mask_in": "input"},
                              "connections": {"w_mask_in": [3]}}
        for k in range(2):
            cells[f"g{k}"] = dict(inv, connections={"A": [3], "Y": [10 + k]})
        return {"modules": {"top": {"ports": {}, "cells": cells,
                                    "netnames": {"n": {"hide_name": 0, "bits": list(range(2, 12))}}}}}
    assert asic.buffer_fanout(netlist()) == 0
    weighed = netlist()
    assert asic.buffer_fanout(weighed, macros=frozenset({ram_type})) == 3
    per_net = {}
    for cell in weighed["modules"]["top"]["cells"].values():
        if cell["type"] == ram_type:
            net = cell["connections"]["w_mask_in"][0]
            per_net[net] = per_net.get(net, 0) + 1
    assert 3 not in per_net and max(per_net.values()) == asic.MAX_FANOUT // asic.MACRO_PIN_WEIGHT == 4


def test_memory_library_describes_each_macro():
    """The memory_libmap library and the techmap agree with the macro files: one entry per macro,
    its address bits and width, the cost its area; dual ports A and B on one clock."""
    ms = asic.macros()
    assert {(m.ports, m.depth, m.width) for m in ms} >= {(2, 256, 64), (1, 2048, 64), (2, 512, 128)}
    lib, tm = asic.memory_library(ms), asic.macro_techmap(ms)
    dp = next(m for m in ms if m.name == "fakeram7_dp_256x64")
    assert dp.area == pytest.approx(989.52)
    entry = lib[lib.index(dp.techmap_cell):].split("}\n}")[0]
    assert "abits 8;" in entry and "width 64;" in entry and "cost 990;" in entry and 'port srsw "A" "B"' in entry
    assert "rden;" in entry and "rdwr no_change;" in entry
    body = tm[tm.index(f"module \\{dp.techmap_cell}"):].split("endmodule")[0]
    assert ".addr_in_B(PORT_B_ADDR)" in body
    assert ".ce_in(PORT_A_RD_EN | (|PORT_A_WR_EN) | PORT_B_RD_EN | (|PORT_B_WR_EN))" in body


def test_upsize_flops_enlarges_the_flip_flops_that_start_late_paths():
    """A flip-flop of the top or of a module kept whole that starts a late path takes the larger
    cell; ports and other cells are left alone."""
    x1, big = "DFFHQNx1_ASAP7_75t_R", asic.FF_UPSIZE["DFFHQNx1_ASAP7_75t_R"]
    netlist = {"modules": {
        "top": {"cells": {"a_reg": {"type": x1}, "b_reg": {"type": x1}, "g": {"type": "NAND2xp5_ASAP7_75t_R"},
                          "q0": {"type": "quad"}}},
        "quad": {"cells": {"w_reg": {"type": x1}}}}}
    n = asic.upsize_flops(netlist, ["a_reg/QN", "a_reg/QN", "q0/w_reg/QN", "g/Y", "instr__payload[0]"])
    cells = netlist["modules"]
    assert n == 2
    assert cells["top"]["cells"]["a_reg"]["type"] == big and cells["top"]["cells"]["b_reg"]["type"] == x1
    assert cells["quad"]["cells"]["w_reg"]["type"] == big
    assert cells["top"]["cells"]["g"]["type"] == "NAND2xp5_ASAP7_75t_R"


def test_macro_inputs_get_the_strongest_drivers():
    """A gate that drives a macro's input takes the strongest drive of its function up to x4
    (a buffer: x4f, not x6f); a gate that drives only gates keeps its size, and so does one
    whose function has no larger one."""
    lib = {"AO21x1_ASAP7_75t_R", "AO21x2_ASAP7_75t_R", "INVx1_ASAP7_75t_R", "INVx2_ASAP7_75t_R",
           "BUFx2_ASAP7_75t_R", "BUFx4f_ASAP7_75t_R", "BUFx6f_ASAP7_75t_R", "XOR2xp5_ASAP7_75t_R"}
    gate = {"port_directions": {"A": "input", "Y": "output"}}
    cells = {"ao": dict(gate, type="AO21x1_ASAP7_75t_R", connections={"A": [2], "Y": [3]}),
             "inv": dict(gate, type="INVx1_ASAP7_75t_R", connections={"A": [2], "Y": [4]}),
             "buf": dict(gate, type="BUFx2_ASAP7_75t_R", connections={"A": [2], "Y": [5]}),
             "xor": dict(gate, type="XOR2xp5_ASAP7_75t_R", connections={"A": [2], "Y": [6]}),
             "sram": {"type": "fakeram7_sp_2048x32", "connections": {"clk": [1], "addr_in": [3, 5, 6], "rd_out": [7]},
                      "port_directions": {"clk": "input", "addr_in": "input", "rd_out": "output"}}}
    netlist = {"modules": {"top": {"ports": {}, "cells": cells, "netnames": {}}}}
    assert asic.upsize_macro_drivers(netlist, {"fakeram7_sp_2048x32"}, lib) == 2
    assert [cells[k]["type"] for k in ("ao", "inv", "buf", "xor")] == [
        "AO21x2_ASAP7_75t_R", "INVx1_ASAP7_75t_R", "BUFx4f_ASAP7_75t_R", "XOR2xp5_ASAP7_75t_R"]


def test_area_by_component_gives_logic_to_the_register_it_feeds():
    """Two stages: ``a.x_reg`` → INV → AND → ``b.y_reg``, and a NAND that feeds both ``b.y_reg``
    (at one gate) and ``a.z_reg`` (at two): each gate goes to the nearest register it feeds,
    the flip-flops to the component they are named after; the sums equal the block's."""
    areas = {"INVx2_ASAP7_75t_R": 1.0, "AND2x2_ASAP7_75t_R": 2.0, "NAND2x1_ASAP7_75t_R": 4.0,
             "BUFx2_ASAP7_75t_R": 8.0, "DFFHQNx1_ASAP7_75t_R": 16.0}
    gate = {"port_directions": {"A": "input", "B": "input", "Y": "output"}}
    ff = {"type": "DFFHQNx1_ASAP7_75t_R", "port_directions": {"CLK": "input", "D": "input", "QN": "output"}}
    cells = {
        "a.x_reg": dict(ff, connections={"CLK": [1], "D": [9], "QN": [2]}),
        "inv": dict(gate, type="INVx2_ASAP7_75t_R", connections={"A": [2], "Y": [3]}),
        "nand": dict(gate, type="NAND2x1_ASAP7_75t_R", connections={"A": [2], "B": [2], "Y": [4]}),
        "and": dict(gate, type="AND2x2_ASAP7_75t_R", connections={"A": [3], "B": [4], "Y": [5]}),
        "b.y_reg": dict(ff, connections={"CLK": [1], "D": [5], "QN": [6]}),
        "buf": dict(gate, type="BUFx2_ASAP7_75t_R", connections={"A": [4], "Y": [7]}),
        "a.z_reg": dict(ff, connections={"CLK": [1], "D": [7], "QN": [8]}),
    }
    netlist = {"modules": {"top": {"ports": {}, "cells": cells, "netnames": {}}}}
    got = asic.area_by_component(netlist, areas, [], depth=1)
    assert got == {"b": {"logic_um2": 1.0 + 2.0 + 4.0, "ff_um2": 16.0, "macro_um2": 0.0},
                   "a": {"logic_um2": 8.0, "ff_um2": 32.0, "macro_um2": 0.0}}
    kinds = asic.area_by_kind(netlist, areas, [])
    assert sum(c["logic_um2"] for c in got.values()) == kinds["logic_um2"]
    assert asic.component_path("dut.fetch$3.rows.lane3[0]_reg", 2) == "fetch.rows"
    assert asic.component_path("e_hc[0]_reg", 2) == "top"


def test_ecp5_cells_by_component_go_to_the_register_they_feed():
    """The same two stages in ECP5 cells: ``a.x`` → LUT → LUT → ``b.y``, a LUT shared by ``b.y``
    (two LUTs on) and ``a.z`` (three on), a carry cell feeding only the output: each logic cell
    goes to the nearest flip-flop it feeds, the flip-flops to the component their output net is
    named after, and the counts add up to the netlist's."""
    lut = {"type": "LUT4", "port_directions": {"A": "input", "B": "input", "Z": "output"}}
    ff = {"type": "TRELLIS_FF", "port_directions": {"CLK": "input", "DI": "input", "Q": "output"}}
    cells = {
        "a.x_TRELLIS_FF_Q": dict(ff, connections={"CLK": [1], "DI": [9], "Q": [2]}),
        "$l1": dict(lut, connections={"A": [2], "B": [2], "Z": [3]}),
        "$shared": dict(lut, connections={"A": [2], "B": [2], "Z": [4]}),
        "$l2": dict(lut, connections={"A": [3], "B": [4], "Z": [5]}),
        "$ff2": dict(ff, connections={"CLK": [1], "DI": [5], "Q": [6]}),
        "$l4": dict(lut, connections={"A": [4], "B": [4], "Z": [11]}),
        "$l3": dict(lut, connections={"A": [11], "B": [11], "Z": [7]}),
        "$ff3": dict(ff, connections={"CLK": [1], "DI": [7], "Q": [8]}),
        "$carry": {"type": "CCU2C", "port_directions": {"A0": "input", "S0": "output"},
                   "connections": {"A0": [6], "S0": [10]}},
    }
    names = {"a.x": {"bits": [2]}, "b$3.y": {"bits": [6]}, "a.z": {"bits": [8]}, "out": {"bits": [10]}}
    netlist = {"modules": {"top": {"ports": {}, "cells": cells, "netnames": names}}}
    got = ecp5_area.by_component(netlist)
    assert list(got) == ["b", "a", "top"]
    assert (got["b"]["LUT4"], got["b"]["TRELLIS_FF"]) == (3, 1)
    assert (got["a"]["LUT4"], got["a"]["TRELLIS_FF"]) == (2, 2)
    assert got["top"]["CCU2C"] == 1 and got["top"]["LUT4"] == 0
