"""Copy check: the error a tcgen05.cp is refused with, if any, and its descriptor's fields."""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from tensorlsu.sim.descriptor import CHUNK, GROUP_ROWS, SWIZZLE_BYTES

from ..codes import FORMAT_CODES, Error
from ..params import TMEM_LANES, TMEM_QUADRANTS, Params
from .records import FORMS, cp_instr_layout, form_chunks, form_lanes, form_rows

__all__ = ["CopyCheck", "SWIZZLE_LOG", "ADDR_BITS"]

#: Swizzle code → log2 of its swizzle row in chunks (0: 16 bytes, unswizzled … 3: 128 bytes).
SWIZZLE_LOG = {code: (s // CHUNK).bit_length() - 1 for code, s in SWIZZLE_BYTES.items()}
#: Bits of a descriptor's byte addresses and offsets (14 bits of 16-byte units).
ADDR_BITS = 18
#: Bits of the walk's largest address: the start, 7 rows of a 128-byte swizzle row, 15 SBOs and
#: an LBO, plus a chunk.
END_BITS = ADDR_BITS + 6
#: Bytes a swizzle pattern's XOR key steps by: one 128-byte row.
KEY_BYTES = 128


class CopyCheck(wiring.Component):
    """The descriptor decoded and every check of docs/tcgen05-cp.md, in the model's order: a
    descriptor field no copy may use (:attr:`~Error.DESCRIPTOR`); a start so far into its
    swizzle row that a row would cross it (:attr:`~Error.MISALIGNED`); a chunk past
    ``smem_size`` (:attr:`~Error.OUT_OF_RANGE`); a column origin off 4
    (:attr:`~Error.MISALIGNED`); columns past the allocation (:attr:`~Error.COLUMNS`); a lane
    past 127 (:attr:`~Error.LANES`). An unknown form or format is :attr:`~Error.UNSUPPORTED`.

    The shared-memory check takes the end of the walk's largest chunk before the swizzle (its
    terms are all nonnegative): unswizzled, it must be within ``smem_size``; swizzled, its
    128-byte row must be (the XOR moves a chunk within its 128-byte row only), which is the
    model's byte check when ``smem_size`` is a multiple of 128.

    Latency: :data:`LATENCY` clocks, a pipeline that never stalls (an instruction a clock):
    the fields and the terms of the largest address; their sum; the comparison with the
    size and the verdict. ``valid`` and ``instr`` come out beside the verdict.

    Members
    -------
    valid : In(1)
    instr : In(cp_instr_layout())
    smem_size : In(range(smem_bytes + 1))
        The shared memory the copy may read (a larger value counts as ``smem_bytes``).
    out_valid : Out(1)
    out_instr : Out(cp_instr_layout())
        ``valid`` and ``instr`` of :data:`LATENCY` clocks before.
    error : Out(Error)
    start, lbo, sbo : Out(ADDR_BITS)
        The descriptor's byte addresses.
    base_offset : Out(3)
    swizzle_log : Out(2)
        log2 of the swizzle row in chunks (:data:`SWIZZLE_LOG`).
    """

    #: Clocks from an instruction in to its verdict out.
    LATENCY = 3

    def __init__(self, params: Params, columns: int):
        self.params, self.columns = params, columns
        super().__init__({"valid": In(1), "instr": In(cp_instr_layout()),
                          "smem_size": In(range(params.smem_bytes + 1), init=params.smem_bytes),
                          "out_valid": Out(1), "out_instr": Out(cp_instr_layout()),
                          "error": Out(Error), "start": Out(ADDR_BITS), "lbo": Out(ADDR_BITS),
                          "sbo": Out(ADDR_BITS), "base_offset": Out(3), "swizzle_log": Out(2)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        # what every stage carries: the instruction, its fields, the verdicts known so far
        size_bits = range(p.smem_bytes + 1)
        carried = data.StructLayout({
            "valid": 1, "instr": cp_instr_layout(), "start": ADDR_BITS, "lbo": ADDR_BITS, "sbo": ADDR_BITS,
            "base_offset": 3, "swizzle_log": 2, "size": size_bits,
            # the first refusal other than OUT_OF_RANGE that the model's order puts before it,
            # and the one it puts after it (NONE: none)
            "early": Error, "late": Error})
        s1, s2 = Signal(carried, name="k_s1"), Signal(carried, name="k_s2")
        s3 = Signal(carried, name="k_s3")

        # -- stage 1: fields, flags, and the three terms of the largest chunk's end -----------
        ins, d = self.instr, self.instr.desc
        start, lbo, sbo = Signal(ADDR_BITS), Signal(ADDR_BITS), Signal(ADDR_BITS)
        swz = Signal(2)
        m.d.comb += [start.eq(d[0:14] << 4), lbo.eq(d[16:30] << 4), sbo.eq(d[32:46] << 4)]
        code = d[61:64]
        bad_desc = Signal()
        m.d.comb += bad_desc.eq(d[14:16].any() | d[30:32].any() | (d[46:49] != 0b001) | d[52]
                                | d[53:61].any() | ~code.matches(*[format(c, "03b") for c in SWIZZLE_BYTES]))
        with m.Switch(code):
            for c, lg in SWIZZLE_LOG.items():
                with m.Case(c):
                    m.d.comb += swz.eq(lg)
        lane0, col0 = ins.taddr[16:32], ins.taddr[0:16]
        known, crosses, lanes_out, cols_out = Signal(), Signal(), Signal(), Signal()
        # the largest chunk's end is head + groups + step: head = start + the last row of a
        # group (plus the chunk's 16 bytes when unswizzled), groups = the last group's SBOs,
        # step = the last chunk's offset (LBO unswizzled, else 16)
        head, groups, step = Signal(END_BITS), Signal(END_BITS), Signal(END_BITS)
        head_off = Signal(range(GROUP_ROWS * KEY_BYTES + CHUNK))   # start to the head, per form and swizzle
        sbo_times = Signal(ADDR_BITS + 4)                          # SBO times the groups, per form
        with m.Switch(ins.form):
            for f, (shape, cast) in enumerate(FORMS):
                with m.Case(f):
                    rows, chunks = form_rows(f), form_chunks(f)
                    last_row, n_groups = min(rows, GROUP_ROWS) - 1, max(rows // GROUP_ROWS, 1)
                    assert n_groups & (n_groups - 1) == 0
                    # the largest lane origin that keeps every lane inside Tensor Memory
                    span = TMEM_LANES * TMEM_QUADRANTS - 1 - int(form_lanes(f).max())
                    row_bytes = CHUNK << swz                    # S: the swizzle row
                    with m.Switch(swz):
                        for lg in range(4):
                            with m.Case(lg):
                                m.d.comb += head_off.eq(last_row * (CHUNK << lg) + (CHUNK if lg == 0 else 0))
                    m.d.comb += [
                        known.eq(1),
                        crosses.eq((swz != 0) & ((start & (row_bytes - 1)) + chunks * CHUNK > row_bytes)),
                        sbo_times.eq(sbo << (n_groups.bit_length() - 1)),
                        step.eq(Mux(swz == 0, lbo, CHUNK) if chunks == 2 else 0),
                        lanes_out.eq(lane0 > span),
                        cols_out.eq(col0 > self.columns - chunks * CHUNK // 4)]
        m.d.comb += [head.eq(start + head_off), groups.eq(sbo_times - sbo)]
        early, late = Signal(Error), Signal(Error)
        with m.If(~known | (ins.fmt == max(FORMAT_CODES.values()) + 1)):
            m.d.comb += early.eq(Error.UNSUPPORTED)
        with m.Elif(bad_desc):
            m.d.comb += early.eq(Error.DESCRIPTOR)
        with m.Elif(crosses):
            m.d.comb += early.eq(Error.MISALIGNED)
        with m.If(col0[0:2] != 0):
            m.d.comb += late.eq(Error.MISALIGNED)
        with m.Elif(cols_out):
            m.d.comb += late.eq(Error.COLUMNS)
        with m.Elif(lanes_out):
            m.d.comb += late.eq(Error.LANES)
        head_r, groups_r, step_r = (Signal(END_BITS, name=f"k_{n}") for n in ("head", "groups", "step"))
        m.d.sync += [s1.valid.eq(self.valid), s1.instr.eq(ins), s1.start.eq(start), s1.lbo.eq(lbo),
                     s1.sbo.eq(sbo), s1.base_offset.eq(d[49:52]), s1.swizzle_log.eq(swz),
                     s1.size.eq(Mux(self.smem_size > p.smem_bytes, p.smem_bytes, self.smem_size)),
                     s1.early.eq(early), s1.late.eq(late), head_r.eq(head), groups_r.eq(groups), step_r.eq(step)]

        # -- stage 2: the largest chunk's end ---------------------------------------------------
        end = Signal(END_BITS + 1, name="k_end")
        m.d.sync += [s2.eq(s1), end.eq(head_r + groups_r + step_r)]

        # -- stage 3: the range check and the verdict -------------------------------------------
        outside = Signal()
        m.d.comb += outside.eq(Mux(s2.swizzle_log == 0, end > s2.size,
                                   end // KEY_BYTES >= s2.size // KEY_BYTES))
        m.d.sync += [s3.eq(s2), s3.early.eq(Mux(s2.early != Error.NONE, s2.early,
                                                Mux(outside, Error.OUT_OF_RANGE, s2.late)))]
        m.d.comb += [self.out_valid.eq(s3.valid), self.out_instr.eq(s3.instr), self.error.eq(s3.early),
                     self.start.eq(s3.start), self.lbo.eq(s3.lbo), self.sbo.eq(s3.sbo),
                     self.base_offset.eq(s3.base_offset), self.swizzle_log.eq(s3.swizzle_log)]
        return m
