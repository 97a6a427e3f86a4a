"""How a Verilog user's flow picks the emitted unit up: a filelist (``OUT.f``, read by
Verilator, Icarus, VCS, Xcelium with ``-f``) and a FuseSoC core (``OUT.core``, CAPI2), each
naming the Verilog file and its header beside it, with relative paths so that the folder can
move. ``python -m tensorlsu.hdl --emit-verilog OUT.v`` writes both."""

from __future__ import annotations

from pathlib import Path

import tensorlsu

__all__ = ["filelist_text", "core_text"]


def filelist_text(verilog: Path) -> str:
    """The filelist: the header's folder as an include directory, then the Verilog file."""
    return f"+incdir+.\n{verilog.name}\n"


def core_text(verilog: Path, top: str) -> str:
    """A FuseSoC CAPI2 core: the Verilog and its header, a lint target (Verilator) and a
    simulation target (Icarus) with the unit as the top level."""
    return f"""CAPI=2:
name: tensorlsu:lsu:{top}:{tensorlsu.__version__}
description: the GPU warp-level matrix load/store unit (ldmatrix, stmatrix, wmma.load, tcgen05), emitted by tensorlsu

filesets:
  rtl:
    files:
      - {verilog.with_suffix('.vh').name}: {{is_include_file: true}}
      - {verilog.name}
    file_type: verilogSource

targets:
  default: &default
    filesets: [rtl]
    toplevel: {top}
  lint:
    <<: *default
    default_tool: verilator
    tools:
      verilator:
        mode: lint-only
        verilator_options: [-Wno-fatal]
  sim:
    <<: *default
    default_tool: icarus
"""
