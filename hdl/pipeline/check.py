"""Instruction check: the error an incoming instruction is refused with, if any."""

from __future__ import annotations

from amaranth import C, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from tensorlsu.sim.model import WMMA_ADDR_ALIGN

from ..codes import Error, Space
from ..params import Params
from . import forms
from .records import consts_layout, instr_layout

__all__ = ["InstrCheck"]


class InstrCheck(wiring.Component):
    """Combinational checks of an instruction on the instruction port, in the model's order
    (:mod:`tensorlsu.sim.model`): an unknown form id; for ldmatrix / stmatrix a row address
    that is not 16-byte aligned, then one that reaches past ``smem_size``; for wmma.load a
    matrix address that is not 32-byte aligned, then a stride below the leading dimension or
    off its grain, then a matrix whose last line ends past ``smem_size`` (shared) or outside
    the global range. The stmatrix
    overlap check takes cycles and runs in the accept stage.

    Parameters
    ----------
    params : Params

    Members
    -------
    instr : In(instr_layout(params))
        The instruction.
    consts : In(consts_layout(params))
        Its form's constants (:class:`~tensorlsu.hdl.pipeline.decode.FormDecoder`).
    smem_size : In(range(smem_bytes + 1))
        The shared memory the instruction may address, in bytes (the running CTA's
        allocation; more than ``smem_bytes`` counts as ``smem_bytes``).
    error : Out(Error)
    stride_bytes : Out(stride_width)
        The wmma.load stride in bytes (valid when the stride is in range).
    glob : Out(1)
        The wmma.load reads global memory: ``.global``, or generic outside the shared window.
    base : Out(32)
        Its matrix address: a shared-memory offset (a generic one made so), or global.

    A global wmma.load's lines must lie in ``global_base … + global_bytes``; a generic one in
    the shared window must lie in shared memory.
    """

    @staticmethod
    def stride_width(p: Params) -> int:
        """Width of the stride in bytes that the span arithmetic keeps: a larger stride puts
        the second line beyond shared memory (smem_bytes.bit_length() + 6 bits) or, with the
        global port, beyond the 32-bit space (32 bits), and is refused as out of range."""
        return 32 if p.global_port else p.smem_bytes.bit_length() + 6

    def __init__(self, params: Params):
        self.params = params
        super().__init__({"instr": In(instr_layout(params)), "consts": In(consts_layout(params)),
                          "smem_size": In(range(params.smem_bytes + 1), init=params.smem_bytes),
                          "error": Out(Error), "stride_bytes": Out(self.stride_width(params)),
                          "glob": Out(1), "base": Out(32)})

    def elaborate(self, platform):
        m = Module()
        p, ip, c = self.params, self.instr, self.consts
        R = p.lanes
        # the shared memory in force; rows are 16-byte aligned where this verdict counts (a
        # misaligned row is refused first), so a row is outside when its index reaches the
        # size's whole rows
        size = Signal(range(p.smem_bytes + 1))
        m.d.comb += size.eq(Mux(self.smem_size > p.smem_bytes, p.smem_bytes, self.smem_size))
        # ldmatrix / stmatrix rows
        misaligned, outside, rows = Signal(R), Signal(R), Signal(R)
        m.d.comb += rows.eq(Mux(c.wmma, 0, c.used))
        for i in range(R):
            a = ip.addr[i]
            m.d.comb += [misaligned[i].eq(rows[i] & (a[:4] != 0)),
                         outside[i].eq(rows[i] & (a[4:] >= size[4:]))]
        wmma_err = self._wmma(m, size)
        with m.If(~c.valid):
            m.d.comb += self.error.eq(Error.UNSUPPORTED)
        with m.Elif(c.wmma):
            m.d.comb += self.error.eq(wmma_err)
        with m.Elif(misaligned.any()):
            m.d.comb += self.error.eq(Error.MISALIGNED)
        with m.Elif(outside.any()):
            m.d.comb += self.error.eq(Error.OUT_OF_RANGE)
        return m

    def _wmma(self, m, size) -> Signal:
        """wmma.load: matrix address, stride (the model's rules) and the span of its lines
        (``size``: the shared memory in force)."""
        p, ip = self.params, self.instr
        wm_lg_bits = Signal(range(7))       # log2 of the element width
        wm_lg_lines = Signal(range(6))      # log2 of the number of lines
        wm_line_bytes = Signal(range(129))
        wm_least = Signal(range(129))       # the leading dimension: the least stride
        wm_grain = Signal(8)                # the stride is a multiple of this + 1
        with m.Switch(ip.form):
            for f, inf in enumerate(map(forms.info, range(len(forms.FORMS)))):
                if inf.wmma:
                    with m.Case(f):
                        m.d.comb += [wm_lg_bits.eq(inf.bits.bit_length() - 1),
                                     wm_lg_lines.eq(inf.lines.bit_length() - 1),
                                     wm_line_bytes.eq(inf.line_bytes), wm_least.eq(inf.least),
                                     wm_grain.eq(inf.stride_grain - 1)]
        sw = self.stride_width(p)
        stride_full = Signal(len(ip.stride) + 3)
        huge = Signal()
        span = Signal(sw + 6)               # first byte of the last line, from the matrix address
        m.d.comb += [stride_full.eq((ip.stride << wm_lg_bits) >> 3), huge.eq(stride_full[sw:].any()),
                     self.stride_bytes.eq(stride_full[:sw]),
                     span.eq((self.stride_bytes << wm_lg_lines) - self.stride_bytes)]
        # the state space: a generic address inside the shared window is its offset there
        addr = ip.addr[0]
        in_window = Signal()
        m.d.comb += in_window.eq((addr >= p.shared_window_base) &
                                 (addr < p.shared_window_base + p.shared_window_bytes))
        if p.global_port:
            m.d.comb += self.glob.eq((ip.space == Space.GLOBAL) | ((ip.space == Space.GENERIC) & ~in_window))
        m.d.comb += self.base.eq(Mux((ip.space == Space.GENERIC) & in_window, addr - p.shared_window_base, addr))
        end = Signal(max(sw, 32) + 7)       # the byte after the last line
        m.d.comb += end.eq(self.base + span + wm_line_bytes)
        outside = Signal()
        m.d.comb += outside.eq(huge | Mux(self.glob, (self.base < p.global_base) |
                                          (end > p.global_base + p.global_bytes), end > size))
        err = Signal(Error)
        no_global = C(int(not p.global_port), 1)
        with m.If((ip.space == Space.GLOBAL) & no_global):
            m.d.comb += err.eq(Error.UNSUPPORTED)
        with m.Elif(addr[:(WMMA_ADDR_ALIGN - 1).bit_length()] != 0):
            m.d.comb += err.eq(Error.MISALIGNED)
        with m.Elif((ip.stride < wm_least) | ((ip.stride & wm_grain) != 0)):
            m.d.comb += err.eq(Error.STRIDE)
        with m.Elif(outside):
            m.d.comb += err.eq(Error.OUT_OF_RANGE)
        return err
