"""A user's own cocotb test of the unit, with the project's drivers (tensorlsu.cosim.drivers)
and the model as the reference. run.py builds the Verilog and runs it on Icarus or Verilator.

It fills shared memory, runs a swizzled ldmatrix .x4 and checks the registers and the bank
cycles against the model, stores the registers back elsewhere with stmatrix .x4 .trans, reads
shared memory back through the dump port, and sends a misaligned row address, which the unit
refuses on its result stream and keeps working."""

import cocotb
import numpy as np
from cocotb.clock import Clock
from tensorlsu.cosim.drivers import LsuDriver
from tensorlsu.cosim.runner import layout_for
from tensorlsu.hdl.params import Params
from tensorlsu.sim import model, ptx

SMEM_BYTES = 4096


@cocotb.test()
async def ldmatrix_stmatrix_and_a_refusal(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    lsu = LsuDriver(dut, layout_for(Params(smem_bytes=SMEM_BYTES, tmem_columns=0, global_bytes=0)))
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
