"""The unit's memories as named SRAM modules in the emitted Verilog.

Each memory of the design (a shared-memory bank quad, a Tensor Memory bank, a row store lane
of the global fetch stage) leaves the emitter as an instance of a module named for its shape,
``tensorlsu_sram_{sp|dp}_{depth}x{width}`` with ``_be{bits}`` where a write enable covers
``bits`` of the word: ``sp`` has one port, ``dp`` two, and each port reads or writes one word a
cycle at one address. A memory written at one address while it is read at another (the row
store) is a register file, ``tensorlsu_rf_{depth}x{width}``: one write port and one read port.
The module's body is a behavioural model in the form synthesis tools infer RAMs from; an
integrator replaces it with an SRAM macro (or a wrapper around one) of the same ports:

    clk
    {a,b}_re     read this cycle: the word is on {a,b}_rdata after the edge, held until the
                 port's next read
    {a,b}_we     write enables, one per ``bits`` (a port that writes does not read)
    {a,b}_addr, {a,b}_wdata, {a,b}_rdata

and for a register file ``we``, ``waddr``, ``wdata`` (the write port) and ``re``, ``raddr``,
``rdata`` (the read port; what it reads of the word written in the same cycle is undefined).

A memory read asynchronously (the load row buffer of an FPGA build, ``row_buffer_lutram``) is
no SRAM: it stays a Verilog array marked ``(* ram_style = "distributed" *)``, which FPGA tools
take as LUT RAM (:data:`tensorlsu.hdl.params.ASYNC_MEMORY`).

What one port reads while the other writes the same word is undefined (the unit never does
it). Contents start at zero in simulation only; the unit does not rely on them in silicon
(docs/ports.md).

Yosys finds the ports: ``memory_libmap`` with a library of exactly these shapes, so a memory
whose ports do not fit one (a read and a write at different addresses on one port) fails the
emission rather than leaving as flip-flops. Each memory takes the module of its own shape
(:func:`shape_cost`); where a memory of one read and one write port fits both forms, the
read-or-write port wins, and only the modules used are emitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Shape, _ir, _mem
from amaranth.utils import ceil_log2

__all__ = ["SramShape", "sram_shapes", "libmap_entry", "shape_cost", "memory_library", "memory_techmap",
           "sram_modules"]


@dataclass(frozen=True, order=True)
class SramShape:
    """A memory of ``depth`` words of ``width`` bits with ``ports`` read-or-write ports and a
    write enable per ``granule`` bits; ``split``: a register file, one write port and one read
    port at their own addresses (``ports`` 2)."""
    ports: int
    depth: int
    width: int
    granule: int
    split: bool = False

    @property
    def name(self) -> str:
        if self.split:
            return f"tensorlsu_rf_{self.depth}x{self.width}"
        kind = "sp" if self.ports == 1 else "dp"
        be = f"_be{self.granule}" if self.granule < self.width else ""
        return f"tensorlsu_sram_{kind}_{self.depth}x{self.width}{be}"

    @property
    def abits(self) -> int:
        return max(1, ceil_log2(self.depth))

    @property
    def enables(self) -> int:
        return self.width // self.granule

    @property
    def port_names(self) -> str:
        return "ab"[:self.ports]


def _memories(fragment):
    if isinstance(fragment, _mem.MemoryInstance):
        yield fragment
    for sub, _name, _src in fragment.subfragments:
        yield from _memories(sub)


def sram_shapes(fragment: _ir.Fragment) -> list[SramShape]:
    """The shapes the memories of an elaborated design may take: each memory's read-or-write
    form, and for one of a read and a write port the register file too (which one fits is
    only known once the ports' addresses are compared, by ``memory_libmap``)."""
    found = set()
    for mem in _memories(fragment):
        if any(r._domain == "comb" for r in mem._read_ports):
            continue                    # read asynchronously: an array, not an SRAM (ASYNC_MEMORY)
        width = Shape.cast(mem._data.shape).width
        granules = {w._granularity for w in mem._write_ports} or {width}
        if len(granules) != 1:
            raise ValueError(f"a memory of {mem._data.depth} x {width} bits has write ports of "
                             f"different granularities {sorted(granules)}: no SRAM module fits it")
        ports = max(len(mem._read_ports), len(mem._write_ports))
        granule = granules.pop()
        found.add(SramShape(ports, mem._data.depth, width, granule))
        if len(mem._read_ports) == 1 and len(mem._write_ports) == 1 and granule == width:
            found.add(SramShape(2, mem._data.depth, width, width, split=True))
    return sorted(found)


def libmap_entry(cell: str, abits: int, width: int, ports: int, cost: int, byte: int | None = None) -> str:
    """One ``memory_libmap`` RAM of the form of the unit's memories: ``ports`` ports ("A", "B")
    on one clock, each reading or writing at one address, with a read enable, not reading while
    it writes (``no_change``); a write enable per ``byte`` bits (``None``: one per port); zero
    contents allowed (the memories start at zero, in simulation)."""
    names = " ".join(f'"{p}"' for p in "AB"[:ports])
    byte_line = f"  byte {byte};\n" if byte else ""
    return (f"ram block {cell} {{\n  abits {abits};\n  width {width};\n{byte_line}  cost {cost};\n  init zero;\n"
            f"  port srsw {names} {{\n    clock posedge \"C\";\n    rden;\n    rdwr no_change;\n  }}\n}}\n")


def register_file_entry(cell: str, abits: int, width: int, cost: int) -> str:
    """One ``memory_libmap`` RAM with a write port ("W") and a read port ("R") on one clock,
    the read with an enable; zero contents allowed."""
    return (f"ram block {cell} {{\n  abits {abits};\n  width {width};\n  cost {cost};\n  init zero;\n"
            f"  port sw \"W\" {{\n    clock posedge \"C\";\n  }}\n"
            f"  port sr \"R\" {{\n    clock posedge \"C\";\n    rden;\n  }}\n}}\n")


def shape_cost(s: SramShape) -> int:
    """What a module costs ``memory_libmap``: its bits times its ports, so that every memory
    takes the module of its own shape, never a larger one that would hold it (a row store lane
    fits in a Tensor Memory bank's two ports too), and a register file costs one more than the
    read-or-write port of its shape, which a memory takes where it fits."""
    return s.depth * s.width * s.ports + s.split


def memory_library(shapes: list[SramShape]) -> str:
    """``memory_libmap``'s description of the modules (:func:`libmap_entry`), one per shape, at
    :func:`shape_cost`."""
    return "".join(register_file_entry(f"$__{s.name.upper()}_", s.abits, s.width, shape_cost(s)) if s.split else
                   libmap_entry(f"$__{s.name.upper()}_", s.abits, s.width, s.ports, shape_cost(s),
                                s.granule if s.granule < s.width else None) for s in shapes)


def memory_techmap(shapes: list[SramShape]) -> str:
    """Verilog for ``techmap``: each ``memory_libmap`` cell becomes an instance of its module."""
    out = []
    for s in shapes:
        if s.split:
            a, w = s.abits, s.width
            out.append(f"module \\$__{s.name.upper()}_ (CLK_C, PORT_W_CLK, PORT_W_ADDR, PORT_W_WR_DATA, PORT_W_WR_EN, "
                       f"PORT_R_CLK, PORT_R_RD_EN, PORT_R_ADDR, PORT_R_RD_DATA);\n  parameter INIT = 0;\n"
                       f"  input CLK_C, PORT_W_CLK, PORT_W_WR_EN, PORT_R_CLK, PORT_R_RD_EN;\n"
                       f"  input [{a - 1}:0] PORT_W_ADDR, PORT_R_ADDR;\n  input [{w - 1}:0] PORT_W_WR_DATA;\n"
                       f"  output [{w - 1}:0] PORT_R_RD_DATA;\n  {s.name} _TECHMAP_REPLACE_ (\n    .clk(CLK_C), "
                       f".we(PORT_W_WR_EN), .waddr(PORT_W_ADDR), .wdata(PORT_W_WR_DATA),\n    .re(PORT_R_RD_EN), "
                       f".raddr(PORT_R_ADDR), .rdata(PORT_R_RD_DATA));\nendmodule\n")
            continue
        ports = [p.upper() for p in s.port_names]
        args = ", ".join(f"PORT_{p}_{n}" for p in ports for n in ("CLK", "RD_EN", "ADDR", "WR_DATA", "WR_EN",
                                                                  "RD_DATA"))
        decl = "".join(f"  input PORT_{p}_CLK, PORT_{p}_RD_EN;\n  input [{s.abits - 1}:0] PORT_{p}_ADDR;\n"
                       f"  input [{s.width - 1}:0] PORT_{p}_WR_DATA;\n  input [{s.enables - 1}:0] PORT_{p}_WR_EN;\n"
                       f"  output [{s.width - 1}:0] PORT_{p}_RD_DATA;\n" for p in ports)
        conn = ",\n".join(f"    .{p.lower()}_re(PORT_{p}_RD_EN), .{p.lower()}_we(PORT_{p}_WR_EN), "
                          f".{p.lower()}_addr(PORT_{p}_ADDR), .{p.lower()}_wdata(PORT_{p}_WR_DATA), "
                          f".{p.lower()}_rdata(PORT_{p}_RD_DATA)" for p in ports)
        out.append(f"module \\$__{s.name.upper()}_ (CLK_C, {args});\n  parameter INIT = 0;\n  input CLK_C;\n"
                   f"{decl}  {s.name} _TECHMAP_REPLACE_ (\n    .clk(CLK_C),\n{conn});\nendmodule\n")
    return "".join(out)


def sram_modules(shapes: list[SramShape]) -> str:
    """The behavioural modules, in the form synthesis tools infer RAMs from."""
    out = []
    for s in shapes:
        e, g, a, w = s.enables, s.granule, s.abits, s.width
        if s.split:
            out.append(
                f"// {s.depth} words of {w} bits, one write port and one read port\n"
                f"module {s.name} (\n  input clk,\n  input we,\n  input [{a - 1}:0] waddr,\n"
                f"  input [{w - 1}:0] wdata,\n  input re,\n  input [{a - 1}:0] raddr,\n"
                f"  output reg [{w - 1}:0] rdata);\n  reg [{w - 1}:0] mem [0:{s.depth - 1}];\n"
                f"`ifndef SYNTHESIS\n  integer k;\n"
                f"  initial begin for (k = 0; k < {s.depth}; k = k + 1) mem[k] = 0; rdata = 0; end\n`endif\n"
                f"  always @(posedge clk) begin\n    if (we) mem[waddr] <= wdata;\n"
                f"    if (re) rdata <= mem[raddr];\n  end\nendmodule\n")
            continue
        ios = ",\n".join(f"  input {p}_re,\n  input [{e - 1}:0] {p}_we,\n  input [{a - 1}:0] {p}_addr,\n"
                         f"  input [{w - 1}:0] {p}_wdata,\n  output reg [{w - 1}:0] {p}_rdata"
                         for p in s.port_names)
        blocks = "".join(
            f"  always @(posedge clk) begin\n"
            f"    for ({p}_i = 0; {p}_i < {e}; {p}_i = {p}_i + 1)\n"
            f"      if ({p}_we[{p}_i]) mem[{p}_addr][{p}_i * {g} +: {g}] <= {p}_wdata[{p}_i * {g} +: {g}];\n"
            f"    if ({p}_re && !(|{p}_we)) {p}_rdata <= mem[{p}_addr];\n  end\n" for p in s.port_names)
        init = "".join(f" {p}_rdata = 0;" for p in s.port_names)
        out.append(
            f"// {s.depth} words of {w} bits, {s.ports} read-or-write port(s), a write enable per {g} bits\n"
            f"module {s.name} (\n  input clk,\n{ios});\n"
            f"  reg [{w - 1}:0] mem [0:{s.depth - 1}];\n"
            f"  integer {', '.join(f'{p}_i' for p in s.port_names)};\n"
            f"`ifndef SYNTHESIS\n  integer k;\n"
            f"  initial begin for (k = 0; k < {s.depth}; k = k + 1) mem[k] = 0;{init} end\n`endif\n"
            f"{blocks}endmodule\n")
    return "\n".join(out)
