"""The H200's bank cycles of a wmma.load from shared memory: a ROM of the measured rule."""

from __future__ import annotations

from functools import lru_cache

from amaranth import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from tensorlsu.sim import model

from . import forms
from .records import CYCLE_BITS, FORM_BITS

__all__ = ["WmmaCost", "h200_cycles", "BASE_GRAIN", "STRIDE_GRAIN", "PERIOD"]

#: Bytes after which the H200's 32 banks of 4 bytes repeat: only addresses modulo this matter.
PERIOD = 128
#: The matrix address is a multiple of this (wmma.load's alignment).
BASE_GRAIN = 32
#: A stride in bytes is a multiple of this (16, or 8 for 8-bit lines of 8 elements).
STRIDE_GRAIN = 8


def _least_stride_bytes(inf: forms.FormInfo, residue: int) -> int | None:
    """The smallest legal stride, in bytes, that is ``residue`` modulo :data:`PERIOD`."""
    least = inf.least * inf.bits // 8
    for sb in range(least, least + PERIOD + 1):
        if sb % PERIOD == residue and (sb * 8) % inf.bits == 0 and (sb * 8 // inf.bits) % inf.stride_grain == 0:
            return sb
    return None


@lru_cache(maxsize=None)
def h200_cycles(fid: int) -> tuple[int, ...]:
    """Bank cycles of wmma.load form ``fid`` under the H200's rule
    (:func:`tensorlsu.sim.model.wavefronts`) for every address residue: entry
    ``(stride_bytes / STRIDE_GRAIN mod 16) · 4 + base / BASE_GRAIN mod 4``; 0 where no legal
    stride has that residue. The rule depends on the addresses modulo :data:`PERIOD` only (two
    lines never share a word, as a stride is at least a line), which tb/pipeline/test_wmma_cost.py
    checks."""
    inf = forms.info(fid)
    out = []
    for sr in range(PERIOD // STRIDE_GRAIN):
        sb = _least_stride_bytes(inf, sr * STRIDE_GRAIN)
        for br in range(PERIOD // BASE_GRAIN):
            out.append(0 if sb is None else
                       model.wavefronts(forms.FORMS[fid], br * BASE_GRAIN, stride=sb * 8 // inf.bits))
    return tuple(out)


class WmmaCost(wiring.Component):
    """Combinational: the bank cycles the H200 takes for a wmma.load, by form and by the matrix
    address and stride modulo :data:`PERIOD` (a ROM of :func:`h200_cycles`, forms with the same
    table sharing one). 0 for a form that is not a wmma.load.

    Members
    -------
    form : In(FORM_BITS)
    base : In(7)
        The matrix address, modulo 128 (its low bits).
    stride_bytes : In(7)
        The stride in bytes, modulo 128.
    cycles : Out(CYCLE_BITS)
    """

    def __init__(self):
        super().__init__({"form": In(FORM_BITS), "base": In(PERIOD.bit_length() - 1),
                          "stride_bytes": In(PERIOD.bit_length() - 1), "cycles": Out(CYCLE_BITS)})

    def elaborate(self, platform):
        m = Module()
        tables: dict[tuple[int, ...], list[int]] = {}
        for f in range(len(forms.FORMS)):
            if forms.info(f).wmma:
                tables.setdefault(h200_cycles(f), []).append(f)
        residue = Cat(self.base[5:], self.stride_bytes[3:])
        with m.Switch(self.form):
            for table, fids in tables.items():
                with m.Case(*fids):
                    by_value: dict[int, list[int]] = {}
                    for r, v in enumerate(table):
                        by_value.setdefault(v, []).append(r)
                    with m.Switch(residue):
                        for v, rs in by_value.items():
                            if v:
                                with m.Case(*rs):
                                    m.d.comb += self.cycles.eq(v)
        return m
