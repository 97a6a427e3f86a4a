"""The reduction of a ``tcgen05.ld.red``: the min or max of every thread's destination
registers, folded as the register beats leave.

Latency: each ``fold`` (a register beat taken) updates the running value at the clock edge (its
two registers compared with the kept value and with each other at once, one comparator deep);
``redval`` is combinational from it, so it is whole the cycle after the last register beat.
``clear`` (a new instruction) starts over.

The reduction as defined in docs/ARCHITECTURE.md: .u32 / .s32 compare as integers; .f32
orders −0.0 below +0.0, skips NaN inputs (a NaN result only when every input is NaN, or with
.NaN when any is), and returns :data:`~tensorlsu.hdl.tmem.records.CANONICAL_NAN` for a NaN
result; .abs clears the sign bit of every input first.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .records import CANONICAL_NAN, LANES, RedType, beat_layout

__all__ = ["TmemReduce", "order_key"]


def order_key(m, v, red_type, name):
    """An unsigned key that orders values as the reduction's type does (f32: NaN aside,
    −0.0 below +0.0; s32 by sign; u32 as is): the sign bit flipped for f32 and s32, and the
    other bits of a negative f32 inverted."""
    k = Signal(32, name=f"key_{name}")
    f32 = red_type == RedType.F32
    signed_ = f32 | (red_type == RedType.S32)
    m.d.comb += k.eq(Cat(v[:31] ^ (f32 & v[31]).replicate(31), v[31] ^ signed_))
    return k


class TmemReduce(wiring.Component):
    """Members
    -------
    beat : In(beat_layout())
        The register beat leaving; ``two``: its second register is present.
    fold, clear : In(1)
    red_max, abs, nan : In(1)
    red_type : In(RedType)
    redval : Out(ArrayLayout(unsigned(32), LANES))
    """

    def __init__(self):
        super().__init__({
            "beat": In(beat_layout()), "two": In(1), "fold": In(1), "clear": In(1),
            "red_max": In(1), "red_type": In(RedType), "abs": In(1), "nan": In(1),
            "redval": Out(data.ArrayLayout(unsigned(32), LANES)),
        })

    def elaborate(self, platform):
        m = Module()
        f32 = self.red_type == RedType.F32

        def better(new_key, old_key):
            # equal keys are equal values, so taking either is the same
            return (new_key < old_key) ^ self.red_max
        for t in range(LANES):
            best = Signal(32, name=f"best{t}")      # the value kept so far
            seen = Signal(name=f"seen{t}")          # a non-NaN value was kept
            nan_in = Signal(name=f"nan_in{t}")      # a NaN input was seen
            # the two inputs against the kept value and against each other, all at once (not
            # one fold after the other): one comparator deep
            mags, keys, ok, nan_now = [], [], [], []
            for j in (0, 1):
                val = self.beat[j][t]
                mag = Signal(32, name=f"in{t}_{j}")
                m.d.comb += mag.eq(Mux(f32 & self.abs, val & 0x7FFFFFFF, val))
                isnan = f32 & (mag[23:31] == 0xFF) & (mag[:23] != 0)
                present = 1 if j == 0 else self.two
                mags.append(mag)
                keys.append(order_key(m, mag, self.red_type, f"{t}_{j}_in"))
                ok.append(present & ~isnan)
                nan_now.append(present & isnan)
            kept_key = order_key(m, best, self.red_type, f"{t}_kept")

            take0, take1 = Signal(name=f"take{t}_0"), Signal(name=f"take{t}_1")
            m.d.comb += [take0.eq(ok[0] & (~seen | better(keys[0], kept_key))),
                         # the second input against what the first fold kept
                         take1.eq(ok[1] & (~(seen | take0) | Mux(take0, better(keys[1], keys[0]),
                                                                  better(keys[1], kept_key))))]
            cur = (Mux(take1, mags[1], Mux(take0, mags[0], best)), seen | take0 | take1,
                   nan_in | nan_now[0] | nan_now[1])
            with m.If(self.clear):
                m.d.sync += [seen.eq(0), nan_in.eq(0)]
            with m.Elif(self.fold):
                m.d.sync += [best.eq(cur[0]), seen.eq(cur[1]), nan_in.eq(cur[2])]
            m.d.comb += self.redval[t].eq(Mux(nan_in & (self.nan | ~seen), CANONICAL_NAN, best))
        return m
