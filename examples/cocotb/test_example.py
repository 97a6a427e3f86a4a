"""A user's own cocotb test of the unit, with the project's drivers (tensorlsu.cosim.drivers)
and the model as the reference. run.py builds the Verilog and runs it on Icarus or Verilator.

The first test fills shared memory, runs a swizzled ldmatrix .x4 and checks the registers and
the bank cycles against the model, stores the registers back elsewhere with stmatrix .x4 .trans,
reads shared memory back through the dump port, and sends a misaligned row address, which the
unit refuses on its result stream and keeps working. The second fills Tensor Memory, runs
tcgen05.ld and tcgen05.st on one quadrant and a tcgen05.cp from a CuTe-described tile across
all four, checks them against the model, and has a load from another warp's lanes and a copy
past shared memory refused."""

import cocotb
import numpy as np
from cocotb.clock import Clock
from tensorlsu.cosim.drivers import CopyDriver, LsuDriver, QuadrantDriver
from tensorlsu.cosim.runner import layout_for
from tensorlsu.hdl.params import Params
from tensorlsu.sim import cute, model, ptx

SMEM_BYTES = 4096
TMEM_COLUMNS = 32
#: the unit run.py builds (the smallest Tensor Memory, no global port)
PARAMS = Params(smem_bytes=SMEM_BYTES, tmem_columns=TMEM_COLUMNS, global_bytes=0)


@cocotb.test()
async def ldmatrix_stmatrix_and_a_refusal(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    lsu = LsuDriver(dut, layout_for(PARAMS))
    await lsu.reset()
    image = np.random.default_rng(7).integers(0, 256, SMEM_BYTES, dtype=np.uint8)
    await lsu.load(image.tobytes())

    ld = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
    addr = [(t % 8) * 128 + (((t // 8) ^ (t % 8)) << 4) for t in range(32)]   # Swizzle<3,4,3>
    out = await lsu.run(ld, addr)
    assert out["error"] is None
    assert (out["regs"] == model.ldmatrix(ld, image, addr)).all()
    assert out["cycles"] == model.wavefronts(ld, addr) == 4

    st = ptx.parse("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "sm_90a")
    rows = [2048 + 16 * t for t in range(32)]
    out2 = await lsu.run(st, rows, regs=out["regs"])
    assert out2["error"] is None and out2["regs"] is None
    after = np.frombuffer(await lsu.read(SMEM_BYTES), dtype=np.uint8)
    assert (after == model.stmatrix(st, image, rows, out["regs"])).all()

    bad = await lsu.run(ld, [8] + addr[1:])
    assert bad["error"] == "MISALIGNED", bad["error"]
    again = await lsu.run(ld, addr)                      # and it keeps working
    assert again["error"] is None and (again["regs"] == out["regs"]).all()


@cocotb.test()
async def tensor_memory_and_a_copy(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    layout = layout_for(PARAMS)
    lsu = LsuDriver(dut, layout)
    quads = [QuadrantDriver(dut, layout, q) for q in range(4)]
    await lsu.reset()
    rng = np.random.default_rng(11)
    tmem = rng.integers(0, 1 << 32, (128, TMEM_COLUMNS), dtype=np.uint32)     # lanes x columns
    for q in quads:
        await q.load(tmem[32 * q.q:32 * q.q + 32])

    # warp 1 of the warpgroup reaches quadrant 1: lanes 32-63; taddr is lane << 16 | column
    ld = ptx.parse("tcgen05.ld.sync.aligned.32x32b.x4.b32", "sm_100a")
    out = await quads[1].run(ld, taddr=32 << 16 | 4)
    regs, _ = model.tcgen05_ld(ld, tmem, 32 << 16 | 4, warp=1, cols=TMEM_COLUMNS)
    assert out["error"] is None and (out["regs"] == regs).all()

    st = ptx.parse("tcgen05.st.sync.aligned.32x32b.x4.b32", "sm_100a")
    assert (await quads[1].run(st, taddr=32 << 16 | 16, regs=regs))["error"] is None
    tmem = model.tcgen05_st(st, tmem, 32 << 16 | 16, 1, regs, cols=TMEM_COLUMNS)
    assert (await quads[1].read() == tmem[32:64]).all()

    bad = await quads[1].run(ld, taddr=64 << 16)                 # quadrant 2's lanes from warp 1
    assert bad["error"] == "QUADRANT", bad["error"]

    # tcgen05.cp of a 128 x 32-byte tile laid out as CuTe's Swizzle<1,4,3> o (128,32):(32,1)
    image = rng.integers(0, 256, SMEM_BYTES, dtype=np.uint8)
    await lsu.load(image.tobytes())
    cp = ptx.parse("tcgen05.cp.cta_group::1.128x256b", "sm_100a")
    desc = cute.cp_descriptor(cp, cute.ComposedLayout(cute.Swizzle(1, 4, 3), cute.Layout((128, 32), (32, 1))), 0)
    copier = CopyDriver(dut, layout)
    assert await copier.run(cp, desc, taddr=8) is None           # lanes 0-127, columns 8-15
    tmem = model.tcgen05_cp(cp, image, desc, 8, tmem, cols=TMEM_COLUMNS)
    for q in quads:
        assert (await q.read() == tmem[32 * q.q:32 * q.q + 32]).all()

    past = cute.cp_descriptor(cp, cute.ComposedLayout(cute.Swizzle(1, 4, 3), cute.Layout((128, 32), (32, 1))), 2048)
    assert await copier.run(cp, past, taddr=8) == "OUT_OF_RANGE"    # reads past the 4 KiB
    again = await quads[1].run(ld, taddr=32 << 16 | 8)               # and it keeps working
    assert again["error"] is None
    assert (again["regs"] == model.tcgen05_ld(ld, tmem, 32 << 16 | 8, warp=1, cols=TMEM_COLUMNS)[0]).all()
