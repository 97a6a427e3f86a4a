"""CopyStage alone (Amaranth's simulator), with shared memory and Tensor Memory modelled in the
bench: every record of data/sm100_cp.jsonl (expectations from CUTLASS's layouts, tb/cute.py)
gives the expected Tensor Memory image or refusal; the rate is a step a cycle when a step's
chunks lie in eight quads (quadrants of one bank: a step every two cycles, its columns in two
halves). The banks' model gives a read's row ``SharedBanks.READ_LATENCY``
cycles after the read (their port contract), and nothing at any other cycle."""

import json

import make_cp_trace
import numpy as np
import pytest
from conftest import DATA
from stagesim import simulate
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.copy.check import CopyCheck
from tensorlsu.hdl.copy.records import instr_fields
from tensorlsu.hdl.copy.stage import CopyStage
from tensorlsu.hdl.params import MAX_SMEM_BYTES, Params
from tensorlsu.hdl.smem.banks import SharedBanks
from tensorlsu.sim import ptx

RECORDS = [json.loads(line) for line in (DATA / "sm100_cp.jsonl").read_text().splitlines()]
#: A record's expected refusal (the model's words) → the unit's code.
CODES = {"descriptor": Error.DESCRIPTOR, "swizzle row": Error.MISALIGNED, "reaches past": Error.OUT_OF_RANGE,
         "multiple of 4": Error.MISALIGNED, "columns": Error.COLUMNS, "beyond lane": Error.LANES}
#: the records' allocation
COLS = make_cp_trace.COLS


def _written(banks, half):
    """The columns of a step (from its first) one write of the stage carries."""
    return range(4) if banks == 2 else range(2 * half, 2 * half + 2)


def _run(records, stall=0.0, seed=0, banks=2):
    """Each record through the stage; per record (error, image, cycles from the copy's
    acceptance to the cycle after its result beat)."""
    dut = CopyStage(Params(smem_bytes=MAX_SMEM_BYTES, tmem_columns=COLS, tmem_banks=banks))
    rng = np.random.default_rng(seed)
    out = []

    async def bench(ctx):
        for rec in records:
            ins = ptx.parse(rec["instr"], rec["target"])
            smem = np.frombuffer(bytes.fromhex(rec["smem"]), np.uint8)
            image = np.zeros(128 * COLS * 4, np.uint8)
            before = bytes.fromhex(rec.get("tmem", ""))
            image[:len(before)] = np.frombuffer(before, np.uint8)
            image = image.view("<u4").reshape(128, COLS).copy()
            for k, v in instr_fields(ins, rec.get("desc"), rec.get("taddr")).items():
                ctx.set(getattr(dut.instr.payload, k), v)
            ctx.set(dut.smem_size, len(smem))
            ctx.set(dut.tmem_idle, 0b1111)
            ctx.set(dut.instr.valid, 1)
            ctx.set(dut.result.ready, 1)
            cycles, accepted = 0, None
            flight = [{}] * SharedBanks.READ_LATENCY     # the reads of the last cycles, oldest first
            while True:
                # quiet now and then withheld: the claim waits for it
                ctx.set(dut.quiet, int(rng.random() >= stall))
                taken = ctx.get(dut.instr.valid) and ctx.get(dut.instr.ready)
                now = {q: ctx.get(dut.banks.line[q]) for q in range(8) if ctx.get(dut.banks.read[q])}
                for q in range(4):
                    port = dut.tmem[q]
                    if ctx.get(port.valid):
                        assert ctx.get(dut.hold) >> q & 1, "a write into a quadrant the copy does not hold"
                        col, lanes = ctx.get(port.payload.col), ctx.get(port.payload.lanes)
                        rows = [ctx.get(port.payload.rows[k]) for k in range(8)]
                        for j in _written(banks, ctx.get(port.payload.half)):
                            for lane in range(32):
                                if lanes >> lane & 1:
                                    image[32 * q + lane, col + j] = rows[lane % 8] >> (32 * j) & 0xFFFFFFFF
                if accepted is None and taken:
                    accepted = cycles
                done = ctx.get(dut.result.valid)
                error = Error(ctx.get(dut.result.payload.error))
                await ctx.tick()
                cycles += 1
                if taken:
                    ctx.set(dut.instr.valid, 0)
                flight = flight[1:] + [now]
                for q in range(8):
                    a = 128 * flight[0].get(q, 0) + 16 * q
                    ctx.set(dut.banks.rdata[q],
                            int.from_bytes(smem[a:a + 16].tobytes(), "little") if q in flight[0] else 0)
                if done:
                    break
                assert cycles < 500, "no result beat"
            out.append((error, image, cycles - accepted))

    simulate(dut, bench)
    return out


def _expected(rec):
    if "error" in rec["expect"]:
        return next(code for key, code in CODES.items() if key in rec["expect"]["error"]), None
    want = np.zeros(128 * COLS * 4, np.uint8)
    got = np.frombuffer(bytes.fromhex(rec["expect"]["tmem"]), np.uint8)
    want[:len(got)] = got
    return Error.NONE, want.view("<u4").reshape(128, COLS)


@pytest.mark.parametrize("part,banks", [(0, 2), (1, 2), (2, 2), (3, 2), (0, 1), (1, 1), (2, 1), (3, 1)])
def test_every_record(part, banks):
    recs = RECORDS[part::4]
    for rec, (error, image, _) in zip(recs, _run(recs, stall=0.2, seed=part, banks=banks)):
        code, want = _expected(rec)
        assert error == code, (rec["instr"], rec["expect"].get("error"))
        if want is not None:
            bad = np.argwhere(image != want)
            assert not len(bad), f"{rec['instr']}: lane/column {bad[0]} 0x{image[tuple(bad[0])]:x}, " \
                                 f"expected 0x{want[tuple(bad[0])]:x}"


