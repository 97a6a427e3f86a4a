#!/usr/bin/env python3
"""Record real kernels' shared-memory streams on the GPU, in Accel-Sim's trace format, with
their data.

Builds kernels.cu (a one-warp GEMM tile loop over Swizzle<3,4,3> tiles and a swizzled
epilogue; every traced instruction inline PTX), runs it, and writes per kernel:

* ``NAME.traceg``: the instructions as Accel-Sim's tracer writes them after post-processing
  (header with ``-shmem base_addr``, ``thread block`` / ``warp`` groups, ``PC mask dest_num
  [Rd] OPCODE src_num [Rs] mem_width format addresses immediate``, addresses compressed as the
  tracer does: base-stride when the lanes are evenly spaced, else base-delta);
* ``NAME.data.jsonl``: the data side file: a first line with the shared window's base, the
  bytes the kernel uses and its starting image (zero: the kernel clears it before the traced
  part), then per trace line the words each lane loaded or stored.

The kernel logs what it can see: each lane's generic address and data. What it cannot see is
labelled: the PC is the kernel source line times 16 (not a SASS offset), and the register
numbers are placeholders. The SASS opcode of each instruction is the one its PTX compiles to;
``cuobjdump -sass``, when present, confirms each appears in the kernel. Needs only Python 3
and nvcc (no project imports). Usage: ``python3 tb/hw/sass_capture.py --out-dir DIR``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from capture import find_nvcc, gpu_arch  # noqa: E402

#: kernels.cu's op codes: (SASS opcode, words a lane moves, a store)
OPS = {1: ("STS.128", 4, True), 2: ("LDSM.16.M88.4", 4, False), 3: ("LDSM.16.MT88.2", 2, False),
       4: ("STSM.16.M88.4", 4, True), 5: ("STSM.16.MT88.4", 4, True), 6: ("STSM.16.M88.2", 2, True),
       7: ("STSM.16.M88", 1, True), 8: ("LDS.128", 4, False), 9: ("LDS", 1, False)}


def mem_width(opcode: str) -> int:
    """The tracer's mem_width: the first numeric field of the opcode in bytes (bits / 8), else 4."""
    for tok in opcode.split(".")[1:]:
        if tok.isdigit():
            return int(tok) // 8
    return 4


def addresses(addrs: list[int]) -> str:
    """The tracer's compression of 32 active lanes: base-stride, else base-delta."""
    steps = {b - a for a, b in zip(addrs, addrs[1:])}
    if len(steps) == 1:
        return f"1 0x{addrs[0]:x} {steps.pop()}"
    return f"2 0x{addrs[0]:x} " + " ".join(str(b - a) for a, b in zip(addrs, addrs[1:]))


def sass_opcodes(exe: Path) -> dict[str, set[str]] | None:
    """Each kernel's shared-memory opcodes from cuobjdump -sass (None without cuobjdump)."""
    tool = shutil.which("cuobjdump") or shutil.which("cuobjdump", path=str(Path(find_nvcc()).parent))
    if tool is None:
        return None
    text = subprocess.run([tool, "-sass", str(exe)], capture_output=True, text=True, check=True).stdout
    out: dict[str, set[str]] = {}
    kernel = None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            kernel = next((k for k in ("gemm_tile", "epilogue", "window") if k in m.group(1)), m.group(1))
            continue
        m = re.search(r"\b((?:LDSM|STSM|LDS|STS)(?:\.[A-Z0-9]+)*)\b", line)
        if m and kernel:
            out.setdefault(kernel, set()).add(m.group(1))
    return out


def write(kernel: dict, meta: dict, out_dir: Path) -> tuple[Path, Path]:
    name, base = kernel["kernel"], kernel["smem_base"]
    lines = [f"-kernel name = {name}", "-kernel id = 1", "-grid dim = (1,1,1)", "-block dim = (32,1,1)",
             f"-shmem = {kernel['smem_bytes']}", "-nregs = 0", f"-binary version = {meta['arch'][3:5]}",
             "-cuda stream id = 0", f"-shmem base_addr = 0x{base:016x}", "-local mem base_addr = 0x0000000000000000",
             "-nvbit version = none", "-accelsim tracer version = 5", "-enable lineinfo = 0", "",
             f"# recorded by tb/hw/sass_capture.py on {meta['gpu']} ({meta['arch']}): the kernel logged each lane's",
             "# address and data; the PC is its source line times 16, the register numbers are placeholders",
             "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
             "[adrrescompress?] [mem_addresses] immediate", "", "#BEGIN_TB", "", "thread block = 0,0,0", "",
             "warp = 0", f"insts = {len(kernel['ops'])}"]
    side = [{"smem_base": f"0x{base:x}", "smem_bytes": kernel["smem_bytes"], "smem": "00" * kernel["smem_bytes"],
             "source": f"tb/hw/sass_capture.py on {meta['gpu']} ({meta['arch']})"}]
    for o in kernel["ops"]:
        opcode, words, store = OPS[o["op"]]
        dest, src = ("0", "2 R2 R4") if store else ("1 R4", "1 R2")     # placeholder registers
        lines.append(f"{o['site'] * 16:04x} ffffffff {dest} {opcode} {src} {mem_width(opcode)} "
                     f"{addresses(o['addr'])} 0")
        side.append({"line": len(lines), "data": [d[:words] for d in o["data"]]})
    lines += ["", "#END_TB", ""]
    trace, data = out_dir / f"{name}.traceg", out_dir / f"{name}.data.jsonl"
    trace.write_text("\n".join(lines))
    data.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in side))
    return trace, data


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", required=True, help="where NAME.traceg and NAME.data.jsonl go")
    p.add_argument("--arch", help="build target, e.g. sm_90a (default: the GPU's)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--build-only", action="store_true", help="compile, do not run")
    p.add_argument("--build-dir", default=str(HERE / "build"))
    args = p.parse_args(argv)
    gpu, arch = ("unknown", args.arch) if args.arch else gpu_arch()
    build = Path(args.build_dir)
    build.mkdir(parents=True, exist_ok=True)
    exe = build / "kernels"
    gencode = f"-gencode=arch=compute_{arch[3:]},code=sm_{arch[3:]}"
    cmd = [find_nvcc(), "-O2", "-std=c++17", gencode, str(HERE / "kernels.cu")]
    cmd += ["-c", "-o", str(exe) + ".o"] if args.build_only else ["-o", str(exe)]
    print(" ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    if args.build_only:
        return 0
    res = subprocess.run([str(exe), str(args.seed)], capture_output=True, text=True)
    sys.stderr.write(res.stderr)
    if res.returncode:
        return res.returncode
    meta = {"gpu": gpu, "arch": arch}
    found = sass_opcodes(exe)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for line in res.stdout.splitlines():
        kernel = json.loads(line)
        if found is not None:
            named = {OPS[o["op"]][0] for o in kernel["ops"]}
            missing = named - found.get(kernel["kernel"], set())
            if missing:
                sys.exit(f"sass_capture: {kernel['kernel']}: cuobjdump shows no {', '.join(sorted(missing))} "
                         f"(it has {', '.join(sorted(found.get(kernel['kernel'], set())))})")
        trace, data = write(kernel, meta, out_dir)
        print(f"sass_capture: {kernel['kernel']}: {len(kernel['ops'])} instructions -> {trace}, {data}"
              + ("" if found is None else " (opcodes confirmed by cuobjdump)"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
