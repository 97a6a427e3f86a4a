"""The lane placement shared by a quadrant's load and store paths.

A 16-lane form (16x64b, 16x128b, 16x256b, 16x32bx2) reaches lanes ``lane_off`` …
``lane_off + 15`` of the quadrant, where ``lane_off`` is taddr's lane from the quadrant's
first (0 … 16); its schedule numbers them 0 … 15 (*virtual* lanes). 32x32b spans all 32 lanes
from the first (lane_off 0). Combinational helpers, no state; each lane is one shifter
(``word_select``) over the packed word, not a multiplexer tree.
"""

from __future__ import annotations

from amaranth import Cat, Mux

from .tmem_records import LANES

__all__ = ["to_virtual", "to_physical"]

HALF = LANES // 2


def to_virtual(word, lane_off):
    """Virtual lane ``k`` (32 bits each) of a word read from the memory: physical lane
    ``lane_off + k`` for k < 16 (the 16-lane forms use these only); lanes 16 … 31 are
    32x32b's, unmoved."""
    return [word.word_select(lane_off + k, 32) if k < HALF else word[32 * k:32 * k + 32]
            for k in range(LANES)]


def to_physical(virt, wide, lane_off, width=32):
    """Physical lane ``L`` of a word to write (``virt``: ``width`` bits per virtual lane):
    virtual lane ``L − lane_off`` of a 16-lane form, or lane ``L`` itself when ``wide``
    (32x32b). Returns (value, reached) per lane, ``reached``: the form reaches the lane."""
    low = Cat(*virt[:HALF])
    out = []
    for lane in range(LANES):
        k = lane - lane_off
        inside = (lane >= lane_off) & (k < HALF)
        out.append((Mux(wide, virt[lane], low.word_select(k[:4], width)), wide | inside))
    return out
