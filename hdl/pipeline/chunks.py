"""wmma.load chunk indexes: which line and which chunk of it every slot of a pass holds."""

from __future__ import annotations

import functools

from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.rom import table
from ..params import Params
from . import forms
from .records import FORM_BITS

__all__ = ["ChunkIndex", "chunk_index_layout", "slot_chunks", "wmma_lines"]


@functools.cache
def _wmma_forms() -> tuple:
    return tuple((f, forms.info(f)) for f in range(len(forms.FORMS)) if forms.info(f).wmma)


@functools.cache
def slot_chunks(lanes: int) -> tuple:
    """The chunks (within its line) each slot holds in some wmma form and pass."""
    return tuple(tuple(sorted({inf.passes[q][s][1] for _, inf in _wmma_forms() for q in range(len(inf.passes))
                               if s < len(inf.passes[q])})) for s in range(lanes))


@functools.cache
def wmma_lines() -> int:
    """The most lines a wmma matrix has."""
    return max(inf.lines for _, inf in _wmma_forms())


def chunk_index_layout(p: Params) -> data.StructLayout:
    """Each slot's line and its chunk, as an index into the chunks that slot holds in some form
    (:func:`slot_chunks`), so that no form decode comes before the address arithmetic."""
    return data.StructLayout(
        {f"line{s}": range(wmma_lines()) for s in range(p.lanes)}
        | {f"chunk{s}": range(max(1, len(c))) for s, c in enumerate(slot_chunks(p.lanes))})


class ChunkIndex(wiring.Component):
    """Combinational: slot ``s`` of a wmma.load pass holds chunk ``(line, k)`` of the matrix
    (:class:`~tensorlsu.hdl.pipeline.forms.FormInfo`); ``index`` gives both passes' slots
    (:func:`chunk_index_layout`), from the form alone: one table of a row per form id
    (:func:`~tensorlsu.hdl.lib.rom.table`; other forms read zero). The address stage
    (:class:`~tensorlsu.hdl.pipeline.address.AddressStage`) turns an index into addresses.

    Members
    -------
    form : In(FORM_BITS)
    index : Out(ArrayLayout(chunk_index_layout(params), 2))
        The slots' line and chunk indexes of the form's first and second pass.
    """

    def __init__(self, params: Params):
        self.params = params
        super().__init__({"form": In(FORM_BITS), "index": Out(data.ArrayLayout(chunk_index_layout(params), 2))})

    def elaborate(self, platform):
        m = Module()
        R = self.params.lanes
        chunks = slot_chunks(R)
        rows = {}
        for f, inf in _wmma_forms():
            rows[f] = []
            for q in range(2):
                ps = inf.passes[min(q, len(inf.passes) - 1)]
                row = {}
                for s in range(min(R, len(ps))):
                    row[f"line{s}"] = ps[s][0]
                    row[f"chunk{s}"] = chunks[s].index(ps[s][1])
                rows[f].append(row)
        index = table(m, self.form, self.index.shape(), rows, "index")
        m.d.comb += self.index.eq(index)
        return m
