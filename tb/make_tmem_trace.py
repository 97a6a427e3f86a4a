"""Writes data/sm100_tmem.jsonl: tcgen05.ld / tcgen05.st records for the sm_100 family.

No sm_100-family GPU is available, so these records are not captured: their expectations
come from the model (``replay --emit``), whose Tensor Memory tables are checked against
CuTe's SM100 copy atoms and the PTX text (tb/sim/test_layouts_cute.py, tb/sim/test_model.py). They
pin that the RTL does what the model does, form by form.

Every shape, .num x1 / x2 / the largest whose packed form fits the 64 columns allocated, plain and 16-bit packed, load
and store; .red min / max of each type; four warps and random lane offsets; and refusals
(lanes outside the warp's quadrant, columns past the allocation, immHalfSplitoff missing,
negative or overlapping). Images are random where the instruction reads, in the warp's
quadrant, and zero elsewhere; a small allocation (``tmem_cols`` 64) keeps the file small.

    python tb/make_tmem_trace.py [--out data/sm100_tmem.jsonl] [--seed 1]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from tensorlsu.sim.ptx import TCGEN05_REGS_PER_X1

WIDTH = {"32x32b": 1, "16x32bx2": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}
TARGETS = ("sm_100a", "sm_103a", "sm_110a")


#: The allocation of every record: one unit (one build) replays them all.
COLS = 64


def records(seed: int):
    rng = np.random.default_rng(seed)
    out = []

    def add(text, *, store, num, shape, pack, split=None, refuse=None):
        span = WIDTH[shape] * num * (2 if pack else 1)
        halves = span + (split if split is not None and split >= 0 else 0)
        cols = COLS
        warp = int(rng.integers(0, 8))
        q = warp % 4
        lane = 32 * q + (0 if shape == "32x32b" else int(rng.integers(0, 17)))
        col = int(rng.integers(0, cols - halves + 1))
        expect = {}
        if refuse == "quadrant":
            lane = 32 * ((q + 1) % 4) + (0 if shape == "32x32b" else 5)
            expect = {"error": "quadrant"}
        elif refuse == "columns":
            col = cols - span + 1
            expect = {"error": "reach beyond"}
        elif refuse == "split":
            expect = {"error": "immHalfSplitoff"}
        tm = np.zeros((128, cols), np.uint32)
        # data where the instruction reads (and a column either side), zero elsewhere
        lo, hi = max(0, col - 1), min(cols, col + halves + 1)
        tm[32 * q:32 * q + 32, lo:hi] = rng.integers(0, 1 << 32, size=(32, hi - lo), dtype=np.uint64)
        if "red" in text:       # some NaN, infinity and signed zero among the data
            for v in (0x7FC00001, 0xFF800000, 0x80000000, 0x00000000):
                tm[32 * q + int(rng.integers(0, 32)), int(rng.integers(lo, hi))] = v
        image = tm.astype("<u4").tobytes().rstrip(b"\0")
        image += b"\0" * (-len(image) % 4)
        # .red needs sm_103a / sm_110a (not sm_100a)
        target = TARGETS[1 + len(out) % 2] if ".red" in text else TARGETS[len(out) % len(TARGETS)]
        rec = {"instr": text, "target": target, "taddr": (lane << 16) | col,
               "warp": warp, "tmem_cols": cols, "tmem": image.hex()}
        if split is not None:
            rec["split"] = split
        if store:
            nregs = TCGEN05_REGS_PER_X1[shape] * num
            rec["regs"] = rng.integers(0, 1 << 32, size=(32, nregs), dtype=np.uint64).tolist()
        if expect:
            rec["expect"] = expect
        out.append(rec)

    for shape in WIDTH:
        nums = [n for n in (1, 2, 4, 8, 16, 32, 64, 128) if TCGEN05_REGS_PER_X1[shape] * n <= 128]
        copies = 2 if shape == "16x32bx2" else 1
        big = max(n for n in nums if WIDTH[shape] * n * 2 * copies + 6 <= COLS)
        for num in sorted({1, 2, big}):
            for op, q in (("tcgen05.ld", "pack::16b"), ("tcgen05.st", "unpack::16b")):
                for pack in (False, True):
                    text = f"{op}.sync.aligned.{shape}.x{num}{'.' + q if pack else ''}.b32"
                    span = WIDTH[shape] * num * (2 if pack else 1)
                    split = span + int(rng.integers(0, 6)) if shape == "16x32bx2" else None
                    add(text, store=op == "tcgen05.st", num=num, shape=shape, pack=pack, split=split)
    for shape in ("32x32b", "16x32bx2"):
        for ty, mods in (("f32", ""), ("f32", ".abs"), ("f32", ".NaN"), ("f32", ".abs.NaN"),
                         ("u32", ""), ("s32", "")):
            for red in ("min", "max"):
                num = int(rng.choice([2, 4, 8, 16]))
                split = num + int(rng.integers(0, 4)) if shape == "16x32bx2" else None
                add(f"tcgen05.ld.red.sync.aligned.{shape}.x{num}.{red}{mods}.{ty}", store=False,
                    num=num, shape=shape, pack=False, split=split)
    # refusals
    for text, shape, num, store in (("tcgen05.ld.sync.aligned.32x32b.x4.b32", "32x32b", 4, False),
                                    ("tcgen05.st.sync.aligned.16x128b.x2.b32", "16x128b", 2, True),
                                    ("tcgen05.ld.sync.aligned.16x64b.x8.b32", "16x64b", 8, False)):
        for refuse in ("quadrant", "columns"):
            add(text, store=store, num=num, shape=shape, pack=False, refuse=refuse)
    for text, store, split in (("tcgen05.ld.sync.aligned.16x32bx2.x4.b32", False, None),
                               ("tcgen05.ld.sync.aligned.16x32bx2.x4.b32", False, -2),
                               ("tcgen05.st.sync.aligned.16x32bx2.x4.b32", True, 2)):
        add(text, store=store, num=4, shape="16x32bx2", pack=False, split=split, refuse="split")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).parents[1] / "data" / "sm100_tmem.jsonl"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    recs = records(args.seed)
    with tempfile.TemporaryDirectory() as d:
        raw = Path(d) / "in.jsonl"
        raw.write_text("".join(json.dumps(r) + "\n" for r in recs))
        # expectations: what the model produces
        rc = subprocess.call([sys.executable, "-m", "tensorlsu.cosim", "replay", str(raw), "--emit", args.out],
                             stdout=subprocess.DEVNULL)
    if rc:
        return rc
    # a refusal keeps the words every backend's message has (the model's and the RTL's differ)
    emitted = [json.loads(line) for line in Path(args.out).read_text().splitlines()]
    for rec, mine in zip(emitted, recs):
        if "error" in mine.get("expect", {}):
            rec["expect"] = mine["expect"]
    Path(args.out).write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in emitted))
    print(f"{args.out}: {len(emitted)} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
