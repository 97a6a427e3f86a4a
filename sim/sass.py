"""SASS-level address traces of real kernels: Accel-Sim's tracer and NVBit's ``mem_trace``.

Both tools run a kernel under NVBit and write, for every warp-level memory instruction, the
SASS opcode and one address per active lane; neither records data. This module reads them
(:func:`read`, the format told apart by :func:`detect`), names the shared-memory ones
(:func:`shared_op`: LDSM / STSM as ldmatrix / stmatrix forms, LDS / STS as plain loads and
stores of 1 to 16 bytes a thread) and turns a shared access into what the rest of the project
runs: a trace record (:func:`record`, docs/trace-format.md) for LDSM / STSM, or the bank cycles
of the model's rule (:func:`cost`) for LDS / STS, which the RTL does not have.

The formats (docs/sass-traces.md says more):

- **Accel-Sim** (``kernel-N.trace`` from the tracer, ``.traceg`` after its post-processing):
  a header of ``-key = value`` lines (``-shmem base_addr`` is the shared window's base), then
  per instruction ``[cta_x cta_y cta_z warp] PC mask dest_num [Rd...] OPCODE src_num [Rs...]
  mem_width [format addresses...] [immediate]``; ``.traceg`` files group lines under
  ``thread block = x,y,z`` and ``warp = n``. Address formats: 0 a list (one ``0x`` address per
  active lane), 1 base and stride, 2 base and a signed delta from the previous active lane.
- **NVBit mem_trace**: ``[MEMTRACE: CTX c - grid_launch_id g - ]CTA x,y,z - warp w - OPCODE -``
  then 32 addresses; a lane the tool saw inactive prints 0 (no shared-window address is 0).

Shared addresses in both are generic ones (the window's base plus the offset). The offset is the
address less the base: Accel-Sim's header gives it; otherwise (NVBit, or ``smem_base``) the
lowest shared address of the file rounded down to 1 KiB. Bank cycles and alignment depend only
on the offset modulo 128 bytes, so that choice changes neither; it does fix where rows land in a
data replay, which is why a data side file carries its own base.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from . import layouts, model, ptx

__all__ = ["SassError", "Access", "SharedOp", "Costed", "FORMATS", "LDSM_FORMS", "sass_opcode", "detect", "read", "shared_op",
           "shared_offsets", "record", "cost", "costs", "format_costs"]

#: The trace formats :func:`read` takes.
FORMATS = ("accelsim", "nvbit")
#: Lanes of a warp.
LANES = 32
#: Offsets are relative to the lowest shared address rounded down to this, when no base is given.
BASE_GRAIN = 1024
#: The largest offset in the shared window (the unit's largest shared memory).
WINDOW = model.SMEM_BYTES


class SassError(ValueError):
    """A trace line that does not parse, or an access that cannot run; the message names the line."""


@dataclass(frozen=True)
class Access:
    """One warp's memory instruction: where it was (file line, kernel, block, warp, PC), its
    SASS opcode, the active lanes and each lane's address (None where inactive)."""

    line: int
    opcode: str
    mask: int
    addrs: tuple[int | None, ...]
    kernel: str | None = None
    cta: tuple[int, int, int] | None = None
    warp: int | None = None
    pc: int | None = None
    smem_base: int | None = None     #: the shared window's base, when the trace's header gave it

    @property
    def where(self) -> str:
        parts = [f"line {self.line}"]
        if self.cta is not None:
            parts.append("CTA " + ",".join(map(str, self.cta)))
        if self.warp is not None:
            parts.append(f"warp {self.warp}")
        if self.pc is not None:
            parts.append(f"PC 0x{self.pc:04x}")
        return ", ".join(parts)


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------

_OPCODE = re.compile(r"[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*")   # LDSM.U4x16P64TO8.M816: a lower-case x
_REGISTER = re.compile(r"U?R\d+|RZ|U?P\d|PT")
_NVBIT = re.compile(r"(?:MEMTRACE:\s*)?(?:CTX\s+(?P<ctx>0x[0-9a-fA-F]+)\s*-\s*)?"
                    r"(?:grid_launch_id\s+(?P<grid>\d+)\s*-\s*)?"
                    r"CTA\s+(?P<cta>\d+,\d+,\d+)\s*-\s*warp\s+(?P<warp>\d+)\s*-\s*(?P<op>\S+)\s*-\s*(?P<addrs>.*)")


