"""Fragment shuffle networks, generated from the model's layout tables.

:class:`LoadShuffle` turns the row buffer into result beat ``beat`` of a load form;
:func:`store_shuffle` is the inverse wiring used by stmatrix (beats into rows).
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import forms

__all__ = ["LoadShuffle", "beat_rows"]

_ROW_BITS = 128


def beat_rows(inf: forms.FormInfo, r: int) -> int:
    """Mask of the rows register beat ``r`` of a form touches."""
    return sum(1 << int(x) for x in set(inf.table[:, r, :, 0].flat))


def _plan():
    """Split every (load form, beat) into a row window and a pattern within the window.

    Every beat reads one run of slots (the rows of one matrix, or the chunks
    :func:`tensorlsu.hdl.forms._passes` placed together), so its layout is "window of slots
    starting at ``base``" followed by a fixed byte permutation of that window. Only a handful of distinct
    permutations exist across all forms, which keeps the network small: a row-window
    multiplexer, then a per-byte multiplexer over the distinct patterns.
    """
    patterns, cases = [], {}
    for f in range(len(forms.FORMS)):
        inf = forms.info(f)
        if not inf.load:
            continue
        for r in range(inf.nregs):
            rows = inf.table[:, r, :, 0].astype(int)
            base = (int(rows.min()) // 8) * 8
            local = [(int(row) - base, int(byte)) for row, byte in
                     zip(rows.flat, inf.table[:, r, :, 1].flat)]
            assert max(x for x, _ in local) < _WINDOW, "a beat reads beyond its window"
            key = tuple(local)
            if key not in patterns:
                patterns.append(key)
            cases[(f, r)] = (base, patterns.index(key))
    return patterns, cases


_WINDOW = 32  # slots one beat may read (a wmma .c .f64 row-major beat reads all 32)


class LoadShuffle(wiring.Component):
    """Combinational: ``out`` is result beat ``beat`` of load form ``form`` (32 lanes × 32
    bits) taken from the row slots of buffer ``buf``, byte for byte as the form's table says
    (:class:`tensorlsu.hdl.forms.FormInfo`, from :mod:`tensorlsu.sim.layouts`); ``need`` is the
    mask of slots it reads. Forms that are not loads give zero.

    Built in two stages from the tables (:func:`_plan`): a window of slots at the beat's
    matrix in the chosen buffer (one multiplexer picks both), then one of the few distinct
    byte patterns. Patterns that take an output byte from the same window byte share its
    select, so each output byte multiplexes only its distinct sources.

    Members
    -------
    form : In(form_bits)
    beat : In(range(lanes + 1))
    buf : In(range(buffers))
    rows : In(ArrayLayout(ArrayLayout(128, lanes), buffers))
    out : Out(32 * lanes)
    need : Out(lanes)
    """

    def __init__(self, *, lanes: int = 32, form_bits: int = 7, buffers: int = 1):
        self.lanes, self.buffers = lanes, buffers
        super().__init__({
            "form": In(form_bits), "beat": In(range(lanes + 1)), "buf": In(range(max(2, buffers))),
            "rows": In(data.ArrayLayout(data.ArrayLayout(unsigned(_ROW_BITS), lanes), buffers)),
            "out": Out(32 * lanes), "need": Out(lanes)})

    def elaborate(self, platform):
        m = Module()
        patterns, cases = _plan()
        bases = sorted({b for b, _ in cases.values()})
        base_is = {b: Signal(name=f"base{b}") for b in bases}     # one-hot window base
        pat_is = [Signal(name=f"pat{k}") for k in range(len(patterns))]  # one-hot pattern
        with m.Switch(self.form):
            for f in range(len(forms.FORMS)):
                inf = forms.info(f)
                if not inf.load:
                    continue
                with m.Case(f):
                    with m.Switch(self.beat):
                        for r in range(inf.nregs):
                            with m.Case(r):
                                b, k = cases[(f, r)]
                                m.d.comb += [base_is[b].eq(1), pat_is[k].eq(1),
                                             self.need.eq(beat_rows(inf, r))]
        # window row w only needs the (buffer, base) pairs some pattern reads it from
        used = {w: set() for w in range(_WINDOW)}
        for b, k in cases.values():
            for row, _ in patterns[k]:
                used[row].add(b)
        pick = {}
        for buf in range(self.buffers):
            for b in bases:
                sel = Signal(name=f"pick_buf{buf}_base{b}")
                m.d.comb += sel.eq(base_is[b] & (self.buf == buf))
                pick[(buf, b)] = sel
        window = []
        for w in range(_WINDOW):
            acc = 0
            for buf in range(self.buffers):
                for b in sorted(used[w]):
                    acc = acc | Mux(pick[(buf, b)], self.rows[buf][b + w], 0)
            row = Signal(_ROW_BITS, name=f"window{w}")
            m.d.comb += row.eq(acc)
            window.append(row)
        any_of = {}                     # select of "pattern in this set", shared by bytes

        def select(ks):
            if ks not in any_of:
                sel = Signal(name="pats_" + "_".join(map(str, sorted(ks))))
                m.d.comb += sel.eq(Cat(*[pat_is[k] for k in sorted(ks)]).any())
                any_of[ks] = sel
            return any_of[ks]

        parts = []
        for i in range(4 * self.lanes):
            sources = {}
            for k, pattern in enumerate(patterns):
                sources.setdefault(pattern[i], set()).add(k)
            choice = 0
            for (row, byte), ks in sources.items():
                choice = choice | Mux(select(frozenset(ks)), window[row][8 * byte:8 * byte + 8], 0)
            parts.append(choice)
        m.d.comb += self.out.eq(Cat(*parts))
        return m
