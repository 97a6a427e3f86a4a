"""Address stage (X): a wmma.load pass's slot addresses, over two registers, between the accept
stage and the pass queue."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.mux import mux_tree
from ..lib.stages import stage_pair
from ..params import ROW_BYTES, Params
from .check_stage import stride_width
from .chunks import chunk_index_layout, slot_chunks
from .records import pass_layout

__all__ = ["AddressStage", "unaddressed_layout"]


def unaddressed_layout(p: Params) -> data.StructLayout:
    """A pass as the accept stage offers it: the pass (``addr``: the rows of an ldmatrix /
    stmatrix; unused for a wmma.load), and for a wmma.load its slots' line and chunk indexes
    (:func:`~tensorlsu.hdl.pipeline.chunks.chunk_index_layout`), its stride in bytes and its
    matrix address."""
    return data.StructLayout({"pass_": pass_layout(p), "index": chunk_index_layout(p),
                              "stride_bytes": stride_width(p), "base": p.pass_addr_bits})


def _carry_save(a, b, c):
    """Three vectors as two of the same sum (a full adder a bit, no carry chain)."""
    return a ^ b ^ c, ((a & b) | (a & c) | (b & c)) << 1


def _reduce(m: Module, terms: list, width: int, name: str) -> list:
    """``terms`` as two vectors of the same sum modulo ``2 ** width``: layers of full adders,
    each taking the terms three by three (a Wallace tree). Each layer's vectors are signals:
    a term feeds three gates of the next layer, and an expression shared that way would be
    copied into each of them when the design is lowered (3 ** depth copies)."""
    terms = [Value.cast(t)[:width] for t in terms]
    depth = 0
    while len(terms) > 2:
        layer = []
        for k in range(0, len(terms) - 2, 3):
            for half, v in zip(("sum", "carry"), _carry_save(*terms[k:k + 3])):
                sig = Signal(width, name=f"{name}_l{depth}_{k // 3}_{half}")
                m.d.comb += sig.eq(v[:width])
                layer.append(sig)
        terms = layer + terms[len(terms) // 3 * 3:]
        depth += 1
    return terms + [0] * (2 - len(terms))


class AddressStage(wiring.Component):
    """Address stage, prefix ``x_``: slot ``s`` of a wmma.load pass holds chunk ``(line, k)`` at
    ``base + line · stride + 16 k``; an ldmatrix / stmatrix pass keeps its row addresses.

    Two register stages, so that no multiplier or adder chain ends in the pass queue or in the
    global fetch stage's contexts (which take a global pass as it enters the queue):

    - **X1**: per slot, the line offset's partial products (``stride << j`` where bit ``j`` of
      the line is set), the matrix address and the chunk's offset reduced by full adders to two
      vectors of the same sum (carry-save, no carry chain); a row address is the first vector
      and zero the second.
    - **X2**: the two vectors added: one adder a slot.

    With ``dsp_multipliers`` (an FPGA build) X1 instead registers the line offset as a product
    (a multiplier a slot, which the FPGA's DSP blocks take) and the matrix address plus the
    chunk's offset as the second vector; X2 is the same.

    The checks passed the span (every chunk lies in shared memory, or in the 32-bit global
    space), so addresses are ``pass_addr_bits`` wide and wrap nowhere.

    Latency: a pass taken in cycle ``t`` is offered in ``t + 2``. A pass a clock.

    Members
    -------
    passes : In(stream.Signature(unaddressed_layout(params)))
        The accept stage's passes.
    addressed : Out(stream.Signature(pass_layout(params)))
        The same passes with their slot addresses, in order.
    busy : Out(1)
        A pass is held.
    """

    def __init__(self, params: Params):
        self.params = params
        super().__init__({"passes": In(stream.Signature(unaddressed_layout(params))),
                          "addressed": Out(stream.Signature(pass_layout(params))), "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        R, aw = p.lanes, p.pass_addr_bits
        vec = data.ArrayLayout(unsigned(aw), R)
        # wide data registers have no reset: nothing reads them before their valid bits say so
        x1_pass = Signal(pass_layout(p), name="x1_pass", reset_less=True)
        x1_sum, x1_carry = Signal(vec, name="x1_sum", reset_less=True), Signal(vec, name="x1_carry", reset_less=True)
        x2_pass = Signal(pass_layout(p), name="x2_pass", reset_less=True)

        inp, out = self.passes, self.addressed
        stages = stage_pair(m, "x", inp.valid, out.ready)
        m.d.comb += [inp.ready.eq(stages.in_ready), out.valid.eq(stages.valid2), out.payload.eq(x2_pass),
                     self.busy.eq(stages.valid1 | stages.valid2)]

        # X1: partial products, base and chunk offset in carry-save form
        ps = inp.payload
        wmma = ps.pass_.consts.wmma
        chunks = slot_chunks(R)
        # (the tree's signals are assigned outside the take: a combinational assignment under
        # an If would also gate every layer with the take)
        slot_terms = []
        for s in range(R):
            line = getattr(ps.index, f"line{s}")
            chunk_offset = mux_tree(getattr(ps.index, f"chunk{s}"), [c * ROW_BYTES for c in chunks[s]])
            if p.dsp_multipliers:
                slot_terms.append([(line * ps.stride_bytes)[:aw], (ps.base + chunk_offset)[:aw]])
            else:
                terms = [Mux(line[j], (ps.stride_bytes << j)[:aw], 0) for j in range(len(line))]
                slot_terms.append(_reduce(m, terms + [ps.base, chunk_offset], aw, f"x1_slot{s}"))
        with m.If(stages.take):
            m.d.sync += x1_pass.eq(ps.pass_)
            for s, terms in enumerate(slot_terms):
                m.d.sync += [x1_sum[s].eq(Mux(wmma, terms[0], ps.pass_.addr[s])),
                             x1_carry[s].eq(Mux(wmma, terms[1], 0))]
        # X2: one adder a slot
        with m.If(stages.move):
            m.d.sync += x2_pass.eq(x1_pass)
            m.d.sync += [x2_pass.addr[s].eq(x1_sum[s] + x1_carry[s]) for s in range(R)]
        return m
