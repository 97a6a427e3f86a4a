"""The AXI4 port's registers: the read channels cut by register slices at the unit's edge."""

from __future__ import annotations

from amaranth import Cat, Module, Shape, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.slice import port_slice
from .axi import AxiSignature

__all__ = ["AxiSlice"]

#: the address channel's payload and the read data channel's, in the order they are packed
AR_FIELDS = ("arid", "araddr", "arlen", "arsize", "arburst")
R_FIELDS = ("rid", "rdata", "rresp", "rlast")
#: the write channels, idle: driven by the manager as constants, passed through
WRITE_OUT = ("awid", "awaddr", "awlen", "awsize", "awburst", "awvalid", "wdata", "wstrb", "wlast", "wvalid",
             "bready")


class AxiSlice(wiring.Component):
    """Register slices (``slices``, a kind of :func:`~tensorlsu.hdl.lib.slice.port_slice`) on
    the AXI4 manager port's read channels: the address channel on its way out, the read data
    channel on its way in, so that the global fetch stage's decisions never reach the port, nor
    the port's signals its logic, in the same cycle (``"forward"`` slices pass each ready
    through). The write channels are idle and pass through.

    Latency: a clock each way (an address leaves a clock after the fetch stage issues it; a
    beat reaches the fetch stage a clock after the port takes it). Throughput: a beat a clock
    on each channel.

    Members
    -------
    fetch : In(AxiSignature(...))
        Facing the global fetch stage (its ``axi`` port connects here).
    port : Out(AxiSignature(...))
        The unit's AXI4 manager port.
    closed : In(1)
        The read data channel is not ready (the unit is in reset: a beat taken would be lost).
    """

    def __init__(self, data_bits: int, id_bits: int, slices: str = "registered"):
        self.slices = slices
        sig = AxiSignature(data_bits, id_bits)
        self.ar_width, self.r_width = (sum(Shape.cast(sig.members[k].shape).width for k in fields)
                                       for fields in (AR_FIELDS, R_FIELDS))
        super().__init__({"fetch": In(sig), "port": Out(sig), "closed": In(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.ar = ar = port_slice(self.slices, unsigned(self.ar_width))
        m.submodules.r = r = port_slice(self.slices, unsigned(self.r_width))
        f, p = self.fetch, self.port
        m.d.comb += [ar.i.valid.eq(f.arvalid), f.arready.eq(ar.i.ready), ar.i.payload.eq(Cat(*[getattr(f, k) for k in AR_FIELDS])),
                     p.arvalid.eq(ar.o.valid), ar.o.ready.eq(p.arready), Cat(*[getattr(p, k) for k in AR_FIELDS]).eq(ar.o.payload),
                     r.i.valid.eq(p.rvalid), p.rready.eq(r.i.ready & ~self.closed), r.i.payload.eq(Cat(*[getattr(p, k) for k in R_FIELDS])),
                     f.rvalid.eq(r.o.valid), r.o.ready.eq(f.rready), Cat(*[getattr(f, k) for k in R_FIELDS]).eq(r.o.payload)]
        m.d.comb += [getattr(p, k).eq(getattr(f, k)) for k in WRITE_OUT]
        m.d.comb += [getattr(f, k).eq(getattr(p, k)) for k in ("awready", "wready", "bid", "bresp", "bvalid")]
        return m
