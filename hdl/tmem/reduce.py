"""The reduction of a ``tcgen05.ld.red``: the min or max of every thread's destination
registers, folded as the register beats leave.

Latency: three register stages. A ``fold`` (a register beat taken) registers the beat's two
inputs as order keys with their flags (stage 1); the next cycle the better of the two is
registered (stage 2, the pair); the cycle after, that one is compared with the kept value and
the running value is updated (stage 3). Each stage is one comparator deep at most, and the
loop that carries the kept value holds one comparator and one 2:1 select, so it is not the
unit's longest path. ``redval`` is combinational from the kept value, so it is whole
:attr:`TmemReduce.LATENCY` cycles after the last register beat is taken. ``clear`` (a new
instruction) starts over and drops the folds still in stages 1 and 2 (the instruction
before's).

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
    # a signal: replicated, an expression would be copied 31 times when the design is lowered
    invert = Signal(name=f"key_{name}_invert")
    f32 = red_type == RedType.F32
    signed_ = f32 | (red_type == RedType.S32)
    m.d.comb += [invert.eq(f32 & v[31]), k.eq(Cat(v[:31] ^ invert.replicate(31), v[31] ^ signed_))]
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
    LATENCY = 3

    def __init__(self):
        super().__init__({
            "beat": In(beat_layout()), "two": In(1), "fold": In(1), "clear": In(1),
            "red_max": In(1), "red_type": In(RedType), "abs": In(1), "nan": In(1),
            "redval": Out(data.ArrayLayout(unsigned(32), LANES)),
        })

    def elaborate(self, platform):
        m = Module()
        # the type's flags as signals: each feeds every lane
        f32, signed_ = Signal(name="red_f32"), Signal(name="red_signed")
        m.d.comb += [f32.eq(self.red_type == RedType.F32), signed_.eq(f32 | (self.red_type == RedType.S32))]

        # the keys are kept inverted for a .max, so that the better of two is always the less
        # (no XOR after the comparator); equal keys are equal values, so taking either is the same
        flip = self.red_max.replicate(32)

        # stages 1 and 2 hold a fold (not one of the instruction before a clear)
        pend1, pend2 = Signal(name="red_pend1"), Signal(name="red_pend2")
        m.d.sync += [pend1.eq(self.fold & ~self.clear), pend2.eq(pend1 & ~self.clear)]
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
            # stage 2: the better of the pair (the second input when the first is no value)
            s2 = Signal(data.StructLayout({"key": 32, "ok": 1, "nan": 1}), name=f"red_s2_{t}", reset_less=True)
            second = Signal(name=f"second{t}")
            m.d.comb += second.eq(s1.ok1 & (~s1.ok0 | (s1.key1 < s1.key0)))
            with m.If(pend1):
                m.d.sync += [s2.key.eq(Mux(second, s1.key1, s1.key0)), s2.ok.eq(s1.ok0 | s1.ok1),
                             s2.nan.eq(s1.nan)]
            # stage 3: against the kept key
            # the key kept so far (inverted for .max); no reset: read only once ``seen``
            best = Signal(32, name=f"best{t}", reset_less=True)
            seen = Signal(name=f"seen{t}")          # a non-NaN value was kept
            nan_in = Signal(name=f"nan_in{t}")      # a NaN input was seen
            take = Signal(name=f"take{t}")
            m.d.comb += take.eq(s2.ok & (~seen | (s2.key < best)))
            # a fold in a clear's cycle may still write the kept key: the clear empties ``seen``,
            # so that key is never read (and the key's enables wait on no clear)
            with m.If(pend2 & take):
                m.d.sync += best.eq(s2.key)
            with m.If(self.clear):
                m.d.sync += [seen.eq(0), nan_in.eq(0)]
            with m.Elif(pend2):
                m.d.sync += [seen.eq(seen | take), nan_in.eq(nan_in | s2.nan)]
            # the kept value from its key (the key's transform is its own inverse but for the
            # sign bit, read back first)
            key = best ^ flip
            sign, invert = Signal(name=f"red_sign{t}"), Signal(name=f"red_invert{t}")
            m.d.comb += [sign.eq(key[31] ^ signed_), invert.eq(f32 & sign)]
            value = Cat(key[:31] ^ invert.replicate(31), sign)
            m.d.comb += self.redval[t].eq(Mux(nan_in & (self.nan | ~seen), CANONICAL_NAN, value))
        return m
