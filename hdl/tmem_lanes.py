"""The lane placement shared by a quadrant's load and store paths.

A 16-lane form (16x64b, 16x128b, 16x256b, 16x32bx2) reaches lanes ``lane_off`` …
``lane_off + 15`` of the quadrant, where ``lane_off`` is taddr's lane from the quadrant's
first (0 … 16); its schedule numbers them 0 … 15 (*virtual* lanes). 32x32b spans all 32 lanes
from the first (lane_off 0). Combinational helpers, no state.
"""

from __future__ import annotations

from amaranth import Array, Mux

from .tmem_records import LANES

__all__ = ["to_virtual", "to_physical"]

HALF = LANES // 2


def to_virtual(phys, lane_off):
    """Virtual lane ``k`` of a word read from the memory: physical lane ``lane_off + k`` for
    k < 16 (the 16-lane forms use these only); lanes 16 … 31 are 32x32b's, unmoved."""
    return [Array(phys)[lane_off + k] if k < HALF else phys[k] for k in range(LANES)]


def to_physical(virt, wide, lane_off):
    """Physical lane ``L`` of a word to write: virtual lane ``L − lane_off`` of a 16-lane form,
    or lane ``L`` itself when ``wide`` (32x32b). Returns (source value, inside) per lane, where
    ``inside`` says that a 16-lane form reaches the lane."""
    out = []
    for lane in range(LANES):
        k = lane - lane_off
        inside = (lane >= lane_off) & (k < HALF)
        src = Array(virt[:HALF])[k[:4]]
        out.append((Mux(wide, virt[lane], src), wide | inside))
    return out
