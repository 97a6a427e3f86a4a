"""Pass queue (B): checked passes between the accept stage and the bank stage."""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..codes import Error
from ..lib.mux import mux_tree
from ..params import Params
from .records import pass_layout

__all__ = ["PassQueue"]


class PassQueue(wiring.Component):
    """Pass queue, prefix ``b_``: a FIFO of ``depth`` checked passes (a power of two:
    :attr:`~tensorlsu.hdl.params.Params.pass_queue_depth`), all registered, so that handing one
    to the banks involves no comparator or adder (a multiplexer on the read pointer), and the
    accept stage moves on whenever the queue has room and ``hold`` is low (``push.ready`` is a
    decode of registers, ``hold`` one too), so that the instruction port's ready depends on no
    bank or result-stage decision.

    Latency: a pass pushed in one cycle can be popped the next. ``push.ready`` does not depend
    on ``pop.ready`` (a full queue takes nothing, even in a cycle it pops).

    The stmatrix overlap verdict enters as it is (``ovl``) and becomes the error as the pass is
    read out (:attr:`~tensorlsu.hdl.codes.Error.OVERLAP`, unless an earlier check already
    refused it): the overlap comparators end in a register. ``pop.payload.ovl`` is 0.

    Members
    -------
    push : In(stream.Signature(pass_layout(params)))
    pop : Out(stream.Signature(pass_layout(params)))
        The oldest pass (its payload is valid while ``pop.valid``).
    second : Out(stream.Signature(pass_layout(params))), with paired passes
        The pass behind the oldest; its ``ready`` (with ``pop.ready``) pops both, so that the
        two passes of a pair leave together.
    hold : In(1)
        Take nothing this cycle (the global fetch stage has no free context).
    busy : Out(1)
        A pass is queued.
    """

    def __init__(self, params: Params, depth: int = 2):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two of at least 2, not {depth!r}")
        self.params, self.depth = params, depth
        layout = pass_layout(params)
        super().__init__({"push": In(stream.Signature(layout)), "pop": Out(stream.Signature(layout)),
                          "hold": In(1), "busy": Out(1),
                          **({"second": Out(stream.Signature(layout))} if params.pair_passes else {})})

        # the head's copy (and with paired passes the second's): every field but the addresses
        # of the slots past the first window, which only the bank stage's registers read
        self.fast_bits = layout["addr"].offset + params.window * params.pass_addr_bits
        # the queue's state, named here for the proof's invariants (formal/specs.py)
        self.state = {"entries": [Signal(layout, name=f"b{k}", reset_less=True) for k in range(depth)],
                      "valid": Signal(depth, name="b_valid"), "wp": Signal(range(depth), name="b_wp"),
                      "rp": Signal(range(depth), name="b_rp"), "full": Signal(name="b_full"),
                      "heads": [Signal(self.fast_bits, name=name, reset_less=True)
                                for name in ("b_head_copy", "b_second_copy")[:2 if params.pair_passes else 1]]}

    def elaborate(self, platform):
        m = Module()
        n, pair = self.depth, self.params.pair_passes
        entries, valid, wp, rp, full = (self.state[k] for k in ("entries", "valid", "wp", "rp", "full"))
        fast = self.fast_bits
        pushed = Signal(name="b_pushed")
        m.d.comb += [self.push.ready.eq(~full & ~self.hold), self.busy.eq(valid.any()),
                     pushed.eq(self.push.valid & self.push.ready), self.pop.valid.eq(valid.bit_select(rp, 1))]
        # entry rp + k as it will be after this cycle's push
        ahead = []
        for k in range(4 if pair else 2):
            at = Signal.like(rp, name=f"b_rp_plus{k}")
            m.d.comb += at.eq(rp + k)
            nxt = Signal(fast, name=f"b_ahead{k}")
            held = self.state["heads"][k] if k < len(self.state["heads"]) else \
                Value.cast(mux_tree(at, entries))[:fast]
            m.d.comb += nxt.eq(Mux(pushed & (wp == at), Value.cast(self.push.payload)[:fast], held))
            ahead.append(nxt)
        pops = Signal(range(3), name="b_pops")     # passes leaving this cycle
        outs = [(self.pop, rp, self.state["heads"][0], "b_head")]
        if pair:
            rp2 = Signal.like(rp, name="b_rp2")
            m.d.comb += [rp2.eq(rp + 1), self.second.valid.eq(valid.bit_select(rp2, 1))]
            outs.append((self.second, rp2, self.state["heads"][1], "b_second"))
        for k, (out, ptr, copy, name) in enumerate(outs):
            head = Signal(pass_layout(self.params), name=name)
            m.d.comb += head.eq(Cat(copy, Value.cast(mux_tree(ptr, entries))[fast:]))
            m.d.comb += [out.payload.eq(head), out.payload.ovl.eq(0),
                         out.payload.err.eq(Mux(head.ovl & (head.err == Error.NONE), Error.OVERLAP, head.err))]
            # the copy follows the entry at its place after this cycle's pops
            # (picked by the handshakes themselves, not by their count: the take is late)
            popped = self.pop.valid & self.pop.ready
            m.d.sync += copy.eq(Mux(popped, Mux(self.second.ready, ahead[k + 2], ahead[k + 1]), ahead[k])
                                if pair else Mux(popped, ahead[k + 1], ahead[k]))
        set_, clr = Signal(n), Signal(n)
        with m.If(pushed):
            m.d.comb += set_.bit_select(wp, 1).eq(1)
            m.d.sync += wp.eq(wp + 1)
            with m.Switch(wp):
                for k in range(n):
                    with m.Case(k):
                        m.d.sync += entries[k].eq(self.push.payload)
        with m.If(self.pop.valid & self.pop.ready):
            m.d.comb += [clr.bit_select(rp, 1).eq(1), pops.eq(1)]
            m.d.sync += rp.eq(rp + 1)
            if pair:
                with m.If(self.second.ready):
                    m.d.comb += [clr.bit_select(rp2, 1).eq(1), pops.eq(2)]
                    m.d.sync += rp.eq(rp + 2)
        m.d.sync += valid.eq((valid & ~clr) | set_)
        # whether every entry is valid, a register (the instruction port's ready chain starts
        # here): a pop leaves room (a full queue takes no push), else a push into the last
        # free entry fills it
        one_free = Cat(*[valid == ((1 << n) - 1) ^ (1 << k) for k in range(n)]).any()
        m.d.sync += full.eq((pops == 0) & (full | (pushed & one_free)))
        return m