def detect(lines: Iterable[str]) -> str:
    """``accelsim`` or ``nvbit``, from the first lines that tell them apart; SassError if none does."""
    for text in lines:
        text = text.strip()
        if not text:
            continue
        if text.startswith("{"):
            raise SassError("this is a JSON-lines trace (the project's own format), not a SASS trace")
        if _NVBIT.match(text) or text.startswith(("MEMTRACE:", "Kernel ")):
            return "nvbit"
        if text.startswith(("-kernel name", "-shmem base_addr", "#BEGIN_TB", "#traces format", "thread block =")):
            return "accelsim"
        if _accelsim_fields(text) is not None:
            return "accelsim"
    raise SassError("no line of an Accel-Sim or NVBit trace found")


def _accelsim_fields(text: str):
    """(prefix, PC, mask, opcode index, tokens) of an Accel-Sim instruction line, or None."""
    tokens = text.split()
    for i, tok in enumerate(tokens):
        if _OPCODE.fullmatch(tok) and not _REGISTER.fullmatch(tok):
            break
    else:
        return None
    k = i
    while k > 0 and _REGISTER.fullmatch(tokens[k - 1]):
        k -= 1
    # tokens[k - 1] is dest_num, then the mask and the PC
    if k < 3 or not tokens[k - 1].isdigit() or int(tokens[k - 1]) != i - k:
        return None
    mask, pc = tokens[k - 2], tokens[k - 3]
    if not re.fullmatch(r"[0-9a-fA-F]{1,8}", mask) or not re.fullmatch(r"[0-9a-fA-F]+", pc):
        return None
    return tokens[:k - 3], int(pc, 16), int(mask, 16), i, tokens


def _int(tok: str, n: int, what: str) -> int:
    try:
        return int(tok, 0)
    except ValueError:
        raise SassError(f"line {n}: {what} {tok!r} is not a number") from None


def _triple(text: str, n: int) -> tuple[int, int, int]:
    """A block index ``x,y,z``."""
    parts = [_int(x.strip(), n, "a block index") for x in text.split(",")]
    if len(parts) != 3:
        raise SassError(f"line {n}: a block index of {len(parts)} parts, not x,y,z")
    return parts[0], parts[1], parts[2]


def _accelsim_addresses(tokens: list[str], at: int, mask: int, n: int) -> tuple[int | None, ...]:
    """The lanes' addresses from the tokens after mem_width (an address format and its fields)."""
    if at >= len(tokens):
        raise SassError(f"line {n}: a memory instruction without its address format")
    fmt = _int(tokens[at], n, "the address format")
    active = [t for t in range(LANES) if mask >> t & 1]
    out: list[int | None] = [None] * LANES
    if fmt == 0:
        vals = tokens[at + 1:at + 1 + len(active)]
        if len(vals) < len(active):
            raise SassError(f"line {n}: {len(active)} active lanes but {len(vals)} addresses")
        for t, v in zip(active, vals):
            out[t] = _int(v, n, "an address")
    elif fmt == 1:
        if len(tokens) < at + 3:
            raise SassError(f"line {n}: a base-stride address without its base and stride")
        base, stride = _int(tokens[at + 1], n, "the base"), _int(tokens[at + 2], n, "the stride")
        for k, t in enumerate(active):
            out[t] = base + k * stride
    elif fmt == 2:
        vals = tokens[at + 1:at + 1 + len(active)]
        if len(vals) < len(active):
            raise SassError(f"line {n}: {len(active)} active lanes but a base and {len(vals) - 1} deltas")
        at_lane = _int(vals[0], n, "the base") if vals else 0
        for k, t in enumerate(active):
            if k:
                at_lane += _int(vals[k], n, "a delta")
            out[t] = at_lane
    else:
        raise SassError(f"line {n}: address format {fmt} (expected 0 list, 1 base-stride, 2 base-delta)")
    for t, x in enumerate(out):
        if x is not None and not 0 <= x < 1 << 64:
            raise SassError(f"line {n}: lane {t}'s address {x:#x} is outside 64 bits")
    return tuple(out)


