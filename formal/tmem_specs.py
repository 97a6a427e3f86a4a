"""Formal specifications of the Tensor Memory quadrant's components (see specs.py for the
conventions: undriven inputs are free, assumptions constrain the environment).

The gather and scatter are checked move by move against the step table
(:func:`tensorlsu.sim.tmem_plan.schedule`, generated from ``layouts.tmem_table``; the test
``tb/tmem/test_quadrant.py::test_step_table_is_the_layout_table`` checks that its moves are exactly the
table's cells), for every step row and all data, with the lanes where a row names them (lane
offset 0); the lane helpers they call are proven for every offset on their own
(``tmem_lanes``); ``all_offsets=True`` checks the composition for every offset at once (slow).
The assertions are written per row with constant slices, independently of the components'
ROMs and multiplexers. The reduction is checked against a specification written with sign/magnitude
comparisons (not the components' ordering keys).
"""

from amaranth import Array, Cat, Const, Elaboratable, Module, Mux, Signal, Value
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume, Cover
from specs import handshake_rules  # noqa: E402  (formal/ is on the path: run.py)
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.params import TmemParams
from tensorlsu.hdl.tmem.gather import TmemGather
from tensorlsu.hdl.tmem.lanes import to_physical, to_virtual
from tensorlsu.sim.tmem_plan import PORTS, SHAPES, schedule
from tensorlsu.hdl.tmem.quadrant import TmemQuadrant
from tensorlsu.hdl.tmem.records import CANONICAL_NAN, LANES, Kind, RedType
from tensorlsu.hdl.tmem.reduce import TmemReduce
from tensorlsu.hdl.tmem.scatter import TmemScatter
from tensorlsu.hdl.tmem.steps import successors

__all__ = ["TMEM_SPECS"]

HALF = LANES // 2


def _offsets(v, all_offsets=False):
    """Lane offsets a row is checked with: 0 for 32x32b (the quadrant's first lane); for a
    16-lane form 0 … 16 with ``all_offsets``, else 0 (the lane helpers are proven for every
    offset on their own, TmemLanesSpec: the gather and scatter only call them)."""
    return range(HALF + 1) if all_offsets and schedule().keys[v.cls][1] != "32x32b" else [0]


class TmemLanesSpec(Elaboratable):
    """The lane helpers (hdl/tmem/lanes.py) for every offset and all data: virtual lane k of a
    16-lane form is physical lane offset + k; a written physical lane L takes virtual lane
    L − offset, and is reached exactly when 0 ≤ L − offset < 16 (every lane with 32x32b)."""

    def elaborate(self, platform):
        m = Module()
        phys = [Signal(32, name=f"phys{k}") for k in range(LANES)]
        virt = [Signal(32, name=f"virt{k}") for k in range(LANES)]
        off, wide = Signal(range(LANES + 1)), Signal()
        for sig in phys + virt + [off, wide]:
            m.d.comb += sig.eq(AnySeq(len(sig)))
        m.d.comb += Assume(off <= HALF)
        got_v = to_virtual(m, phys, off)
        got_p = to_physical(m, virt, wide, off)
        for o in range(HALF + 1):
            with m.If(off == o):
                for k in range(LANES):
                    want = phys[o + k] if k < HALF else phys[k]
                    m.d.comb += Assert(got_v[k] == want, "virtual lane k is physical lane offset + k")
                for lane in range(LANES):
                    value, reached = got_p[lane]
                    inside = 0 <= lane - o < HALF
                    with m.If(wide):
                        m.d.comb += Assert(reached & (value == virt[lane]), "32x32b lanes stay")
                    with m.Else():
                        m.d.comb += Assert(reached == int(inside), "a 16-lane form reaches its 16 lanes")
                        if inside:
                            m.d.comb += Assert(value == virt[lane - o], "lane L takes virtual lane L - offset")
        return m


def _phys(lane: int, off: int) -> int:
    return off + lane if lane < HALF else lane


