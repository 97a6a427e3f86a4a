"""Formal specifications: small Elaboratables that wrap one block and state its contract.

Each spec lists its properties with one line saying what they guarantee. Inputs left
undriven are free (the solver chooses them); assumptions constrain the environment.
"""

import operator
from functools import reduce

from amaranth import (Cat, ClockDomain, ClockSignal, Const, DomainRenamer, Elaboratable, Module, Mux,
                      ResetSignal, Signal, Value)
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume, Cover
from tensorlsu.hdl.codes import FORMAT_CODES, Error
from tensorlsu.hdl.lib.slice import ForwardSlice, StreamSlice
from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import GROUP_ROWS, Params
from tensorlsu.hdl.pipeline import forms
from tensorlsu.hdl.pipeline.passq import PassQueue
from tensorlsu.hdl.pipeline.ring import RowRing
from tensorlsu.hdl.pipeline.shuffle import ShuffleNetwork, ShuffleSelect, ShuffleWindow, StoreShuffle
from tensorlsu.hdl.smem.crossbar import BankCrossbar
from tensorlsu.hdl.smem.decompress import Decompressor
from tensorlsu.hdl.smem.owed import MAX_STORE_BEATS, OWED_BEATS, StoreOwed
from tensorlsu.hdl.smem.pair import PairCrossbar
from tensorlsu.hdl.smem.scheduler import BankScheduler

__all__ = ["SPECS", "handshake_rules"]


class SchedulerContract(Elaboratable):
    """The bank scheduler's per-cycle contract, for all inputs (combinational: depth 1 is a proof).
    With ``pairs`` the row comparisons are inputs too, assumed to describe the rows."""

    def __init__(self, scheduler_cls=BankScheduler, rows=32, quads=8, line_bits=7, pairs=False):
        kw = {"pairs": True} if pairs else {}
        self.dut = scheduler_cls(rows=rows, quads=quads, line_bits=line_bits, **kw)

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        R, Q = d.rows, d.quads
        for sig in (d.eligible, d.quad, d.line):
            m.d.comb += Value.cast(sig).eq(AnySeq(len(Value.cast(sig))))
        if getattr(d, "pairs", False):
            m.d.comb += [d.same_quad.eq(AnySeq(len(d.same_quad))), d.same_line.eq(AnySeq(len(d.same_line)))]
            for i in range(R):
                for j in range(i):
                    k = d.pair(i, j)
                    # the caller's comparisons are those of the rows' quads and lines
                    m.d.comb += Assume(d.same_quad[k] == (d.quad[i] == d.quad[j]))
                    m.d.comb += Assume(d.same_line[k] == ((d.quad[i] == d.quad[j]) & (d.line[i] == d.line[j])))
        for q in range(Q):
            g = d.grant[q]
            wants = Cat(*[d.eligible[i] & (d.quad[i] == q) for i in range(R)]).any()
            # A quad is accessed exactly when some eligible row lives in it.
            m.d.comb += Assert(g.valid == wants, "a quad is accessed exactly when some eligible row lives in it")
            for i in range(R):
                with m.If(g.valid & (g.row == i)):
                    # The chosen row is eligible, lives in this quad, and its line is the one read.
                    m.d.comb += Assert(d.eligible[i] & (d.quad[i] == q) & (d.line[i] == g.line),
                                       "the chosen row is eligible, lives in the quad, and its line is read")
        for i in range(R):
            chosen = Signal(name=f"chosen{i}")
            for q in range(Q):
                with m.If(d.quad[i] == q):
                    m.d.comb += chosen.eq(d.grant[q].valid & (d.grant[q].line == d.line[i]))
            # A row is served iff it is eligible and its quad reads its line: one distinct
            # address per quad per cycle, and every row with that address gets it (broadcast).
            m.d.comb += Assert(d.served[i] == (d.eligible[i] & chosen),
                               "a row is served iff eligible and its quad reads its line (broadcast)")
        # Progress: some row is served whenever one is eligible.
        m.d.comb += Assert((d.eligible == 0) | (d.served != 0), "some row is served whenever one is eligible")
        # Covers: a bank conflict (two lines wanted in one quad) and a broadcast (two rows, one line).
        conflict = Cat(*[d.eligible[i] & d.eligible[j] & (d.quad[i] == d.quad[j]) & (d.line[i] != d.line[j])
                         for i in range(2) for j in range(i + 1, 3)]).any()
        broadcast = Cat(*[d.served[i] & d.served[j] for i in range(2) for j in range(i + 1, 3)]).any()
        m.d.comb += [Cover(conflict, "a bank conflict"), Cover(broadcast, "a broadcast")]
        return m


class BrokenPair(PairCrossbar):
    """A deliberately broken pair crossbar: the second pass's rows ignore the quads the first
    reads (two reads in one quad; the contract must fail on it)."""

    def elaborate(self, platform):
        real, self.first_access = self.first_access, Signal(len(self.first_access))
        try:
            return super().elaborate(platform)
        finally:
            self.first_access = real


class PairContract(Elaboratable):
    """The second pass of a pair beside the first (:class:`PairCrossbar`), for all inputs
    (combinational: depth 1 is a proof): a quad reads one line a cycle, for one pass; a row is
    served iff eligible and its quad reads its line for it; every quad holding an eligible row
    reads (for one pass or the other)."""

    def __init__(self, rows=32, quads=8, line_bits=7, crossbar_cls=PairCrossbar):
        self.dut = crossbar_cls(rows=rows, quads=quads, line_bits=line_bits)

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        R, Q = d.nrows, d.quads
        for sig in (d.eligible, d.quad, d.line, d.first_access):
            m.d.comb += Value.cast(sig).eq(AnySeq(len(Value.cast(sig))))
        for q in range(Q):
            wants = Cat(*[d.eligible[i] & (d.quad[i] == q) for i in range(R)]).any()
            m.d.comb += Assert(~(d.access[q] & d.first_access[q]), "a quad reads for one pass a cycle")
            m.d.comb += Assert(d.access[q] == (wants & ~d.first_access[q]),
                               "a quad the first pass leaves reads exactly when the second has a row in it")
        for i in range(R):
            reads = Signal(name=f"reads{i}")    # the row's quad reads its line for the second pass
            for q in range(Q):
                with m.If(d.quad[i] == q):
                    m.d.comb += reads.eq(d.access[q] & (d.addr[q] == d.line[i]))
            m.d.comb += Assert(d.served[i] == (d.eligible[i] & reads),
                               "a row is served iff eligible and its quad reads its line")
        m.d.comb += Assert((d.eligible == 0) | (d.served != 0) | d.first_access.any(),
                           "some row is served, or the first pass reads, whenever one is eligible")
        m.d.comb += Cover(Cat(*[d.eligible[i] & d.first_access.bit_select(d.quad[i], 1) for i in range(2)]).any()
                          & (d.served != 0), "a row waits for the first pass's quad while others are served")
        return m


