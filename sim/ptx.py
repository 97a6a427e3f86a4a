"""PTX front end: parse and validate ldmatrix, stmatrix, wmma.load, tcgen05.ld, tcgen05.st and
tcgen05.cp.

``parse(text, target)`` returns a frozen, hashable :class:`Instr` for every form the PTX
texts define and raises :class:`PtxError` (a ``ValueError``) naming the offending
qualifier, combination, operand count or target for everything they forbid.

Qualifiers may come in any order (the assembler accepts ``ldmatrix.sync.aligned.x1.m8n8``),
except where the assembler reads them as part of the opcode: wmma.load's matrix (``.a``,
``.b``, ``.c``) comes right after ``.load``, tcgen05.ld's ``.red`` right after ``.ld``; and the
two formats of a decompressing ldmatrix or tcgen05.cp are in order (destination, then source).
Integer constants are read as PTX reads them (hexadecimal, octal, binary, decimal; 64-bit).
Where the assembler accepts forms the texts do not list, the texts win (docs/ptxas.md).
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass

__all__ = ["PtxError", "Instr", "Target", "parse", "parse_target", "TCGEN05_REGS_PER_X1", "CP_SHAPES",
           "CP_MULTICAST"]


class PtxError(ValueError):
    """An instruction text the PTX texts forbid (or that this front end cannot read)."""


# --------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------

#: Architecture numbers PTX ISA 9.0 knows, with the suffixes each takes.
_ARCHS = {
    70: "", 72: "", 75: "", 80: "", 86: "", 87: "", 88: "", 89: "",
    90: "a", 100: "af", 103: "af", 110: "af", 120: "af", 121: "af",
}
#: Families for family-specific (``f``) features: member architectures in order.
_FAMILIES = {100: (100, 103), 110: (110,), 120: (120, 121)}
_FAMILY_OF = {a: f for f, members in _FAMILIES.items() for a in members}
#: PTX ISA 9.0 renamed sm_101 to sm_110; the assembler still reads the old name.
_RENAMED = {101: 110}


@dataclass(frozen=True)
class Target:
    """A PTX target ``sm_<arch><suffix>``; suffix ``a`` (arch-specific), ``f`` (family) or ``""``."""

    arch: int
    suffix: str = ""

    def __str__(self) -> str:
        return f"sm_{self.arch}{self.suffix}"

    def at_least(self, arch: int) -> bool:
        return self.arch >= arch

    def has_arch_specific(self, arch: int) -> bool:
        """Features of ``sm_<arch>a``: only that exact target with the ``a`` suffix."""
        return self.arch == arch and self.suffix == "a"

    def has_family(self, arch: int) -> bool:
        """Features of ``sm_<arch>f``: ``f`` or ``a`` targets of the same family at or above it."""
        return (self.suffix in ("a", "f") and _FAMILY_OF.get(self.arch) == _FAMILY_OF.get(arch)
                and self.arch >= arch)


def parse_target(target: str | Target) -> Target:
    """Read ``sm_100a`` and the like; ``sm_101a``/``sm_101f`` are read as their new name sm_110."""
    if isinstance(target, Target):
        return target
    m = re.fullmatch(r"sm_([0-9]+)([af]?)", str(target).strip())
    if not m:
        raise PtxError(f"target {target!r} is not of the form sm_<number>[a|f]")
    arch, suffix = int(m.group(1)), m.group(2)
    arch = _RENAMED.get(arch, arch)
    if arch not in _ARCHS:
        raise PtxError(f"unknown target {target!r}")
    if suffix and suffix not in _ARCHS[arch]:
        raise PtxError(f"target {target!r} does not exist: sm_{arch} takes no '{suffix}' suffix")
    return Target(arch, suffix)


def _need(tgt: Target, ok: bool, feature: str, where: str) -> None:
    if not ok:
        raise PtxError(f"{feature} is not supported on target {tgt} (needs {where})")


# Target lists of the texts' "Target ISA notes", as predicates.
def _blackwell_ldst(t: Target) -> bool:
    """sm_100a, sm_110a, sm_120a and the sm_100f / sm_110f / sm_120f families."""
    return (any(t.has_arch_specific(a) for a in (100, 110, 120))
            or any(t.has_family(a) for a in (100, 110, 120)))


_BLACKWELL_LDST = "sm_100a, sm_110a (was sm_101a), sm_120a, or an sm_100f/sm_110f/sm_120f family target"


def _tcgen05_target(t: Target) -> bool:
    return any(t.has_arch_specific(a) for a in (100, 110)) or any(t.has_family(a) for a in (100, 110))


_TCGEN05 = "sm_100a, sm_110a (was sm_101a), or an sm_100f/sm_110f family target"


def _tcgen05_red(t: Target) -> bool:
    return t.has_arch_specific(110) or t.has_family(110) or t.has_family(103)


_TCGEN05_RED = "sm_110a (was sm_101a), or an sm_103f/sm_110f family target such as sm_103a"


# --------------------------------------------------------------------------------------
# Descriptor
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Instr:
    """One validated instruction form (with its operands, when the text had them).

    Fields not used by an opcode keep their defaults, so equal forms compare equal.
    """

    op: str                       #: ``ldmatrix``, ``stmatrix``, ``wmma.load``, ``tcgen05.ld``, ``tcgen05.st``, ``tcgen05.cp``
    shape: str                    #: ``m8n8`` … ``m16n16k16`` … ``32x32b``, without the dot
    num: int = 1                  #: matrices (ld/stmatrix) or repeat factor (tcgen05.ld)
    trans: bool = False
    space: str = "generic"        #: ``generic``, ``shared`` (also ``.shared::cta``) or ``global``
    type: str = ""                #: element type: ``b16``, ``b8``, wmma types, ``b32``/``f32``/``u32``/``s32``
    dst_fmt: str | None = None    #: ``b8x16`` for decompressing ldmatrix and tcgen05.cp
    src_fmt: str | None = None    #: ``b6x16_p32`` or ``b4x16_p64``
    frag: str | None = None       #: wmma matrix ``a``, ``b`` or ``c``
    layout: str | None = None     #: wmma ``row`` or ``col``
    pack: bool = False            #: tcgen05.ld ``.pack::16b``, tcgen05.st ``.unpack::16b``
    red: str | None = None        #: tcgen05 ``min`` or ``max``
    abs: bool = False
    nan: bool = False
    target: str = "sm_100a"
    nregs: int = 1                #: registers in the vector operand
    operands: tuple[str, ...] | None = None
    split: int | None = None      #: immHalfSplitoff, when the text gave it
    stride: int | str | None = None  #: wmma stride operand, when the text gave it
    cta_group: int | None = None  #: tcgen05.cp ``.cta_group::1`` or ``::2``
    multicast: str | None = None  #: tcgen05.cp ``warpx2::02_13``, ``warpx2::01_23`` or ``warpx4``
    offset: int = 0               #: tcgen05.cp: the immediate added to taddr (``[taddr+imm]``)
    taddr: int | None = None      #: tcgen05.cp: taddr, when the text gave it as an immediate
    desc: int | None = None       #: tcgen05.cp: the descriptor, when the text gave it as an immediate

    # ----------------------------------------------------------------------------------
    @property
    def words(self) -> int:
        """32-bit words each thread receives (a .f64 register is two words)."""
        return self.nregs * 2 if self.type == "f64" else self.nregs

    @property
    def is_load(self) -> bool:
        """The instruction fills registers (a tcgen05.cp fills none: it writes Tensor Memory)."""
        return self.op not in ("stmatrix", "tcgen05.st", "tcgen05.cp")

    @property
    def form(self) -> str:
        """Canonical instruction text without operands: the key of per-form tables."""
        p = [self.op]
        if self.op == "tcgen05.cp":
            p += [f"cta_group::{self.cta_group}", self.shape] + ([self.multicast] if self.multicast else [])
            return ".".join(p + ([self.dst_fmt or "", self.src_fmt] if self.src_fmt else []))
        if self.op == "wmma.load":
            p = ["wmma.load", self.frag or "", "sync", "aligned", self.layout or "", self.shape]
            if self.space != "generic":
                p.append(self.space)
            p.append(self.type)
            return ".".join(p)
        if self.op in ("tcgen05.ld", "tcgen05.st"):
            p = [self.op] + (["red"] if self.red else []) + ["sync", "aligned", self.shape,
                                                             f"x{self.num}"]
            if self.pack:
                p.append("pack::16b" if self.op == "tcgen05.ld" else "unpack::16b")
            if self.red:
                p.append(self.red)
                p += ["abs"] * self.abs + ["NaN"] * self.nan
            p.append(self.type)
            return ".".join(p)
        p += ["sync", "aligned", self.shape, f"x{self.num}"]
        if self.trans:
            p.append("trans")
        if self.space != "generic":
            p.append(self.space)
        p += [self.dst_fmt or "", self.src_fmt] if self.src_fmt else [self.type]
        return ".".join(p)

    @property
    def text(self) -> str:
        """Canonical instruction text, with generic operand names."""
        regs = "{" + ", ".join(f"%r{i}" for i in range(self.nregs)) + "}"
        if self.op == "tcgen05.cp":
            return f"{self.form} [%r998], %rd998;"
        if self.op == "stmatrix":
            return f"{self.form} [%rd0], {regs};"
        if self.op == "wmma.load":
            tail = "" if self.stride is None else f", {self.stride}"
            return f"{self.form} {regs}, [%rd0]{tail};"
        if self.op in ("tcgen05.ld", "tcgen05.st"):
            red = ", %r999" if self.red else ""
            tail = "" if self.shape != "16x32bx2" else f", {self.split if self.split is not None else 0}"
            if self.op == "tcgen05.st":
                return f"{self.form} [%r998]{tail}, {regs};"
            return f"{self.form} {regs}{red}, [%r998]{tail};"
        return f"{self.form} {regs}, [%rd0];"

    def __str__(self) -> str:
        return self.form


# --------------------------------------------------------------------------------------
# Tables of the texts
# --------------------------------------------------------------------------------------

_NUM = {"x1": 1, "x2": 2, "x4": 4, "x8": 8, "x16": 16, "x32": 32, "x64": 64, "x128": 128}
_SPACES = {"shared": "shared", "shared::cta": "shared", "global": "global"}

#: tcgen05.cp shapes: rows copied and bits per row.
CP_SHAPES = {"128x256b": (128, 256), "4x256b": (4, 256), "128x128b": (128, 128), "64x128b": (64, 128),
             "32x128b": (32, 128)}
#: tcgen05.cp multicast qualifiers, and the shape each goes with (the other shapes take none).
CP_MULTICAST = {"warpx2::02_13": "64x128b", "warpx2::01_23": "64x128b", "warpx4": "32x128b"}

#: tcgen05.ld / tcgen05.st registers per thread for .x1 of each shape (the first row of Table 49).
TCGEN05_REGS_PER_X1 = {"16x32bx2": 1, "16x64b": 1, "32x32b": 1, "16x128b": 2, "16x256b": 4}

#: wmma shapes → (m, n, k); the element types each fragment of each shape family takes.
WMMA_SHAPES = {
    "m16n16k16": (16, 16, 16), "m8n32k16": (8, 32, 16), "m32n8k16": (32, 8, 16),
    "m16n16k8": (16, 16, 8), "m8n8k4": (8, 8, 4), "m8n8k32": (8, 8, 32), "m8n8k128": (8, 8, 128),
}
_WMMA_TYPES = {
    # shape group: (a/b types, c types)
    ("m16n16k16", "m8n32k16", "m32n8k16"): ({"f16", "s8", "u8", "bf16"}, {"f16", "f32", "s32"}),
    ("m16n16k8",): ({"tf32"}, {"f32"}),
    ("m8n8k4",): ({"f64"}, {"f64"}),
    ("m8n8k32",): ({"s4", "u4"}, {"s32"}),
    ("m8n8k128",): ({"b1"}, {"s32"}),
}
#: Element width in bits of every wmma type.
WMMA_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f64": 64, "s8": 8, "u8": 8, "s4": 4, "u4": 4,
             "b1": 1, "f32": 32, "s32": 32}
#: Minimum plain target of each wmma element type.
_WMMA_MIN_ARCH = {"f16": 70, "f32": 70, "s8": 72, "u8": 72, "s32": 72, "s4": 75, "u4": 75,
                  "b1": 75, "bf16": 80, "tf32": 80, "f64": 80}


def wmma_types(frag: str, shape: str) -> frozenset[str]:
    """Element types the texts list for fragment ``frag`` of ``shape``."""
    for shapes, (ab, c) in _WMMA_TYPES.items():
        if shape in shapes:
            return frozenset(c if frag == "c" else ab)
    raise KeyError(shape)


def wmma_nregs(frag: str, shape: str, type_: str) -> int:
    """Registers of a wmma fragment: elements per thread × width / 32 (f64 counts 64-bit
    registers); .f16 a/b fragments always have eight registers."""
    m, n, k = WMMA_SHAPES[shape]
    rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n)}[frag]
    bits = WMMA_BITS[type_]
    if type_ == "f16" and frag in "ab":
        return 8
    per_thread = rows * cols * bits // 32
    return max(1, per_thread // (64 if type_ == "f64" else 32))


# --------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------

_OPCODES = ("ldmatrix", "stmatrix", "wmma.load", "tcgen05.ld", "tcgen05.st", "tcgen05.cp")
_IDENT = r"%?[A-Za-z_$][A-Za-z0-9_$]*"
#: An integer constant as PTX writes one: hexadecimal, binary, octal (a leading 0) or decimal,
#: an optional ``U``, after an optional sign; ASCII digits only. (PTX's constant expressions,
#: such as ``- 16`` or ``2*8``, are not read: a single literal only.)
_LITERAL = r"[+-]?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)U?"
_REG_RE = re.compile(_IDENT, re.ASCII)
_INT_RE = re.compile(_LITERAL, re.ASCII)
_ADDR_RE = re.compile(rf"\[\s*({_IDENT}|{_LITERAL})\s*(?:\+\s*({_LITERAL}))?\s*\]", re.ASCII)
#: PTX integer constants are 64-bit.
_LITERAL_BITS = 64


def _split_operands(s: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise PtxError(f"unbalanced brackets in operands {s.strip()!r}")
    last = "".join(cur).strip()
    if last or out:
        out.append(last)
    return out


def _vector(op: str, text: str) -> int:
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        raise PtxError(f"{op}: expected a brace-enclosed register vector, got {t!r}")
    regs = [r.strip() for r in t[1:-1].split(",")]
    for r in regs:
        if not _REG_RE.fullmatch(r):
            raise PtxError(f"{op}: {r!r} in the register vector is not a register")
    return len(regs)


def _address(op: str, text: str) -> None:
    """``[reg]`` or ``[reg+imm]``: an immediate address is for the .local state space only."""
    m = _ADDR_RE.fullmatch(text.strip())
    if not m:
        raise PtxError(f"{op}: expected an address operand like [p] or [p+16], got {text.strip()!r}")
    if _INT_RE.fullmatch(m.group(1)):
        raise PtxError(f"{op}: immediate address {text.strip()} (PTX allows immediate addresses for .local "
                       "only: give a register or a variable, [p] or [p+16])")
    if m.group(2):
        _literal(op, "the address offset", m.group(2))


def _literal(op: str, what: str, t: str) -> int:
    """The value of an integer constant as PTX reads it (``017`` is 15, ``0b101`` 5); one whose
    magnitude does not fit 64 bits is refused."""
    sign = -1 if t.startswith("-") else 1
    body = t.lstrip("+-").rstrip("U")
    if body[:2] in ("0x", "0X"):
        v = int(body[2:], 16)
    elif body[:2] in ("0b", "0B"):
        v = int(body[2:], 2)
    elif len(body) > 1 and body[0] == "0":
        v = int(body[1:], 8)
    else:
        v = int(body, 10)
    if v >> _LITERAL_BITS:
        raise PtxError(f"{op}: {what} {t[:40]}{'…' if len(t) > 40 else ''} does not fit 64 bits "
                       "(PTX integer constants are 64-bit)")
    return sign * v


def _int(op: str, what: str, text: str) -> int:
    t = text.strip()
    if not _INT_RE.fullmatch(t):
        raise PtxError(f"{op}: {what} must be an integer immediate, got {t[:40]!r}")
    return _literal(op, what, t)


def parse(text: str, target: str | Target = "sm_100a") -> Instr:
    """Parse one instruction (operands optional, trailing ``;`` optional) for ``target``."""
    if isinstance(text, str) and isinstance(target, (str, Target)):
        return _parse_cached(text, target)     # a trace repeats its forms: each parsed once
    return _parse(text, target)


@lru_cache(maxsize=1 << 14)
def _parse_cached(text: str, target: str | Target) -> Instr:
    return _parse(text, target)


def _parse(text: str, target: str | Target) -> Instr:
    if not isinstance(text, str):
        raise PtxError(f"instruction text must be a string, not {type(text).__name__}")
    s = text.strip()
    if s.endswith(";"):
        s = s[:-1].rstrip()
    if not s:
        raise PtxError("empty instruction text")
    tgt = parse_target(target)
    head, _, rest = s.partition(" ")
    if "\t" in head:
        head, _, more = head.partition("\t")
        rest = more + " " + rest
    rest = rest.strip()
    for opc in _OPCODES:
        if head == opc or head.startswith(opc + "."):
            quals = head[len(opc):].split(".")[1:]
            break
    else:
        raise PtxError(f"unknown instruction {head.split('.')[0]!r}: expected one of "
                       f"{', '.join(_OPCODES)}")
    if any(q == "" for q in quals):
        raise PtxError(f"{head!r}: empty qualifier (two dots in a row or a trailing dot)")
    operands = _split_operands(rest) if rest else None
    fn = {"ldmatrix": _ldst, "stmatrix": _ldst, "wmma.load": _wmma, "tcgen05.ld": _tcgen05,
          "tcgen05.st": _tcgen05, "tcgen05.cp": _tcgen05_cp}[opc]
    return fn(opc, quals, operands, tgt)


#: Every qualifier any of the instructions (or a near miss of them) is known to take;
#: anything else is reported as illegal before missing qualifiers are.
_VOCAB = ({"sync", "aligned", "trans", "red", "abs", "NaN", "pack::16b", "unpack::16b", "a", "b", "c", "d",
           "row", "col", "min", "max", "add", "shared", "shared::cta", "shared::cluster", "global",
           "local", "const", "param", "m8n8", "m16n16", "m8n16", "m16n8", "m8n32", "m16n8k16",
           "m16n8k8", "m16n8k32", "m8n8k16", "16x32b", "32x32bx2", "b16", "b8", "b32", "b64",
           "b8x16", "b6x16_p32", "b4x16_p64", "f16", "u8", "s8", "e4m3", "e5m2"}
          | set(_NUM) | set(WMMA_SHAPES) | set(WMMA_BITS) | set(TCGEN05_REGS_PER_X1) | {"u32"}
          | set(CP_SHAPES) | set(CP_MULTICAST) | {"cta_group::1", "cta_group::2", "warpx2"})


class _Quals:
    """Qualifiers of one instruction, taken by category so each may appear once."""

    def __init__(self, op: str, quals: list[str]):
        self.op, self.left = op, list(quals)
        unknown = [q for q in quals if q not in _VOCAB]
        if unknown:
            raise PtxError(f"{op}: illegal qualifier .{unknown[0]}")

    def take(self, what: str, allowed, *, many=False):
        found = [q for q in self.left if q in allowed]
        if len(found) > 1 and not many:
            raise PtxError(f"{self.op}: more than one {what} qualifier: "
                           + ", ".join("." + q for q in found))
        for q in found:
            self.left.remove(q)
        return found if many else (found[0] if found else None)

    def flag(self, name: str) -> bool:
        n = self.left.count(name)
        if n > 1:
            raise PtxError(f"{self.op}: .{name} given {n} times")
        if n:
            self.left.remove(name)
        return bool(n)

    def require(self, *names: str) -> None:
        for n in names:
            if not self.flag(n):
                raise PtxError(f"{self.op}: the mandatory .{n} qualifier is missing")

    def done(self) -> None:
        if self.left:
            q = self.left[0]
            raise PtxError(f"{self.op}: illegal qualifier .{q}" + (
                f" (and {', '.join('.' + x for x in self.left[1:])})" if len(self.left) > 1 else ""))


def _space(q: _Quals, allowed: tuple[str, ...]) -> str:
    sp = q.take("state space", {"shared", "shared::cta", "shared::cluster", "global", "local",
                                "const", "param"})
    if sp is None:
        return "generic"
    if sp not in allowed:
        raise PtxError(f"{q.op}: state space .{sp} is not allowed (use "
                       + ", ".join("." + a for a in allowed) + " or none)")
    return _SPACES[sp]


def _ldst(op: str, quals: list[str], operands, tgt: Target) -> Instr:
    q = _Quals(op, quals)
    q.require("sync", "aligned")
    ld = op == "ldmatrix"
    shapes = ("m8n8", "m16n16", "m8n16") if ld else ("m8n8", "m16n8")
    shape = q.take("shape", {"m8n8", "m16n16", "m8n16", "m16n8", "m8n32", "m16n8k16"})
    if shape is None:
        raise PtxError(f"{op}: the .shape qualifier is missing (one of "
                       + ", ".join("." + s for s in shapes) + ")")
    if shape not in shapes:
        raise PtxError(f"{op}: illegal shape .{shape} (allowed: " + ", ".join("." + s for s in shapes) + ")")
    num = q.take(".num", set(_NUM))
    if num is None:
        raise PtxError(f"{op}: the .num qualifier (.x1, .x2 or .x4) is missing")
    if num not in ("x1", "x2", "x4"):
        raise PtxError(f"{op}: illegal .num .{num} (allowed: .x1, .x2, .x4)")
    trans = q.flag("trans")
    space = _space(q, ("shared", "shared::cta"))
    # Element type, or the (destination, source) format pair of a decompressing load.
    types = [x for x in q.left if x in {"b16", "b8", "b32", "b64", "b8x16", "b6x16_p32", "b4x16_p64",
                                        "f16", "u8", "s8"}]
    for x in types:
        q.left.remove(x)
    q.done()
    n = _NUM[num]
    type_, dst_fmt, src_fmt = "", None, None
    if len(types) == 1:
        type_ = types[0]
        if type_ in ("b8x16", "b6x16_p32", "b4x16_p64"):
            raise PtxError(f"{op}: .{type_} needs its pair: .b8x16 followed by .b6x16_p32 or .b4x16_p64")
    elif len(types) == 2 and ld:
        dst_fmt, src_fmt = types
        if dst_fmt != "b8x16" or src_fmt not in ("b6x16_p32", "b4x16_p64"):
            raise PtxError(f"{op}: illegal format pair .{dst_fmt}.{src_fmt} (expected .b8x16 "
                           "followed by .b6x16_p32 or .b4x16_p64)")
    elif not types:
        raise PtxError(f"{op}: the element type qualifier is missing")
    else:
        raise PtxError(f"{op}: too many type qualifiers: " + ", ".join("." + t for t in types))

    if ld:
        if shape == "m8n8":
            if src_fmt:
                raise PtxError(f"{op}: .m8n8 takes type .b16, not the formats .{dst_fmt}.{src_fmt}")
            if type_ != "b16":
                raise PtxError(f"{op}: .m8n8 takes type .b16, not .{type_}")
        elif shape == "m16n16":
            if not trans:
                raise PtxError(f"{op}: .trans is mandatory with .m16n16")
            if n == 4:
                raise PtxError(f"{op}: .m16n16 takes .x1 or .x2 only, not .x4")
            if not src_fmt and type_ != "b8":
                raise PtxError(f"{op}: .m16n16 takes type .b8 or .b8x16 with a source format, not .{type_}")
        else:  # m8n16
            if trans:
                raise PtxError(f"{op}: .trans is not allowed with .m8n16")
            if not src_fmt:
                raise PtxError(f"{op}: .m8n16 needs the formats .b8x16.b6x16_p32 or .b8x16.b4x16_p64"
                               f", not .{type_}")
        _need(tgt, tgt.at_least(75), "ldmatrix", "sm_75 or higher")
        if shape != "m8n8":
            _need(tgt, _blackwell_ldst(tgt), f"ldmatrix shape .{shape}", _BLACKWELL_LDST)
        if type_ == "b8" or src_fmt:
            _need(tgt, _blackwell_ldst(tgt), "ldmatrix type .b8 / .src_fmt", _BLACKWELL_LDST)
        nregs = {"m8n8": n, "m16n16": 2 * n, "m8n16": n}[shape]
    else:
        if shape == "m8n8" and type_ != "b16":
            raise PtxError(f"{op}: .m8n8 takes type .b16, not .{type_}")
        if shape == "m16n8":
            if type_ != "b8":
                raise PtxError(f"{op}: .m16n8 takes type .b8 only, not .{type_}")
            if not trans:
                raise PtxError(f"{op}: .trans is mandatory with .m16n8")
        _need(tgt, tgt.at_least(90), "stmatrix", "sm_90 or higher")
        if shape == "m16n8" or type_ == "b8":
            _need(tgt, _blackwell_ldst(tgt), f"stmatrix .{shape}.{type_}", _BLACKWELL_LDST)
        nregs = n

    ops = None
    if operands is not None:
        if len(operands) != 2:
            raise PtxError(f"{op}: expected 2 operands, got {len(operands)}")
        vec, addr = (operands if ld else operands[::-1])
        _address(op, addr)
        got = _vector(op, vec)
        if got != nregs:
            raise PtxError(f"{op}: .{shape}.{num} needs {nregs} register(s) in the vector, got {got}")
        ops = tuple(operands)
    return Instr(op=op, shape=shape, num=n, trans=trans, space=space, type=type_, dst_fmt=dst_fmt,
                 src_fmt=src_fmt, target=str(tgt), nregs=nregs, operands=ops)


def _wmma(op: str, quals: list[str], operands, tgt: Target) -> Instr:
    q = _Quals(op, quals)
    late = [x for x in quals[1:] if x in ("a", "b", "c", "d")]
    if late and quals[0] not in ("a", "b", "c", "d"):
        # the assembler reads wmma.load.a as the opcode: the matrix comes right after .load
        raise PtxError(f"{op}: the matrix qualifier .{late[0]} comes right after wmma.load "
                       f"(wmma.load.{late[0]}.sync.aligned…)")
    frag = q.take("matrix (.a, .b, .c)", {"a", "b", "c", "d"})
    if frag is None:
        raise PtxError(f"{op}: the matrix qualifier .a, .b or .c is missing")
    if frag == "d":
        raise PtxError(f"{op}: illegal matrix .d (wmma.load takes .a, .b or .c)")
    name = f"wmma.load.{frag}"
    q.op = name
    q.require("sync", "aligned")
    layout = q.take("layout", {"row", "col"})
    if layout is None:
        raise PtxError(f"{name}: the layout qualifier .row or .col is missing")
    shape = q.take("shape", set(WMMA_SHAPES) | {"m16n8k16", "m16n8k8", "m16n8k32", "m8n8k16"})
    if shape is None:
        raise PtxError(f"{name}: the shape qualifier is missing")
    if shape not in WMMA_SHAPES:
        raise PtxError(f"{name}: illegal shape .{shape}")
    space = _space(q, ("global", "shared", "shared::cta"))
    type_ = q.take("type", set(WMMA_BITS) | {"b16", "b32", "b8", "e4m3", "e5m2"})
    if type_ is None:
        raise PtxError(f"{name}: the element type qualifier is missing")
    q.done()
    ok = wmma_types(frag, shape)
    if type_ not in ok:
        raise PtxError(f"{name}: type .{type_} is not allowed with .{shape} "
                       f"(allowed: {', '.join('.' + t for t in sorted(ok))})")
    if type_ in ("s4", "u4", "b1"):
        need = "row" if frag == "a" else "col"
        if layout != need:
            raise PtxError(f"{name}: sub-byte .{type_} takes layout .{need} only, not .{layout}")
    _need(tgt, tgt.at_least(_WMMA_MIN_ARCH[type_]), f"wmma.load .{type_}",
          f"sm_{_WMMA_MIN_ARCH[type_]} or higher")
    nregs = wmma_nregs(frag, shape, type_)
    ops, stride = None, None
    if operands is not None:
        if len(operands) not in (2, 3):
            raise PtxError(f"{name}: expected 2 or 3 operands (r, [p] and an optional stride), "
                           f"got {len(operands)}")
        _address(name, operands[1])
        got = _vector(name, operands[0])
        if got != nregs:
            raise PtxError(f"{name}: .{shape}.{type_} needs {nregs} register(s) in the vector, got {got}")
        if len(operands) == 3:
            st = operands[2].strip()
            if _INT_RE.fullmatch(st):
                stride = _int(name, "stride", st)
            elif _REG_RE.fullmatch(st):
                stride = st
            else:
                raise PtxError(f"{name}: stride {st!r} is neither a register nor an integer")
        ops = tuple(operands)
    return Instr(op="wmma.load", shape=shape, space=space, type=type_, frag=frag, layout=layout,
                 target=str(tgt), nregs=nregs, operands=ops, stride=stride)


def _tcgen05(op: str, quals: list[str], operands, tgt: Target) -> Instr:
    """tcgen05.ld and its mirror tcgen05.st: the same shapes and .num; the load may pack
    (``.pack::16b``) and reduce (``.red``), the store may unpack (``.unpack::16b``)."""
    ld = op == "tcgen05.ld"
    q = _Quals(op, quals)
    red = q.flag("red")
    if red and not ld:
        raise PtxError(f"{op}: illegal qualifier .red (tcgen05.st has no reduction)")
    if red and quals[0] != "red":
        # the assembler reads tcgen05.ld.red as the opcode: .red comes right after .ld
        raise PtxError(f"{op}: .red comes right after tcgen05.ld (tcgen05.ld.red.sync.aligned…)")
    q.require("sync", "aligned")
    shape = q.take("shape", set(TCGEN05_REGS_PER_X1) | {"16x32b", "32x32bx2"})
    if shape is None:
        raise PtxError(f"{op}: the shape qualifier is missing (one of "
                       + ", ".join("." + s for s in TCGEN05_REGS_PER_X1) + ")")
    if shape not in TCGEN05_REGS_PER_X1:
        raise PtxError(f"{op}: illegal shape .{shape}")
    num = q.take(".num", set(_NUM))
    if num is None:
        raise PtxError(f"{op}: the .num qualifier (.x1 … .x128) is missing")
    pack_q, wrong_q = ("pack::16b", "unpack::16b") if ld else ("unpack::16b", "pack::16b")
    if wrong_q in q.left:
        raise PtxError(f"{op}: illegal qualifier .{wrong_q} ({op} takes .{pack_q})")
    pack = q.flag(pack_q)
    red_op = q.take("reduction", {"min", "max", "add"})
    if red_op and not ld:
        raise PtxError(f"{op}: illegal qualifier .{red_op} (tcgen05.st has no reduction)")
    abs_, nan = q.flag("abs"), q.flag("NaN")
    if (abs_ or nan) and not ld:
        raise PtxError(f"{op}: illegal qualifier .{'abs' if abs_ else 'NaN'} (tcgen05.st has no reduction)")
    type_ = q.take("type", {"b32", "f32", "u32", "s32", "b16", "f16", "b64"})
    q.done()
    n = _NUM[num]
    if type_ is None:
        raise PtxError(f"{op}: the type qualifier is missing")
    if red:
        if red_op is None:
            raise PtxError(f"{op}: .red needs a reduction .min or .max")
        if red_op not in ("min", "max"):
            raise PtxError(f"{op}: illegal reduction .{red_op} (allowed: .min, .max)")
        if shape not in ("32x32b", "16x32bx2"):
            raise PtxError(f"{op}: .red is allowed with .32x32b and .16x32bx2 only, not .{shape}")
        if pack:
            raise PtxError(f"{op}: .pack::16b is not allowed with .red")
        if type_ not in ("f32", "u32", "s32"):
            raise PtxError(f"{op}: .red takes type .f32, .u32 or .s32, not .{type_}")
        if (abs_ or nan) and type_ != "f32":
            raise PtxError(f"{op}: " + " and ".join(
                x for x, on in ((".abs", abs_), (".NaN", nan)) if on) + " need type .f32")
        if n < 2:
            raise PtxError(f"{op}: .red needs .num of at least .x2, not .{num}")
    else:
        if red_op:
            raise PtxError(f"{op}: reduction .{red_op} needs the .red qualifier")
        if abs_ or nan:
            raise PtxError(f"{op}: .abs and .NaN are allowed only with .red")
        if type_ != "b32":
            raise PtxError(f"{op}: type .{type_} is not allowed ({op}"
                           + (" without .red" if ld else "") + " takes .b32)")
    nregs = TCGEN05_REGS_PER_X1[shape] * n
    if nregs > 128:
        raise PtxError(f"{op}: .{shape}.{num} is not a valid combination (it would need {nregs} "
                       "registers; Table 49 allows at most 128)")
    _need(tgt, _tcgen05_target(tgt), op, _TCGEN05)
    if red:
        _need(tgt, _tcgen05_red(tgt), "tcgen05.ld.red", _TCGEN05_RED)
    ops, split = None, None
    if operands is not None:
        split_op = shape == "16x32bx2"
        want = (3 if red else 2) + split_op
        if len(operands) != want:
            names = (["r"] + ["redval"] * red + ["[taddr]"] + ["immHalfSplitoff"] * split_op if ld
                     else ["[taddr]"] + ["immHalfSplitoff"] * split_op + ["r"])
            raise PtxError(f"{op}: .{shape}{' with .red' if red else ''} takes {want} operands "
                           f"({', '.join(names)}), got {len(operands)}")
        if ld:
            vec, addr, imm = operands[0], operands[2 if red else 1], operands[-1]
            if red and not _REG_RE.fullmatch(operands[1].strip()):
                raise PtxError(f"{op}: redval {operands[1].strip()!r} is not a register")
        else:
            vec, addr, imm = operands[-1], operands[0], operands[1]
        _address(op, addr)
        got = _vector(op, vec)
        if got != nregs:
            raise PtxError(f"{op}: .{shape}.{num} needs {nregs} register(s) in the vector, got {got}")
        if split_op:
            split = _int(op, "immHalfSplitoff", imm)
        ops = tuple(operands)
    return Instr(op=op, shape=shape, num=n, type=type_, pack=pack, red=red_op,
                 abs=abs_, nan=nan, target=str(tgt), nregs=nregs, operands=ops, split=split)


_CP_FMT = ("b6x16_p32", "b4x16_p64")


def _cp_address(op: str, text: str) -> tuple[int | None, int]:
    """``[taddr]``, ``[taddr+imm]`` or ``[imm]``: (the immediate address or None, the offset)."""
    m = _ADDR_RE.fullmatch(text.strip())
    if not m:
        raise PtxError(f"{op}: expected a Tensor Memory address like [taddr] or [taddr+16], got {text.strip()!r}")
    base, off = m.group(1), m.group(2)
    offset = _literal(op, "the taddr offset", off) if off else 0
    if _REG_RE.fullmatch(base):
        return None, offset
    return _literal(op, "taddr", base), offset


def _tcgen05_cp(op: str, quals: list[str], operands, tgt: Target) -> Instr:
    """tcgen05.cp: a shape, .cta_group, the multicast its shape needs, and optionally the
    decompression pair (destination format, then source format, as for ldmatrix)."""
    q = _Quals(op, quals)
    for bad in ("sync", "aligned"):
        if bad in q.left:
            raise PtxError(f"{op}: illegal qualifier .{bad} (tcgen05.cp is asynchronous: no .sync / .aligned)")
    group = q.take(".cta_group", {"cta_group::1", "cta_group::2"})
    shape = q.take("shape", set(CP_SHAPES))
    cast = q.take("multicast", set(CP_MULTICAST))
    order = [x for x in q.left if x in ("b8x16",) + _CP_FMT]
    dst = q.take("destination format", {"b8x16"})
    src = q.take("source format", set(_CP_FMT))
    q.done()
    if group is None:
        raise PtxError(f"{op}: the mandatory .cta_group qualifier is missing (.cta_group::1 or .cta_group::2)")
    if shape is None:
        raise PtxError(f"{op}: the shape qualifier is missing (one of " + ", ".join("." + s for s in CP_SHAPES) + ")")
    needs = [c for c, sh in CP_MULTICAST.items() if sh == shape]
    if needs and cast is None:
        raise PtxError(f"{op}: .{shape} needs a multicast qualifier (" + " or ".join("." + c for c in needs) + ")")
    if cast is not None and cast not in needs:
        raise PtxError(f"{op}: .{cast} is not allowed with .{shape}" + (
            f" (it takes {' or '.join('.' + c for c in needs)})" if needs else " (it takes no multicast)"))
    if (dst is None) != (src is None):
        raise PtxError(f"{op}: decompression needs both formats, .b8x16 then .b6x16_p32 or .b4x16_p64"
                       + (f" (got only .{dst or src})"))
    if dst and order.index(dst) > order.index(src):
        raise PtxError(f"{op}: the destination format .b8x16 comes before the source format .{src}")
    _need(tgt, _tcgen05_target(tgt), op, _TCGEN05)
    ops, taddr, offset, desc = None, None, 0, None
    if operands is not None:
        if len(operands) != 2:
            raise PtxError(f"{op}: takes 2 operands ([taddr], s-desc), got {len(operands)}")
        taddr, offset = _cp_address(op, operands[0])
        d = operands[1].strip()
        if _INT_RE.fullmatch(d):
            # a negative constant is its 64-bit two's complement, as for any .b64 operand
            desc = _literal(op, "the descriptor", d) % (1 << _LITERAL_BITS)
        elif not _REG_RE.fullmatch(d):
            raise PtxError(f"{op}: s-desc must be a 64-bit register or an immediate, got {d!r}")
        ops = tuple(operands)
    return Instr(op=op, shape=shape, cta_group=int(group[-1]), multicast=cast, dst_fmt=dst, src_fmt=src,
                 target=str(tgt), nregs=0, operands=ops, offset=offset, taddr=taddr, desc=desc)
