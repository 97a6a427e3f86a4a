# amaranth: UnusedElaboratable=no
"""The load/store unit RTL against the model, on Icarus and Verilator (cocotb).

Expected values: the model (tensorlsu.sim.model), which the H200 vectors pin; and the H200
vectors themselves through the RTL replay backend.
"""

import numpy as np
import pytest
import regress
from conftest import DATA
from tensorlsu.cosim import cli
from tensorlsu.cosim.backend import RtlBackend
from tensorlsu.cosim.layout import GMEM_AT, GMEM_BYTES
from tensorlsu.cosim.runner import run_jobs
from tensorlsu.hdl.codes import Error, Space
from tensorlsu.hdl.params import Params, fpga_build
from tensorlsu.hdl.pipeline import forms
from tensorlsu.sim import layouts, model, ptx, trace

SIMS = ["icarus", "verilator"]


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("policy", ["h200", "packed"])
def test_random_regression(sim, policy, tmp_path):
    n = 160 if sim == "icarus" else 400
    jobs, expect, final = regress.make_jobs(n, seed=11 + len(policy), policy=policy, smem_bytes=16 * 1024)
    results, _ = run_jobs(jobs, sim=sim, policy=policy, seed=7, idle=0.25, backpressure=0.25)
    table, fails = regress.compare(results, expect, final)
    assert not fails, "\n".join(fails[:20])
    assert sum(v[0] for v in table.values()) == n
    assert len(table) == len(forms.FORMS)  # every ldmatrix / stmatrix / wmma.load form ran
    assert sum("error" in e for e in expect) >= 5  # and some refusals


def _global_wmma_records():
    """The .global and generic wmma.load records of the H200 data (923)."""
    recs = [r for f in ("h200_sm90.jsonl", "h200_capture.jsonl") for r in trace.load(DATA / f)
            if r.ins.op == "wmma.load" and r.ins.space != "shared"]
    assert len(recs) == 923 and {r.space for r in recs} == {"shared", "global"}   # generic both ways
    return recs


def _records_differing(recs, results):
    return [(r.raw["instr"], res["error"]) for r, res in zip(recs, results, strict=True)
            if res["error"] or [list(x) for x in zip(*res["beats"])] != r.raw["expect"]["regs"]]


def test_the_fpga_build_runs_the_random_regression():
    """The FPGA build of ``make synth`` (line offsets on DSP multipliers, the load row buffer in
    LUT RAM, a 128-bit global port of two contexts) gives the model's registers, errors and
    bank cycles, as the default build does, and the H200's registers for every global and
    generic wmma.load record through its AXI port (ids interleaved, the channels pausing)."""
    build = fpga_build("h200")
    assert build["axi_data_bits"] == 128 and build["axi_contexts"] == 2 and build["row_buffer_lutram"]
    n = 400
    jobs, expect, final = regress.make_jobs(n, seed=23, policy="h200", smem_bytes=16 * 1024)
    results, _ = run_jobs(jobs, sim="verilator", seed=7, idle=0.25, backpressure=0.25, params=build)
    table, fails = regress.compare(results, expect, final)
    assert not fails, "\n".join(fails[:20])
    assert sum(v[0] for v in table.values()) == n and len(table) == len(forms.FORMS)
    recs = _global_wmma_records()
    be = RtlBackend(sim="verilator")
    results, _ = run_jobs([be.job(r) for r in recs], sim="verilator", idle=0.2, backpressure=0.3, seed=5,
                          params=build)
    bad = _records_differing(recs, results)
    assert not bad, f"{len(bad)} records differ, first {bad[:3]}"


def test_replay_h200_vectors_through_rtl(capsys):
    """Every record of the H200 vectors through the replay command on Verilator: 144 ld/stmatrix,
    339 wmma.load from shared memory, 339 from global (`make sim` replays them on Icarus)."""
    rc = cli.main(["replay", str(DATA / "h200_sm90.jsonl"), "--backend", "rtl", "--sim", "verilator"])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert "822 records, 822 passed, 0 failed" in out


