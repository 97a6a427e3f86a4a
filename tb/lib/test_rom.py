# amaranth: UnusedElaboratable=no
"""hdl/lib/rom.py: a table reads each given row field for field and zero elsewhere, and stays one
array in the emitted Verilog; ``rom`` reads its last row past the end and keeps its table logic;
``hot_any`` is the OR of the bits it names."""

import re

import pytest
from amaranth import Module, Signal, unsigned
from amaranth.back import rtlil
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from tensorlsu.hdl.lib.rom import hot_any, rom, table
from tensorlsu.hdl.verilog.emit import verilog_text

INNER = data.StructLayout({"a": 3, "b": 5})
LAYOUT = data.StructLayout({"x": 4, "inner": INNER, "pair": data.ArrayLayout(INNER, 2)})
#: rows 0, 3 and 6 of 8; the others must read all zero
ROWS = {0: {"x": 9, "inner": {"a": 1, "b": 30}, "pair": [{"a": 7, "b": 0}, {"a": 0, "b": 17}]},
        3: {"x": 15, "inner": {"a": 7, "b": 31}, "pair": [{"a": 2, "b": 3}, {"a": 4, "b": 5}]},
        6: {"x": 1, "inner": {"a": 0, "b": 1}, "pair": [{"a": 1, "b": 0}, {"a": 0, "b": 0}]}}


class Table(wiring.Component):
    index: In(3)
    row: Out(LAYOUT)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.row.eq(table(m, self.index, LAYOUT, ROWS, "row"))
        return m


def _fields(row: dict) -> list[int]:
    """The row's field values in a fixed order, from the dict itself."""
    return [row["x"], row["inner"]["a"], row["inner"]["b"]] + [p[k] for p in row["pair"] for k in "ab"]


def test_a_table_reads_each_row_field_for_field_and_zero_where_no_row_is_given():
    dut = Table()
    sim = Simulator(dut)

    async def bench(ctx):
        for k in range(8):
            ctx.set(dut.index, k)
            got = [ctx.get(dut.row.x), ctx.get(dut.row.inner.a), ctx.get(dut.row.inner.b)]
            got += [ctx.get(getattr(dut.row.pair[j], f)) for j in range(2) for f in "ab"]
            assert got == (_fields(ROWS[k]) if k in ROWS else [0] * 7), k

    sim.add_testbench(bench)
    sim.run()


def test_a_row_outside_the_index_range_is_refused():
    with pytest.raises(AssertionError, match="a row outside the index's range"):
        table(Module(), Signal(2), INNER, {4: {"a": 1, "b": 1}}, "t")


class TableBesideRam(Table):
    """The table beside a memory that is written and read on the clock: the emission maps that
    one to an SRAM module, and must leave the table alone."""
    addr: In(4)
    wdata: In(8)
    we: In(1)
    rdata: Out(8)

    def elaborate(self, platform):
        m = super().elaborate(platform)
        ram = m.submodules.ram = Memory(shape=8, depth=16, init=[])
        w, r = ram.write_port(), ram.read_port()
        m.d.comb += [w.addr.eq(self.addr), w.data.eq(self.wdata), w.en.eq(self.we), r.addr.eq(self.addr),
                     self.rdata.eq(r.data)]
        return m


@pytest.mark.parametrize("dut", [Table, TableBesideRam])
def test_the_emitted_verilog_keeps_a_table_as_one_array(dut):
    text = verilog_text(dut(), "rom_table")
    # one word per index (x 4 bits, inner 3 + 5, pair 2 x 8: 28 bits), 8 of them: the table's array
    assert re.search(r"reg \[27:0\] \S+\s*\[7:0\];", text), text[:2000]
    assert "case" not in text


#: five rows of two fields on a 3-bit index: indices 5 … 7 must read row 4
ROM_A, ROM_B = [3, 1, 4, 1, 5], [9, 2, 6, 5, 3]


class Rom(wiring.Component):
    index: In(3)
    a: Out(3)
    b: Out(4)

    def elaborate(self, platform):
        m = Module()
        row = rom(m, self.index, {"a": (unsigned(3), ROM_A), "b": (unsigned(4), ROM_B)}, "row")
        m.d.comb += [self.a.eq(row.a), self.b.eq(row.b)]
        return m


def test_a_rom_reads_each_row_and_its_last_row_past_the_end():
    dut = Rom()
    sim = Simulator(dut)

    async def bench(ctx):
        for k in range(8):
            ctx.set(dut.index, k)
            assert (ctx.get(dut.a), ctx.get(dut.b)) == (ROM_A[min(k, 4)], ROM_B[min(k, 4)]), k

    sim.add_testbench(bench)
    sim.run()


def test_a_rom_of_more_rows_than_its_index_reaches_is_refused():
    with pytest.raises(ValueError, match="9 rows do not fit an index of 3 bits"):
        rom(Module(), Signal(3), {"a": (unsigned(4), list(range(9)))}, "t")


def test_a_rom_table_is_marked_logic_for_synthesis():
    # (an FPGA flow otherwise takes a table read into a register into block RAM)
    text = rtlil.convert(Rom(), name="rom")
    assert re.search(r'attribute \\rom_style "logic"\s+memory width 7 size 8 \\row_table\b', text), text


class HotAny(wiring.Component):
    hot: In(5)
    none: Out(1)
    some: Out(1)
    all_: Out(1)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.none.eq(hot_any(self.hot, [])), self.some.eq(hot_any(self.hot, [1, 3, 3])),
                     self.all_.eq(hot_any(self.hot, range(5)))]
        return m


def test_hot_any_is_the_or_of_the_bits_it_names():
    dut = HotAny()
    sim = Simulator(dut)

    async def bench(ctx):
        for v in range(32):
            ctx.set(dut.hot, v)
            bits = [v >> i & 1 for i in range(5)]
            assert (ctx.get(dut.none), ctx.get(dut.some), ctx.get(dut.all_)) == \
                (0, bits[1] | bits[3], int(any(bits))), v

    sim.add_testbench(bench)
    sim.run()
