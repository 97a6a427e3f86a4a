"""``python -m tensorlsu.hdl --emit-verilog OUT.v [--policy h200|packed] [--smem-bytes N]``

Writes the unit as one Verilog file and, beside it, ``OUT.vh``: its form ids, port payload
fields, error codes and build parameters (docs/ports.md)."""

import argparse
import sys
from pathlib import Path

from .emit import verilog_text
from .header import header_text
from .lsu import TOP, LoadStoreUnit
from .params import POLICIES, Params


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensorlsu.hdl", description=__doc__)
    ap.add_argument("--emit-verilog", metavar="OUT.v", required=True,
                    help=f"write the unit as one Verilog file (top module {TOP}) and its header OUT.vh")
    defaults = Params()
    ap.add_argument("--policy", choices=POLICIES, default=defaults.schedule.value)
    ap.add_argument("--smem-bytes", type=int, default=defaults.smem_bytes)
    ap.add_argument("--banks", type=int, default=defaults.banks)
    ap.add_argument("--bank-bytes", type=int, default=defaults.bank_bytes)
    ap.add_argument("--tmem-columns", type=int, default=defaults.tmem_columns,
                    help="Tensor Memory columns per lane (32 ... 512; 0: no Tensor Memory)")
    ap.add_argument("--tmem-banks", type=int, default=defaults.tmem_banks,
                    help="banks of each Tensor Memory quadrant: 2 (four column accesses a step) or 1")
    args = ap.parse_args(argv)
    try:
        p = Params(banks=args.banks, bank_bytes=args.bank_bytes, smem_bytes=args.smem_bytes,
                   schedule=args.policy, tmem_columns=args.tmem_columns,
                   tmem_banks=args.tmem_banks)
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
