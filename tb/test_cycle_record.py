"""The cycle-record comparison: fixed fields must match, latencies may move."""

from __future__ import annotations

import json

import pytest

cycle_record = pytest.importorskip("cycle_record")


def _rec(accepted, done, data="aa", cycles=4, error=0):
    return {"accepted": accepted, "done": done, "cycles": cycles, "error": error, "data": data}


def _job(done, data="bb"):
    return {"ports": {"0": [{"accepted": 1, "done": done, "data": data}]}, "dump": "cc"}


def test_a_deeper_pipeline_compares_equal(capsys):
    before = {"s": [_rec(1, 10), _rec(2, 12)], "t": [_job(5)]}
    after = {"s": [_rec(1, 14), _rec(2, 16)], "t": [_job(9)]}
    assert cycle_record.compare(before, after) == 0
    out = capsys.readouterr().out
    assert "identical on every record" in out and "9/9.5/10 -> 13/13.5/14" in out


@pytest.mark.parametrize("field, value", [("data", "zz"), ("cycles", 5), ("error", 3)])
def test_a_changed_fixed_field_fails(capsys, field, value):
    before = {"s": [_rec(1, 10), _rec(2, 12)]}
    after = {"s": [_rec(1, 10), dict(_rec(2, 12), **{field: value})]}
    assert cycle_record.compare(before, after) == 1
    assert "record 1" in capsys.readouterr().out


def test_changed_tensor_memory_data_and_missing_streams_fail():
    assert cycle_record.compare({"t": [_job(5)]}, {"t": [_job(5, data="xx")]}) == 1
    assert cycle_record.compare({"s": [], "t": []}, {"s": []}) == 1
    assert cycle_record.compare({"s": [_rec(1, 2)]}, {"s": []}) == 1


def test_unreadable_recordings_give_a_message_not_a_traceback(tmp_path, capsys):
    good = tmp_path / "a.json"
    good.write_text(json.dumps({"s": []}))
    assert cycle_record.main(["--compare", str(good), str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
