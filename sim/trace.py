"""Trace format version 1 (JSON lines): reading, running through a backend, checking, emitting.

One record per line; see docs/trace-format.md. :func:`run` checks each record's operands once
for every backend (:func:`operands`: what the unit's ports cannot carry is refused before
either backend runs); a backend turns the record into what the instruction produced (``regs``,
``redval``, ``smem``, ``wavefronts``) or raises a ``ValueError`` whose message explains the
refusal.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

try:        # the sim extra's: a faster reader of long traces
    import orjson
    _ORJSON = True
except ImportError:
    _ORJSON = False

from . import model, ptx
from .ptx import Instr

__all__ = ["TraceError", "Record", "read", "load", "operands", "ModelBackend", "Outcome", "run", "check",
           "summarize", "format_table", "emitted"]

_EXPECT_KEYS = {"regs", "redval", "smem", "tmem", "wavefronts", "error"}

#: Shared memory of a record without ``smem``: all zero, of this size unless the replay gives
#: another (``--smem-bytes``).
SMEM_BYTES = model.SMEM_BYTES


def shared_image(raw: dict, size: int) -> np.ndarray:
    """The record's shared-memory image: its ``smem``, or ``size`` zero bytes when absent."""
    if "smem" not in raw:
        return np.zeros(size, dtype=np.uint8)
    return np.frombuffer(bytes.fromhex(raw["smem"]), dtype=np.uint8)


def emitted_image(raw: dict, image: bytes, key: str = "smem") -> str:
    """A produced image as a record carries it: as long as the record's own image ``key``, or
    without trailing zero bytes when the record had none."""
    return (image if key in raw else image.rstrip(b"\0")).hex()


class TraceError(ValueError):
    """A malformed trace record; the message starts with ``line N:``."""


@dataclass
class Record:
    line: int
    raw: dict
    ins: Instr | None          # None when the instruction text itself is refused
    parse_error: str | None

    @property
    def expect(self) -> dict:
        return self.raw.get("expect", {})

    @property
    def parsed(self) -> Instr:
        """The instruction, for a caller that runs the record: one whose text was refused
        raises ValueError with the refusal."""
        if self.ins is None:
            raise ValueError(f"line {self.line}: the instruction was refused: {self.parse_error}")
        return self.ins

    @property
    def form(self) -> str:
        if self.ins:
            return self.ins.form
        words = self.raw["instr"].split()
        return words[0].rstrip(";")[:80] if words else "(empty instruction)"

    @property
    def space(self) -> str | None:
        """Memory the instruction reads or writes: ``shared``, ``global`` or ``tensor``
        (None when the text was refused). A generic wmma.load address is global when it lies
        in the record's global image, as the model resolves it."""
        ins = self.ins
        if ins is None:
            return None
        if ins.op in ("tcgen05.ld", "tcgen05.st", "tcgen05.cp"):
            return "tensor"     # a copy reads shared memory but writes Tensor Memory
        addr = self.raw.get("addr")
        if ins.op != "wmma.load" or not isinstance(addr, int):
            return "shared"
        mem = model.Memory(global_=bytes.fromhex(self.raw.get("gmem", "")),
                           global_base=self.raw.get("gmem_base", 0))
        return mem.space_of(ins.space, addr)


def _hex(line: int, key: str, v) -> bytes:
    if not isinstance(v, str):
        raise TraceError(f"line {line}: {key} must be a hex string")
    try:
        return bytes.fromhex(v)
    except ValueError:
        raise TraceError(f"line {line}: {key} is not a valid hex string") from None


