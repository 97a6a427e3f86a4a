"""RowRing alone (Amaranth's simulator): where successive loads go in the row-buffer ring, and
the bank stage's go-ahead.

Expected values: the ring's rule, derived by hand from its definition (hdl/pipeline/ring.py): each load
takes the next ``blocks`` blocks after the previous load's, its first block rounded up to a
multiple of ``align + 1``; a refused pass takes none; a window may not be served while it
meets a block the head (another entry) still reads, or a waiting entry's blocks."""

from stagesim import simulate
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline.ring import RowRing


def _take(ctx, dut, *, tail, blocks, align=0, load=1, err=Error.NONE):
    tk = dut.take
    ctx.set(tk.pass_.consts.load, load)
    ctx.set(tk.pass_.consts.blocks, blocks)
    ctx.set(tk.pass_.consts.align, align)
    ctx.set(tk.pass_.err, err)
    ctx.set(tk.tail, tail)
    ctx.set(tk.take, 1)
    ctx.set(tk.ok, err == Error.NONE)


def test_loads_take_the_next_aligned_blocks():
    dut = RowRing(Params())
    assert dut.params.row_blocks == 12             # three passes of four blocks: not a power of two
    # (blocks, align, error) of successive passes -> the first block each gets
    passes = [(1, 0, Error.NONE), (2, 1, Error.NONE), (1, 0, Error.STRIDE), (1, 0, Error.NONE),
              (4, 3, Error.NONE), (1, 0, Error.NONE), (4, 3, Error.NONE), (1, 0, Error.NONE),
              (4, 3, Error.NONE), (2, 1, Error.NONE), (4, 3, Error.NONE), (4, 3, Error.NONE)]
    # alloc 0 -> 0 (alloc 1); 1 rounded up to 2 -> 2 (alloc 4); a refused pass leaves alloc at 4
    # (start 4 shown, nothing taken); 4 -> 4 (alloc 5); 5 rounded up to 8 -> 8 (alloc 12 = 0);
    # 0 -> 0 (alloc 1); 1 rounded up to 4 -> 4 (alloc 8); 8 -> 8 (alloc 9); 9 rounded up to
    # 12 = 0 -> 0 (alloc 4); 4 -> 4 (alloc 6); 6 rounded up to 8 -> 8 (alloc 12 = 0); 0 -> 0
    expect = [0, 2, 4, 4, 8, 0, 4, 8, 0, 4, 8, 0]
    starts = []

    async def bench(ctx):
        for k, (blocks, align, err) in enumerate(passes):
            _take(ctx, dut, tail=k % 3, blocks=blocks, align=align, err=err)
            starts.append(ctx.get(dut.start))
            await ctx.tick()
        ctx.set(dut.take.take, 0)
        ctx.set(dut.take.ok, 0)

    simulate(dut, bench)
    assert starts == expect


def test_the_go_ahead_waits_for_the_heads_reads():
    """Entry 0 is the head and still reads block 0; the bank stage fills entry 1, whose first
    window is block 0 (the ring wrapped): blocked until the head releases the block."""
    dut = RowRing(Params())
    seen = []

    async def bench(ctx):
        ctx.set(dut.entries.head, 0)
        ctx.set(dut.entries.head_next, 0)
        # entry 1 is taken now: a 1-block load at alloc 0 -> block 0
        _take(ctx, dut, tail=1, blocks=1)
        ctx.set(dut.entries.valid, 0b001)
        ctx.set(dut.entries.valid_next, 0b011)
        ctx.set(dut.entries.reading, 0b0001)         # the head's remaining beats read block 0
        await ctx.tick()
        ctx.set(dut.take.take, 0)
        ctx.set(dut.take.ok, 0)
        ctx.set(dut.entries.valid, 0b011)
        ctx.set(dut.fill_buf, 1)
        for reading in (0b0001, 0b0001, 0b0000, 0b0000):
            seen.append((ctx.get(dut.window), ctx.get(dut.blocked)))
            ctx.set(dut.entries.reading, reading)
            await ctx.tick()
        seen.append((ctx.get(dut.window), ctx.get(dut.blocked)))

    simulate(dut, bench)
    # the window is block 0 throughout; the go-ahead follows the release a cycle later
    assert seen == [(0b0001, 1), (0b0001, 1), (0b0001, 1), (0b0001, 0), (0b0001, 0)]


