"""Writes data/sm100_cp.jsonl: tcgen05.cp records for the sm_100 family.

No GPU of the family is at hand, and the expectations do not come from the model: each
record's shared memory holds a random matrix placed through CUTLASS's canonical K-major
layout and CuTe's swizzle, and its expected Tensor Memory has every row where CUTLASS's UTCCP
atoms put it (tb/cute.py, transcribed from CUTLASS's headers). The model and the RTL replay
them.

Every shape and multicast, plain and with each source format (the elements packed, the
padding random), under each swizzle; random starts, LBO / SBO, lane and column origins, some
with a base offset, some with ``[taddr+imm]`` or an immediate descriptor in the text, some over
a nonzero Tensor Memory; and refusals: every descriptor field no copy may use, a start that
breaks its swizzle row, a byte past shared memory, a column origin off 4, columns past the
allocation, lanes past 127. All with the 64-column allocation of data/sm100_tmem.jsonl (one unit
builds for both files).

    python tb/make_cp_trace.py [--out data/sm100_cp.jsonl] [--seed 1]
"""

import argparse
import json
from pathlib import Path

import cute
import numpy as np
from tensorlsu.sim import descriptor
from tensorlsu.sim.decompress import FORMATS, compress
from tensorlsu.sim.ptx import CP_SHAPES

FORMS = [("128x256b", None), ("4x256b", None), ("128x128b", None), ("64x128b", "warpx2::02_13"),
         ("64x128b", "warpx2::01_23"), ("32x128b", "warpx4")]
TARGETS = ("sm_100a", "sm_103a", "sm_110a")
#: The allocation of every record: data/sm100_tmem.jsonl's (make_tmem_trace.COLS).
COLS = 64
LANES = 128


def _text(shape, cast, fmt, group, addr, desc):
    q = f"cta_group::{group}.{shape}" + (f".{cast}" if cast else "") + (f".b8x16.{fmt}" if fmt else "")
    return f"tcgen05.cp.{q} {addr}, {desc};"


