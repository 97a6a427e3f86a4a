"""One lane quadrant of Tensor Memory and the tcgen05.ld / tcgen05.st datapath that serves it.

Tensor Memory is 128 lanes × ``columns`` 32-bit columns; warp ``w`` of a warpgroup reaches only
lanes ``32 (w mod 4)`` … ``+31``, so each quadrant is its own memory with its own ports, and
four warps run at once. A quadrant's memory holds one *column* of its 32 lanes per word (1024
bits), with two ports: every register of every form touches the same columns in all its lanes,
so one step reads or writes two whole columns (:mod:`tensorlsu.hdl.tmem_plan`).

Latency and rate (loads): the first step is issued the cycle after the instruction is taken;
the memory answers one cycle later; a beat leaves the cycle after its last step's data arrive.
A beat of one or two registers every one or two steps (:func:`~tensorlsu.hdl.tmem_plan.plan`);
a ``.red`` load adds one ``redval`` beat. Stores: each register beat taken is written over its
steps; one completion beat follows the last write. One instruction at a time per quadrant.

Assumptions: taddr's lane lies in this quadrant's range for a legal instruction (the check
reports QUADRANT otherwise, and the instruction touches nothing); ``columns`` is a power of two
from 32 to 512.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tensorlsu.sim.ptx import TCGEN05_REGS_PER_X1

from .records import Error
from .tmem_plan import NUMS, PORTS, SHAPES, cols_of, plan

__all__ = ["TmemParams", "RedType", "Kind", "tmem_instr_layout", "tmem_result_layout",
           "TmemQuadrant", "LANES", "CANONICAL_NAN"]

#: Lanes of one quadrant (and threads of a warp).
LANES = 32
#: The NaN a reduction returns (docs/ARCHITECTURE.md).
CANONICAL_NAN = 0x7FFFFFFF
#: Registers a thread has at most in one instruction (Table 49).
MAX_REGS = 128


@dataclass(frozen=True)
class TmemParams:
    """Parameters of the Tensor Memory: ``columns`` per lane, a power of two from 32 to 512."""

    columns: int = 512

    def __post_init__(self):
        c = self.columns
        if not isinstance(c, int) or c < 32 or c > 512 or c & (c - 1):
            raise ValueError(f"columns must be a power of two from 32 to 512, not {c!r}")

    @property
    def col_bits(self) -> int:
        return (self.columns - 1).bit_length()


class RedType(enum.Enum, shape=unsigned(2)):
    """Element type of a ``.red`` load."""

    F32 = 0
    U32 = 1
    S32 = 2


class Kind(enum.Enum, shape=unsigned(2)):
    """What a result beat carries."""

    #: One or two destination registers.
    REGS = 0
    #: The reduction of a ``.red`` load, one word per thread (in ``data[0]``).
    REDVAL = 1
    #: A store's completion, or a refusal (``error``).
    DONE = 2


def tmem_instr_layout() -> data.StructLayout:
    """A quadrant's instruction: the decoded form (``store``, ``shape_id``: index into
    :data:`~tensorlsu.hdl.tmem_plan.SHAPES`, ``num_log2``: log2 of .num, ``pack``, the reduction), taddr,
    the warp's index in its warpgroup (mod 4), and immHalfSplitoff (``has_split``: the operand
    was given)."""
    return data.StructLayout({
        "store": 1, "shape_id": unsigned(3), "num_log2": unsigned(3), "pack": 1,
        "red": 1, "red_max": 1, "red_type": RedType, "abs": 1, "nan": 1,
        "taddr": unsigned(32), "warp": unsigned(2), "split": signed(17), "has_split": 1})


def tmem_result_layout() -> data.StructLayout:
    """A quadrant's result beat: up to two registers of every thread (``reg``, ``reg2``: their
    indices; ``two``: the second is present), what the beat is, whether it is the last of
    its instruction, and the error code (on a refusal, its only beat)."""
    return data.StructLayout({
        "data": data.ArrayLayout(data.ArrayLayout(unsigned(32), LANES), 2),
        "reg": unsigned(7), "reg2": unsigned(7), "two": 1, "kind": Kind, "last": 1, "error": Error})


# --------------------------------------------------------------------------------------
# The schedule as tables: one *variant* per (class, beat, step)
# --------------------------------------------------------------------------------------

def _classes():
    """Every (op, shape, pack, period registers) a form can run as, with a representative
    .num: the classes share their steps; the .num sets only the number of periods."""
    out = {}
    for op in ("tcgen05.ld", "tcgen05.st"):
        for shape in SHAPES:
            for pack in (False, True):
                for num in NUMS:
                    if TCGEN05_REGS_PER_X1[shape] * num > MAX_REGS:
                        continue
                    pl = plan(op, shape, num, pack)
                    key = (op, shape, pack, pl.period_regs)
                    out.setdefault(key, pl)
    return out


@dataclass(frozen=True)
class _Variant:
    cls: int
    beat: int
    step: int
    ports: tuple            # (off, half) or None per port
    last_step: bool         # the beat's last step
    last_beat: bool         # the period's last beat
    regs: tuple             # the beat's registers in the period
    #: load: ((slot, thread, piece), (port, lane)) pieces this step delivers;
    #: store: ((port, lane), (thread, piece)) cells this step writes.
    moves: tuple


def _variants():
    classes = _classes()
    keys = sorted(classes, key=str)
    out = []
    first = {}
    for ci, key in enumerate(keys):
        op, shape, pack, _ = key
        pl = classes[key]
        first[key] = len(out)
        for bi, beat in enumerate(pl.beats):
            for si, step in enumerate(beat.steps):
                where = {pc: p for p, pc in enumerate(step.ports) if pc is not None}
                moves = []
                for slot, r in enumerate(beat.regs):
                    for t, cells in enumerate(pl.cells[r]):
                        for piece, c in enumerate(cells):
                            p = where.get((c.off, c.half))
                            if p is None:
                                continue
                            if op == "tcgen05.ld":
                                moves.append(((slot, t, piece), (p, c.lane)))
                            else:
                                moves.append(((p, c.lane), (t, piece)))
                out.append(_Variant(ci, bi, si, step.ports, si == len(beat.steps) - 1,
                                    bi == len(pl.beats) - 1, beat.regs, tuple(moves)))
    return keys, classes, first, out


# --------------------------------------------------------------------------------------
# The quadrant
# --------------------------------------------------------------------------------------

class TmemQuadrant(wiring.Component):
    """Lanes ``32 quadrant`` … ``+31`` of Tensor Memory and their tcgen05.ld / tcgen05.st port.

    Ports: ``instr`` (:func:`tmem_instr_layout`), ``store`` (one source register of every
    thread per beat, register 0 first), ``result`` (:func:`tmem_result_layout`), ``fill``
    (one column of all 32 lanes per beat, while idle) and ``dump_req`` / ``dump`` (a column
    index in, that column of all 32 lanes out the next cycle, while idle).
    """

    def __init__(self, params: TmemParams = TmemParams(), quadrant: int = 0):
        self.params, self.quadrant = params, quadrant
        cb = params.col_bits
        super().__init__({
            "instr": In(stream.Signature(tmem_instr_layout())),
            "store": In(stream.Signature(data.ArrayLayout(unsigned(32), LANES))),
            "result": Out(stream.Signature(tmem_result_layout())),
            "fill": In(stream.Signature(data.StructLayout({
                "col": unsigned(cb), "data": data.ArrayLayout(unsigned(32), LANES)}))),
            "dump_req": In(stream.Signature(unsigned(cb))),
            "dump": Out(stream.Signature(data.ArrayLayout(unsigned(32), LANES))),
            "idle": Out(1),
        })

    # -- the instruction check ---------------------------------------------------------
    def _check(self, m, ins, keys):
        """Error code, class index, periods and lane offset of an instruction."""
        p = self.params
        err = Signal(Error)
        cls = Signal(range(max(len(keys), 2)))
        periods = Signal(range(MAX_REGS + 1))
        nregs = Signal(range(MAX_REGS + 1))
        span = Signal(range(1024))     # columns one half spans
        supported = Signal()
        with m.Switch(Cat(ins.num_log2, ins.shape_id, ins.pack, ins.store)):
            for op in ("tcgen05.ld", "tcgen05.st"):
                for si, shape in enumerate(SHAPES):
                    for pack in (False, True):
                        for ni, num in enumerate(NUMS):
                            if TCGEN05_REGS_PER_X1[shape] * num > MAX_REGS:
                                continue
                            pl = plan(op, shape, num, pack)
                            key = (op, shape, pack, pl.period_regs)
                            with m.Case(ni | si << 3 | int(pack) << 6 | (op == "tcgen05.st") << 7):
                                m.d.comb += [supported.eq(1), cls.eq(keys.index(key)),
                                             periods.eq(pl.periods),
                                             nregs.eq(pl.periods * pl.period_regs),
                                             span.eq(cols_of(shape, num, pack))]
        lane0, col0 = ins.taddr[16:], ins.taddr[:16]
        base = self.quadrant * LANES
        wide = ins.shape_id == SHAPES.index("32x32b")
        x2 = ins.shape_id == SHAPES.index("16x32bx2")
        red_ok = ((ins.shape_id == SHAPES.index("32x32b")) | x2) & ~ins.pack & ~ins.store & (ins.num_log2 != 0)
        red_ok &= (ins.red_type == RedType.F32) | (~ins.abs & ~ins.nan)
        red_ok &= ins.red_type.as_value() != 3
        last_col = col0 + span - 1 + Mux(x2, ins.split, 0)
        # in the model's order: the split, the lanes, the columns
        with m.If(~supported | (ins.red & ~red_ok)):
            m.d.comb += err.eq(Error.UNSUPPORTED)
        with m.Elif(x2 & (~ins.has_split | (ins.split < 0) | (ins.store & (ins.split < span)))):
            m.d.comb += err.eq(Error.SPLIT)
        with m.Elif(~x2 & ins.has_split):
            m.d.comb += err.eq(Error.SPLIT)
        with m.Elif((ins.warp != self.quadrant) | (lane0 < base)
                    | (lane0 + Mux(wide, 32, 16) > base + LANES)):
            m.d.comb += err.eq(Error.QUADRANT)
        with m.Elif(last_col >= p.columns):
            m.d.comb += err.eq(Error.COLUMNS)
        return err, cls, periods, nregs, lane0 - base

    def elaborate(self, platform):
        m = Module()
        p = self.params
        keys, classes, first, variants = _variants()
        nvar = len(variants)

        m.submodules.mem = mem = Memory(shape=unsigned(32 * LANES), depth=p.columns, init=[])
        rd = [mem.read_port(domain="sync") for _ in range(PORTS)]
        wr = [mem.write_port(granularity=32) for _ in range(PORTS)]

        ins = self.instr.payload
        err_in, cls_in, periods_in, nregs_in, lane_off_in = self._check(m, ins, keys)

        # -- instruction registers ----------------------------------------------------------
        busy = Signal()
        store = Signal()
        err = Signal(Error)
        refusing = Signal()           # a refused instruction: drain its store beats, one beat out
        col_base = Signal(17)         # taddr's column + period · period columns
        split = Signal(17)
        lane_off = Signal(range(17))  # taddr's lane from the quadrant's first (0 … 16)
        period = Signal(range(MAX_REGS + 1))
        periods = Signal(range(MAX_REGS + 1))
        drain = Signal(range(MAX_REGS + 1))
        var = Signal(range(max(nvar, 2)))
        red = Signal()
        red_max, red_type, red_abs, red_nan = Signal(), Signal(RedType), Signal(), Signal()
        m.d.comb += self.idle.eq(~busy)

        tab = lambda f, shape=unsigned(16): Array(Const(f(v), shape) for v in variants)  # noqa: E731
        v_cols = [[tab(lambda v, k=k, j=j: (v.ports[k] or (0, 0))[j]) for j in (0, 1)]
                  for k in range(PORTS)]
        v_on = [tab(lambda v, k=k: v.ports[k] is not None, 1) for k in range(PORTS)]
        v_last_step = tab(lambda v: v.last_step, 1)
        v_last_beat = tab(lambda v: v.last_beat, 1)
        v_reg = tab(lambda v: v.regs[0], unsigned(7))
        v_reg2 = tab(lambda v: v.regs[-1], unsigned(7))
        v_two = tab(lambda v: len(v.regs) == 2, 1)
        v_next = tab(lambda v: variants.index(v) + 1 if not (v.last_step and v.last_beat)
                     else first[keys[v.cls]], unsigned(16))
        pcols = Array(Const(classes[k].period_cols, 16) for k in keys)
        pregs = Array(Const(classes[k].period_regs, 8) for k in keys)
        cls_first = Array(Const(first[k], 16) for k in keys)
        cls = Signal(range(max(len(keys), 2)))

        addr = [Signal(17, name=f"addr{k}") for k in range(PORTS)]
        for k in range(PORTS):
            m.d.comb += addr[k].eq(col_base + v_cols[k][0][var] + Mux(v_cols[k][1][var], split, 0))
        final_step = v_last_step[var] & v_last_beat[var] & (period == periods - 1)

        # -- accept ------------------------------------------------------------------------
        m.d.comb += self.instr.ready.eq(~busy)
        with m.If(self.instr.valid & self.instr.ready):
            m.d.sync += [busy.eq(1), store.eq(ins.store), err.eq(err_in),
                         refusing.eq(err_in != Error.NONE), col_base.eq(ins.taddr[:16]),
                         split.eq(ins.split), lane_off.eq(lane_off_in), period.eq(0),
                         periods.eq(periods_in), drain.eq(nregs_in), cls.eq(cls_in),
                         var.eq(cls_first[cls_in]), red.eq(ins.red), red_max.eq(ins.red_max),
                         red_type.eq(ins.red_type), red_abs.eq(ins.abs), red_nan.eq(ins.nan)]

        def advance():
            with m.If(v_last_step[var] & v_last_beat[var]):
                m.d.sync += [period.eq(period + 1), col_base.eq(col_base + pcols[cls])]
            m.d.sync += var.eq(v_next[var])

        res = self.result.payload
        res_valid = Signal()
        m.d.comb += self.result.valid.eq(res_valid)
        res_taken = self.result.valid & self.result.ready

        # 16-lane shapes: the lanes from taddr's lane; 32x32b starts at lane 0 of the quadrant
        def to_virtual(phys):
            return [Array(phys)[lane_off + k] if k < 16 else phys[k] for k in range(LANES)]

        # -- load: steps, memory, assembly of beats --------------------------------------------
        issuing = Signal()
        s1_valid, s1_var, s1_period = Signal(), Signal.like(var), Signal.like(period)
        s1_final = Signal()
        asm = Signal(data.ArrayLayout(data.ArrayLayout(unsigned(32), LANES), 2))
        out_regs = Signal(data.ArrayLayout(data.ArrayLayout(unsigned(32), LANES), 2))
        s1_take = Signal()
        beat_ready = ~res_valid | self.result.ready
        m.d.comb += s1_take.eq(s1_valid & beat_ready)   # the beat being assembled is free
        can_issue = ~s1_valid | s1_take
        load_run = busy & ~store & ~refusing
        load_done = Signal()        # every step issued
        m.d.comb += issuing.eq(load_run & ~load_done & can_issue)
        for k in range(PORTS):
            m.d.comb += [rd[k].addr.eq(addr[k]), rd[k].en.eq(issuing)]
        with m.If(issuing):
            advance()
            with m.If(final_step):
                m.d.sync += load_done.eq(1)
        with m.If(can_issue):
            m.d.sync += [s1_valid.eq(issuing), s1_var.eq(var), s1_period.eq(period),
                         s1_final.eq(final_step)]

        phys = [[rd[k].data[32 * lane:32 * lane + 32] for lane in range(LANES)] for k in range(PORTS)]
        virt = [to_virtual(phys[k]) for k in range(PORTS)]
        with m.If(s1_take):
            with m.Switch(s1_var):
                for vi, v in enumerate(variants):
                    if keys[v.cls][0] != "tcgen05.ld":
                        continue
                    with m.Case(vi):
                        for (slot, t, piece), (port, lane) in v.moves:
                            src = virt[port][lane]
                            if len(classes[keys[v.cls]].cells[0][0]) == 2:   # 16-bit packing
                                m.d.sync += asm[slot][t][16 * piece:16 * piece + 16].eq(src[:16])
                            else:
                                m.d.sync += asm[slot][t].eq(src)

        # the assembled beat: leaves once its last step's data are in
        beat_reg, beat_reg2, beat_two, beat_final = Signal(7), Signal(7), Signal(), Signal()
        beat_in = Signal()
        m.d.comb += beat_in.eq(s1_take & v_last_step[s1_var])
        with m.If(beat_in):
            m.d.sync += [beat_reg.eq(s1_period * pregs[cls] + v_reg[s1_var]),
                         beat_reg2.eq(s1_period * pregs[cls] + v_reg2[s1_var]),
                         beat_two.eq(v_two[s1_var]), beat_final.eq(s1_final)]

        # -- reduction: folded as register beats leave ---------------------------------------
        acc = Array(Signal(32, name=f"acc{t}") for t in range(LANES))
        seen = Array(Signal(name=f"seen{t}") for t in range(LANES))
        nan_in = Array(Signal(name=f"nan{t}") for t in range(LANES))
        red_out = [Signal(32, name=f"redval{t}") for t in range(LANES)]
        for t in range(LANES):
            a, s_, n_ = acc[t], seen[t], nan_in[t]
            vals = [out_regs[0][t], out_regs[1][t]]
            cur_a, cur_s, cur_n = a, s_, n_
            for j, val in enumerate(vals):
                mag = Signal(32, name=f"red_in{t}_{j}")
                m.d.comb += mag.eq(Mux((red_type == RedType.F32) & red_abs, val & 0x7FFFFFFF, val))
                isnan = (red_type == RedType.F32) & (mag[23:31] == 0xFF) & (mag[:23] != 0)
                key_new, key_old = _key(m, mag, red_type, f"{t}_{j}n"), _key(m, cur_a, red_type, f"{t}_{j}o")
                better = Mux(red_max, key_new > key_old, key_new < key_old)
                take = ~isnan & (~cur_s | better)
                if j == 1:
                    take &= beat_two
                    isnan &= beat_two
                na = Signal(32, name=f"acc{t}_{j}")
                ns, nn = Signal(name=f"seen{t}_{j}"), Signal(name=f"nanf{t}_{j}")
                m.d.comb += [na.eq(Mux(take, mag, cur_a)), ns.eq(cur_s | take), nn.eq(cur_n | isnan)]
                cur_a, cur_s, cur_n = na, ns, nn
            with m.If(res_taken & (res.kind == Kind.REGS)):
                m.d.sync += [a.eq(cur_a), s_.eq(cur_s), n_.eq(cur_n)]
            m.d.comb += red_out[t].eq(Mux(n_ & (red_nan | ~s_), CANONICAL_NAN, a))
        with m.If(self.instr.valid & self.instr.ready):
            for t in range(LANES):
                m.d.sync += [seen[t].eq(0), nan_in[t].eq(0)]

        # -- store: one register beat held while its steps write -----------------------------
        sbuf = Signal(data.ArrayLayout(unsigned(32), LANES))
        s_valid = Signal()
        store_run = busy & store & ~refusing
        writing = Signal()
        m.d.comb += writing.eq(store_run & s_valid)
        store_done = Signal()
        vbuf = [[Signal(32, name=f"wv{k}_{lane}") for lane in range(LANES)] for k in range(PORTS)]
        vmask = [[Signal(name=f"wm{k}_{lane}") for lane in range(LANES)] for k in range(PORTS)]
        with m.Switch(var):
            for vi, v in enumerate(variants):
                if keys[v.cls][0] != "tcgen05.st":
                    continue
                packed = len(classes[keys[v.cls]].cells[0][0]) == 2
                with m.Case(vi):
                    for (port, lane), (t, piece) in v.moves:
                        src = sbuf[t][16 * piece:16 * piece + 16] if packed else sbuf[t]
                        m.d.comb += [vbuf[port][lane].eq(src), vmask[port][lane].eq(1)]
        wide = Signal()
        for k in range(PORTS):
            for lane in range(LANES):
                if lane < 16:
                    src_d = Mux(wide, vbuf[k][lane], Array(vbuf[k][:16])[(lane - lane_off)[:4]])
                    src_m = Mux(wide, vmask[k][lane],
                                (lane >= lane_off) & Array(vmask[k][:16])[(lane - lane_off)[:4]])
                else:
                    src_d = Mux(wide, vbuf[k][lane], Array(vbuf[k][:16])[(lane - lane_off)[:4]])
                    src_m = Mux(wide, vmask[k][lane],
                                (lane - lane_off < 16) & Array(vmask[k][:16])[(lane - lane_off)[:4]])
                m.d.comb += [wr[k].data[32 * lane:32 * lane + 32].eq(src_d),
                             wr[k].en[lane].eq(writing & v_on[k][var] & src_m)]
            m.d.comb += wr[k].addr.eq(addr[k])
        with m.If(self.instr.valid & self.instr.ready):
            m.d.sync += [wide.eq(ins.shape_id == SHAPES.index("32x32b")), store_done.eq(0),
                         load_done.eq(0), s_valid.eq(0)]
        take_store = Signal()
        m.d.comb += take_store.eq(self.store.valid & self.store.ready)
        with m.If(busy & store & refusing):
            m.d.comb += self.store.ready.eq(drain != 0)
        with m.Else():
            m.d.comb += self.store.ready.eq(store_run & (drain != 0) & (~s_valid | v_last_step[var]))
        with m.If(take_store):
            m.d.sync += [sbuf.eq(self.store.payload), s_valid.eq(1), drain.eq(drain - 1)]
        with m.Elif(writing & v_last_step[var]):
            m.d.sync += s_valid.eq(0)
        with m.If(writing):
            advance()
            with m.If(final_step):
                m.d.sync += store_done.eq(1)

        # -- fill and dump (port 1, while idle) --------------------------------------------
        fill = self.fill.payload
        m.d.comb += self.fill.ready.eq(~busy)
        with m.If(self.fill.valid & ~busy):
            m.d.comb += [wr[1].addr.eq(fill.col), wr[1].data.eq(fill.data),
                         wr[1].en.eq((1 << LANES) - 1)]
        m.d.comb += self.dump_req.ready.eq(~busy)
        dump_pending = Signal()
        with m.If(self.dump_req.valid & ~busy):
            m.d.comb += [rd[1].addr.eq(self.dump_req.payload), rd[1].en.eq(1)]
        m.d.sync += dump_pending.eq(self.dump_req.valid & ~busy)
        m.d.comb += [self.dump.valid.eq(dump_pending), self.dump.payload.eq(rd[1].data)]

        # -- result beats --------------------------------------------------------------------
        with m.If(res_taken):
            m.d.sync += res_valid.eq(0)
        with m.If(beat_in):
            m.d.sync += res_valid.eq(1)
        m.d.comb += [res.data.eq(out_regs), res.reg.eq(beat_reg), res.reg2.eq(beat_reg2),
                     res.two.eq(beat_two), res.error.eq(err)]
        state = Signal(range(3))    # 0 data beats, 1 redval beat, 2 completion / refusal beat
        with m.Switch(state):
            with m.Case(0):
                m.d.comb += [res.kind.eq(Kind.REGS), res.last.eq(beat_final & ~red)]
                with m.If(res_taken & beat_final):
                    with m.If(red):
                        m.d.sync += [state.eq(1), res_valid.eq(1)]
                    with m.Else():
                        m.d.sync += busy.eq(0)
            with m.Case(1):
                m.d.comb += [res.kind.eq(Kind.REDVAL), res.last.eq(1)]
                for t in range(LANES):
                    m.d.comb += res.data[0][t].eq(red_out[t])
                with m.If(res_taken):
                    m.d.sync += [busy.eq(0), state.eq(0)]
            with m.Case(2):
                m.d.comb += [res.kind.eq(Kind.DONE), res.last.eq(1)]
                with m.If(res_taken):
                    m.d.sync += [busy.eq(0), state.eq(0)]
        m.d.comb += out_regs.eq(asm)
        # a store completes after its last write; a refusal once its store beats are drained
        with m.If(busy & store & ~refusing & store_done & ~res_valid & (state == 0)):
            m.d.sync += [state.eq(2), res_valid.eq(1)]
        with m.If(busy & refusing & ~res_valid & (state == 0) & (~store | (drain == 0))):
            m.d.sync += [state.eq(2), res_valid.eq(1)]
        return m


def _key(m, v, red_type, name):
    """An unsigned key ordering the values as the reduction's type does (f32: NaN aside,
    −0.0 below +0.0; s32 by sign; u32 as is)."""
    k = Signal(32, name=f"key{name}")
    with m.Switch(red_type):
        with m.Case(RedType.F32):
            m.d.comb += k.eq(Mux(v[31], ~v, v | 0x80000000))
        with m.Case(RedType.S32):
            m.d.comb += k.eq(v ^ 0x80000000)
        with m.Default():
            m.d.comb += k.eq(v)
    return k