class TmemGatherSpec(Elaboratable):
    """A step's words land in the beat's register pieces its row names, and every other piece
    keeps its value, for every load row, lane offset and all data (three steps: the words
    loaded, taken, then the beat)."""

    def __init__(self, rows=None, gather_cls=TmemGather, all_offsets=False):
        self.rows, self.gather_cls, self.all_offsets = rows, gather_cls, all_offsets

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.gather_cls()
        sch = schedule()
        for sig in (d.words, d.var, d.lane_off, d.load, d.take):
            m.d.comb += Value.cast(sig).eq(AnySeq(len(Value.cast(sig))))
        # what was offered two cycles ago (loaded), and whether it was taken a cycle ago
        words = [Value.cast(d.words[k]) for k in range(PORTS)]
        w1 = [Signal(len(w), name=f"words{k}_1") for k, w in enumerate(words)]
        pw = [Signal(len(w), name=f"words{k}_2") for k, w in enumerate(words)]
        var1, off1, load1 = Signal.like(d.var), Signal.like(d.lane_off), Signal()
        pvar, poff, pload, ptake = Signal.like(d.var), Signal.like(d.lane_off), Signal(), Signal()
        pbeat = Signal(len(Value.cast(d.beat)))
        init = Signal(2)
        m.d.sync += [init.eq(Cat(1, init[0])), var1.eq(d.var), off1.eq(d.lane_off), load1.eq(d.load),
                     pvar.eq(var1), poff.eq(off1), pload.eq(load1), ptake.eq(d.take),
                     pbeat.eq(Value.cast(d.beat))]
        m.d.sync += [w1[k].eq(words[k]) for k in range(PORTS)] + [pw[k].eq(w1[k]) for k in range(PORTS)]
        beat = Value.cast(d.beat)
        m.d.comb += Assume(d.lane_off <= (HALF if self.all_offsets else 0))
        with m.If(init[0] & ~ptake):
            m.d.comb += Assert(beat == pbeat, "no take: the beat keeps its value")
        ptake = ptake & pload & init[1]
        for vi, v in enumerate(sch.variants):
            if v.store or (self.rows is not None and vi not in self.rows):
                continue
            moved = {}
            for (slot, t, piece), (port, lane) in v.moves:
                pieces = [(piece, 0)] if v.packed else [(0, 0), (1, 1)]
                for dst, src in pieces:
                    moved[(slot, t, dst)] = (port, lane, src)
            for off in _offsets(v, self.all_offsets):
                with m.If(ptake & (pvar == vi) & (poff == off)):
                    for slot in range(2):
                        for t in range(LANES):
                            for h in (0, 1):
                                at = 1024 * slot + 32 * t + 16 * h
                                if (slot, t, h) in moved:
                                    port, lane, sh = moved[(slot, t, h)]
                                    src = 32 * _phys(lane, off) + 16 * sh
                                    m.d.comb += Assert(beat[at:at + 16] == pw[port][src:src + 16],
                                                       "the row's pieces come from its lanes")
                                else:
                                    m.d.comb += Assert(beat[at:at + 16] == pbeat[at:at + 16],
                                                       "pieces the row does not deliver are kept")
        return m


class TmemScatterSpec(Elaboratable):
    """The words a store step writes hold the beat's register pieces in the lanes its row names,
    and only those lanes are written (the upper half zero with .unpack::16b), for every store
    row, lane offset and all data (combinational)."""

    def __init__(self, rows=None, all_offsets=False):
        self.rows, self.all_offsets = rows, all_offsets

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = TmemScatter()
        sch = schedule()
        # the sequencer's row and the decode stage's class, as indices (given one-hot)
        var, cls = Signal(range(len(sch.variants)), name="var"), Signal(range(len(sch.keys)), name="cls")
        for sig in (d.beat, var, cls, d.lane_off, d.start, d.advance):
            m.d.comb += Value.cast(sig).eq(AnySeq(len(Value.cast(sig))))
        m.d.comb += [Assume(var < len(sch.variants)), Assume(cls < len(sch.keys)),
                     d.var_hot.eq(1 << var), d.cls_hot.eq(1 << cls),
                     Assume(d.lane_off <= (HALF if self.all_offsets else 0))]
        # the selects are registers: in the first cycle the row is loaded (an instruction's
        # first, or the one after a row), in the second its words are checked
        checking, row = Signal(name="checking"), Signal.like(var, name="row")
        m.d.sync += [checking.eq(1), row.eq(Mux(d.start, Array(Const(x, len(var)) for x in sch.first)[cls],
                                                Array(Const(x, len(var)) for x in successors())[var]))]
        with m.If(~checking):
            m.d.comb += Assume(d.start | d.advance)
        with m.Else():
            m.d.comb += Assume(~d.start & ~d.advance)
        beat = Value.cast(d.beat)
        for vi, v in enumerate(sch.variants):
            if not v.store or (self.rows is not None and vi not in self.rows):
                continue
            wide = sch.keys[v.cls][1] == "32x32b"
            for off in _offsets(v, self.all_offsets):
                with m.If(checking & (row == vi) & (d.lane_off == off)):
                    m.d.comb += Assume(d.wide == wide)
                    written = {}
                    for (port, lane), (slot, t, piece) in v.moves:
                        written[(port, _phys(lane, off))] = (slot, t, piece)
                    for port in range(PORTS):
                        word = Value.cast(d.words[port])
                        for lane in range(LANES):
                            en = d.lanes[port][lane]
                            if (port, lane) not in written:
                                m.d.comb += Assert(~en, "lanes the row does not name are not written")
                                continue
                            slot, t, piece = written[(port, lane)]
                            got = word[32 * lane:32 * lane + 32]
                            at = 1024 * slot + 32 * t
                            want = Cat(beat[at + 16 * piece:at + 16 * piece + 16], Const(0, 16)) \
                                if v.packed else beat[at:at + 32]
                            m.d.comb += Assert(en & (got == want), "each written lane holds its register piece")
        return m


