"""The load side of a quadrant: assembles a result beat from the columns its steps read.

Latency 2, in two registered stages. *Align*: the words a step read (one column of all 32
lanes per access) arrive with the step's row of the step table (``var``); with ``load`` their
lanes are moved to the form's virtual lanes and registered, with the row's selections (read
from the row's ROM a cycle early, so that neither the memory's output nor the ROM lies on the
placement's path). *Place*: with ``take`` the registered words are placed into the beat's
registers, so the beat is whole the cycle after its last step's words were taken. Pieces a step
does not deliver keep what earlier steps of the beat placed.

Which piece of which register a word's lane feeds is the schedule's (generated from
``layouts.tmem_table``): per 16-bit piece of the beat, a table indexed by the step row picks
one of the few (access, lane, half) sources it ever takes.
"""

from __future__ import annotations

from amaranth import Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.rom import candidates, select, selects
from .lanes import to_virtual
from tensorlsu.sim.tmem_plan import BANKS, accesses, schedule
from .records import LANES, beat_layout

__all__ = ["TmemGather", "sources"]

HALF_BITS = 16


def sources(banks: int = BANKS):
    """Per 16-bit piece ``(slot, thread, half)`` of a beat: its candidate sources
    ``(access, virtual lane, half)`` and, per step row, the index of the one it takes (absent:
    it keeps its value)."""
    def moves():
        for vi, v in enumerate(schedule(banks).variants):
            if v.store:
                continue
            for (slot, t, piece), (port, lane) in v.moves:
                if v.packed:
                    yield vi, (slot, t, piece), (port, lane, 0)
                else:
                    for h in (0, 1):
                        yield vi, (slot, t, h), (port, lane, h)
    return candidates(moves())


class TmemGather(wiring.Component):
    """Members
    -------
    words : In(ArrayLayout(unsigned(32 · LANES), accesses(banks)))
        What the step's accesses read (the memory's output, the cycle after the step).
    var : In
        The step row of the words (:func:`~tensorlsu.sim.tmem_plan.schedule`).
    lane_off : In
        taddr's lane from the quadrant's first.
    load : In(1)
        Align: register the words (in virtual lanes) and the row's selections at this edge.
    take : In(1)
        Place: put the registered words into the beat at this edge.
    beat : Out(beat_layout())
    """

    def __init__(self, banks: int = BANKS):
        self.banks = banks
        nvar = len(schedule(banks).variants)
        super().__init__({
            "words": In(data.ArrayLayout(unsigned(32 * LANES), accesses(banks))),
            "var": In(range(max(nvar, 2))),
            "lane_off": In(range(LANES + 1)),
            "load": In(1),
            "take": In(1),
            "beat": Out(beat_layout()),
        })

    def elaborate(self, platform):
        m = Module()
        nvar = len(schedule(self.banks).variants)
        ports = accesses(self.banks)
        # align: virtual lanes, registered. The data registers here have no reset (their
        # valids elsewhere do), which keeps them off the reset's fanout tree
        virt = [[Signal(32, name=f"virt{k}_{lane}", reset_less=True) for lane in range(LANES)] for k in range(ports)]
        for k in range(ports):
            rotated = to_virtual(m, [self.words[k][32 * lane:32 * lane + 32] for lane in range(LANES)],
                                 self.lane_off, f"rotate{k}")
            with m.If(self.load):
                m.d.sync += [virt[k][lane].eq(rotated[lane]) for lane in range(LANES)]
        cands, table = sources(self.banks)
        sel_of = selects(m, self.var, cands, table, nvar, load=self.load)
        # place
        beat = Signal(beat_layout(), name="placed", reset_less=True)
        m.d.comb += self.beat.eq(beat)
        for target in sorted(cands):
            n = len(cands[target])
            sel = sel_of[target]
            srcs = [virt[port][lane][HALF_BITS * h:HALF_BITS * h + HALF_BITS]
                    for port, lane, h in cands[target]]
            slot, t, h = target
            with m.If(self.take & (sel != n)):
                m.d.sync += beat[slot][t][HALF_BITS * h:HALF_BITS * h + HALF_BITS].eq(select(srcs, sel))
        return m