def _read_accelsim(lines: Iterable[str]) -> Iterator[Access]:
    header: dict[str, str] = {}
    cta: tuple[int, int, int] | None = None
    warp: int | None = None
    for n, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("-"):
            key, _, value = text[1:].partition("=")
            header[key.strip()] = value.strip()
            continue
        if text.startswith("thread block"):
            cta = _triple(text.partition("=")[2], n)
            continue
        if text.startswith("warp"):
            warp = _int(text.partition("=")[2].strip(), n, "the warp")
            continue
        if text.startswith("insts"):
            continue
        fields = _accelsim_fields(text)
        if fields is None:
            raise SassError(f"line {n}: not an Accel-Sim trace line: {text[:80]!r}")
        prefix, pc, mask, i, tokens = fields
        opcode = tokens[i]
        where_cta, where_warp = cta, warp
        if len(prefix) >= 4:        # a raw .trace line: cta_x cta_y cta_z warp [sm warp_sm] [line]
            where_cta = _triple(",".join(prefix[:3]), n)
            where_warp = _int(prefix[3], n, "the warp")
        if i + 1 >= len(tokens):
            raise SassError(f"line {n}: {opcode} without its source count")
        nsrc = _int(tokens[i + 1], n, "the source count")
        at = i + 2 + nsrc
        if at >= len(tokens):
            raise SassError(f"line {n}: {opcode} without its memory width")
        width = _int(tokens[at], n, "the memory width")
        if width == 0:
            continue        # not a memory instruction
        base = header.get("shmem base_addr")
        yield Access(n, opcode, mask, _accelsim_addresses(tokens, at + 1, mask, n),
                     kernel=header.get("kernel name"), cta=where_cta, warp=where_warp, pc=pc,
                     smem_base=int(base, 0) if base else None)


def _read_nvbit(lines: Iterable[str]) -> Iterator[Access]:
    kernel: str | None = None
    for n, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text:
            continue
        if text.startswith("Kernel "):
            kernel = text[len("Kernel "):].split(" - ")[0]
            continue
        m = _NVBIT.match(text)
        if m is None:
            if text.startswith(("MEMTRACE:", "CTA ")):
                raise SassError(f"line {n}: not an NVBit mem_trace line: {text[:80]!r}")
            continue        # the tool's banner and the application's own output
        vals = m["addrs"].split()
        if len(vals) != LANES:
            raise SassError(f"line {n}: {len(vals)} addresses (mem_trace prints {LANES})")
        addrs = tuple(a or None for a in (_int(v, n, "an address") for v in vals))
        mask = sum(1 << t for t, a in enumerate(addrs) if a is not None)
        yield Access(n, m["op"], mask, addrs, kernel=kernel, cta=_triple(m["cta"], n), warp=int(m["warp"]))


def read(lines: Iterable[str], fmt: str = "auto") -> Iterator[Access]:
    """Every memory instruction of a trace (its lines as text), in file order."""
    lines = list(lines)
    if fmt == "auto":
        fmt = detect(lines[:200])
    if fmt not in FORMATS:
        raise ValueError(f"unknown SASS trace format {fmt!r} (expected one of {', '.join(FORMATS)})")
    return _read_accelsim(lines) if fmt == "accelsim" else _read_nvbit(lines)


# --------------------------------------------------------------------------------------
# What a shared-memory opcode is
# --------------------------------------------------------------------------------------

#: The parts of an LDSM / STSM opcode, ``{LDSM|STSM}.{element}.{M|MT}{shape}[.{num}]``: the
#: element type (a decompressing load names its source format), ``MT`` for .trans, the shape's
#: two sizes, and .x2 / .x4 (docs/sass-traces.md: how ptxas spells every form).
_SASS_ELEMENT = {"b16": "16", "b8": "8", "b6x16_p32": "U6x16P32TO8", "b4x16_p64": "U4x16P64TO8"}
_SASS_SHAPE = {"m8n8": "88", "m16n16": "1616", "m8n16": "816", "m16n8": "168"}


