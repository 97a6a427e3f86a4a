"""Register slices: a stream cut by flip-flops in both directions (:class:`StreamSlice`), or
in the forward direction alone (:class:`ForwardSlice`, the FPGA build's ports)."""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ForwardSlice", "StreamSlice", "port_slice"]


class _Slice(wiring.Component):
    """What both slices have: the stream in and out, and the output entry ``main`` with its
    valid bit (named for the proofs, formal/specs.py)."""

    def __init__(self, shape):
        self.shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})
        self.main = Signal(shape, name="main", reset_less=True)
        self.main_valid = Signal(name="main_valid")


class StreamSlice(_Slice):
    """A register slice of a stream of ``shape``: the output's ``valid`` and ``payload`` and the
    input's ``ready`` all come from flip-flops, so no combinational path crosses it in either
    direction. Used as the unit's intake on every input stream and outlet on every output
    stream, as a block inside an SM sees its ports through registers.

    Latency: a beat taken in one cycle is offered the next. Throughput: a beat a clock. Two
    entries: ``main`` (the output) and ``skid``, which takes the beat the input offered in the
    cycle the output was held; while ``skid`` is full the input is not ready. Beats leave in the
    order they came. The payload registers have no reset (only their valid bits do).

    Members
    -------
    i : In(stream.Signature(shape))
    o : Out(stream.Signature(shape))
    """

    def __init__(self, shape):
        super().__init__(shape)
        self.skid = Signal(shape, name="skid", reset_less=True)
        # skid_valid and its twin ``full``, which alone answers the input's ready: skid_valid
        # enables every bit of the skid entry, and a producer's handshake should not wait behind
        # that fanout (both kept, or synthesis merges them into one)
        self.skid_valid = Signal(name="skid_valid", attrs={"keep": 1})
        self.full = Signal(name="skid_full", attrs={"keep": 1})

    def elaborate(self, platform):
        m = Module()
        main, skid, main_valid, skid_valid, full = self.main, self.skid, self.main_valid, self.skid_valid, self.full
        m.d.comb += [self.o.payload.eq(main), self.o.valid.eq(main_valid), self.i.ready.eq(~full)]
        # an empty skid copies the input whatever the output does (it counts only once
        # skid_valid is set): its wide enable waits on no ready
        with m.If(~skid_valid):
            m.d.sync += skid.eq(self.i.payload)
        with m.If(~main_valid | self.o.ready):
            # the output takes the held beat first, else the input's
            m.d.sync += [main.eq(Mux(skid_valid, skid, self.i.payload)),
                         main_valid.eq(skid_valid | self.i.valid), skid_valid.eq(0), full.eq(0)]
        with m.Elif(self.i.valid & ~skid_valid):
            m.d.sync += [skid_valid.eq(1), full.eq(1)]
        return m


class ForwardSlice(_Slice):
    """A forward register slice of a stream of ``shape``: the output's ``valid`` and ``payload``
    come from flip-flops; the input's ``ready`` is the output's, passed through (it is ready
    while the slice is empty or its beat leaves). Half a :class:`StreamSlice`: one entry, no
    skid entry and no multiplexer in front of the register, for the FPGA build, where a port's
    ``ready`` crossing the unit costs no clock and the skid entry's LUTs count
    (:attr:`~tensorlsu.hdl.params.Params.port_slices`).

    Latency: a beat taken in one cycle is offered the next. Throughput: a beat a clock. The
    payload register has no reset (only its valid bit has).

    Members
    -------
    i : In(stream.Signature(shape))
    o : Out(stream.Signature(shape))
    """

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.o.payload.eq(self.main), self.o.valid.eq(self.main_valid),
                     self.i.ready.eq(~self.main_valid | self.o.ready)]
        with m.If(self.i.ready):
            m.d.sync += [self.main.eq(self.i.payload), self.main_valid.eq(self.i.valid)]
        return m


def port_slice(kind: str, shape):
    """A port slice of ``kind`` (one of :data:`~tensorlsu.hdl.params.PORT_SLICES`) for a stream
    of ``shape``."""
    return {"registered": StreamSlice, "forward": ForwardSlice}[kind](shape)
