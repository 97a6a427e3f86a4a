"""The store side of a quadrant: places a beat's source registers into the columns a step
writes.

Combinational (latency 0) from the beat held for the step (two registers, or one) and the
step's selects, which are registers: the step table's row is followed as the sequencer
walks it (``start`` with the first row of the instruction's class, ``advance``), and each
row's selects are read from their table a cycle ahead, indexed one-hot (the class and the
row, registers of the decode stage and the sequencer) so that only an OR tree lies in front
of them. Gives the words to write (one column of all 32 lanes per
access of the step) and, per access, which lanes to write. With .unpack::16b a register's halves go to the low 16 bits of
two columns, whose upper 16 bits are written zero (docs/ARCHITECTURE.md).

The placement is the schedule's (generated from ``layouts.tmem_table``): per 16-bit piece
of a word, a table indexed by the step row picks one of the few (slot, thread, half) sources
it ever takes.
"""

from __future__ import annotations

from amaranth import Const, Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.rom import candidates, select, selects_ahead
from .lanes import to_physical
from tensorlsu.sim.tmem_plan import BANKS, accesses, schedule
from .records import LANES, beat_layout
from .steps import firsts, successors

__all__ = ["TmemScatter", "sources"]

HALF_BITS = 16
ZERO = "zero"


def sources(banks: int = BANKS):
    """Per 16-bit piece ``(access, virtual lane, half)`` of the words: its candidate sources
    (``(slot, thread, half)`` of the beat, or :data:`ZERO`) and, per step row, the index of the
    one it takes (absent: the lane is not written)."""
    def moves():
        for vi, v in enumerate(schedule(banks).variants):
            if not v.store:
                continue
            for (port, lane), (slot, t, piece) in v.moves:
                if v.packed:
                    yield vi, (port, lane, 0), (slot, t, piece)
                    yield vi, (port, lane, 1), ZERO
                else:
                    for h in (0, 1):
                        yield vi, (port, lane, h), (slot, t, h)
    return candidates(moves())


class TmemScatter(wiring.Component):
    """Members
    -------
    beat : In(beat_layout())
        The beat's source registers of every thread (slot 1 unused in a one-register beat).
    start, cls_hot : In
        The sequencer starts an instruction of class ``cls_hot`` (one-hot) at its first row
        at this edge.
    advance, var_hot : In
        The sequencer moves on from its row ``var_hot`` (one-hot) at this edge.
    wide : In(1)
        The form is 32x32b (all 32 lanes, from the quadrant's first).
    lane_off : In
        taddr's lane from the quadrant's first.
    words : Out(ArrayLayout(unsigned(32 · LANES), accesses(banks)))
    lanes : Out(ArrayLayout(unsigned(LANES), accesses(banks)))
        Per port, the lanes to write (the port's enables, before the write strobe).
    """

    def __init__(self, banks: int = BANKS):
        self.banks = banks
        sch = schedule(banks)
        super().__init__({
            "beat": In(beat_layout()),
            "start": In(1), "cls_hot": In(len(sch.keys)),
            "advance": In(1), "var_hot": In(len(sch.variants)),
            "wide": In(1),
            "lane_off": In(range(LANES + 1)),
            "words": Out(data.ArrayLayout(unsigned(32 * LANES), accesses(banks))),
            "lanes": Out(data.ArrayLayout(unsigned(LANES), accesses(banks))),
        })

    def elaborate(self, platform):
        m = Module()
        nvar = len(schedule(self.banks).variants)
        cands, table = sources(self.banks)
        sel_of = selects_ahead(m, cands, table, nvar, "selects",
                               [(self.start, self.cls_hot, firsts(self.banks)),
                                (self.advance, self.var_hot, successors(self.banks))])

        for k in range(accesses(self.banks)):
            virt_word, virt_on = [], []
            for lane in range(LANES):
                word = Signal(32, name=f"virt{k}_{lane}")
                on = Signal(name=f"on{k}_{lane}")
                for h in (0, 1):
                    target = (k, lane, h)
                    if target not in cands:
                        continue
                    n = len(cands[target])
                    sel = sel_of[target]
                    srcs = [Const(0, HALF_BITS) if s == ZERO else
                            self.beat[s[0]][s[1]][HALF_BITS * s[2]:HALF_BITS * s[2] + HALF_BITS]
                            for s in cands[target]]
                    m.d.comb += word[HALF_BITS * h:HALF_BITS * h + HALF_BITS].eq(select(srcs, sel))
                    if h == 0:
                        m.d.comb += on.eq(sel != n)
                virt_word.append(word)
                virt_on.append(on)
            placed = to_physical(m, virt_word, self.wide, self.lane_off, f"placed{k}_")
            enables = to_physical(m, virt_on, self.wide, self.lane_off, f"enables{k}_")
            for lane in range(LANES):
                m.d.comb += [self.words[k][32 * lane:32 * lane + 32].eq(placed[lane][0]),
                             self.lanes[k][lane].eq(enables[lane][0] & enables[lane][1])]
        return m
