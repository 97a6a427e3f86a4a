"""wmma.load chunk addresses: the shared-memory offset of every slot of a wmma.load pass."""

from __future__ import annotations

from functools import cached_property

from amaranth import Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.mux import mux_tree
from ..params import ROW_BYTES, Params
from . import forms
from .records import FORM_BITS

__all__ = ["ChunkAddresses"]


class ChunkAddresses(wiring.Component):
    """Slot ``s`` of a wmma.load pass holds chunk ``(line, k)`` of the matrix, at
    ``base + line · stride + 16 k`` (:class:`~tensorlsu.hdl.pipeline.forms.FormInfo`). Two
    combinational halves, with a register stage between them in the accept stage:

    - ``form`` → ``index``: per pass (two), each slot's line and an index into the chunks that
      slot holds in some form (so no form decode comes before the arithmetic);
    - ``select``, ``base``, ``stride_bytes`` → ``addr``: each slot's offset. The line offset is
      a product (an 18 × 18 multiplier on the FPGA): a multiplexer over a slot's up to 10
      possible line offsets takes more logic.

    The caller has checked the span (every chunk lies in shared memory, or in the 32-bit
    global space), so addresses are ``pass_addr_bits`` wide.

    Members
    -------
    form : In(FORM_BITS)
    index : Out(ArrayLayout(index_layout, 2))
        The slots' line and chunk indexes of the form's first and second pass.
    select : In(index_layout)
        The indexes of the pass to address (registered ``index``).
    base : In(pass_addr_bits)
        The matrix address.
    stride_bytes : In(stride width)
    addr : Out(ArrayLayout(pass_addr_bits, lanes))
    """

    def __init__(self, params: Params):
        self.params = p = params
        self.index_layout = data.StructLayout(
            {f"line{s}": range(self.lines) for s in range(p.lanes)}
            | {f"chunk{s}": range(max(1, len(c))) for s, c in enumerate(self.slot_chunks)})
        super().__init__({
            "form": In(FORM_BITS), "index": Out(data.ArrayLayout(self.index_layout, 2)),
            "select": In(self.index_layout), "base": In(p.pass_addr_bits),
            "stride_bytes": In(32 if p.global_port else p.smem_bytes.bit_length()),
            "addr": Out(data.ArrayLayout(unsigned(p.pass_addr_bits), p.lanes))})

    @cached_property
    def wmma_forms(self) -> list[tuple[int, forms.FormInfo]]:
        return [(f, forms.info(f)) for f in range(len(forms.FORMS)) if forms.info(f).wmma]

    @cached_property
    def slot_chunks(self) -> list[list[int]]:
        """The chunks (within its line) each slot holds in some form and pass."""
        return [sorted({inf.passes[q][s][1] for _, inf in self.wmma_forms for q in range(len(inf.passes))
                        if s < len(inf.passes[q])}) for s in range(self.params.lanes)]

    @cached_property
    def lines(self) -> int:
        return max(inf.lines for _, inf in self.wmma_forms)

    def elaborate(self, platform):
        m = Module()
        R = self.params.lanes
        with m.Switch(self.form):
            for f, inf in self.wmma_forms:
                with m.Case(f):
                    for q in range(2):
                        ps = inf.passes[min(q, len(inf.passes) - 1)]
                        for s in range(min(R, len(ps))):
                            idx = self.index[q]
                            m.d.comb += [getattr(idx, f"line{s}").eq(ps[s][0]),
                                         getattr(idx, f"chunk{s}").eq(self.slot_chunks[s].index(ps[s][1]))]
        aw = self.params.pass_addr_bits
        for s in range(R):
            line_off = Signal(aw, name=f"line_offset{s}")
            chunk = mux_tree(getattr(self.select, f"chunk{s}"), [c * ROW_BYTES for c in self.slot_chunks[s]])
            m.d.comb += [line_off.eq(self.stride_bytes * getattr(self.select, f"line{s}")),
                         self.addr[s].eq(self.base + line_off + chunk)]
        return m
