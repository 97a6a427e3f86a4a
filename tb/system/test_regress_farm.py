"""The sharded regression (tb/farm.py, tb/regress_shards.py, ``make regress``), run as a user runs
it: pytest-xdist over local workers, one of them in a clone of its own as a farm's host is.
The shared path on the quick native build (the one test_lsu_rtl.py builds), so that it costs
seconds of simulation."""

import json
import shutil
import subprocess
import sys

import pytest
import regress
from conftest import ROOT
from tensorlsu.cosim import farm

N, SHARDS = 240, 4
QUICK = ["--no-regress-ports", "--no-regress-optimize", "--regress-sim", "verilator"]


def _pytest(tmp_path, *args, cwd=ROOT):
    # options joined to their values: xdist refuses an argument naming a path outside the test tree
    cmd = [sys.executable, "-m", "pytest", "-p", "tensorlsu.cosim.farm", "tb/regress_shards.py", "-q", "-p",
           "no:cacheprovider", "--regress-n", str(N), "--shards", str(SHARDS), "--regress-seed", "9", *QUICK,
           f"--regress-out={tmp_path}", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1200)


def test_shard_seeds_are_distinct_and_depend_on_the_run_seed_and_shard_alone():
    seeds = [farm.shard_seed(9, k) for k in range(64)]
    assert len(set(seeds)) == 64
    assert seeds == [farm.shard_seed(9, k) for k in range(64)]
    assert farm.shard_seed(10, 0) not in seeds
    assert farm.shard_sizes(10, 4) == [3, 3, 2, 2] and sum(farm.shard_sizes(N, SHARDS)) == N
    assert [farm.shard_policy("both", k) for k in range(4)] == ["h200", "packed", "h200", "packed"]


def test_shards_over_workers_merge_into_one_summary(tmp_path):
    """Four shards on two workers: the merged table counts every instruction once, and the
    merged coverage of each policy is what its shards found, cell by cell (each shard re-run
    here in-process, from its seed, gives the same cells)."""
    run = _pytest(tmp_path, "-n", "2")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "4 passed" in run.stdout and f"regression: {N} instructions in 4 shards, 0 failures" in run.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["instructions"] == N and summary["failures"] == 0 and summary["shards"] == SHARDS
    assert sum(ok for ok, _ in summary["table"].values()) == N
    merged = json.loads((tmp_path / "coverage.json").read_text())
    assert set(merged) == {"h200", "packed"}
    for policy in merged:
        want: dict = {}
        for k in range(SHARDS):
            if farm.shard_policy("both", k) != policy:
                continue
            s = regress.run(farm.shard_sizes(N, SHARDS)[k], farm.shard_seed(9, k), policy, sim="verilator",
                            optimize=False, progress=False)
            for cell, n in s.coverage.items():
                want[cell] = want.get(cell, 0) + n
        assert {tuple(c[:-1]): c[-1] for c in merged[policy]} == want


def test_a_failing_shard_is_named_with_its_seed_and_reproduces_alone(tmp_path):
    run = _pytest(tmp_path, "-n", "2", "--regress-mutate", "2")
    assert run.returncode == 1
    seed = farm.shard_seed(9, 2)
    assert "3 passed" in run.stdout and "1 failed" in run.stdout
    line = next(x for x in run.stdout.splitlines() if x.startswith("FAILED shard"))
    alone = f"make regress N={N} SEED=9 SHARDS={SHARDS} SHARD=2 PORTS=0"
    assert line == f"FAILED shard 2 (seed {seed}, h200): {alone}"
    assert "final shared-memory image differs from the model" in run.stdout
    again = _pytest(tmp_path / "alone", "--shard", "2", "--regress-mutate", "2")
    assert again.returncode == 1 and "1 failed" in again.stdout and f"seed {seed}, h200" in again.stdout
    other = _pytest(tmp_path / "other", "--shard", "1", "--regress-mutate", "2")
    assert other.returncode == 0 and "1 passed" in other.stdout


def test_a_host_on_another_commit_is_refused(tmp_path):
    """A worker whose clone is not at the controller's commit stops the run, naming both."""
    clone = tmp_path / "host"
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "commit", "-q", "--allow-empty", "-m", "another commit"], check=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})
    for f in ("cosim/farm.py", "tb/regress_shards.py", "tb/conftest.py", "tb/regress.py"):
        (clone / f).write_text((ROOT / f).read_text())     # the files under test, as this tree has them
    # the controller as make regress HOSTS=... runs it: from a folder without the tests (each
    # host reads them from its own clone)
    controller = ROOT / "build" / f"farm_{tmp_path.name}"
    controller.mkdir(parents=True, exist_ok=True)
    try:
        run = _pytest(tmp_path / "out", "--dist", "load", "--tx", f"popen//chdir={clone}//python={sys.executable}",
                      cwd=controller)
    finally:
        shutil.rmtree(controller)
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "every host of a regression runs the same commit" in text and str(clone) in text


@pytest.mark.parametrize("args, words", [(["--shard", "4"], "--shard 4 is not one of the 4 shards"),
                                         (["--regress-n", "3"], "fewer instructions than --shards 4")])
def test_bad_shard_options_are_named(tmp_path, args, words):
    run = _pytest(tmp_path, *args)
    assert run.returncode == 4 and words in run.stderr