class SchedulerCompletion(Elaboratable):
    """Serving until nothing is pending: every row exactly once, in exactly as many cycles as
    the busiest quad has distinct lines (model.wavefronts for one matrix)."""

    def __init__(self, scheduler_cls=BankScheduler, rows=8, quads=4, line_bits=2):
        self.dut = scheduler_cls(rows=rows, quads=quads, line_bits=line_bits)

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        R, Q = d.rows, d.quads
        want = AnyConst(R)
        quads = [AnyConst(len(d.quad[i])) for i in range(R)]
        lines = [AnyConst(len(d.line[i])) for i in range(R)]
        m.d.comb += Assume(Cat(*[q < Q for q in quads]).all())
        pending = Signal(R)
        started = Signal()
        ever = Signal(R)
        cycles = Signal(range(R + 2))
        m.d.comb += d.eligible.eq(pending)
        for i in range(R):
            m.d.comb += [d.quad[i].eq(quads[i]), d.line[i].eq(lines[i])]
        with m.If(~started):
            m.d.sync += [started.eq(1), pending.eq(want)]
        with m.Else():
            m.d.sync += [pending.eq(pending & ~d.served), ever.eq(ever | d.served)]
            with m.If(pending != 0):
                m.d.sync += cycles.eq(cycles + 1)
        # distinct lines per quad among the requested rows: a row counts if no earlier one matches
        need = Signal(range(R + 1))
        counts = []
        for q in range(Q):
            firsts = [want[i] & (quads[i] == q) &
                      ~Cat(*[want[j] & (quads[j] == q) & (lines[j] == lines[i]) for j in range(i)] or [Const(0)]).any()
                      for i in range(R)]
            c = Signal(range(R + 1), name=f"distinct{q}")
            m.d.comb += c.eq(sum(firsts))
            counts.append(c)
        best = counts[0]
        for c in counts[1:]:
            nxt = Signal(range(R + 1))
            m.d.comb += nxt.eq(Mux(c > best, c, best))
            best = nxt
        m.d.comb += need.eq(best)
        with m.If(started):
            # A row is never served twice, and only if requested.
            m.d.comb += Assert((d.served & ever) == 0, "a row is never served twice")
            m.d.comb += Assert((ever & ~want) == 0, "only requested rows are served")
            # Done exactly when the busiest quad's distinct lines have all been read.
            m.d.comb += Assert((pending == 0) == (cycles >= need),
                               "done exactly when the busiest quad's distinct lines are read")
        return m


class WriteSelect(Elaboratable):
    """The write crossbar's registered selects: through every window of distinct store rows,
    from either source, each quad writes exactly the row it serves."""

    def __init__(self, rows=8, quads=4, line_bits=3, crossbar_cls=BankCrossbar):
        self.dut = crossbar_cls(rows=rows, quads=quads, line_bits=line_bits, pairs=True)

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        R, Q = d.nrows, d.quads
        # the environment is F: a window taken keeps its quads and lines; its pending rows
        # lose what is served while the window is written (step)
        pending = Signal(R)
        quads = [Signal(len(d.quad[j]), name=f"env_quad{j}") for j in range(R)]
        lines = [Signal(len(d.line[j]), name=f"env_line{j}") for j in range(R)]
        # two sources of windows, as in the unit (B's pass and F's next window); a window's
        # rows are distinct (two threads on one row are refused before the banks)
        src = [(d.take, d.take_rows, d.take_quad, [AnySeq(len(d.line[j])) for j in range(R)]),
               (d.advance, d.next_rows, d.next_quad, [AnySeq(len(d.line[j])) for j in range(R)])]
        m.d.comb += [d.step.eq(AnySeq(1)), d.eligible.eq(pending)]
        # each row's data is its index: a quad wrote row j exactly when it wrote the value j
        m.d.comb += [d.rows[j].eq(j) for j in range(R)]
        for strobe, rows, quad, line in src:
            m.d.comb += [strobe.eq(AnySeq(1)), rows.eq(AnySeq(R)),
                         Value.cast(quad).eq(AnySeq(len(Value.cast(quad))))]
            for j in range(R):
                m.d.comb += Assume(quad[j] < Q)
                for i in range(j):
                    m.d.comb += Assume(~(strobe & rows[i] & rows[j] & (quad[i] == quad[j]) & (line[i] == line[j])))
        for j in range(R):
            m.d.comb += [d.quad[j].eq(quads[j]), d.line[j].eq(lines[j])]
            for i in range(j):
                k = BankScheduler.pair(j, i)
                m.d.comb += [d.same_quad[k].eq(quads[i] == quads[j]),
                             d.same_line[k].eq((quads[i] == quads[j]) & (lines[i] == lines[j]))]

        def window(rows, quad, line):
            return ([pending.eq(rows)] + [quads[j].eq(quad[j]) for j in range(R)]
                    + [lines[j].eq(line[j]) for j in range(R)])
        with m.If(d.take):
            m.d.sync += window(*src[0][1:])
        with m.Elif(d.advance):
            m.d.sync += window(*src[1][1:])
        with m.Elif(d.step):
            m.d.sync += pending.eq(pending & ~d.served)
        for j in range(R):
            for q in range(Q):
                # A quad writes exactly the row of the window it serves (one per quad: the
                # rows are distinct).
                with m.If(d.served[j] & (quads[j] == q)):
                    m.d.comb += Assert(d.access[q] & (d.write[q] == j), "a quad writes the row it serves")
        # Cover: the last row of a window, written after others of its quad.
        m.d.comb += Cover(d.served[R - 1] & (pending[:R - 1] == 0)
                          & (Cat(*[quads[j] == quads[R - 1] for j in range(R - 1)]) != 0),
                          "the last row of a window, after others of its quad")
        return m


