"""The instruction forms the RTL executes, numbered, with their tables from tensorlsu.sim.

The RTL never hard-codes a layout: every shuffle it builds comes from
:func:`tensorlsu.sim.layouts.row_table` (ldmatrix / stmatrix) or
:func:`tensorlsu.sim.layouts.wmma_byte_table` (wmma.load) of the forms listed here.

A wmma.load reads 16-byte *chunks* of the matrix's lines into the same row slots an ldmatrix
fills with its rows. Up to 32 chunks fit; larger fragments (64 chunks) run as two passes, each
a set of slots and the result beats that read only those slots.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np
from tensorlsu.sim import layouts, model, ptx
from tensorlsu.sim.model import GROUP_ROWS
from tensorlsu.sim.ptx import WMMA_BITS, WMMA_SHAPES, Instr

__all__ = ["ROW_FORMS", "WMMA_FORMS", "FORMS", "form_id", "FormInfo", "info", "SLOTS", "CHUNK", "BLOCK",
           "RESULT_REGS"]

#: Row slots of one pass (one per thread of an ldmatrix).
SLOTS = 32
#: Bytes of one slot: a matrix row, or a chunk of a wmma line.
CHUNK = layouts.ROW_BYTES
#: Slots of one block of the row buffer (one 8-row group): the unit of buffer allocation.
BLOCK = GROUP_ROWS


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


def _wmma_forms() -> tuple[Instr, ...]:
    out = []
    for frag in "abc":
        for shape in WMMA_SHAPES:
            for ty in sorted(ptx.wmma_types(frag, shape)):
                for lay in ("row", "col"):
                    if ty in ("s4", "u4", "b1") and lay != ("row" if frag == "a" else "col"):
                        continue  # sub-byte a is row-only, b col-only (the parser says so too)
                    out.append(ptx.parse(f"wmma.load.{frag}.sync.aligned.{lay}.{shape}.shared.{ty}",
                                         "sm_100a"))
    return tuple(out)


#: Every ldmatrix / stmatrix form, in form-id order.
ROW_FORMS: tuple[Instr, ...] = _row_forms()
#: Every wmma.load form (shared-memory form; generic addressing maps to the same id).
WMMA_FORMS: tuple[Instr, ...] = _wmma_forms()
#: All forms; the form id is the index.
FORMS: tuple[Instr, ...] = ROW_FORMS + WMMA_FORMS
#: The most 32-bit destination registers of a load form: the width of a result beat's
#: register mask.
RESULT_REGS = max(ins.words for ins in FORMS if ins.op != "stmatrix")


def _key(ins: Instr) -> Instr:
    """The form without what the unit does not care about (state space, target, operands)."""
    return replace(ins, space="shared", target="sm_100a", operands=None, split=None, stride=None)


_IDS = {_key(f): i for i, f in enumerate(FORMS)}


def form_id(ins: Instr) -> int:
    """Form id of an instruction descriptor (a wmma.load's state space is the instruction's
    ``space`` field, not part of its form); ValueError for forms the unit lacks."""
    fid = _form_id(ins)
    if fid is None:
        raise ValueError(f"the load/store unit has no form {ins.form}")
    return fid


@lru_cache(maxsize=1 << 12)
def _form_id(ins: Instr) -> int | None:
    return _IDS.get(_key(ins))      # a trace repeats its forms: each looked up once


def _issue_order(ins: Instr) -> dict[tuple[int, int], int]:
    """Chunk ``(line, k)`` → the first wavefront group of the H200's loads that touches it
    (:func:`tensorlsu.sim.model.wmma_wavefront_groups`). Slots filled in this order put the
    chunks of one group in one 8-slot window, so that the unit's h200 windows never take more
    cycles than the H200's groups (tb/pipeline/test_wmma_cost.py checks every form and address residue)."""
    lines, line_bytes = layouts.wmma_lines(ins)
    rows, cols = layouts.wmma_dims(ins.frag, ins.shape)
    least = cols if ins.layout == "row" else rows
    stride = least * 64                     # lines far apart: a word names one chunk
    step = stride * WMMA_BITS[ins.type] // 8
    first: dict[int, int] = {}
    for g, words in enumerate(model.wmma_wavefront_groups(ins, 0, stride)):
        for word in words:
            first.setdefault(word, g)
    chunk_words = CHUNK // 4
    return {(line, k): min((first[w] for w in range((line * step + CHUNK * k) // 4,
                                                     (line * step + CHUNK * k) // 4 + chunk_words) if w in first),
                           default=len(first))
            for line in range(lines) for k in range(-(-line_bytes // CHUNK))}


def _passes(bt: np.ndarray, order: dict[tuple[int, int], int]) -> tuple[list[tuple[tuple[int, int], ...]], list[int],
                                                                     np.ndarray]:
    """Chunks into slots, pass by pass: each beat's chunks, in ``order`` (then by line and
    chunk), take the next free slots (a beat that re-reads chunks of an earlier beat takes
    none), so every beat reads one contiguous run of slots and beats of the same shape share
    one shuffle pattern. A pass ends when the next beat's chunks no longer fit."""
    words = bt.shape[1]
    passes: list[list] = [[]]
    beat_pass: list[int] = []
    table = np.zeros(bt.shape, dtype=np.int16)
    for w in range(words):
        chunks = sorted({(int(l), int(p) // CHUNK) for l, p in bt[:, w].reshape(-1, 2)},
                        key=lambda c: (order[c], c))
        slots = passes[-1]
        new = [c for c in chunks if c not in slots]
        if new and len(new) != len(chunks):
            raise AssertionError("a beat shares only some of its chunks with earlier beats")
        if len(slots) + len(new) > SLOTS:
            passes.append([])
            slots = passes[-1]
        slots += new
        beat_pass.append(len(passes) - 1)
        for t in range(bt.shape[0]):
            for b in range(4):
                line, pos = (int(x) for x in bt[t, w, b])
                table[t, w, b] = (slots.index((line, pos // CHUNK)), pos % CHUNK)
    return [tuple(p) for p in passes], beat_pass, table


class FormInfo:
    """Per-form constants the RTL is generated from.

    ``table[t, r, b] = (slot, byte)``: byte ``b`` of result beat ``r`` of thread ``t`` is byte
    ``byte`` of row slot ``slot`` (of the pass that beat belongs to). ``passes[p]`` lists the
    slots of pass ``p``: for ldmatrix / stmatrix slot ``i`` is thread ``i``'s row; for wmma.load
    it is chunk ``(line, k)``, at ``addr + line · stride + 16 k``.

    A load's result beat ``r`` carries the destination registers ``beat_regs[r]`` (a mask of
    32-bit registers): register ``r`` alone, except in the .f16 a / b fragments whose
    registers repeat (m16n16k16: 4–7 are 0–3; m8n32k16 a, m32n8k16 b: every register is 0 or
    1), where one beat carries a register and all its copies.
    """

    def __init__(self, ins: Instr):
        self.ins = ins
        self.wmma = ins.op == "wmma.load"
        self.load = ins.op != "stmatrix"
        #: 32-bit registers of the fragment (stmatrix: source registers)
        self.words = ins.words
        self.nregs = ins.words               # result beats (ldmatrix / wmma) or store beats
        self.beat_regs = [1 << r for r in range(self.nregs)] if self.load else []
        if self.wmma:
            self.src_fmt = None
            self.rows_per_matrix = None
            self.bits = WMMA_BITS[ins.type]
            self.lines, self.line_bytes = layouts.wmma_lines(ins)
            rows, cols = layouts.wmma_dims(ins.frag, ins.shape)
            #: the leading dimension: the least legal stride, in elements
            self.least = cols if ins.layout == "row" else rows
            #: the stride (elements) must be a multiple of this: 16 bytes, or the whole
            #: leading dimension where that is narrower (the model's rule)
            self.stride_grain = min(8 * CHUNK // self.bits, self.least)
            bt = layouts.wmma_byte_table(ins)
            first = [next(q for q in range(r + 1) if np.array_equal(bt[:, q], bt[:, r])) for r in range(self.words)]
            distinct = sorted(set(first))
            self.beat_regs = [sum(1 << r for r in range(self.words) if first[r] == d) for d in distinct]
            self.nregs = len(distinct)
            self.passes, self.beat_pass, self.table = _passes(bt[:, distinct], _issue_order(ins))
        else:
            self.src_fmt = ins.src_fmt
            self.rows_per_matrix = layouts.rows_per_matrix(ins)
            rows = layouts.row_count(ins)
            self.passes = [tuple((i, 0) for i in range(rows))]
            self.beat_pass = [0] * self.nregs
            self.table = layouts.row_table(ins)  # (32, nregs, 4, 2): (row, byte)

    def pass_end(self, p: int) -> int:
        """Last result beat of pass ``p``."""
        return max(r for r, q in enumerate(self.beat_pass) if q == p)

    def used(self, p: int) -> int:
        """Mask of the slots pass ``p`` fills."""
        return (1 << len(self.passes[p])) - 1

    def beat_slots(self, r: int) -> list[int]:
        """The slots result beat ``r`` reads, sorted."""
        return sorted({int(x) for x in self.table[:, r, :, 0].flat})

    def beat_span(self, r: int) -> tuple[int, int]:
        """``(first, blocks)``: beat ``r`` reads within the blocks ``first …
        first + blocks - 1``; ``blocks`` is a power of two and divides ``first``."""
        s = self.beat_slots(r)
        lo, hi = s[0] // BLOCK, s[-1] // BLOCK
        n = 1 << (hi - lo).bit_length()
        while lo % n:
            lo -= lo % n
            n = 1 << (hi - lo).bit_length()
        return lo, n

    @property
    def align(self) -> int:
        """Blocks the form's buffer space must be aligned to, so that no beat reads
        across the end of the ring (the widest beat span)."""
        return max((self.beat_span(r)[1] for r in range(self.nregs)), default=1) if self.load else 1

    def blocks(self, p: int) -> int:
        """Blocks pass ``p`` fills."""
        return -(-len(self.passes[p]) // BLOCK)

    def rest_blocks(self, r: int) -> int:
        """Mask of the blocks that beats ``r`` … (to the end of ``r``'s pass) read."""
        q = self.beat_pass[r]
        return sum({1 << (s // BLOCK) for k in range(r, self.pass_end(q) + 1) for s in self.beat_slots(k)})


@lru_cache(maxsize=None)
def info(fid: int) -> FormInfo:
    return FormInfo(FORMS[fid])
