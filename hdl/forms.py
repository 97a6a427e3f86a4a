"""The instruction forms the RTL executes, numbered, with their tables from tensorlsu.sim.

The RTL never hard-codes a layout: every shuffle it builds comes from
:func:`tensorlsu.sim.layouts.row_table` of the forms listed here.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from tensorlsu.sim import layouts, ptx
from tensorlsu.sim.ptx import Instr

__all__ = ["ROW_FORMS", "form_id", "FormInfo", "info"]


def _row_forms() -> tuple[Instr, ...]:
    texts = []
    for num in (1, 2, 4):
        for tr in ("", ".trans"):
            texts.append(f"ldmatrix.sync.aligned.m8n8.x{num}{tr}.shared.b16")
    for num in (1, 2):
        for ty in (".b8", ".b8x16.b6x16_p32", ".b8x16.b4x16_p64"):
            texts.append(f"ldmatrix.sync.aligned.m16n16.x{num}.trans.shared{ty}")
    for num in (1, 2, 4):
        for ty in (".b8x16.b6x16_p32", ".b8x16.b4x16_p64"):
            texts.append(f"ldmatrix.sync.aligned.m8n16.x{num}.shared{ty}")
    for num in (1, 2, 4):
        for tr in ("", ".trans"):
            texts.append(f"stmatrix.sync.aligned.m8n8.x{num}{tr}.shared.b16")
        texts.append(f"stmatrix.sync.aligned.m16n8.x{num}.trans.shared.b8")
    return tuple(ptx.parse(t, "sm_100a") for t in texts)


#: Every ldmatrix / stmatrix form, in form-id order.
ROW_FORMS: tuple[Instr, ...] = _row_forms()


def _key(ins: Instr) -> Instr:
    """The form without what the unit does not care about (state space, target, operands)."""
    return replace(ins, space="shared", target="sm_100a", operands=None, split=None, stride=None)


_IDS = {_key(f): i for i, f in enumerate(ROW_FORMS)}


def form_id(ins: Instr) -> int:
    """Form id of an ldmatrix / stmatrix descriptor; ValueError for forms the unit lacks."""
    try:
        return _IDS[_key(ins)]
    except KeyError:
        raise ValueError(f"the load/store unit has no form {ins.form}") from None


class FormInfo:
    """Per-form constants the RTL is generated from."""

    def __init__(self, ins: Instr):
        self.ins = ins
        self.load = ins.op == "ldmatrix"
        self.rows = layouts.row_count(ins)
        self.rows_per_matrix = layouts.rows_per_matrix(ins)
        self.nregs = ins.nregs
        self.src_fmt = ins.src_fmt
        self.table = layouts.row_table(ins)  # (32, nregs, 4, 2): (row, byte)


@lru_cache(maxsize=None)
def info(fid: int) -> FormInfo:
    return FormInfo(ROW_FORMS[fid])
