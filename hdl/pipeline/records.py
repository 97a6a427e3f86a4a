"""The named layouts that cross the unit's stage boundaries, and the codes they carry.

Every stage of :class:`~tensorlsu.hdl.lsu.LoadStoreUnit` exchanges these and nothing looser:

- :func:`instr_layout`, :func:`result_layout`, :func:`fill_layout`: the unit's ports;
- :func:`consts_layout`: the per-form constants of one pass, decoded from the form id once, as
  the instruction is accepted (:class:`~tensorlsu.hdl.pipeline.decode.FormDecoder`), and carried in
  registers from stage to stage, so that no later stage decodes the form again;
- :func:`pass_layout`: a checked pass, from the accept stage through the pass queue to the
  bank stage and the result entries.
"""

from __future__ import annotations

from amaranth import unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from ..codes import FMT_BITS, Error, Space
from ..params import ROW_BITS, Params
from . import forms
from .forms import BLOCK
from .shuffle import beat_select_layout

__all__ = ["FORM_BITS", "ADDR_BITS", "CYCLE_BITS", "instr_layout",
           "result_layout", "fill_layout", "consts_layout", "pass_layout", "PER_PASS",
           "land_layout", "ProgressSignature", "TakeSignature", "EntriesSignature"]

#: Width of the form-id field of an instruction.
FORM_BITS = (len(forms.FORMS) - 1).bit_length()
#: Width of a thread's address operand (and of the wmma.load stride operand).
ADDR_BITS = 32
#: Width of the bank-cycle count reported with each result beat.
CYCLE_BITS = 8


def instr_layout(p: Params) -> data.StructLayout:
    """The instruction port: form id, each thread's address, the wmma.load stride and the state
    space of its address."""
    return data.StructLayout({"form": unsigned(FORM_BITS),
                              "addr": data.ArrayLayout(unsigned(ADDR_BITS), p.lanes),
                              "stride": unsigned(ADDR_BITS), "space": Space})


def result_layout(p: Params) -> data.StructLayout:
    """The result port: one destination register of every thread, ``regs``: which registers
    the beat's data is (bit ``r``: register ``r``; more than one where a fragment repeats a
    register, :class:`~tensorlsu.hdl.pipeline.forms.FormInfo`; 0 on a store's completion beat), the
    error code, whether the beat is the instruction's last, and (on the last beat) its bank
    cycles."""
    return data.StructLayout({"data": data.ArrayLayout(unsigned(32), p.lanes),
                              "regs": unsigned(forms.RESULT_REGS), "error": Error,
                              "last": 1, "cycles": unsigned(CYCLE_BITS)})


def fill_layout(p: Params) -> data.StructLayout:
    """The fill port: a line index and the line's bytes, bank 0 lowest."""
    return data.StructLayout({"line": unsigned(p.line_bits), "data": unsigned(8 * p.line_bytes)})


#: The constants that differ between the two passes of a two-pass wmma.load.
PER_PASS = ("used", "beat0", "pend", "final", "lastwin", "blocks", "need0", "rest0", "sel0", "sel1")


