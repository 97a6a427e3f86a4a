"""Copy placement: where a step's eight rows go in Tensor Memory."""

from __future__ import annotations

from amaranth import Module, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tensorlsu.sim.descriptor import CHUNK

from ..params import TMEM_LANES, TMEM_QUADRANTS, TmemParams
from .records import FORM_BITS, FORMS, group_targets

__all__ = ["CopyPlacement", "CHUNK_COLS"]

#: Columns a chunk fills (16 bytes, 4 bytes a column).
CHUNK_COLS = CHUNK // 4


class CopyPlacement(wiring.Component):
    """Combinational: for step (``group``, ``chunk``) of a copy of ``form`` at ``taddr``, the
    first of the four columns it writes, the quadrants, the lanes of each (the same in each:
    a row's copies land at one lane offset within their quadrants) and whether a quadrant
    takes one row in every slot (a .4x256b: row ``q`` into quadrant ``q`` at taddr's lane)
    rather than row ``k`` at lane ``8a + k`` (the 8-row groups, from
    :func:`~tensorlsu.hdl.copy.records.group_targets`, which the lane table gives).

    Members
    -------
    form : In(FORM_BITS)
    taddr : In(32)
    group : In(4)
    chunk : In(1)
    col : Out(col_bits)
    quads : Out(TMEM_QUADRANTS)
    lanes : Out(TMEM_LANES)
    four : Out(1)
    """

    def __init__(self, tmem: TmemParams):
        self.tmem = tmem
        super().__init__({"form": In(FORM_BITS), "taddr": In(32), "group": In(4), "chunk": In(1),
                          "col": Out(unsigned(tmem.col_bits)), "quads": Out(TMEM_QUADRANTS),
                          "lanes": Out(TMEM_LANES), "four": Out(1)})

    def elaborate(self, platform):
        m = Module()
        lane0, col0 = self.taddr[16:21], self.taddr[0:16]
        m.d.comb += self.col.eq(col0 + CHUNK_COLS * self.chunk)
        with m.Switch(self.form):
            for f, (shape, _) in enumerate(FORMS):
                with m.Case(f):
                    if shape == "4x256b":       # a row a quadrant, at the lane origin
                        m.d.comb += [self.four.eq(1), self.quads.eq(0b1111), self.lanes.eq(1 << lane0)]
                        continue
                    with m.Switch(self.group):
                        for g, (mask, lane) in enumerate(group_targets(f)):
                            with m.Case(g):
                                m.d.comb += [self.quads.eq(mask), self.lanes.eq(0xFF << lane)]
        return m
