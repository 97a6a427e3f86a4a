"""Random tcgen05.ld / tcgen05.st cases for the Tensor Memory tests: a form, a taddr, a warp
and immHalfSplitoff, sometimes made illegal (lanes outside the quadrant, columns past the
memory, a missing / negative / overlapping split)."""

from tensorlsu.sim.tmem_plan import NUMS, SHAPES
from tensorlsu.sim import ptx
from tensorlsu.sim.ptx import TCGEN05_REGS_PER_X1

WIDTH = {"32x32b": 1, "16x32bx2": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}


def span_of(ins) -> int:
    """Columns one access (one half of .16x32bx2) spans."""
    return ins.num * (2 if ins.pack else 1) * WIDTH[ins.shape]


def random_form(rng, max_num: int = 16, store: bool | None = None):
    while True:
        shape = rng.choice(SHAPES)
        num = rng.choice([n for n in NUMS if n <= max_num])
        if TCGEN05_REGS_PER_X1[shape] * num > 128:
            continue
        op = rng.choice(["tcgen05.ld", "tcgen05.st"]) if store is None else \
            ("tcgen05.st" if store else "tcgen05.ld")
        pack = rng.random() < 0.3
        red = None
        if op == "tcgen05.ld" and shape in ("32x32b", "16x32bx2") and num >= 2 and not pack \
                and rng.random() < 0.4:
            red = (rng.choice(["min", "max"]), rng.choice(["f32", "u32", "s32"]))
        q = ("pack::16b" if op == "tcgen05.ld" else "unpack::16b") if pack else ""
        if red:
            mods = "".join(x for x in (".abs", ".NaN") if red[1] == "f32" and rng.random() < 0.4)
            text = f"tcgen05.ld.red.sync.aligned.{shape}.x{num}.{red[0]}{mods}.{red[1]}"
        else:
            text = f"{op}.sync.aligned.{shape}.x{num}{'.' + q if q else ''}.b32"
        ins = ptx.parse(text, "sm_103a")
        return ins


def random_case(rng, quadrant: int, cols: int, bad: float = 0.13, **form):
    """(ins, taddr, warp, split): a form that fits ``cols`` columns, legal unless the draw
    (probability ``bad``) breaks it."""
    while True:
        ins = random_form(rng, **form)
        span = span_of(ins)
        if 2 * span + 8 <= cols:
            break
    wide = ins.shape == "32x32b"
    lane = 32 * quadrant + (0 if wide else rng.randrange(17))
    split = rng.randrange(span, span + 8) if ins.shape == "16x32bx2" else None
    col = rng.randrange(max(1, cols - span - (split or 0) + 1))
    warp = quadrant + 4 * rng.randrange(2)
    r = rng.random() * 0.13 / max(bad, 1e-9)
    if r < 0.05:
        lane = 32 * quadrant + rng.choice([1, 17, 40])            # outside the quadrant
    elif r < 0.10:
        col = cols - rng.randrange(1, 3)                            # past the last column
    elif r < 0.13 and ins.shape == "16x32bx2":
        split = rng.choice([None, -4, 0])                           # missing, negative, overlapping
    return ins, (lane << 16) | col, warp, split