def consts_layout(p: Params) -> data.StructLayout:
    """Per-form constants of one pass (:class:`~tensorlsu.hdl.pipeline.decode.FormDecoder`).

    ``valid``: the form id names a form; ``load``: ldmatrix or wmma.load; ``wmma``;
    ``used``: the slots the pass fills; ``nregs``: registers (result or store beats);
    ``fmt``: decompressor code; ``beat0``: the pass's first result beat; ``pend``: its last; ``lastpass``: the
    index of the instruction's last pass; ``final``: this pass is that one; ``lastwin``: the
    pass's last window; ``align``: ring alignment (blocks − 1) of its first block; ``blocks``: ring blocks it fills; ``need0``: the slots its
    first beat reads; ``rest0``: the blocks its beats read; ``sel0`` / ``sel1``: the shuffle
    selects of its first beat and of the beat after, not yet placed on the ring
    (:func:`~tensorlsu.hdl.pipeline.shuffle.beat_select`: the result stage places them where
    the pass lands without a table lookup); ``lastbeat``: the instruction's last result beat (a
    store: 0, its completion beat).
    """
    R, nb = p.lanes, p.row_blocks
    return data.StructLayout({
        "valid": 1, "load": 1, "wmma": 1, "used": unsigned(R), "nregs": range(R + 1),
        "fmt": unsigned(FMT_BITS), "beat0": range(R + 1), "pend": range(R + 1), "lastpass": 1, "final": 1,
        "lastwin": range(p.windows), "align": range(nb), "blocks": range(nb + 1),
        "need0": unsigned(R), "rest0": unsigned(R // BLOCK), "sel0": beat_select_layout(),
        "sel1": beat_select_layout(), "lastbeat": range(R)})


def pass_layout(p: Params) -> data.StructLayout:
    """A checked pass: its form, the error the checks found (``ovl``: the stmatrix overlap
    check found two threads on one row; it becomes :attr:`Error.OVERLAP` when the queue hands
    the pass on), its constants, ``cost``: the bank cycles the instruction takes at least, on
    its last pass (under ``"h200"`` a wmma.load's as the H200 pays them,
    :class:`~tensorlsu.hdl.pipeline.wmma_cost.WmmaCost`; otherwise 0), ``glob``: a wmma.load from
    global memory, and each slot's address (a shared-memory offset, or a global address with
    ``glob``: a row of an ldmatrix / stmatrix, a 16-byte chunk of a wmma.load)."""
    return data.StructLayout({"form": unsigned(FORM_BITS), "err": Error, "ovl": 1,
                              "consts": consts_layout(p), "cost": unsigned(CYCLE_BITS), "glob": 1,
                              "addr": data.ArrayLayout(unsigned(p.pass_addr_bits), p.lanes)})


def land_layout(p: Params) -> data.StructLayout:
    """Rows landing in the row buffer this cycle (read from the banks a cycle ago): the
    window's slots that land, which window of the pass it is, the entry it belongs to and
    the window's first ring block."""
    return data.StructLayout({"slots": unsigned(p.window), "win": range(p.windows),
                              "buf": range(p.entries), "first": range(p.row_blocks)})


class ProgressSignature(wiring.Signature):
    """What the bank stage tells the result entries each cycle, from the bank stage's side.

    ``buf``: the entry the bank stage fills; ``count``: the banks worked for it this cycle;
    ``finished``: the bank stage is done with its pass (a load's rows are read, a store's
    written, and the pass's ``cost`` is spent): its last beat may leave; ``error``, with
    ``finished``: the pass is refused after all (a global read's bus error);
    ``land`` / ``land_rows``: rows landing in the row buffer (:func:`land_layout`).

    With paired passes (:attr:`~tensorlsu.hdl.params.Params.pair_passes`) the same again for
    the second pass of a pair, prefixed ``second_`` (``second_count``: the banks worked for it
    and not for the first, so that the pair's counts add up to the cycles it took).
    """

    def __init__(self, p: Params):
        one = {"buf": Out(range(p.entries)), "count": Out(1), "finished": Out(1),
               "land": Out(land_layout(p)),
               # one signal per slot: each row wakes only its own slots' logic
               "land_rows": Out(unsigned(ROW_BITS)).array(p.window)}
        members = {**one, "error": Out(Error)}
        if p.pair_passes:
            members.update({f"second_{k}": v for k, v in one.items()})
        super().__init__(members)


class TakeSignature(wiring.Signature):
    """The oldest queued pass leaving the pass queue, from the driver's side.

    ``offered``: the queue holds a pass, ``pass_`` (valid while ``offered``); ``free``: entry
    ``tail`` is free; ``take``: the pass leaves (into entry ``tail``); ``ok``: ... and the bank
    stage serves it (it was not refused); ``start``: the first ring block of its slots.

    With paired passes (:attr:`~tensorlsu.hdl.params.Params.pair_passes`), ``pairs``: the
    offered pass is the first of a pair (whether or not it leaves this cycle); ``pair``: it
    leaves, with the second, ``second_pass``, into entry ``second_tail`` (the one after
    ``tail``) at ring block ``second_start``.
    """

    def __init__(self, p: Params):
        members = {"offered": Out(1), "pass_": Out(pass_layout(p)), "free": Out(1),
                   "tail": Out(range(p.entries)), "take": Out(1), "ok": Out(1),
                   "start": Out(range(p.row_blocks))}
        if p.pair_passes:
            members.update({"pairs": Out(1), "pair": Out(1), "second_pass": Out(pass_layout(p)),
                            "second_tail": Out(range(p.entries)), "second_start": Out(range(p.row_blocks))})
        super().__init__(members)


class EntriesSignature(wiring.Signature):
    """The result entries as the ring sees them, from the result stage's side
    (:class:`~tensorlsu.hdl.pipeline.result.ResultStage` to
    :class:`~tensorlsu.hdl.pipeline.ring.RowRing`).

    ``head``: the oldest entry; ``valid``: which entries are live; ``head_next`` /
    ``valid_next``: their values after this cycle; ``end``: the head gives its last beat now;
    ``reading``: the ring blocks the head's beats from this one on still read (the ring's
    release).
    """

    def __init__(self, p: Params):
        super().__init__({"head": Out(range(p.entries)), "head_next": Out(range(p.entries)),
                          "valid": Out(p.entries), "valid_next": Out(p.entries), "end": Out(1),
                          "reading": Out(p.row_blocks)})
