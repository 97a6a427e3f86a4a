"""What the copy wing's components exchange: the forms of tcgen05.cp, its instruction and result
layouts, the step a walk hands to the reads, and the encoding of a parsed instruction.

One source of truth for these: the check, the walk, the tests and the proofs take them from
here; the lane each row lands in comes from :func:`tensorlsu.sim.layouts.cp_lane_table`.
"""

from __future__ import annotations

from functools import lru_cache

from amaranth import unsigned
from amaranth.lib import data

from tensorlsu.sim import layouts, ptx
from tensorlsu.sim.descriptor import CHUNK, GROUP_ROWS

from ..codes import FMT_BITS, FORMAT_CODES, Error
from ..params import TMEM_LANES, TMEM_QUADRANTS
from ..tmem.records import COPY_ROWS

__all__ = ["FORMS", "FORM_BITS", "SLOTS", "form_id", "cp_instr_layout", "cp_result_layout", "step_layout",
           "instr_fields", "form_rows", "form_chunks", "form_lanes", "group_targets"]

#: The (shape, multicast) of every form, in the order of its code on the port.
FORMS = (("128x256b", None), ("128x128b", None), ("4x256b", None), ("64x128b", "warpx2::02_13"),
         ("64x128b", "warpx2::01_23"), ("32x128b", "warpx4"))
FORM_BITS = 3
#: Chunks a step reads: the eight rows of a core-matrix group, one chunk each (128 bytes), the
#: rows a quadrant's copy port takes.
SLOTS = COPY_ROWS


def form_id(ins: ptx.Instr) -> int:
    """The port's code of a parsed tcgen05.cp's shape and multicast."""
    return FORMS.index((ins.shape, ins.multicast))


def form_rows(f: int) -> int:
    return ptx.CP_SHAPES[FORMS[f][0]][0]


def form_chunks(f: int) -> int:
    """16-byte chunks of one row (2 for 256-bit rows, 1 for 128-bit)."""
    return ptx.CP_SHAPES[FORMS[f][0]][1] // (8 * CHUNK)


def form_lanes(f: int):
    """The lane table of form ``f`` (:func:`tensorlsu.sim.layouts.cp_lane_table`)."""
    shape, cast = FORMS[f]
    return layouts.cp_lane_table(ptx.parse(f"tcgen05.cp.cta_group::1.{shape}{'.' + cast if cast else ''}"))


@lru_cache(maxsize=None)
def group_targets(f: int) -> tuple[tuple[int, int], ...]:
    """Per 8-row group of form ``f``: (the quadrants its rows land in, as a mask; the first of
    their 8 lanes within each), from the lane table, for a lane origin of 0 (the only one a
    form of 8-row groups leaves inside Tensor Memory). Every row ``8g + k`` lands in lane
    ``first + k`` of each quadrant of the mask: checked here."""
    shape, cast = FORMS[f]
    L = form_lanes(f)
    out = []
    for g in range(L.shape[0] // GROUP_ROWS):
        mask, first = 0, set()
        for k in range(GROUP_ROWS):
            for lane in L[GROUP_ROWS * g + k]:
                q, within = divmod(int(lane), TMEM_LANES)
                mask |= 1 << q
                first.add(within - k)
        assert len(first) == 1 and min(first) % GROUP_ROWS == 0, (shape, cast, g)
        out.append((mask, first.pop()))
    return tuple(out)


def cp_instr_layout() -> data.StructLayout:
    """The copy port's instruction: the form's code (:data:`FORMS`), the source format
    (:data:`~tensorlsu.hdl.codes.FORMAT_CODES`, 0: none), the 64-bit descriptor and taddr
    (the register plus the text's offset: lane in bits 31:16, column in 15:0)."""
    return data.StructLayout({"form": unsigned(FORM_BITS), "fmt": unsigned(FMT_BITS), "desc": unsigned(64),
                              "taddr": unsigned(32)})


def cp_result_layout() -> data.StructLayout:
    """One beat per copy, after its last write lands: its error (NONE: done)."""
    return data.StructLayout({"error": Error})


def step_layout(line_bits: int) -> data.StructLayout:
    """A step of the walk: per slot (row ``8·group + k``, or row ``k`` of a .4x256b) whether
    it reads, the bank quad and the line of its chunk; the chunk's index in its row; the
    group; whether it is the copy's last step."""
    slot = data.StructLayout({"valid": 1, "quad": unsigned(3), "line": unsigned(line_bits)})
    return data.StructLayout({"slots": data.ArrayLayout(slot, SLOTS), "chunk": 1,
                              "group": unsigned(4), "last": 1})


def instr_fields(ins: ptx.Instr, desc: int, taddr: int) -> dict:
    """The port's fields of a parsed tcgen05.cp with its descriptor and taddr register (the
    text's immediates and offset applied as the model applies them)."""
    d = ins.desc if desc is None else desc
    reg = ins.taddr if taddr is None else taddr
    return {"form": form_id(ins), "fmt": FORMAT_CODES[ins.src_fmt], "desc": int(d),
            "taddr": (int(reg) + ins.offset) % (1 << 32)}


assert TMEM_QUADRANTS == 4 and len(FORMS) <= 1 << FORM_BITS