class DecompressorSpec(Elaboratable):
    """The decompressor equals its specification for every row and format code."""

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = Decompressor()
        m.d.comb += [d.row.eq(AnySeq(128)), d.fmt.eq(AnySeq(2))]
        for name, code in FORMAT_CODES.items():
            if name is None:
                continue
            w = {"b6x16_p32": 6, "b4x16_p64": 4}[name]
            with m.If(d.fmt == code):
                for j in range(16):
                    # Element j: bits w·j … w·j+w-1 of the row, zero-extended into byte j.
                    m.d.comb += Assert(d.out.word_select(j, 8) == ((d.row >> (w * j)) & ((1 << w) - 1)),
                                       "element j, zero-extended into byte j")
        with m.If((d.fmt == 0) | (d.fmt == 3)):
            # Other codes pass the row through unchanged.
            m.d.comb += Assert(d.out == d.row, "other codes pass the row through")
        return m


def _window_row(inf, r: int, row: int) -> int:
    """The window row that holds slot ``row`` of the instruction for beat ``r``: the window
    starts at the beat's first block (its aligned span, ``FormInfo.beat_span``, from the table)."""
    w = row - forms.BLOCK * inf.beat_span(r)[0]
    assert 0 <= w < forms.SLOTS, "a beat reads beyond its window"
    return w


def _load_beats():
    """Every (form id, info, beat) of the load forms."""
    return [(f, inf, r) for f in range(len(forms.FORMS)) for inf in [forms.info(f)] if inf.load
            for r in range(inf.nregs)]


class ShuffleNetworkSpec(Elaboratable):
    """The load shuffle's selects and network on a window read already: for every load form
    and beat, lane ``k // 4`` byte ``k % 4`` is byte ``byte`` of window row ``row - 8 · first``,
    ``(row, byte)`` the form's table entry and ``first`` the beat's first block, for all data.

    With :class:`ShuffleWindowSpec` (window row ``w`` is ring slot ``8 · (start + first) + w``)
    this is the whole load shuffle at every place on the ring: :class:`LoadShuffle` is the
    selects, :class:`ShuffleWindow` and this network; the FPGA build's window is
    :class:`RowBufferMemory` (tb/pipeline/test_rowbuf.py). A windowed network does not read the
    base, so one proof serves both policies' rings.

    (form, beat) pairs whose tables ask for the same byte mapping share one set of assertions
    (guarded by "the input is any of them"); the mapping is taken from each pair's own table,
    so a pair the network gets wrong still fails.
    """

    def __init__(self, network_cls=ShuffleNetwork):
        self.network_cls = network_cls

    def elaborate(self, platform):
        m = Module()
        blocks = Params().row_blocks
        sel = m.submodules.select = ShuffleSelect(blocks=blocks)
        net = m.submodules.network = self.network_cls(blocks=blocks, windowed=True)
        flat = Signal(128 * forms.SLOTS)
        m.d.comb += [flat.eq(AnySeq(len(flat))), sel.form.eq(AnySeq(len(sel.form))),
                     sel.beat.eq(AnySeq(len(sel.beat))), sel.start.eq(0), net.select[0].eq(sel.select)]
        m.d.comb += [net.window[w].eq(flat[128 * w:128 * (w + 1)]) for w in range(forms.SLOTS)]
        groups = {}
        for f, inf, r in _load_beats():
            mapping = tuple((_window_row(inf, r, int(row)), int(byte)) for row, byte in inf.table[:, r].reshape(-1, 2))
            groups.setdefault(mapping, []).append((sel.form == f) & (sel.beat == r))
        for mapping, selects in groups.items():
            with m.If(Cat(*selects).any()):
                for k, (w, byte) in enumerate(mapping):
                    m.d.comb += Assert(net.out.word_select(k, 8) == flat.word_select(16 * w + byte, 8),
                                       "each beat byte is the table's byte of its window row")
        return m


class ShuffleWindowSpec(Elaboratable):
    """The load shuffle's window on the row-buffer ring of ``blocks`` blocks: for every load form
    and beat and every aligned place ``start`` of the instruction on the ring, the window the
    beat's selects name holds each slot ``row`` the beat reads (its table's rows) at window row
    ``row - 8 · first``: ring slot ``(8 · start + row) mod (8 · blocks)``, for all data. With
    ``start`` given, that start alone: one part of the proof (the parts of every start make the
    whole, each far quicker for the solver than all starts at once)."""

    def __init__(self, blocks=None, window_cls=ShuffleWindow, start=None):
        self.blocks, self.window_cls, self.start = blocks or Params().row_blocks, window_cls, start

    def elaborate(self, platform):
        m = Module()
        sel = m.submodules.select = ShuffleSelect(blocks=self.blocks)
        win = m.submodules.window = self.window_cls(blocks=self.blocks)
        ring = forms.BLOCK * self.blocks
        flat = Signal(128 * ring)
        m.d.comb += [flat.eq(AnySeq(len(flat))), sel.form.eq(AnySeq(len(sel.form))),
                     sel.beat.eq(AnySeq(len(sel.beat))),
                     sel.start.eq(AnySeq(len(sel.start)) if self.start is None else self.start),
                     win.base[0].eq(sel.select.base)]
        m.d.comb += [win.rows[i].eq(flat[128 * i:128 * (i + 1)]) for i in range(ring)]
        m.d.comb += Assume(sel.start < self.blocks)     # a place on the ring
        groups = {}
        for f, inf, r in _load_beats():
            with m.If(sel.form == f):
                # the unit places a form's slots at a multiple of its alignment
                m.d.comb += Assume(sel.start % inf.align == 0)
            rows = tuple(sorted({int(row) for row in inf.table[:, r, :, 0].flat}))
            key = (inf.beat_span(r)[0], rows)
            groups.setdefault(key, []).append((inf, r, (sel.form == f) & (sel.beat == r)))
        for (_, rows), members in groups.items():
            inf, r, _ = members[0]
            for start in range(self.blocks):       # one constant source per start
                with m.If(Cat(*[c for _, _, c in members]).any() & (sel.start == start)):
                    for row in rows:
                        at = (forms.BLOCK * start + row) % ring
                        m.d.comb += Assert(win.window[_window_row(inf, r, row)] == flat.word_select(at, 128),
                                           "each slot the beat reads is in its window row")
        return m


