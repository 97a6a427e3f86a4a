# amaranth: UnusedElaboratable=no
"""hdl/verilog/emit.py: a register that holds unless enabled is emitted with its enable (and its
reset) rather than as a multiplexer fed back from its own output."""

import re

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from tensorlsu.hdl.verilog.emit import verilog_text


class Held(wiring.Component):
    en: In(1)
    d: In(100)
    q: Out(100)

    def elaborate(self, platform):
        m = Module()
        held = Signal(100, init=5)
        with m.If(self.en):
            m.d.sync += held.eq(self.d)
        m.d.comb += self.q.eq(held)
        return m


def test_a_held_register_is_emitted_with_its_reset_and_enable():
    text = verilog_text(Held(), "held")
    assert re.search(r"always @\(posedge clk\)\s+if \(rst\) (\S+) <= 100'h0+5;\s+else if \(en\) \1 <= d;", text), text
    # no copy of the register through a feedback multiplexer
    assert not re.search(r"\? d : ", text), text
