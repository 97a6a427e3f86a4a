"""The AXI4 manager port of the global fetch stage, its response codes and its line geometry."""

from __future__ import annotations

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import Params
from ..pipeline.records import ADDR_BITS

__all__ = ["AxiSignature", "AxiResp", "AXI_PAGE", "line_bits"]

#: An INCR burst never crosses a 4 KiB boundary (AXI4).
AXI_PAGE = 4096


class AxiResp:
    """AXI response codes (RRESP)."""
    OKAY, EXOKAY, SLVERR, DECERR = 0, 1, 2, 3


def line_bits(p: Params) -> tuple[int, int]:
    """(address bits within a data-width line, width of a line index): a line is one beat."""
    lb = (p.axi_data_bits // 8 - 1).bit_length()
    return lb, ADDR_BITS - lb


class AxiSignature(wiring.Signature):
    """An AXI4 manager port, from the manager's side: the read channels carry the traffic, the
    write channels are present and idle (``awvalid`` = ``wvalid`` = 0, ``bready`` = 1).
    Member names are the AXI signal names, so a subordinate model finds them by prefix."""

    def __init__(self, data_bits: int, id_bits: int, addr_bits: int = ADDR_BITS):
        def channel(out, inn):
            return {**{k: Out(v) for k, v in out.items()}, **{k: In(v) for k, v in inn.items()}}
        super().__init__({
            **channel({"arid": id_bits, "araddr": addr_bits, "arlen": 8, "arsize": 3, "arburst": 2,
                       "arvalid": 1}, {"arready": 1}),
            **channel({"rready": 1}, {"rid": id_bits, "rdata": data_bits, "rresp": 2, "rlast": 1, "rvalid": 1}),
            **channel({"awid": id_bits, "awaddr": addr_bits, "awlen": 8, "awsize": 3, "awburst": 2,
                       "awvalid": 1}, {"awready": 1}),
            **channel({"wdata": data_bits, "wstrb": data_bits // 8, "wlast": 1, "wvalid": 1}, {"wready": 1}),
            **channel({"bready": 1}, {"bid": id_bits, "bresp": 2, "bvalid": 1})})
