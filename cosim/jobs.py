"""Tensor Memory jobs for the cocotb bench: a quadrant instruction's port fields and store beats,
quadrant images in and out, and the outcome of an instruction read from its result beats."""

from __future__ import annotations

import numpy as np
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.tmem.records import Kind, instr_fields

__all__ = ["tmem_instr_job", "quadrant_image", "tmem_from_dumps", "tmem_outcome"]

# the codes of a quadrant's result beats (a type checker reads Amaranth's enums as plain classes)
_NONE, _DONE, _REGS, _REDVAL = (int(c.value) for c in (Error.NONE, Kind.DONE, Kind.REGS,  # type: ignore[attr-defined]
                                                         Kind.REDVAL))


def tmem_instr_job(ins, taddr: int, warp: int, split=None, regs=None) -> dict:
    """One quadrant instruction of a ``tmem`` job: its port fields and, for a store, one beat
    per source register (``regs``: uint32[32, nregs]; absent: zeros)."""
    job: dict = {"fields": instr_fields(ins, taddr, warp, split)}
    if ins.op == "tcgen05.st":
        job["store"] = [[0] * 32] * ins.nregs if regs is None else \
            [[int(regs[t][k]) for t in range(32)] for k in range(ins.nregs)]
    return job


def quadrant_image(tmem, q: int) -> str:
    """The fill image of quadrant ``q`` of ``tmem`` (uint32[128, cols]): column-major hex."""
    return np.ascontiguousarray(tmem[32 * q:32 * q + 32].T).astype("<u4").tobytes().hex()


def tmem_from_dumps(dumps: dict, cols: int):
    """uint32[128, cols] from the four quadrants' dumps (column-major hex)."""
    out = np.zeros((128, cols), np.uint32)
    for q, h in dumps.items():
        out[32 * int(q):32 * int(q) + 32] = np.frombuffer(bytes.fromhex(h), "<u4").reshape(cols, 32).T
    return out


def tmem_outcome(ins, res: dict) -> dict:
    """What one quadrant instruction produced, from its beats: ``error`` (a code) or, for a
    load, ``regs`` (uint32[32, nregs] as lists) and ``redval``. Raises ``AssertionError`` when
    the beats break the port's rules (a register twice or missing, a beat after the last, a
    refusal of more than one beat)."""
    beats = res["beats"]
    assert beats and beats[-1]["last"] and not any(b["last"] for b in beats[:-1]), "last beat misplaced"
    if beats[-1]["error"] != _NONE:
        assert len(beats) == 1 and beats[0]["kind"] == _DONE, "a refusal is one DONE beat"
        return {"error": beats[0]["error"]}
    assert all(b["error"] == _NONE for b in beats), "an error before the last beat"
    if ins.op == "tcgen05.st":
        assert len(beats) == 1 and beats[0]["kind"] == _DONE, "a store gives one DONE beat"
        return {}
    regs = [[None] * ins.nregs for _ in range(32)]
    out = {}
    for b in beats:
        if b["kind"] == _REDVAL:
            assert ins.red and b is beats[-1], "a redval beat where none belongs"
            out["redval"] = list(b["data"][0])
            continue
        assert b["kind"] == _REGS, f"a beat of kind {b['kind']} in a load"
        for slot, reg in enumerate([b["reg"]] + ([b["reg2"]] if b["two"] else [])):
            assert reg < ins.nregs and regs[0][reg] is None, f"register {reg} twice or out of range"
            for t in range(32):
                regs[t][reg] = b["data"][slot][t]
    assert all(x is not None for x in regs[0]), "a register never came"
    assert (ins.red is not None) == ("redval" in out), "redval beat missing"
    out["regs"] = regs
    return out
