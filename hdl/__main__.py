"""``python -m tensorlsu.hdl --emit-verilog OUT.v [--policy h200|packed] [--smem-bytes N]``

Writes the unit as one Verilog file and, beside it, ``OUT.vh``: its form ids, port payload
fields, error codes and build parameters (docs/ports.md); ``OUT.f``, a filelist; and ``OUT.core``,
a FuseSoC core. ``--named-fields`` wraps the unit so that waveforms show every payload field by
name, and writes ``OUT.gtkw`` (with its filter files in ``filters/`` beside it) for GTKWave
(docs/waves.md)."""

import argparse
import sys
from pathlib import Path

from . import TOP
from .lsu import LoadStoreUnit
from .params import FPGA_GLOBAL_PORT, POLICIES, PORT_SLICES, Params, fpga_params
from .verilog.emit import verilog_text
from .verilog.header import header_text, wmma_layouts_text
from .verilog.package import core_text, filelist_text
from .verilog.waves import named_verilog, write_waves_files


def parser() -> argparse.ArgumentParser:
    """The command's arguments."""
    ap = argparse.ArgumentParser(prog="python -m tensorlsu.hdl", description=__doc__)
    ap.add_argument("--emit-verilog", metavar="OUT.v",
                    help=f"write the unit as one Verilog file (top module {TOP}), its header OUT.vh, "
                         "a filelist OUT.f and a FuseSoC core OUT.core")
    ap.add_argument("--named-fields", action="store_true",
                    help="wrap the unit (same module name and ports) so that every payload field is a named "
                         "wire in waveforms, and write OUT.gtkw, a GTKWave save file that decodes form ids, "
                         "error codes and the other coded fields")
    ap.add_argument("--scope", default=TOP, metavar="PATH",
                    help=f"where the unit sits in your waveforms, for OUT.gtkw (default {TOP}; Verilator: "
                         f"TOP.{TOP}; inside your design: its instance path)")
    ap.add_argument("--wmma-layouts", metavar="OUT.md",
                    help="write the fragment layout of every wmma.load form (docs/wmma-layouts.md)")
    defaults = Params()
    ap.add_argument("--policy", choices=POLICIES, default=defaults.schedule.value)
    ap.add_argument("--smem-bytes", type=int, default=defaults.smem_bytes)
    ap.add_argument("--banks", type=int, default=defaults.banks)
    ap.add_argument("--bank-bytes", type=int, default=defaults.bank_bytes)
    ap.add_argument("--tmem-columns", type=int, default=defaults.tmem_columns,
                    help="Tensor Memory columns per lane (32 ... 512; 0: no Tensor Memory)")
    ap.add_argument("--tmem-banks", type=int, default=defaults.tmem_banks,
                    help="banks of each Tensor Memory quadrant: 2 (four column accesses a step) or 1")
    ap.add_argument("--axi-data-bits", type=int,
                    help=f"data width of the global AXI port: 512, 256 or 128 (default {defaults.axi_data_bits}; "
                         f"{FPGA_GLOBAL_PORT['axi_data_bits']} with --fpga)")
    ap.add_argument("--axi-outstanding", type=int, default=defaults.axi_outstanding,
                    help="read bursts the global port keeps in flight (1 ... 64)")
    ap.add_argument("--axi-ids", type=int, default=defaults.axi_ids,
                    help="AXI ids the bursts use in turn: 0 (the default) one per burst in flight, else a power "
                         "of two dividing --axi-outstanding (an id's beats come back in order)")
    ap.add_argument("--axi-burst", type=int, default=defaults.axi_burst, help="beats of one burst at most (1 ... 16)")
    ap.add_argument("--axi-contexts", type=int,
                    help="global passes fetched at once (2, 4, 8, 16 or 32): the latency the port hides "
                         f"(default {defaults.axi_contexts}; {FPGA_GLOBAL_PORT['axi_contexts']} with --fpga)")
    ap.add_argument("--global-base", type=lambda x: int(x, 0), default=defaults.global_base)
    ap.add_argument("--global-bytes", type=lambda x: int(x, 0), default=defaults.global_bytes,
                    help="the global range wmma.load may read (0: no global port)")
    ap.add_argument("--shared-window-base", type=lambda x: int(x, 0), default=defaults.shared_window_base)
    ap.add_argument("--shared-window-bytes", type=lambda x: int(x, 0), default=defaults.shared_window_bytes)
    ap.add_argument("--dsp-multipliers", action="store_true",
                    help="an FPGA build: the address stage's line offsets on DSP multipliers")
    ap.add_argument("--row-buffer-lutram", action="store_true",
                    help="an FPGA build: the load row buffer in LUT RAM (h200 policy)")
    ap.add_argument("--port-slices", choices=PORT_SLICES,
                    help="the ports' slices: registered (every signal from flip-flops both ways; the default) "
                         "or forward (each ready passed through; the default with --fpga)")
    ap.add_argument("--fpga", action="store_true",
                    help="the FPGA build of make synth: --dsp-multipliers, --row-buffer-lutram (h200), "
                         "--port-slices forward and a 128-bit global port of two contexts (the flags above "
                         "may still change any of it)")
    return ap


def params_from_args(args: argparse.Namespace) -> Params:
    """The build the arguments name (``--fpga``: :func:`~tensorlsu.hdl.params.fpga_params`'s, each
    flag given beside it still counting); a ``ValueError`` names a parameter out of range."""
    given = {name: getattr(args, name) for name in ("axi_data_bits", "axi_contexts", "port_slices")
             if getattr(args, name) is not None}
    common = dict(banks=args.banks, bank_bytes=args.bank_bytes, smem_bytes=args.smem_bytes,
                  tmem_columns=args.tmem_columns, tmem_banks=args.tmem_banks,
                  axi_outstanding=args.axi_outstanding, axi_ids=args.axi_ids, axi_burst=args.axi_burst,
                  global_base=args.global_base, global_bytes=args.global_bytes,
                  shared_window_base=args.shared_window_base, shared_window_bytes=args.shared_window_bytes, **given)
    if args.fpga:
        return fpga_params(args.policy, **common, **({"row_buffer_lutram": True} if args.row_buffer_lutram else {}))
    return Params(schedule=args.policy, dsp_multipliers=args.dsp_multipliers,
                  row_buffer_lutram=args.row_buffer_lutram, **common)


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if not (args.emit_verilog or args.wmma_layouts):
        ap.error("give --emit-verilog OUT.v or --wmma-layouts OUT.md")
    if args.wmma_layouts:
        Path(args.wmma_layouts).write_text(wmma_layouts_text())
    if not args.emit_verilog:
        return 0
    try:
        p = params_from_args(args)
    except ValueError as e:
        print(f"python -m tensorlsu.hdl: {e}", file=sys.stderr)
        return 2
    dut = LoadStoreUnit(p)
    out = Path(args.emit_verilog)
    text = verilog_text(dut, TOP)
    out.write_text(named_verilog(dut, text, TOP) if args.named_fields else text)
    if args.named_fields:
        write_waves_files(dut, out.parent, None, args.scope, out.stem)
    out.with_suffix(".vh").write_text(header_text(dut, TOP))
    out.with_suffix(".f").write_text(filelist_text(out))
    out.with_suffix(".core").write_text(core_text(out, TOP))
    return 0


if __name__ == "__main__":
    sys.exit(main())
