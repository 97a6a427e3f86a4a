#!/usr/bin/env python3
"""Measure what wmma.load from shared memory costs on the GPU this runs on, and what it
compiles to.

For every wmma.load form the GPU runs (frag, layout, shape, type; the shared state space), one
kernel issues the instruction from 32 warps of one block, 8 in flight per warp, with every
destination register kept live (the assembler drops loads whose results are unused), for many
strides and base offsets: the saturated cycles per instruction. ``cuobjdump -sass`` of the same
program gives the shared loads each form compiles to (LDSM, LDS, ...). Writes JSON lines:

* ``{"kind": "meta", ...}``: the GPU, the target, the nvcc / ptxas version;
* ``{"kind": "sass", "instr": ..., "loads": [...], "pipe": [...]}``: per form, the load
  instructions of one wmma.load in program order, and its other shared-pipe instructions
  (MOVM transposes, SHFL);
* ``{"kind": "cost", "instr": ..., "stride": s, "offset": o, "cpi": c}``: per form, stride (in
  elements) and byte offset of the matrix in shared memory, cycles per instruction.

Like capture.py it imports nothing from the project. Usage:
``python3 tb/hw/wmma_cost.py --out data/h200_wmma_cost.jsonl`` (on the GPU machine).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from capture import BITS, MNK, WMMA, find_nvcc, gpu_arch, wmma_regs  # noqa: E402

#: Strides: the leading dimension plus these many 16-byte grains.
STRIDE_STEPS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16)
#: Byte offsets of the matrix in shared memory (the address must be 32-byte aligned).
OFFSETS = (0, 32, 64, 96)
#: Warps of the block and instructions in flight per warp.
WARPS, UNROLL = 32, 8
#: Shared-memory loads, and the other instructions that use the shared-memory pipe (MOVM, a
#: register-matrix transpose; SHFL), as cuobjdump prints them.
LOAD = re.compile(r"\b(LDSM[.\w]*|LDS[.\w]*)\s")
PIPE = re.compile(r"\b(MOVM[.\w]*|SHFL[.\w]*)\s")


def forms():
    """(frag, layout, shape, type) of every wmma.load form, as capture.py enumerates them."""
    for shape, types in WMMA.items():
        for frag, layout in itertools.product("abc", ("row", "col")):
            for ty in types["c" if frag == "c" else "ab"]:
                if ty in ("s4", "u4", "b1") and layout != ("row" if frag == "a" else "col"):
                    continue
                yield frag, layout, shape, ty


def kernel(name: str, instr: str, nregs: int, f64: bool) -> str:
    outs = ", ".join(f"%{i}" for i in range(nregs))
    cons = ", ".join((f'"=d"(d[{i}])' if f64 else f'"=r"(r[{i}])') for i in range(nregs))
    decl = f"double d[{nregs}];" if f64 else f"uint32_t r[{nregs}];"
    use = (f"for (int j = 0; j < {nregs}; ++j) {{ unsigned long long b = __double_as_longlong(d[j]); "
           f"x ^= (uint32_t)b ^ (uint32_t)(b >> 32); }}" if f64 else
           f"for (int j = 0; j < {nregs}; ++j) x ^= r[j];")
    # The address depends on the previous results through a run-time zero mask, so the
    # assembler can neither hoist nor merge the loads.
    return f"""
extern "C" __global__ void {name}(int iters, long long off, int stride, long long* cyc, uint32_t* sink,
                       uint32_t mask) {{
  extern __shared__ __align__(1024) uint8_t sm[];
  uint32_t a = (uint32_t)__cvta_generic_to_shared(sm + off);
  uint32_t acc = threadIdx.x;
  {decl}
  __syncthreads();
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {{
    uint32_t x = 0;
#pragma unroll
    for (int u = 0; u < {UNROLL}; ++u) {{
      uint32_t au = a + ((acc >> u) & mask);
      asm volatile("{instr} {{{outs}}}, [%{nregs}], %{nregs + 1};" : {cons} : "r"(au), "r"(stride));
      {use}
    }}
    acc ^= x;
  }}
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cyc[0] = t1 - t0;
  sink[threadIdx.x] = acc;
}}"""


def source(target: str, gpu: str) -> tuple[str, list[str]]:
    kernels, calls, names = [], [], []
    for k, (frag, layout, shape, ty) in enumerate(forms()):
        name = f"wcost{k}"
        instr = f"wmma.load.{frag}.sync.aligned.{layout}.{shape}.shared.{ty}"
        m, n, kk = MNK[shape]
        rows, cols = {"a": (m, kk), "b": (kk, n), "c": (m, n)}[frag]
        lead, other = (cols, rows) if layout == "row" else (rows, cols)
        kernels.append(kernel(name, instr, wmma_regs(frag, shape, ty), ty == "f64"))
        calls.append(f'run_cost({name}, "{instr}", {BITS[ty]}, {lead}, {other});')
        names.append((name, instr))
    steps = ", ".join(map(str, STRIDE_STEPS))
    offs = ", ".join(map(str, OFFSETS))
    main = f"""
