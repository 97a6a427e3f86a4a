#!/usr/bin/env python3
"""Capture hardware vectors on whatever NVIDIA GPU this runs on.

Generates one small kernel per instruction form (tb/hw/build/forms.cu, which includes
runtime.cuh), builds it with nvcc for the GPU found, runs it, and writes trace records
(format: docs/trace-format.md) whose expectations are what the GPU produced:

* every ldmatrix / stmatrix / wmma.load form the GPU runs, with random and index-pattern
  data, duplicate rows, random strides and base offsets, shared, global and generic spaces;
* saturated-throughput measurements (``expect.wavefronts``) of random address patterns;
* on sm_100-family GPUs also the ldmatrix .m16n16 / .m8n16, stmatrix .m16n8 and tcgen05.ld
  forms.

It needs only Python 3 and nvcc (no project imports: the captured data must not depend on
the model it checks). Usage: ``python3 tb/hw/capture.py --out FILE [--arch sm_90a]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

WMMA = {  # shape: {(frag): [types]} as the PTX text lists them
    "m16n16k16": {"ab": ["f16", "bf16", "s8", "u8"], "c": ["f16", "f32", "s32"]},
    "m8n32k16": {"ab": ["f16", "bf16", "s8", "u8"], "c": ["f16", "f32", "s32"]},
    "m32n8k16": {"ab": ["f16", "bf16", "s8", "u8"], "c": ["f16", "f32", "s32"]},
    "m16n16k8": {"ab": ["tf32"], "c": ["f32"]},
    "m8n8k4": {"ab": ["f64"], "c": ["f64"]},
    "m8n8k32": {"ab": ["s4", "u4"], "c": ["s32"]},
    "m8n8k128": {"ab": ["b1"], "c": ["s32"]},
}
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f64": 64, "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1,
        "f32": 32, "s32": 32}
MNK = {"m16n16k16": (16, 16, 16), "m8n32k16": (8, 32, 16), "m32n8k16": (32, 8, 16),
       "m16n16k8": (16, 16, 8), "m8n8k4": (8, 8, 4), "m8n8k32": (8, 8, 32), "m8n8k128": (8, 8, 128)}


def wmma_regs(frag, shape, ty):
    """PTX registers of the fragment (f64 counts 64-bit registers; f16 a/b are always 8)."""
    m, n, k = MNK[shape]
    rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n)}[frag]
    if ty == "f16" and frag in "ab":
        return 8
    return max(1, rows * cols * BITS[ty] // 32 // (64 if ty == "f64" else 32))


def _row_address(space: str, writable: bool) -> tuple[str, str]:
    """Kernel code computing thread t's row address, and its asm constraint."""
    if space == "shared":
        return "uint32_t a = (uint32_t)__cvta_generic_to_shared(sm + addr[t]);", '"r"(a)'
    return f"{'' if writable else 'const '}uint8_t* a = sm + addr[t];", '"l"(a)'