class _ShiftedWindow(ShuffleWindow):
    """A window one ring slot off (``broken_shuffle_window`` must FAIL)."""

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = ShuffleWindow(blocks=self.blocks)
        ring = forms.BLOCK * self.blocks
        m.d.comb += [inner.base[0].eq(self.base[0]), *[self.window[w].eq(inner.window[w]) for w in range(forms.SLOTS)],
                     *[inner.rows[i].eq(self.rows[(i + 1) % ring]) for i in range(ring)]]
        return m


class _SwappedNetwork(ShuffleNetwork):
    """A network with the first two bytes of its beat swapped (``broken_shuffle_network`` must
    FAIL)."""

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = ShuffleNetwork(blocks=self.blocks, windowed=True)
        m.d.comb += [inner.select[0].eq(self.select[0]), *[inner.window[w].eq(self.window[w]) for w in range(forms.SLOTS)],
                     self.out.eq(Cat(inner.out[8:16], inner.out[:8], inner.out[16:]))]
        return m


class StoreShuffleSpec(Elaboratable):
    """Every stmatrix source beat lands in the rows its layout table names, for all data."""

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = StoreShuffle()
        m.d.comb += [d.data.eq(AnySeq(len(d.data))), d.form.eq(AnySeq(len(d.form))),
                     d.beat.eq(AnySeq(len(d.beat)))]
        flat = Cat(*[d.rows[j] for j in range(GROUP_ROWS)])
        for f in range(len(forms.FORMS)):
            inf = forms.info(f)
            if inf.load:
                continue
            for r in range(inf.nregs):
                with m.If((d.form == f) & (d.beat == r)):
                    m.d.comb += Assert(d.group == r, "beat r stores group r")
                    for k, (row, byte) in enumerate(inf.table[:, r].reshape(-1, 2)):
                        # Byte `byte` of row `row` is lane k//4 byte k%4 of the beat.
                        m.d.comb += Assert(flat.word_select(16 * (int(row) - GROUP_ROWS * r) + int(byte), 8)
                                           == d.data.as_value().word_select(k, 8),
                                           "each row byte is the table's lane byte")
        return m


def handshake_rules(m, ins: dict, outs: dict) -> dict:
    """Free payloads and valids on the input streams ``ins`` and readies on the outputs
    ``outs`` (name → stream); assumes a producer holds valid and payload until ready, and
    asserts the block does so on its outputs. Returns each stream's previous
    (valid, ready, payload) registers."""
    for name, s in ins.items():
        m.d.comb += [s.valid.eq(AnySeq(1)), Value.cast(s.payload).eq(AnySeq(len(Value.cast(s.payload))))]
    for name, s in outs.items():
        m.d.comb += s.ready.eq(AnySeq(1))
    prev = {}
    init = Signal()
    m.d.sync += init.eq(1)
    for name, s in list(ins.items()) + list(outs.items()):
        pv, pr = Signal(name=f"{name}_pv"), Signal(name=f"{name}_pr")
        pp = Signal(len(Value.cast(s.payload)), name=f"{name}_pp")
        m.d.sync += [pv.eq(s.valid), pr.eq(s.ready), pp.eq(Value.cast(s.payload))]
        prev[name] = (pv, pr, pp)
    for name, s in ins.items():
        pv, pr, pp = prev[name]
        with m.If(init & pv & ~pr):
            # assumption: a producer holds valid and its payload until ready
            m.d.comb += Assume(s.valid & (Value.cast(s.payload) == pp))
    for name, s in outs.items():
        pv, pr, pp = prev[name]
        with m.If(init & pv & ~pr):
            # The block holds valid and keeps its payload stable until the consumer is ready.
            m.d.comb += Assert(s.valid & (Value.cast(s.payload) == pp),
                               f"{name} holds valid and payload until ready")
    return prev


class StreamRules(Elaboratable):
    """The unit's result and dump streams keep the handshake rules, and no beat comes
    without an instruction; the environment keeps them on the input streams."""

    def __init__(self, schedule="h200"):
        self.dut = LoadStoreUnit(Params(smem_bytes=256, schedule=schedule, tmem_columns=0))

    def elaborate(self, platform):
        top = Module()
        d = top.submodules.dut = self.dut
        # the rules' registers are reset as the unit's are, a clock after `rst` (hdl/lsu.py):
        # a reset may drop the beats in flight, and the rules start again after it
        top.domains.rules = rules = ClockDomain("rules", local=True)
        rules_rst = Signal(init=1, reset_less=True)
        top.d.sync += rules_rst.eq(ResetSignal("sync"))
        top.d.comb += [rules.clk.eq(ClockSignal("sync")), rules.rst.eq(rules_rst)]
        m = Module()
        top.submodules.rules = DomainRenamer("rules")(m)
        ins = {"instr": d.instr, "store": d.store, "fill": d.fill, "dump_req": d.dump_req}
        outs = {"result": d.result, "dump": d.dump}
        prev = handshake_rules(m, ins, outs)
        accepted, completed = Signal(8), Signal(8)
        with m.If(d.instr.valid & d.instr.ready):
            m.d.sync += accepted.eq(accepted + 1)
        with m.If(d.result.valid & d.result.ready & d.result.payload.last):
            m.d.sync += completed.eq(completed + 1)
        # No result beat without an instruction in flight.
        with m.If(accepted == completed):
            m.d.comb += Assert(~d.result.valid, "no result beat without an instruction in flight")
        # At most two instructions in the intake slice, two in the check stage, one in A, two
        # in the address stage, a queue's worth in B, one in each result entry and two more
        # whose last beats wait in the outlet slice.
        p = d.params
        slices, check, address = 2 + 2, 2, 2
        m.d.comb += Assert((accepted - completed) <= slices + check + 1 + address + p.pass_queue_depth + p.entries,
                           "at most as many instructions in flight as the slices, K, A, X, B and the entries hold")
        # Covers: a refused instruction, and a stall of the result stream.
        m.d.comb += Cover(d.result.valid & (d.result.payload.error != Error.NONE), "a refused instruction's beat")
        m.d.comb += Cover(prev["result"][0] & ~prev["result"][1] & d.result.valid & d.result.ready,
                          "a stalled result beat taken")
        return top


