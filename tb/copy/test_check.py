"""CopyCheck alone (Amaranth's simulator): its verdict on random copies, an instruction a clock,
equals the model's.

Expected values: model.tcgen05_cp's refusals (checked against CUTLASS's layouts and the
descriptor's definition in tb/sim/test_tcgen05_cp.py), each message mapped to the unit's code
(hdl/codes.py). Shared memory sizes are multiples of 128 bytes (docs/tcgen05-cp.md: the RTL's
swizzled bound is the model's there)."""

import numpy as np
import pytest
from amaranth.sim import Simulator
from tensorlsu.hdl.codes import FORMAT_CODES, Error
from tensorlsu.hdl.copy.check import CopyCheck
from tensorlsu.hdl.copy.records import FORMS, instr_fields
from tensorlsu.hdl.params import Params
from tensorlsu.sim import descriptor, model, ptx

SMEM = 16 * 1024
#: A model message → the unit's code.
CODES = [("descriptor", Error.DESCRIPTOR), ("swizzle row", Error.MISALIGNED), ("reaches past", Error.OUT_OF_RANGE),
         ("multiple of 4", Error.MISALIGNED), ("reach beyond column", Error.COLUMNS),
         ("reach beyond lane", Error.LANES)]


def simulate(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-6)

    async def testbench(ctx):
        await bench(ctx)
    sim.add_testbench(testbench)
    sim.run()


def _offer(ctx, dut, ins, desc, taddr, size):
    for k, v in instr_fields(ins, desc, taddr).items():
        ctx.set(getattr(dut.instr, k), v)
    ctx.set(dut.smem_size, size)
    ctx.set(dut.valid, 1)


def _verdict(ins, desc, taddr, size, cols):
    try:
        model.tcgen05_cp(ins, np.zeros(size, np.uint8), desc, taddr, cols=cols)
        return Error.NONE
    except model.ModelError as e:
        return next(code for key, code in CODES if key in str(e))


def _case(rng):
    f = int(rng.integers(0, len(FORMS)))
    shape, cast = FORMS[f]
    fmt = [None, "b6x16_p32", "b4x16_p64"][int(rng.integers(0, 3))]
    ins = ptx.parse(f"tcgen05.cp.cta_group::1.{shape}" + (f".{cast}" if cast else "")
                    + (f".b8x16.{fmt}" if fmt else ""))
    code = int(rng.choice([0, 2, 4, 6] * 5 + [1, 3, 5, 7]))
    small = rng.random() < 0.8          # offsets that keep most copies inside
    lbo = int(rng.integers(0, 64 if small else 1 << 14))
    sbo = int(rng.integers(0, 64 if small else 1 << 14))
    desc = (lbo << 16 | sbo << 32 | 1 << 46
            | int(rng.integers(0, 8)) << 49 | code << 61)
    start = int(rng.integers(0, SMEM // 64)) << 4 if rng.random() < 0.8 else int(rng.integers(0, 1 << 18)) & ~15
    desc = desc & ~0x3FFF | start >> 4
    for bit in (14, 15, 30, 31, 47, 48, 52, 53, 58, 60):     # now and then a bad field
        if rng.random() < 0.01:
            desc ^= 1 << bit
    lane = 0 if rng.random() < 0.7 else int(rng.integers(0, 130))
    col = int(rng.integers(0, 40)) if rng.random() < 0.3 else 4 * int(rng.integers(0, 9))
    return ins, desc, lane << 16 | col


def _size(rng, ins, desc, taddr):
    """A shared memory of whole 128-byte lines: half the time just around the copy's last
    line (one line short, exact, one more), else random."""
    try:
        last = int(descriptor.chunk_addresses(ins, descriptor.decode(desc)).max()) + 16
    except descriptor.DescriptorError:
        last = None
    if last is None or rng.random() < 0.5:
        return 128 * int(rng.integers(1, SMEM // 128 + 1))
    lines = -(-last // 128) + int(rng.integers(-1, 2))
    return 128 * min(max(lines, 1), SMEM // 128)


@pytest.mark.parametrize("seed", range(4))
def test_check_agrees_with_the_model(seed):
    rng = np.random.default_rng(seed)
    cols = 32
    dut = CopyCheck(Params(smem_bytes=SMEM), cols)
    cases = [_case(rng) for _ in range(400)]
    sizes = [_size(rng, *c) for c in cases]
    seen = set()

    async def bench(ctx):
        # an instruction a clock: each verdict LATENCY clocks after its instruction
        flow = list(zip(cases, sizes)) + [None] * CopyCheck.LATENCY
        for i, case in enumerate(flow):
            if case is None:
                ctx.set(dut.valid, 0)
            else:
                _offer(ctx, dut, *case[0], case[1])
            await ctx.tick()
            # (after the tick: the instruction of LATENCY clocks, this one's included)
            if i < CopyCheck.LATENCY - 1:
                assert not ctx.get(dut.out_valid)
                continue
            if flow[i - CopyCheck.LATENCY + 1] is None:
                assert not ctx.get(dut.out_valid)
                continue
            (ins, desc, taddr), size = flow[i - CopyCheck.LATENCY + 1]
            assert ctx.get(dut.out_valid)
            assert ctx.get(dut.out_instr.desc) == desc
            want = _verdict(ins, desc, taddr, size, cols)
            got = Error(ctx.get(dut.error))
            assert got == want, (ins.form, hex(desc), hex(taddr), size)
            seen.add(want)
            if want == Error.NONE:
                f = descriptor.decode(desc)
                assert (ctx.get(dut.start), ctx.get(dut.lbo), ctx.get(dut.sbo), ctx.get(dut.base_offset)) == \
                    (f.start, f.lbo, f.sbo, f.base_offset)
                assert 16 << ctx.get(dut.swizzle_log) == f.swizzle_bytes

    simulate(dut, bench)
    assert seen >= {Error.NONE, Error.DESCRIPTOR, Error.MISALIGNED, Error.OUT_OF_RANGE, Error.COLUMNS, Error.LANES}


def test_unknown_form_or_format_is_unsupported():
    dut = CopyCheck(Params(smem_bytes=SMEM), 32)

    async def verdict(ctx):
        ctx.set(dut.valid, 1)
        for _ in range(CopyCheck.LATENCY):
            await ctx.tick()
        return Error(ctx.get(dut.error))

    async def bench(ctx):
        ctx.set(dut.instr.desc, descriptor.encode(0, 0, 1024))
        ctx.set(dut.instr.form, len(FORMS))
        assert await verdict(ctx) == Error.UNSUPPORTED
        ctx.set(dut.instr.form, 0)
        ctx.set(dut.instr.fmt, max(FORMAT_CODES.values()) + 1)
        assert await verdict(ctx) == Error.UNSUPPORTED
        ctx.set(dut.instr.fmt, 0)
        assert await verdict(ctx) == Error.NONE

    simulate(dut, bench)