class Gen:
    """Accumulates generated kernels and the host calls that run them."""

    def __init__(self):
        self.kernels, self.calls = [], []
        self.n = 0

    def name(self):
        self.n += 1
        return f"k{self.n}"

    # -- ldmatrix -----------------------------------------------------------------------
    def ldsm(self, instr, nregs, rows, space, cases):
        k = self.name()
        outs = ", ".join(f"%{i}" for i in range(nregs))
        cons = ", ".join(f'"=r"(r[{i}])' for i in range(nregs))
        addr, ac = _row_address(space, False)
        self.kernels.append(f"""
__global__ void {k}(const uint8_t* img, int n, const long long* addr, uint32_t* out) {{
  extern __shared__ __align__(1024) uint8_t sm[];
  int t = threadIdx.x;
  for (int i = t; i < n; i += 32) sm[i] = img[i];
  __syncthreads();
  uint32_t r[{nregs}];
  {addr}
  asm volatile("{instr} {{{outs}}}, [%{nregs}];" : {cons} : {ac});
  for (int i = 0; i < {nregs}; ++i) out[t * {nregs} + i] = r[i];
}}""")
        self.calls.append(f'run_ld({k}, "{instr}", {nregs}, {rows}, {cases}, rng);')

    def stsm(self, instr, nregs, rows, space, cases):
        k = self.name()
        ins = ", ".join(f"%{i + 1}" for i in range(nregs))
        cons = ", ".join(f'"r"(regs[t * {nregs} + {i}])' for i in range(nregs))
        addr, ac = _row_address(space, True)
        self.kernels.append(f"""
__global__ void {k}(const uint8_t* img, int n, const long long* addr, const uint32_t* regs,
                    uint8_t* out) {{
  extern __shared__ __align__(1024) uint8_t sm[];
  int t = threadIdx.x;
  for (int i = t; i < n; i += 32) sm[i] = img[i];
  __syncthreads();
  {addr}
  asm volatile("{instr} [%0], {{{ins}}};" :: {ac}, {cons} : "memory");
  __syncthreads();
  for (int i = t; i < n; i += 32) out[i] = sm[i];
}}""")
        self.calls.append(f'run_st({k}, "{instr}", {nregs}, {rows}, {cases}, rng);')

    # -- wmma.load ------------------------------------------------------------------------
    def wmma(self, frag, layout, shape, ty, space, cases):
        k = self.name()
        nregs = wmma_regs(frag, shape, ty)
        sp = "" if space == "generic" else f".{space}"
        instr = f"wmma.load.{frag}.sync.aligned.{layout}.{shape}{sp}.{ty}"
        f64 = ty == "f64"
        outs = ", ".join(f"%{i}" for i in range(nregs))
        cons = ", ".join((f'"=d"(d[{i}])' if f64 else f'"=r"(r[{i}])') for i in range(nregs))
        words = 2 * nregs if f64 else nregs
        if space == "shared":
            addr, ac = "uint32_t a = (uint32_t)__cvta_generic_to_shared(sm + off);", '"r"(a)'
        elif space == "global":
            addr, ac = "const uint8_t* a = gbuf + off;", '"l"(a)'
        else:  # generic: the runner picks shared or global per case (in_shared)
            addr, ac = "const uint8_t* a = in_shared ? sm + off : gbuf + off;", '"l"(a)'
        store = (f"double d[{nregs}];" if f64 else f"uint32_t r[{nregs}];")
        copy = (f"memcpy(&out[t * {words}], d, {8 * nregs});" if f64 else
                f"for (int i = 0; i < {nregs}; ++i) out[t * {words} + i] = r[i];")
        m, n, kk = MNK[shape]
        rows, cols = {"a": (m, kk), "b": (kk, n), "c": (m, n)}[frag]
        lead = cols if layout == "row" else rows
        other = rows if layout == "row" else cols
        self.kernels.append(f"""
__global__ void {k}(const uint8_t* img, int n, long long off, int stride, const uint8_t* gbuf,
                    int in_shared, uint32_t* out) {{
  extern __shared__ __align__(1024) uint8_t sm[];
  int t = threadIdx.x;
  for (int i = t; i < n; i += 32) sm[i] = img[i];
  __syncthreads();
  {store}
  {addr}
  asm volatile("{instr} {{{outs}}}, [%{nregs}], %{nregs + 1};" : {cons} : {ac}, "r"(stride));
  {copy}
}}""")
        self.calls.append(f'run_wmma({k}, "{instr}", {words}, {BITS[ty]}, {lead}, {other}, '
                          f'"{space}", {cases}, rng);')

    # -- throughput ---------------------------------------------------------------------
    def throughput(self, instr, nregs, rows, store, patterns):
        k = self.name()
        if store:
            ins = ", ".join(f"%{i + 1}" for i in range(nregs))
            cons = ", ".join(f'"r"(acc + {i})' for i in range(nregs))
            body = f'asm volatile("{instr} [%0], {{{ins}}};" :: "r"(a), {cons} : "memory");'
        else:
            # The address depends on the previous results through a run-time zero mask, so
            # the assembler can neither hoist nor merge the loads; 8 stay in flight per warp.
            outs = ", ".join(f"%{i}" for i in range(nregs))
            cons = ", ".join(f'"=r"(r[{i}])' for i in range(nregs))
            body = (f"uint32_t au = a + ((acc >> u) & mask); "
                    f'asm volatile("{instr} {{{outs}}}, [%{nregs}];" : {cons} : "r"(au));'
                    f" for (int j = 0; j < {nregs}; ++j) x ^= r[j];")
        self.kernels.append(f"""
__global__ void {k}(const long long* addr, int iters, long long* cyc, uint32_t* sink, uint32_t mask) {{
  extern __shared__ __align__(1024) uint8_t sm[];
  int lane = threadIdx.x % 32;
  uint32_t a = (uint32_t)__cvta_generic_to_shared(sm + addr[lane]);
  uint32_t acc = threadIdx.x, r[{nregs}];
  (void)r; (void)mask;
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {{
    uint32_t x = 0;
#pragma unroll
    for (int u = 0; u < 8; ++u) {{ {body} }}
    acc ^= x;
  }}
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cyc[0] = t1 - t0;
  sink[threadIdx.x] = acc;
}}""")
        self.calls.append(f'run_tp({k}, "{instr}", {rows}, {int(store)}, {patterns}, rng);')

    # -- tcgen05.ld (sm_100 family only) ------------------------------------------------
    def tcgen05(self, shape, num, pack, red, split, cases):
        k = self.name()
        per = {"16x32bx2": 1, "16x64b": 1, "32x32b": 1, "16x128b": 2, "16x256b": 4}[shape]
        nregs = per * num
        quals = f"{shape}.x{num}" + (".pack::16b" if pack else "")
        if red:
            op, ty, mods = red
            instr = f"tcgen05.ld.red.sync.aligned.{quals}.{op}{mods}.{ty}"
        else:
            instr = f"tcgen05.ld.sync.aligned.{quals}.b32"
        outs = ", ".join(f"%{i}" for i in range(nregs))
        cons = ", ".join(f'"=r"(r[{i}])' for i in range(nregs))
        red_op = f", %{nregs}" if red else ""
        a_idx = nregs + (1 if red else 0)
        red_con = ', "=r"(rv)' if red else ""
        tail = f", {split}" if shape == "16x32bx2" else ""
        self.kernels.append(f"""
__global__ void {k}(const uint32_t* img, uint32_t taddr_off, uint32_t* out, uint32_t* redval) {{
  __shared__ uint32_t base;
  int t = threadIdx.x, warp = t / 32, lane = t % 32;
  if (warp == 0) {{
    uint32_t dst = (uint32_t)__cvta_generic_to_shared(&base);
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 512;" :: "r"(dst));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  }}
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;");
  uint32_t tb = base;
  // Fill the warp's 32 lanes, all 512 columns, 32 columns per tcgen05.st.
  for (int c = 0; c < 512; c += 32) {{
    const uint32_t* v = img + (size_t)(32 * warp + lane) * 512 + c;
    uint32_t ta = tb + ((uint32_t)(32 * warp) << 16) + c;
    asm volatile("tcgen05.st.sync.aligned.32x32b.x32.b32 [%0], {{%1, %2, %3, %4, %5, %6, %7, %8, "
                 "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, "
                 "%25, %26, %27, %28, %29, %30, %31, %32}};" :: "r"(ta),
                 "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]), "r"(v[4]), "r"(v[5]), "r"(v[6]),
                 "r"(v[7]), "r"(v[8]), "r"(v[9]), "r"(v[10]), "r"(v[11]), "r"(v[12]), "r"(v[13]),
                 "r"(v[14]), "r"(v[15]), "r"(v[16]), "r"(v[17]), "r"(v[18]), "r"(v[19]), "r"(v[20]),
                 "r"(v[21]), "r"(v[22]), "r"(v[23]), "r"(v[24]), "r"(v[25]), "r"(v[26]), "r"(v[27]),
                 "r"(v[28]), "r"(v[29]), "r"(v[30]), "r"(v[31]));
  }}
  asm volatile("tcgen05.wait::st.sync.aligned;");
  __syncthreads();
  uint32_t r[{nregs}], rv = 0;
  (void)rv;
  uint32_t ta = tb + ((uint32_t)(32 * warp) << 16) + taddr_off;
  asm volatile("{instr} {{{outs}}}{red_op}, [%{a_idx}]{tail};" : {cons}{red_con} : "r"(ta));
  asm volatile("tcgen05.wait::ld.sync.aligned;");
  for (int i = 0; i < {nregs}; ++i) out[t * {nregs} + i] = r[i];
  redval[t] = rv;
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 512;" :: "r"(tb));
}}""")
        self.calls.append(f'run_tc({k}, "{instr}", {nregs}, {int(bool(red))}, '
                          f'{int(shape == "16x32bx2")}, {split}, {per}, {cases}, rng);')