class PassQueueOrder(Elaboratable):
    """The pass queue hands on every pass once, in order, unchanged (the overlap verdict
    turned into the error): passes carry their sequence number in ``form``; an arbitrary one
    (``AnyConst``) carries an arbitrary payload, which must come out as it went in."""

    def __init__(self, queue_cls=None):
        self.dut = (queue_cls or PassQueue)(Params(smem_bytes=256))

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        n = len(d.push.payload.form)
        pushed, popped = Signal(n, name="pushed"), Signal(n, name="popped")
        tag = AnyConst(n)
        tracked = AnyConst(len(Value.cast(d.push.payload)))
        m.d.comb += [d.push.valid.eq(AnySeq(1)), d.pop.ready.eq(AnySeq(1)), d.hold.eq(AnySeq(1)),
                     Value.cast(d.push.payload).eq(AnySeq(len(Value.cast(d.push.payload))))]
        # the environment numbers its passes; the tracked one has the tracked payload
        m.d.comb += Assume(d.push.payload.form == pushed)
        with m.If(pushed == tag):
            m.d.comb += Assume(Value.cast(d.push.payload) == tracked)
        with m.If(d.push.valid & d.push.ready):
            m.d.sync += pushed.eq(pushed + 1)
        with m.If(d.pop.valid & d.pop.ready):
            m.d.sync += popped.eq(popped + 1)
        st = d.state
        count = Signal(range(3))
        m.d.comb += count.eq(st["valid"][0] + st["valid"][1])
        m.d.comb += Assert(count == (pushed - popped)[:n], "the queue holds every pass pushed and not popped")
        m.d.comb += Assert(d.pop.valid == (pushed != popped), "a pass is offered exactly while one is held")
        m.d.comb += Assert(d.push.ready == ((count < 2) & ~d.hold),
                           "a push is refused only when the queue is full or held")
        for k in range(2):
            e = st["entries"][k]
            with m.If(st["valid"][k]):
                # invariant: entry k holds the pass numbered by its distance from the read pointer
                m.d.comb += Assert(e.form == Mux(st["rp"] == k, popped, (popped + 1)[:n]),
                                   "each held pass has its place in the order")
                with m.If(e.form == tag):
                    m.d.comb += Assert(Value.cast(e) == tracked, "a held pass is unchanged")
        for k, copy in enumerate(st["heads"]):
            at = (st["rp"] + k)[:len(st["rp"])]
            with m.If(st["valid"].bit_select(at, 1)):
                # invariant: the head's copy is the entry at the read pointer (its fast part)
                m.d.comb += Assert(copy == Value.cast(Mux(at, st["entries"][1], st["entries"][0]))[:len(copy)],
                                   "the head's copy is the entry it copies")
        m.d.comb += Assert(st["full"] == st["valid"].all(), "the full register is every entry valid")
        with m.If(st["valid"].all()):
            m.d.comb += Assert(st["wp"] == st["rp"], "a full queue's pointers meet")
        with m.Elif(st["valid"].any()):
            m.d.comb += Assert(st["valid"].bit_select(st["rp"], 1) & (st["wp"] != st["rp"]),
                               "one held pass sits at the read pointer")
        with m.Else():
            m.d.comb += Assert(st["wp"] == st["rp"], "an empty queue's pointers meet")
        p = d.pop.payload
        with m.If(d.pop.valid):
            m.d.comb += Assert(p.form == popped, "passes leave in the order they came")
        with m.If(d.pop.valid & (p.form == tag)):
            t = Signal.like(d.push.payload)
            m.d.comb += t.eq(tracked)
            m.d.comb += Assert((p.consts.as_value() == t.consts.as_value())
                               & (Cat(*[p.addr[i] for i in range(len(p.addr))])
                                  == Cat(*[t.addr[i] for i in range(len(t.addr))])),
                               "a pass leaves with its constants and addresses")
            m.d.comb += Assert(p.err.as_value() == Mux(t.ovl & (t.err == Error.NONE), Error.OVERLAP, t.err.as_value()),
                               "the overlap verdict becomes the error, unless another refused it first")
        m.d.comb += Cover((popped == 3) & (count == 2), "three passes through, the queue full again")
        return m