def test_a_waiting_entry_blocks_the_window_until_it_is_head():
    """The head (entry 0) reads nothing more; entry 1 waits, filled, in block 1; the bank stage
    fills entry 2, whose window comes round the ring to block 1: blocked until entry 1 is the
    head and releases."""
    dut = RowRing(Params())
    seen = []

    async def bench(ctx):
        ctx.set(dut.entries.head, 0)
        ctx.set(dut.entries.head_next, 0)
        ctx.set(dut.entries.valid, 0b001)
        for tail, valid_next in ((0, 0b001), (1, 0b011), (2, 0b111)):
            _take(ctx, dut, tail=tail, blocks=1)    # one block each: blocks 0, 1, 2
            ctx.set(dut.entries.valid_next, valid_next)
            await ctx.tick()
            ctx.set(dut.entries.valid, valid_next)
        ctx.set(dut.take.take, 0)
        ctx.set(dut.take.ok, 0)
        ctx.set(dut.fill_buf, 2)
        seen.append((ctx.get(dut.window), ctx.get(dut.blocked)))     # block 2
        ctx.set(dut.advance, 1)                 # the window moves on round the ring to block 1
        for _ in range(dut.params.row_blocks - 1):
            await ctx.tick()
            seen.append((ctx.get(dut.window), ctx.get(dut.blocked)))
        ctx.set(dut.advance, 0)
        # the head (entry 0) gives its last beat: entry 1 becomes the head, reading block 1
        ctx.set(dut.entries.end, 1)
        ctx.set(dut.entries.head_next, 1)
        ctx.set(dut.entries.valid_next, 0b110)
        await ctx.tick()
        ctx.set(dut.entries.end, 0)
        ctx.set(dut.entries.head, 1)
        ctx.set(dut.entries.valid, 0b110)
        ctx.set(dut.entries.reading, 0b0010)
        seen.append((ctx.get(dut.window), ctx.get(dut.blocked)))
        await ctx.tick()
        seen.append((ctx.get(dut.window), ctx.get(dut.blocked)))
        ctx.set(dut.entries.reading, 0)                 # entry 1's beats are done with block 1
        await ctx.tick()
        seen.append((ctx.get(dut.window), ctx.get(dut.blocked)))

    simulate(dut, bench)
    # blocks 2 to the last: nobody's; 0: the head's, which reads nothing more; 1: the waiting
    # entry's; then the same block while entry 1, now the head, still reads it; free a cycle after
    nb = dut.params.row_blocks
    assert seen == ([(1 << b, 0) for b in range(2, nb)] + [(0b0001, 0), (0b0010, 1)]
                    + [(0b0010, 1), (0b0010, 1), (0b0010, 0)])


def test_a_pair_is_placed_together_and_each_pass_has_its_go_ahead():
    """packed (a ring of 24 blocks, 4 a pass): five passes fill blocks 0-19 (entries 0-4);
    entries 1-4 are done and entry 0 is the head, still reading blocks 0-3. A pair then takes
    entries 1 and 2, its first pass blocks 20-23, its second, round the ring, blocks 0-3: the
    second waits, the first does not, and the second goes a cycle after the head releases."""
    dut = RowRing(Params(schedule="packed"))
    assert dut.params.row_blocks == 24
    seen, starts = [], []

    async def bench(ctx):
        tk = dut.take
        ctx.set(dut.entries.head, 0)
        ctx.set(dut.entries.head_next, 0)
        for tail in range(5):
            _take(ctx, dut, tail=tail, blocks=4, align=3)
            ctx.set(dut.entries.valid_next, 0b00001)
            await ctx.tick()
            ctx.set(dut.entries.valid, 0b00001)
        ctx.set(dut.entries.reading, 0b1111)            # the head reads all of its blocks
        _take(ctx, dut, tail=1, blocks=4, align=3)
        ctx.set(tk.pairs, 1)
        ctx.set(tk.pair, 1)
        ctx.set(tk.second_tail, 2)
        ctx.set(tk.second_pass.consts.load, 1)
        ctx.set(tk.second_pass.consts.blocks, 4)
        ctx.set(tk.second_pass.consts.align, 3)
        ctx.set(dut.entries.valid_next, 0b00111)
        starts.append((ctx.get(dut.start), ctx.get(dut.second_start)))
        await ctx.tick()
        for s in (tk.take, tk.ok, tk.pairs, tk.pair):
            ctx.set(s, 0)
        ctx.set(dut.entries.valid, 0b00111)
        ctx.set(dut.fill_buf, 1)
        ctx.set(dut.second_buf, 2)
        for reading in (0b1111, 0b0000, 0b0000):
            seen.append((ctx.get(dut.window), ctx.get(dut.blocked), ctx.get(dut.second_window),
                         ctx.get(dut.second_blocked)))
            ctx.set(dut.entries.reading, reading)
            await ctx.tick()

    simulate(dut, bench)
    assert starts == [(20, 0)]
    assert seen == [(0xF00000, 0, 0x00000F, 1), (0xF00000, 0, 0x00000F, 1), (0xF00000, 0, 0x00000F, 0)]
