"""What the Tensor Memory path's components exchange: its parameters, the instruction and result
layouts of a quadrant's ports, and the encoding of a parsed instruction into the former.

One source of truth for these: the quadrant, the top, the header, the cocotb bench and the
tests all take them from here.
"""

from __future__ import annotations

from amaranth import signed, unsigned
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import Out
from amaranth.utils import exact_log2

from ..codes import Error
from ..params import TMEM_LANES as LANES
from ..params import TMEM_QUADRANTS as QUADRANTS
from ..params import TmemParams
from tensorlsu.sim.tmem_plan import MAX_REGS, NUMS, SHAPES

__all__ = ["LANES", "QUADRANTS", "CANONICAL_NAN", "MAX_REGS", "RedType", "Kind",
           "BEAT_REGS", "beat_layout", "store_beats", "tmem_instr_layout", "tmem_result_layout", "tmem_fill_layout", "instr_fields",
           "COPY_ROWS", "COPY_COLUMNS", "tmem_copy_layout", "tmem_copy_signature"]

#: The NaN a reduction returns when it returns one (docs/ARCHITECTURE.md).
CANONICAL_NAN = 0x7FFFFFFF


class RedType(enum.Enum, shape=unsigned(2)):  # type: ignore[call-arg]
    """Element type of a ``.red`` load."""

    F32 = 0
    U32 = 1
    S32 = 2


class Kind(enum.Enum, shape=unsigned(2)):  # type: ignore[call-arg]
    """What a result beat carries."""

    #: One or two destination registers.
    REGS = 0
    #: The reduction of a ``.red`` load, one word per thread (in ``data[0]``).
    REDVAL = 1
    #: A store's completion, or a refusal (``error``).
    DONE = 2


def tmem_instr_layout() -> data.StructLayout:
    """A quadrant's instruction: the decoded form (``store``; ``shape_id``: index into
    :data:`~tensorlsu.sim.tmem_plan.SHAPES`; ``num_log2``: log2 of .num; ``pack``: .pack::16b or
    .unpack::16b; the reduction), taddr (lane in bits 31:16, column in 15:0), the warp's index in
    its warpgroup, and immHalfSplitoff (``has_split``: the operand was given)."""
    return data.StructLayout({
        "store": 1, "shape_id": unsigned(3), "num_log2": unsigned(3), "pack": 1,
        "red": 1, "red_max": 1, "red_type": RedType, "abs": 1, "nan": 1,
        "taddr": unsigned(32), "warp": unsigned(2), "split": signed(17), "has_split": 1})


#: Rows a copy step writes into a quadrant: an 8-row group of a tcgen05.cp, 16 bytes each.
COPY_ROWS = 8
_COPY_ROW_BITS = 128


#: Columns one tcgen05.cp step writes into a quadrant.
COPY_COLUMNS = 4


def tmem_copy_layout(columns: int) -> data.StructLayout:
    """A tcgen05.cp step's write into one quadrant: four columns from ``col`` (a multiple of
    4), each lane ``l`` of ``lanes`` taking bytes ``4j … 4j+3`` of row ``rows[l mod 8]`` into
    column ``col + j``. A quadrant of one bank (two ports) writes a step in two halves, the
    same step offered twice: ``half`` 0 writes columns ``col``, ``col + 1``; 1 the other two
    (with two banks ``half`` is 0 and all four are written at once)."""
    return data.StructLayout({"col": unsigned((columns - 1).bit_length()),
                              "rows": data.ArrayLayout(unsigned(_COPY_ROW_BITS), COPY_ROWS),
                              "lanes": unsigned(LANES), "half": 1})


def tmem_copy_signature(columns: int) -> wiring.Signature:
    """A quadrant's copy port, from the copy's side: ``valid`` and the write (no ready: the
    quadrant is held for the copy and takes it in the cycle it is offered)."""
    return wiring.Signature({"valid": Out(1), "payload": Out(tmem_copy_layout(columns))})


#: Registers of every thread a beat carries, on the result port and on the store port.
BEAT_REGS = 2


def beat_layout() -> data.ArrayLayout:
    """Two registers of every thread: what a result beat carries, and a store beat (registers
    ``2k`` and ``2k + 1`` in beat ``k``; slot 1 unused when the instruction has one register)."""
    return data.ArrayLayout(data.ArrayLayout(unsigned(32), LANES), BEAT_REGS)


def store_beats(nregs):
    """The store port's beats of a tcgen05.st of ``nregs`` registers (an int or a value)."""
    return (nregs + BEAT_REGS - 1) >> exact_log2(BEAT_REGS)


def tmem_result_layout() -> data.StructLayout:
    """A quadrant's result beat: up to two registers of every thread (``reg``, ``reg2``: their
    indices; ``two``: the second is present), what the beat is, whether it is the last of
    its instruction, and the error code (on a refusal, its only beat)."""
    return data.StructLayout({
        "data": beat_layout(),
        "reg": unsigned(7), "reg2": unsigned(7), "two": 1, "kind": Kind, "last": 1, "error": Error})


def tmem_fill_layout(params: TmemParams) -> data.StructLayout:
    """One column of a quadrant's 32 lanes, written while the quadrant is idle."""
    return data.StructLayout({"col": unsigned(params.col_bits),
                              "data": data.ArrayLayout(unsigned(32), LANES)})


def instr_fields(ins, taddr: int, warp: int, split: int | None) -> dict:
    """The fields of :func:`tmem_instr_layout` for a parsed tcgen05.ld / tcgen05.st
    (:func:`tensorlsu.sim.ptx.parse`). Out-of-range operands saturate, so that the quadrant's
    check refuses them rather than seeing a wrapped value."""
    if ins.op not in ("tcgen05.ld", "tcgen05.st"):
        raise ValueError(f"not a Tensor Memory instruction: {ins.op}")
    red_type = {"u32": RedType.U32, "s32": RedType.S32}.get(ins.type, RedType.F32)
    lim = (1 << 16) - 1
    sp = 0 if split is None else max(-(1 << 16), min(lim, int(split)))
    return {"store": int(ins.op == "tcgen05.st"), "shape_id": SHAPES.index(ins.shape),
            "num_log2": NUMS.index(ins.num), "pack": int(bool(ins.pack)),
            "red": int(ins.red is not None), "red_max": int(ins.red == "max"),
            "red_type": red_type.value, "abs": int(bool(ins.abs)), "nan": int(bool(ins.nan)),  # type: ignore[attr-defined]
            "taddr": int(taddr) & 0xFFFFFFFF, "warp": int(warp) % 4, "split": sp,
            "has_split": int(split is not None)}
