"""The ``tensorlsu`` command: ``replay`` runs a trace through the reference model or the RTL and
checks it, ``draw`` pictures a form's layout, bank schedule or copy. ``main(argv)`` returns the
exit status (0: every expectation held; 1: some failed; 2: bad input, named on stderr)."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

import tensorlsu
from tensorlsu import data
from tensorlsu.sim import cheader, ptx, sass, stream, trace

__all__ = ["main"]

_DESCRIPTION = """\
A model of the GPU warp-level matrix load/store unit: ldmatrix, stmatrix, wmma.load and
tcgen05.ld / tcgen05.st / tcgen05.cp, bit-exact against an NVIDIA H200.

  replay   run a trace through the reference model (default) or the RTL, and check every
           record's registers, memory images, errors and bank cycles
  draw     draw a form's fragment layout, an address pattern's bank schedule or a copy's
           placement, as SVG or PNG
  cheader  write the bank rule as a C header for C and C++ simulators"""

_EXAMPLES = """\
examples:
  tensorlsu replay h200_sm90                     the 822 H200 vectors through the model
  tensorlsu replay h200_sm90 --backend rtl       the same through the RTL (Icarus; first run builds it)
  tensorlsu draw "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
  tensorlsu <command> --help                     a command's options"""

_REPLAY = f"""\
Run a trace (JSON lines, docs/trace-format.md) and compare each record's results with its
expectations. TRACE is a file, or the name of a trace shipped with the package:
{", ".join(data.NAMES)}.

A SASS address trace (Accel-Sim's tracer, NVBit's mem_trace; docs/sass-traces.md) prints every
shared access's bank cycles under both policies; with --backend rtl each LDSM / STSM also runs
through the RTL and must take the model's cycles.

Exit status: 0 when every expectation holds, 1 when one fails, 2 on bad input."""

_DRAW = """\
Draw an instruction form as SVG (or PNG, with matplotlib): which thread and register hold each
element; with --addr, which rows each bank quad serves in each clock; for a tcgen05.cp with
--desc, where each shared-memory byte lands in Tensor Memory."""