def _int(line: int, key: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TraceError(f"line {line}: {key} must be an integer, not {type(v).__name__}")
    return v


def _validate(line: int, r) -> None:
    if not isinstance(r, dict):
        raise TraceError(f"line {line}: a record must be a JSON object")
    if not isinstance(r.get("instr"), str):
        raise TraceError(f"line {line}: missing 'instr' (the PTX instruction text)")
    if "target" in r and not isinstance(r["target"], str):
        raise TraceError(f"line {line}: target must be a string such as 'sm_100a'")
    for k in ("smem", "gmem", "tmem"):
        if k in r:
            _hex(line, k, r[k])
    for k in ("gmem_base", "stride", "taddr", "warp", "split", "tmem_cols", "desc"):
        if k in r:
            _int(line, k, r[k])
    if "desc" in r and not 0 <= r["desc"] < 1 << 64:
        raise TraceError(f"line {line}: desc must be a 64-bit descriptor (0 … 2^64 - 1)")
    if "addr" in r:
        a = r["addr"]
        if isinstance(a, list):
            # (the set of types first: the common case at C speed)
            if len(a) != 32 or not (set(map(type, a)) == {int}
                                    or all(isinstance(x, int) and not isinstance(x, bool) for x in a)):
                raise TraceError(f"line {line}: addr must be 32 integers (one per thread) or one integer")
        else:
            _int(line, "addr", a)
    if "regs" in r:
        _regs(line, "regs", r["regs"])
    e = r.get("expect", {})        # a record without expectations is run, compared with nothing
    if not isinstance(e, dict):
        raise TraceError(f"line {line}: expect must be an object")
    unknown = set(e) - _EXPECT_KEYS
    if unknown:
        raise TraceError(f"line {line}: unknown expect key(s) {', '.join(sorted(unknown))}")
    if "regs" in e:
        _regs(line, "expect.regs", e["regs"])
    if "redval" in e and (not isinstance(e["redval"], list) or len(e["redval"]) != 32):
        raise TraceError(f"line {line}: expect.redval must be 32 integers")
    for k in ("smem", "tmem"):
        if k in e:
            _hex(line, f"expect.{k}", e[k])
    if "wavefronts" in e:
        _int(line, "expect.wavefronts", e["wavefronts"])
    if "error" in e and not isinstance(e["error"], str):
        raise TraceError(f"line {line}: expect.error must be a string")


def _regs(line: int, key: str, v) -> None:
    if (not isinstance(v, list) or len(v) != 32
            or not all(isinstance(x, list) and all(isinstance(w, int) and 0 <= w < 1 << 32 for w in x)
                       for x in v)):
        raise TraceError(f"line {line}: {key} must be 32 lists of 32-bit words")


#: Digits as one letter, so that a run of 19 (an integer that may be past 64 bits, which orjson
#: would read as a float) is a substring search.
_DIGITS = bytes.maketrans(b"0123456789", b"9" * 10)
_LONG_NUMBER = b"9" * 19


def _loads(text: str, data: bytes):
    """A line's JSON (``data``: its UTF-8 bytes): read by orjson, where installed, when it
    reads it as json does (four times json's speed on a record); by json for a number that may
    be past 64 bits and for what orjson refuses (json accepts more, or names the fault as the
    trace format's errors do)."""
    if _ORJSON and _LONG_NUMBER not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def read(lines: Iterable[str | bytes]) -> Iterator[Record]:
    """Records of a trace (lines of text, or of UTF-8 bytes); blank lines are skipped,
    malformed ones raise TraceError naming the line."""
    for n, text in enumerate(lines, 1):
        if isinstance(text, bytes):
            data = text
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TraceError(f"line {n}: not UTF-8 text (byte 0x{text[e.start]:02x} at column "
                                 f"{e.start + 1})") from None
        else:
            data = text.encode("utf-8", "surrogatepass")
        if not text.strip():
            continue
        try:
            raw = _loads(text, data)
        except json.JSONDecodeError as e:
            raise TraceError(f"line {n}: not valid JSON ({e.msg} at column {e.colno})") from None
        except RecursionError:
            raise TraceError(f"line {n}: not a trace record (JSON nested too deeply)") from None
        except ValueError as e:     # an integer of more digits than Python converts
            raise TraceError(f"line {n}: not a trace record ({e})") from None
        _validate(n, raw)
        try:
            ins, err = ptx.parse(raw["instr"], raw.get("target", "sm_100a")), None
        except ptx.PtxError as e:
            ins, err = None, str(e)
        yield Record(n, raw, ins, err)


def load(path) -> list[Record]:
    with open(path, "rb") as f:
        return list(read(f))


# --------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------

def _needs(ins: Instr) -> tuple[str, ...]:
    """The record fields each instruction needs (a tcgen05.cp's may be immediates of the text)."""
    return {"ldmatrix": ("addr",), "stmatrix": ("addr",), "wmma.load": ("addr",),
            "tcgen05.ld": ("taddr", "warp"), "tcgen05.st": ("taddr", "warp"),
            "tcgen05.cp": ("taddr",) * (ins.taddr is None) + ("desc",) * (ins.desc is None)}[ins.op]


def operands(rec: Record) -> str | None:
    """The check every backend shares, run before either: a record missing a field its
    instruction needs, or giving an address where a list is wanted, is malformed
    (:class:`TraceError`); one whose operands the unit's ports cannot carry is refused, and the
    returned message says why (None: the backend may run it). What the ports cannot carry:
    shared addresses outside 0 … 2^32 - 1, a global one outside 0 … 2^64 - 1 (the RTL
    backend relocates a global image into its 32-bit global memory), a stride, Tensor Memory
    address or warp index past 32 bits, an immHalfSplitoff past a signed 32-bit immediate, an
    empty ``smem`` image (leave it out for zero-filled memory), store registers other than the
    instruction's count per thread. Every other check is the backend's own (the RTL's checks
    stay the RTL's)."""
    r, ins = rec.raw, rec.parsed
    for k in _needs(ins):
        if k not in r:
            raise TraceError(f"line {rec.line}: {ins.op} needs '{k}'")
    a = r.get("addr")
    if ins.op in ("ldmatrix", "stmatrix") and not isinstance(a, list):
        raise TraceError(f"line {rec.line}: {ins.op} needs 32 row addresses in 'addr'")
    if ins.op == "wmma.load" and isinstance(a, list):
        raise TraceError(f"line {rec.line}: wmma.load takes one matrix address in 'addr'")
    try:
        # (_validate made them 32 integers; the loop names the first out of range)
        if isinstance(a, list) and not 0 <= min(a) <= max(a) < 1 << model.ADDR_BITS:
            for t, x in enumerate(a):
                model.integer(x, f"the row address of thread {t}", model.ADDR_BITS)
        elif a is not None and ins.op == "wmma.load":
            # a global matrix is relocated into the unit's global memory (its offset in the
            # record's image kept): its address is PTX's 64-bit one; a shared one is 32-bit
            model.integer(a, "the matrix address", 64)
            if rec.space == "shared":
                model.integer(a, "the shared matrix address", model.ADDR_BITS)
        if "stride" in r and ins.op == "wmma.load":
            model.integer(r["stride"], "the stride", model.STRIDE_BITS)
        if "gmem_base" in r:
            base = model.integer(r["gmem_base"], "gmem_base", 64)
            end = base + len(r.get("gmem", "")) // 2
            if end > 1 << 64:
                raise model.ModelError(f"the global image reaches 0x{end:x}, past the 64-bit address space")
        if "taddr" in r and ins.op.startswith("tcgen05"):
            model.integer(r["taddr"], "taddr", 32)
        if "warp" in r and ins.op.startswith("tcgen05"):
            model.integer(r["warp"], "the warp index", 32)
        if "split" in r and ins.op.startswith("tcgen05"):
            model.integer(r["split"], "immHalfSplitoff", 32, signed=True)
    except model.ModelError as e:
        return f"{ins.op}: {e}"
    if r.get("smem") == "":
        return f"{ins.op}: 'smem' is an empty image (leave it out for zero-filled shared memory)"
    if "regs" in r and ins.op in ("stmatrix", "tcgen05.st"):
        counts = sorted({len(x) for x in r["regs"]})
        if counts != [ins.nregs]:
            return (f"{ins.op}: 'regs' gives {' or '.join(map(str, counts))} words a thread; "
                    f"{ins.form} stores {ins.nregs}")
    return None


class ModelBackend:
    """Runs records through the numpy model."""

    name = "model"

    def __init__(self, policy: str = "h200", smem_bytes: int | None = None):
        if policy not in model.POLICIES:
            raise ValueError(f"unknown policy {policy!r}")
        self.policy, self.smem_bytes = policy, smem_bytes

    def execute(self, rec: Record) -> dict:
        r, ins = rec.raw, rec.parsed
        why = operands(rec)     # run() checks first; a caller of execute() gets the same verdict
        if why is not None:
            raise ValueError(why)
        smem = shared_image(r, self.smem_bytes or SMEM_BYTES)
        if ins.op == "ldmatrix":
            return {"regs": model.ldmatrix(ins, smem, r["addr"]).tolist(),
                    "wavefronts": model.wavefronts(ins, r["addr"], self.policy)}
        if ins.op == "stmatrix":
            regs = r.get("regs", np.zeros((32, ins.nregs), dtype=np.uint32))   # absent: zeros
            image = model.stmatrix(ins, smem, r["addr"], regs)
            return {"smem": emitted_image(r, image.tobytes()),
                    "wavefronts": model.wavefronts(ins, r["addr"], self.policy)}
        if ins.op == "wmma.load":
            mem = model.Memory(shared=smem, global_=bytes.fromhex(r.get("gmem", "")),
                               global_base=r.get("gmem_base", 0))
            out = {"regs": model.wmma_load(ins, mem, r["addr"], r.get("stride")).tolist()}
            if ins.space == "shared":   # the bank rule is shared memory's
                out["wavefronts"] = model.wavefronts(ins, r["addr"], self.policy, stride=r.get("stride"))
            return out
        tmem, cols = bytes.fromhex(r.get("tmem", "")), r.get("tmem_cols", model.TMEM_COLS)
        if ins.op == "tcgen05.cp":
            cells = model.tcgen05_cp(ins, smem, r.get("desc"), r.get("taddr"), tmem, cols=cols)
            return {"tmem": emitted_image(r, cells.astype("<u4").tobytes(), "tmem")}
        if ins.op == "tcgen05.st":
            regs = r.get("regs", np.zeros((32, ins.nregs), dtype=np.uint32))   # absent: zeros
            cells = model.tcgen05_st(ins, tmem, r["taddr"], r["warp"], regs, r.get("split"), cols=cols)
            return {"tmem": emitted_image(r, cells.astype("<u4").tobytes(), "tmem")}
        regs, red = model.tcgen05_ld(ins, tmem, r["taddr"], r["warp"], r.get("split"), cols=cols)
        out = {"regs": regs.tolist()}
        if red is not None:
            out["redval"] = red.tolist()
        return out


# --------------------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------------------

@dataclass
class Outcome:
    record: Record
    produced: dict                  # what the backend produced (or {"error": message})
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def _first_diff(want, got, what: str) -> str:
    """The first differing register (result beat), and in it the first differing thread."""
    if len(want) != len(got):
        return f"{what}: expected {len(want)} threads, got {len(got)}"
    if any(len(a) != len(b) for a, b in zip(want, got)):
        return f"{what}: expected {len(want[0])} registers, got {len(got[0]) if got else 0}"
    for r in range(len(want[0]) if want else 0):
        for t, (a, b) in enumerate(zip(want, got)):
            if a[r] != b[r]:
                return (f"{what}: register {r} (result beat {r}) differs first at thread {t}: "
                        f"expected 0x{a[r]:08x}, got 0x{b[r]:08x}")
    return f"{what}: equal"


def _image_diff(key: str, want_hex: str, got_hex: str, tmem_cols: int) -> list[str]:
    """The first differing byte of two images; trailing zero bytes may be left out of either.
    A Tensor Memory difference is also named by lane and column."""
    want, got = bytes.fromhex(want_hex), bytes.fromhex(got_hex)
    n = max(len(want), len(got))
    want, got = want.ljust(n, b"\0"), got.ljust(n, b"\0")
    if want == got:
        return []
    i = next(k for k, (a, b) in enumerate(zip(want, got)) if a != b)
    at = f"byte 0x{i:x}"
    if key == "tmem":
        lane, col = divmod(i // 4, tmem_cols)
        at += f" (lane {lane}, column {col})"
    return [f"{key}: first difference at {at} (expected 0x{want[i]:02x}, got 0x{got[i]:02x})"]


def check(rec: Record, produced: dict) -> list[str]:
    """What differs between the record's expectations and what was produced."""
    e, f = rec.expect, []
    if "error" in produced:
        if "error" not in e:
            f.append(f"refused: {produced['error']}")
        elif e["error"] not in produced["error"]:
            f.append(f"refused with {produced['error']!r}, expected a message containing {e['error']!r}")
        return f
    if "error" in e:
        return [f"accepted, but expected a refusal containing {e['error']!r}"]
    if "regs" in e and e["regs"] != produced.get("regs"):
        f.append(_first_diff(e["regs"], produced.get("regs", []), "regs"))
    if "redval" in e and e["redval"] != produced.get("redval"):
        f.append(f"redval: expected {e['redval'][:4]}…, got {str(produced.get('redval'))[:60]}")
    for key in ("smem", "tmem"):
        if key in e:
            f += _image_diff(key, e[key], produced.get(key, ""), rec.raw.get("tmem_cols", model.TMEM_COLS))
    if "wavefronts" in e and e["wavefronts"] != produced.get("wavefronts"):
        f.append(f"wavefronts: expected {e['wavefronts']}, got {produced.get('wavefronts')}")
    return f


def run(records: Iterable[Record], backend) -> Iterator[Outcome]:
    """Execute every record and compare; refusals become ``{"error": message}``.

    A backend with ``execute_all`` (the RTL: one simulation for the whole trace) gets every
    parsed record at once and returns what each produced.
    """
    if hasattr(backend, "execute_all"):
        records = list(records)
        refused = {id(r): r.parse_error if r.ins is None else operands(r) for r in records}
        todo = [r for r in records if refused[id(r)] is None]
        done = iter(backend.execute_all(todo))
        for rec in records:
            why = refused[id(rec)]
            produced = {"error": why} if why is not None else next(done)
            yield Outcome(rec, produced, check(rec, produced))
        return
    for rec in records:
        why = rec.parse_error if rec.ins is None else operands(rec)
        if why is not None:
            produced = {"error": why}
        else:
            try:
                produced = backend.execute(rec)
            except TraceError:
                raise
            except ValueError as exc:  # PtxError, ModelError and the backend's own refusals
                produced = {"error": str(exc)}
        yield Outcome(rec, produced, check(rec, produced))


def emitted(o: Outcome) -> dict:
    """The record with ``expect`` replaced by what was produced (same format)."""
    raw = dict(o.record.raw)
    raw["expect"] = {k: v for k, v in o.produced.items() if not k.startswith("_")}
    return raw


def where(o: Outcome) -> str:
    """Where a backend ran the record, when it says (the RTL: the cycles it was accepted and
    gave its last beat), for failure messages."""
    at = o.produced.get("_at")
    return f" (accepted in cycle {at['accepted']}, last beat in cycle {at['done']})" if at else ""


def summarize(outcomes: Iterable[Outcome]) -> "OrderedDict[str, list[int]]":
    table: OrderedDict[str, list[int]] = OrderedDict()
    for o in outcomes:
        row = table.setdefault(o.record.form, [0, 0])
        row[0 if o.passed else 1] += 1
    return table


def format_table(table, title: str = "form") -> str:
    w = max([len(title)] + [len(k) for k in table])
    lines = [f"{title:<{w}}  passed  failed", f"{'-' * w}  ------  ------"]
    for k in sorted(table):
        p, f = table[k]
        lines.append(f"{k:<{w}}  {p:>6}  {f:>6}")
    tp, tf = sum(v[0] for v in table.values()), sum(v[1] for v in table.values())
    lines.append(f"{'-' * w}  ------  ------")
    lines.append(f"{'total (' + str(len(table)) + ' forms)':<{w}}  {tp:>6}  {tf:>6}")
    return "\n".join(lines)

