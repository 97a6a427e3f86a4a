"""Form decoder: the per-form constants of a form id, generated from :mod:`tensorlsu.hdl.pipeline.forms`."""

from __future__ import annotations

from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..codes import FORMAT_CODES
from ..lib.rom import table
from ..params import Params
from . import forms
from .forms import BLOCK
from .records import FORM_BITS, PER_PASS, consts_layout
from .shuffle import beat_rows, beat_select

__all__ = ["FormDecoder", "form_constants"]


def form_constants(p: Params, inf: forms.FormInfo) -> list[dict]:
    """The constants (:func:`~tensorlsu.hdl.pipeline.records.consts_layout`) of each pass of a form."""
    W = p.window
    common = {"valid": 1, "load": int(inf.load), "wmma": int(inf.wmma), "nregs": inf.nregs,
              # the result's last beat (a store: its completion beat)
              "lastbeat": inf.nregs - 1 if inf.load else 0,
              "fmt": FORMAT_CODES[inf.src_fmt], "lastpass": len(inf.passes) - 1,
              # ring space: packed entries take whole passes of the ring
              "align": max(inf.align, W // BLOCK) - 1}
    out = []
    for q in range(len(inf.passes)):
        first = inf.pass_end(q - 1) + 1 if q else 0     # the pass's first result beat
        out.append(dict(common, used=inf.used(q), beat0=first if inf.load else 0, pend=inf.pass_end(q),
                        final=int(q == len(inf.passes) - 1),
                        lastwin=(len(inf.passes[q]) - 1) // W,
                        blocks=max(inf.blocks(q), W // BLOCK) if inf.load else 0,
                        # the slots the pass's first beat reads, and the blocks its beats read
                        need0=beat_rows(inf, first) if inf.load else 0,
                        rest0=inf.rest_blocks(first) if inf.load else 0,
                        sel0=beat_select(inf, first), sel1=beat_select(inf, first + 1)))
    return out


class FormDecoder(wiring.Component):
    """Combinational: the constants of both passes of form ``form`` (a single-pass form's
    ``second`` equals its ``first``); all zero for an id that names no form (``valid`` = 0).
    One table of a row per form id (:func:`~tensorlsu.hdl.lib.rom.table`), read asynchronously.

    Parameters
    ----------
    params : Params

    Members
    -------
    form : In(FORM_BITS)
    first : Out(consts_layout(params))
        The constants of the instruction's first pass.
    second : Out(consts_layout(params))
        Those of its second pass; only the fields :data:`~tensorlsu.hdl.pipeline.records.PER_PASS`
        differ from ``first``.
    """

    def __init__(self, params: Params):
        self.params = params
        layout = consts_layout(params)
        super().__init__({"form": In(FORM_BITS), "first": Out(layout), "second": Out(layout)})

    def elaborate(self, platform):
        m = Module()
        layout = consts_layout(self.params)
        rows = {}
        for f in range(len(forms.FORMS)):
            per = form_constants(self.params, forms.info(f))
            rows[f] = {"first": per[0],
                       "second": {k: per[-1][k] if k in PER_PASS else v for k, v in per[0].items()}}
        consts = table(m, self.form, data.StructLayout({"first": layout, "second": layout}), rows, "consts")
        m.d.comb += [self.first.eq(consts.first), self.second.eq(consts.second)]
        return m
