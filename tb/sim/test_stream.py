"""A kernel's shared-memory stream replayed with its data: the two kernels the capture harness
recorded on an H200 (tb/data/gemm_tile and epilogue, Accel-Sim format with a data side file),
whose loads must read what the GPU read; and the project's own records as one stream."""

import json

import numpy as np
import pytest
from conftest import ROOT
from tensorlsu.cosim import cli
from tensorlsu.sim import ptx, sass, stream, trace

TB_DATA = ROOT / "tb" / "data"
KERNELS = ("gemm_tile", "epilogue")


def replay(name, side_lines=None):
    lines = (TB_DATA / f"{name}.traceg").read_text().splitlines()
    side = stream.read_side(side_lines or (TB_DATA / f"{name}.data.jsonl").read_text().splitlines())
    costed, _ = sass.costs(sass.read(lines), side.base)
    recs, plain = stream.side_records(costed, side)
    outcomes = list(trace.run(trace.read(json.dumps(r) for r in recs), trace.ModelBackend()))
    return costed, outcomes, plain


@pytest.mark.parametrize("name", KERNELS)
def test_the_h200_kernels_replay_with_their_data(name):
    costed, outcomes, plain = replay(name)
    assert all(c.error is None for c in costed)
    assert outcomes and all(o.passed for o in outcomes), [o.failures for o in outcomes if not o.passed][:3]
    assert plain and all(p.failure is None for p in plain)
    # the GEMM tile's swizzled fills and fragment loads are conflict-free; the epilogue's column
    # read is one bank for all 32 lanes
    cycles = {c.access.opcode: c.cycles["h200"] for c in costed}
    if name == "gemm_tile":
        assert cycles == {"STS.128": 4, "LDSM.16.M88.4": 4, "LDSM.16.MT88.2": 2}
    else:
        assert cycles["LDS"] == 32 and cycles["STSM.16.M88.4"] == 4


def _side(name):
    return [json.loads(x) for x in (TB_DATA / f"{name}.data.jsonl").read_text().splitlines()]


def test_a_wrong_word_from_a_load_fails_there():
    side = _side("gemm_tile")
    lines = (TB_DATA / "gemm_tile.traceg").read_text().splitlines()
    ldsm = [k for k, r in enumerate(side[1:], 1) if "LDSM.16.M88.4" in lines[r["line"] - 1]][-1]
    side[ldsm]["data"][7][2] ^= 1
    _, outcomes, _ = replay("gemm_tile", [json.dumps(r) for r in side])
    bad = [o for o in outcomes if not o.passed]
    assert len(bad) == 1 and "thread 7" in bad[0].failures[0]


def test_a_wrong_stored_word_fails_the_loads_after_it():
    """An STS.128 stores other data than the GPU did: the ldmatrix reading it disagrees."""
    side = _side("gemm_tile")
    side[1]["data"][0][0] ^= 0x10000      # lane 0's first store, the first word
    _, outcomes, _ = replay("gemm_tile", [json.dumps(r) for r in side])
    assert [o.passed for o in outcomes].count(False) >= 1
    side = _side("epilogue")
    side[1]["data"][5][0] ^= 1            # the first stmatrix: the LDS.128 read-back disagrees
    _, outcomes, plain = replay("epilogue", [json.dumps(r) for r in side])
    assert all(o.passed for o in outcomes[1:]) and any(p.failure for p in plain)


def test_a_data_replay_needs_one_warps_stream_and_every_lines_data():
    lines = (TB_DATA / "gemm_tile.traceg").read_text().replace("warp = 0", "warp = 1", 1).splitlines()
    lines.insert(lines.index("#END_TB"), "warp = 0")
    lines.insert(lines.index("#END_TB"), "0010 ffffffff 1 R4 LDS 1 R2 4 1 0x7f9700000400 4 0")
    side = stream.read_side((TB_DATA / "gemm_tile.data.jsonl").read_text().splitlines())
    costed, _ = sass.costs(sass.read(lines), side.base)
    with pytest.raises(sass.SassError, match="one warp's stream; this trace has 2 warps"):
        stream.side_records(costed, side)
    side.data.pop(min(side.data))
    costed, _ = sass.costs(sass.read((TB_DATA / "gemm_tile.traceg").read_text().splitlines()), side.base)
    with pytest.raises(sass.SassError, match="no data for this line"):
        stream.side_records(costed, side)


def test_side_data_that_cannot_run_is_named(tmp_path, capsys):
    """Fewer words than the instruction moves, or a stored row past the side file's image: a
    clear error naming the line (exit 2), never a traceback."""
    side = _side("epilogue")
    side[1]["data"][3] = side[1]["data"][3][:2]         # the first STSM .x4: lane 3 gives 2 words
    with pytest.raises(sass.SassError, match="lane 3 2 words; STSM.16.M88.4 moves 4"):
        replay("epilogue", [json.dumps(r) for r in side])
    side = _side("epilogue")
    side[0]["smem"] = side[0]["smem"][:2 * 4096]         # an image that ends before the C tile
    with pytest.raises(sass.SassError, match="cannot store into the side file's 4096-byte image"):
        replay("epilogue", [json.dumps(r) for r in side])
    bad = tmp_path
    (bad / "k.traceg").write_text((TB_DATA / "epilogue.traceg").read_text())
    (bad / "k.data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in side))
    assert cli.main(["replay", str(bad / "k.traceg")]) == 2
    err = capsys.readouterr().err
    assert "cannot store into" in err and "Traceback" not in err


@pytest.mark.parametrize("text,why", [
    ("", "empty"), ("{]", "not valid JSON"), ('{"smem": "00"}', "smem_base"),
    ('{"smem_base": "0x0", "smem_bytes": 16}\n{"line": 3, "data": [[1]]}', "1 lanes of data"),
    ('{"smem_base": "0x0", "smem_bytes": 16}\n{"line": "x"}', "expected"),
])
def test_a_malformed_side_file_is_named(text, why):
    with pytest.raises(sass.SassError, match=why):
        stream.read_side(text.splitlines())


def test_the_projects_records_as_one_stream(tmp_path, capsys):
    """stmatrix is the inverse of ldmatrix on the same row addresses (the PTX text's fragment
    layout is the same for both): a stmatrix .x4 then an ldmatrix .x4 of its rows, neither with
    an image, reads back the stored registers only when the two share one image."""
    rng = np.random.default_rng(5)
    addr = [int(a) for a in rng.permutation(64)[:32] * 16]
    regs = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint64).tolist()
    recs = [{"instr": "stmatrix.sync.aligned.m8n8.x4.shared.b16", "target": "sm_90a", "addr": addr, "regs": regs},
            {"instr": "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "target": "sm_90a", "addr": addr,
             "expect": {"regs": regs}}]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert cli.main(["replay", str(path), "--smem-bytes", "1024"]) == 1       # each record alone: zeros
    assert cli.main(["replay", str(path), "--smem-bytes", "1024", "--stream"]) == 0
    streamed = stream.images(list(trace.load(path)), 1024)
    assert len(bytes.fromhex(streamed[1].raw["smem"])) == 1024
    assert streamed[0].raw["expect"]["smem"] == streamed[1].raw["smem"]
    assert ptx.parse(streamed[1].raw["instr"]).nregs == 4
    capsys.readouterr()


def test_the_command_finds_the_side_file(capsys):
    assert cli.main(["replay", str(TB_DATA / "epilogue.traceg")]) == 0
    out = capsys.readouterr().out
    assert "data from" in out and "10 of 10 LDSM / STSM with the GPU's data" in out
    assert "LDS / STS on the stream's image: 9 of 9 as the GPU did" in out
