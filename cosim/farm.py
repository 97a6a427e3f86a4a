"""A sharded random regression as a pytest plugin (``make regress``): its options, one test a
shard, the shards' coverage merged on the controller, and every host checked to run the
controller's commit. Loaded with ``-p tensorlsu.cosim.farm`` on the controller and on every worker, each from
its own installed package, before any test file is read.

The engine is pytest-xdist: local workers (``-n``) or other hosts (``--tx ssh=HOST//python=
CLONE/.venv/bin/python//chdir=CLONE``, each host a clone of the same commit with its own
``.venv``; docs/regress.md). A shard is one process's regression (tb/regress.py's ``run``, from
tb/regress_shards.py) with its own deterministic seed (:func:`shard_seed`) and policy; what it
found travels back in its test report (``user_properties``), so the controller merges shards
from any host.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tensorlsu.sim.trace import format_table

#: The most instructions one shard runs unless ``--shards`` says otherwise: about five minutes
#: of the optimized native harness over every port on one core.
SHARD_INSTRUCTIONS = 250_000
#: The policies of ``--regress-policy both``, shard by shard in turn.
POLICIES = ("h200", "packed")


def shard_seed(seed: int, shard: int) -> int:
    """Shard ``shard``'s seed under the run's ``seed``: numpy's SeedSequence spawn key, so shards
    draw independent streams and a shard's seed depends only on (seed, shard)."""
    return int(np.random.SeedSequence(seed, spawn_key=(shard,)).generate_state(1)[0])


def shard_policy(policy: str, shard: int) -> str:
    return POLICIES[shard % len(POLICIES)] if policy == "both" else policy


