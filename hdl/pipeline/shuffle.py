"""Fragment shuffle networks, generated from the model's layout tables.

:class:`LoadShuffle` turns the row buffer into result beat ``beat`` of a load form (its
selects, :class:`ShuffleSelect`, and its network, :class:`ShuffleNetwork`, the window it reads,
:class:`ShuffleWindow`, within it; each also apart);
:class:`StoreShuffle` turns an stmatrix source beat into the rows it stores.
"""

from __future__ import annotations

import functools
from amaranth import Cat, Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.modular import add_mod
from ..lib.mux import mux_tree
from ..params import GROUP_ROWS, ROW_BITS, ROW_BYTES
from . import forms
from .forms import BLOCK

__all__ = ["LoadShuffle", "ShuffleNetwork", "ShuffleSelect", "ShuffleWindow", "StoreShuffle", "beat_rows", "beat_select",
           "beat_select_layout", "place_select", "shuffle_select_layout", "store_pattern"]

_ROW_WORDS = ROW_BITS // 32
_WINDOW = forms.SLOTS  # slots one beat may read (a wmma .c .f64 row-major beat reads all 32)


def beat_rows(inf: forms.FormInfo, r: int) -> int:
    """Mask of the rows register beat ``r`` of a form touches."""
    return sum(1 << s for s in inf.beat_slots(r))


def _merged_base(b: int, used: set[int], nb: int) -> int:
    """The base a tree leaf ``b`` no pattern reads from repeats: ``b`` with its low bits
    cleared until it is a used one, so neighbouring leaves are the same and the tree merges
    them."""
    for bits in range(nb.bit_length()):
        if (b >> bits << bits) in used:
            return b >> bits << bits
    return min(used)


def _beat_key(inf: forms.FormInfo, r: int) -> tuple[int, int, tuple]:
    """Beat ``r`` of load form ``inf``: its first block, its span of blocks and the (window
    row, byte) each result byte reads, counted from that block."""
    first, span = inf.beat_span(r)
    base = first * BLOCK
    key = tuple((int(row) - base, int(byte)) for row, byte in
                zip(inf.table[:, r, :, 0].flat, inf.table[:, r, :, 1].flat))
    assert max(x for x, _ in key) < span * BLOCK, "a beat reads beyond its span"
    return first, span, key


@functools.cache
def _plan():
    """Split every (load form, beat) into a block of the row buffer, a word rotation and a
    pattern from there.

    Every beat reads one run of slots (the rows of one matrix, or the chunks
    :func:`tensorlsu.hdl.pipeline.forms._passes` placed together) within an aligned span of blocks
    (:meth:`~tensorlsu.hdl.pipeline.forms.FormInfo.beat_span`), so its layout is "window of slots from
    block ``first``" followed by a fixed byte permutation of that window. Only a handful of
    distinct permutations exist across all forms, and several of them are another one read
    4, 8 or 12 bytes further along each row (the second beat of an m16n16 .trans, the high
    word of a .f64): those read the window rotated by that many bytes instead, which halves
    the options of the per-byte multiplexer. Returns the patterns (each a list of (window
    row, byte)), the block span and the rotations (in words) of each, (first block,
    pattern, rotation) per (form, beat), and (pattern, rotation) per beat key
    (:func:`_beat_key`).
    """
    keys, spans, beats = [], [], {}
    for f in range(len(forms.FORMS)):
        inf = forms.info(f)
        if not inf.load:
            continue
        for r in range(inf.nregs):
            first, span, key = _beat_key(inf, r)
            if key not in keys:
                keys.append(key)
                spans.append(span)
            spans[keys.index(key)] = max(spans[keys.index(key)], span)
            beats[(f, r)] = (first, key)
    # in order of appearance, a pattern that is an earlier unrotated one read `rot` words
    # along becomes that one with a rotation
    patterns, pspans, rots, as_base = [], [], [], {}
    for key, span in zip(keys, spans):
        for rot in range(1, _ROW_WORDS):
            shifted = tuple((row, (byte - 4 * rot) % ROW_BYTES) for row, byte in key)
            if shifted in patterns:
                k = patterns.index(shifted)
                as_base[key] = (k, rot)
                rots[k].add(rot)
                pspans[k] = max(pspans[k], span)
                break
        else:
            as_base[key] = (len(patterns), 0)
            patterns.append(key)
            pspans.append(span)
            rots.append({0})
    cases = {fr: (first, *as_base[key]) for fr, (first, key) in beats.items()}
    return patterns, pspans, rots, cases, as_base