def _layout(rng, shape, code):
    """A start, LBO and SBO that keep the groups and chunks of the matrix apart."""
    rows, bits = CP_SHAPES[shape]
    s = descriptor.SWIZZLE_BYTES[code]
    group = 8 * s                                   # bytes of one 8-row group
    chunks = bits // 128
    if code == 0:
        lbo = group * int(rng.integers(1, 3))       # the second chunks after the first ones
        sbo = (lbo * chunks if chunks > 1 else group) + 16 * int(rng.integers(0, 4))
    else:
        lbo = 16 * int(rng.integers(0, 4))          # ignored when swizzled
        sbo = group * int(rng.integers(1, 3))
    pattern = max(8 * s, 16)                        # a swizzle pattern repeats every 8 rows
    start = pattern * int(rng.integers(0, 4))
    if code and chunks == 1 and rng.random() < 0.5:
        start += 16 * int(rng.integers(0, s // 16))  # a 128-bit row may start inside its row
    return start, lbo, sbo


def _extent(start, lbo, sbo, shape, code):
    rows, bits = CP_SHAPES[shape]
    s = descriptor.SWIZZLE_BYTES[code]
    last = start + ((rows - 1) // 8) * sbo + 8 * s + (lbo if code == 0 and bits == 256 else 0) + 128
    return -(-last // 1024) * 1024


def _matrix(rng, shape, fmt):
    """(what shared memory holds, what Tensor Memory should get) for a random matrix."""
    rows, bits = CP_SHAPES[shape]
    if fmt is None:
        m = rng.integers(0, 256, (rows, bits // 8), dtype=np.uint8)
        return m, m
    w = FORMATS[fmt]
    elems = rng.integers(0, 1 << w, (rows, bits // 8), dtype=np.uint8)
    packed = compress(elems.reshape(rows, -1, 16), fmt).reshape(rows, -1)
    pad = 16 * w // 8
    for c in range(bits // 128):                    # padding the copy must not read
        packed[:, 16 * c + pad:16 * c + 16] = rng.integers(0, 256, (rows, 16 - pad), dtype=np.uint8)
    return packed, elems


def _origin(rng, shape, cast):
    rows, bits = CP_SHAPES[shape]
    col = 4 * int(rng.integers(0, (COLS - bits // 32) // 4 + 1))
    lane = int(rng.integers(0, 32)) if shape == "4x256b" else 0
    return lane << 16 | col


def records(seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for shape, cast in FORMS:
        for fmt in (None, "b6x16_p32", "b4x16_p64"):
            for code in (0, 6, 4, 2):
                start, lbo, sbo = _layout(rng, shape, code)
                base = int(rng.integers(1, 8)) if code and rng.random() < 0.2 else 0
                start += 128 * base if base else 0
                held, want = _matrix(rng, shape, fmt)
                smem = cute.place(held, start, lbo, sbo, code, base, _extent(start, lbo, sbo, shape, code))
                desc = descriptor.encode(start, lbo, sbo, code, base)
                taddr = _origin(rng, shape, cast)
                before = np.zeros((LANES, COLS), np.uint32)
                rec = {"target": TARGETS[int(rng.integers(0, 3))], "smem": smem.tobytes().hex(),
                       "tmem_cols": COLS}
                if rng.random() < 0.25:
                    before = rng.integers(0, 1 << 32, (LANES, COLS), dtype=np.uint32)
                    rec["tmem"] = before.astype("<u4").tobytes().hex()
                roll = rng.random()
                addr, dtext = "[%r1]", "%rd1"
                if roll < 0.2:          # an offset in the text: the register holds the rest
                    addr, rec["taddr"] = "[%r1+16]", (taddr - 16) % (1 << 32)
                elif roll < 0.3:        # the descriptor as an immediate
                    dtext, rec["taddr"] = hex(desc), taddr
                else:
                    rec["taddr"] = taddr
                if dtext == "%rd1":
                    rec["desc"] = desc
                group = int(rng.integers(1, 3))
                rec["instr"] = _text(shape, cast, fmt, group, addr, dtext)
                rec["expect"] = {"tmem": cute.landed(shape, cast, want, taddr, before).astype("<u4").tobytes().hex()}
                out.append(rec)
    good = descriptor.encode(0, 0, 1024)
    small = np.zeros(20 * 1024, np.uint8).tobytes().hex()
    # each refusal's expectation is a phrase the model's message and the RTL's both contain
    refusals = [
        (good | 1 << 14, 0, "descriptor"), (good | 1 << 30, 0, "descriptor"),
        (good & ~(1 << 46), 0, "descriptor"), (good | 1 << 47, 0, "descriptor"),
        (good | 1 << 48, 0, "descriptor"), (good | 1 << 52, 0, "descriptor"),
        (good | 1 << 60, 0, "descriptor"), (good | 1 << 61, 0, "descriptor"),
        (good | 3 << 61, 0, "descriptor"), (good | 5 << 61, 0, "descriptor"),
        (good | 7 << 61, 0, "descriptor"),
        (descriptor.encode(112, 0, 1024, 2), 0, "swizzle row"),
        (descriptor.encode(16, 0, 1024, 6), 0, "swizzle row"),
        (descriptor.encode(8192, 0, 1024), 0, "reaches past"),
        (good, 2, "multiple of 4"), (good, COLS - 4, "columns"),
        (good, 1 << 16, "beyond lane 127"),
    ]
    for desc, taddr, why in refusals:
        out.append({"instr": _text("128x256b", None, None, 1, "[%r1]", "%rd1"), "target": "sm_100a",
                    "smem": small, "desc": desc, "taddr": taddr, "tmem_cols": COLS, "expect": {"error": why}})
    for shape, cast in FORMS[3:]:               # the multicast shapes reach every quadrant
        out.append({"instr": _text(shape, cast, None, 1, "[%r1]", "%rd1"), "target": "sm_100a", "smem": small,
                    "desc": good, "taddr": 32 << 16, "tmem_cols": COLS, "expect": {"error": "beyond lane 127"}})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parents[1] / "data" / "sm100_cp.jsonl"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    recs = records(args.seed)
    with open(args.out, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
    print(f"{len(recs)} records -> {args.out}")


if __name__ == "__main__":
    main()