class RingRule(Elaboratable):
    """The ring rule: a window the bank stage may serve (``blocked`` = 0) never writes a
    row-buffer block that a live entry other than its own still reads: the head's remaining
    beats or a waiting entry; with paired passes the same for the second pass of a pair
    (``second_blocked``), the pair taken into two entries at once. The result stage's and bank
    stage's registers are free, constrained only by what those stages guarantee (assumed
    below)."""

    def __init__(self, schedule="h200", ring_cls=None):
        self.dut = (ring_cls or RowRing)(Params(smem_bytes=256, schedule=schedule))

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        tk, E, pairs = d.take, d.params.entries, d.params.pair_passes
        NB = len(d.window)
        free = [tk.take, tk.ok, tk.tail, tk.pass_.err, tk.pass_.consts.load, tk.pass_.consts.align,
                tk.pass_.consts.blocks, d.entries.head_next, d.entries.valid_next, d.entries.end,
                d.entries.reading, d.advance]
        if pairs:
            free += [tk.pairs, tk.second_tail, tk.second_pass.consts.load, tk.second_pass.consts.align,
                     tk.second_pass.consts.blocks]
        for sig in free:
            m.d.comb += Value.cast(sig).eq(AnySeq(len(Value.cast(sig))))
        # the result stage: head and live entries are registers taking their next values; an
        # entry is taken only when free; a take's ok says it was not refused
        head, valid, fill_buf = Signal(range(E)), Signal(E), Signal(range(E))
        m.d.sync += [head.eq(d.entries.head_next), valid.eq(d.entries.valid_next)]
        m.d.comb += [d.entries.head.eq(head), d.entries.valid.eq(valid), d.fill_buf.eq(fill_buf)]
        m.d.comb += Assume((head < E) & (d.entries.head_next < E) & (tk.tail < E))
        m.d.comb += Assume(tk.ok == (tk.take & (tk.pass_.err == Error.NONE)))
        with m.If(tk.take):
            m.d.comb += Assume(~valid.bit_select(tk.tail, 1))
            if pairs:
                # entries are taken in order, after the live ones (so a pair's second is never
                # the head)
                live = Signal(range(E + 1))
                m.d.comb += live.eq(sum(valid[b] for b in range(E)))
                m.d.comb += Assume(tk.tail == Mux(head + live >= E, head + live - E, head + live))
        taken = Mux(tk.take, 1 << tk.tail, 0)
        if pairs:
            # a pair: both passes loads, not refused, into the entry after tail, also free
            second_buf = Signal(range(E))
            m.d.comb += [d.second_buf.eq(second_buf), tk.pair.eq(tk.take & tk.pairs)]
            # the first of a pair is never refused (the take's rule)
            m.d.comb += Assume(~tk.pairs | (tk.pass_.err == Error.NONE))
            with m.If(tk.pair):
                m.d.comb += Assume(tk.ok & tk.pass_.consts.load & tk.second_pass.consts.load
                                   & (tk.second_tail == Mux(tk.tail == E - 1, 0, tk.tail + 1))
                                   & ~valid.bit_select(tk.second_tail, 1))
                m.d.sync += second_buf.eq(tk.second_tail)
            taken = taken | Mux(tk.pair, 1 << tk.second_tail, 0)
        m.d.comb += Assume(d.entries.valid_next == ((valid & ~Mux(d.entries.end, 1 << head, 0)) | taken)[:E])
        m.d.comb += Assume(d.entries.head_next == Mux(d.entries.end, Mux(head == E - 1, 0, head + 1), head))
        with m.If(d.entries.end):
            m.d.comb += Assume(valid.bit_select(head, 1))
        # the bank stage fills the entry it took last; it advances only within its pass
        with m.If(tk.ok):
            m.d.sync += fill_buf.eq(tk.tail)
        # the head's beats read only its own blocks (the form tables: forms.FormInfo.rest_blocks
        # lie within the blocks the pass fills) and, within an entry, fewer and fewer of them
        blocks = d.state["blocks"]
        prev_reading, prev_end, prev_live = Signal(NB), Signal(), Signal()
        m.d.sync += [prev_reading.eq(d.entries.reading), prev_end.eq(d.entries.end),
                     prev_live.eq(valid.bit_select(head, 1))]
        own = Signal(NB)
        m.d.comb += own.eq(Mux(valid.bit_select(head, 1), Cat(*blocks).word_select(head, NB), 0))
        m.d.comb += Assume((d.entries.reading & ~own) == 0)
        with m.If(prev_live & ~prev_end):
            m.d.comb += Assume((d.entries.reading & ~prev_reading) == 0)
        init = Signal()
        m.d.sync += init.eq(1)
        with m.If(~init):
            m.d.comb += Assume(valid == 0)

        busy = d.state["busy"]
        with m.If(init & (head != fill_buf)):
            m.d.comb += Assert((d.entries.reading & ~busy) == 0, "the head reads nothing the ring thinks released")
        windows = [("", fill_buf, d.window, d.blocked, busy)]
        if pairs:
            # for the second pass, a head that is the pair's first reads all of its blocks
            windows.append(("the second pass's ", second_buf, d.second_window, d.second_blocked,
                            Mux(head == fill_buf, Cat(*blocks).word_select(head, NB), busy)))
        for what, buf, window, blocked, busy_ in windows:
            waiting = Signal(NB)        # blocks of the entries waiting behind the head
            m.d.comb += waiting.eq(reduce(operator.or_, [Mux(valid[b] & (head != b) & (buf != b), blocks[b], 0)
                                                         for b in range(E)]))
            with m.If(init):
                m.d.comb += Assert(blocked == d.check(head, buf, valid, blocks, window, busy_),
                                   f"{what}go-ahead register is the rule applied to the current state")
                with m.If(~blocked & (head != buf)):
                    m.d.comb += Assert((window & (d.entries.reading | waiting)) == 0,
                                       f"{what}window that may be served meets no block a live entry still reads")
        m.d.comb += Cover(init & ~d.blocked & (head != fill_buf) & (d.entries.reading != 0),
                          "a window served while another entry still reads")
        if pairs:
            m.d.comb += Cover(init & d.second_blocked & ~d.blocked, "the second pass of a pair waits, the first not")
        return m


class BrokenBroadcast(BankScheduler):
    """A deliberately broken scheduler: serves only the chosen row, not the other rows with
    the same address (the contract must fail on it)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        for i in range(self.rows):
            chosen = Cat(*[self.grant[q].valid & (self.grant[q].row == i) for q in range(self.quads)]).any()
            m.d.comb += self.served[i].eq(self.eligible[i] & chosen)
        return m


class BrokenWriteSelect(BankCrossbar):
    """A deliberately broken write crossbar: every quad writes the window's first row (the
    write-select property must fail on it)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += [self.write[q].eq(self.rows[0]) for q in range(self.quads)]
        return m


def _broken_ring():
    """A deliberately broken ring: the go-ahead forgets the head's remaining reads (the ring
    rule must fail on it)."""

    class BrokenRing(RowRing):
        @staticmethod
        def check(head, fill_buf, valid, blocks, window, busy):
            return RowRing.check(head, fill_buf, valid, blocks, window, 0)
    return RingRule(ring_cls=BrokenRing)


