"""Fragment shuffle networks, generated from the model's layout tables.

:class:`LoadShuffle` turns the row buffer into result beat ``beat`` of a load form;
:class:`StoreShuffle` turns an stmatrix source beat into the rows it stores.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import forms
from .params import GROUP_ROWS

__all__ = ["LoadShuffle", "StoreShuffle", "beat_rows"]

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


def _store_plan():
    """Every stmatrix beat ``r`` fills exactly the rows of group ``r`` (8 rows, 128 bytes):
    returns the distinct in-group byte patterns and each store form's pattern index."""
    patterns, of_form = [], {}
    for f in range(len(forms.FORMS)):
        inf = forms.info(f)
        if inf.load:
            continue
        for r in range(inf.nregs):
            rows = inf.table[:, r, :, 0].astype(int).ravel()
            assert set(rows // GROUP_ROWS) == {r} and len(set(zip(rows, inf.table[:, r, :, 1].ravel()))) == 128, \
                "a store beat does not fill exactly one group"
            key = tuple((int(row) - GROUP_ROWS * r, int(b)) for row, b in zip(rows, inf.table[:, r, :, 1].ravel()))
            if key not in patterns:
                patterns.append(key)
            assert of_form.setdefault(f, patterns.index(key)) == patterns.index(key), \
                "the beats of one store form differ in pattern"
    return patterns, of_form


class StoreShuffle(wiring.Component):
    """Combinational: source beat ``beat`` of stmatrix form ``form`` (32 lanes × 32 bits) as
    the 8 rows of the group it stores (``group``; ``need``: those rows as a slot mask), byte
    for byte as the form's table says. Forms that are not stores give no rows.

    Members
    -------
    form : In(form_bits)
    beat : In(range(lanes + 1))
    data : In(ArrayLayout(32, lanes))
    rows : Out(ArrayLayout(128, 8))
    group : Out(range(lanes // 8))
    need : Out(lanes)
    """

    def __init__(self, *, lanes: int = 32, form_bits: int = 7):
        self.lanes = lanes
        super().__init__({
            "form": In(form_bits), "beat": In(range(lanes + 1)),
            "data": In(data.ArrayLayout(unsigned(32), lanes)),
            "rows": Out(data.ArrayLayout(unsigned(_ROW_BITS), GROUP_ROWS)),
            "group": Out(range(lanes // GROUP_ROWS)), "need": Out(lanes)})

    def elaborate(self, platform):
        m = Module()
        patterns, of_form = _store_plan()
        pat_is = [Signal(name=f"pat{k}") for k in range(len(patterns))]
        with m.Switch(self.form):
            for f, k in of_form.items():
                with m.Case(f):
                    m.d.comb += pat_is[k].eq(1)
                    with m.Switch(self.beat):
                        for r in range(forms.info(f).nregs):
                            with m.Case(r):
                                m.d.comb += [self.group.eq(r),
                                             self.need.eq(((1 << GROUP_ROWS) - 1) << (GROUP_ROWS * r))]
        flat = Cat(*[self.data[t] for t in range(self.lanes)])
        source = [{} for _ in range(GROUP_ROWS * 16)]   # group byte -> lane byte -> patterns
        for k, pattern in enumerate(patterns):
            for i, (row, byte) in enumerate(pattern):
                source[16 * row + byte].setdefault(i, []).append(k)
        for j in range(GROUP_ROWS):
            for byte in range(16):
                acc = 0
                for i, ks in source[16 * j + byte].items():
                    acc = acc | Mux(Cat(*[pat_is[k] for k in ks]).any(), flat[8 * i:8 * i + 8], 0)
                m.d.comb += self.rows[j][8 * byte:8 * byte + 8].eq(acc)
        return m