def sass_opcode(ins: ptx.Instr | str) -> str:
    """The SASS opcode of an ldmatrix / stmatrix form, e.g. ``LDSM.16.MT88.4`` for
    ldmatrix .m8n8.x4.trans.b16, ``LDSM.U4x16P64TO8.M816.2`` for .m8n16.x2.b8x16.b4x16_p64."""
    ins = ptx.parse(ins, "sm_100a") if isinstance(ins, str) else ins
    if ins.op not in ("ldmatrix", "stmatrix"):
        raise SassError(f"{ins.op} has no LDSM / STSM opcode")
    return (f"{'LDSM' if ins.op == 'ldmatrix' else 'STSM'}.{_SASS_ELEMENT[ins.src_fmt or ins.type]}."
            f"{'MT' if ins.trans else 'M'}{_SASS_SHAPE[ins.shape]}{'' if ins.num == 1 else f'.{ins.num}'}")


def _row_forms() -> dict[str, str]:
    """Every legal ldmatrix / stmatrix form by its opcode: each combination of the opcode's
    parts that the PTX parser takes for sm_100a."""
    out = {}
    for op in ("ldmatrix", "stmatrix"):
        for shape in _SASS_SHAPE:
            for num in (1, 2, 4):
                for trans in ("", ".trans"):
                    for ty in ("b16", "b8", "b8x16.b6x16_p32", "b8x16.b4x16_p64"):
                        text = f"{op}.sync.aligned.{shape}.x{num}{trans}.shared.{ty}"
                        try:
                            out[sass_opcode(text)] = text
                        except ptx.PtxError:
                            pass
    return out


#: LDSM / STSM opcodes and the ldmatrix / stmatrix form each is: the .b16 forms as the H200's
#: code has them, the .b8 ones as ptxas 13.0 writes them for sm_100a.
LDSM_FORMS = _row_forms()
_SIZES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "32": 4, "64": 8, "128": 16}


@dataclass(frozen=True)
class SharedOp:
    """A shared-memory SASS opcode: ``matrix`` (LDSM / STSM, ``form`` the PTX text) or ``plain``
    (LDS / STS, ``width`` bytes a thread), ``store`` for STSM / STS."""

    kind: str
    store: bool
    form: str = ""
    width: int = 4
    rows: int = 0       #: LDSM / STSM: the lanes whose row addresses it uses

    @property
    def target(self) -> str:
        """The oldest target that has the form: sm_90a, or sm_100a for the .b8 forms."""
        try:
            ptx.parse(self.form, "sm_90a")
        except ptx.PtxError:
            return "sm_100a"
        return "sm_90a"


def shared_op(opcode: str) -> SharedOp | None:
    """What a SASS opcode does in shared memory; None for one that is not a shared access.
    SassError for an LDSM / STSM / LDS / STS variant this does not know."""
    head = opcode.split(".")[0]
    if head in ("LDSM", "STSM"):
        form = LDSM_FORMS.get(opcode)
        if form is None:
            raise SassError(f"{opcode}: an {head} variant not known here (known: "
                            f"{', '.join(k for k in LDSM_FORMS if k.startswith(head))})")
        return SharedOp("matrix", head == "STSM", form, rows=layouts.row_count(ptx.parse(form, "sm_100a")))
    if head in ("LDS", "STS"):
        quals = opcode.split(".")[1:]
        if len(quals) > 1 or any(q not in _SIZES for q in quals):
            raise SassError(f"{opcode}: an {head} variant not known here (known: {head}"
                            f"{''.join(f', {head}.{q}' for q in _SIZES if q != '32')})")
        return SharedOp("plain", head == "STS", width=_SIZES[quals[0]] if quals else 4)
    return None


def shared_offsets(accesses: Iterable[Access], smem_base: int | None = None) -> int:
    """The base that shared addresses are offsets from: ``smem_base`` when given, else the
    header's, else the lowest shared address rounded down to :data:`BASE_GRAIN`."""
    if smem_base is not None:
        return smem_base
    lowest = None
    for a in accesses:
        if a.smem_base is not None:
            return a.smem_base
        lo = min((x for x in a.addrs if x is not None), default=None)
        if lo is not None and (lowest is None or lo < lowest):
            lowest = lo
    return (lowest or 0) // BASE_GRAIN * BASE_GRAIN


def _offsets(a: Access, base: int, lanes: range) -> list[int | None]:
    out: list[int | None] = []
    for t in lanes:
        x = a.addrs[t]
        if x is None:
            out.append(None)
            continue
        off = x - base
        if not 0 <= off < WINDOW:
            raise SassError(f"{a.where}: {a.opcode} lane {t}'s address 0x{x:x} is not in the shared "
                            f"window at 0x{base:x} ({WINDOW // 1024} KiB)")
        out.append(off)
    return out