def _better(m, a, b, red_max, red_type):
    """a beats b as the reduction orders them, by sign and magnitude (f32: −0.0 below +0.0)."""
    sa, sb, ma, mb = a[31], b[31], a[:31], b[:31]
    f_less = Mux(sa != sb, sa, Mux(sa, ma > mb, ma < mb))
    less = Signal(name="spec_less")
    with m.Switch(red_type):
        with m.Case(RedType.F32):
            m.d.comb += less.eq(f_less)
        with m.Case(RedType.S32):
            m.d.comb += less.eq(a.as_signed() < b.as_signed())
        with m.Default():
            m.d.comb += less.eq(a < b)
    return Mux(red_max, (a != b) & ~less, less)


class _BrokenReduce(TmemReduce):
    """A deliberately broken reduction: it folds a beat's second register even when the beat
    has one (the reduction proof must fail)."""

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = TmemReduce()
        for name in ("beat", "fold", "clear", "red_max", "red_type", "abs", "nan"):
            m.d.comb += getattr(inner, name).eq(getattr(self, name))
        m.d.comb += [inner.two.eq(1), self.redval.eq(inner.redval)]
        return m


class TmemReduceSpec(Elaboratable):
    """After a clear and two register beats (the second with one or two registers), a thread's
    redval is the reduction's specification over those values: the least (.min) or greatest
    (.max) non-NaN value, in .f32 after .abs; the canonical NaN when every value is NaN or, with
    .NaN, when any is. For all values, types and flags of one thread (thread 0; every thread is
    the same logic)."""

    def __init__(self, reduce_cls=TmemReduce):
        self.reduce_cls = reduce_cls

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.reduce_cls()
        vals = [AnyConst(32) for _ in range(4)]
        two_b = AnyConst(1)
        for sig in (d.red_max, d.red_type, d.abs, d.nan):
            m.d.comb += Value.cast(sig).eq(AnyConst(len(Value.cast(sig))))
        m.d.comb += Assume(d.red_type.as_value() != 3)
        m.d.comb += Assume((d.red_type == RedType.F32) | (~d.abs & ~d.nan))
        # clear, two folds, then redval once the reduction holds the last fold
        done = 2 + d.LATENCY
        step = Signal(range(done + 1))
        with m.If(step != done):
            m.d.sync += step.eq(step + 1)
        m.d.comb += [d.clear.eq(step == 0), d.fold.eq((step == 1) | (step == 2)),
                     d.two.eq(Mux(step == 2, two_b, 1))]
        m.d.comb += [d.beat[0][0].eq(Mux(step == 1, vals[0], vals[2])),
                     d.beat[1][0].eq(Mux(step == 1, vals[1], vals[3]))]
        f32 = d.red_type == RedType.F32
        present = [Const(1), Const(1), Const(1), two_b]
        mags = [Signal(32, name=f"spec_in{k}") for k in range(4)]
        nan = []
        for k, v in enumerate(vals):
            m.d.comb += mags[k].eq(Mux(f32 & d.abs, Cat(v[:31], Const(0, 1)), v))
            nan.append(present[k] & f32 & (mags[k][23:31] == 0xFF) & (mags[k][:23] != 0))
        valid = [present[k] & ~nan[k] for k in range(4)]
        any_nan, any_valid = Cat(*nan).any(), Cat(*valid).any()
        with m.If(step == done):
            with m.If(any_nan & (d.nan | ~any_valid)):
                m.d.comb += Assert(d.redval[0] == CANONICAL_NAN, "a NaN result is the canonical NaN")
            with m.Else():
                best = []
                for i in range(4):
                    beaten = Cat(*[valid[j] & _better(m, mags[j], mags[i], d.red_max, d.red_type)
                                   for j in range(4) if j != i]).any()
                    best.append(valid[i] & ~beaten & (d.redval[0] == mags[i]))
                m.d.comb += Assert(Cat(*best).any(), "redval is the extreme non-NaN value")
            m.d.comb += Cover(any_nan & ~d.nan & any_valid & (d.red_max), "NaN skipped by .max")
        return m