@pytest.mark.parametrize("engine", ["cocotb", "native"])
def test_global_and_generic_wmma_records_through_the_axi_port(engine):
    """Every .global and generic wmma.load record of the H200 data (923) through the RTL on
    Verilator, its global image behind the unit's AXI port: under cocotb in cocotbext-axi's
    AxiRam, under the native harness in its own memory (beats of different ids interleaved at
    random); the memory's address and data channels pause at random (30 %), the instruction
    stream idles 20 % of cycles (`make sim` replays them on Icarus without pauses)."""
    sim = "verilator"
    recs = _global_wmma_records()
    be = RtlBackend(sim=sim)
    jobs = [be.job(r) for r in recs]
    results, _ = run_jobs(jobs, sim=sim, idle=0.2, backpressure=0.3, seed=5, engine=engine)
    bad = _records_differing(recs, results)
    assert not bad, f"{len(bad)} records differ, first {bad[:3]}"


def test_global_refusals_and_bus_errors():
    """Refused on the result stream, and the unit goes on: a global matrix outside the global
    range, a misaligned one, a generic one in the shared window past shared memory; a read
    past the AXI memory (AxiRam answers SLVERR)."""
    ins = ptx.parse("wmma.load.a.sync.aligned.row.m16n16k16.global.f16", "sm_90a")
    fid, p = forms.form_id(ins), Params()
    image = bytes(range(256)) * 4
    ok = {"form": fid, "addr": GMEM_AT, "stride": 16, "space": Space.GLOBAL.value, "gmem": image.hex(),
          "gmem_at": GMEM_AT}
    cases = [(dict(ok, addr=p.global_base + p.global_bytes - 256), Error.OUT_OF_RANGE),
             (dict(ok, addr=GMEM_AT + 16), Error.MISALIGNED),
             (dict(ok, addr=p.shared_window_base + p.smem_bytes - 256, space=Space.GENERIC.value),
              Error.OUT_OF_RANGE),
             (dict(ok, addr=GMEM_BYTES - 256), Error.SLVERR),
             (ok, Error.NONE)]
    results, _ = run_jobs([c for c, _ in cases], sim="verilator")
    assert [Error(r["error"]) for r in results] == [e for _, e in cases]
    assert all(len(r["beats"]) == 8 for r in results)            # a refusal gives every register
    assert all(b == [0] * 32 for r in results[:-1] for b in r["beats"])
    want = model.wmma_load(ins, model.Memory(global_=image, global_base=GMEM_AT), GMEM_AT, 16)
    assert [list(x) for x in zip(*results[-1]["beats"])] == want.tolist()


def test_a_bus_error_in_one_pass_of_a_two_pass_fragment():
    """A 1 KiB fragment (two passes: its rows' first two 16-byte chunks, then the last two)
    whose last chunk lies past the AXI memory: the first pass's beats are as read, the
    second's carry SLVERR and no data, so the last beat gives the verdict; one wholly past the
    memory: every beat SLVERR; the instructions after are untouched (the result stage once gave
    a refused pass all of the instruction's beats)."""
    c = ptx.parse("wmma.load.c.sync.aligned.row.m16n16k16.global.f32", "sm_90a")
    ld = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
    base = GMEM_BYTES - 992            # rows of 64 bytes from 32 bytes into a line: row 15's
    image = bytes((5 * i + 1) % 256 for i in range(992))     # last two chunks are past the end
    end = {"form": forms.form_id(c), "addr": base, "stride": 16, "space": Space.GLOBAL.value,
           "gmem": image.hex(), "gmem_at": base}
    far = {"form": forms.form_id(c), "addr": GMEM_BYTES + 4096, "stride": 16, "space": Space.GLOBAL.value}
    after = {"form": forms.form_id(ld), "addr": [16 * t for t in range(32)]}
    results, _ = run_jobs([end, after, far, after], sim="verilator")
    first, _, both, _ = results
    assert len(first["beats"]) == len(both["beats"]) == 8
    assert first["error"] == both["error"] == Error.SLVERR.value
    want = model.wmma_load(c, model.Memory(global_=image + bytes(32), global_base=base), base, 16)
    first_pass = layouts.wmma_byte_table(c)[..., 0, 1] // 16 < 2   # (thread, register): chunk 0 or 1
    got = np.array(first["beats"], dtype=np.uint64).T
    assert first_pass.any() and (~first_pass).any()
    assert (got[first_pass] == want[first_pass]).all() and not got[~first_pass].any()
    assert not np.array(both["beats"]).any()
    assert [r["error"] for r in results[1::2]] == [0, 0] and all(len(r["beats"]) == 4 for r in results[1::2])


