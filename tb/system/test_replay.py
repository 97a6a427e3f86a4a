"""Trace replay: the H200 vectors (hardware facts, data/) and the command line."""

import json
import random
import subprocess
import sys

import make_cp_trace
import numpy as np
import pytest
from sasslines import B8_LINES, CASES, trace_text
from conftest import DATA
from tensorlsu.cosim import cli
from tensorlsu.cosim.backend import RtlBackend, _burst_stream
from tensorlsu.sim import descriptor, model, ptx, trace

GOLDEN = DATA / "h200_sm90.jsonl"


def test_all_h200_vectors_pass():
    outcomes = list(trace.run(trace.load(GOLDEN), trace.ModelBackend()))
    assert len(outcomes) == 822
    bad = [f"line {o.record.line}: {o.failures}" for o in outcomes if not o.passed]
    assert not bad, "\n".join(bad[:10])
    forms = trace.summarize(outcomes)
    assert len(forms) == 12 + 2 * 87  # every ld/stmatrix form; 87 wmma forms, shared and global


def test_checker_catches_a_wrong_expectation(tmp_path):
    recs = [json.loads(line) for line in GOLDEN.read_text().splitlines()[:3]]
    recs[1]["expect"]["regs"][5][0] ^= 1
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    outs = list(trace.run(trace.load(p), trace.ModelBackend()))
    assert [o.passed for o in outs] == [True, False, True]
    want = recs[1]["expect"]["regs"][5][0]
    assert outs[1].failures == [f"regs: register 0 (result beat 0) differs first at thread 5: "
                                f"expected 0x{want:08x}, got 0x{want ^ 1:08x}"]
    assert cli.main(["replay", str(p)]) == 1


def test_failures_say_where_and_emitted_records_stay_records():
    """The RTL backend says in which cycles it ran a record (``_at``); failure messages name
    them; an emitted record carries none of it."""
    import io
    line = json.dumps({"instr": "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "addr": [0] * 32,
                       "expect": {"wavefronts": 2}})
    rec = next(trace.read(io.StringIO(line + "\n")))
    produced = {"wavefronts": 1, "_at": {"accepted": 12, "done": 17}}
    o = trace.Outcome(rec, produced, trace.check(rec, produced))
    assert o.failures == ["wavefronts: expected 2, got 1"]
    assert trace.where(o) == " (accepted in cycle 12, last beat in cycle 17)"
    assert trace.emitted(o)["expect"] == {"wavefronts": 1}


def test_emit_round_trips(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(GOLDEN.read_text().splitlines()[::40]) + "\n")
    out = tmp_path / "out.jsonl"
    assert cli.main(["replay", str(src), "--emit", str(out)]) == 0
    emitted = [json.loads(x) for x in out.read_text().splitlines()]
    original = [json.loads(x) for x in src.read_text().splitlines()]
    assert len(emitted) == len(original)
    for e, o in zip(emitted, original):
        for k, v in o["expect"].items():
            assert e["expect"][k] == v
        if o["instr"].startswith(("ldmatrix", "stmatrix")):
            assert e["expect"]["wavefronts"] >= 1
    assert cli.main(["replay", str(out)]) == 0  # the emitted file is a valid trace again


def test_expected_refusals(tmp_path):
    base = {"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "target": "sm_90a", "smem": "00" * 256,
            "addr": [8] + [0] * 31}
    recs = [dict(base, expect={"error": "not 16-byte aligned"}),
            dict(base, expect={"error": ""}),
            dict(base, instr="ldmatrix.sync.aligned.m8n8.x3.b16", expect={"error": ".x3"}),
            dict(base, expect={"error": "outside"})]
    p = tmp_path / "e.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs))
    outs = list(trace.run(trace.load(p), trace.ModelBackend()))
    assert [o.passed for o in outs] == [True, True, True, False]


