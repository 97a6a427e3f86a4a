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
    them (32 for a .128x256b: 128 bytes a step). No multiplier, and no adder before the
    swizzle: each slot's unswizzled address is a register (``pre``), set at the start to
    ``start + k·S`` and moved on each step by one of two increments fixed for the copy (the
    chunk's offset, or SBO less it to the next group's first chunk); the one the next step
    adds is a register of its own (``inc``), chosen a step ahead. The form's shape (its
    last group, whether it has two chunks, a group's rows) is registered at the start too.

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
        # the walk's state, named here for the proofs' invariants (formal/copy_specs.py); the
        # form itself only for them (the walk reads its registered shape)
        self.state = {"form": Signal(FORM_BITS, name="w_form"), "base_offset": Signal(3, name="w_base_offset"),
                      "swizzle_log": Signal(2, name="w_swizzle_log"),
                      "group": Signal(4, name="w_group"), "chunk": Signal(name="w_chunk"),
                      "valid": Signal(name="w_valid"),
                      # the form's last group, whether it has two chunks, and a group's rows
                      "last_group": Signal(4, name="w_last_group"), "two_chunks": Signal(name="w_two_chunks"),
                      "group_rows": Signal(range(GROUP_ROWS + 1), name="w_group_rows"),
                      # each slot's address before the swizzle: start + g·SBO + k·S + the chunk's offset
                      "pre": [Signal(self.WIDE, name=f"w_pre{k}", reset_less=True) for k in range(SLOTS)],
                      # the increments from a step to the next: to the group's second chunk
                      # (LBO, or 16 when swizzled), and from its last chunk to the next group
                      "to_chunk": Signal(ADDR_BITS, name="w_to_chunk", reset_less=True),
                      "to_group": Signal(self.WIDE, name="w_to_group", reset_less=True),
                      # the one the next step adds (one of the two), a register: the adders
                      # start from registers, with no choice in front of them
                      "inc": Signal(self.WIDE, name="w_inc", reset_less=True)}

    #: Width of the walk's addresses: the start plus 15 groups of SBO.
    WIDE = ADDR_BITS + 4

    @staticmethod
    def _form_shape(m, form, name):
        """A form's last group, whether it has two chunks a row, and the rows of a group."""
        last_group, two_chunks = Signal(4, name=f"{name}_last_group"), Signal(name=f"{name}_two_chunks")
        group_rows = Signal(range(GROUP_ROWS + 1), name=f"{name}_group_rows")
        with m.Switch(form):
            for f in range(len(FORMS)):
                with m.Case(f):
                    m.d.comb += [last_group.eq(max(form_rows(f) // GROUP_ROWS, 1) - 1),
                                 two_chunks.eq(form_chunks(f) == 2),
                                 group_rows.eq(min(form_rows(f), GROUP_ROWS))]
        return last_group, two_chunks, group_rows

    @staticmethod
    def _key(addr, base_offset):
        """The swizzle's XOR key before its mask: the 128-byte row less the base offset."""
        return ((addr >> 7) - base_offset)[0:3]

    def elaborate(self, platform):
        m = Module()
        wide = self.WIDE
        st = self.state
        form, base_offset, swz = st["form"], st["base_offset"], st["swizzle_log"]
        group, chunk, valid = st["group"], st["chunk"], st["valid"]
        pre, to_chunk, to_group, inc = st["pre"], st["to_chunk"], st["to_group"], st["inc"]
        # the form's shape, registered at the start (no decode of the form behind the step)
        last_group, two_chunks, group_rows = st["last_group"], st["two_chunks"], st["group_rows"]
        last = Signal()
        m.d.comb += [last.eq((group == last_group) & (chunk == two_chunks)),
                     self.valid.eq(valid), self.busy.eq(valid), self.ready.eq(~valid | (self.advance & last))]
        # the copy being started: its second chunk's offset and whether it has one
        start_chunk = Signal(ADDR_BITS, name="w_start_chunk")
        start_to_group = Signal(self.WIDE, name="w_start_to_group")
        start_last, start_two, start_rows = self._form_shape(m, self.form, "w_start")
        m.d.comb += [start_chunk.eq(Mux(self.swizzle_log == 0, self.lbo, CHUNK)),
                     start_to_group.eq(Mux(start_two, self.sbo - start_chunk, self.sbo))]
        with m.If(self.start & self.ready):
            m.d.sync += [last_group.eq(start_last), two_chunks.eq(start_two), group_rows.eq(start_rows)]
            m.d.sync += [valid.eq(1), form.eq(self.form), base_offset.eq(self.base_offset),
                         swz.eq(self.swizzle_log), group.eq(0), chunk.eq(0), to_chunk.eq(start_chunk),
                         to_group.eq(start_to_group), inc.eq(Mux(start_two, start_chunk, start_to_group))]
            # slot k: S = 16·2^swizzle bytes a row, so k·S is a constant per swizzle
            with m.Switch(self.swizzle_log):
                for z in range(4):
                    with m.Case(z):
                        m.d.sync += [pre[k].eq(self.addr + (k << (z + 4))) for k in range(SLOTS)]
        with m.Elif(valid & self.advance):
            with m.If(last):
                m.d.sync += valid.eq(0)
            with m.Elif(chunk != two_chunks):
                m.d.sync += [chunk.eq(1), inc.eq(to_group), *[pre[k].eq(pre[k] + inc) for k in range(SLOTS)]]
            with m.Else():
                m.d.sync += [chunk.eq(0), group.eq(group + 1), inc.eq(Mux(two_chunks, to_chunk, to_group)),
                             *[pre[k].eq(pre[k] + inc) for k in range(SLOTS)]]

        out = self.step
        m.d.comb += [out.chunk.eq(chunk), out.group.eq(group), out.last.eq(last)]
        mask = Signal(3)
        m.d.comb += mask.eq(Mux(swz == 0, 0, Mux(swz == 1, 0b001, Mux(swz == 2, 0b011, 0b111))))
        for k in range(SLOTS):
            post = Signal(wide, name=f"w_addr{k}")
            key = Signal(3, name=f"w_key{k}")
            m.d.comb += [key.eq(self._key(pre[k], base_offset) & mask),
                         post.eq(pre[k] ^ (key << 4)),
                         out.slots[k].valid.eq(valid & (k < group_rows)),
                         out.slots[k].quad.eq(post[QUAD_SHIFT:LINE_SHIFT]), out.slots[k].line.eq(post >> LINE_SHIFT)]
        return m
