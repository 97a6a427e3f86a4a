"""A quadrant's instruction check (hdl/tmem/check.py, with its ``verdict``) alone, in Amaranth's
simulator: every form the quadrant runs, at the columns and immHalfSplitoff values on either side
of each limit, refused exactly where the model refuses.

Expected values: tensorlsu.sim.model (tcgen05_ld / tcgen05_st), which follows the PTX text's
bounds (the last column, the warp's quadrant, the halves of a .16x32bx2 store)."""

import numpy as np
from amaranth import Elaboratable, Module, Mux, Signal
from amaranth.sim import Simulator
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.params import TmemParams
from tensorlsu.hdl.tmem.check import TmemCheck, verdict
from tensorlsu.sim.tmem_plan import schedule
from tensorlsu.hdl.tmem.records import instr_fields
from tensorlsu.sim import layouts, model, ptx

COLS, QUADRANT = 512, 2


class _Checked(Elaboratable):
    """The check and its verdict, combinational."""

    def __init__(self):
        self.check = TmemCheck(TmemParams(COLS), QUADRANT)
        self.error = Signal(Error)

    def elaborate(self, platform):
        m = Module()
        c = m.submodules.check = self.check
        col = c.instr.taddr[:16]
        first = Mux(c.x2, col + c.instr.split, col)
        m.d.comb += self.error.eq(verdict(m, c.early, first, c.span_log, COLS))
        return m


def _text(op, shape, num, pack):
    q = ("pack::16b" if op == "tcgen05.ld" else "unpack::16b") if pack else ""
    return f"{op}.sync.aligned.{shape}.x{num}{'.' + q if q else ''}.b32"


def _cases():
    """(ins, taddr, warp, split) on both sides of every bound of every form."""
    for op, shape, num, pack in schedule().forms():
        ins = ptx.parse(_text(op, shape, num, pack), "sm_100a")
        # the columns one access spans (the model's rule: .num columns a 32-bit word, two with
        # .pack, times the shape's 32-bit width), derived here from the PTX text's layouts
        span = int(((layouts.tmem_table(ins)[..., 1]).max() + 1) * (2 if pack else 1))
        lane = 32 * QUADRANT
        splits = [None] if shape != "16x32bx2" else [span - 1, span, span + 1, 0, -1, None]
        for split in splits:
            reach = span + max(split or 0, 0)
            for col in (0, COLS - reach, COLS - reach + 1, COLS - 1):
                if col >= 0:
                    yield ins, (lane << 16) | col, QUADRANT, split
        yield ins, ((lane + 17) << 16), QUADRANT, (span if shape == "16x32bx2" else None)


def test_refused_where_the_model_refuses():
    dut = _Checked()
    cases = list(_cases())
    got = []

    async def bench(ctx):
        for ins, taddr, warp, split in cases:
            for k, v in instr_fields(ins, taddr, warp, split).items():
                ctx.set(getattr(dut.check.instr, k), v)
            got.append(ctx.get(dut.error))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    tm = np.zeros((128, COLS), np.uint32)
    seen = {"ok": 0, "refused": 0}
    for (ins, taddr, warp, split), err in zip(cases, got):
        try:
            if ins.op == "tcgen05.ld":
                model.tcgen05_ld(ins, tm, taddr, warp, split, cols=COLS)
            else:
                model.tcgen05_st(ins, tm, taddr, warp, np.zeros((32, ins.nregs), np.uint32), split, cols=COLS)
            refused = None
        except model.ModelError as e:
            refused = str(e)
        where = f"{ins.form} taddr=0x{taddr:x} split={split}"
        if refused:
            assert err != Error.NONE, f"{where}: the model refuses ({refused}), the check does not"
        else:
            assert err == Error.NONE, f"{where}: refused with {err!r}"
        seen["refused" if refused else "ok"] += 1
    assert seen["ok"] >= 300 and seen["refused"] >= 300, seen
