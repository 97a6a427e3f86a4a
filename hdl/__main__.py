"""``python -m tensorlsu.hdl --emit-verilog OUT.v [--policy h200|packed] [--smem-bytes N]``"""

import argparse
import sys

from .emit import verilog_text
from .lsu import LoadStoreUnit
from .params import POLICIES, Params

from .lsu import TOP


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensorlsu.hdl", description=__doc__)
    ap.add_argument("--emit-verilog", metavar="OUT.v", required=True,
                    help=f"write the unit as one Verilog file (top module {TOP})")
    ap.add_argument("--policy", choices=POLICIES, default="h200")
    ap.add_argument("--smem-bytes", type=int, default=16 * 1024)
    ap.add_argument("--banks", type=int, default=32)
    ap.add_argument("--bank-bytes", type=int, default=4)
    args = ap.parse_args(argv)
    try:
        p = Params(banks=args.banks, bank_bytes=args.bank_bytes, smem_bytes=args.smem_bytes,
                   schedule=args.policy)
    except ValueError as e:
        print(f"python -m tensorlsu.hdl: {e}", file=sys.stderr)
        return 2
    dut = LoadStoreUnit(p)
    text = verilog_text(dut, TOP)
    with open(args.emit_verilog, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
