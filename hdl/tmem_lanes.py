"""The lane placement shared by a quadrant's load and store paths.

A 16-lane form (16x64b, 16x128b, 16x256b, 16x32bx2) reaches lanes ``lane_off`` …
``lane_off + 15`` of the quadrant, where ``lane_off`` is taddr's lane from the quadrant's
first (0 … 16); its schedule numbers them 0 … 15 (*virtual* lanes). 32x32b spans all 32 lanes
from the first (lane_off 0). Combinational helpers, no state: each lane is a multiplexer over
the (at most 17) lanes its offset can bring, never a shifter over the whole word (a barrel
shifter over 1,024 bits is what a variable word select becomes in synthesis and in proofs).
"""

from __future__ import annotations

from amaranth import Mux

from .rom import select
from .tmem_records import LANES

__all__ = ["to_virtual", "to_physical", "HALF", "OFFSETS"]

HALF = LANES // 2
#: The lane offsets a 16-lane form can have.
OFFSETS = HALF + 1


def to_virtual(phys, lane_off):
    """Virtual lane ``k`` of a word read from the memory (``phys``: its 32 lanes): physical
    lane ``lane_off + k`` for k < 16 (the 16-lane forms use these only); lanes 16 … 31 are
    32x32b's, unmoved."""
    return [select(phys[k:k + OFFSETS], lane_off) if k < HALF else phys[k] for k in range(LANES)]


def to_physical(virt, wide, lane_off):
    """Physical lane ``L`` of a word to write (``virt``: per virtual lane): virtual lane
    ``L − lane_off`` of a 16-lane form, or lane ``L`` itself when ``wide`` (32x32b). Returns
    (value, reached) per lane, ``reached``: the form reaches the lane."""
    out = []
    for lane in range(LANES):
        # offsets o that bring a virtual lane here: 0 <= lane - o < 16
        offs = [o for o in range(OFFSETS) if 0 <= lane - o < HALF]
        src = select([virt[lane - o] for o in offs], (lane_off - offs[0])[:5])
        inside = (lane_off >= offs[0]) & (lane_off <= offs[-1])
        out.append((Mux(wide, virt[lane], src), wide | inside))
    return out
