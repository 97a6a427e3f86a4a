"""tcgen05.cp in the model: the descriptor's fields, the walk, decompression, and every refusal.

Expected values are derived independently of sim/descriptor.py, sim/layouts.py and
model.tcgen05_cp (tb/cute.py): the matrix is placed in shared memory through CUTLASS's
canonical K-major layout (the comment of make_umma_desc in include/cute/arch/mma_sm100_desc.hpp)
composed with CuTe's Swizzle<B, 4, 3> on the byte address, and each row is expected in the
lanes CUTLASS's UTCCP atoms give it; the descriptor's bit fields follow CUTLASS's
SmemDescriptor bitfield (version 1 at bits 46-47, layout type at 61-63).
"""

import cute
import numpy as np
import pytest
from tensorlsu.sim import model, ptx
from tensorlsu.sim import descriptor as D
from tensorlsu.sim.decompress import compress
from tensorlsu.sim.model import ModelError

SMEM = 228 * 1024
FORMS = [("128x256b", None), ("4x256b", None), ("128x128b", None), ("64x128b", "warpx2::02_13"),
         ("64x128b", "warpx2::01_23"), ("32x128b", "warpx4")]


def _ins(shape, cast=None, fmt=None, addr="[t]"):
    q = f"cta_group::1.{shape}" + (f".{cast}" if cast else "") + (f".b8x16.{fmt}" if fmt else "")
    return ptx.parse(f"tcgen05.cp.{q} {addr}, d;", "sm_100a")


def _place(matrix, start, lbo, sbo, code, base_offset=0):
    return cute.place(matrix, start, lbo, sbo, code, base_offset, SMEM)


def _expect(ins, matrix, taddr, before):
    return cute.landed(ins.shape, ins.multicast, matrix, taddr, before)


