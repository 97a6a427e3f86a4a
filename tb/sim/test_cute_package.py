"""tensorlsu.sim.cute against the tests' own CuTe evaluation (tb/cute.py): layouts and swizzles
evaluated both ways, ldmatrix row addresses of a swizzled tile, tcgen05.cp descriptors of the
canonical layouts, and every fragment table exported as a thread-value layout and evaluated back."""

import cute as oracle
import numpy as np
import pytest
from tensorlsu.sim import cute, descriptor, layouts, ptx

FORMS = ["ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
         "ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8", "ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.b6x16_p32",
         "stmatrix.sync.aligned.m8n8.x2.shared.b16", "stmatrix.sync.aligned.m16n8.x4.trans.shared.b8",
         "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16", "wmma.load.b.sync.aligned.col.m8n32k16.shared.s8",
         "wmma.load.c.sync.aligned.col.m32n8k16.shared.f32", "wmma.load.a.sync.aligned.row.m8n8k4.shared.f64",
         "tcgen05.ld.sync.aligned.32x32b.x8.b32", "tcgen05.ld.sync.aligned.16x256b.x2.pack::16b.b32",
         "tcgen05.ld.sync.aligned.16x32bx2.x4.b32", "tcgen05.st.sync.aligned.16x128b.x2.b32"]


def test_layouts_evaluate_as_cute_does():
    rng = np.random.default_rng(1)
    for shape, stride in [((8, 64), (64, 1)), (((2, 4), (8, 8)), ((4, 64), (1, 8))), ((32, (4, 2)), (4, (128, 1)))]:
        L = cute.Layout(shape, stride)
        for _ in range(50):
            coord = tuple(int(rng.integers(0, oracle.size(s))) for s in shape)
            assert L(*coord) == oracle.cute(shape, stride, *coord)
        assert L.size() == oracle.size(shape)


@pytest.mark.parametrize("b", [1, 2, 3])
def test_swizzle_is_cutes(b):
    sw = cute.Swizzle(b, 4, 3)
    assert [sw(a) for a in range(4096)] == [oracle.swizzle(a, b) for a in range(4096)]


def test_row_addresses_of_a_swizzled_tile():
    """A 64 x 64 half tile, Swizzle<3,3,3> on element offsets (Swizzle<3,4,3> on bytes), rows
    of 128 bytes: the A fragment's four 8x8 matrices at (0,0), (8,0), (0,8), (8,8)."""
    tile = cute.ComposedLayout(cute.Swizzle(3, 3, 3), cute.Layout((64, 64), (64, 1)))
    got = cute.row_addresses("ldmatrix.sync.aligned.m8n8.x4.shared.b16", tile, base=4096)
    origins = [(0, 0), (8, 0), (0, 8), (8, 8)]
    want = [4096 + oracle.swizzle(2 * ((origins[t // 8][0] + t % 8) * 64 + origins[t // 8][1]), 3) for t in range(32)]
    assert got == want
    x1 = cute.row_addresses("ldmatrix.sync.aligned.m8n8.x1.shared.b16", tile)
    assert x1 == [want[t % 8] - 4096 for t in range(32)]
    with pytest.raises(cute.CuteError, match="not 16 contiguous"):
        cute.row_addresses("ldmatrix.sync.aligned.m8n8.x1.shared.b16", cute.Layout((64, 64), (1, 64)))


@pytest.mark.parametrize("code", [0, 6, 4, 2])
@pytest.mark.parametrize("shape", ["128x256b", "128x128b", "64x128b.warpx2::02_13"])
def test_cp_descriptors_of_the_canonical_layouts(code, shape):
    """The canonical K-major layouts (tb/cute.CANONICAL, from CUTLASS's make_umma_desc comment)
    in bytes: ((8, m), (16, chunks)) : ((S, SBO), (1, LBO unswizzled, else 16))."""
    ins = ptx.parse(f"tcgen05.cp.cta_group::1.{shape}", "sm_100a")
    rows, bits = ptx.CP_SHAPES[ins.shape]
    b, row_units = oracle.CANONICAL[code]
    chunks = bits // 128
    s = 16 * row_units
    sbo, lbo = 8 * s * (2 if chunks == 2 and code == 0 else 1), 8 * s
    plain = cute.Layout(((8, rows // 8), (16, chunks)), ((s, sbo), (1, lbo if code == 0 else 16)))
    matrix = cute.ComposedLayout(cute.Swizzle(b, 4, 3), plain) if b else plain
    got = cute.cp_descriptor(ins, matrix, 8192)
    assert got == descriptor.encode(8192, lbo if code == 0 and chunks == 2 else 0, sbo, code)
    # a row's bytes spread down a column: no descriptor walks that
    with pytest.raises(cute.CuteError):
        cute.cp_descriptor(ins, cute.Layout((rows, 16 * chunks), (1, rows)), 8192)


@pytest.mark.parametrize("form", FORMS)
def test_fragment_tables_export_as_tv_layouts(form):
    ins = ptx.parse(form, "sm_100a")
    L, (rows, cols) = cute.tv_layout(ins)
    if ins.op in ("ldmatrix", "stmatrix"):
        T = layouts.row_table(ins).reshape(32, -1, 2)
        want = T[..., 0] + rows * T[..., 1]
    elif ins.op == "wmma.load":
        W = layouts.wmma_table(ins)
        want = W[..., 0] + rows * W[..., 1]
    else:
        M = layouts.tmem_table(ins)
        ncols = int(M[..., 1].max()) + 1
        want = M[..., 0] + rows * (M[..., 1] + ncols * M[..., 2])
    base = int(want[0, 0])
    for t in range(32):
        for v in range(want.shape[1]):
            assert oracle.cute(L.shape, L.stride, t, v) + base == int(want[t, v]), (t, v)