def record(a: Access, op: SharedOp, base: int, target: str | None = None) -> dict:
    """The project's trace record of an LDSM / STSM (no image, no data: what replay computes).
    Lanes past the form's rows are not used by the instruction; they repeat the used lanes'
    addresses so that both backends see 32 valid row addresses."""
    if op.kind != "matrix":
        raise ValueError(f"{a.opcode}: only LDSM / STSM make a trace record")
    rows = _offsets(a, base, range(op.rows))
    missing = [t for t, x in enumerate(rows) if x is None]
    if missing:
        raise SassError(f"{a.where}: {a.opcode} needs the row addresses of lanes 0-{op.rows - 1}; "
                        f"lane{'s' * (len(missing) > 1)} {', '.join(map(str, missing))} inactive")
    return {"instr": op.form, "target": target or op.target, "addr": [rows[t % op.rows] for t in range(LANES)],
            "source": f"{a.opcode} at {a.where}" + (f" of {a.kernel}" if a.kernel else "")}


def cost(a: Access, op: SharedOp, base: int, policy: str = "h200") -> int:
    """Bank cycles of a shared access under ``policy``: the model's ldmatrix / stmatrix rule for
    LDSM / STSM, its plain-access rule (:func:`model.shared_wavefronts`) for LDS / STS."""
    if op.kind == "matrix":
        return model.wavefronts(ptx.parse(op.form, op.target), record(a, op, base)["addr"], policy)
    return model.shared_wavefronts(op.width, _offsets(a, base, range(LANES)), policy)


# --------------------------------------------------------------------------------------
# A whole trace's shared accesses, costed
# --------------------------------------------------------------------------------------

@dataclass
class Costed:
    """One access with what the model says of it: its bank cycles under each policy, or why it
    cannot run (``error``); ``op`` None for an access outside shared memory."""

    access: Access
    op: SharedOp | None
    cycles: dict[str, int] = field(default_factory=dict)
    error: str | None = None


def costs(accesses: Iterable[Access], smem_base: int | None = None) -> tuple[list[Costed], int]:
    """Every access costed under both policies, and the base the offsets are taken from."""
    out: list[Costed] = []
    for a in accesses:
        try:
            op = shared_op(a.opcode)
        except SassError as e:
            out.append(Costed(a, None, error=f"{a.where}: {e}"))
            continue
        out.append(Costed(a, op))
    base = shared_offsets((c.access for c in out if c.op is not None), smem_base)
    for c in out:
        if c.op is None:
            continue
        try:
            c.cycles = {p: cost(c.access, c.op, base, p) for p in model.POLICIES}
        except (SassError, model.ModelError) as e:
            c.error = str(e) if isinstance(e, SassError) else f"{c.access.where}: {c.access.opcode}: {e}"
    return out, base


def format_costs(costed: list[Costed]) -> str:
    """A table by opcode: instructions, bank cycles under each policy, the bandwidth floor
    (bytes over 128 a clock), and refusals."""
    rows: dict[str, list[int]] = {}
    for c in costed:
        if c.op is None and c.error is None:
            continue
        row = rows.setdefault(c.access.opcode, [0, 0, 0, 0, 0])
        row[0] += 1
        if c.error is not None:
            row[4] += 1
            continue
        row[1] += c.cycles["h200"]
        row[2] += c.cycles["packed"]
        assert c.op is not None
        lanes = bin(c.access.mask).count("1") if c.op.kind == "plain" else LANES
        nbytes = lanes * c.op.width if c.op.kind == "plain" else c.op.rows * layouts.ROW_BYTES
        row[3] += -(-nbytes // model.WAVEFRONT_BYTES)
    w = max([len("opcode")] + [len(k) for k in rows])
    head = f"{'opcode':<{w}}  {'count':>7}  {'h200 clk':>9}  {'packed clk':>10}  {'floor clk':>9}  {'refused':>7}"
    out = [head, "-" * len(head)]
    for k in sorted(rows):
        n, h, p, f, r = rows[k]
        out.append(f"{k:<{w}}  {n:>7,}  {h:>9,}  {p:>10,}  {f:>9,}  {r:>7,}")
    return "\n".join(out)