def shard_sizes(n: int, shards: int) -> list[int]:
    """``n`` instructions over ``shards`` shards, the first ones one larger where they do not
    divide."""
    return [n // shards + (k < n % shards) for k in range(shards)]


def commit(root: Path) -> str:
    """The commit of the clone at ``root`` (a host's test tree, whose ``make venv`` installed its
    package), with ``+changes`` when its tracked files differ from it."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "HEAD") or "(not a git clone)"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def pytest_addoption(parser):
    g = parser.getgroup("regress", "the sharded random regression (make regress, tb/regress_shards.py)")
    g.addoption("--regress-n", type=int, default=1000, help="instructions in all")
    g.addoption("--regress-seed", type=int, default=1, help="the run's seed (each shard's is drawn from it)")
    g.addoption("--shards", type=int, default=0,
                help=f"shards (default: one per {SHARD_INSTRUCTIONS:,} instructions, at least two)")
    g.addoption("--shard", type=int, default=None, help="run this shard alone (its seed as in the whole run)")
    g.addoption("--regress-policy", default="both", choices=("h200", "packed", "both"),
                help="both: h200 and packed shards in turn")
    g.addoption("--regress-sim", default="verilator", choices=("verilator", "icarus"))
    g.addoption("--regress-ports", action=argparse.BooleanOptionalAction, default=True,
                help="every port (global, Tensor Memory, copy); --no-regress-ports: the shared path")
    g.addoption("--regress-optimize", action=argparse.BooleanOptionalAction, default=True,
                help="the native harness's optimized build (--no-regress-optimize: the quick one)")
    g.addoption("--regress-mutate", type=int, default=None,
                help="corrupt this shard's expected memory: a run that must fail (tests the report)")
    g.addoption("--regress-out", default=None,
                help="where the merged summary and coverage go (summary.json, coverage.json; default "
                     "build/regress under the test tree)")


def shard_count(config) -> int:
    n = config.getoption("--regress-n")
    return config.getoption("--shards") or max(2, math.ceil(n / SHARD_INSTRUCTIONS))


def pytest_configure(config):
    """Options that name no regression are refused before anything runs."""
    n, shards, one = config.getoption("--regress-n"), shard_count(config), config.getoption("--shard")
    if n < 1 or shards < 1:
        raise pytest.UsageError(f"--regress-n {n} and --shards {shards} must be positive")
    if one is not None and not 0 <= one < shards:
        raise pytest.UsageError(f"--shard {one} is not one of the {shards} shards (0 … {shards - 1})")
    if n < shards:
        raise pytest.UsageError(f"--regress-n {n} is fewer instructions than --shards {shards}")


def _shards(config) -> list[int]:
    """The shards this session runs: all, or ``--shard`` alone."""
    one = config.getoption("--shard")
    return [one] if one is not None else list(range(shard_count(config)))


def pytest_generate_tests(metafunc):
    if "shard" in metafunc.fixturenames:
        metafunc.parametrize("shard", _shards(metafunc.config), ids=lambda k: f"shard{k}")


# -- every host on the controller's commit (checked by each shard, where it runs) --------------------------------------------------

@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(controller, xdist) Tell each worker the commit it must run."""
    node.workerinput["tensorlsu_commit"] = commit(node.config.rootpath)


def wrong_commit(config) -> str | None:
    """(a worker) Why this host may not run shards: its clone is not at the controller's commit
    (None: it is, or this is no xdist worker)."""
    want = getattr(config, "workerinput", {}).get("tensorlsu_commit")
    have = commit(config.rootpath)
    if want is None or have == want:
        return None
    return (f"this host's clone {config.rootpath} is at {have}, the controller's at {want}: every host of a "
            "regression runs the same commit")


# -- merging on the controller ---------------------------------------------------------------

def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    props = dict(report.user_properties)
    if "shard" in props:
        _RESULTS[props["shard"]] = props


_RESULTS: dict = {}


def merged(results: dict) -> dict:
    """The shards' summaries as one: instructions and failures per form, coverage per policy
    (counts added) with the error codes of every form met and the levels, the failed shards
    with their seeds."""
    table: dict = {}
    coverage: dict = {}
    errors: dict = {}
    for props in results.values():
        errors.update({(fam, form): tuple(errs) for fam, form, errs in props["errors"]})
        for form, (ok, bad) in props["table"].items():
            row = table.setdefault(form, [0, 0])
            row[0] += ok
            row[1] += bad
        cov = coverage.setdefault(props["policy"], Counter())
        for *cell, n in props["coverage"]:
            cov[tuple(cell)] += n
    return {"shards": len(results), "instructions": sum(p["instructions"] for p in results.values()),
            "failures": sum(p["failed"] for p in results.values()), "table": table, "coverage": coverage,
            "failed_shards": sorted((p["shard"], p["seed"], p["policy"]) for p in results.values() if p["failed"]),
            "sim_s": round(sum(p["sim_s"] for p in results.values()), 1), "errors": errors,
            "levels": next(iter(results.values()))["levels"]}


def coverage_text(coverage: dict, errors: dict, levels: list[str], show: int = 60) -> str:
    """The cells hit and the cells never hit of policy x every family's forms x its error codes
    x the idle / back-pressure levels. ``coverage``: policy -> {(family, form, error, level):
    count}; ``errors``: (family, form) -> the error codes of its cells (the forms counted are
    those the run met)."""
    cells = [(policy, fam, form, err, lv) for policy in coverage for (fam, form), errs in sorted(errors.items())
             for err in errs for lv in levels]
    missed = [c for c in cells if not coverage[c[0]].get(c[1:])]
    out = [f"coverage: {len(cells) - len(missed)} of {len(cells)} cells (policy x family x form x error x "
           f"idle/back-pressure level) hit, {len(missed)} never"]
    by: Counter = Counter()
    for policy, cov in coverage.items():
        for (fam, _, err, _), n in cov.items():
            by[(policy, fam, err)] += n
    out.append("  instructions per policy, family and error: "
               + ", ".join(f"{p} {f} {e} {n}" for (p, f, e), n in sorted(by.items())))
    gaps = Counter((c[0], c[1], c[3]) for c in missed)
    if gaps:
        out.append("  cells never hit per policy, family and error: "
                   + ", ".join(f"{p} {f} {e} {n}" for (p, f, e), n in sorted(gaps.items())))
    out += [f"  never: {' | '.join(c)}" for c in missed[:show]]
    if len(missed) > show:
        out.append(f"  ... and {len(missed) - show} more")
    return "\n".join(out)


def pytest_terminal_summary(terminalreporter, config):
    if not _RESULTS or hasattr(config, "workerinput"):
        return
    m = merged(_RESULTS)
    w = terminalreporter
    w.section("merged regression")
    w.write_line(format_table(m["table"], "RTL regression form"))
    w.write_line(coverage_text(m["coverage"], m["errors"], m["levels"]))
    w.write_line(f"regression: {m['instructions']} instructions in {m['shards']} shards, {m['failures']} failures, "
                 f"{m['sim_s']} s simulating in all")
    for shard, seed, policy in m["failed_shards"]:
        w.write_line(f"FAILED shard {shard} (seed {seed}, {policy}): {reproduce(config, shard)}")
    out = Path(config.getoption("--regress-out") or config.rootpath / "build" / "regress")
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(
        {k: v for k, v in m.items() if k not in ("coverage", "errors")} | {"commit": commit(config.rootpath)},
        indent=1))
    (out / "coverage.json").write_text(json.dumps(
        {p: [[*cell, n] for cell, n in sorted(cov.items())] for p, cov in m["coverage"].items()}))
    w.write_line(f"merged summary and coverage: {out}/summary.json, {out}/coverage.json")


def reproduce(config, shard: int) -> str:
    """The command that runs ``shard`` alone, as it ran in the whole regression."""
    extra = []
    if config.getoption("--regress-policy") != "both":
        extra.append(f"POLICY={config.getoption('--regress-policy')}")
    if config.getoption("--regress-sim") != "verilator":
        extra.append(f"SIM={config.getoption('--regress-sim')}")
    if not config.getoption("--regress-ports"):
        extra.append("PORTS=0")
    return " ".join(["make regress", f"N={config.getoption('--regress-n')}",
                     f"SEED={config.getoption('--regress-seed')}", f"SHARDS={shard_count(config)}", f"SHARD={shard}", *extra])

