#!/usr/bin/env python3
"""The latency of every form through the RTL, beside the silicon's measured figure where there is
one (docs/facts.md, "Latency budgets"): the unit may take longer than it does today, never longer
than the silicon.

    python tb/latency.py [--out reports]      # reports/latency.{md,json}; make bench runs it too

What is measured (the native harness on Verilator, one instruction alone on an idle unit, no
back-pressure, the result port always ready): clocks from the cycle the unit accepts the
instruction to the cycle of its last result beat. ``stmatrix + ldmatrix``: an stmatrix and, right
behind it, an ldmatrix of the same rows; from the stmatrix's acceptance to the ldmatrix's last
beat (what the H200's dependent chain of the pair takes). Global reads: the AXI memory's own
clocks (address to first beat) are part of the figure and given beside it.

The bounds: ldmatrix and stmatrix + ldmatrix are the H200's dependent-chain figures; a wmma.load
that compiles to one LDSM (every .f16 a/b and the sub-byte and non-transposed 8-bit ones) the
H200's LDSM rule, 21 clocks plus 2 a wavefront, at its stride's wavefronts (its address
arithmetic left out); tcgen05.ld / tcgen05.st .32x32b, the only shape measured, the B200's
figures by .num (x128 has none); tcgen05.cp the B200's lone 128x256b copy without its commit.
Every other form is measured and reported without a bound.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tensorlsu.cosim.jobs import tmem_instr_job  # noqa: E402
from tensorlsu.cosim.layout import GMEM_AT  # noqa: E402
from tensorlsu.cosim.native import AxiMemory  # noqa: E402
from tensorlsu.cosim.runner import run_jobs  # noqa: E402
from tensorlsu.hdl.codes import Space  # noqa: E402
from tensorlsu.hdl.copy.records import FORMS as COPY_FORMS  # noqa: E402
from tensorlsu.hdl.copy.records import instr_fields as copy_fields  # noqa: E402
from tensorlsu.hdl.pipeline import forms  # noqa: E402
from tensorlsu.sim.tmem_plan import NUMS, SHAPES  # noqa: E402
from tensorlsu.sim import descriptor, model, ptx  # noqa: E402
from tensorlsu.sim.ptx import TCGEN05_REGS_PER_X1  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: H200, 1,980 MHz, one warp, dependent chain without integer op (docs/facts.md): ldmatrix .xN
H200_LDMATRIX = {1: 23, 2: 25, 4: 29}
#: H200: an stmatrix .xN then an ldmatrix of the same rows
H200_ST_LD = {1: 28, 2: 34, 4: 46}
#: H200: an LDSM takes about 21 clocks plus 2 a 128-byte wavefront (the ldmatrix figures above);
#: a wmma.load that compiles to one LDSM.x4 (every .f16 a/b) is bounded by its wavefronts
H200_LDSM_BASE, H200_LDSM_PER_WAVEFRONT = 21, 2
#: B200: tcgen05.ld.32x32b.xN + wait::ld + one dependent use (the only shape measured)
B200_LD = {1: 13, 2: 13, 4: 14, 8: 16, 16: 20, 32: 28, 64: 44}
#: B200: tcgen05.st.32x32b.xN + wait::st (x2 has no figure: x1's bounds it)
B200_ST = {1: 13.0, 2: 13.0, 4: 14.6, 8: 16.2, 16: 21.6, 32: 31.5, 64: 49.8}
#: B200: a lone tcgen05.cp.128x256b, its commit and mbarrier round trip left out
B200_CP = 50
#: AXI memory latencies (address to first beat) the global rows are measured at
GLOBAL_AXI_LATENCY = (2, 200)

SM90, SM100 = "sm_90a", "sm_100a"
CONFLICT_FREE = [16 * t for t in range(32)]


def _row(family: str, form: str, latency: int, bound=None, source: str = "", note: str = "") -> dict:
    row = {"family": family, "form": form, "latency": latency, "bound": bound, "source": source, "note": note}
    row["within"] = None if bound is None else latency <= bound
    return row


def _shared_item(text: str, **extra) -> dict:
    return {"form": forms.form_id(ptx.parse(text, SM90)), **extra}


def _wmma_strides(ins, inf) -> list[int]:
    """The leading dimension and, where that has bank conflicts, the least stride above it
    with the fewest wavefronts (within 8 grains): both are measured."""
    strides = [inf.least + k * inf.stride_grain for k in range(9)]
    best = min(strides, key=lambda s: model.wavefronts(ins, 0, "h200", stride=s))
    return [inf.least] if best == inf.least else [inf.least, best]


def shared_rows() -> list[dict]:
    """ldmatrix, stmatrix + ldmatrix, and every wmma.load form from shared memory (its strides:
    :func:`_wmma_strides`)."""
    jobs, meta = [], []
    for num in (1, 2, 4):
        for trans in ("", ".trans"):
            text = f"ldmatrix.sync.aligned.m8n8.x{num}{trans}.shared.b16"
            jobs.append({"burst": [_shared_item(text, addr=CONFLICT_FREE)]})
            meta.append(("ldmatrix", text, H200_LDMATRIX[num], "H200"))
    for num in (1, 2, 4):
        st = f"stmatrix.sync.aligned.m8n8.x{num}.shared.b16"
        ld = f"ldmatrix.sync.aligned.m8n8.x{num}.shared.b16"
        jobs.append({"burst": [_shared_item(st, addr=CONFLICT_FREE, store=[list(range(32))] * num),
                               _shared_item(ld, addr=CONFLICT_FREE)]})
        meta.append(("stmatrix + ldmatrix", f"{st} ; {ld}", H200_ST_LD[num], "H200"))
    for ins in forms.WMMA_FORMS:
        inf = forms.info(forms.form_id(ins))
        for stride in _wmma_strides(ins, inf):
            bound, source = None, ""
            if model.wmma_shared_loads(ins).kind == "ldsm":
                waves = model.wavefronts(ins, 0, "h200", stride=stride)
                bound = H200_LDSM_BASE + H200_LDSM_PER_WAVEFRONT * waves
                source = f"H200 LDSM, {waves} wavefronts"
            jobs.append({"burst": [{"form": forms.form_id(ins), "addr": 0, "stride": stride}]})
            meta.append(("wmma.load", f"{ins.form} (stride {stride})", bound, source))
    jobs[0]["image"] = ""
    results, _ = run_jobs(jobs, sim="verilator", optimize=True)
    rows = []
    for (family, text, bound, source), res in zip(meta, results):
        b = res["burst"]
        assert all(x["error"] == 0 for x in b), text
        rows.append(_row(family, text, b[-1]["done"] - b[0]["accepted"], bound, source))
    return rows


def global_rows() -> list[dict]:
    """wmma.load.a .f16 from global memory, contiguous, at each AXI latency."""
    text = "wmma.load.a.sync.aligned.row.m16n16k16.global.f16"
    ins = ptx.parse(text, SM90)
    inf = forms.info(forms.form_id(ins))
    rows = []
    for lat in GLOBAL_AXI_LATENCY:
        results, _ = run_jobs([{"burst": [{"form": forms.form_id(ins), "addr": GMEM_AT, "stride": inf.least,
                                            "space": Space.GLOBAL.value}]}],
                              sim="verilator", optimize=True, axi=AxiMemory(latency=lat))
        (one,) = results[0]["burst"]
        assert one["error"] == 0
        rows.append(_row("wmma.load (global)", text, one["done"] - one["accepted"],
                         note=f"AXI memory {lat} clocks to its first beat"))
    return rows


def tmem_forms():
    """(instruction, immHalfSplitoff) of every tcgen05.ld / tcgen05.st shape, packing and .num a
    quadrant takes (at most 128 registers), the split where the shape has one: the halves side
    by side."""
    for op in ("tcgen05.ld", "tcgen05.st"):
        for shape in SHAPES:
            for pack in (False, True):
                for num in NUMS:
                    if TCGEN05_REGS_PER_X1[shape] * num > 128:
                        continue
                    q = ("pack::16b" if op == "tcgen05.ld" else "unpack::16b") if pack else ""
                    ins = ptx.parse(f"{op}.sync.aligned.{shape}.x{num}{'.' + q if q else ''}.b32", SM100)
                    span = num * (2 if pack else 1) * {"32x32b": 1, "16x32bx2": 1, "16x64b": 2,
                                                       "16x128b": 4, "16x256b": 8}[shape]
                    yield ins, (span if shape == "16x32bx2" else None)


def tmem_rows() -> list[dict]:
    """Every tcgen05.ld / tcgen05.st shape, .num and packing alone on quadrant 0."""
    jobs, meta = [], []
    for ins, split in tmem_forms():
        table = B200_LD if ins.op == "tcgen05.ld" else B200_ST
        jobs.append({"tmem": {"0": [tmem_instr_job(ins, 0, 0, split)]}})
        measured = ins.shape == "32x32b" and not ins.pack and ins.num in table
        meta.append((ins.op, ins.form, table[ins.num] if measured else None, "B200" if measured else ""))
    results, _ = run_jobs(jobs, sim="verilator", tmem_columns=512, optimize=True)
    rows = []
    for (op, text, bound, source), res in zip(meta, results):
        (one,) = res["tmem"]["0"]
        assert all(b["error"] == 0 for b in one["beats"]), text
        rows.append(_row(op, text, one["done"] - one["accepted"], bound, source))
    return rows


def copy_rows() -> list[dict]:
    """Every tcgen05.cp form, plain and decompressing, alone, from a 128-byte-swizzled source."""
    jobs, meta = [], []
    for shape, cast in COPY_FORMS:
        for fmt in (None, "b6x16_p32", "b4x16_p64"):
            text = (f"tcgen05.cp.cta_group::1.{shape}" + (f".{cast}" if cast else "")
                    + (f".b8x16.{fmt}" if fmt else ""))
            ins = ptx.parse(text, SM100)
            fields = copy_fields(ins, descriptor.encode(0, 1024, 1024, 2), 0)
            jobs.append({"cp": fields, "cps": [fields], "image": "", "smem_size": 16 * 1024, "tmem_dump": False})
            lone = shape == "128x256b" and not cast and not fmt
            meta.append((text, B200_CP if lone else None, "B200, commit left out" if lone else ""))
    results, _ = run_jobs(jobs, sim="verilator", tmem_columns=512, optimize=True)
    rows = []
    for (text, bound, source), res in zip(meta, results):
        (one,) = res["copies"]
        assert one["error"] == 0, text
        rows.append(_row("tcgen05.cp", text, one["done"] - one["accepted"], bound, source))
    return rows


def measure() -> list[dict]:
    return shared_rows() + global_rows() + tmem_rows() + copy_rows()


def table(rows: list[dict]) -> str:
    over = [r for r in rows if r["within"] is False]
    out = ("Clocks from acceptance to the last result beat, one instruction on an idle unit (tb/latency.py "
           "says what each row measures). Bound: the silicon's figure for the same work (docs/facts.md); "
           f"{len(over)} of {sum(r['bound'] is not None for r in rows)} bounded forms over their bound.\n\n"
           "| family | form | latency (clk) | silicon bound (clk) | source | note |\n|---|---|---|---|---|---|\n")
    for r in rows:
        bound = "" if r["bound"] is None else f"{r['bound']}{'' if r['within'] else ' **over**'}"
        out += f"| {r['family']} | `{r['form']}` | {r['latency']} | {bound} | {r['source']} | {r['note']} |\n"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "reports"))
    args = ap.parse_args(argv)
    rows = measure()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latency.json").write_text(json.dumps(rows, indent=1))
    md = "# Latency\n\n" + table(rows)
    (out / "latency.md").write_text(md)
    print(md)
    return 1 if any(r["within"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