def build_forms(cc: int) -> Gen:
    """Kernels for a GPU of compute capability ``cc`` (e.g. 90, 100, 103)."""
    cc_major = cc // 10
    g = Gen()
    for num, trans in itertools.product((1, 2, 4), (False, True)):
        tr = ".trans" if trans else ""
        g.ldsm(f"ldmatrix.sync.aligned.m8n8.x{num}{tr}.shared.b16", num, 8 * num, "shared", 12)
        g.stsm(f"stmatrix.sync.aligned.m8n8.x{num}{tr}.shared.b16", num, 8 * num, "shared", 12)
        if num == 4:
            g.ldsm(f"ldmatrix.sync.aligned.m8n8.x{num}{tr}.b16", num, 8 * num, "generic", 6)
            g.stsm(f"stmatrix.sync.aligned.m8n8.x{num}{tr}.b16", num, 8 * num, "generic", 6)
    for shape, types in WMMA.items():
        for frag, layout in itertools.product("abc", ("row", "col")):
            for ty in types["c" if frag == "c" else "ab"]:
                if ty in ("s4", "u4", "b1") and layout != ("row" if frag == "a" else "col"):
                    continue
                cases = 16 if BITS[ty] < 8 else 4
                for space in ("shared", "global"):
                    g.wmma(frag, layout, shape, ty, space, cases)
                if frag == "c" or ty in ("f16", "s4"):
                    g.wmma(frag, layout, shape, ty, "generic", 4)
    for num in (1, 2, 4):
        g.throughput(f"ldmatrix.sync.aligned.m8n8.x{num}.shared.b16", num, 8 * num, False, 16)
        g.throughput(f"stmatrix.sync.aligned.m8n8.x{num}.shared.b16", num, 8 * num, True, 8)
    if cc_major == 10:
        for num in (1, 2):
            for ty in (".b8", ".b8x16.b6x16_p32", ".b8x16.b4x16_p64"):
                g.ldsm(f"ldmatrix.sync.aligned.m16n16.x{num}.trans.shared{ty}", 2 * num, 16 * num,
                       "shared", 8)
        for num in (1, 2, 4):
            for ty in (".b8x16.b6x16_p32", ".b8x16.b4x16_p64"):
                g.ldsm(f"ldmatrix.sync.aligned.m8n16.x{num}.shared{ty}", num, 8 * num, "shared", 8)
            g.stsm(f"stmatrix.sync.aligned.m16n8.x{num}.trans.shared.b8", num, 8 * num, "shared", 8)
        for shape, per in (("32x32b", 1), ("16x32bx2", 1), ("16x64b", 1), ("16x128b", 2), ("16x256b", 4)):
            for num in (1, 2, 4, 8, 32):
                if per * num > 128:
                    continue
                for pack in (False, True):
                    g.tcgen05(shape, num, pack, None, 8 if shape == "16x32bx2" else 0, 2)
        if cc in (103, 110):  # tcgen05.ld.red: sm_103 and sm_110 families only
            for shape, num, red in itertools.product(
                    ("32x32b", "16x32bx2"), (2, 8, 32),
                    (("min", "f32", ""), ("max", "f32", ".abs"), ("max", "f32", ".NaN"),
                     ("min", "f32", ".abs.NaN"), ("min", "u32", ""), ("max", "s32", ""))):
                g.tcgen05(shape, num, False, red, 8 if shape == "16x32bx2" else 0, 2)
    return g