def _broken_queue():
    """A deliberately broken pass queue: it drops the overlap verdict (the order proof must
    fail on it)."""

    class BrokenQueue(PassQueue):
        def elaborate(self, platform):
            m = super().elaborate(platform)
            st = self.state
            m.d.comb += self.pop.payload.err.eq(Mux(st["rp"], st["entries"][1].err.as_value(),
                                                    st["entries"][0].err.as_value()))
            return m
    return PassQueueOrder(queue_cls=BrokenQueue)


class OwedContract(Elaboratable):
    """The owed store beats against the store stream's order, for every sequence of refusals,
    takes and beats (induction over the counts): the beats owed ahead of the bank stage's
    stmatrix, those behind it and its own left are the reference's; a beat is dropped exactly
    when the stream's next beat is a refused stmatrix's, and the bank stage takes one only
    when it is its own; the count never passes its bound."""

    def __init__(self, owed_cls=StoreOwed):
        self.dut = owed_cls()

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        ref_ahead = Signal(range(OWED_BEATS + 1), name="ref_ahead")
        ref_behind = Signal(range(OWED_BEATS + 1), name="ref_behind")
        own = Signal(range(MAX_STORE_BEATS + 1), name="ref_own")      # the bank stage's beats left
        n = Signal(range(MAX_STORE_BEATS + 1), name="take_beats")
        for sig in (d.refused, d.refused_beats, d.taken, d.beat, n):
            m.d.comb += sig.eq(AnySeq(len(sig)))
        # the environment: a refused stmatrix is taken only with room, and owes 1 … 4 beats;
        # a stmatrix is taken into the bank stage only once it wants no beat
        m.d.comb += [Assume(~d.refused | (d.room & (d.refused_beats >= 1) & (d.refused_beats <= MAX_STORE_BEATS))),
                     d.wants.eq(own != 0),
                     Assume(~d.taken | (~d.wants & ~d.refused & (n >= 1) & (n <= MAX_STORE_BEATS)))]
        # the invariant: the counts are the reference's, and within their bound
        m.d.comb += [Assert(d.counts["ahead"] == ref_ahead, "the beats owed ahead are the stream's"),
                     Assert(d.counts["behind"] == ref_behind, "the beats owed behind are the stream's"),
                     Assert(ref_ahead + ref_behind <= OWED_BEATS, "the count stays within its bound"),
                     Assert(d.room == (ref_ahead + ref_behind <= OWED_BEATS - MAX_STORE_BEATS),
                            "the room register is the counts' room"),
                     Assert((d.ahead == (ref_ahead != 0)) & (d.behind == (ref_behind != 0)),
                            "the owed flags are the counts'")]
        # the stream's next beat: owed ahead, else the bank stage's own, else owed behind
        nxt_drop = Signal()
        m.d.comb += nxt_drop.eq((ref_ahead != 0) | ((own == 0) & (ref_behind != 0)))
        m.d.comb += Assert(d.drain == nxt_drop, "a beat is dropped exactly when the next is a refused one's")
        m.d.comb += Assert(~(d.wants & ~d.ahead) | (ref_ahead == 0), "the bank stage takes only its own beat")
        m.d.comb += Assert(~(d.wants & ~d.ahead & d.drain), "never both")
        with m.If(d.beat & d.drain & (ref_ahead != 0)):
            m.d.sync += ref_ahead.eq(ref_ahead - 1)
        left_behind = Signal(range(OWED_BEATS + 1))
        m.d.comb += left_behind.eq(ref_behind - (d.beat & (ref_ahead == 0) & (own == 0) & (ref_behind != 0))
                                   + Mux(d.refused, d.refused_beats, 0))
        with m.If(d.beat & d.wants & ~d.ahead):
            m.d.sync += own.eq(own - 1)
        with m.If(d.taken):
            m.d.sync += [own.eq(n), ref_ahead.eq(ref_ahead - (d.beat & d.drain & (ref_ahead != 0)) + left_behind),
                         ref_behind.eq(0)]
        with m.Else():
            m.d.sync += ref_behind.eq(left_behind)
        m.d.comb += Cover((ref_ahead != 0) & (own != 0) & (ref_behind != 0) & d.beat)
        return m


class BrokenOwed(StoreOwed):
    """Drops an owed beat behind the bank stage's stmatrix before the stmatrix's own: must FAIL."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.drain.eq(self.ahead | self.behind)
        return m


class SliceContract(Elaboratable):
    """A register slice against a FIFO of its entries, for every sequence of offers and readies
    (induction over its state): it offers exactly the FIFO's oldest beat (a register's) and
    takes a beat exactly while the FIFO has room. :class:`StreamSlice`: two entries, and its
    ready a register's (room before this cycle's output); :class:`ForwardSlice`: one entry,
    room also when its beat leaves in this cycle."""

    WIDTH = 4

    def __init__(self, slice_cls=StreamSlice):
        self.dut = slice_cls(self.WIDTH)
        self.depth = 1 if issubclass(slice_cls, ForwardSlice) else 2

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        entries = [Signal(self.WIDTH, name=f"ref{k}") for k in range(2)]
        count = Signal(range(3), name="ref_count")
        for sig in (d.i.valid, d.i.payload, d.o.ready):
            m.d.comb += sig.eq(AnySeq(len(sig)))
        m.d.comb += [Assert(count <= self.depth),
                     Assert(d.o.valid == (count != 0), "it offers a beat exactly while one is held"),
                     Assert(~d.o.valid | (d.o.payload == entries[0]), "the oldest beat first"),
                     Assert(d.main_valid == (count != 0))]
        if self.depth == 2:
            m.d.comb += [Assert(d.i.ready == (count != 2), "it takes a beat exactly while there is room"),
                         # the skid entry against the reference, for the induction
                         Assert(d.skid_valid == (count == 2)), Assert(~d.skid_valid | (d.skid == entries[1]))]
        else:
            m.d.comb += Assert(d.i.ready == ((count == 0) | d.o.ready),
                               "it takes a beat exactly while empty or while its beat leaves")
        take, give = d.i.valid & d.i.ready, d.o.valid & d.o.ready
        with m.If(give):
            m.d.sync += entries[0].eq(Mux(take & (count == 1), d.i.payload, entries[1]))
            with m.If(take & (count == 2)):
                pass        # no room: never both (ready is low)
            with m.Elif(take):
                m.d.sync += entries[1].eq(d.i.payload)
        with m.Elif(take):
            with m.If(count == 0):
                m.d.sync += entries[0].eq(d.i.payload)
            with m.Else():
                m.d.sync += entries[1].eq(d.i.payload)
        m.d.sync += count.eq(count + take - give)
        # two entries: a beat taken into the skid entry while the output waits; one: a beat taken
        # as the held one leaves
        m.d.comb += Cover(take & ~give & (count == 1) if self.depth == 2 else take & give & (count == 1))
        return m


class BrokenSlice(StreamSlice):
    """Stays ready while its skid entry is full, losing a beat: must FAIL."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.i.ready.eq(1)
        return m