@pytest.mark.parametrize("record,message", [
    ('"taddr": 0', "tcgen05.ld needs an integer 'warp'"),
    ('"taddr": 4294967296, "warp": 0', "tcgen05.ld: taddr 0x100000000 is not a 32-bit Tensor Memory address"),
    ('"taddr": 0, "warp": -1', "tcgen05.ld: warp index -1 is negative"),
    ('"taddr": 0, "warp": 0, "tmem_cols": 48', "Tensor Memory of 48 columns: expected a power of two"),
    ('"taddr": 0, "warp": 0, "tmem_cols": 32, "tmem": "' + "00" * (128 * 32 * 4 + 4) + '"',
     "Tensor Memory image of 16388 bytes"),
])
def test_rtl_backend_names_bad_tcgen05_records(record, message):
    """A tcgen05 record the unit cannot run is refused before simulation, saying why (the
    model's words where the model refuses it too)."""
    (rec,) = trace.read(['{"instr": "tcgen05.ld.sync.aligned.32x32b.x1.b32", ' + record + '}'])
    with pytest.raises(ValueError) as e:
        RtlBackend().job(rec)
    assert message in str(e.value)


def test_rtl_backend_names_a_global_address_outside_its_image():
    (rec,) = trace.read(['{"instr": "wmma.load.a.sync.aligned.row.m16n16k16.global.f16", "stride": 16, '
                         '"gmem": "' + "00" * 512 + '", "gmem_base": 4096, "addr": 8192}'])
    with pytest.raises(ValueError, match="address 0x2000 outside the global image"):
        RtlBackend().job(rec)


def test_every_pair_of_overlapping_stmatrix_rows_is_refused():
    """Two threads storing one row is refused (OVERLAP) for every pair of rows of .x1, .x2 and
    .x4, whatever their distance: the unit checks the pairs over one or two cycles by
    distance, so each distance is a separate comparator. Distinct rows store normally; a
    refused store takes its beats (sent as for any stmatrix) and writes nothing: the memory
    read back holds the good stores' words only (their registers, by the model)."""
    jobs, expect = [], []
    mem = np.zeros(16 * 1024, dtype=np.uint8)
    for num in (1, 2, 4):
        ins = ptx.parse(f"stmatrix.sync.aligned.m8n8.x{num}.shared.b16", "sm_90")
        fid = forms.form_id(ins)
        rows = 8 * num
        base = [16 * (3 * i + 1) for i in range(rows)]  # distinct rows
        base += [base[t % rows] for t in range(rows, 32)]
        regs = np.array([[r * 32 + t + 1 for r in range(num)] for t in range(32)], dtype=np.uint64)
        mem = model.stmatrix(ins, mem, base, regs)
        jobs.append({"form": fid, "addr": base, "store": regs.T.tolist()})
        expect.append(Error.NONE)
        for i in range(rows):
            for j in range(i + 1, rows):
                a = list(base)
                a[j] = a[i]
                jobs.append({"form": fid, "addr": a, "store": [[0xDEAD0000 + i * 64 + j] * 32] * num})
                expect.append(Error.OVERLAP)
    bursts = [{"burst": jobs[k:k + 8]} for k in range(0, len(jobs), 8)]
    bursts[0]["image"] = bytes(len(mem)).hex()
    bursts[-1]["dump_lines"] = len(mem) // 128
    results, _ = run_jobs(bursts, sim="verilator")
    got = [r["error"] for b in results for r in b["burst"]]
    assert got == [e.value for e in expect]
    assert len(got) == 3 + 28 + 120 + 496
    assert bytes.fromhex(results[-1]["dump"]) == mem.tobytes()


def test_regression_names_the_first_mismatch():
    """A wrong word is reported with its job, register, first thread, cycles and policy."""
    regs = np.arange(64, dtype=np.uint64).reshape(32, 2)
    got = regs.copy()
    got[7, 1] ^= 1
    got[9, 0] ^= 1              # register 0 differs first (at thread 9), before register 1
    results = [{"beats": got.T.tolist(), "error": 0, "cycles": 2, "accepted": 10, "done": 14, "dump": ""}]
    expect = [{"form": "ldmatrix.sync.aligned.m8n8.x2.shared.b16", "regs": regs, "cycles": 2}]
    _, fails = regress.compare(results, expect, np.zeros(0, dtype=np.uint8), "packed")
    assert fails == ["job 0 ldmatrix.sync.aligned.m8n8.x2.shared.b16 (packed): register 0 (result beat 0) "
                     "differs first at thread 9: 0x00000013, model 0x00000012; accepted in cycle 10, "
                     "last beat in cycle 14"]