def find_nvcc() -> str:
    for c in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and Path(c).exists():
            return c
    sys.exit("capture: nvcc not found (set NVCC)")


def gpu_arch() -> tuple[str, str]:
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout.splitlines()[0]
    name, cap = [x.strip() for x in out.split(",")]
    major, minor = cap.split(".")
    return name, f"sm_{major}{minor}a"


def write_source(g: Gen, path: Path, seed: int, target: str, gpu: str):
    main = HERE / "main.cuh"
    path.write_text("#include \"runtime.cuh\"\n#include \"main.cuh\"\n"
                    + "\n".join(g.kernels)
                    + f"\n\nint main(int argc, char** argv) {{\n  Rng rng({seed});\n"
                    + f'  set_meta("{target}", "{gpu}");\n  '
                    + "\n  ".join(g.calls) + "\n  return 0;\n}\n")
    assert main.exists()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="trace file to write (JSON lines)")
    p.add_argument("--arch", help="build target, e.g. sm_90a (default: the GPU's)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--build-only", action="store_true", help="generate and compile, do not run")
    p.add_argument("--build-dir", default=str(HERE / "build"), help="where forms.cu and the program go")
    args = p.parse_args(argv)
    if args.arch:
        gpu, arch = "unknown", args.arch
    else:
        gpu, arch = gpu_arch()
    g = build_forms(int(arch[3:].rstrip("af")))
    build = Path(args.build_dir)
    build.mkdir(parents=True, exist_ok=True)
    src = build / "forms.cu"
    write_source(g, src, args.seed, arch, gpu)
    exe = build / "capture"
    gencode = f"-gencode=arch=compute_{arch[3:]},code=sm_{arch[3:]}"  # keeps the 'a' suffix
    cmd = [find_nvcc(), "-O2", "-std=c++17", gencode, "-I", str(HERE), str(src)]
    cmd += ["-c", "-o", str(exe) + ".o"] if args.build_only else ["-o", str(exe)]
    print(" ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    if args.build_only:
        return 0
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    sys.stderr.write(res.stderr)
    if res.returncode:
        return res.returncode
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    for ln in lines:
        json.loads(ln)  # every line must be a record
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"capture: {len(lines)} records from {gpu} ({arch}) -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
