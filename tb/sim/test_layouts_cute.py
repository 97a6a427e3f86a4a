"""sm_100-family layouts against NVIDIA CuTe's published copy atoms.

No hardware here runs these forms, so the expected values are derived independently of
sim/layouts.py: the SrcLayout / DstLayout / ValID shapes and strides below are transcribed
from CUTLASS include/cute/atom/copy_traits_sm100.hpp (and the register shuffle of
include/cute/arch/copy_sm100.hpp), evaluated with the small CuTe layout function of tb/cute.py;
the tcgen05.cp atoms are transcribed there (the trace writer uses them too).
"""

import pytest
from cute import UTCCP, cute, utccp_lanes
from tensorlsu.sim import layouts, ptx


# ---- ldmatrix / stmatrix (copy_traits_sm100.hpp) --------------------------------------
# (src shape, src stride) maps (thread, bit) of the row operand; (dst …) maps (thread, bit)
# of the registers, both into one reference bit numbering.
LDSM_T = {  # ldmatrix .m16n16 .trans .b8, x1 and x2 (SM100_U8x8_LDSM_T, SM100_U8x16_LDSM_T)
    1: ((((2, 2, 4, 2), 128), ((128, 1024, 256, 0), 1)),
        (((4, 8), (8, 2, 2, 2)), ((256, 8), (1, 128, 64, 1024)))),
    2: ((((2, 2, 4, 2), 128), ((128, 1024, 256, 2048), 1)),
        (((4, 8), (8, 2, 2, 4)), ((256, 8), (1, 128, 64, 1024)))),
}
LDSM_N_DECOMP = {  # ldmatrix .m8n16 with either source format (SM100_SU{4,6}_DU8x16_x{1,2,4})
    1: (((((8, 4), 128), ((128, 0), 1))), (((32, 32), (32, 1)))),
    2: (((((16, 2), 128), ((128, 0), 1))), (((32, (32, 2)), (32, (1, 1024))))),
    4: ((((32, 128), (128, 1))), (((32, (32, 4)), (32, (1, 1024))))),
}
STSM_T = {  # stmatrix .m16n8 .trans .b8 (SM100_U8x{4,8,16}_STSM_T): src = registers, dst = rows
    1: ((((4, 8), (8, 2, 2)), ((256, 8), (1, 128, 64))), ((((8, 4), 128), ((128, 0), 1)))),
    2: ((((4, 8), (8, 2, 2, 2)), ((256, 8), (1, 128, 64, 1024))), ((((16, 2), 128), ((128, 0), 1)))),
    4: ((((4, 8), (8, 2, 2, 4)), ((256, 8), (1, 128, 64, 1024))), (((32, 128), (128, 1)))),
}


def _row_of_bit(src, nbits):
    """Reference bit → (thread supplying the row, bit in the row), inverting the row layout."""
    (shape, stride) = src
    inv = {}
    for t in range(32):
        for v in range(128):
            inv.setdefault(cute(shape, stride, t, v), (t, v))
    assert len(inv) == nbits
    return inv