def beat_select(inf: forms.FormInfo, r: int) -> dict:
    """The selects of beat ``r`` of load form ``inf`` before they are placed on the ring
    (:func:`beat_select_layout`): its first block counted from the instruction's, its pattern
    and its rotation; all 0 past the form's beats or for a store."""
    if not inf.load or not 0 <= r < inf.nregs:
        return {"first": 0, "pat": 0, "rot": 0}
    first, _, key = _beat_key(inf, r)
    pat, rot = _plan()[4][key]
    return {"first": first, "pat": pat, "rot": rot}


def _max_first() -> int:
    """The furthest first block (from the instruction's) any load beat reads from."""
    return max(b for b, _, _ in _plan()[3].values())


def shuffle_select_layout(blocks: int) -> data.StructLayout:
    """What the load shuffle's network needs of a beat: its first ring block (``base``), its
    byte pattern and its word rotation (:func:`_plan`)."""
    patterns = _plan()[0]
    return data.StructLayout({"base": range(blocks), "pat": range(len(patterns)), "rot": range(_ROW_WORDS)})


def beat_select_layout() -> data.StructLayout:
    """A beat's selects before they are placed on the ring (:func:`beat_select`): ``first``,
    its first block counted from the instruction's first, instead of ``base``."""
    patterns = _plan()[0]
    return data.StructLayout({"first": range(_max_first() + 1), "pat": range(len(patterns)),
                              "rot": range(_ROW_WORDS)})


def place_select(m: Module, unplaced, start, blocks: int, name: str):
    """The network's selects (:func:`shuffle_select_layout`) of a beat whose unplaced selects
    are ``unplaced`` (:func:`beat_select_layout`), of an instruction starting at ring block
    ``start``. The start's successors on the ring are summed beside whatever computes
    ``unplaced``, which then picks one (no adder after it)."""
    placed = Signal(shuffle_select_layout(blocks), name=name)
    successors = [add_mod(start, k, blocks) for k in range(_max_first() + 1)]
    m.d.comb += [placed.pat.eq(unplaced.pat), placed.rot.eq(unplaced.rot),
                 placed.base.eq(mux_tree(unplaced.first, successors))]
    return placed


def _check_blocks(lanes: int, blocks: int) -> None:
    """A ring of ``blocks`` blocks must hold whole instructions: a multiple of one's
    ``lanes // 8`` blocks, so that no aligned beat's span passes the ring's end."""
    if blocks < lanes // BLOCK or blocks % (lanes // BLOCK):
        raise ValueError(f"blocks must be a multiple of {lanes // BLOCK}, not {blocks}")


class ShuffleSelect(wiring.Component):
    """Combinational: the load shuffle's selects for result beat ``beat`` of load form ``form``
    whose slots start at ring block ``start`` (a table of the forms' beats, :func:`_plan`, and
    a ``blocks``-modulo add), and ``need``, the mask of the instruction's slots the beat reads.
    For forms that are not loads both are unspecified.

    Members
    -------
    form : In(form_bits)
    beat : In(range(lanes + 1))
    start : In(range(blocks))
    select : Out(shuffle_select_layout(blocks))
    need : Out(lanes)
    """

    def __init__(self, *, lanes: int = 32, form_bits: int = 7, blocks: int = 4):
        _check_blocks(lanes, blocks)
        self.lanes, self.blocks = lanes, blocks
        super().__init__({"form": In(form_bits), "beat": In(range(lanes + 1)), "start": In(range(blocks)),
                          "select": Out(shuffle_select_layout(blocks)), "need": Out(lanes)})

    def elaborate(self, platform):
        m = Module()
        cases = _plan()[3]
        unplaced = Signal(beat_select_layout())
        with m.Switch(self.form):
            for f in range(len(forms.FORMS)):
                inf = forms.info(f)
                if not inf.load:
                    continue
                with m.Case(f):
                    with m.Switch(self.beat):
                        for r in range(inf.nregs):
                            with m.Case(r):
                                b, k, t = cases[(f, r)]
                                m.d.comb += [unplaced.first.eq(b), unplaced.pat.eq(k), unplaced.rot.eq(t),
                                             self.need.eq(beat_rows(inf, r))]
        m.d.comb += self.select.eq(place_select(m, unplaced, self.start, self.blocks, "placed"))
        return m


