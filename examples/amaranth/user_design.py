"""The unit as a component inside a user's own Amaranth design.

``Issuer`` is a user's block: it holds a small table of ldmatrix row addresses and, once
started, hands the unit one instruction and takes its result beats, counting them. ``System``
connects it to :class:`tensorlsu.hdl.lsu.LoadStoreUnit` with ``wiring.connect`` (the unit's
ports are ``wiring`` streams: ``instr``, ``store``, ``result``, ``fill``, ``dump_req``,
``dump``) and ties off the ports it does not use. Run it to write the system's Verilog:

    python examples/amaranth/user_design.py build/system.v
"""

import sys

from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline.forms import form_id
from tensorlsu.sim import ptx

PARAMS = Params(smem_bytes=4096, tmem_columns=0, global_bytes=0)
LDMATRIX = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
#: the row addresses the issuer sends: a Swizzle<3,4,3> tile's four 8x8 matrices
ROWS = [(t % 8) * 128 + (((t // 8) ^ (t % 8)) << 4) for t in range(32)]


class Issuer(wiring.Component):
    """Sends one ldmatrix when ``start`` rises and counts the result beats until the last."""

    def __init__(self, unit: LoadStoreUnit):
        ports = unit.signature.members
        # the unit's input stream is this block's output, and the other way round
        super().__init__({"start": In(1), "beats": Out(8), "done": Out(1),
                          "instr": ports["instr"].flip(), "result": ports["result"].flip()})

    def elaborate(self, platform):
        m = Module()
        sent = Signal()
        m.d.comb += [self.instr.payload.form.eq(form_id(LDMATRIX)), self.instr.valid.eq(self.start & ~sent),
                     self.result.ready.eq(1)]
        for t, a in enumerate(ROWS):
            m.d.comb += self.instr.payload.addr[t].eq(a)
        with m.If(self.instr.valid & self.instr.ready):
            m.d.sync += sent.eq(1)
        with m.If(self.result.valid):
            m.d.sync += self.beats.eq(self.beats + 1)
            with m.If(self.result.payload.last):
                m.d.sync += self.done.eq(1)
        return m


class System(wiring.Component):
    """The user's top: the issuer and the unit; shared memory filled from outside."""

    def __init__(self):
        self.unit = LoadStoreUnit(PARAMS)
        self.issuer = Issuer(self.unit)
        fill = self.unit.signature.members["fill"]
        super().__init__({"start": In(1), "done": Out(1), "beats": Out(8), "fill": fill})

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit, m.submodules.issuer = self.unit, self.issuer
        wiring.connect(m, self.issuer.instr, self.unit.instr)
        wiring.connect(m, self.unit.result, self.issuer.result)
        wiring.connect(m, wiring.flipped(self.fill), self.unit.fill)
        m.d.comb += [self.issuer.start.eq(self.start), self.done.eq(self.issuer.done), self.beats.eq(self.issuer.beats),
                     self.unit.smem_size.eq(PARAMS.smem_bytes),
                     self.unit.store.valid.eq(0), self.unit.dump_req.valid.eq(0), self.unit.dump.ready.eq(1)]
        return m


if __name__ == "__main__":
    system = System()
    text = verilog.convert(system, name="user_system")
    with open(sys.argv[1] if len(sys.argv) > 1 else "user_system.v", "w") as f:
        f.write(text)