def _undo_ldsm_t_shuffle(dst_bytes):
    """CuTe builds dst0 = {t0.x, t0.y, t1.x, t1.y}, dst1 = {t0.z, t0.w, t1.z, t1.w} (and the same
    for t2/t3); return what the instruction itself left in tmp0…tmp3 in terms of dst bytes."""
    raw = {}
    for pair in range(len(dst_bytes) // 2):
        d0, d1 = 2 * pair, 2 * pair + 1
        raw[2 * pair] = [(d0, 0), (d0, 1), (d1, 0), (d1, 1)]
        raw[2 * pair + 1] = [(d0, 2), (d0, 3), (d1, 2), (d1, 3)]
    return raw


@pytest.mark.parametrize("num", [1, 2])
@pytest.mark.parametrize("fmt", ["b8", "b6x16_p32", "b4x16_p64"])
def test_ldmatrix_m16n16_trans_matches_cute(num, fmt):
    ty = ".b8" if fmt == "b8" else f".b8x16.{fmt}"
    ins = ptx.parse(f"ldmatrix.sync.aligned.m16n16.x{num}.trans.shared{ty}", "sm_100a")
    src, (dshape, dstride) = LDSM_T[num]
    inv = _row_of_bit(src, 2048 * num)
    T = layouts.row_table(ins)
    nregs = 2 * num
    raw = _undo_ldsm_t_shuffle(range(nregs))
    for t in range(32):
        for r in range(nregs):
            for b in range(4):
                dreg, dbyte = raw[r][b]
                bit = cute(dshape, dstride, t, 32 * dreg + 8 * dbyte)
                row, v = inv[bit]
                assert v % 8 == 0
                assert tuple(T[t, r, b]) == (row, v // 8), (t, r, b)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("fmt", ["b6x16_p32", "b4x16_p64"])
def test_ldmatrix_m8n16_matches_cute(num, fmt):
    ins = ptx.parse(f"ldmatrix.sync.aligned.m8n16.x{num}.shared.b8x16.{fmt}", "sm_100a")
    src, (dshape, dstride) = LDSM_N_DECOMP[num]
    inv = _row_of_bit(src, 1024 * num)
    T = layouts.row_table(ins)
    for t in range(32):
        for r in range(num):
            for b in range(4):
                row, v = inv[cute(dshape, dstride, t, 32 * r + 8 * b)]
                # CuTe numbers the 128 bits of a row as 16 decompressed bytes
                assert tuple(T[t, r, b]) == (row, v // 8)


@pytest.mark.parametrize("num", [1, 2, 4])
def test_stmatrix_m16n8_matches_cute(num):
    ins = ptx.parse(f"stmatrix.sync.aligned.m16n8.x{num}.trans.shared.b8", "sm_100a")
    (sshape, sstride), dst = STSM_T[num]
    inv = _row_of_bit(dst, 1024 * num)
    T = layouts.row_table(ins)
    for t in range(32):
        for r in range(num):
            for b in range(4):
                row, v = inv[cute(sshape, sstride, t, 32 * r + 8 * b)]
                assert tuple(T[t, r, b]) == (row, v // 8)


# ---- tcgen05.ld / tcgen05.st (SM100_TMEM_LOAD_* and SM100_TMEM_STORE_* traits) -------------
# The store traits take the load's DstLayout as their SrcLayout (the registers), so one table
# checks both directions.
# name: (bits per lane of ValID, DstLayout shape, DstLayout stride); ValID is
# (bits, 16 or 32 lanes) : (1, lane); for the _16b variants the ValID splits each 32-bit
# column into its low 16 bits (shape ((16, 2·cols), lanes) : ((1, 32), lane)).
TMEM = {
    ("16x256b", 1): (256, ((4, 8), (64, 2)), ((64, 256), (1, 2048))),
    ("16x256b", 2): (512, ((4, 8), (64, 2, 2)), ((64, 512), (1, 4096, 256))),
    ("16x128b", 1): (128, ((4, 8), (32, 2)), ((32, 128), (1, 1024))),
    ("16x128b", 2): (256, ((4, 8), (32, 2, 2)), ((32, 256), (1, 2048, 128))),
    ("16x64b", 1): (64, ((2, 2, 8), 32), ((512, 32, 64), 1)),
    ("16x64b", 2): (128, ((2, 2, 8), (32, 2)), ((1024, 32, 128), (1, 64))),
    ("16x32bx2", 1): (64, ((16, 2), 32), ((64, 32), 1)),     # CuTe uses immHalfSplitoff 1
    ("16x32bx2", 2): (128, ((16, 2), 64), ((128, 64), 1)),   # … and 2 for .x2
    ("32x32b", 1): (32, (32, 32), (32, 1)),
    ("32x32b", 2): (64, (32, 64), (64, 1)),
}


@pytest.mark.parametrize("op", ["tcgen05.ld", "tcgen05.st"])
@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("shape,num", sorted(TMEM))
def test_tmem_layout_matches_cute(shape, num, pack, op):
    bits, dshape, dstride = TMEM[(shape, num)]
    # With .pack::16b each reference bit pair of 16 is the low half of one physical column.
    col_bits = 16 if pack else 32
    # CuTe places the second .16x32bx2 access right after the first one's columns.
    split = bits // 2 // col_bits if shape == "16x32bx2" else None
    n = ptx.TCGEN05_REGS_PER_X1[shape] * num
    regs = "{" + ", ".join(f"%r{i}" for i in range(n)) + "}"
    tail = f", {split}" if split is not None else ""
    if op == "tcgen05.ld":
        ins = ptx.parse(f"tcgen05.ld.sync.aligned.{shape}.x{num}{'.pack::16b' if pack else ''}.b32 "
                        f"{regs}, [%r99]{tail}", "sm_100a")
    else:
        ins = ptx.parse(f"tcgen05.st.sync.aligned.{shape}.x{num}{'.unpack::16b' if pack else ''}.b32 "
                        f"[%r99]{tail}, {regs}", "sm_100a")
    T = layouts.tmem_table(ins).astype(int)
    for t in range(32):
        for r in range(n):
            for half in ((0, 1) if pack else (0,)):
                lane, bit = divmod(cute(dshape, dstride, t, 32 * r + 16 * half), bits)
                col = bit // col_bits
                ours = T[t, r, 1] * (2 if pack else 1) + half + T[t, r, 2] * (split or 0)
                assert (T[t, r, 0], ours) == (lane, col), (t, r, half)


def test_tmem_repeats_along_columns():
    """PTX text: .num repeats the base shape; repetition k starts k base widths further on."""
    for shape, width in (("32x32b", 1), ("16x64b", 2), ("16x128b", 4), ("16x256b", 8), ("16x32bx2", 1)):
        per = ptx.TCGEN05_REGS_PER_X1[shape]
        t1 = layouts.tmem_table(ptx.parse(f"tcgen05.ld.sync.aligned.{shape}.x1.b32", "sm_100a"))
        t64 = layouts.tmem_table(ptx.parse(f"tcgen05.ld.sync.aligned.{shape}.x64.b32", "sm_100a")
                                 if per * 64 <= 128 else
                                 ptx.parse(f"tcgen05.ld.sync.aligned.{shape}.x32.b32", "sm_100a"))
        reps = t64.shape[1] // per
        for k in range(reps):
            blk = t64[:, k * per:(k + 1) * per].astype(int)
            assert (blk[..., 0] == t1[..., 0]).all() and (blk[..., 2] == t1[..., 2]).all()
            assert (blk[..., 1] == t1[..., 1] + k * width).all()


# ---- tcgen05.cp (SM100_UTCCP_* traits, tb/cute.py) -------------------------------------------

@pytest.mark.parametrize("shape,cast", sorted(UTCCP, key=str))
def test_cp_lanes_match_cute(shape, cast):
    ins = ptx.parse(f"tcgen05.cp.cta_group::1.{shape}{'.' + cast if cast else ''}", "sm_100a")
    L = layouts.cp_lane_table(ins).astype(int)
    rows, bits = ptx.CP_SHAPES[shape]
    got = utccp_lanes(shape, cast)
    assert sorted(got) == list(range(rows))
    for row, places in got.items():
        # every bit of a row lands at the same bit of a column (shift 0), in the table's lanes
        assert places == {(int(x), 0) for x in L[row]}, row
