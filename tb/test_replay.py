"""Trace replay: the H200 vectors (hardware facts, tb/data) and the command line."""

import json
import subprocess
import sys

import pytest

from conftest import DATA
from tensorlsu.sim import cli, trace

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
    assert "thread 5" in outs[1].failures[0]
    assert cli.main(["replay", str(p)]) == 1


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
    ('{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "addr": 0}', "missing 'expect'"),
    ('{"instr": "ldmatrix.sync.aligned.m8n8.x1.b16", "expect": {}}', "line 2: ldmatrix needs 'addr'"),
])
def test_malformed_records_name_line_and_reason(tmp_path, line, message, capsys):
    good = GOLDEN.read_text().splitlines()[0]
    p = tmp_path / "bad.jsonl"
    p.write_text(good + "\n" + line + "\n")
    assert cli.main(["replay", str(p)]) == 2
    assert message in capsys.readouterr().err


def test_console_entry_point_runs():
    r = subprocess.run([sys.executable, "-m", "tensorlsu.sim", "replay", str(GOLDEN)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "822 records, 822 passed, 0 failed" in r.stdout
