"""Check stage (K): the instruction's checks over two register stages, ahead of the accept stage."""

from __future__ import annotations

from amaranth import C, Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from tensorlsu.sim.model import WMMA_ADDR_ALIGN

from ..codes import Error, Space
from ..lib.rom import select
from ..lib.stages import stage_pair
from ..params import Params
from . import forms
from .decode import FormDecoder
from .records import consts_layout, instr_layout

__all__ = ["CheckStage", "checked_layout", "stride_width"]


def stride_width(p: Params) -> int:
    """Width of the stride in bytes that the span arithmetic keeps: a larger stride puts the
    second line beyond shared memory (smem_bytes.bit_length() + 6 bits) or, with the global
    port, beyond the 32-bit space (32 bits), and is refused as out of range."""
    return 32 if p.global_port else p.smem_bytes.bit_length() + 6


def checked_layout(p: Params) -> data.StructLayout:
    """A checked instruction, as the accept stage takes it: the instruction, the error it is
    refused with (``NONE``: none), its form's constants for both passes
    (:class:`~tensorlsu.hdl.pipeline.decode.FormDecoder`), and for a wmma.load the stride in
    bytes (valid when in range), whether it reads global memory, and its matrix address
    resolved (a shared-memory offset, a generic one made so, or global)."""
    return data.StructLayout({"instr": instr_layout(p), "err": Error, "first": consts_layout(p),
                              "second": consts_layout(p), "stride_bytes": stride_width(p), "glob": 1,
                              "base": 32})


def _form_index(m, form, key, name: str):
    """The distinct values ``key`` gives the forms, sorted, and a signal: the index of form
    ``form``'s among them, a few bits as a binary tree of constants on the form id (no decode
    of every form fans out to what it picks). ``key`` is called with each form's
    :class:`~tensorlsu.hdl.pipeline.forms.FormInfo` (``None`` for an id that names none) and
    may return ``None`` where what the index picks is never read (it names the first)."""
    infos = [forms.info(f) if f < len(forms.FORMS) else None for f in range(2 ** len(form))]
    keys = [key(inf) for inf in infos]
    values = sorted({k for k in keys if k is not None})
    index = Signal(range(len(values)), name=name)
    m.d.comb += index.eq(select([C(values.index(k) if k is not None else 0, len(index)) for k in keys], form))
    return values, index


def _wmma(key):
    """``key`` for the wmma.load forms; ``None`` (never read) for the others."""
    return lambda inf: key(inf) if inf is not None and inf.wmma else None


