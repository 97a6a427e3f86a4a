"""Generate legal and illegal instruction texts and ask NVIDIA's assembler about them.

Used by tb/sim/test_ptxas.py: every text is judged by ``ptx.parse`` and by ``ptxas`` (from the
PyPI package nvidia-cuda-nvcc); the verdicts must agree except on the documented list of
forms the assembler accepts although the PTX texts do not list them (:func:`ptxas_extra`).
"""

from __future__ import annotations

import itertools
import random
import re
import subprocess
import tempfile
from pathlib import Path

from tensorlsu.sim import ptx

__all__ = ["TARGETS", "generate", "ptxas_path", "ptxas_verdicts", "ptxas_extra"]

TARGETS = ("sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120a")


def _vec(n: int, f64: bool = False) -> str:
    p = "%fd" if f64 else "%r"
    return "{" + ", ".join(f"{p}{i}" for i in range(n)) + "}"


def _shuffle_middle(rng: random.Random, quals: list[str]) -> list[str]:
    """Qualifiers in another order (the assembler reads them in any order), keeping the
    destination/source format pair in place."""
    q = list(quals)
    fixed = [x for x in q if x in ("b8x16",) or x.startswith(("b6x16", "b4x16"))]
    rest = [x for x in q if x not in fixed]
    rng.shuffle(rest)
    return rest + fixed


def _ldst(rng: random.Random) -> list[str]:
    out = []
    for op in ("ldmatrix", "stmatrix"):
        shapes = ["m8n8", "m16n16", "m8n16", "m16n8"]
        nums = ["x1", "x2", "x4", "x8", "x16"]
        types = [["b16"], ["b8"], ["b8x16", "b6x16_p32"], ["b8x16", "b4x16_p64"],
                 ["b6x16_p32", "b8x16"], ["b32"], []]
        spaces = [[], ["shared"], ["shared::cta"], ["global"], ["shared::cluster"]]
        for shape, num, trans, ty, sp in itertools.product(shapes, nums, (0, 1), types, spaces):
            n = int(num[1:])
            natural = {"m16n16": 2 * n}.get(shape, n) if op == "ldmatrix" else n
            for nregs in {natural, natural + 1, max(1, natural - 1)}:
                if rng.random() > (0.9 if nregs == natural else 0.15):
                    continue
                quals = ["sync", "aligned", shape, num] + ["trans"] * trans + sp + ty
                if rng.random() < 0.1:
                    quals = _shuffle_middle(rng, quals)
                if rng.random() < 0.02:
                    quals = [q for q in quals if q != rng.choice(["sync", "aligned"])]
                head = ".".join([op] + quals)
                if op == "ldmatrix":
                    out.append(f"{head} {_vec(nregs)}, [%rd0];")
                else:
                    out.append(f"{head} [%rd0], {_vec(nregs)};")
    return out


_WMMA_SHAPES = ["m16n16k16", "m8n32k16", "m32n8k16", "m16n16k8", "m8n8k4", "m8n8k32", "m8n8k128",
                "m16n8k16"]
_WMMA_TYPES = ["f16", "bf16", "tf32", "f64", "s8", "u8", "s4", "u4", "b1", "f32", "s32"]


def _wmma(rng: random.Random) -> list[str]:
    out = []
    for frag, layout, shape, ty, sp in itertools.product(
            "abc", ("row", "col"), _WMMA_SHAPES, _WMMA_TYPES,
            ([], ["global"], ["shared"], ["shared::cta"], ["local"])):
        try:
            natural = ptx.wmma_nregs(frag, shape, ty)
        except KeyError:
            natural = 4
        if rng.random() > 0.45:
            continue
        nregs = natural if rng.random() < 0.85 else natural + rng.choice((1, -1) if natural > 1 else (1,))
        quals = ["sync", "aligned", layout, shape] + sp + [ty]
        if rng.random() < 0.1:
            quals = _shuffle_middle(rng, quals)
        stride = rng.choice(["", "", ", 64", ", %r300"])
        out.append(f"wmma.load.{frag}.{'.'.join(quals)} {_vec(nregs, ty == 'f64')}, [%rd0]{stride};")
    return out


