"""Owed store beats: the source beats of refused stmatrix instructions, taken and dropped."""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..pipeline import forms

__all__ = ["StoreOwed", "MAX_STORE_BEATS", "OWED_BEATS"]

#: The most source beats one stmatrix has (``.x4``).
MAX_STORE_BEATS = max(forms.info(f).nregs for f in range(len(forms.FORMS))
                      if forms.FORMS[f].op == "stmatrix")
#: The most beats the unit may owe at once: a refused stmatrix waits at the take while its
#: beats would not fit (a producer that holds them back then stalls the instructions behind).
OWED_BEATS = 4 * MAX_STORE_BEATS - 1


class StoreOwed(wiring.Component):
    """The beats the store port owes to refused stmatrix instructions, prefix ``f_owed_``.

    A producer sends every stmatrix's source beats, refused or not, in instruction order
    (docs/ports.md). The bank stage takes a good stmatrix's beats; this component takes a
    refused one's and drops them, so that each stmatrix gets its own beats whatever the
    verdict. The owed beats are counted in two parts: ``ahead`` of the stmatrix the bank stage
    holds (older than it: they go first, and the bank stage takes no beat until they are
    taken), and ``behind`` it (younger, or owed while the bank stage holds no store): they are
    taken once the bank stage wants no beat. A store taken into the bank stage finds every
    beat owed so far ahead of it.

    Latency: a beat is taken in the cycle it is offered, when it is owed and its turn.
    This implementation assumes one take a cycle (a pair of passes is a load) and that a
    refused stmatrix is taken only with ``room``.

    Members
    -------
    refused : In(1)
        A refused stmatrix leaves the pass queue this cycle, owing ``refused_beats`` beats.
    refused_beats : In(range(MAX_STORE_BEATS + 1))
    taken : In(1)
        A stmatrix is taken into the bank stage this cycle (every beat owed so far is older).
    wants : In(1)
        The bank stage holds a stmatrix that still takes beats.
    beat : In(1)
        A beat is offered on the store port.
    ahead : Out(1)
        Beats owed ahead of the bank stage's stmatrix remain: the bank stage takes none.
    behind : Out(1)
        Beats owed behind the bank stage's stmatrix remain (the next stmatrix's first beat is
        not its own).
    drain : Out(1)
        The store port's ready for an owed beat (never with the bank stage's own).
    room : Out(1)
        A refused stmatrix of ``MAX_STORE_BEATS`` beats may be taken.
    """

    def __init__(self):
        super().__init__({"refused": In(1), "refused_beats": In(range(MAX_STORE_BEATS + 1)), "taken": In(1),
                          "wants": In(1), "beat": In(1),
                          "ahead": Out(1), "behind": Out(1), "drain": Out(1), "room": Out(1)})
        # the counts, named here for the proof's invariant (formal/specs.py)
        self.counts = {"ahead": Signal(range(OWED_BEATS + 1), name="f_owed_ahead"),
                       "behind": Signal(range(OWED_BEATS + 1), name="f_owed_behind")}

    def elaborate(self, platform):
        m = Module()
        ahead, behind = self.counts["ahead"], self.counts["behind"]
        from_ahead, from_behind = Signal(), Signal()
        # whether any beat is owed ahead / behind: registers (the bank stage's go-ahead for a
        # store waits on them), set from the counts' next values
        ahead_any, behind_any = Signal(name="f_owed_ahead_any"), Signal(name="f_owed_behind_any")
        m.d.comb += [self.ahead.eq(ahead_any), self.behind.eq(behind_any),
                     self.drain.eq(self.ahead | (self.behind & ~self.wants)),
                     from_ahead.eq(self.beat & self.ahead),
                     from_behind.eq(self.beat & ~self.ahead & self.behind & ~self.wants)]
        left_ahead, left_behind = ahead - from_ahead, behind - from_behind
        # `room` (the counts leave a refused stmatrix's beats free) is a register: the take
        # waits on it, so its sum and comparison are made a cycle ahead, from the counts'
        # next values (a take moves beats from behind to ahead and keeps the sum)
        room = Signal(init=1, name="f_owed_room")
        left = left_ahead + left_behind
        limit = OWED_BEATS - MAX_STORE_BEATS
        m.d.comb += self.room.eq(room)
        m.d.sync += room.eq(Mux(self.refused & ~self.taken, left + self.refused_beats <= limit, left <= limit))
        # the take is the cycle's last decision: the sums do not wait for it, it picks one
        with m.If(self.taken):
            m.d.sync += [ahead.eq(left_ahead + left_behind), behind.eq(0),
                         ahead_any.eq((left_ahead != 0) | (left_behind != 0)), behind_any.eq(0)]
        with m.Elif(self.refused):
            m.d.sync += [ahead.eq(left_ahead), behind.eq(left_behind + self.refused_beats),
                         ahead_any.eq(left_ahead != 0), behind_any.eq((left_behind != 0) | (self.refused_beats != 0))]
        with m.Else():
            m.d.sync += [ahead.eq(left_ahead), behind.eq(left_behind),
                         ahead_any.eq(left_ahead != 0), behind_any.eq(left_behind != 0)]
        return m
