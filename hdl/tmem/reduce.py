"""The reduction of a ``tcgen05.ld.red``: the min or max of every thread's destination
registers, folded as the register beats leave.

Latency: two register stages. A ``fold`` (a register beat taken) registers the beat's two
inputs as order keys with their flags (stage 1); the next cycle they are compared with the
kept value and with each other, all at once, and the running value is updated (stage 2, one
comparator deep). ``redval`` is combinational from it, so it is whole :attr:`TmemReduce.LATENCY`
cycles after the last register beat is taken. ``clear`` (a new instruction) starts over and
drops a fold still in stage 1 (the instruction before's).

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
    """The running min / max of every thread, kept as order keys (:func:`order_key`; inverted for
    a .max, so that the better key is always the less).

    Members
    -------
    beat : In(beat_layout())
        The register beat leaving; ``two``: its second register is present.
    fold, clear : In(1)
    red_max, abs, nan : In(1)
    red_type : In(RedType)
    redval : Out(ArrayLayout(unsigned(32), LANES))
    """

    #: cycles from a fold to ``redval`` holding it
    LATENCY = 2

    def __init__(self):
        super().__init__({
            "beat": In(beat_layout()), "two": In(1), "fold": In(1), "clear": In(1),
            "red_max": In(1), "red_type": In(RedType), "abs": In(1), "nan": In(1),
            "redval": Out(data.ArrayLayout(unsigned(32), LANES)),
        })

    def elaborate(self, platform):
        m = Module()
        f32 = self.red_type == RedType.F32
        signed_ = f32 | (self.red_type == RedType.S32)

        # the keys are kept inverted for a .max, so that the better of two is always the less
        # (no XOR after the comparator); equal keys are equal values, so taking either is the same
        flip = self.red_max.replicate(32)

        def better(new_key, old_key):
            return new_key < old_key
        # stage 1 holds a fold (not one of the instruction before a clear)
        pend = Signal(name="red_pend")
        m.d.sync += pend.eq(self.fold & ~self.clear)
        for t in range(LANES):
            # stage 1: the inputs' keys, whether each is a value (present, not NaN) and whether
            # either is a NaN
            s1 = Signal(data.StructLayout({"key0": 32, "key1": 32, "ok0": 1, "ok1": 1, "nan": 1}),
                        name=f"red_s1_{t}", reset_less=True)
            keys, ok, nan_now = [], [], []
            for j in (0, 1):
                val = self.beat[j][t]
                mag = Signal(32, name=f"in{t}_{j}")
                m.d.comb += mag.eq(Mux(f32 & self.abs, val & 0x7FFFFFFF, val))
                isnan = f32 & (mag[23:31] == 0xFF) & (mag[:23] != 0)
                present = 1 if j == 0 else self.two
                keys.append(order_key(m, mag, self.red_type, f"{t}_{j}_in") ^ flip)
                ok.append(present & ~isnan)
                nan_now.append(present & isnan)
            with m.If(self.fold):
                m.d.sync += [s1.key0.eq(keys[0]), s1.key1.eq(keys[1]), s1.ok0.eq(ok[0]), s1.ok1.eq(ok[1]),
                             s1.nan.eq(nan_now[0] | nan_now[1])]
            # stage 2: against the kept key
            # the key kept so far (inverted for .max); no reset: read only once ``seen``
            best = Signal(32, name=f"best{t}", reset_less=True)
            seen = Signal(name=f"seen{t}")          # a non-NaN value was kept
            nan_in = Signal(name=f"nan_in{t}")      # a NaN input was seen
            take0, take1 = Signal(name=f"take{t}_0"), Signal(name=f"take{t}_1")
            m.d.comb += [take0.eq(s1.ok0 & (~seen | better(s1.key0, best))),
                         # the second input against what the first fold kept
                         take1.eq(s1.ok1 & (~(seen | take0) | Mux(take0, better(s1.key1, s1.key0),
                                                                  better(s1.key1, best))))]
            # the kept key follows every fold, a clear's included: a clear empties ``seen``, so
            # that key is never read (and its 1,024 enables wait on a register, not on the clear)
            with m.If(pend):
                m.d.sync += best.eq(Mux(take1, s1.key1, Mux(take0, s1.key0, best)))
            with m.If(self.clear):
                m.d.sync += [seen.eq(0), nan_in.eq(0)]
            with m.Elif(pend):
                m.d.sync += [seen.eq(seen | take0 | take1), nan_in.eq(nan_in | s1.nan)]
            # the kept value from its key (the key's transform is its own inverse but for the
            # sign bit, read back first)
            key = best ^ flip
            sign = key[31] ^ signed_
            value = Cat(key[:31] ^ (f32 & sign).replicate(31), sign)
            m.d.comb += self.redval[t].eq(Mux(nan_in & (self.nan | ~seen), CANONICAL_NAN, value))
        return m