@pytest.mark.parametrize("line,message", [
    ("{not json", "line 2: not valid JSON"),
    ('{"expect": {}}', "line 2: missing 'instr'"),
    ('{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "smem": "zz", "expect": {}}', "smem is not a valid hex"),
    ('{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": [1, 2], "expect": {}}', "addr must be 32 integers"),
    ('{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": 0, "expect": {"bogus": 1}}', "unknown expect key"),
    ('{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "expect": {}}', "line 2: ldmatrix needs 'addr'"),
])
def test_malformed_records_name_line_and_reason(tmp_path, line, message, capsys):
    good = GOLDEN.read_text().splitlines()[0]
    p = tmp_path / "bad.jsonl"
    p.write_text(good + "\n" + line + "\n")
    assert cli.main(["replay", str(p)]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("line", [
    '{"instr": "tcgen05.cp.cta_group::1.128x256b", "desc": 18446744073709551615, "taddr": 0}',
    '{"instr": "tcgen05.cp.cta_group::1.128x256b", "desc": 18446744073709551616, "taddr": 0}',
    '{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": -9223372036854775809}',
    '{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": 123456789012345678901234567890}',
    '{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": 1.5}',
    '{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": NaN}',
    '{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": 1e400}',
    '{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": 0, "addr": 16}',
    '{"instr": "ldmatrix\\u0020.sync", "s": "\\ud800"}',
    '{"instr": "ldmatrix", "addr": [1, 2]',
    '[' * 5000,
])
def test_the_fast_json_reader_reads_as_json_does(monkeypatch, line):
    """Where orjson reads a line (the sim extra's), the record, or the error that names the
    line, is the one json gives: integers past 64 bits stay integers, what orjson refuses
    (NaN, infinities, lone surrogates, nesting past its depth) goes to json."""
    def outcome(text):
        try:
            return [(r.raw, r.ins, r.parse_error) for r in trace.read([text])]
        except trace.TraceError as e:
            return str(e)
    assert trace._ORJSON, "the sim extra brings orjson"
    fast = [outcome(line), outcome(line.encode())]      # lines of text, lines of a file
    monkeypatch.setattr(trace, "_ORJSON", False)
    assert repr(fast) == repr([outcome(line), outcome(line.encode())])


def test_console_entry_point_runs():
    r = subprocess.run([sys.executable, "-m", "tensorlsu.cosim", "replay", str(GOLDEN)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "822 records, 822 passed, 0 failed" in r.stdout


def _write(tmp_path, recs):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return p


def test_records_without_image_regs_or_expect(tmp_path):
    """An absent smem is 228 KiB of zeros (rows past 16 KiB included, as in the H200 throughput
    traces); an stmatrix without regs stores zeros; a record without expect is run and emitted.
    Expected values: the trace format (docs/trace-format.md) and the bank rule on 8 rows of
    one quad (8 distinct lines: 8 wavefronts)."""
    ld = "ldmatrix.sync.aligned.m8n8.x1.shared.b16"
    st = "stmatrix.sync.aligned.m8n8.x1.shared.b16"
    rows = [200 * 1024 + 128 * t for t in range(8)] * 4
    recs = [{"instr": ld, "addr": rows, "expect": {"wavefronts": 8, "regs": [[0]] * 32}},
            {"instr": st, "addr": rows, "smem": "ff" * 16, "expect": {"smem": "00" * 16}},
            {"instr": st, "addr": [16 * t for t in range(32)], "smem": "ff" * 256,
             "expect": {"smem": "00" * 128 + "ff" * 128}},
            {"instr": ld, "addr": rows}]
    outs = list(trace.run(trace.load(_write(tmp_path, recs)), trace.ModelBackend()))
    assert [o.passed for o in outs] == [True, False, True, True], [o.failures for o in outs]
    assert "outside" in outs[1].failures[0]      # its 16-byte image does not hold row 200 KiB
    assert trace.emitted(outs[3])["expect"]["wavefronts"] == 8
    # a wrong byte is named
    recs[2]["expect"]["smem"] = "00" * 127 + "01" + "ff" * 128
    outs = list(trace.run(trace.load(_write(tmp_path, recs[2:3])), trace.ModelBackend()))
    assert outs[0].failures == ["smem: first difference at byte 0x7f (expected 0x01, got 0x00)"]


def test_rtl_memory_size_holds_the_trace(tmp_path):
    """replay --backend rtl builds the smallest unit (whole 128-byte lines, at least 16 KiB)
    that holds every row and image."""
    ld = "ldmatrix.sync.aligned.m8n8.x1.shared.b16"
    recs = [{"instr": ld, "addr": [16 * t for t in range(32)]}]
    assert RtlBackend.smem_bytes_for(trace.load(_write(tmp_path, recs))) == 16 * 1024
    recs.append({"instr": ld, "addr": [200 * 1024 + 16 * t for t in range(32)]})
    assert RtlBackend.smem_bytes_for(trace.load(_write(tmp_path, recs))) == 200 * 1024 + 512
    recs.append({"instr": ld, "addr": [0] * 32, "smem": "00" * (20 * 1024 + 1)})
    assert RtlBackend.smem_bytes_for(trace.load(_write(tmp_path, recs[:1] + recs[2:]))) == 20 * 1024 + 128
    # a 16 x 16 .f16 matrix at 20 KiB, 16 lines of 32 bytes 32 bytes apart (the leading
    # dimension): it ends at 20 KiB + 15 * 32 + 32 = 20,992 bytes, 164 whole lines
    wmma = {"instr": "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16", "addr": 20 * 1024}
    assert RtlBackend.smem_bytes_for(trace.load(_write(tmp_path, [wmma]))) == 20992
    # with a stride of 64 elements (128 bytes) it ends at 20 KiB + 15 * 128 + 32
    assert RtlBackend.smem_bytes_for(trace.load(_write(tmp_path, [dict(wmma, stride=64)]))) == \
        -(-(20 * 1024 + 15 * 128 + 32) // 128) * 128
    # rows past the largest unit: the largest unit (228 KiB), whose checks refuse them by name
    far = {"instr": ld, "addr": [300 * 1024] * 32}
    assert RtlBackend.smem_bytes_for(trace.load(_write(tmp_path, [far]))) == 228 * 1024


def test_replay_rejects_a_memory_the_unit_cannot_have(tmp_path, capsys):
    p = _write(tmp_path, [{"instr": "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "addr": [0] * 32}])
    assert cli.main(["replay", str(p), "--backend", "rtl", "--smem-bytes", "1000"]) == 2
    assert "smem_bytes must be a multiple of banks * bank_bytes = 128, not 1000" in capsys.readouterr().err


def test_tcgen05_st_records(tmp_path):
    """A tcgen05.st record stores its regs; expect.tmem is the whole image after, lane-major,
    trailing zeros left out; a wrong word is named by lane and column. Expected values from the
    PTX text: 32x32b puts thread t's register r in lane taddr.lane + t, column taddr.column + r."""
    st = "tcgen05.st.sync.aligned.32x32b.x2.b32"
    regs = [[0x1000 + t, 0x2000 + t] for t in range(32)]
    img = bytearray(128 * 64 * 4)                       # tmem_cols 64: a lane is 256 bytes
    for t in range(32):
        for r in range(2):
            i = ((32 + t) * 64 + 5 + r) * 4
            img[i:i + 4] = regs[t][r].to_bytes(4, "little")
    want = bytes(img).rstrip(b"\0").hex()
    recs = [{"instr": st, "taddr": (32 << 16) | 5, "warp": 1, "tmem_cols": 64, "regs": regs,
             "expect": {"tmem": want}},
            {"instr": st, "taddr": (32 << 16) | 63, "warp": 1, "tmem_cols": 64, "regs": regs,
             "expect": {"error": "beyond column 63"}},
            {"instr": st, "taddr": 5, "warp": 1, "tmem_cols": 64, "regs": regs,
             "expect": {"error": "outside warp 1's quadrant"}}]
    outs = list(trace.run(trace.load(_write(tmp_path, recs)), trace.ModelBackend()))
    assert [o.passed for o in outs] == [True, True, True], [o.failures for o in outs]
    assert outs[0].record.space == "tensor"
    bad = bytearray.fromhex(want)
    i = ((32 + 3) * 64 + 6) * 4
    bad[i] ^= 0xFF
    recs[0]["expect"]["tmem"] = bad.hex()
    out = next(trace.run(trace.load(_write(tmp_path, recs[:1])), trace.ModelBackend()))
    assert out.failures == [f"tmem: first difference at byte 0x{i:x} (lane 35, column 6) "
                            f"(expected 0x{bad[i]:02x}, got 0x{bad[i] ^ 0xFF:02x})"]


@pytest.mark.parametrize("sim", ["icarus", "verilator"])
def test_model_and_rtl_refuse_rows_and_matrices_past_the_image(tmp_path, sim, capsys):
    """A record's image, when given, is the whole shared memory: both backends refuse a row or
    a wmma.load matrix that reaches past its end, and run one that ends exactly there
    (docs/trace-format.md). Expected values: the image's bytes placed by the PTX text's
    ldmatrix layout (thread t holds word t mod 4 of row t / 4) and the image's length."""
    image = bytes(range(256)) * 16                                   # 4 KiB
    odd = image[:672]                                                # not whole 128-byte lines
    ld = "ldmatrix.sync.aligned.m8n8.x1.shared.b16"
    wmma = "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16"       # 16 lines of 32 bytes

    def regs(img, rows):
        return [[int.from_bytes(img[rows[t // 4] + 4 * (t % 4):][:4], "little")] for t in range(32)]

    last = [4096 - 16 * (8 - r) for r in range(8)] + [0] * 24        # the image's last 8 rows
    recs = [{"instr": ld, "addr": last, "smem": image.hex(), "expect": {"regs": regs(image, last)}},
            {"instr": ld, "addr": [8192] + last[1:], "smem": image.hex(), "expect": {"error": "outside"}},
            {"instr": ld, "addr": [4096] + last[1:], "smem": image.hex(), "expect": {"error": "outside"}},
            {"instr": ld, "addr": [656] * 32, "smem": odd.hex(), "expect": {"regs": regs(odd, [656] * 8)}},
            {"instr": ld, "addr": [672] * 32, "smem": odd.hex(), "expect": {"error": "outside"}},
            {"instr": wmma, "addr": 4096 - 512, "smem": image.hex(), "expect": {}},
            {"instr": wmma, "addr": 4096 - 480, "smem": image.hex(), "expect": {"error": "outside"}}]
    path = _write(tmp_path, recs)
    model = list(trace.run(trace.load(path), trace.ModelBackend()))
    assert [o.passed for o in model] == [True] * len(recs), [o.failures for o in model]
    assert cli.main(["replay", str(path), "--backend", "rtl", "--sim", sim]) == 0, capsys.readouterr().out[-3000:]
    assert f"{len(recs)} records, {len(recs)} passed, 0 failed" in capsys.readouterr().out


def test_tcgen05_cp_vectors_pass_and_are_what_the_writer_writes():
    """data/sm100_cp.jsonl: expectations from CUTLASS's layouts (tb/cute.py), not the model;
    every record passes the model, and the file is the writer's output (seed 1)."""
    path = DATA / "sm100_cp.jsonl"
    assert [json.loads(line) for line in path.read_text().splitlines()] == make_cp_trace.records(1)
    outcomes = list(trace.run(trace.load(path), trace.ModelBackend()))
    bad = [f"line {o.record.line}: {o.failures}" for o in outcomes if not o.passed]
    assert not bad, "\n".join(bad[:10])
    refused = [o for o in outcomes if "error" in o.record.expect]
    assert len(outcomes) == 92 and len(refused) == 20
    forms = trace.summarize(outcomes)
    assert {f.split(".", 3)[3] for f in forms} >= {  # every shape, multicast and format, both groups
        f"{s}{c}{f}" for s, c in (("128x256b", ""), ("4x256b", ""), ("128x128b", ""), ("64x128b", ".warpx2::02_13"),
                                  ("64x128b", ".warpx2::01_23"), ("32x128b", ".warpx4"))
        for f in ("", ".b8x16.b6x16_p32", ".b8x16.b4x16_p64")}


def test_tcgen05_cp_record_names_a_wrong_byte(tmp_path):
    rec = json.loads((DATA / "sm100_cp.jsonl").read_text().splitlines()[0])
    want = bytearray.fromhex(rec["expect"]["tmem"])
    want[4 * make_cp_trace.COLS * 5 + 3] ^= 0x10      # lane 5, column 0, byte 3
    rec["expect"]["tmem"] = want.hex()
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    [o] = trace.run(trace.load(p), trace.ModelBackend())
    assert o.failures and "(lane 5, column 0)" in o.failures[0]


def test_rtl_backend_refuses_a_copy_whose_operands_differ_from_the_text():
    """A record's desc or taddr that disagrees with the text's immediate is refused by name,
    as the model refuses it, before any simulation."""
    good = descriptor.encode(0, 0, 128)
    ins = ptx.parse(f"tcgen05.cp.cta_group::1.128x128b [64], {good};")
    for raw, what in (({"desc": good | 1 << 61}, "desc"), ({"taddr": 32}, "taddr")):
        rec = trace.Record(1, {"instr": ins.text, **raw}, ins, None)
        with pytest.raises(ValueError, match=f"{what} 0x[0-9a-f]+ differs from the text's immediate"):
            RtlBackend().cp_job(rec)
    assert RtlBackend().cp_job(trace.Record(1, {"instr": ins.text}, ins, None))["cp"]["taddr"] == 64


def test_a_sass_trace_runs_its_ldsm_and_stsm_through_the_rtl(tmp_path, capsys):
    """An Accel-Sim trace's LDSM / STSM through the RTL (Verilator) at the model's bank cycles,
    each cycle count derived by hand in tb/sim/test_sass.py; and two sm_100a .b8 opcodes."""
    path = tmp_path / "kernel-1.traceg"
    path.write_text(trace_text([c[0] for c in CASES] + B8_LINES))
    assert cli.main(["replay", str(path), "--backend", "rtl", "--sim", "verilator"]) == 0
    assert "rtl (verilator, h200): 6 of 6 LDSM / STSM at the model's bank cycles" in capsys.readouterr().out


@pytest.mark.parametrize("kernel", ["gemm_tile", "epilogue"])
def test_the_h200_kernels_replay_through_the_rtl_with_their_data(kernel, capsys):
    """The capture harness's real kernels (Accel-Sim format, data side file; tb/hw/sass_capture.py)
    through the RTL: every LDSM / STSM reads and writes what the GPU did, at the model's cycles."""
    path = DATA.parent / "tb" / "data" / f"{kernel}.traceg"
    assert cli.main(["replay", str(path), "--backend", "rtl", "--sim", "verilator"]) == 0
    out = capsys.readouterr().out
    n = {"gemm_tile": 24, "epilogue": 10}[kernel]
    assert f"rtl (verilator, h200): {n} of {n} LDSM / STSM with the GPU's data" in out


def test_address_only_stores_run_in_bursts_and_every_load_sees_its_own_image(tmp_path):
    """Stores whose image nobody reads back run back to back with the loads of the same image;
    a load that reads a line a store before it wrote starts a new burst, so every record still
    sees its own image. Expected values: the model on each record alone."""
    rng = random.Random(4)
    image = bytes(rng.randrange(256) for _ in range(4096))
    st4, ld4 = "stmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
    low = [16 * t for t in range(32)]                  # lines 0-3
    high = [2048 + 16 * t for t in range(32)]          # lines 16-19
    regs = [[rng.randrange(1 << 32) for _ in range(4)] for _ in range(32)]
    recs = [{"instr": st4, "addr": low, "regs": regs}, {"instr": st4, "addr": high, "regs": regs},
            {"instr": ld4, "addr": low},               # reads what the first store wrote: a new burst
            {"instr": ld4, "addr": high[::-1]}, {"instr": st4, "addr": low, "regs": regs},
            {"instr": ld4, "addr": high}]              # lines no store of its burst wrote
    for r in recs:
        r["smem"] = image.hex()
        ins = ptx.parse(r["instr"], "sm_90a")
        r["expect"] = {"wavefronts": model.wavefronts(ins, r["addr"])}
        if ins.op == "ldmatrix":
            r["expect"]["regs"] = model.ldmatrix(ins, np.frombuffer(image, np.uint8), r["addr"]).tolist()
    records = trace.load(_write(tmp_path, recs))
    backend = RtlBackend(sim="verilator", images=False)
    assert [n for _, n in _burst_stream([backend.job(r) for r in records])] == [2, 4]
    outs = list(trace.run(records, backend))
    assert all(o.passed for o in outs), [o.failures for o in outs if not o.passed]
    # with the images read back (what --emit needs), each store's image is the model's
    stored = model.stmatrix(ptx.parse(st4, "sm_90a"), np.frombuffer(image, np.uint8), low, regs)
    recs[0]["expect"]["smem"] = stored.tobytes().hex()
    outs = list(trace.run(trace.load(_write(tmp_path, recs[:1])), RtlBackend(sim="verilator", images=False)))
    assert outs[0].passed, outs[0].failures