def _replay(args) -> int:
    rtl_only = [f"--{k.replace('_', '-')}" for k, unset in (("engine", None), ("tmem_columns", None), ("jobs", 1),
                                                            ("optimize", False)) if getattr(args, k) != unset]
    if args.backend != "rtl" and rtl_only:
        print(f"tensorlsu replay: {', '.join(rtl_only)} applies to the rtl backend (--backend rtl)", file=sys.stderr)
        return 2
    if args.trace in data.NAMES and not os.path.exists(args.trace):
        args.trace = str(data.path(args.trace))
    try:
        fmt = _format(args.trace, args.format)
    except OSError as e:
        print(f"tensorlsu replay: {e}", file=sys.stderr)
        return 2
    if fmt != "tensorlsu":
        project_only = [f"--{k.replace('_', '-')}" for k in ("select", "space", "stream", "waves", "smem_bytes")
                        if getattr(args, k)]
        if project_only:
            print(f"tensorlsu replay: {', '.join(project_only)} applies to the project's traces, not to "
                  f"{fmt} traces", file=sys.stderr)
            return 2
        return _replay_sass(args, fmt)
    if args.target:
        print("tensorlsu replay: --target applies to SASS traces (the project's records name their own)",
              file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        with open(args.trace, "rb") as f:
            records = list(trace.read(f))
        if args.select:
            prefixes = tuple(args.select.split(","))
            records = [r for r in records if r.raw["instr"].startswith(prefixes)]
        if args.space:
            records = [r for r in records if r.space == args.space]
        if args.stream:
            records = stream.images(records, args.smem_bytes)
        if args.backend == "rtl":
            backend = _rtl_backend(args, records)
            if backend is None:
                return 2
            print(f"replay: {len(records)} records of {args.trace} through the RTL ({args.sim}, {args.policy}, "
                  f"{backend.smem_bytes} bytes of shared memory); builds and simulator logs in {args.build_dir}/",
                  flush=True)
        else:
            backend = trace.ModelBackend(policy=args.policy, smem_bytes=args.smem_bytes)
        outcomes = list(trace.run(records, backend))
    except OSError as e:
        print(f"tensorlsu replay: {e}", file=sys.stderr)
        return 2
    except trace.TraceError as e:
        print(f"tensorlsu replay: {args.trace}: {e}", file=sys.stderr)
        return 2
    except ValueError as e:        # a --smem-bytes the unit cannot be built with
        print(f"tensorlsu replay: {e}", file=sys.stderr)
        return 2
    dt = time.perf_counter() - t0
    if args.emit:
        try:
            with open(args.emit, "w") as f:
                for o in outcomes:
                    f.write(json.dumps(trace.emitted(o), separators=(",", ":")) + "\n")
        except OSError as e:
            print(f"tensorlsu replay: --emit: {e}", file=sys.stderr)
            return 2
    print(trace.format_table(trace.summarize(outcomes)))
    failed = [o for o in outcomes if not o.passed]
    for o in failed[: args.show]:
        print(f"FAIL line {o.record.line} {o.record.form}, policy {args.policy}{trace.where(o)}: "
              f"{'; '.join(o.failures)}")
    if len(failed) > args.show:
        print(f"… and {len(failed) - args.show} more failures")
    sim = f", {args.sim} {getattr(backend, 'seconds', 0):.2f} s simulating" if args.backend == "rtl" else ""
    print(f"{len(outcomes)} records, {len(outcomes) - len(failed)} passed, {len(failed)} failed "
          f"({args.backend}, policy {args.policy}, {dt:.2f} s{sim})")
    return 1 if failed else 0


def _format(path: str, given: str) -> str:
    """The trace's format: ``given``, or read from its first lines: a SASS format only where
    they are one (Accel-Sim's or NVBit's); anything else is read as the project's JSON lines,
    whose reader names what is wrong with it."""
    if given != "auto":
        return given
    with open(path, encoding="utf-8", errors="replace") as f:
        head = [line[:4096] for _, line in zip(range(200), f)]
    first = next((line.strip() for line in head if line.strip()), "")
    if not first or first[0] in "{[":
        return "tensorlsu"
    try:
        return sass.detect(head)
    except sass.SassError:
        return "tensorlsu"


def _rtl_backend(args, records):
    """The RTL backend for ``records`` (a unit of ``--smem-bytes``, else the smallest that holds
    them), or None after saying why it cannot load."""
    try:
        from tensorlsu.cosim.backend import RtlBackend
    except ImportError as e:
        print(f"tensorlsu replay: the rtl backend needs the sim extra: pip install 'tensorlsu[sim]' ({e})",
              file=sys.stderr)
        return None
    size = args.smem_bytes or RtlBackend.smem_bytes_for(records)
    # a store's image is read back when its record expects one or the replay emits what it produced
    return RtlBackend(sim=args.sim, policy=args.policy, waves=args.waves, smem_bytes=size, progress=True,
                      build_root=args.build_dir, images=bool(getattr(args, "emit", None)),
                      engine=getattr(args, "engine", None), tmem_columns=getattr(args, "tmem_columns", None),
                      processes=getattr(args, "jobs", 1), optimize=True if getattr(args, "optimize", False) else None)


def _side_file(args) -> str | None:
    """The data side file: --data, else NAME.data.jsonl beside NAME.traceg when there is one."""
    if args.data:
        return args.data
    path = os.path.splitext(args.trace)[0] + ".data.jsonl"
    return path if os.path.exists(path) else None


def _replay_sass(args, fmt: str) -> int:
    """An Accel-Sim or NVBit address trace: every shared access's bank cycles under both
    policies (the model). With a data side file, the stream replays with its data through the
    backend; without one, ``--backend rtl`` runs each LDSM / STSM at the model's cycles."""
    t0 = time.perf_counter()
    side_path = _side_file(args)
    side = None
    try:
        if side_path is not None:
            with open(side_path, encoding="utf-8") as f:
                side = stream.read_side(f.read().splitlines())
    except (OSError, sass.SassError) as e:
        print(f"tensorlsu replay: {side_path}: {e}", file=sys.stderr)
        return 2
    try:
        with open(args.trace, encoding="utf-8", errors="replace") as f:
            accesses = list(sass.read(f.read().splitlines(), fmt))
        costed, base = sass.costs(accesses, side.base if side else args.smem_base)
        shared = [c for c in costed if c.op is not None or c.error is not None]
        # the forms' target: as given, else the oldest that has every LDSM / STSM form of the trace
        matrix = [(c.access, c.op) for c in shared if c.op is not None and c.op.kind == "matrix"]
        target = args.target or ("sm_100a" if any(op.target == "sm_100a" for _, op in matrix) else "sm_90a")
        for a, op in matrix:     # a target given must have every form of the trace
            try:
                ptx.parse(op.form, target)
            except ptx.PtxError as e:
                raise sass.SassError(f"{a.where}: {a.opcode}: {e}") from None
        plain: list = []
        if side is not None:
            lines, plain = stream.side_records(shared, side, args.policy, target)
        else:
            lines = [{**sass.record(c.access, c.op, base, target), "expect": {"wavefronts": c.cycles[args.policy]}}
                     for c in shared if args.backend == "rtl" and c.error is None and c.op is not None
                     and c.op.kind == "matrix"]
    except OSError as e:
        print(f"tensorlsu replay: {e}", file=sys.stderr)
        return 2
    except sass.SassError as e:
        print(f"tensorlsu replay: {args.trace}: {e}", file=sys.stderr)
        return 2
    refused = [c for c in shared if c.error is not None]
    print(f"{args.trace} ({fmt}): {len(accesses):,} memory instructions, {len(shared):,} in shared memory "
          f"(offsets from 0x{base:x})" + (f"; data from {side_path}" if side else ""))
    print(sass.format_costs(costed))
    for c in refused[: args.show]:
        print(f"REFUSED {c.error}")
    failed: list = []
    if lines:
        records = list(trace.read(json.dumps(r) for r in lines))
        backend = _rtl_backend(args, records) if args.backend == "rtl" else trace.ModelBackend(policy=args.policy)
        if backend is None:
            return 2
        outcomes = list(trace.run(records, backend))
        failed = [o for o in outcomes if not o.passed]
        if side is not None:
            print(trace.format_table(trace.summarize(outcomes)))
        for o in failed[: args.show]:
            print(f"FAIL {o.record.raw['source']}: {'; '.join(o.failures)}")
        what = "with the GPU's data" if side else "at the model's bank cycles"
        print(f"{args.backend} ({args.sim + ', ' if args.backend == 'rtl' else ''}{args.policy}): "
              f"{len(outcomes) - len(failed):,} of {len(outcomes):,} LDSM / STSM {what}")
    bad_plain = [p for p in plain if p.failure]
    for p in bad_plain[: args.show]:
        print(f"FAIL {p.failure}")
    if plain:
        print(f"LDS / STS on the stream's image: {len(plain) - len(bad_plain):,} of {len(plain):,} as the GPU did")
    if args.emit:
        try:
            with open(args.emit, "w") as f:
                for c in shared:
                    f.write(json.dumps({"line": c.access.line, "where": c.access.where, "opcode": c.access.opcode,
                                        **({"error": c.error} if c.error else {"wavefronts": c.cycles})}) + "\n")
        except OSError as e:
            print(f"tensorlsu replay: --emit: {e}", file=sys.stderr)
            return 2
    print(f"{len(shared):,} shared accesses, {len(refused):,} refused ({time.perf_counter() - t0:.2f} s)")
    return 1 if refused or failed or bad_plain else 0


def _cheader(args) -> int:
    try:
        with open(args.out, "w") as f:
            f.write(cheader.generate())
    except OSError as e:
        print(f"tensorlsu cheader: --out: {e}", file=sys.stderr)
        return 2
    print(f"tensorlsu cheader: {args.out}")
    return 0


def _draw(args) -> int:
    from tensorlsu.sim import draw
    from tensorlsu.sim.model import ModelError
    from tensorlsu.sim.ptx import PtxError, parse
    try:
        ins = parse(args.form, args.target)
        if ins.op == "tcgen05.cp":
            desc = ins.desc if args.desc is None else args.desc
            if desc is None:
                raise ValueError("a tcgen05.cp is drawn for a descriptor: give --desc")
            grid = draw.copy(ins, desc)
        elif args.addr is None:
            grid = draw.layout(ins)
        else:
            try:
                addr = [int(x, 0) for x in args.addr.split(",")]
            except ValueError:
                raise ValueError(f"--addr {args.addr!r}: expected comma-separated integers") from None
            grid = draw.schedule(ins, addr, args.policy)
        out = args.out or "".join(ch if ch.isalnum() else "_" for ch in ins.form) + ".svg"
        draw.save(grid, out)
    except OSError as e:
        print(f"tensorlsu draw: --out: {e}", file=sys.stderr)
        return 2
    except (PtxError, ModelError, ValueError) as e:
        print(f"tensorlsu draw: {e}", file=sys.stderr)
        return 2
    print(f"tensorlsu draw: {grid.title} -> {out}")
    return 0


def _count(text: str) -> int:
    """A non-negative integer option."""
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return n


def _count_positive(text: str) -> int:
    """A positive integer option."""
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text} is not at least 1")
    return n


