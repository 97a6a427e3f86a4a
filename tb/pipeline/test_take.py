# amaranth: UnusedElaboratable=no
"""The take and the progress merge alone (Amaranth's simulator), every combination of their
inputs that matters.

Expected values: the take rule (docs/ARCHITECTURE.md, "The take"): a pass leaves when the queue
offers one and the next entry is free and, unless it was refused, both serving stages are free;
a shared pass goes to the bank stage, a global one to the fetch stage, every one to the result
stage and the ring; a refused stmatrix waits for the bank stage's room for its owed beats. The
merge: the busy stage's entry, rows from the stage that lands them."""

import itertools

from amaranth.sim import Simulator
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline.progress import ProgressMerge
from tensorlsu.hdl.pipeline.take import Take


def _run(dut, bench):
    """Combinational: no clock."""
    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


def test_the_take_rule():
    dut = Take(Params())

    async def bench(ctx):
        ctx.set(dut.tail, 2)
        ctx.set(dut.start, 1)
        for offered, free, stages_free, refused, glob, store, room in itertools.product((0, 1), repeat=7):
            if store and glob:
                continue
            ctx.set(dut.pop.valid, offered)
            ctx.set(dut.free, free)
            ctx.set(dut.stages_free, stages_free)
            ctx.set(dut.store_room, room)
            ctx.set(dut.pop.payload.err, Error.STRIDE if refused else Error.NONE)
            ctx.set(dut.pop.payload.glob, glob)
            ctx.set(dut.pop.payload.consts.valid, 1)
            ctx.set(dut.pop.payload.consts.load, 1 - store)
            await ctx.delay(1e-9)
            take = bool(offered and free and (refused or stages_free) and (room or not (store and refused)))
            ok = take and not refused
            case = (offered, free, stages_free, refused, glob, store, room)
            assert ctx.get(dut.pop.ready) == take, case
            assert (ctx.get(dut.take.take), ctx.get(dut.take.ok)) == (take, ok), case
            assert (ctx.get(dut.shared.take), ctx.get(dut.shared.ok)) == (take, ok and not glob), case
            assert (ctx.get(dut.global_.take), ctx.get(dut.global_.ok)) == (take, ok and bool(glob)), case
            for sig in (dut.take, dut.shared, dut.global_):
                assert (ctx.get(sig.offered), ctx.get(sig.tail), ctx.get(sig.start), ctx.get(sig.free)) == \
                    (offered, 2, 1, free), case
                assert ctx.get(sig.pass_.glob) == glob
    _run(dut, bench)


def test_a_pair_leaves_together():
    """packed: the first pass of a shared-memory wmma.load pair waits until its second is
    queued and the entry after ``tail`` is free too, then both leave (``pair``, the queue's
    ``second`` popped with it); a global pair, a last pass, a refused one or one of another
    family leave alone, as under the plain rule."""
    dut = Take(Params(schedule="packed"))

    async def bench(ctx):
        ctx.set(dut.tail, 3)
        ctx.set(dut.second_tail, 4)
        ctx.set(dut.second_start, 8)
        ctx.set(dut.pop.valid, 1)
        ctx.set(dut.free, 1)
        ctx.set(dut.stages_free, 1)
        c = dut.pop.payload.consts
        for wmma, final, glob, refused, second, second_free in itertools.product((0, 1), repeat=6):
            for sig, v in ((c.load, 1), (c.wmma, wmma), (c.final, final), (dut.pop.payload.glob, glob),
                           (dut.pop.payload.err, Error.STRIDE if refused else Error.NONE),
                           (dut.second.valid, second), (dut.second_free, second_free)):
                ctx.set(sig, v)
            await ctx.delay(1e-9)
            case = (wmma, final, glob, refused, second, second_free)
            pair = wmma and not final and not glob and not refused
            take = not pair or bool(second and second_free)
            assert ctx.get(dut.take.take) == take, case
            assert ctx.get(dut.take.pair) == (pair and take), case
            assert ctx.get(dut.second.ready) == (pair and take), case
            assert ctx.get(dut.shared.pair) == (pair and take), case
            assert (ctx.get(dut.take.second_tail), ctx.get(dut.take.second_start)) == (4, 8), case
    _run(dut, bench)


def test_the_progress_merge():
    dut = ProgressMerge(Params())

    async def bench(ctx):
        b, f, out = dut.bank, dut.fetch, dut.progress
        ctx.set(b.buf, 1)
        ctx.set(f.buf, 2)
        ctx.set(b.count, 1)
        ctx.set(b.land_rows[0], 0xB)
        ctx.set(f.land_rows[0], 0xF)
        ctx.set(f.error, Error.SLVERR)
        for fetch_busy, f_lands, b_fin, f_fin in itertools.product((0, 1), repeat=4):
            ctx.set(dut.fetch_busy, fetch_busy)
            ctx.set(f.land.slots, 0b1 if f_lands else 0)
            ctx.set(b.land.slots, 0b10)
            ctx.set(b.finished, b_fin)
            ctx.set(f.finished, f_fin)
            await ctx.delay(1e-9)
            case = (fetch_busy, f_lands, b_fin, f_fin)
            assert ctx.get(out.buf) == (2 if fetch_busy else 1), case
            assert ctx.get(out.count) == 1, case              # only the banks count cycles
            assert ctx.get(out.finished) == (b_fin or f_fin), case
            assert ctx.get(out.error) == (Error.SLVERR if f_fin else Error.NONE), case
            assert ctx.get(out.land.slots) == (0b1 if f_lands else 0b10), case
            assert ctx.get(out.land_rows[0]) == (0xF if f_lands else 0xB), case
    _run(dut, bench)