class TmemStreamRules(Elaboratable):
    """A quadrant's result and dump streams keep the handshake rules, beats come only for an
    instruction in flight (at most four: two in the decode stage, a load and the next in the
    core), one DONE or REDVAL beat or a register beat marked last ends it, and the environment
    keeps the rules on the input streams."""

    def __init__(self, columns=32, quadrant=1):
        self.dut = TmemQuadrant(TmemParams(columns), quadrant)

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        ins = {"instr": d.instr, "store": d.store, "fill": d.fill, "dump_req": d.dump_req}
        outs = {"result": d.result, "dump": d.dump}
        handshake_rules(m, ins, outs)
        # instructions taken whose last beat has not left: two in the decode stage, and in the
        # core a load lets the next one in while its last beats drain, so at most four
        inflight = Signal(range(5))
        taken = d.instr.valid & d.instr.ready
        ended = d.result.valid & d.result.ready & d.result.payload.last
        m.d.sync += inflight.eq(inflight + taken - ended)
        m.d.comb += Assert(~taken | (inflight < 4), "at most four instructions in flight")
        with m.If(inflight == 0):
            m.d.comb += Assert(~d.result.valid, "no result beat without an instruction in flight")
            m.d.comb += Assert(~d.store.ready, "no store beat taken without a store in flight")
        with m.If(d.result.valid & (d.result.payload.kind != Kind.REGS)):
            m.d.comb += Assert(d.result.payload.last, "DONE and REDVAL beats end their instruction")
        m.d.comb += Cover(d.result.valid & (d.result.payload.kind == Kind.DONE)
                          & (d.result.payload.error == Error.NONE), "a store completes")
        return m


def _load_rows(shape):
    sch = schedule()
    return {vi for vi, v in enumerate(sch.variants) if not v.store and sch.keys[v.cls][1] == shape}


def _store_rows():
    return {vi for vi, v in enumerate(schedule().variants) if v.store}


class _BrokenGather(TmemGather):
    """A deliberately broken gather: port 0's lanes 3 and 4 swapped on the way in (the gather
    proof must fail)."""

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = TmemGather()
        w = self.words[0]
        m.d.comb += [inner.words[0].eq(Cat(w[:96], w[128:160], w[96:128], w[160:])),
                     inner.var.eq(self.var), inner.lane_off.eq(self.lane_off), inner.load.eq(self.load),
                     inner.take.eq(self.take), self.beat.eq(inner.beat)]
        m.d.comb += [inner.words[k].eq(self.words[k]) for k in range(1, PORTS)]
        return m


TMEM_SPECS = {
    "tmem_lanes": (lambda: TmemLanesSpec(), "bmc", 1, "the lane helpers for every offset and all data"),
    **{f"tmem_gather_{s}": (lambda s=s: TmemGatherSpec(_load_rows(s)), "bmc", 3,
                            f"every {s} load row and all data (lane offset 0)") for s in SHAPES},
    "broken_tmem_gather": (lambda: TmemGatherSpec(_load_rows("32x32b"), _BrokenGather), "bmc", 3, "must FAIL"),
    "tmem_scatter": (lambda: TmemScatterSpec(), "bmc", 2,
                     "every store row, loaded as a first row or a successor, and all data (lane offset 0)"),
    # depth: a clear, two folds, the reduction's stages and the check
    "tmem_reduce": (lambda: TmemReduceSpec(), "bmc", 3 + TmemReduce.LATENCY,
                    "the reduction for all values, types and flags (its three stages)"),
    "broken_tmem_reduce": (lambda: TmemReduceSpec(_BrokenReduce), "bmc", 3 + TmemReduce.LATENCY, "must FAIL"),
    "tmem_streams": (lambda: TmemStreamRules(), "bmc", 8, "a quadrant's streams, bounded"),
    "tmem_streams_cover": (lambda: TmemStreamRules(), "cover", 12, "a store completes"),
}
