"""``python -m tensorlsu.hdl --emit-verilog OUT.v [--policy h200|packed] [--smem-bytes N]``

Writes the unit as one Verilog file and, beside it, ``OUT.vh``: its form ids, port payload
fields, error codes and build parameters (docs/ports.md)."""

import argparse
import sys
from pathlib import Path

from . import TOP
from .lsu import LoadStoreUnit
from .params import POLICIES, Params
from .verilog.emit import verilog_text
from .verilog.header import header_text, wmma_layouts_text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensorlsu.hdl", description=__doc__)
    ap.add_argument("--emit-verilog", metavar="OUT.v",
                    help=f"write the unit as one Verilog file (top module {TOP}) and its header OUT.vh")
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
    ap.add_argument("--axi-data-bits", type=int, default=defaults.axi_data_bits,
                    help="data width of the global AXI port: 512, 256 or 128")
    ap.add_argument("--axi-outstanding", type=int, default=defaults.axi_outstanding,
                    help="read bursts the global port keeps in flight (1 ... 64)")
    ap.add_argument("--axi-burst", type=int, default=defaults.axi_burst, help="beats of one burst at most (1 ... 16)")
    ap.add_argument("--axi-contexts", type=int, default=defaults.axi_contexts,
                    help="global passes fetched at once (2, 4, 8, 16 or 32): the latency the port hides")
    ap.add_argument("--global-base", type=lambda x: int(x, 0), default=defaults.global_base)
    ap.add_argument("--global-bytes", type=lambda x: int(x, 0), default=defaults.global_bytes,
                    help="the global range wmma.load may read (0: no global port)")
    ap.add_argument("--shared-window-base", type=lambda x: int(x, 0), default=defaults.shared_window_base)
    ap.add_argument("--shared-window-bytes", type=lambda x: int(x, 0), default=defaults.shared_window_bytes)
    ap.add_argument("--dsp-multipliers", action="store_true",
                    help="an FPGA build: the address stage's line offsets on DSP multipliers")
    ap.add_argument("--row-buffer-lutram", action="store_true",
                    help="an FPGA build: the load row buffer in LUT RAM (h200 policy)")
    args = ap.parse_args(argv)
    if not (args.emit_verilog or args.wmma_layouts):
        ap.error("give --emit-verilog OUT.v or --wmma-layouts OUT.md")
    if args.wmma_layouts:
        Path(args.wmma_layouts).write_text(wmma_layouts_text())
    if not args.emit_verilog:
        return 0
    try:
        p = Params(banks=args.banks, bank_bytes=args.bank_bytes, smem_bytes=args.smem_bytes,
                   schedule=args.policy, tmem_columns=args.tmem_columns,
                   tmem_banks=args.tmem_banks, axi_data_bits=args.axi_data_bits,
                   axi_outstanding=args.axi_outstanding, axi_burst=args.axi_burst,
                   axi_contexts=args.axi_contexts,
                   global_base=args.global_base, global_bytes=args.global_bytes,
                   shared_window_base=args.shared_window_base, shared_window_bytes=args.shared_window_bytes,
                   dsp_multipliers=args.dsp_multipliers, row_buffer_lutram=args.row_buffer_lutram)
    except ValueError as e:
        print(f"python -m tensorlsu.hdl: {e}", file=sys.stderr)
        return 2
    dut = LoadStoreUnit(p)
    out = Path(args.emit_verilog)
    out.write_text(verilog_text(dut, TOP))
    out.with_suffix(".vh").write_text(header_text(dut, TOP))
    return 0


if __name__ == "__main__":
    sys.exit(main())
