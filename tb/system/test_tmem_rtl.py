"""Tensor Memory through the unit's Verilog (the top, four quadrants beside the shared-memory
path), with cocotb on Icarus and Verilator.

Expected values: the model (tensorlsu.sim.model tcgen05_ld / tcgen05_st, whose tables are
checked against CuTe's SM100 copy atoms and the PTX text in test_layouts_cute.py and
test_model.py), applied per quadrant in each port's order.
"""

import json
import random

import make_cp_trace
import numpy as np
import pytest
from conftest import DATA
from tensorlsu.cosim import cli
from tensorlsu.cosim.backend import RtlBackend
from tensorlsu.cosim.jobs import quadrant_image, tmem_from_dumps, tmem_instr_job, tmem_outcome
from tensorlsu.cosim.runner import run_jobs
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.pipeline.forms import form_id
from tensorlsu.sim import descriptor, model, ptx, trace
from tmemgen import random_case

SIMS = ["icarus", "verilator"]
COLS = 64          # the Tensor Memory the tests build (the sm100 test data's allocation)


@pytest.mark.parametrize("sim", SIMS)
def test_sm100_records_through_rtl(sim, capsys):
    """Every record of the sm_100 Tensor Memory test data: each shape and packing, .red of
    every type, four warps, refusals."""
    rc = cli.main(["replay", str(DATA / "sm100_tmem.jsonl"), "--backend", "rtl", "--sim", sim])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert "89 records, 89 passed, 0 failed" in out


@pytest.mark.parametrize("sim", SIMS)
def test_tcgen05_cp_records_through_rtl(sim, capsys, tmp_path):
    """The records of the tcgen05.cp test data (expectations from CUTLASS's layouts,
    tb/cute.py): each shape, multicast, source format and swizzle, and every refusal, through
    the whole unit (shared memory filled through its fill port, Tensor Memory dumped). All 92
    on Verilator; on Icarus the first of each shape, source format and refusal kind (`make
    sim` replays all of them there)."""
    path = DATA / "sm100_cp.jsonl"
    if sim == "icarus":
        seen, keep = set(), []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            form = rec["instr"].split()[0]
            key = (form.split(".")[3], "b6x16" in form, "b4x16" in form, rec["expect"].get("error"))
            if key not in seen:
                seen.add(key)
                keep.append(line)
        path = tmp_path / "cp_each_kind.jsonl"
        path.write_text("\n".join(keep) + "\n")
    n = len(path.read_text().splitlines())
    rc = cli.main(["replay", str(path), "--backend", "rtl", "--sim", sim])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert f"{n} records, {n} passed, 0 failed" in out and n >= 20


def _random_jobs(seed: int, per_port: int, cols: int = COLS):
    """Jobs of four warps at once: per quadrant a random run of loads and stores (stores
    followed by loads of the same columns), with the whole image compared after each job;
    a reset between two jobs."""
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    tm = nrng.integers(0, 1 << 32, size=(128, cols), dtype=np.uint64).astype(np.uint32)
    for v in (0x7FC00001, 0x80000000, 0xFF800000, 0x7F800000):     # NaN, -0.0, ±inf
        tm[rng.randrange(128), rng.randrange(cols)] = v
    jobs, expect = [], []
    for j in range(2):
        job = {"tmem_image": {str(q): quadrant_image(tm, q) for q in range(4)}, "tmem": {},
               "tmem_dump": True, "reset": j == 1}
        want = {}
        for q in range(4):
            instrs, outs = [], []
            prev_store = None
            for k in range(per_port):
                if prev_store is not None and rng.random() < 0.5:
                    # load back what the last store wrote: same lanes and columns
                    ins_s, taddr, warp, split = prev_store
                    text = ins_s.form.replace("tcgen05.st", "tcgen05.ld").replace("unpack::16b", "pack::16b")
                    ins = ptx.parse(text, "sm_103a")
                else:
                    ins, taddr, warp, split = random_case(rng, q, cols)
                regs = nrng.integers(0, 1 << 32, size=(32, ins.nregs), dtype=np.uint64).astype(np.uint32)
                instrs.append(tmem_instr_job(ins, taddr, warp, split, regs))
                try:
                    if ins.op == "tcgen05.st":
                        tm = model.tcgen05_st(ins, tm, taddr, warp, regs, split, cols=cols)
                        outs.append((ins, {}))
                        prev_store = (ins, taddr, warp, split)
                    else:
                        r, red = model.tcgen05_ld(ins, tm, taddr, warp, split, cols=cols)
                        outs.append((ins, {"regs": r.tolist()} | ({"redval": red.tolist()} if red is not None else {})))
                except model.ModelError as e:
                    outs.append((ins, {"refused": str(e)}))
            job["tmem"][str(q)] = instrs
            want[q] = outs
        jobs.append(job)
        expect.append((want, tm.copy()))
    return jobs, expect