def test_a_step_a_cycle():
    """A .128x256b copy with the 128-byte swizzle: 32 steps of eight quads in 32 cycles of
    reads (128 bytes a clock). From its acceptance to the cycle after the result beat: the
    cycle it is taken, the check's stages, the checked queue's head (the claim), 32 steps
    walked, the last step's reads on the banks, its rows back (the banks' read latency) and
    registered, its write, the beat."""
    rec = next(r for r in RECORDS if "128x256b" in r["instr"] and "error" not in r["expect"]
               and (r.get("desc", 0) >> 61) == 2)
    [(error, _, cycles)] = _run([rec])
    assert error == Error.NONE and cycles == 1 + CopyCheck.LATENCY + 1 + 32 + 1 + SharedBanks.READ_LATENCY + 1 + 1
    # one bank a quadrant: each step twice, its last half's write and beat as before
    [(error, _, cycles)] = _run([rec], banks=1)
    assert error == Error.NONE and cycles == 1 + CopyCheck.LATENCY + 1 + 64 + 1 + SharedBanks.READ_LATENCY + 1 + 1


def _burst(records, backpressure=0.0, seed=0, banks=2):
    """The records offered back to back (shared memory: the first record's); per result beat
    its error and cycle."""
    dut = CopyStage(Params(smem_bytes=MAX_SMEM_BYTES, tmem_columns=COLS, tmem_banks=banks))
    rng = np.random.default_rng(seed)
    smem = np.frombuffer(bytes.fromhex(records[0]["smem"]), np.uint8)
    beats = []

    async def bench(ctx):
        ctx.set(dut.smem_size, len(smem))
        ctx.set(dut.tmem_idle, 0b1111)
        ctx.set(dut.quiet, 1)
        todo = list(records)
        cycle = 0
        flight = [{}] * SharedBanks.READ_LATENCY
        while len(beats) < len(records):
            if todo:
                ins = ptx.parse(todo[0]["instr"], todo[0]["target"])
                for k, v in instr_fields(ins, todo[0].get("desc"), todo[0].get("taddr")).items():
                    ctx.set(getattr(dut.instr.payload, k), v)
            ctx.set(dut.instr.valid, bool(todo))
            ctx.set(dut.result.ready, int(rng.random() >= backpressure))
            now = {q: ctx.get(dut.banks.line[q]) for q in range(8) if ctx.get(dut.banks.read[q])}
            if todo and ctx.get(dut.instr.ready):
                todo.pop(0)
            if ctx.get(dut.result.valid) and ctx.get(dut.result.ready):
                beats.append((Error(ctx.get(dut.result.payload.error)), cycle))
            await ctx.tick()
            cycle += 1
            flight = flight[1:] + [now]
            for q in range(8):
                a = 128 * flight[0].get(q, 0) + 16 * q
                ctx.set(dut.banks.rdata[q], int.from_bytes(smem[a:a + 16].tobytes(), "little"))
            assert cycle < 2000

    simulate(dut, bench)
    return beats


def test_copies_back_to_back_at_a_step_a_cycle():
    """Four .128x256b copies offered back to back: one result beat every 32 cycles (128 bytes a
    clock), the next copy's first step right after the last step of the one before."""
    rec = next(r for r in RECORDS if "128x256b" in r["instr"] and "error" not in r["expect"]
               and (r.get("desc", 0) >> 61) == 2)
    beats = _burst([rec] * 4)
    assert [e for e, _ in beats] == [Error.NONE] * 4
    assert [b - a for (_, a), (_, b) in zip(beats, beats[1:])] == [32, 32, 32]
    # one bank a quadrant: 64 bytes a clock
    beats = _burst([rec] * 4, banks=1)
    assert [b - a for (_, a), (_, b) in zip(beats, beats[1:])] == [64, 64, 64]


def test_refusals_answer_in_order_under_back_pressure():
    """Copies and refused copies mixed, the result stream stalled at random: one beat per copy,
    in the order they were offered."""
    good = next(r for r in RECORDS if "32x128b" in r["instr"] and "error" not in r["expect"])
    bad = next(r for r in RECORDS if r["expect"].get("error") == "descriptor")
    order = [good, bad, good, good, bad, bad, good]
    beats = _burst([dict(r, smem=good["smem"]) for r in order], backpressure=0.6, seed=3)
    assert [e for e, _ in beats] == [Error.DESCRIPTOR if r is bad else Error.NONE for r in order]


def test_short_copies_back_to_back_at_a_step_a_cycle():
    """.4x256b copies (two steps each) offered back to back: a result beat every two cycles.
    The check takes three clocks, so that rate needs CHECKED copies in it and its queue."""
    rec = next(r for r in RECORDS if "4x256b" in r["instr"] and "128x" not in r["instr"]
               and "error" not in r["expect"])
    beats = _burst([rec] * 8)
    assert [e for e, _ in beats] == [Error.NONE] * 8
    assert [b - a for (_, a), (_, b) in zip(beats, beats[1:])] == [2] * 7
    beats = _burst([rec] * 8, banks=1)
    assert [b - a for (_, a), (_, b) in zip(beats, beats[1:])] == [4] * 7
