"""Copy walk: the steps of a tcgen05.cp, each the chunks of one 8-row group at one chunk index."""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tensorlsu.sim.descriptor import CHUNK, GROUP_ROWS

from ..params import COPY_LINE_BYTES, ROW_BYTES, Params
from .check import ADDR_BITS
from .records import FORM_BITS, FORMS, SLOTS, form_chunks, form_rows, step_layout

__all__ = ["CopyWalk"]

#: A chunk address's bank quad and line (Params refuses a copy port on other line sizes).
QUAD_SHIFT, LINE_SHIFT = ROW_BYTES.bit_length() - 1, COPY_LINE_BYTES.bit_length() - 1


class CopyWalk(wiring.Component):
    """The walk of docs/tcgen05-cp.md, a step at a time: step ``(g, c)`` reads chunk ``c`` of
    rows ``8g`` … ``8g+7`` (of a .4x256b, rows 0 … 3), slot ``k`` at

        start + k·S + g·SBO + c·(LBO unswizzled, else 16), swizzled,

    as the bank quad ``(address / 16) mod 8`` and the line ``address / 128`` of shared
    memory. Steps go chunk by chunk within a group, group by group: ``groups × chunks`` of
    them (32 for a .128x256b: 128 bytes a step). No multiplier: the group's base moves by SBO
    a group.

    Latency: ``step`` is valid the cycle after ``start``; the next step the cycle after
    ``advance``. ``start`` is taken while ``ready``: idle, or in the cycle the last step
    advances (the next copy's first step follows the last without a gap).

    Members
    -------
    start : In(1)
        Begin a copy of ``form`` with these descriptor fields (checked: CopyCheck).
    form : In(FORM_BITS)
    addr, lbo, sbo : In(ADDR_BITS)
        The descriptor's start address and offsets, bytes.
    base_offset : In(3)
    swizzle_log : In(2)
    advance : In(1)
        The step on ``step`` has been read: go to the next.
    step : Out(step_layout(line_bits))
    valid : Out(1)
        ``step`` is a step of the copy.
    busy : Out(1)
        Same as ``valid``: a copy is being walked.
    ready : Out(1)
        A ``start`` is taken this cycle.
    """

    def __init__(self, params: Params):
        self.params = params
        self.line_bits = params.line_bits
        super().__init__({"start": In(1), "form": In(FORM_BITS), "addr": In(ADDR_BITS), "lbo": In(ADDR_BITS),
                          "sbo": In(ADDR_BITS), "base_offset": In(3), "swizzle_log": In(2), "advance": In(1),
                          "step": Out(step_layout(params.line_bits)), "valid": Out(1), "busy": Out(1),
                          "ready": Out(1)})
        # the walk's state, named here for the proof's invariant (formal/copy_specs.py)
        self.state = {"form": Signal(FORM_BITS, name="w_form"), "lbo": Signal(ADDR_BITS, name="w_lbo"),
                      "sbo": Signal(ADDR_BITS, name="w_sbo"), "base_offset": Signal(3, name="w_base_offset"),
                      "swizzle_log": Signal(2, name="w_swizzle_log"), "gbase": Signal(self.WIDE, name="w_gbase"),
                      "group": Signal(4, name="w_group"), "chunk": Signal(name="w_chunk"),
                      "valid": Signal(name="w_valid")}

    #: Width of the walk's addresses: the start plus 15 groups of SBO.
    WIDE = ADDR_BITS + 4

    @staticmethod
    def _key(addr, base_offset):
        """The swizzle's XOR key before its mask: the 128-byte row less the base offset."""
        return ((addr >> 7) - base_offset)[0:3]

    def elaborate(self, platform):
        m = Module()
        wide = self.WIDE
        st = self.state
        form, lbo, sbo, base_offset, swz = st["form"], st["lbo"], st["sbo"], st["base_offset"], st["swizzle_log"]
        gbase = st["gbase"]                      # start + g·SBO
        group, chunk, valid = st["group"], st["chunk"], st["valid"]
        last_group, two_chunks, group_rows = Signal(4), Signal(), Signal(range(GROUP_ROWS + 1))
        with m.Switch(form):
            for f, (shape, _) in enumerate(FORMS):
                with m.Case(f):
                    m.d.comb += [last_group.eq(max(form_rows(f) // GROUP_ROWS, 1) - 1),
                                 two_chunks.eq(form_chunks(f) == 2),
                                 group_rows.eq(min(form_rows(f), GROUP_ROWS))]
        last = Signal()
        m.d.comb += [last.eq((group == last_group) & (chunk == two_chunks)),
                     self.valid.eq(valid), self.busy.eq(valid), self.ready.eq(~valid | (self.advance & last))]
        with m.If(self.start & self.ready):
            m.d.sync += [valid.eq(1), form.eq(self.form), lbo.eq(self.lbo), sbo.eq(self.sbo),
                         base_offset.eq(self.base_offset), swz.eq(self.swizzle_log), gbase.eq(self.addr),
                         group.eq(0), chunk.eq(0)]
        with m.Elif(valid & self.advance):
            with m.If(last):
                m.d.sync += valid.eq(0)
            with m.Elif(chunk != two_chunks):
                m.d.sync += chunk.eq(1)
            with m.Else():
                m.d.sync += [chunk.eq(0), group.eq(group + 1), gbase.eq(gbase + sbo)]

        out = self.step
        step_off = Signal(ADDR_BITS)
        m.d.comb += [step_off.eq(Mux(chunk, Mux(swz == 0, lbo, CHUNK), 0)),
                     out.chunk.eq(chunk), out.group.eq(group), out.last.eq(last)]
        mask = Signal(3)
        m.d.comb += mask.eq(Mux(swz == 0, 0, Mux(swz == 1, 0b001, Mux(swz == 2, 0b011, 0b111))))
        for k in range(SLOTS):
            pre = Signal(wide, name=f"w_pre{k}")
            post = Signal(wide, name=f"w_addr{k}")
            key = Signal(3, name=f"w_key{k}")
            m.d.comb += [pre.eq(gbase + (k << (swz + 4)) + step_off),
                         key.eq(self._key(pre, base_offset) & mask),
                         post.eq(pre ^ (key << 4)),
                         out.slots[k].valid.eq(valid & (k < group_rows)),
                         out.slots[k].quad.eq(post[QUAD_SHIFT:LINE_SHIFT]), out.slots[k].line.eq(post >> LINE_SHIFT)]
        return m