def _tmem_columns(text: str) -> int:
    """A number of columns; which sizes the unit has, the RTL backend says (its TmemParams)."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of columns") from None


def _smem_bytes(text: str) -> int:
    """--smem-bytes: a shared memory a CTA can have (1 … the largest the targets have)."""
    from tensorlsu.sim.model import SMEM_BYTES
    n = int(text)
    if not 0 < n <= SMEM_BYTES:
        raise argparse.ArgumentTypeError(f"{text} bytes: shared memory is 1 … {SMEM_BYTES} bytes")
    return n


def main(argv=None) -> int:
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog="tensorlsu", description=_DESCRIPTION, epilog=_EXAMPLES,
                                formatter_class=fmt)
    p.add_argument("--version", action="version", version=f"%(prog)s {tensorlsu.__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{replay,draw,cheader}")
    r = sub.add_parser("replay", help="run a trace and check it", description=_REPLAY, formatter_class=fmt)
    r.add_argument("trace", metavar="TRACE", help="a trace file, or the name of a shipped trace")
    r.add_argument("--format", default="auto", choices=["auto", "tensorlsu", "accelsim", "nvbit"],
                   help="the trace's format (default: told from its first lines): the project's JSON "
                        "lines, an Accel-Sim tracer trace (.trace / .traceg) or NVBit mem_trace output")
    r.add_argument("--smem-base", type=lambda x: int(x, 0), metavar="A",
                   help="SASS traces: the shared window's base address (default: the Accel-Sim header's, "
                        "else the lowest shared address rounded down to 1 KiB)")
    r.add_argument("--target", help="SASS traces: the target of the PTX forms (default sm_90a, or sm_100a when "
                                    "the trace has a .b8 LDSM / STSM form)")
    r.add_argument("--data", metavar="FILE",
                   help="SASS traces: the data side file (default: NAME.data.jsonl beside NAME.traceg, when "
                        "present): replay the stream with the GPU's data")
    r.add_argument("--stream", action="store_true",
                   help="the records share one shared-memory image: a record without 'smem' reads what the "
                        "records before it left")
    r.add_argument("--backend", default="model", choices=["model", "rtl"],
                   help="model: the numpy reference (a second for the H200 vectors); rtl: the "
                        "emitted Verilog under cocotb (the sim extra)")
    r.add_argument("--sim", default="icarus", choices=["icarus", "verilator"],
                   help="simulator of the rtl backend (default icarus; verilator builds once, then runs faster)")
    r.add_argument("--engine", choices=["native", "cocotb"],
                   help="rtl backend on Verilator: native (the default: a compiled harness, the fastest) or "
                        "cocotb (the project's cocotb testbench, as on Icarus)")
    r.add_argument("--tmem-columns", type=_tmem_columns, metavar="N",
                   help="rtl backend: build the unit with N Tensor Memory columns (0: none) for every record, "
                        "so that several traces share one build (default: each record's allocation, the "
                        "shared-memory records with the first); a tcgen05 record of another allocation is refused")
    r.add_argument("--jobs", type=_count_positive, default=1, metavar="N",
                   help="rtl backend: N simulations of the same build at once, each a run of the records in "
                        "turn (default 1; a record brings its own images, so the results are the same)")
    r.add_argument("--optimize", action="store_true",
                   help="rtl backend on Verilator: compile the simulator optimized (about 40 s longer for "
                        "the Tensor Memory unit, then three times faster; taken by itself from 5,000 records)")
    r.add_argument("--policy", default="h200", choices=["h200", "packed"],
                   help="bank scheduling policy: h200 (the H200's, measured) or packed (any 32 "
                        "distinct banks a clock); default h200")
    r.add_argument("--smem-bytes", type=_smem_bytes, metavar="N",
                   help="shared memory of records without 'smem' (model: 228 KiB) and of the unit "
                        "(rtl: the smallest size that holds every record's rows and image)")
    r.add_argument("--select", metavar="PREFIXES",
                   help="only records whose instruction starts with one of these (comma-separated)")
    r.add_argument("--space", choices=["shared", "global", "tensor"],
                   help="only records that access this memory")
    r.add_argument("--build-dir", default="build", metavar="DIR",
                   help="rtl backend: where the simulator builds go, a folder per configuration (default build; "
                        "a build takes a few minutes and up to about 160 MB, and is reused)")
    r.add_argument("--waves", action="store_true",
                   help="rtl backend: write an FST waveform with every payload field named, and a GTKWave save file "
                        "that decodes forms and errors, to the build folder (the command to view them is printed)")
    r.add_argument("--emit", metavar="FILE", help="write the records with expect replaced by the results")
    r.add_argument("--show", type=_count, default=20, metavar="N", help="print at most N failures")
    d = sub.add_parser("draw", help="draw a layout, a bank schedule or a copy", description=_DRAW,
                       formatter_class=fmt)
    d.add_argument("form", help='instruction text, e.g. "ldmatrix.sync.aligned.m8n8.x4.shared.b16"')
    d.add_argument("--out", metavar="FILE", help="picture to write, .svg or .png (default: FORM.svg)")
    d.add_argument("--target", default="sm_100a", help="target the form is parsed for")
    d.add_argument("--addr", metavar="A,B,...", help="ldmatrix / stmatrix row addresses (thread order): "
                                                     "draw the bank-quad schedule instead of the layout")
    d.add_argument("--policy", default="h200", choices=["h200", "packed"], help="schedule of --addr")
    d.add_argument("--desc", type=lambda x: int(x, 0), metavar="D",
                   help="tcgen05.cp: the 64-bit shared-memory descriptor (docs/tcgen05-cp.md): draw "
                        "which shared-memory bytes land in each lane and column")
    h = sub.add_parser("cheader", help="write the bank rule as a C header",
                       description="Write tensorlsu_banks.h: the bank cycles of ldmatrix / stmatrix and of "
                                   "LDS / STS as C functions, generated from the model's tables, for C and "
                                   "C++ simulators.", formatter_class=fmt)
    h.add_argument("--out", metavar="FILE", default="tensorlsu_banks.h", help="default: tensorlsu_banks.h")
    args = p.parse_args(argv)
    if args.cmd == "cheader":
        return _cheader(args)
    if args.cmd == "draw":
        return _draw(args)
    # a replay makes millions of small objects and frees them with the run: the cyclic
    # collector's passes over them cost a third of a fast replay's time, and find nothing
    gc.disable()
    try:
        return _replay(args)
    finally:
        gc.enable()


if __name__ == "__main__":
    sys.exit(main())