@pytest.mark.parametrize("sim", SIMS)
def test_four_warps_at_once_against_the_model(sim):
    """Four quadrants' ports driven at once, each with random idle cycles and result
    back-pressure; random forms, taddrs, splits, data and refusals; stores read back; a
    reset between jobs. Every beat stream obeys the port's rules and every result and the
    final images equal the model's."""
    n = 24 if sim == "icarus" else 40
    jobs, expect = _random_jobs(5 + len(sim), n)
    results, _ = run_jobs(jobs, sim=sim, tmem_columns=COLS, seed=3, idle=0.25, backpressure=0.25)
    _check_random_jobs(results, expect, n)


def _check_random_jobs(results, expect, n, cols=COLS):
    """Every result of :func:`_random_jobs` and the images after each job equal the model's."""
    counts = {"ok": 0, "refused": 0, "red": 0, "store": 0}
    for j, (res, (want, image)) in enumerate(zip(results, expect)):
        for q in range(4):
            for k, ((ins, w), got) in enumerate(zip(want[q], res["tmem"][str(q)])):
                where = f"job {j} quadrant {q} instruction {k} ({ins.form})"
                out = tmem_outcome(ins, got)
                if "refused" in w:
                    assert out.get("error", Error.NONE.value) != Error.NONE.value, \
                        f"{where}: the model refuses ({w['refused']}), the RTL does not"
                    counts["refused"] += 1
                    continue
                assert "error" not in out, f"{where}: refused with {Error(out['error']).name}"
                counts["ok"] += 1
                counts["store"] += ins.op == "tcgen05.st"
                counts["red"] += ins.red is not None
                if "regs" in w:
                    assert out["regs"] == w["regs"], f"{where}: registers differ"
                if "redval" in w:
                    assert out["redval"] == w["redval"], f"{where}: redval differs"
        got = tmem_from_dumps(res["tmem_dump"], cols)
        bad = np.argwhere(got != image)
        assert not len(bad), f"job {j}: Tensor Memory differs first at lane, column {bad[0].tolist()}"
    assert counts["ok"] >= 4 * n and counts["refused"] >= 4 and counts["store"] >= 10 and counts["red"] >= 3, counts


