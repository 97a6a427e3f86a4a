"""Formal specifications of the copy wing (see specs.py for the conventions: undriven inputs
are free, assumptions constrain the environment).

The walk is checked against the walk of docs/tcgen05-cp.md written out here with the swizzle
as stated (not the component's shifts), for every form, every descriptor and every pattern of
advances; the placement against the lane table itself (not the group table it is built from).
"""

from amaranth import Elaboratable, Module, Mux, Signal, signed
from amaranth.asserts import AnySeq
from amaranth.hdl import Assert, Assume, Cover
from tensorlsu.hdl.copy.check import ADDR_BITS
from tensorlsu.hdl.copy.placement import CopyPlacement
from tensorlsu.hdl.copy.records import FORMS, SLOTS, form_chunks, form_lanes, form_rows
from tensorlsu.hdl.copy.walk import CopyWalk
from tensorlsu.hdl.params import Params, TmemParams

__all__ = ["COPY_SPECS"]


def _spec_row_size(swz):
    """S, the bytes from a row of a group to the next: 16 unswizzled, else the swizzle's span
    over 8."""
    return Mux(swz == 0, 16, Mux(swz == 1, 32, Mux(swz == 2, 64, 128)))


def _spec_unswizzled(gbase, lbo, swz, row: int, chunk):
    """Chunk ``chunk`` of row ``row`` of the group whose base is ``gbase``, before the
    swizzle: gbase + (row mod 8)·S + chunk·(LBO, or 16 when swizzled)."""
    return gbase + (row % 8) * _spec_row_size(swz) + chunk * Mux(swz == 0, lbo, 16)


def _spec_swizzled(pre, swz, base_offset):
    """An address ``pre`` swizzled: bits 4 … 3+B XORed with ((pre >> 7) − base offset) mod 2^B."""
    key = ((pre >> 7) - base_offset) % Mux(swz == 0, 1, Mux(swz == 1, 2, Mux(swz == 2, 4, 8)))
    return pre ^ (key << 4)


class _WalkSpec(Elaboratable):
    """A walk of the full shared memory, with every input free (the form one of the forms)."""

    def __init__(self, walk_cls=CopyWalk):
        self.dut = walk_cls(Params(smem_bytes=228 * 1024))

    def _walk(self):
        m = Module()
        d = m.submodules.dut = self.dut
        for sig in (d.start, d.form, d.addr, d.lbo, d.sbo, d.base_offset, d.swizzle_log, d.advance):
            m.d.comb += sig.eq(AnySeq(len(sig)))
        m.d.comb += Assume(d.form < len(FORMS))
        return m, d


