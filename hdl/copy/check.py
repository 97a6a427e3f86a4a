"""Copy check: the error a tcgen05.cp is refused with, if any, and its descriptor's fields."""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
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
#: Bytes a swizzle pattern's XOR key steps by: one 128-byte row.
KEY_BYTES = 128


class CopyCheck(wiring.Component):
    """Combinational: the descriptor decoded and every check of docs/tcgen05-cp.md, in the
    model's order: a descriptor field no copy may use (:attr:`~Error.DESCRIPTOR`); a start so
    far into its swizzle row that a row would cross it (:attr:`~Error.MISALIGNED`); a chunk
    past ``smem_size`` (:attr:`~Error.OUT_OF_RANGE`); a column origin off 4
    (:attr:`~Error.MISALIGNED`); columns past the allocation (:attr:`~Error.COLUMNS`); a lane
    past 127 (:attr:`~Error.LANES`). An unknown form or format is :attr:`~Error.UNSUPPORTED`.

    The shared-memory check takes the walk's largest address before the swizzle (its terms
    are all nonnegative): unswizzled, that chunk must end within ``smem_size``; swizzled, its
    128-byte row must (the XOR moves a chunk within its 128-byte row only), which is the
    model's byte check when ``smem_size`` is a multiple of 128.

    Members
    -------
    instr : In(cp_instr_layout())
    smem_size : In(range(smem_bytes + 1))
        The shared memory the copy may read (a larger value counts as ``smem_bytes``).
    error : Out(Error)
    start, lbo, sbo : Out(ADDR_BITS)
        The descriptor's byte addresses.
    base_offset : Out(3)
    swizzle_log : Out(2)
        log2 of the swizzle row in chunks (:data:`SWIZZLE_LOG`).
    """

    def __init__(self, params: Params, columns: int):
        self.params, self.columns = params, columns
        super().__init__({"instr": In(cp_instr_layout()),
                          "smem_size": In(range(params.smem_bytes + 1), init=params.smem_bytes),
                          "error": Out(Error), "start": Out(ADDR_BITS), "lbo": Out(ADDR_BITS),
                          "sbo": Out(ADDR_BITS), "base_offset": Out(3), "swizzle_log": Out(2)})

    def elaborate(self, platform):
        m = Module()
        ins, d = self.instr, self.instr.desc
        m.d.comb += [self.start.eq(d[0:14] << 4), self.lbo.eq(d[16:30] << 4), self.sbo.eq(d[32:46] << 4),
                     self.base_offset.eq(d[49:52])]
        code = d[61:64]
        bad_desc = Signal()
        m.d.comb += bad_desc.eq(d[14:16].any() | d[30:32].any() | (d[46:49] != 0b001) | d[52]
                                | d[53:61].any() | ~code.matches(*[format(c, "03b") for c in SWIZZLE_BYTES]))
        with m.Switch(code):
            for c, lg in SWIZZLE_LOG.items():
                with m.Case(c):
                    m.d.comb += self.swizzle_log.eq(lg)

        # per form: rows of a group, chunks, groups, the lanes and columns past the origin
        size = Signal(range(self.params.smem_bytes + 1))
        m.d.comb += size.eq(Mux(self.smem_size > self.params.smem_bytes, self.params.smem_bytes, self.smem_size))
        lane0, col0 = ins.taddr[16:32], ins.taddr[0:16]
        swz_row = Signal(range(KEY_BYTES + 1))          # S, bytes
        m.d.comb += swz_row.eq(CHUNK << self.swizzle_log)
        known = Signal()
        crosses, outside, lanes_out, cols_out = Signal(), Signal(), Signal(), Signal()
        last = Signal(ADDR_BITS + 6)                    # the walk's largest address, unswizzled
        with m.Switch(ins.form):
            for f, (shape, cast) in enumerate(FORMS):
                with m.Case(f):
                    rows, chunks = form_rows(f), form_chunks(f)
                    # the largest lane origin that keeps every lane inside Tensor Memory
                    span = TMEM_LANES * TMEM_QUADRANTS - 1 - int(form_lanes(f).max())
                    step = Mux(self.swizzle_log == 0, self.lbo, CHUNK)
                    m.d.comb += [
                        known.eq(1),
                        crosses.eq((self.swizzle_log != 0) &
                                   ((self.start & (swz_row - 1)) + chunks * CHUNK > swz_row)),
                        last.eq(self.start + (min(rows, GROUP_ROWS) - 1) * swz_row
                                + (max(rows // GROUP_ROWS, 1) - 1) * self.sbo + (chunks - 1) * step),
                        lanes_out.eq(lane0 > span),
                        cols_out.eq(col0 + chunks * CHUNK // 4 > self.columns)]
        m.d.comb += outside.eq(Mux(self.swizzle_log == 0, last + CHUNK > size,
                                   (last // KEY_BYTES) >= (size // KEY_BYTES)))
        with m.If(~known | (ins.fmt == max(FORMAT_CODES.values()) + 1)):
            m.d.comb += self.error.eq(Error.UNSUPPORTED)
        with m.Elif(bad_desc):
            m.d.comb += self.error.eq(Error.DESCRIPTOR)
        with m.Elif(crosses):
            m.d.comb += self.error.eq(Error.MISALIGNED)
        with m.Elif(outside):
            m.d.comb += self.error.eq(Error.OUT_OF_RANGE)
        with m.Elif(col0[0:2] != 0):
            m.d.comb += self.error.eq(Error.MISALIGNED)
        with m.Elif(cols_out):
            m.d.comb += self.error.eq(Error.COLUMNS)
        with m.Elif(lanes_out):
            m.d.comb += self.error.eq(Error.LANES)
        return m
