"""Decompressor: 16 packed sub-byte elements of a row to 16 bytes (sim/decompress.py)."""


from amaranth import Cat, Const, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..codes import FMT_BITS, FORMAT_CODES
from ..params import ROW_BITS, ROW_BYTES

__all__ = ["Decompressor"]
_ELEMS = ROW_BYTES    # one element per byte of the row


class Decompressor(wiring.Component):
    """Combinational: ``out`` byte j is element j of ``row`` in the format ``fmt`` (zero-extended
    into the low bits), or ``row`` itself for code 0.

    Members
    -------
    row : In(128)
    fmt : In(2)
        :data:`~tensorlsu.hdl.codes.FORMAT_CODES`.
    out : Out(128)
    """

    # Amaranth reads ports from these annotations; a type checker cannot
    row: In(ROW_BITS)  # type: ignore[valid-type]
    fmt: In(FMT_BITS)  # type: ignore[valid-type]
    out: Out(ROW_BITS)  # type: ignore[valid-type]

    def elaborate(self, platform):
        m = Module()
        unpacked = {}
        for name, code in FORMAT_CODES.items():
            if name is None:
                continue
            w = {"b6x16_p32": 6, "b4x16_p64": 4}[name]
            unpacked[code] = Cat(*[Cat(self.row[w * j:w * j + w], Const(0, 8 - w)) for j in range(_ELEMS)])
        with m.Switch(self.fmt):
            for code, value in unpacked.items():
                with m.Case(code):
                    m.d.comb += self.out.eq(value)
            with m.Default():
                m.d.comb += self.out.eq(self.row)
        return m