@pytest.mark.parametrize("shape,cast", FORMS)
@pytest.mark.parametrize("code", [0, 6, 4, 2])
def test_copy_matches_the_canonical_layout(shape, cast, code):
    rng = np.random.default_rng(hash((shape, cast, code)) % 2**32)
    rows, bits = ptx.CP_SHAPES[shape]
    matrix = rng.integers(0, 256, (rows, bits // 8), dtype=np.uint8)
    # start on its swizzle pattern (1024 bytes for 128-byte rows), SBO past one group, LBO apart
    start, sbo, lbo = 4096 + 1024 * int(rng.integers(0, 8)), 1024 * int(rng.integers(1, 4)), 512
    smem = _place(matrix, start, lbo, sbo, code)
    ins = _ins(shape, cast)
    before = rng.integers(0, 1 << 32, (128, 512), dtype=np.uint32)
    taddr = 4 * int(rng.integers(0, 100))
    got = model.tcgen05_cp(ins, smem, D.encode(start, lbo, sbo, code), taddr, before)
    assert np.array_equal(got, _expect(ins, matrix, taddr, before))
    assert not np.array_equal(got, before)


@pytest.mark.parametrize("code", [6, 4, 2])
def test_base_offset_anchors_the_pattern_at_the_matrix(code):
    """A matrix starting k 128-byte rows into its swizzle pattern, with base offset k, reads
    as the pattern anchored at its start (docs/tcgen05-cp.md: assumed)."""
    rng = np.random.default_rng(code)
    matrix = rng.integers(0, 256, (128, 32), dtype=np.uint8)
    k = 3
    start = 8192 + 128 * k
    smem = _place(matrix, start, 0, 1024, code, base_offset=k)
    ins = _ins("128x256b")
    got = model.tcgen05_cp(ins, smem, D.encode(start, 0, 1024, code, base_offset=k), 0)
    assert np.array_equal(got, _expect(ins, matrix, 0, np.zeros((128, 512), np.uint32)))


def test_worked_example_rows_are_contiguous():
    """128x128b, no swizzle, start 0, SBO 128: row r is the 16 bytes at 16 r, in lane r."""
    smem = np.arange(SMEM, dtype=np.int64).astype(np.uint8)
    got = model.tcgen05_cp(_ins("128x128b"), smem, D.encode(0, 0, 128), 0)
    for r in (0, 1, 7, 8, 127):
        assert list(got[r, :4].view(np.uint8)) == [(16 * r + j) % 256 for j in range(16)]
    assert not got[:, 4:].any()
    # with the 128-byte swizzle, row 1's first chunk is read from 128 ^ 16 = 144
    sw = model.tcgen05_cp(_ins("128x256b"), smem, D.encode(0, 0, 1024, 2), 0)
    assert list(sw[1, :4].view(np.uint8)) == [(144 + j) % 256 for j in range(16)]


@pytest.mark.parametrize("fmt", ["b4x16_p64", "b6x16_p32"])
@pytest.mark.parametrize("shape,cast", [("128x256b", None), ("32x128b", "warpx4")])
def test_decompression_widens_every_chunk(shape, cast, fmt):
    rng = np.random.default_rng(7)
    rows, bits = ptx.CP_SHAPES[shape]
    width = 4 if fmt == "b4x16_p64" else 6
    elems = rng.integers(0, 1 << width, (rows, bits // 8), dtype=np.uint8)
    packed = compress(elems.reshape(rows, -1, 16), fmt).reshape(rows, -1)
    packed[:, 8 if width == 4 else 12::16] = 0xA5       # padding the copy must not read
    smem = _place(packed, 2048, 256, 1024, 0)
    ins = _ins(shape, cast, fmt)
    got = model.tcgen05_cp(ins, smem, D.encode(2048, 256, 1024, 0), 8)
    assert np.array_equal(got, _expect(ins, elems, 8, np.zeros((128, 512), np.uint32)))


def test_descriptor_fields_round_trip():
    d = D.encode(0x1230, lbo=0x40, sbo=0x400, swizzle=4, base_offset=5)
    assert d >> 46 & 0b11 == 1 and d >> 61 == 4 and d >> 49 & 7 == 5      # CUTLASS's bitfield
    f = D.decode(d)
    assert (f.start, f.lbo, f.sbo, f.swizzle, f.base_offset, f.swizzle_bytes, f.swizzle_bits) == \
        (0x1230, 0x40, 0x400, 4, 5, 64, 2)


GOOD = D.encode(0, 0, 1024)


@pytest.mark.parametrize("desc,message", [
    (GOOD | 1 << 14, "reserved bits 14-15"),
    (GOOD | 1 << 31, "reserved bits 30-31"),
    (GOOD & ~(1 << 46), "fixed bits 46-48 are 0b000"),
    (GOOD | 1 << 48, "fixed bits 46-48 are 0b101"),
    (GOOD | 1 << 52, "byte-address mode"),
    (GOOD | 1 << 57, "fixed bits 53-60"),
    (GOOD | 1 << 61, "swizzle code 1"),
    (GOOD | 3 << 61, "swizzle code 3 is invalid"),
    (GOOD | 5 << 61, "swizzle code 5 is invalid"),
    (GOOD | 7 << 61, "swizzle code 7 is invalid"),
    (D.encode(48, 0, 1024, 6), "16 bytes into a 32-byte swizzle row"),
    (D.encode(112, 0, 1024, 2), "112 bytes into a 128-byte swizzle row"),
    (D.encode(SMEM - 1024, 0, 1024), "reaches past the 233472 bytes of shared memory"),
])
def test_descriptor_refusals(desc, message):
    with pytest.raises(ModelError) as e:
        model.tcgen05_cp(_ins("128x256b"), np.zeros(SMEM, np.uint8), desc, 0)
    assert message in str(e.value)


@pytest.mark.parametrize("shape,cast,taddr,cols,message", [
    ("128x256b", None, 2, 512, "column 2 is not a multiple of 4"),
    ("128x256b", None, 28, 32, "columns 28..35 reach beyond column 31"),
    ("128x256b", None, 1 << 16, 512, "lanes 1..128 reach beyond lane 127"),
    ("4x256b", None, 32 << 16, 512, "lanes 32..128 reach beyond lane 127"),
    ("32x128b", "warpx4", 1 << 16, 512, "lanes 1..128"),
    ("64x128b", "warpx2::01_23", 1 << 16, 512, "lanes 1..128"),
])
def test_tensor_memory_refusals(shape, cast, taddr, cols, message):
    before = np.full((128, cols), 7, np.uint32)
    with pytest.raises(ModelError) as e:
        model.tcgen05_cp(_ins(shape, cast), np.zeros(SMEM, np.uint8), GOOD, taddr, before, cols=cols)
    assert message in str(e.value)
    assert (before == 7).all()


def test_lane_offsets_that_stay_inside_are_taken():
    smem = np.arange(SMEM, dtype=np.int64).astype(np.uint8)
    got = model.tcgen05_cp(_ins("4x256b"), smem, D.encode(0, 0, 0), 31 << 16 | 8)
    assert [int(x) for x in np.flatnonzero(got.any(axis=1))] == [31, 63, 95, 127]


def test_immediate_operands_and_offset():
    smem = np.arange(SMEM, dtype=np.int64).astype(np.uint8)
    ins = _ins("128x128b", addr="[t+16]")
    a = model.tcgen05_cp(ins, smem, GOOD, 0)
    b = model.tcgen05_cp(_ins("128x128b"), smem, GOOD, 16)
    assert np.array_equal(a, b)
    # the offset wraps the 32-bit address
    assert np.array_equal(model.tcgen05_cp(ins, smem, GOOD, (1 << 32) - 16 + 8), model.tcgen05_cp(
        _ins("128x128b"), smem, GOOD, 8))
    imm = ptx.parse(f"tcgen05.cp.cta_group::1.128x128b [32], {GOOD};", "sm_100a")
    assert np.array_equal(model.tcgen05_cp(imm, smem, None, None),
                          model.tcgen05_cp(_ins("128x128b"), smem, GOOD, 32))
    with pytest.raises(ModelError, match="differs from the text's immediate"):
        model.tcgen05_cp(imm, smem, GOOD | 1 << 14, None)
    with pytest.raises(ModelError, match="the descriptor is needed"):
        model.tcgen05_cp(_ins("128x128b"), smem, None, 0)


def _scale_tile_descriptor(addr, lbo, sbo):
    """A shared-memory descriptor packed as a second public code base packs it for its block
    scale copies (ThunderKittens, include/types/shared/descriptor.cuh: 14-bit fields of
    byte offsets over 16, bit 46 set, no swizzle), written here from that packing, not with
    sim/descriptor.py."""
    field = lambda x: (x >> 4) & 0x3FFF
    return field(addr) | 1 << 46 | field(lbo) << 16 | field(sbo) << 32


def test_block_scale_tiles_as_a_second_code_base_copies_them():
    """ThunderKittens fills a 128-lane x 16-byte block-scale tile of Tensor Memory from a
    row-major 32 x 16-byte shared tile with tcgen05.cp.32x128b.warpx4 and LBO = SBO = 128
    (load_mxnv_scale_async, include/ops/thread/memory/tile/shared_to_tensor.cuh), and the four scale tiles of a stage 4 columns apart; it relies on
    row r of the shared tile reaching lane r of every lane quadrant."""
    rng = np.random.default_rng(5)
    smem = np.zeros(SMEM, np.uint8)
    tiles = rng.integers(0, 256, (4, 32, 16), dtype=np.uint8)
    for j, tile in enumerate(tiles):
        smem[2048 + 512 * j:2048 + 512 * (j + 1)] = tile.reshape(-1)
    ins = _ins("32x128b", "warpx4")
    tm = np.zeros((128, 512), np.uint32)
    base = 64
    for j in range(4):
        tm = model.tcgen05_cp(ins, smem, _scale_tile_descriptor(2048 + 512 * j, 128, 128),
                              base + 4 * j, tm)
    got = tm[:, base:base + 16].copy().view(np.uint8).reshape(128, 4, 16)
    for q in range(4):
        for j in range(4):
            assert np.array_equal(got[32 * q:32 * (q + 1), j], tiles[j])
    assert not tm[:, :base].any() and not tm[:, base + 16:].any()
