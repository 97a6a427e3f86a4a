"""`make sim`'s one build: the unit it names holds every trace it replays, the replay options
that share it, and runs split over several simulations."""

import re
from pathlib import Path

import pytest
from conftest import DATA
from tensorlsu.cosim import cli
from tensorlsu.cosim.backend import RtlBackend, _slices
from tensorlsu.sim import trace

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def _sim_unit() -> tuple[int, int]:
    text = MAKEFILE.read_text()
    unit = re.search(r"^SIM_UNIT := (.*)$", text, re.M)
    assert unit, "the Makefile names make sim's unit in SIM_UNIT"
    cols = re.search(r"--tmem-columns (\d+)", unit.group(1))
    smem = re.search(r"--smem-bytes (\d+)", unit.group(1))
    assert cols and smem
    return int(cols.group(1)), int(smem.group(1))


def _sim_traces() -> list[Path]:
    """The traces make sim replays through the RTL."""
    body = MAKEFILE.read_text().split("\nsim:", 1)[1].split("\n\n", 1)[0]
    names = re.findall(r"replay (\S+) \$\(SIM_RTL\)", body)
    default = re.search(r"^TRACE  \?= (\S+)$", MAKEFILE.read_text(), re.M)
    assert default and len(names) == 4, names
    return [MAKEFILE.parent / (default.group(1) if n == "$(TRACE)" else n) for n in names]


def test_make_sim_unit_holds_every_trace():
    """Every record of every trace make sim replays runs on its one unit: the shared memory the
    records need (their images, rows and matrices) fits it, and every tcgen05 record's
    allocation is its Tensor Memory's, so no trace asks for a build of its own."""
    cols, smem = _sim_unit()
    traces = _sim_traces()
    assert {p.name for p in traces} == {"h200_sm90.jsonl", "h200_capture.jsonl", "sm100_tmem.jsonl",
                                        "sm100_cp.jsonl"}
    need, allocations = 0, set()
    for path in traces:
        records = list(trace.load(path))
        need = max(need, RtlBackend.smem_bytes_for(records))
        allocations |= {RtlBackend.tmem_cols(r) for r in records if r.ins.op.startswith("tcgen05")}
    assert allocations == {cols}
    assert need == smem, f"the traces need {need} bytes of shared memory, SIM_UNIT builds {smem}"


def test_a_record_of_another_allocation_is_refused_by_name():
    rec = next(iter(trace.load(DATA / "sm100_tmem.jsonl")))
    cp = next(iter(trace.load(DATA / "sm100_cp.jsonl")))
    for r in (rec, cp):
        with pytest.raises(ValueError, match="allocation of 64 columns is not the unit's .32 columns"):
            RtlBackend(tmem_columns=32).job(r)
        with pytest.raises(ValueError, match="not the unit's .no Tensor Memory"):
            RtlBackend(tmem_columns=0).job(r)
    with pytest.raises(ValueError, match="power of two"):
        RtlBackend(tmem_columns=48)


@pytest.mark.parametrize("args, says", [
    (["--jobs", "2"], "--jobs applies to the rtl backend"),
    (["--engine", "cocotb", "--optimize"], "--engine, --optimize applies to the rtl backend"),
    (["--tmem-columns", "64"], "--tmem-columns applies to the rtl backend"),
])
def test_rtl_options_without_the_rtl_backend_are_refused(args, says, capsys):
    assert cli.main(["replay", "h200_sm90", *args]) == 2
    assert says in capsys.readouterr().err


def test_rtl_option_values_are_checked(capsys):
    with pytest.raises(SystemExit):
        cli.main(["replay", "h200_sm90", "--backend", "rtl", "--jobs", "0"])
    assert "--jobs: 0 is not at least 1" in capsys.readouterr().err
    assert cli.main(["replay", "sm100_tmem", "--backend", "rtl", "--tmem-columns", "48"]) == 2
    assert "power of two from 32 to 512, not 48" in capsys.readouterr().err


def test_slices_keep_the_order_and_balance_the_instructions():
    batches = [({"k": k}, n) for k, n in enumerate([0, 5, 0, 0, 3, 8, 0, 1, 0, 2])]   # 0: a job alone
    for n in (1, 2, 3, 10, 20):
        parts = _slices(batches, n)
        assert [b for p in parts for b in p] == batches and all(parts)
        assert len(parts) <= min(n, len(batches)) and (n > 2 or len(parts) == n)
    two = [sum(max(k, 1) for _, k in p) for p in _slices(batches, 2)]
    assert two == [11, 13], two     # by hand: 24 in all; the 8-burst goes to the second


def test_records_over_two_simulations_are_those_of_one(capsys):
    """A trace over two Icarus simulations of one build passes as it does in one: each
    simulation's first record brings its own image (h200_sm90's ld/stmatrix and shared wmma.load
    records, 31 of them)."""
    rc = cli.main(["replay", "h200_sm90", "--backend", "rtl", "--jobs", "2", "--space", "shared",
                   "--select", "ldmatrix.sync.aligned.m8n8.x4,stmatrix,wmma.load.a.sync.aligned.row.m16n16k16"])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert re.search(r"(\d+) records, \1 passed, 0 failed", out), out[-500:]