#include <algorithm>
static const int kSteps[] = {{{steps}}};
static const int kOffsets[] = {{{offs}}};

template <class K>
static void run_cost(K kernel, const char* instr, int bits, int lead, int other) {{
  const int iters = 64;
  long long* d_cyc;
  uint32_t* d_sink;
  CK(cudaMalloc(&d_cyc, 8));
  CK(cudaMalloc(&d_sink, {WARPS} * kLanes * 4));
  int grain_bits = std::min(128, lead * bits);
  for (int step : kSteps) {{
    long long stride = lead + (long long)step * (grain_bits / bits);
    for (int off : kOffsets) {{
      long long span = ((other - 1) * stride * bits + lead * bits + 7) / 8;
      int smem = (int)((off + span + 127) / 128 * 128);
      double best = 1e30;
      for (int rep = 0; rep < 4; ++rep) {{
        kernel<<<1, {WARPS} * kLanes, smem>>>(iters, off, (int)stride, d_cyc, d_sink, 0u);
        CK(cudaGetLastError());
        auto cyc = host(d_cyc, 1);
        if (rep) best = std::min(best, (double)cyc[0] / ({WARPS} * iters * {UNROLL}));
      }}
      printf("{{\\"kind\\":\\"cost\\",\\"instr\\":\\"%s\\",\\"stride\\":%lld,\\"offset\\":%d,\\"cpi\\":%.3f}}\\n",
             instr, stride, off, best);
    }}
  }}
  cudaFree(d_cyc); cudaFree(d_sink);
}}
"""
    text = ('#include "runtime.cuh"\n'
            "template <class T>\nstatic std::vector<T> host(const T* p, size_t n) {\n"
            "  std::vector<T> v(n);\n  CK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));\n"
            "  return v;\n}\n" + main + "\n".join(kernels)
            + "\n\nint main() {\n  " + "\n  ".join(calls) + "\n  return 0;\n}\n")
    return text, names


def sass_loads(exe: Path, names) -> dict:
    """Per instr, the shared loads of one instruction (the kernel's loads over the unroll)."""
    text = subprocess.run(["cuobjdump", "-sass", str(exe)], capture_output=True, text=True,
                          check=True).stdout
    bodies = {b.split("\n", 1)[0].strip(): b for b in re.split(r"\n\s*Function : ", text)[1:]}
    out = {}
    for name, instr in names:
        body = bodies.get(name)
        loads = LOAD.findall(body) if body else []   # the outer loop is kept rolled
        other = PIPE.findall(body) if body else []
        per = len(loads) // UNROLL if len(loads) % UNROLL == 0 else None
        out[instr] = {"loads": loads[:per] if per else loads, "total": len(loads),
                      "per_instruction": per,
                      "pipe": other[:len(other) // UNROLL] if len(other) % UNROLL == 0 else other}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON lines to write")
    p.add_argument("--arch", help="build target, e.g. sm_90a (default: the GPU's)")
    p.add_argument("--build-only", action="store_true", help="generate and compile, do not run")
    p.add_argument("--build-dir", default=str(HERE / "build"))
    args = p.parse_args(argv)
    gpu, arch = ("unknown", args.arch) if args.arch else gpu_arch()
    build = Path(args.build_dir)
    build.mkdir(parents=True, exist_ok=True)
    text, names = source(arch, gpu)
    src = build / "wmma_cost.cu"
    src.write_text(text)
    exe = build / "wmma_cost"
    nvcc = find_nvcc()
    gencode = f"-gencode=arch=compute_{arch[3:]},code=sm_{arch[3:]}"
    cmd = [nvcc, "-O2", "-std=c++17", gencode, "-I", str(HERE), str(src)]
    cmd += ["-c", "-o", str(exe) + ".o"] if args.build_only else ["-o", str(exe)]
    print(" ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    if args.build_only:
        return 0
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    sys.stderr.write(res.stderr)
    if res.returncode:
        return res.returncode
    lines = [json.dumps({"kind": "meta", "gpu": gpu, "target": arch, "nvcc": version[-2:],
                         "warps": WARPS, "in_flight": UNROLL,
                         "source": f"tb/hw/wmma_cost.py on {gpu}"})]
    for instr, s in sass_loads(exe, names).items():
        lines.append(json.dumps({"kind": "sass", "instr": instr, **s}))
    for ln in res.stdout.splitlines():
        if ln.strip():
            json.loads(ln)
            lines.append(ln)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wmma_cost: {len(lines)} records from {gpu} ({arch}) -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