class CheckStage(wiring.Component):
    """Check stage, prefix ``k_``: the checks of an instruction from the instruction port's
    intake, in the model's order (:mod:`tensorlsu.sim.model`): an unknown form id; for
    ldmatrix / stmatrix a row address that is not 16-byte aligned, then one that reaches past
    ``smem_size``; for wmma.load a matrix address that is not 32-byte aligned, then a stride
    below the leading dimension or off its grain, then a matrix whose last line ends past
    ``smem_size`` (shared) or outside the global range. The stmatrix overlap check takes
    cycles and runs in the accept stage.

    Two register stages, each about one carry chain deep, so that no adder or comparator
    follows another within a cycle:

    - **K1**: the form's constants (:class:`~tensorlsu.hdl.pipeline.decode.FormDecoder`), the
      shared memory in force, every row's alignment and range (a row is outside when its
      index reaches either the port's size or the unit's: the smaller of the two), the wmma
      stride in bytes and its checks, the state space and the matrix address resolved.
    - **K2**: the span of a wmma.load's lines (stride × lines − stride: K1 shifts the stride
      both ways, so this is one subtraction) and the room its address
      leaves (the limit less the address and a line), and every error but the last range
      verdict, which is one comparison of the two (``span > room``) on the output, so the
      accept stage registers it.

    Latency: an instruction taken in cycle ``t`` is offered in ``t + 2``. A beat a clock.

    Members
    -------
    instr : In(stream.Signature(instr_layout(params)))
        The instruction port's intake.
    smem_size : In(range(smem_bytes + 1))
        The shared memory an instruction may address (the running CTA's allocation; more than
        ``smem_bytes`` counts as ``smem_bytes``), read as the instruction is taken.
    stall : In(1)
        Take nothing this cycle (the banks are lent to the fill / dump port or the copy).
    checked : Out(stream.Signature(checked_layout(params)))
        The checked instructions, in order.
    busy : Out(1)
        An instruction is held.

    A global wmma.load's lines must lie in ``global_base … + global_bytes``; a generic one in
    the shared window must lie in shared memory.
    """

    def __init__(self, params: Params):
        self.params = params
        super().__init__({"instr": In(stream.Signature(instr_layout(params))),
                          "smem_size": In(range(params.smem_bytes + 1), init=params.smem_bytes),
                          "stall": In(1), "checked": Out(stream.Signature(checked_layout(params))),
                          "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        sw = stride_width(p)
        ip = self.instr.payload
        # signed room for the span: the limit (at most 33 bits) less the address and a line
        room_bits = max(sw, 32) + 9

        # stage registers (wide data without reset: nothing reads them before their valid)
        k1 = Signal(data.StructLayout({
            "instr": instr_layout(p), "first": consts_layout(p), "second": consts_layout(p),
            "unknown": 1, "rows_misaligned": 1, "rows_outside": 1,
            "wm_unsupported": 1, "wm_misaligned": 1, "wm_stride": 1, "huge": 1, "below": 1,
            "stride_bytes": sw, "stride_lines": sw + 6, "room_shared": signed(room_bits),
            "room_global": signed(room_bits), "glob": 1, "base": 32}),
            name="k1", reset_less=True)
        k2 = Signal(data.StructLayout({
            "instr": instr_layout(p), "first": consts_layout(p), "second": consts_layout(p),
            "err": Error, "range_check": 1, "span": sw + 6, "room": signed(room_bits),
            "stride_bytes": sw, "glob": 1, "base": 32}), name="k2", reset_less=True)

        out = self.checked
        stages = stage_pair(m, "k", self.instr.valid, out.ready, self.stall)
        take, k1_move = stages.take, stages.move
        m.d.comb += [self.instr.ready.eq(stages.in_ready), self.busy.eq(stages.valid1 | stages.valid2)]

        # --- K1 ---------------------------------------------------------------------------
        decode = m.submodules.decode = FormDecoder(p)
        c = decode.first
        m.d.comb += decode.form.eq(ip.form)
        nxt = Signal.like(k1)
        m.d.comb += [nxt.instr.eq(ip), nxt.first.eq(decode.first), nxt.second.eq(decode.second),
                     nxt.unknown.eq(~c.valid)]
        misaligned, outside = [], []
        for i in range(p.lanes):
            a = ip.addr[i]
            misaligned.append(a[:4] != 0)
            # the smaller of two sizes, as two comparisons side by side (no minimum first)
            outside.append((a[4:] >= self.smem_size[4:]) | (a[4:] >= (p.smem_bytes >> 4)))
        # every thread's verdicts ORed over each set of rows a form has (an ldmatrix /
        # stmatrix's rows; none for the others), side by side, picked by the form's index
        rowsets, rowset = _form_index(m, ip.form, lambda inf: inf.used(0) if inf is not None and not inf.wmma else 0,
                                      "k_rowset")

        def any_row(verdicts):
            return select([Cat(*[verdicts[i] for i in range(p.lanes) if rows >> i & 1]).any() if rows else C(0, 1)
                           for rows in rowsets], rowset)
        m.d.comb += [nxt.rows_misaligned.eq(any_row(misaligned)), nxt.rows_outside.eq(any_row(outside))]
        self._wmma_k1(m, ip, nxt, sw)
        # the limit less a line, for either space (signed: it may go below zero); K2 subtracts
        # the address from the one in force. The limit less each line size the forms have is
        # subtracted beside the form's decode, and beside the comparison that clamps the
        # shared memory's size (each candidate is either clamped one), not after them
        sizes, size_index = _form_index(m, ip.form, _wmma(lambda inf: inf.line_bytes), "k_line_size")
        over = self.smem_size > p.smem_bytes
        less_shared = [Signal(signed(room_bits), name=f"k_room_shared_{n}") for n in sizes]
        m.d.comb += [r.eq(Mux(over, p.smem_bytes - n, Cat(self.smem_size, C(0, 1)).as_signed() - n))
                     for r, n in zip(less_shared, sizes)]
        limit_global = C(p.global_base + p.global_bytes, 34).as_signed()
        m.d.comb += [nxt.room_shared.eq(select(less_shared, size_index)),
                     nxt.room_global.eq(select([limit_global - n for n in sizes], size_index))]
        with m.If(take):
            m.d.sync += k1.eq(nxt)

        # --- K2 ---------------------------------------------------------------------------
        with m.If(k1_move):
            span = k1.stride_lines - k1.stride_bytes
            m.d.sync += [k2.instr.eq(k1.instr), k2.first.eq(k1.first), k2.second.eq(k1.second),
                         k2.stride_bytes.eq(k1.stride_bytes), k2.glob.eq(k1.glob), k2.base.eq(k1.base),
                         # both rooms, picked after the subtractions: the adders start
                         # from registers, not behind the space's multiplexer
                         k2.span.eq(span), k2.room.eq(Mux(k1.glob, k1.room_global - k1.base,
                                                          k1.room_shared - k1.base)),
                         k2.err.eq(self._error(k1)),
                         # the range verdict is still open: the checks before it passed
                         k2.range_check.eq(~k1.unknown & k1.first.wmma & ~k1.wm_unsupported &
                                           ~k1.wm_misaligned & ~k1.wm_stride)]

        # --- out: the last comparison --------------------------------------------------------
        late = Signal()                 # the last line ends past the limit
        m.d.comb += late.eq(k2.span > k2.room)     # unsigned against signed: compared as numbers
        m.d.comb += [out.valid.eq(stages.valid2), out.payload.instr.eq(k2.instr), out.payload.first.eq(k2.first),
                     out.payload.second.eq(k2.second), out.payload.stride_bytes.eq(k2.stride_bytes),
                     out.payload.glob.eq(k2.glob), out.payload.base.eq(k2.base),
                     out.payload.err.eq(Mux(k2.range_check & late, Error.OUT_OF_RANGE, k2.err))]
        return m

    def _wmma_k1(self, m, ip, nxt, sw):
        """K1's part of the wmma.load checks: the form's geometry, the stride in bytes and its
        checks, the address's alignment, its state space and the matrix address resolved."""
        p = self.params
        # the stride in bytes, and times the lines: constant shifts of the port's stride by
        # each element width and width times lines the forms have, and the stride's checks
        # against each rule (leading dimension, grain), side by side, picked by the form
        # (:func:`_form_index`: no shifter or decode in front of them; K2 then has one
        # subtraction for the span); only a stride that fits sw bits is used
        full_bits = len(ip.stride) + 3
        widths, width = _form_index(m, ip.form, _wmma(lambda inf: inf.bits.bit_length() - 1), "k_stride_width")
        spans, span = _form_index(m, ip.form, _wmma(lambda inf: inf.bits.bit_length() + inf.lines.bit_length() - 2),
                                  "k_stride_span")
        rules, rule_index = _form_index(m, ip.form, _wmma(lambda inf: (inf.least, inf.stride_grain)),
                                        "k_stride_rule")
        full = [((ip.stride << w) >> 3)[:full_bits] for w in widths]
        m.d.comb += [nxt.huge.eq(select([f[sw:].any() for f in full], width)),
                     nxt.stride_bytes.eq(select([f[:sw] for f in full], width)),
                     nxt.stride_lines.eq(select([((ip.stride << n) >> 3)[:sw + 6] for n in spans], span)),
                     # below the leading dimension, or off its grain
                     nxt.wm_stride.eq(select([(ip.stride < least) | ((ip.stride & (grain - 1)) != 0)
                                              for least, grain in rules], rule_index))]
        # the state space: a generic address inside the shared window is its offset there
        addr = ip.addr[0]
        in_window = Signal()
        m.d.comb += in_window.eq((addr >= p.shared_window_base) &
                                 (addr < p.shared_window_base + p.shared_window_bytes))
        if p.global_port:
            m.d.comb += nxt.glob.eq((ip.space == Space.GLOBAL) | ((ip.space == Space.GENERIC) & ~in_window))
            m.d.comb += nxt.below.eq(nxt.glob & (addr < p.global_base))
        m.d.comb += nxt.base.eq(Mux((ip.space == Space.GENERIC) & in_window, addr - p.shared_window_base, addr))
        m.d.comb += [nxt.wm_unsupported.eq((ip.space == Space.GLOBAL) & C(int(not p.global_port), 1)),
                     nxt.wm_misaligned.eq(addr[:(WMMA_ADDR_ALIGN - 1).bit_length()] != 0)]

    @staticmethod
    def _error(k1):
        """Every verdict of K1's registers, in the model's order, but the range of a wmma.load
        whose earlier checks passed (unless its stride or address alone put it outside)."""
        return Mux(k1.unknown, Error.UNSUPPORTED,
                   Mux(k1.first.wmma,
                       Mux(k1.wm_unsupported, Error.UNSUPPORTED,
                           Mux(k1.wm_misaligned, Error.MISALIGNED,
                               Mux(k1.wm_stride, Error.STRIDE,
                                   Mux(k1.huge | k1.below, Error.OUT_OF_RANGE, Error.NONE)))),
                       Mux(k1.rows_misaligned, Error.MISALIGNED,
                           Mux(k1.rows_outside, Error.OUT_OF_RANGE, Error.NONE))))