class BrokenForwardSlice(ForwardSlice):
    """Stays ready while its beat waits, overwriting it: must FAIL."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.i.ready.eq(1)
        return m


#: name: (spec factory, sby mode, depth, why that depth)
SPECS = {
    "scheduler": (lambda: SchedulerContract(), "prove", 1, "combinational: one step is every case"),
    "scheduler_pairs": (lambda: SchedulerContract(rows=8, pairs=True), "prove", 1,
                        "combinational (the h200 window's scheduler)"),
    "scheduler_cover": (lambda: SchedulerContract(rows=4, quads=2, line_bits=2), "cover", 1,
                        "covers need one step"),
    "completion": (lambda: SchedulerCompletion(), "bmc", 10,
                   "8 rows finish within 8 cycles; after that nothing changes"),
    "decompress": (lambda: DecompressorSpec(), "prove", 1, "combinational"),
    # the load shuffle: its network on a window, and its window on each policy's ring
    "shuffle_network": (lambda: ShuffleNetworkSpec(), "bmc", 1,
                        "combinational: one step covers every input (all load forms, beats, windows)"),
    "shuffle_window": (lambda: ShuffleWindowSpec(), "bmc", 1,
                       "combinational: every aligned start on the h200 ring (12 blocks)"),
    "shuffle_window_packed": (lambda: [ShuffleWindowSpec(Params(schedule="packed").row_blocks, start=b)
                                       for b in range(Params(schedule="packed").row_blocks)], "bmc", 1,
                              "the same on the packed ring (24 blocks), a part a start"),
    "broken_shuffle_network": (lambda: ShuffleNetworkSpec(_SwappedNetwork), "bmc", 1, "must FAIL"),
    "broken_shuffle_window": (lambda: ShuffleWindowSpec(window_cls=_ShiftedWindow), "bmc", 1, "must FAIL"),
    "store_shuffle": (lambda: StoreShuffleSpec(), "prove", 1, "combinational"),
    "write_select": (lambda: WriteSelect(), "bmc", 10,
                     "from a take, a window's 8 rows are written within 8 steps (and idle steps "
                     "keep the state): reset, take and 8 steps are every case"),
    "write_select_cover": (lambda: WriteSelect(), "cover", 10, "the last row of a window after others of its quad"),
    "broken_write_select": (lambda: WriteSelect(crossbar_cls=BrokenWriteSelect), "bmc", 10, "must FAIL"),
    "streams": (lambda: StreamRules(), "bmc", 10,
                "bounded: a refused instruction's beat through both port slices, the check and "
                "the address stage (step 9) and a stalled result beat (step 10) fit in 10 steps "
                "(streams_cover)"),
    "streams_cover": (lambda: StreamRules(), "cover", 12, "a refused instruction's beat; a stalled result beat"),
    "streams_packed": (lambda: StreamRules("packed"), "bmc", 10, "the same under packed (pairs, six entries)"),
    "owed": (lambda: OwedContract(), "prove", 2, "induction: the counts are the reference's"),
    "owed_cover": (lambda: OwedContract(), "cover", 12, "beats owed ahead and behind a stmatrix waiting for its own"),
    "slice": (lambda: SliceContract(), "prove", 2, "induction over the two entries and their valid bits"),
    "slice_cover": (lambda: SliceContract(), "cover", 4, "a beat taken into the skid entry while the output waits"),
    "broken_slice": (lambda: SliceContract(BrokenSlice), "prove", 4, "must FAIL: two held beats and a third taken"),
    "forward_slice": (lambda: SliceContract(ForwardSlice), "prove", 2, "induction over the one entry and its valid bit"),
    "broken_forward_slice": (lambda: SliceContract(BrokenForwardSlice), "prove", 3,
                             "must FAIL: a held beat overwritten while the output waits"),
    "broken_owed": (lambda: OwedContract(BrokenOwed), "prove", 4,
                    "must FAIL: a store taken, a refusal behind it, a beat: the base case reaches it"),
    "pass_queue": (lambda: PassQueueOrder(), "prove", 3,
                   "induction over the queue's state, with its invariants asserted"),
    "pass_queue_cover": (lambda: PassQueueOrder(), "cover", 12, "three passes through and a full queue"),
    "ring": (lambda: RingRule(), "prove", 3, "induction: the go-ahead register and the release invariant"),
    "ring_packed": (lambda: RingRule("packed"), "prove", 3,
                    "the packed ring (whole-pass windows, 24 blocks, six entries, pairs)"),
    "ring_packed_cover": (lambda: RingRule("packed"), "cover", 8, "a pair's second pass waits while its first goes"),
    "pair": (lambda: PairContract(), "prove", 1, "combinational: one step is every case (32 rows)"),
    "broken_pair": (lambda: PairContract(rows=8, crossbar_cls=BrokenPair), "prove", 1, "must FAIL"),
    "ring_cover": (lambda: RingRule(), "cover", 8, "a window served while another entry reads"),
    "broken_ring": (_broken_ring, "prove", 3, "must FAIL"),
    "broken_pass_queue": (_broken_queue, "prove", 3, "must FAIL"),
    "broken": (lambda: SchedulerContract(BrokenBroadcast), "prove", 1, "must FAIL"),
    "broken_pairs": (lambda: SchedulerContract(BrokenBroadcast, rows=8, pairs=True), "prove", 1, "must FAIL"),
}