_TC_SHAPES = ["16x64b", "16x128b", "16x256b", "32x32b", "16x32bx2", "16x32b"]
_TC_NUMS = ["x1", "x2", "x4", "x8", "x16", "x32", "x64", "x128", "x3"]


def _tcgen05(rng: random.Random) -> list[str]:
    out = []
    per = {"16x64b": 1, "16x128b": 2, "16x256b": 4, "32x32b": 1, "16x32bx2": 1, "16x32b": 1}
    reds = [None, ("min", "f32"), ("max", "f32"), ("min", "u32"), ("max", "s32"), ("min", "b32"),
            ("add", "f32")]
    for shape, num, pack, red in itertools.product(_TC_SHAPES, _TC_NUMS, (0, 1), reds):
        n = int(num[1:])
        natural = per[shape] * n
        for variant in range(3):
            if rng.random() > 0.5:
                continue
            nregs = natural if variant else rng.choice([natural + 1, max(1, natural // 2)])
            quals = ["sync", "aligned", shape, num] + ["pack::16b"] * pack
            head = "tcgen05.ld"
            if red:
                head += ".red"
                quals += [red[0]]
                if red[1] == "f32" or rng.random() < 0.2:
                    quals += ["abs"] * (rng.random() < 0.4) + ["NaN"] * (rng.random() < 0.4)
                quals += [red[1]]
            else:
                quals += ["b32"] if rng.random() < 0.95 else ["f32"]
            if rng.random() < 0.1:
                quals = _shuffle_middle(rng, quals)
            redval = ", %r301" if red else ""
            split = shape == "16x32bx2"
            if rng.random() < 0.1:
                split = not split
            tail = f", {rng.choice([0, 2, 16, 64])}" if split else ""
            regs = _vec(min(nregs, 256))
            out.append(f"{head}.{'.'.join(quals)} {regs}{redval}, [%r300]{tail};")
    # tcgen05.st: the load's shapes and .num, .unpack::16b, and the load's qualifiers by mistake
    for shape, num, pack in itertools.product(_TC_SHAPES, _TC_NUMS, ("", "unpack::16b", "pack::16b")):
        natural = per[shape] * int(num[1:])
        for variant in range(6):
            if rng.random() > 0.5:
                continue
            nregs = natural if variant else rng.choice([natural + 1, max(1, natural // 2)])
            quals = ["sync", "aligned", shape, num] + [pack] * bool(pack)
            roll = rng.random()
            if roll < 0.05:
                quals += ["min"]
            elif roll < 0.08:
                quals = ["red"] + quals + ["max"]
            quals += ["b32"] if rng.random() < 0.93 else [rng.choice(["f32", "u32", "b16"])]
            if rng.random() < 0.2:
                quals = _shuffle_middle(rng, quals)
            split = shape == "16x32bx2"
            if rng.random() < 0.1:
                split = not split
            mid = f", {rng.choice([0, 2, 16, 64, -16])}" if split else ""
            out.append(f"tcgen05.st.{'.'.join(quals)} [%r300]{mid}, {_vec(min(nregs, 256))};")
    # the mandatory .sync and .aligned, each left out, on every shape of both (no draw: the
    # random texts above stay the same)
    for shape, op, drop in itertools.product(_TC_SHAPES, ("ld", "st"), ("sync", "aligned")):
        quals = ".".join(q for q in ("sync", "aligned", shape, "x1", "b32") if q != drop)
        mid = ", 2" if shape == "16x32bx2" else ""
        regs = _vec(per[shape])
        out.append(f"tcgen05.ld.{quals} {regs}, [%r300]{mid};" if op == "ld" else
                   f"tcgen05.st.{quals} [%r300]{mid}, {regs};")
    return out


_CP_SHAPES = ["128x256b", "4x256b", "128x128b", "64x128b", "32x128b", "256x128b", "64x256b", "32x32b"]
_CP_CASTS = [None, "warpx2::02_13", "warpx2::01_23", "warpx4"]
_CP_FMTS = [[], ["b8x16", "b6x16_p32"], ["b8x16", "b4x16_p64"], ["b6x16_p32", "b8x16"], ["b8x16"],
            ["b4x16_p64"], ["b8x16", "b8x16"], ["b8x16", "b6x16_p32", "b4x16_p64"]]
_CP_ADDRS = ["[%r300]", "[%r300+16]", "[%r300+-16]", "[%r300-16]", "[64]", "[%r300+0x40]"]
_CP_DESCS = ["%rd1", "%rd1", "%rd1", "0x4000000000000010", "5"]


def _tcgen05_cp(rng: random.Random) -> list[str]:
    """tcgen05.cp: every shape, multicast and format with .cta_group given or not, some in
    another order, some with the qualifiers of other families or broken operands. taddr and
    s-desc are registers of their declared widths (32 and 64 bits): parse sees no declarations,
    so a register of the wrong width is the assembler's to refuse (docs/ptxas.md)."""
    out = []
    for group, shape, cast, fmt in itertools.product(("cta_group::1", "cta_group::2", "cta_group::3", None),
                                                     _CP_SHAPES, _CP_CASTS, range(len(_CP_FMTS))):
        if rng.random() > 0.4:
            continue
        quals = ([group] if group else []) + [shape] + ([cast] if cast else []) + _CP_FMTS[fmt]
        roll = rng.random()
        if roll < 0.05:
            quals = ["sync", "aligned"] + quals
        elif roll < 0.08:
            quals += [rng.choice(["shared", "b32", "x1", "cta_group::1"])]
        if rng.random() < 0.25:
            rng.shuffle(quals)
        addr = rng.choice(_CP_ADDRS)
        if addr == "[64]" and ("cta_group::2" in quals or any(f in quals for f in _CP_FMTS[1])
                               or "b4x16_p64" in quals):
            # ptxas 13.0 crashes on an immediate taddr with .cta_group::2 or a source format
            # (docs/ptxas.md)
            addr = "[%r300]"
        ops = [addr, rng.choice(_CP_DESCS)]
        if rng.random() < 0.04:
            ops = ops[:1] if rng.random() < 0.5 else ops + ["%rd3"]
        out.append(f"tcgen05.cp.{'.'.join(quals)} {', '.join(ops)};")
    # every legal form once more, its qualifiers in a random order, with a random address
    for group, (shape, cast), fmt in itertools.product(
            ("cta_group::1", "cta_group::2"),
            [(s, None) for s in ("128x256b", "4x256b", "128x128b")] + [(s, c) for c, s in ptx.CP_MULTICAST.items()],
            _CP_FMTS[:3]):
        quals = [group, shape] + ([cast] if cast else []) + fmt
        rng.shuffle(quals)
        addr = rng.choice(_CP_ADDRS[:3] + _CP_ADDRS[5:])
        out.append(f"tcgen05.cp.{'.'.join(quals)} {addr}, {rng.choice(_CP_DESCS)};")
    return out


def _listed(rng: random.Random) -> list[str]:
    """Every form the texts list, each state space, some in another qualifier order."""
    out = []
    ld = [("m8n8", n, t, ["b16"]) for n in ("x1", "x2", "x4") for t in (0, 1)]
    ld += [("m16n16", n, 1, ty) for n in ("x1", "x2")
           for ty in (["b8"], ["b8x16", "b6x16_p32"], ["b8x16", "b4x16_p64"])]
    ld += [("m8n16", n, 0, ["b8x16", f]) for n in ("x1", "x2", "x4") for f in ("b6x16_p32", "b4x16_p64")]
    st = [("m8n8", n, t, ["b16"]) for n in ("x1", "x2", "x4") for t in (0, 1)]
    st += [("m16n8", n, 1, ["b8"]) for n in ("x1", "x2", "x4")]
    for op, forms in (("ldmatrix", ld), ("stmatrix", st)):
        for shape, num, trans, ty in forms:
            for sp in ([], ["shared"], ["shared::cta"]):
                quals = ["sync", "aligned", shape, num] + ["trans"] * trans + sp + ty
                for order in range(2):
                    q = _shuffle_middle(rng, quals) if order else quals
                    n = {"m16n16": 2}.get(shape, 1) * int(num[1:])
                    head = ".".join([op] + q)
                    out.append(f"{head} {_vec(n)}, [%rd0];" if op == "ldmatrix"
                               else f"{head} [%rd0], {_vec(n)};")
    for frag, layout, shape in itertools.product("abc", ("row", "col"), ptx.WMMA_SHAPES):
        for ty in sorted(ptx.wmma_types(frag, shape)):
            for sp in ([], ["global"], ["shared"], ["shared::cta"]):
                q = ["sync", "aligned", layout, shape] + sp + [ty]
                if rng.random() < 0.3:
                    q = _shuffle_middle(rng, q)
                n = ptx.wmma_nregs(frag, shape, ty)
                stride = rng.choice(["", ", 128", ", %r300"])
                out.append(f"wmma.load.{frag}.{'.'.join(q)} {_vec(n, ty == 'f64')}, [%rd0]{stride};")
    for shape, per in ptx.TCGEN05_REGS_PER_X1.items():
        for num in _TC_NUMS[:-1]:
            n = per * int(num[1:])
            if n > 128:
                continue
            tail = ", 32" if shape == "16x32bx2" else ""
            for pack in (0, 1):
                q = ["sync", "aligned", shape, num] + ["pack::16b"] * pack + ["b32"]
                out.append(f"tcgen05.ld.{'.'.join(q)} {_vec(n)}, [%r300]{tail};")
            if shape in ("32x32b", "16x32bx2") and n >= 2:
                for op, ty, mods in (("min", "f32", ["abs"]), ("max", "f32", ["NaN"]),
                                     ("max", "f32", ["abs", "NaN"]), ("min", "u32", []),
                                     ("max", "s32", [])):
                    q = ["sync", "aligned", shape, num, op] + mods + [ty]
                    out.append(f"tcgen05.ld.red.{'.'.join(q)} {_vec(n)}, %r301, [%r300]{tail};")
            for unpack in (0, 1):
                q = ["sync", "aligned", shape, num] + ["unpack::16b"] * unpack + ["b32"]
                out.append(f"tcgen05.st.{'.'.join(q)} [%r300]{tail}, {_vec(n)};")
    for group, (shape, cast), fmt in itertools.product(
            (1, 2), [(s, None) for s in ("128x256b", "4x256b", "128x128b")] + [(s, c) for c, s in ptx.CP_MULTICAST.items()],
            ([], ["b8x16", "b6x16_p32"], ["b8x16", "b4x16_p64"])):
        q = [f"cta_group::{group}", shape] + ([cast] if cast else []) + fmt
        out.append(f"tcgen05.cp.{'.'.join(q)} [%r300], %rd1;")
    return out


#: A legal form of each family, its qualifiers (in every order below) and its operands.
_ORDERED = [
    ("ldmatrix", ["sync", "aligned", "m8n8", "x4", "trans", "shared", "b16"], " {%r0, %r1, %r2, %r3}, [%rd0];"),
    ("ldmatrix", ["sync", "aligned", "m16n16", "x1", "trans", "shared", "b8x16", "b6x16_p32"], " {%r0, %r1}, [%rd0];"),
    ("stmatrix", ["sync", "aligned", "m8n8", "x2", "trans", "shared::cta", "b16"], " [%rd0], {%r0, %r1};"),
    ("wmma.load", ["a", "sync", "aligned", "row", "m16n16k16", "shared", "f16"], " " + _vec(8) + ", [%rd0];"),
    ("wmma.load", ["c", "sync", "aligned", "col", "m8n8k4", "f64"], " " + _vec(2, True) + ", [%rd0], 8;"),
    ("tcgen05.ld", ["red", "sync", "aligned", "32x32b", "x2", "min", "abs", "NaN", "f32"], " {%r0, %r1}, %r9, [%r8];"),
    ("tcgen05.ld", ["sync", "aligned", "16x32bx2", "x2", "pack::16b", "b32"], " {%r0, %r1}, [%r8], 4;"),
    ("tcgen05.st", ["sync", "aligned", "16x64b", "x2", "unpack::16b", "b32"], " [%r8], {%r0, %r1};"),
    ("tcgen05.cp", ["cta_group::1", "32x128b", "warpx4", "b8x16", "b4x16_p64"], " [%r8], %rd1;"),
]


def _orders(rng: random.Random, per_form: int = 40) -> list[str]:
    """Each form of ``_ORDERED`` with its qualifiers in random orders: the opcode's own
    qualifiers (wmma.load's matrix, tcgen05.ld's .red) and the format pairs move too."""
    out = []
    for op, quals, ops in _ORDERED:
        for _ in range(per_form):
            q = list(quals)
            rng.shuffle(q)
            out.append(f"{op}.{'.'.join(q)}{ops}")
    return out


#: Integer constants as PTX writes them, and near misses: octal, hexadecimal, binary, the U
#: suffix, signs, constants past 64 bits, digits that are not ASCII.
_CONSTANTS = ["16", "017", "0x10", "0X10", "0b10000", "0B10000", "16U", "017U", "0x10U", "-16", "+16", "-0x10",
              "00", "08", "0x", "16u", "1_6", "0o17", "١٦", "0xffffffffffffffff", "0x10000000000000000",
              "0x" + "f" * 17, "18446744073709551615", "18446744073709551616", "99999999999999999999",
              "0" + "7" * 22, "0" + "7" * 23, "-18446744073709551615", "0b" + "1" * 65]


def _immediates() -> list[str]:
    """Immediate addresses (the texts allow them for .local only; tcgen05.cp's taddr may be
    one) and integer constants in every place an operand takes one. Not as tcgen05.cp's
    immediate taddr: ptxas 13.0 crashes (signal 11) on most of them there."""
    wmma = "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 " + _vec(8)
    out = ["ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r0}, [16];", "ldmatrix.sync.aligned.m8n8.x1.b16 {%r0}, [0x10];",
           "stmatrix.sync.aligned.m8n8.x1.shared.b16 [16], {%r0};", f"{wmma}, [32];", f"{wmma}, [0x20], 16;",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r0}, [16];", "tcgen05.st.sync.aligned.32x32b.x1.b32 [0], {%r0};",
           "tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {%r0}, [8], 4;"]
    for c in _CONSTANTS:
        out += [f"ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{%r0}}, [%rd0+{c}];", f"{wmma}, [%rd0], {c};",
                f"tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {{%r0}}, [%r8], {c};",
                f"tcgen05.cp.cta_group::1.128x256b [%r8], {c};", f"tcgen05.cp.cta_group::1.128x256b [%r8+{c}], %rd1;"]
    return out


def generate(seed: int = 2026) -> list[str]:
    """Instruction texts across the families (legal and illegal mixed)."""
    rng = random.Random(seed)
    texts = (_listed(rng) + _ldst(rng) + _wmma(rng) + _tcgen05(rng) + _tcgen05_cp(rng) + _orders(rng)
             + _immediates())
    return list(dict.fromkeys(texts))


# --------------------------------------------------------------------------------------
# The assembler
# --------------------------------------------------------------------------------------

def ptxas_path() -> Path | None:
    try:
        import nvidia  # namespace package of the CUDA wheels
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for p in sorted(Path(root).glob("cu*/bin/ptxas")):
            return p
    return None


_HEADER = """.version 9.0
.target {target}
.address_size 64
.visible .entry k()
{{
.reg .b32 %r<400>;
.reg .b64 %rd<4>;
.reg .f64 %fd<4>;
"""
_LINE_RE = re.compile(r", line (\d+); error")
_FATAL_RE = re.compile(r", line (\d+); fatal")


def ptxas_verdicts(texts: list[str], target: str, ptxas: Path, chunk: int = 4000) -> list[bool]:
    """Whether ptxas accepts each text for ``target`` (one kernel, one instruction per line).

    A last, deliberately illegal line proves the assembler read the whole file. A syntax
    error is fatal to the assembler: that line is refused and the rest goes again.
    """
    # ptxas refuses a whole file with a non-ASCII character before reading it: such a text is
    # refused on its own, and the rest are asked
    ascii_ = [k for k, t in enumerate(texts) if t.isascii()]
    if len(ascii_) < len(texts):
        out = [False] * len(texts)
        for k, v in zip(ascii_, ptxas_verdicts([texts[k] for k in ascii_], target, ptxas, chunk)):
            out[k] = v
        return out
    verdicts: list[bool] = []
    start = 0
    while start < len(texts):
        part = texts[start:start + chunk]
        head = _HEADER.format(target=target)
        first = head.count("\n") + 1
        body = head + "\n".join(part) + "\nnot_an_instruction.x %r0;\nret;\n}\n"
        with tempfile.TemporaryDirectory() as d:
            src = Path(d) / "gen.ptx"
            src.write_text(body)
            res = subprocess.run([str(ptxas), f"-arch={target}", str(src), "-o", str(Path(d) / "o")],
                                 capture_output=True, text=True, timeout=600)
        bad = {int(m.group(1)) for m in _LINE_RE.finditer(res.stderr)}
        fatal = _FATAL_RE.search(res.stderr)
        if fatal:
            stop = int(fatal.group(1)) - first  # index of the line the parser died on
            if not 0 <= stop < len(part):
                raise RuntimeError(f"ptxas failed outside the generated lines:\n{res.stderr[-2000:]}")
            verdicts += [(first + i) not in bad for i in range(stop)] + [False]
            start += stop + 1
            continue
        if first + len(part) not in bad:
            raise RuntimeError(f"ptxas stopped before the end of the file:\n{res.stderr[-2000:]}")
        verdicts += [(first + i) not in bad for i in range(len(part))]
        start += len(part)
    return verdicts


# --------------------------------------------------------------------------------------
# Where the assembler is more permissive than the texts (docs/ptxas.md)
# --------------------------------------------------------------------------------------

_CONSTANT_RE = re.compile(r"(?<![%\w])[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)U?(?![\w])")


def _constant_past_64_bits(text: str) -> bool:
    for m in _CONSTANT_RE.finditer(text.split(None, 1)[1] if " " in text else ""):
        body = m.group(1)
        base = 16 if body[:2] in ("0x", "0X") else 2 if body[:2] in ("0b", "0B") else 8 if len(body) > 1 and \
            body[0] == "0" else 10
        if int(body[2:] if base in (2, 16) else body, base) >> 64:
            return True
    return False


def ptxas_extra(text: str) -> str | None:
    """Why ptxas may accept ``text`` although the PTX texts forbid it, or None."""
    head = text.split()[0]
    if _constant_past_64_bits(text):
        return "an integer constant past 64 bits, which ptxas takes for some digit strings (PTX constants are 64-bit)"
    q = head.split(".")
    if head.startswith(("tcgen05.ld", "tcgen05.st")) and "sync" in q and "aligned" not in q:
        return "tcgen05.ld / tcgen05.st without .aligned (the texts make it mandatory)"
    if head.startswith(("ldmatrix", "stmatrix")) and any(x in q for x in ("x8", "x16")):
        return ".num beyond .x4 (the texts list .x1, .x2, .x4)"
    if head.startswith("wmma.load."):
        shape = next((x for x in q if x in ptx.WMMA_SHAPES), None)
        type_ = next((x for x in q if x in ptx.WMMA_BITS), None)
        if shape and type_ and q[2] in "abc" and type_ not in ptx.wmma_types(q[2], shape):
            return (f"wmma.load type .{type_} with .{shape}: a combination the texts do not list "
                    "(the assembler checks the register count, not the type table)")
    return None
