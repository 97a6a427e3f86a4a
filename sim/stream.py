"""A kernel's shared-memory stream replayed with its data: one image that the stream's stores
change and its loads read, in program order.

Two sources:

- **A SASS address trace and its data side file** (:func:`side_records`): the capture harness
  (tb/hw/sass_capture.py) writes ``NAME.traceg`` in Accel-Sim's format and ``NAME.data.jsonl``
  beside it: a first line ``{"smem_base", "smem_bytes", "smem"}`` (the window's base, the bytes
  the kernel uses and its starting image), then ``{"line": L, "data": [[word, ...] x 32]}`` per
  trace line L, each lane's loaded or stored words (docs/sass-traces.md).
- **The project's trace format** (:func:`images`): records without ``smem`` read the image the
  records before them left.

Either way the stream becomes independent records, each carrying the image it starts from, so
any backend (the model, the RTL) runs them at once. The images evolve through the model: a
store's record expects the image the stream carries on (its own expectation, when it has one,
comes first), and the loads after it check that image against what the hardware loaded. LDS /
STS, which the RTL lacks, are applied and checked here with plain byte semantics: a store
writes each active lane's bytes in lane order; a load must read what the image holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from . import model, ptx
from .sass import Costed, SassError, record
from .trace import Record, shared_image

__all__ = ["SideData", "read_side", "side_records", "images"]


@dataclass
class SideData:
    """A data side file: the window's base, the starting image, and each trace line's words."""

    base: int
    image: bytes
    data: dict[int, list[list[int]]] = field(default_factory=dict)


def read_side(lines: Iterable[str]) -> SideData:
    """Parse a data side file; SassError names a malformed line."""
    side: SideData | None = None
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise SassError(f"data line {n}: not valid JSON ({e.msg})") from None
        if side is None:
            try:
                image = bytes.fromhex(raw["smem"]) if "smem" in raw else bytes(int(raw["smem_bytes"]))
                side = SideData(int(raw["smem_base"], 0), image)
            except (KeyError, TypeError, ValueError) as e:
                raise SassError(f"data line {n}: the first line gives smem_base and smem or smem_bytes ({e})") from None
            continue
        try:
            words = [[int(w) & 0xFFFFFFFF for w in lane] for lane in raw["data"]]
            side.data[int(raw["line"])] = words
        except (KeyError, TypeError, ValueError) as e:
            raise SassError(f"data line {n}: expected {{'line': L, 'data': [[words] x 32]}} ({e})") from None
        if len(words) != 32:
            raise SassError(f"data line {n}: {len(words)} lanes of data, not 32")
    if side is None:
        raise SassError("the data side file is empty")
    return side


@dataclass
class PlainCheck:
    """An LDS checked against the image, or an STS applied to it."""

    costed: Costed
    failure: str | None = None


def side_records(costed: list[Costed], side: SideData, policy: str = "h200",
                 target: str | None = None) -> tuple[list[dict], list[PlainCheck]]:
    """The stream's LDSM / STSM as records with their images and the hardware's data, and its
    LDS / STS checked here. Accesses refused by :func:`sass.costs` are left out (the caller
    reports them); one the side file has no data for, or whose form ``target`` (default: the
    oldest that has it) lacks, raises SassError."""
    keys = {(c.access.cta, c.access.warp) for c in costed if c.op is not None}
    if len(keys) > 1:
        raise SassError(f"a data replay follows one warp's stream; this trace has {len(keys)} warps")
    image = np.frombuffer(side.image, dtype=np.uint8).copy()
    out: list[dict] = []
    plain: list[PlainCheck] = []
    for c in costed:
        if c.op is None or c.error is not None:
            continue
        a = c.access
        words = side.data.get(a.line)
        if words is None:
            raise SassError(f"{a.where}: the data side file has no data for this line")
        try:
            ins = ptx.parse(c.op.form, target or c.op.target) if c.op.kind == "matrix" else None
        except ptx.PtxError as e:
            raise SassError(f"{a.where}: {a.opcode}: {e}") from None
        need = ins.nregs if ins is not None else -(-c.op.width // 4)
        short = [t for t, lane in enumerate(words) if len(lane) < need and (ins is not None or a.addrs[t] is not None)]
        if short:
            raise SassError(f"{a.where}: the data side file gives lane {short[0]} {len(words[short[0]])} words; "
                            f"{a.opcode} moves {need}")
        if ins is None:
            plain.append(_plain(c, words, image, side.base))
            continue
        rec = record(a, c.op, side.base, target)
        rec["smem"] = image.tobytes().hex()
        regs = [lane[:need] for lane in words]
        if c.op.store:
            rec["regs"] = regs
            try:
                image = model.stmatrix(ins, image, rec["addr"], np.array(regs, dtype=np.uint32))
            except model.ModelError as e:
                raise SassError(f"{a.where}: {a.opcode} cannot store into the side file's "
                                f"{len(image)}-byte image: {e}") from None
            rec["expect"] = {"smem": image.tobytes().hex(), "wavefronts": c.cycles[policy]}
        else:
            rec["expect"] = {"regs": regs, "wavefronts": c.cycles[policy]}
        out.append(rec)
    return out, plain


def _plain(c: Costed, words: list[list[int]], image: np.ndarray, base: int) -> PlainCheck:
    a, op = c.access, c.op
    assert op is not None
    nbytes = op.width
    for t in range(32):
        x = a.addrs[t]
        if x is None:
            continue
        off = x - base
        if not 0 <= off <= len(image) - nbytes:
            return PlainCheck(c, f"{a.where}: lane {t} at 0x{off:x} is past the {len(image)}-byte image")
        value = b"".join(int(w).to_bytes(4, "little") for w in words[t])[:nbytes]
        if op.store:
            image[off:off + nbytes] = np.frombuffer(value, dtype=np.uint8)
        elif image[off:off + nbytes].tobytes() != value:
            return PlainCheck(c, f"{a.where}: {a.opcode} lane {t} read {value.hex()} on the GPU, the image "
                                 f"holds {image[off:off + nbytes].tobytes().hex()} at 0x{off:x}")
    return PlainCheck(c)


def images(records: list[Record], smem_bytes: int | None = None) -> list[Record]:
    """The project's records as one stream: each record without ``smem`` gets the image the
    records before it left (zeros at first, ``smem_bytes`` long, default 228 KiB). A stmatrix
    passes on its expected image when it has one of the stream's size, else the model's result,
    which becomes its expectation; a refused one passes its image on unchanged."""
    image = np.zeros(smem_bytes or model.SMEM_BYTES, dtype=np.uint8)
    out = []
    for rec in records:
        raw = dict(rec.raw)
        raw.setdefault("smem", image.tobytes().hex())
        image = shared_image(raw, len(image))
        expect = dict(raw.get("expect", {}))
        if rec.ins is not None and rec.ins.op == "stmatrix" and "error" not in expect:
            try:
                regs = raw.get("regs", np.zeros((32, rec.ins.nregs), dtype=np.uint32))
                after = model.stmatrix(rec.ins, image, raw["addr"], regs)
            except (ValueError, KeyError):      # refused: the record's own check reports it
                after = image
            expect.setdefault("smem", after.tobytes().hex())
            raw["expect"] = expect
            image = shared_image({"smem": expect["smem"]}, len(image)) \
                if len(expect["smem"]) == 2 * len(image) else after
        out.append(Record(rec.line, raw, rec.ins, rec.parse_error))
    return out