def _shape_holds(st):
    """The walk's registered shape is its form's (``CopyWalkOrder`` proves it)."""
    return [(st["form"] != f) | ((st["last_group"] == max(form_rows(f) // 8, 1) - 1)
                                 & (st["two_chunks"] == (form_chunks(f) == 2))
                                 & (st["group_rows"] == min(form_rows(f), 8)))
            for f in range(len(FORMS))]


class CopyWalkSlots(_WalkSpec):
    """In any state of the walk, each slot of the step it offers is its row's chunk: the
    slot's unswizzled address (``pre``, whose value :class:`CopyWalkOrder` proves), swizzled
    as the specification states; the rows the form has, and no other; and no two of them
    share a bank quad (a step is read in one cycle)."""

    def elaborate(self, platform):
        m, d = self._walk()
        st = d.state
        for f in range(len(FORMS)):
            rows = form_rows(f)
            with m.If(st["valid"] & (st["form"] == f)):
                for k in range(SLOTS):
                    slot = d.step.slots[k]
                    a = Signal(CopyWalk.WIDE, name=f"spec_addr{f}_{k}")
                    m.d.comb += a.eq(_spec_swizzled(st["pre"][k], st["swizzle_log"], st["base_offset"]))
                    if k < min(rows, 8):
                        m.d.comb += Assert(slot.valid & (slot.quad == a[4:7])
                                           & (slot.line == (a >> 7)[:len(slot.line)]),
                                           "each slot reads its row's chunk, swizzled")
                    else:
                        m.d.comb += Assert(~slot.valid, "no slot past the group's rows")
        with m.If(~st["valid"]):
            m.d.comb += Assert(~d.step.slots[0].valid, "nothing read while idle")
        # the slots' addresses as a step's are: the rows of a group S bytes apart (proven
        # below), so that the quads' proof holds of every state the walk reaches
        with m.If(st["valid"]):
            m.d.comb += [Assume(holds) for holds in _shape_holds(st)]
            for k in range(1, SLOTS):
                m.d.comb += Assume(st["pre"][k] == (st["pre"][0] + k * _spec_row_size(st["swizzle_log"]))[:CopyWalk.WIDE])
        # no two chunks of a step share a bank quad: a step is read in one cycle, whatever the
        # descriptor (the rows of a group sit S bytes apart in one 8·S-byte block, whose quads
        # the swizzle permutes)
        for k in range(SLOTS):
            for j in range(k):
                a, b = d.step.slots[k], d.step.slots[j]
                with m.If(a.valid & b.valid):
                    m.d.comb += Assert(a.quad != b.quad, "a step's chunks lie in distinct quads")
        return m


class CopyWalkOrder(_WalkSpec):
    """Each step the walk offers is step (g, c) of the copy it was started with, in order (c
    the faster), each slot's unswizzled address that of its row's chunk from the group's base
    ``start + g·SBO`` (the specification's own sum, SBO added as it counts groups); ``last``
    on the final step, and the walk ends there. Proven by induction."""

    def elaborate(self, platform):
        m, d = self._walk()
        # the copy being walked, as the specification keeps it
        start, lbo, sbo = Signal(ADDR_BITS), Signal(ADDR_BITS), Signal(ADDR_BITS)
        form, swz, boff = Signal(range(len(FORMS))), Signal(2), Signal(3)
        n = Signal(6)                                   # steps taken
        gbase = Signal(CopyWalk.WIDE)                   # start + SBO per group passed
        two = Signal()
        m.d.comb += two.eq(Mux(form == 0, 1, Mux(form == 2, 1, 0)))
        assert [f for f in range(len(FORMS)) if form_chunks(f) == 2] == [0, 2]
        with m.If(d.start & d.ready):
            m.d.sync += [start.eq(d.addr), lbo.eq(d.lbo), sbo.eq(d.sbo), form.eq(d.form), swz.eq(d.swizzle_log),
                         boff.eq(d.base_offset), n.eq(0), gbase.eq(d.addr)]
        with m.Elif(d.valid & d.advance):
            m.d.sync += n.eq(n + 1)
            with m.If(~two | n[0]):                     # the group's last chunk: the next group
                m.d.sync += gbase.eq(gbase + sbo)
        st = d.state
        with m.If(d.valid):
            m.d.comb += Assert((st["form"] == form) & (st["swizzle_log"] == swz) & (st["base_offset"] == boff),
                               "the walk holds the copy it was started with")
            m.d.comb += Assert(form < len(FORMS), "a form of the table")
            m.d.comb += [Assert(holds, "the walk's shape is its form's") for holds in _shape_holds(st)]
            # its increments: to the second chunk, and from a group's last chunk to the next
            # group's first (modulo the walk's width, as its sums are)
            chunk_off = Mux(swz == 0, lbo, 16)
            to_group = Signal(signed(CopyWalk.WIDE))
            m.d.comb += [to_group.eq(Mux(two, sbo - chunk_off, sbo)),
                         Assert(st["to_chunk"] == chunk_off, "the chunk's offset"),
                         Assert(st["to_group"] == to_group.as_unsigned(), "SBO less the chunk's offset"),
                         Assert(st["inc"] == Mux(two & ~n[0], chunk_off, to_group.as_unsigned()),
                                "the next step's increment: to the second chunk, else to the next group")]
        for f in range(len(FORMS)):
            chunks = form_chunks(f)
            steps = max(form_rows(f) // 8, 1) * chunks
            with m.If(d.valid & (form == f)):
                g, c = n // chunks, n % chunks
                m.d.comb += [Assert(n < steps, "no step past the copy's last"),
                             Assert((d.step.group == g) & (d.step.chunk == c), "steps in order, chunk by chunk"),
                             Assert(d.step.last == (n == steps - 1), "last on the final step only"),
                             *[Assert(st["pre"][k] == _spec_unswizzled(gbase, lbo, swz, k, c)[:CopyWalk.WIDE],
                                      "each slot's address is its row's chunk from start + g·SBO")
                               for k in range(SLOTS)]]
        m.d.comb += Cover(d.valid & d.step.last & (form == 0))
        # the walk takes a start when idle or as its last step advances, and then at no other time
        m.d.comb += Assert(d.ready == (~d.valid | (d.advance & d.step.last)), "a start is taken when ready only")
        return m


class CopyPlacementSpec(Elaboratable):
    """For every form, group, chunk and taddr the check lets through, the placement writes each
    row of the step where the lane table (``layouts.cp_lane_table``, read here directly) puts
    it: every copy of the row in its quadrant, at the lane whose slot (lane mod 8) holds the
    row (one row a quadrant, at taddr's lane, for a .4x256b), no other lane or quadrant, four
    columns from taddr's column plus four a chunk."""

    def __init__(self, placement_cls=CopyPlacement):
        self.dut = placement_cls(TmemParams(512))

    def elaborate(self, platform):
        m = Module()
        d = m.submodules.dut = self.dut
        for sig in (d.form, d.taddr, d.group, d.chunk):
            m.d.comb += sig.eq(AnySeq(len(sig)))
        lane0, col0 = d.taddr[16:32], d.taddr[0:16]
        m.d.comb += [Assume(d.form < len(FORMS)), Assume(col0[0:2] == 0), Assume(col0 + 8 <= 512)]
        m.d.comb += Assert(d.col == (col0 + 4 * d.chunk)[:len(d.col)], "four columns from taddr's, four a chunk")
        for f, (shape, cast) in enumerate(FORMS):
            L = form_lanes(f)
            rows, chunks = form_rows(f), form_chunks(f)
            with m.If(d.form == f):
                m.d.comb += [Assume(d.group < max(rows // 8, 1)), Assume(d.chunk < chunks),
                             Assume(lane0 <= 127 - int(L.max()))]
                if rows < 8:        # one row a quadrant, at taddr's lane
                    for r in range(rows):
                        assert all(int(x) == 32 * r for x in L[r])
                    m.d.comb += [Assert(d.four & (d.quads == 0b1111), "a row a quadrant"),
                                 Assert(d.lanes == (1 << lane0[:5])[:32], "at taddr's lane")]
                    continue
                m.d.comb += Assume(lane0 == 0)
                for g in range(rows // 8):
                    with m.If(d.group == g):
                        quads, lanes = 0, set()
                        for k in range(8):
                            for lane in L[8 * g + k]:
                                q, within = divmod(int(lane), 32)
                                # the quadrant's lane ``within`` takes slot within mod 8: row k
                                assert within % 8 == k, (shape, cast, g, k)
                                quads |= 1 << q
                                lanes.add(within)
                        m.d.comb += [Assert(~d.four, "eight rows a step"),
                                     Assert(d.quads == quads, "the group's quadrants and no other"),
                                     Assert(d.lanes == sum(1 << x for x in lanes), "the group's lanes and no other")]
        return m


class _BrokenPlacement(CopyPlacement):
    """A deliberately broken placement: the second group of every form lands on the first's
    lanes (the placement proof must fail)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        with m.If(self.group == 1):
            m.d.comb += self.lanes.eq(0xFF)
        return m


class _BrokenWalk(CopyWalk):
    """A deliberately broken walk: its swizzle key forgets the base offset (the walk proof
    must fail)."""

    @staticmethod
    def _key(addr, base_offset):
        return (addr >> 7)[0:3]


COPY_SPECS = {
    "copy_walk_slots": (lambda: CopyWalkSlots(), "prove", 1, "every slot in every state of the walk"),
    "copy_walk_order": (lambda: CopyWalkOrder(), "prove", 2, "induction: the steps in order and each slot's address"),
    "copy_walk_cover": (lambda: CopyWalkOrder(), "cover", 34, "a 128x256b copy ends"),
    "broken_copy_walk": (lambda: CopyWalkSlots(_BrokenWalk), "bmc", 3,
                         "must FAIL: a copy started with a base offset reads unswizzled chunks"),
    "copy_placement": (lambda: CopyPlacementSpec(), "bmc", 1,
                       "combinational: one step covers every form, group, chunk and taddr"),
    "broken_copy_placement": (lambda: CopyPlacementSpec(_BrokenPlacement), "bmc", 1, "must FAIL"),
}