class ShuffleWindow(wiring.Component):
    """Combinational: the load shuffle's window, read from the row buffer (a ring of ``blocks``
    blocks of 8 slots): window row ``w`` is ring slot ``(8 · base + w) mod (8 · blocks)``
    wherever a pattern (:func:`_plan`) reads row ``w`` and ``base`` is a multiple of that
    pattern's span (aligned starts, aligned spans). Any other (row, base) is unspecified: the
    multiplexer gives those leaves to a neighbour (:func:`_merged_base`), and a row no pattern
    reads is 0.

    ``copies`` equal copies of ``base`` may be given: row ``w`` reads copy ``w · copies // 32``.

    Members
    -------
    base : In(range(blocks)).array(copies)
    rows : In(ArrayLayout(128, 8 · blocks))
    window : Out(ArrayLayout(128, 32))
    """

    def __init__(self, *, lanes: int = 32, blocks: int = 4, copies: int = 1):
        _check_blocks(lanes, blocks)
        self.blocks, self.copies = blocks, copies
        super().__init__({"base": In(range(blocks)).array(copies),
                          "rows": In(data.ArrayLayout(unsigned(ROW_BITS), BLOCK * blocks)),
                          "window": Out(data.ArrayLayout(unsigned(ROW_BITS), _WINDOW))})

    def elaborate(self, platform):
        m = Module()
        patterns, spans = _plan()[:2]
        nb, ring = self.blocks, BLOCK * self.blocks
        slot = [self.rows[i] for i in range(ring)]
        for w in range(_WINDOW):
            used = {b for k, p in enumerate(patterns) if any(row == w for row, _ in p)
                    for b in range(0, nb, spans[k])}
            if used:
                base = self.base[w * self.copies // _WINDOW]
                m.d.comb += self.window[w].eq(mux_tree(base, [slot[(BLOCK * _merged_base(b, used, nb) + w) % ring]
                                                              for b in range(nb)]))
        return m


class ShuffleNetwork(wiring.Component):
    """Combinational: ``out`` is the result beat the selects name (32 lanes × 32 bits), read
    from the row buffer, a ring of ``blocks`` blocks of 8 slots: a window of slots from block
    ``select.base`` (:class:`ShuffleWindow`), for some patterns rotated by whole words
    (``select.rot``), then one of the few distinct byte patterns (``select.pat``), each a
    binary multiplexer tree (:func:`_plan`).

    ``copies`` equal copies of the selects may be given (registers kept apart by synthesis):
    the window's rows and the output's lanes are split evenly between them, so that no one
    flip-flop drives the whole network.

    With ``windowed`` the window's rows come read already (``window``: row ``w`` is ring slot
    ``8 · base + w``, from :class:`~tensorlsu.hdl.pipeline.rowbuf.RowBufferMemory`) instead of
    the ring's ``rows``, and ``select.base`` is not read.

    Members
    -------
    select : In(ArrayLayout(shuffle_select_layout(blocks), copies))
    rows : In(ArrayLayout(128, 8 · blocks)), without ``windowed``
    window : In(ArrayLayout(128, 32)), with ``windowed``
    out : Out(32 * lanes)
    """

    def __init__(self, *, lanes: int = 32, blocks: int = 4, copies: int = 1, windowed: bool = False):
        _check_blocks(lanes, blocks)
        self.lanes, self.blocks, self.copies, self.windowed = lanes, blocks, copies, windowed
        rows = {"window": In(data.ArrayLayout(unsigned(ROW_BITS), _WINDOW))} if windowed else \
            {"rows": In(data.ArrayLayout(unsigned(ROW_BITS), BLOCK * blocks))}
        super().__init__({"select": In(data.ArrayLayout(shuffle_select_layout(blocks), copies)),
                          **rows, "out": Out(32 * lanes)})

    def _window(self, m):
        """The window's rows, read from the ring's slots by the base (:class:`ShuffleWindow`)."""
        win = m.submodules.window = ShuffleWindow(lanes=self.lanes, blocks=self.blocks, copies=self.copies)
        m.d.comb += [win.base[c].eq(self.select[c].base) for c in range(self.copies)]
        m.d.comb += [win.rows[i].eq(self.rows[i]) for i in range(BLOCK * self.blocks)]
        return [win.window[w] for w in range(_WINDOW)]

    def elaborate(self, platform):
        m = Module()
        patterns, _, rots = _plan()[:3]
        n_out = 4 * self.lanes          # output bytes

        def copy_for_byte(i):
            return self.select[i * self.copies // n_out]
        window = [self.window[w] for w in range(_WINDOW)] if self.windowed else self._window(m)
        byte_of = {}                    # one Value per window byte, so equal options merge

        def src(row, byte):
            if (row, byte) not in byte_of:
                byte_of[(row, byte)] = window[row][8 * byte:8 * byte + 8]
            return byte_of[(row, byte)]

        # A rotated window byte: byte `byte` of the row read `rot` words along, for the
        # rotations the patterns that read it use (the others repeat rotation 0, so merge).
        rot_used = {}
        for k, pattern in enumerate(patterns):
            if rots[k] != {0}:
                for row, byte in pattern:
                    rot_used.setdefault((row, byte), set()).update(rots[k])
        rotated = {}

        def rsrc(row, byte, rot):
            if (row, byte) not in rotated:
                ks = rot_used[(row, byte)]
                rotated[(row, byte)] = mux_tree(rot, [src(row, (byte + 4 * t) % ROW_BYTES if t in ks else byte)
                                                      for t in range(_ROW_WORDS)])
            return rotated[(row, byte)]

        parts = []
        for i in range(n_out):
            sel = copy_for_byte(i)
            parts.append(mux_tree(sel.pat, [src(*pattern[i]) if rots[k] == {0} else rsrc(*pattern[i], sel.rot)
                                            for k, pattern in enumerate(patterns)]))
        m.d.comb += self.out.eq(Cat(*parts))
        return m


class LoadShuffle(wiring.Component):
    """Combinational: ``out`` is result beat ``beat`` of load form ``form`` (32 lanes × 32
    bits), byte for byte as the form's table says (:class:`tensorlsu.hdl.pipeline.forms.FormInfo`, from
    :mod:`tensorlsu.sim.layouts`), read from the row buffer: a ring of ``blocks`` blocks of 8
    slots in which the instruction's slot ``s`` is ring slot ``(8 · start + s) mod (8 ·
    blocks)``. ``start`` must be a multiple of the form's ``align`` (so no beat reads across
    the end of the ring). ``need`` is the mask of the instruction's slots the beat reads.
    For forms that are not loads ``out`` is unspecified.

    The selects (:class:`ShuffleSelect`) and the network (:class:`ShuffleNetwork`) in one;
    the result stage registers the selects between them.

    Members
    -------
    form : In(form_bits)
    beat : In(range(lanes + 1))
    start : In(range(blocks))
    rows : In(ArrayLayout(128, 8 · blocks))
    out : Out(32 * lanes)
    need : Out(lanes)
    """

    def __init__(self, *, lanes: int = 32, form_bits: int = 7, blocks: int = 4):
        _check_blocks(lanes, blocks)
        self.lanes, self.blocks, self.form_bits = lanes, blocks, form_bits
        super().__init__({
            "form": In(form_bits), "beat": In(range(lanes + 1)), "start": In(range(blocks)),
            "rows": In(data.ArrayLayout(unsigned(ROW_BITS), BLOCK * blocks)),
            "out": Out(32 * lanes), "need": Out(lanes)})

    def elaborate(self, platform):
        m = Module()
        select = m.submodules.select = ShuffleSelect(lanes=self.lanes, form_bits=self.form_bits, blocks=self.blocks)
        network = m.submodules.network = ShuffleNetwork(lanes=self.lanes, blocks=self.blocks)
        m.d.comb += [select.form.eq(self.form), select.beat.eq(self.beat), select.start.eq(self.start),
                     self.need.eq(select.need), network.select[0].eq(select.select), self.out.eq(network.out),
                     *[network.rows[i].eq(self.rows[i]) for i in range(BLOCK * self.blocks)]]
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


def store_pattern(m, form, name: str = "store_pattern"):
    """The byte pattern of stmatrix form ``form``'s beats (:class:`StoreShuffle`), a signal."""
    patterns, of_form = _store_plan()
    pat = Signal(range(len(patterns)), name=name)
    with m.Switch(form):
        for f, k in of_form.items():
            with m.Case(f):
                m.d.comb += pat.eq(k)
    return pat


class StoreShuffle(wiring.Component):
    """Combinational: source beat ``beat`` of stmatrix form ``form`` (32 lanes × 32 bits) as
    the 8 rows of the group it stores (``group``), byte for byte as the form's table says.

    With ``copies``, the rows follow the form's byte pattern as given (``pat``,
    :func:`store_pattern`, registered by the caller), in that many equal copies, each driving
    its share of the rows (the pattern is not decoded from ``form`` in front of the
    multiplexers).

    Members
    -------
    form : In(form_bits)
    beat : In(range(lanes + 1))
    data : In(ArrayLayout(32, lanes))
    rows : Out(ArrayLayout(128, 8))
    group : Out(range(lanes // 8))
    pat : In(ArrayLayout(range(patterns), copies)), with ``copies``
    """

    def __init__(self, *, lanes: int = 32, form_bits: int = 7, copies: int = 0):
        self.lanes, self.copies = lanes, copies
        npat = len(_store_plan()[0])
        super().__init__({
            "form": In(form_bits), "beat": In(range(lanes + 1)),
            "data": In(data.ArrayLayout(unsigned(32), lanes)),
            "rows": Out(data.ArrayLayout(unsigned(ROW_BITS), GROUP_ROWS)),
            "group": Out(range(lanes // GROUP_ROWS)),
            **({"pat": In(data.ArrayLayout(range(npat), copies))} if copies else {})})

    def elaborate(self, platform):
        m = Module()
        patterns, of_form = _store_plan()
        pats = [self.pat[k] for k in range(self.copies)] if self.copies else [store_pattern(m, self.form, "pat")]
        with m.Switch(self.form):
            for f, k in of_form.items():
                with m.Case(f):
                    with m.Switch(self.beat):
                        for r in range(forms.info(f).nregs):
                            with m.Case(r):
                                m.d.comb += self.group.eq(r)
        # the lanes' bytes as slices of the port itself (of a concatenation, each slice would
        # copy the whole of it when the design is lowered)
        flat = self.data.as_value()
        lane_byte = [flat[8 * i:8 * i + 8] for i in range(4 * self.lanes)]
        where = [{(row, byte): i for i, (row, byte) in enumerate(p)} for p in patterns]
        for j in range(GROUP_ROWS):
            pat = pats[j * len(pats) // GROUP_ROWS]
            for byte in range(16):
                m.d.comb += self.rows[j][8 * byte:8 * byte + 8].eq(
                    mux_tree(pat, [lane_byte[w[(j, byte)]] for w in where]))
        return m
