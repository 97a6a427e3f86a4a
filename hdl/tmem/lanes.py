"""The lane placement shared by a quadrant's load and store paths.

A 16-lane form (16x64b, 16x128b, 16x256b, 16x32bx2) reaches lanes ``lane_off`` …
``lane_off + 15`` of the quadrant, where ``lane_off`` is taddr's lane from the quadrant's
first (0 … 16); its schedule numbers them 0 … 15 (*virtual* lanes). 32x32b spans all 32 lanes
from the first (lane_off 0). Combinational helpers, no state: a logarithmic shifter by whole
lanes, one stage of two-way multiplexers per bit of the offset (about 90 lane multiplexers a
word instead of 16 lanes × 16 for a 17-way multiplexer a lane), never a shifter over the bits
of the word (a barrel shifter over 1,024 bits is what a variable word select becomes in
synthesis and in proofs).
"""

from __future__ import annotations

from amaranth import Const, Mux, Signal, Value

from .records import LANES

__all__ = ["to_virtual", "to_physical", "HALF", "OFFSETS"]

HALF = LANES // 2
#: The lane offsets a 16-lane form can have.
OFFSETS = HALF + 1
#: Bits of a lane offset (0 … 16).
OFFSET_BITS = (OFFSETS - 1).bit_length()


def _named(m, values, name):
    """Each of a stage's new values (``None`` and the inputs passed on stay) as a signal: a lane
    feeds two multiplexers of the next stage, and an expression would be copied into both
    when the design is lowered (2 ** stages copies)."""
    out = []
    for k, v in enumerate(values):
        if v is None or isinstance(v, (Const, Signal)):
            out.append(v)
            continue
        sig = Signal(len(Value.cast(v)), name=f"{name}{k}")
        m.d.comb += sig.eq(v)
        out.append(sig)
    return out


def to_virtual(m, phys, lane_off, name="to_virtual"):
    """Virtual lane ``k`` of a word read from the memory (``phys``: its 32 lanes): physical
    lane ``lane_off + k`` for k < 16 (the 16-lane forms use these only); lanes 16 … 31 are
    32x32b's, unmoved. ``lane_off`` past 16 gives lanes of no use. Each stage's lanes are
    signals of ``m`` named ``name``."""
    x = list(phys)
    # highest bit first: after the stage of bit i, the lower bits move at most 2**i - 1 more
    for i in reversed(range(OFFSET_BITS)):
        step, need = 1 << i, HALF + (1 << i) - 1
        moved = [Mux(lane_off[i], x[k + step], x[k]) if k < need and k + step < LANES else None
                 for k in range(LANES)]
        x = [x[k] if v is None else v for k, v in enumerate(_named(m, moved, f"{name}_s{i}_"))]
    return x[:HALF] + list(phys[HALF:])


def to_physical(m, virt, wide, lane_off, name="to_physical"):
    """Physical lane ``L`` of a word to write (``virt``: per virtual lane): virtual lane
    ``L − lane_off`` of a 16-lane form, or lane ``L`` itself when ``wide`` (32x32b). Returns
    (value, reached) per lane, ``reached``: the form reaches the lane. Each stage's lanes are
    signals of ``m`` named ``name``."""
    x = list(virt[:HALF]) + [None] * HALF
    reached = [Const(1, 1)] * HALF + [Const(0, 1)] * HALF
    # lowest bit first: after the stage of bit i, lanes up to 15 + 2**(i+1) - 1 can be reached
    for i in range(OFFSET_BITS):
        step, top = 1 << i, min(LANES, HALF + (2 << i) - 1)
        nx, nr = [], []
        for k in range(LANES):
            if k >= top:
                nx.append(None)
                nr.append(Const(0, 1))
            elif k - step < 0 or x[k - step] is None:
                nx.append(x[k])
                nr.append(reached[k] & ~lane_off[i])
            elif x[k] is None:
                nx.append(x[k - step])
                nr.append(reached[k - step] & lane_off[i])
            else:
                nx.append(Mux(lane_off[i], x[k - step], x[k]))
                nr.append(Mux(lane_off[i], reached[k - step], reached[k]))
        x, reached = _named(m, nx, f"{name}_s{i}_"), _named(m, nr, f"{name}_s{i}_reached")
    inside = [(r & (lane_off <= HALF)) for r in reached]
    return [(Mux(wide, virt[k], x[k] if x[k] is not None else 0), wide | inside[k]) for k in range(LANES)]
