"""Behavioral model: each test names where its expected values come from."""

import numpy as np
import pytest
from tensorlsu.sim import decompress as dz
from tensorlsu.sim import model, ptx
from tensorlsu.sim.model import ModelError

RNG = np.random.default_rng(7)


def P(text, target="sm_100a"):
    return ptx.parse(text, target)


# ---- ldmatrix / stmatrix .m8n8 (docs/facts.md, measured) ------------------------------------

def test_m8n8_word_per_thread_index_pattern():
    smem = np.arange(4096, dtype=np.uint32).astype("<u4").view(np.uint8)  # word i holds i
    addr = [16 * (3 * t + 1) for t in range(32)]
    regs = model.ldmatrix(P("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), smem, addr)
    for t in range(32):
        for i in range(4):
            row = addr[8 * i + t // 4]
            assert regs[t, i] == row // 4 + t % 4  # word at byte 4·(t mod 4) of row ⌊t/4⌋


def test_m8n8_trans_halves():
    smem = np.arange(2048, dtype=np.uint16).astype("<u2").view(np.uint8)  # element e holds e
    addr = [16 * t for t in range(32)]
    regs = model.ldmatrix(P("ldmatrix.sync.aligned.m8n8.x2.trans.b16"), smem, addr)
    for t in range(32):
        for i in range(2):
            lo = (8 * i + 2 * (t % 4)) * 8 + t // 4
            hi = (8 * i + 2 * (t % 4) + 1) * 8 + t // 4
            assert regs[t, i] == lo | hi << 16


@pytest.mark.parametrize("form", ["m8n8.x4.b16", "m8n8.x2.trans.b16", "m16n8.x4.trans.b8",
                                  "m16n8.x1.trans.b8"])
def test_stmatrix_inverts_ldmatrix_image(form):
    """PTX text: stmatrix stores the fragments ldmatrix would load (exact inverse mapping)."""
    st = P(f"stmatrix.sync.aligned.{form}")
    addr = list(RNG.permutation(64)[:32] * 16)
    regs = RNG.integers(0, 1 << 32, size=(32, st.nregs), dtype=np.uint64)
    out = model.stmatrix(st, np.zeros(1024, np.uint8), addr, regs)
    written = np.zeros(1024, bool)
    for a in addr[: 8 * st.num]:
        written[a:a + 16] = True
    assert not out[~written].any()  # nothing outside the rows
    if form.startswith("m8n8"):
        ld = P(f"ldmatrix.sync.aligned.{form}")
        assert (model.ldmatrix(ld, out, addr) == regs).all()


def test_stmatrix_m16n8_element_placement():
    """PTX text: e0..e3 of a .b32 register are its bytes, LSB first; the 16×8 matrix is stored
    column-major with .trans (8 rows of 16 bytes); CuTe SM100_U8x4_STSM_T: thread t holds
    rows g, g+8 and columns 2c, 2c+1."""
    st = P("stmatrix.sync.aligned.m16n8.x1.trans.b8")
    addr = [32 * r for r in range(32)]
    regs = np.array([[t * 4 + 0 | (t * 4 + 1) << 8 | (t * 4 + 2) << 16 | (t * 4 + 3) << 24]
                     for t in range(32)], dtype=np.uint64)
    out = model.stmatrix(st, np.zeros(256, np.uint8), addr, regs)
    for t in range(32):
        g, c = divmod(t, 4)
        for k in range(4):
            i, j = g + 8 * (k >> 1), 2 * c + (k & 1)  # element (row i, column j)
            assert out[addr[j] + i] == 4 * t + k


def test_ignored_threads_do_not_matter():
    ins = P("ldmatrix.sync.aligned.m8n8.x1.b16")
    smem = RNG.integers(0, 256, 512, dtype=np.uint8)
    a = [16 * t for t in range(32)]
    b = a[:8] + [7] * 24  # threads ≥ 8 hold garbage, even misaligned
    assert (model.ldmatrix(ins, smem, a) == model.ldmatrix(ins, smem, b)).all()


# ---- decompression (PTX text + docs/facts.md) -----------------------------------------------

def _manual_unpack(row: bytes, w: int):
    n = int.from_bytes(row, "little")
    return [(n >> (w * j)) & ((1 << w) - 1) for j in range(16)]


@pytest.mark.parametrize("fmt,w", [("b4x16_p64", 4), ("b6x16_p32", 6)])
def test_decompress_matches_bit_arithmetic(fmt, w):
    rows = RNG.integers(0, 256, size=(50, 16), dtype=np.uint8)
    out = dz.decompress(rows, fmt)
    for r, o in zip(rows, out):
        assert list(o) == _manual_unpack(bytes(r), w)
    assert (dz.decompress(dz.compress(out, fmt), fmt) == out).all()
    # padding bytes never matter
    pad = rows.copy()
    pad[:, (16 * w) // 8:] ^= 0xFF
    assert (dz.decompress(pad, fmt) == out).all()


def test_decompress_refuses_bad_input():
    with pytest.raises(ValueError, match="unknown source format"):
        dz.decompress(np.zeros(16, np.uint8), "b5x16")
    with pytest.raises(ValueError, match="16 bytes long"):
        dz.decompress(np.zeros(8, np.uint8), "b4x16_p64")
    with pytest.raises(ValueError, match="below 16"):
        dz.compress(np.full(16, 16, np.uint8), "b4x16_p64")


@pytest.mark.parametrize("fmt", ["b6x16_p32", "b4x16_p64"])
def test_m8n16_decompressing_load(fmt):
    """PTX text Figure 106: thread t holds 4 consecutive elements (4c … 4c+3) of row ⌊t/4⌋."""
    w = dz.FORMATS[fmt]
    ins = P(f"ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.{fmt}")
    elems = RNG.integers(0, 1 << w, size=(16, 16), dtype=np.uint8)
    smem = np.zeros(1024, np.uint8)
    addr = [64 * r for r in range(16)] + [0] * 16
    for r in range(16):
        smem[addr[r]:addr[r] + 16] = dz.compress(elems[r], fmt)
    regs = model.ldmatrix(ins, smem, addr)
    for t in range(32):
        for i in range(2):
            want = elems[8 * i + t // 4, 4 * (t % 4):4 * (t % 4) + 4]
            assert regs[t, i] == int.from_bytes(bytes(want), "little")


def test_m16n16_decompressed_equals_b8_of_expanded_rows():
    """PTX text: the decompressing .m16n16 load is the .b8 load of the expanded elements."""
    fmt = "b6x16_p32"
    elems = RNG.integers(0, 64, size=(32, 16), dtype=np.uint8)
    packed, plain = np.zeros(512, np.uint8), np.zeros(512, np.uint8)
    for r in range(32):
        packed[16 * r:16 * r + 16] = dz.compress(elems[r], fmt)
        plain[16 * r:16 * r + 16] = elems[r]
    addr = [16 * r for r in range(32)]
    a = model.ldmatrix(P(f"ldmatrix.sync.aligned.m16n16.x2.trans.b8x16.{fmt}"), packed, addr)
    b = model.ldmatrix(P("ldmatrix.sync.aligned.m16n16.x2.trans.b8"), plain, addr)
    assert (a == b).all()


# ---- refusals of undefined behavior ---------------------------------------------------

def test_row_errors():
    ins = P("ldmatrix.sync.aligned.m8n8.x1.b16")
    smem = np.zeros(256, np.uint8)
    with pytest.raises(ModelError, match="row address 0x18 of thread 1 is not 16-byte aligned"):
        model.ldmatrix(ins, smem, [0, 24] + [0] * 30)
    with pytest.raises(ModelError, match="thread 7 is outside the 256-byte shared memory"):
        model.ldmatrix(ins, smem, [0] * 7 + [256] + [0] * 24)
    with pytest.raises(ModelError, match="outside"):
        model.ldmatrix(ins, smem, [-16] + [0] * 31)
    with pytest.raises(ModelError, match="32 thread addresses"):
        model.ldmatrix(ins, smem, [0] * 8)
    st = P("stmatrix.sync.aligned.m8n8.x1.b16")
    with pytest.raises(ModelError, match="threads 0 and 3 store the same row 0x0"):
        model.stmatrix(st, smem, [0, 16, 32, 0] + [48 + 16 * i for i in range(4)] + [0] * 24,
                       np.zeros((32, 1)))
    with pytest.raises(ModelError, match="regs must have shape"):
        model.stmatrix(st, smem, [16 * i for i in range(32)][:8] + [0] * 24, np.zeros((32, 2)))


def test_wmma_errors():
    ins = P("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16", "sm_90a")
    mem = model.Memory(shared=np.zeros(4096, np.uint8))
    with pytest.raises(ModelError, match="0x10 is not 32-byte"):
        model.wmma_load(ins, mem, 16, 16)
    with pytest.raises(ModelError, match="stride 8 is below the matrix's leading dimension 16"):
        model.wmma_load(ins, mem, 0, 8)
    with pytest.raises(ModelError, match="stride 20 elements of .f16 is 40 bytes, not a multiple of 16"):
        model.wmma_load(ins, mem, 0, 20)
    with pytest.raises(ModelError, match="outside the 4096-byte shared image"):
        model.wmma_load(ins, mem, 4096 - 32, 16)
    g = P("wmma.load.c.sync.aligned.row.m16n16k16.global.f32", "sm_90a")
    with pytest.raises(ModelError, match="global address range"):
        model.wmma_load(g, model.Memory(global_=np.zeros(512, np.uint8), global_base=1 << 20), 1 << 20)


def test_wmma_generic_resolves_space():
    ins = P("wmma.load.c.sync.aligned.row.m16n16k16.f32", "sm_90a")
    sh = RNG.integers(0, 256, 1024, dtype=np.uint8)
    gl = RNG.integers(0, 256, 1024, dtype=np.uint8)
    mem = model.Memory(shared=sh, global_=gl, global_base=1 << 40)
    a = model.wmma_load(ins, mem, 0)
    b = model.wmma_load(P("wmma.load.c.sync.aligned.row.m16n16k16.shared.f32", "sm_90a"), mem, 0)
    c = model.wmma_load(ins, mem, 1 << 40)
    d = model.wmma_load(P("wmma.load.c.sync.aligned.row.m16n16k16.global.f32", "sm_90a"), mem, 1 << 40)
    assert (a == b).all() and (c == d).all() and not (a == c).all()


# ---- tcgen05.ld (PTX text; docs/facts.md for Tensor Memory geometry) ----------------------

def _tmem():
    return RNG.integers(0, 1 << 32, size=(128, 512), dtype=np.uint64).astype(np.uint32)


def test_32x32b_lane_per_thread_and_quadrant():
    tm = _tmem()
    ins = P("tcgen05.ld.sync.aligned.32x32b.x4.b32")
    regs, red = model.tcgen05_ld(ins, tm, (64 << 16) | 100, warp=2)
    assert red is None
    assert (regs == tm[64:96, 100:104]).all()
    with pytest.raises(ModelError, match="outside warp 1's quadrant, lanes 32..63"):
        model.tcgen05_ld(ins, tm, (64 << 16) | 100, warp=1)
    with pytest.raises(ModelError, match="outside warp 0's quadrant"):
        model.tcgen05_ld(ins, tm, (1 << 16), warp=0)  # lanes 1..32 spill over
    with pytest.raises(ModelError, match="beyond column 511"):
        model.tcgen05_ld(ins, tm, 509, warp=0)
    model.tcgen05_ld(ins, tm, (96 << 16) | 508, warp=7)  # warp 7 → quadrant 3


def test_16x32bx2_split_and_pack():
    tm = _tmem()
    ins = P("tcgen05.ld.sync.aligned.16x32bx2.x2.b32")
    regs, _ = model.tcgen05_ld(ins, tm, (16 << 16) | 8, warp=0, split=40)
    for t in range(32):
        for r in range(2):
            assert regs[t, r] == tm[16 + t % 16, 8 + r + 40 * (t // 16)]
    with pytest.raises(ModelError, match="needs immHalfSplitoff"):
        model.tcgen05_ld(ins, tm, 0, 0)
    with pytest.raises(ModelError, match="only for .16x32bx2"):
        model.tcgen05_ld(P("tcgen05.ld.sync.aligned.32x32b.x1.b32"), tm, 0, 0, split=4)
    pk = P("tcgen05.ld.sync.aligned.32x32b.x2.pack::16b.b32")
    regs, _ = model.tcgen05_ld(pk, tm, 0, 0)
    for t in range(32):
        for r in range(2):
            want = (int(tm[t, 2 * r]) & 0xFFFF) | (int(tm[t, 2 * r + 1]) & 0xFFFF) << 16
            assert regs[t, r] == want


# ---- tcgen05.st: the mirror of tcgen05.ld (spec: each register goes where the load reads it)

def test_st_32x32b_writes_lane_per_thread_and_nothing_else():
    tm = _tmem()
    regs = RNG.integers(0, 1 << 32, size=(32, 8), dtype=np.uint64).astype(np.uint32)
    ins = P("tcgen05.st.sync.aligned.32x32b.x8.b32")
    out = model.tcgen05_st(ins, tm, (32 << 16) | 200, warp=5, regs=regs)
    want = tm.copy()
    want[32:64, 200:208] = regs           # PTX text: thread t owns lane t, register r column r
    assert (out == want).all()
    assert not (out == tm).all()           # the input image is untouched
    with pytest.raises(ModelError, match="thread 0 writes lane 32"):
        model.tcgen05_st(ins, tm, (32 << 16), warp=0, regs=regs)
    with pytest.raises(ModelError, match="beyond column 511"):
        model.tcgen05_st(ins, tm, 505, warp=0, regs=regs)
    with pytest.raises(ModelError, match="regs must have shape"):
        model.tcgen05_st(ins, tm, 0, warp=0, regs=regs[:, :4])


@pytest.mark.parametrize("form", ["16x64b.x4", "16x128b.x2", "16x256b.x1", "32x32b.x16",
                                  "16x32bx2.x8", "16x64b.x2.unpack::16b", "16x256b.x2.unpack::16b",
                                  "32x32b.x4.unpack::16b"])
def test_st_then_ld_is_identity(form):
    tm = _tmem()
    st = P(f"tcgen05.st.sync.aligned.{form}.b32")
    ld = P(f"tcgen05.ld.sync.aligned.{form.replace('unpack', 'pack')}.b32")
    regs = RNG.integers(0, 1 << 32, size=(32, st.nregs), dtype=np.uint64).astype(np.uint32)
    split = 64 if st.shape == "16x32bx2" else None
    out = model.tcgen05_st(st, tm, (96 << 16) | 128, 3, regs, split=split)
    back, _ = model.tcgen05_ld(ld, out, (96 << 16) | 128, 3, split=split)
    assert (back == regs).all()
    changed = (out != tm).sum()
    cells = st.nregs * 32 * (2 if st.pack else 1)
    assert changed <= cells and changed > cells * 0.9   # random data: nearly every cell changes


def test_st_unpack_zeroes_the_upper_halves():
    tm = np.full((128, 512), 0xFFFFFFFF, np.uint32)
    ins = P("tcgen05.st.sync.aligned.32x32b.x1.unpack::16b.b32")
    regs = np.full((32, 1), 0x12345678, np.uint32)
    out = model.tcgen05_st(ins, tm, 0, 0, regs)
    assert (out[0:32, 0] == 0x5678).all() and (out[0:32, 1] == 0x1234).all()
    assert (out[0:32, 2] == 0xFFFFFFFF).all() and (out[32:, 0] == 0xFFFFFFFF).all()


def test_st_split_halves_must_not_overlap():
    tm = _tmem()
    ins = P("tcgen05.st.sync.aligned.16x32bx2.x4.b32")
    regs = np.zeros((32, 4), np.uint32)
    model.tcgen05_st(ins, tm, 0, 0, regs, split=4)           # adjacent halves: fine
    with pytest.raises(ModelError, match="halves would overlap"):
        model.tcgen05_st(ins, tm, 0, 0, regs, split=3)
    with pytest.raises(ModelError, match="needs immHalfSplitoff"):
        model.tcgen05_st(ins, tm, 0, 0, regs)
    pk = P("tcgen05.st.sync.aligned.16x32bx2.x4.unpack::16b.b32")
    with pytest.raises(ModelError, match="less than the 8 columns"):
        model.tcgen05_st(pk, tm, 0, 0, regs, split=4)
    with pytest.raises(ModelError, match="cannot run tcgen05.ld"):
        model.tcgen05_st(P("tcgen05.ld.sync.aligned.32x32b.x1.b32"), tm, 0, 0, regs)


def _f(x):
    return int(np.array(x, np.float32).view(np.uint32))


@pytest.mark.parametrize("op,mods,vals,want", [
    ("max", "", [1.0, -3.0, 2.5, 0.0], 2.5),
    ("min", "", [1.0, -3.0, 2.5, 0.0], -3.0),
    ("min", ".abs", [1.0, -3.0, 2.5, -0.5], 0.5),
    ("max", ".abs", [1.0, -3.0, 2.5, -0.5], 3.0),
    ("max", "", [1.0, float("nan"), 2.0, 0.0], 2.0),        # NaN ignored without .NaN
    ("max", ".NaN", [1.0, float("nan"), 2.0, 0.0], "nan"),  # NaN wins with .NaN
    ("min", "", [float("nan")] * 4, "nan"),
    ("min", "", [0.0, -0.0, 1.0, 2.0], -0.0),
])
def test_red_f32(op, mods, vals, want):
    tm = np.zeros((128, 512), np.uint32)
    tm[0:32, 0:4] = [_f(v) for v in vals]
    ins = P(f"tcgen05.ld.red.sync.aligned.32x32b.x4.{op}{mods}.f32", "sm_103a")
    regs, red = model.tcgen05_ld(ins, tm, 0, 0)
    assert (regs[:, :4] == tm[0:32, 0:4]).all()  # registers get the raw data
    expect = 0x7FFFFFFF if want == "nan" else _f(want)
    assert (red == expect).all()


def test_red_integers():
    tm = np.zeros((128, 512), np.uint32)
    tm[0:32, 0:3] = [5, 0xFFFFFFFF, 7]
    s = P("tcgen05.ld.red.sync.aligned.32x32b.x4.min.s32", "sm_103a")
    u = P("tcgen05.ld.red.sync.aligned.32x32b.x4.min.u32", "sm_103a")
    assert (model.tcgen05_ld(s, tm, 0, 0)[1] == 0xFFFFFFFF).all()  # -1 is the signed minimum
    assert (model.tcgen05_ld(u, tm, 0, 0)[1] == 0).all()           # column 3 holds 0


# ---- wavefronts (docs/facts.md rule, measured) ---------------------------------------------

def test_wavefronts_rule():
    x4 = P("ldmatrix.sync.aligned.m8n8.x4.b16")
    free = [16 * t for t in range(32)]
    assert model.wavefronts(x4, free) == 4            # conflict-free: 128 B/clk
    for stride, ways in ((32, 2), (64, 4), (128, 8)):
        a = [stride * t for t in range(32)]
        assert model.wavefronts(x4, a) == 4 * ways    # 64/32/16 B/clk
    dup = [0] * 32
    assert model.wavefronts(x4, dup) == 4             # same address costs once per matrix
    assert model.wavefronts(x4, dup, "packed") == 4   # at least one cycle per 8 rows
    # rows of different matrices in one quad: the H200 serializes per matrix, a packer does not
    mixed = [128 * t for t in range(32)]
    assert model.wavefronts(x4, mixed) == 32
    assert model.wavefronts(x4, mixed, "packed") == 32
    spread = [16 * (t % 8) + 128 * (t // 8) for t in range(32)]
    assert model.wavefronts(x4, spread) == 4
    with pytest.raises(ValueError, match="unknown policy"):
        model.wavefronts(x4, free, "fast")
    with pytest.raises(ModelError, match="one matrix address"):
        model.wavefronts(P("wmma.load.c.sync.aligned.row.m16n16k16.f32", "sm_90a"), free)


def test_wavefronts_m16n16_counts_8_row_groups():
    """A 16-row matrix is served as two 128-byte groups: each half's busiest quad counts."""
    ins = P("ldmatrix.sync.aligned.m16n16.x1.trans.b8")
    a = [128 * t for t in range(8)] + [16 + 128 * t for t in range(8)] + [0] * 16
    assert model.wavefronts(ins, a) == 8 + 8          # half 0 all in quad 0, half 1 in quad 1
    assert model.wavefronts(ins, a, "packed") == 8    # a packer serves both halves together
    assert model.wavefronts(ins, [16 * t for t in range(32)]) == 2


def test_packed_never_above_h200():
    for num in (1, 2, 4):
        ins = P(f"ldmatrix.sync.aligned.m8n8.x{num}.b16")
        for _ in range(200):
            a = list(RNG.integers(0, 64, 32) * 16)
            h, p = model.wavefronts(ins, a), model.wavefronts(ins, a, "packed")
            assert num <= p <= h
