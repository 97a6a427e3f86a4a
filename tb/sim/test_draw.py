"""``tensorlsu draw``: layout pictures carry the holders the PTX text and the measured facts
give, and bank schedules take the model's cycles."""

import random
import re

import pytest
from tensorlsu.cosim import cli
from tensorlsu.sim import descriptor, draw, model, ptx


def _svg_cells(text):
    """(row, col) → labels, read back from the SVG."""
    out = {}
    for r, c, label in re.findall(r'data-row="(\d+)" data-col="(\d+)">([^<]*)<', text):
        out.setdefault((int(r), int(c)), []).append(label)
    return out


def test_ldmatrix_x1_as_the_ptx_figure():
    """PTX's ldmatrix figure: thread t holds elements 2(t mod 4) and 2(t mod 4)+1 of row ⌊t/4⌋."""
    ins = ptx.parse("ldmatrix.sync.aligned.m8n8.x1.shared.b16")
    cells = _svg_cells(draw.svg(draw.layout(ins)))
    want = {}
    for t in range(32):
        want[(t // 4, 2 * (t % 4))] = [f"T{t}:R0.lo"]
        want[(t // 4, 2 * (t % 4) + 1)] = [f"T{t}:R0.hi"]
    assert cells == want


def test_wmma_a_row_f16_as_measured():
    """docs/facts.md (measured on the H200): thread t of the m16n16k16 .f16 A fragment holds
    (g, 2c), (g, 2c+1), (g+8, 2c), (g+8, 2c+1), (g, 2c+8), (g, 2c+9), (g+8, 2c+8), (g+8, 2c+9) in
    registers 0-3 (two halves each), and registers 4-7 repeat them: each element held twice,
    by one thread."""
    ins = ptx.parse("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16")
    grid = draw.layout(ins)
    assert (grid.rows, grid.cols) == (16, 16)
    for t in range(32):
        g, c = divmod(t, 4)
        pairs = [(g, 2 * c), (g, 2 * c + 1), (g + 8, 2 * c), (g + 8, 2 * c + 1),
                 (g, 2 * c + 8), (g, 2 * c + 9), (g + 8, 2 * c + 8), (g + 8, 2 * c + 9)]
        for k, cell in enumerate(pairs):
            labels = [lb for lb, th in grid.cells[cell] if th == t]
            assert f"T{t}:R{k // 2}.{k % 2}" in labels and f"T{t}:R{k // 2 + 4}.{k % 2}" in labels
    assert len(grid.cells) == 256 and all(len(v) == 2 for v in grid.cells.values())


def test_tcgen05_as_the_ptx_text():
    """32x32b: thread t reads lane t, register r column r; 16x32bx2: threads 16-31 at the split
    (drawn after the first half's columns)."""
    grid = draw.layout(ptx.parse("tcgen05.ld.sync.aligned.32x32b.x4.b32"))
    assert grid.cells == {(t, r): [(f"T{t}:R{r}", t)] for t in range(32) for r in range(4)}
    grid = draw.layout(ptx.parse("tcgen05.ld.sync.aligned.16x32bx2.x2.b32"))
    assert grid.cols == 4 and grid.col_names == ["0", "1", "s+0", "s+1"]
    assert grid.cells[(3, 1)] == [("T3:R1", 3)] and grid.cells[(3, 3)] == [("T19:R1", 19)]
    packed = draw.layout(ptx.parse("tcgen05.ld.sync.aligned.32x32b.x1.pack::16b.b32"))
    assert packed.cells[(5, 0)] == [("T5:R0.lo", 5)] and packed.cells[(5, 1)] == [("T5:R0.hi", 5)]


@pytest.mark.parametrize("form", [
    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
    "ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8",
    "stmatrix.sync.aligned.m16n8.x4.trans.shared.b8",
    "wmma.load.b.sync.aligned.col.m8n32k16.shared.s8",
    "wmma.load.c.sync.aligned.row.m16n16k16.shared.f32",
    "tcgen05.st.sync.aligned.16x256b.x2.unpack::16b.b32",
])
def test_every_register_piece_drawn_once(form):
    ins = ptx.parse(form)
    grid = draw.layout(ins)
    labels = [lb for v in grid.cells.values() for lb, _ in v]
    assert len(labels) == len(set(labels))
    assert all(0 <= r < grid.rows and 0 <= c < grid.cols for r, c in grid.cells)
    if ins.op == "ldmatrix":
        assert len(labels) == 32 * ins.nregs * (2 if ins.type == "b16" else 4)


@pytest.mark.parametrize("policy", ["h200", "packed"])
def test_schedules_take_the_models_cycles(policy):
    rng = random.Random(5)
    for _ in range(60):
        num = rng.choice((1, 2, 4))
        ins = ptx.parse(f"ldmatrix.sync.aligned.m8n8.x{num}.shared.b16")
        addr = [16 * rng.randrange(rng.choice((8, 32, 128))) for _ in range(32)]
        grid = draw.schedule(ins, addr, policy)
        bound = model.wavefronts(ins, addr, policy)
        if policy == "h200" or len(set(addr[:8 * num])) == 8 * num:
            assert grid.rows == bound, (addr, grid.rows, bound)
        else:
            assert grid.rows >= bound
        served = [lb for v in grid.cells.values() for lb, _ in v]
        assert sorted(served) == sorted(f"T{k}:0x{addr[k]:x}" for k in range(8 * num))
        for (cycle, quad), v in grid.cells.items():    # one row a quad a cycle
            assert len({lb.split(":")[1] for lb, _ in v}) == 1
            assert all((int(lb.split(":")[1], 16) // 16) % 8 == quad for lb, _ in v)


def test_cli(tmp_path, capsys):
    out = tmp_path / "x.svg"
    assert cli.main(["draw", "ldmatrix.sync.aligned.m8n8.x2.shared.b16", "--out", str(out)]) == 0
    assert "T31:R1.hi" in out.read_text()
    png = tmp_path / "s.png"
    addr = ",".join(str(16 * t) for t in range(32))
    assert cli.main(["draw", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "--addr", addr, "--policy",
                     "packed", "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["draw", "ldmatrix.sync.aligned.m8n8.x3.shared.b16"]) == 2
    assert "tensorlsu draw" in capsys.readouterr().err
    assert cli.main(["draw", "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "--out", str(tmp_path / "x.txt")]) == 2
    assert cli.main(["draw", "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "--addr", "0,8"]) == 2
    assert cli.main(["draw", "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "--addr", "0,x"]) == 2
    assert "expected comma-separated integers" in capsys.readouterr().err
    assert cli.main(["draw", "tcgen05.ld.sync.aligned.32x32b.x1.b32", "--addr", "0"]) == 2
    assert "drawn for ldmatrix and stmatrix, not tcgen05.ld" in capsys.readouterr().err


def test_copy_draws_where_shared_memory_lands(tmp_path):
    """The worked example of the tcgen05.cp summary: 128x128b, no swizzle, start 0, SBO 128:
    lane r holds the 16 bytes at 16 r; with the 128-byte swizzle, row 1's first chunk comes
    from 144; with .warpx4 the 32 rows land in every quadrant."""
    plain = draw.svg(draw.copy(ptx.parse("tcgen05.cp.cta_group::1.128x128b"), descriptor.encode(0, 0, 128)))
    cells = _svg_cells(plain)
    assert len(cells) == 128 * 4
    assert all(cells[(r, w)] == [f"r{r} 0x{16 * r + 4 * w:x}"] for r in range(128) for w in range(4))
    sw = _svg_cells(draw.svg(draw.copy(ptx.parse("tcgen05.cp.cta_group::1.128x256b"),
                                       descriptor.encode(0, 0, 1024, 2))))
    assert sw[(1, 0)] == ["r1 0x90"] and sw[(1, 4)] == ["r1 0x80"]
    cast = _svg_cells(draw.svg(draw.copy(ptx.parse("tcgen05.cp.cta_group::1.32x128b.warpx4.b8x16.b4x16_p64"),
                                         descriptor.encode(0, 0, 128))))
    assert [cast[(lane, 1)] for lane in (5, 37, 69, 101)] == [["r5 0x50[4:8]"]] * 4
    out = tmp_path / "cp.svg"
    assert cli.main(["draw", "tcgen05.cp.cta_group::1.128x128b", "--desc",
                     hex(descriptor.encode(0, 0, 128)), "--out", str(out)]) == 0
    assert _svg_cells(out.read_text()) == cells
    assert cli.main(["draw", "tcgen05.cp.cta_group::1.128x128b"]) == 2           # no descriptor
