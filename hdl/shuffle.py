"""Fragment shuffle networks, generated from the model's layout tables.

:class:`LoadShuffle` turns the row buffer into result beat ``beat`` of a load form;
:class:`StoreShuffle` turns an stmatrix source beat into the rows it stores.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import forms
from .mux import mux_tree
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
    mask of slots it reads. For forms that are not loads ``out`` is unspecified.

    Built in two stages from the tables (:func:`_plan`), each a binary multiplexer tree: a
    window of slots at the beat's matrix in the chosen buffer (one tree picks both), then
    one of the few distinct byte patterns.

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
        base_idx = Signal(range(len(bases)))
        pat = Signal(range(len(patterns)))
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
                                m.d.comb += [base_idx.eq(bases.index(b)), pat.eq(k),
                                             self.need.eq(beat_rows(inf, r))]
        # window row w: slot base + w of the buffer, over the bases some pattern reads it
        # from (a base it is never read from repeats a used one, so the tree shrinks)
        used = {w: set() for w in range(_WINDOW)}
        for b, k in cases.values():
            for row, _ in patterns[k]:
                used[row].add(b)
        nb = 1 << (len(bases) - 1).bit_length()
        sel = Cat(base_idx, self.buf) if self.buffers > 1 else base_idx
        window = []
        for w in range(_WINDOW):
            options = []
            for buf in range(self.buffers):
                slots = {b: self.rows[buf][b + w] for b in sorted(used[w])}
                first = next(iter(slots.values()), None)
                per = [slots.get(b, first) for b in bases]
                options += per + [per[-1]] * (nb - len(per))
            row = Signal(_ROW_BITS, name=f"window{w}")
            if options[0] is not None:
                m.d.comb += row.eq(mux_tree(sel, options))
            window.append(row)
        byte_of = {}                    # one Value per window byte, so equal options merge

        def src(row, byte):
            if (row, byte) not in byte_of:
                byte_of[(row, byte)] = window[row][8 * byte:8 * byte + 8]
            return byte_of[(row, byte)]

        parts = [mux_tree(pat, [src(*pattern[i]) for pattern in patterns]) for i in range(4 * self.lanes)]
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
    for byte as the form's table says. For forms that are not stores ``need`` is zero.

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
        pat = Signal(range(len(patterns)))
        with m.Switch(self.form):
            for f, k in of_form.items():
                with m.Case(f):
                    m.d.comb += pat.eq(k)
                    with m.Switch(self.beat):
                        for r in range(forms.info(f).nregs):
                            with m.Case(r):
                                m.d.comb += [self.group.eq(r),
                                             self.need.eq(((1 << GROUP_ROWS) - 1) << (GROUP_ROWS * r))]
        flat = Cat(*[self.data[t] for t in range(self.lanes)])
        lane_byte = [flat[8 * i:8 * i + 8] for i in range(4 * self.lanes)]
        where = [{(row, byte): i for i, (row, byte) in enumerate(p)} for p in patterns]
        for j in range(GROUP_ROWS):
            for byte in range(16):
                m.d.comb += self.rows[j][8 * byte:8 * byte + 8].eq(
                    mux_tree(pat, [lane_byte[w[(j, byte)]] for w in where]))
        return m