def _cp_records():
    recs = list(trace.load(DATA / "sm100_cp.jsonl"))
    return [r for r in recs if len(r.raw["smem"]) // 2 <= 16 * 1024]


def _cp_expect(rec):
    cols = rec.raw["tmem_cols"]
    if "error" in rec.expect:
        return None
    img = np.zeros(128 * cols * 4, np.uint8)
    got = bytes.fromhex(rec.expect["tmem"])
    img[:len(got)] = np.frombuffer(got, np.uint8)
    return img.view("<u4").reshape(128, cols)


def test_tcgen05_cp_with_idle_and_back_pressure():
    """Copy records through the unit with idle cycles on every input stream and back-pressure on
    every output (the fills and dumps around them too): the same images and refusals."""
    cols = make_cp_trace.COLS       # the copy records' allocation
    recs = [r for r in _cp_records() if r.raw["tmem_cols"] == cols][:24]
    assert len(recs) == 24
    backend = RtlBackend()
    jobs = [backend.cp_job(r) for r in recs]
    results, _ = run_jobs(jobs, sim="icarus", smem_bytes=16 * 1024, tmem_columns=cols, idle=0.3, backpressure=0.3,
                          seed=5)
    for rec, res in zip(recs, results):
        want = _cp_expect(rec)
        if want is None:
            assert res["error"] != 0, rec.raw["instr"]
        else:
            assert res["error"] == 0 and np.array_equal(tmem_from_dumps(res["tmem_dump"], cols), want), rec.raw["instr"]


def test_tcgen05_cp_ordering():
    """A stmatrix offered as soon as a copy is taken, over the rows the copy reads, does not
    change what the copy reads (it waits for the copy's reads), and lands after it; a tcgen05.ld
    issued after the copy's result beat reads what the copy wrote."""
    rec = next(r for r in _cp_records() if "128x256b" in r.raw["instr"] and "b8x16" not in r.raw["instr"]
               and "error" not in r.expect)
    smem = np.frombuffer(bytes.fromhex(rec.raw["smem"]), np.uint8).copy()
    cols = rec.raw["tmem_cols"]
    ins = rec.ins
    desc, taddr = rec.raw.get("desc", ins.desc), rec.raw.get("taddr", ins.taddr)
    chunks = descriptor.chunk_addresses(ins, descriptor.decode(desc))
    rows = [int(a) for a in chunks[:32, 0]]                 # the first chunks the copy reads
    st = ptx.parse("stmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
    regs = np.random.default_rng(9).integers(0, 1 << 32, (32, 4), dtype=np.uint64).astype(np.uint32)
    before = model.tmem_image(bytes.fromhex(rec.raw.get("tmem", "")), cols)
    copied = model.tcgen05_cp(ins, smem, desc, taddr, before, cols=cols)
    stored = model.stmatrix(st, smem, rows, regs)
    job = RtlBackend().cp_job(rec)
    job["after"] = [{"form": form_id(st), "addr": rows, "store": [[int(regs[t][k]) for t in range(32)]
                                                                  for k in range(4)]}]
    job["dump_lines"] = len(smem) // 128
    ld = ptx.parse("tcgen05.ld.sync.aligned.32x32b.x8.b32", "sm_100a")
    lane_col = (taddr + ins.offset) % (1 << 32) & 0xFFFF
    load = {"tmem": {"0": [tmem_instr_job(ld, lane_col, 0)]}}
    results, _ = run_jobs([job, load], sim="icarus", smem_bytes=16 * 1024, tmem_columns=cols)
    res, got = results
    assert res["error"] == 0
    assert np.array_equal(tmem_from_dumps(res["tmem_dump"], cols), copied)
    assert res["after"][0]["error"] == 0 and res["after"][0]["accepted"] > res["accepted"]
    assert bytes.fromhex(res["dump"])[:len(smem)] == stored.tobytes()
    out = tmem_outcome(ld, got["tmem"]["0"][0])
    want, _ = model.tcgen05_ld(ld, copied, lane_col, 0, cols=cols)
    assert np.array_equal(np.array(out["regs"], np.uint32), want)


def test_one_bank_quadrants_against_the_model():
    """The area build (``tmem_banks=1``: one two-ported bank a quadrant, tcgen05.cp at half
    rate) through the whole unit on Verilator: every copy record gives CUTLASS's image or its
    refusal, and random four-warp loads and stores with idle cycles and back-pressure equal the
    model's, results and images."""
    cols = make_cp_trace.COLS       # the copy records' allocation
    recs = [r for r in _cp_records() if r.raw["tmem_cols"] == cols]
    n = 40
    jobs, expect = _random_jobs(11, n, cols)
    backend = RtlBackend()
    results, _ = run_jobs([backend.cp_job(r) for r in recs] + jobs, sim="verilator", tmem_columns=cols, idle=0.2,
                          backpressure=0.2, seed=7, params={"tmem_banks": 1})
    for rec, res in zip(recs, results):
        want = _cp_expect(rec)
        assert want is not None and res["error"] == 0, rec.raw["instr"]
        assert np.array_equal(tmem_from_dumps(res["tmem_dump"], cols), want), rec.raw["instr"]
    assert len(recs) >= 40
    _check_random_jobs(results[len(recs):], expect, n, cols)
