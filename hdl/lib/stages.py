"""The valid bits of two register stages in a row, for a stage component that computes across
both (the check stage, the address stage)."""

from __future__ import annotations

from typing import NamedTuple

from amaranth import C, Signal, Value

__all__ = ["StagePair", "stage_pair"]


class StagePair(NamedTuple):
    """``in_ready``: the input's ready; ``take``: the first stage loads its registers this cycle;
    ``move``: the second loads its registers from the first's; ``valid1``, ``valid2``: the
    stages' valid bits (``valid2`` is the output's valid)."""
    in_ready: Value
    take: Value
    move: Value
    valid1: Signal
    valid2: Signal


def stage_pair(m, prefix: str, in_valid, out_ready, stall=C(0, 1), *, decoupled: bool = False) -> StagePair:
    """Two register stages in ``m``: a beat a clock, each beat offered two cycles after it is
    taken; the first stage takes a beat while it is empty, moving on, or the second is empty
    (no bubble between back-to-back beats), and nothing while ``stall``. The caller loads the
    first stage's registers on ``take`` and the second's on ``move``.

    ``decoupled``: the first stage takes a beat only while one of the two is empty, so that
    ``in_ready`` (and the first stage's load enables) never wait on ``out_ready``; the pair then
    passes two beats every three cycles while both stay full, one a cycle otherwise."""
    valid1, valid2 = Signal(name=f"{prefix}1_valid"), Signal(name=f"{prefix}2_valid")
    in_ready, take, move = Signal(name=f"{prefix}_in_ready"), Signal(name=f"{prefix}_take"), \
        Signal(name=f"{prefix}_move")
    m.d.comb += [move.eq(valid1 & (~valid2 | out_ready)),
                 in_ready.eq((~valid1 | ~valid2 | (C(0, 1) if decoupled else out_ready)) & ~stall),
                 take.eq(in_valid & in_ready)]
    with m.If(take):
        m.d.sync += valid1.eq(1)
    with m.Elif(move):
        m.d.sync += valid1.eq(0)
    with m.If(move):
        m.d.sync += valid2.eq(1)
    with m.Elif(valid2 & out_ready):
        m.d.sync += valid2.eq(0)
    return StagePair(in_ready, take, move, valid1, valid2)
