"""Pictures of fragment layouts and bank schedules, drawn from the layout tables the model and
the RTL are generated from (:mod:`tensorlsu.sim.layouts`).

``layout(ins)`` gives the grid of one instruction form: per cell of the matrix (ldmatrix,
stmatrix, wmma.load) or of Tensor Memory (tcgen05.ld / tcgen05.st: lanes × columns), which
thread and register hold it. ``copy(ins, desc)`` gives, for a tcgen05.cp and its descriptor,
which shared-memory bytes land in each Tensor Memory lane and column (the swizzle made
visible: a cell names its 4 bytes' address, coloured by the matrix row). ``schedule(ins, addr, policy)`` gives, for an ldmatrix / stmatrix
and its row addresses, which rows each bank quad serves in each cycle. ``svg`` / ``png`` render
either; ``tensorlsu draw`` is the command line.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from html import escape

from . import descriptor, layouts, model
from .ptx import WMMA_BITS, Instr

__all__ = ["Grid", "layout", "schedule", "copy", "svg", "png", "save"]


@dataclass
class Grid:
    """A picture: ``cells[(row, col)]`` is a list of (label, thread or None) holders."""

    title: str
    rows: int
    cols: int
    row_label: str
    col_label: str
    cells: dict
    col_names: list | None = None


def _hold(cells, key, label, thread):
    cells.setdefault(key, []).append((label, thread))


def layout(ins: Instr) -> Grid:
    """Who holds each element (or Tensor Memory cell) of the form ``ins``."""
    cells: dict = {}
    if ins.op in ("ldmatrix", "stmatrix"):
        T = layouts.row_table(ins)
        ebytes = 2 if ins.type == "b16" else 1
        rows = layouts.row_count(ins)
        for t in range(T.shape[0]):
            for r in range(T.shape[1]):
                for b in range(0, 4, ebytes):
                    row, byte = (int(x) for x in T[t, r, b])
                    part = ("lo", "hi")[b // 2] if ebytes == 2 else f"b{b}"
                    _hold(cells, (row, byte // ebytes), f"T{t}:R{r}.{part}", t)
        return Grid(ins.form, rows, 16 // ebytes, "row (16 bytes each)", "element", cells)
    if ins.op == "wmma.load":
        T = layouts.wmma_table(ins)
        bits = WMMA_BITS[ins.type]
        per_reg = 1 if ins.type == "f64" else 32 // bits
        for t in range(T.shape[0]):
            for s in range(T.shape[1]):
                i, j = (int(x) for x in T[t, s])
                _hold(cells, (i, j), f"T{t}:R{s // per_reg}" + (f".{s % per_reg}" if per_reg > 1 else ""), t)
        rows, cols = layouts.wmma_dims(ins.frag, ins.shape)
        return Grid(ins.form, rows, cols, "row", "column", cells)
    if ins.op in ("tcgen05.ld", "tcgen05.st"):
        T = layouts.tmem_table(ins)
        width = max(int(T[:, :, 1].max()) + 1, 1) * (2 if ins.pack else 1)
        halves = 2 if ins.shape == "16x32bx2" else 1
        for t in range(T.shape[0]):
            for r in range(T.shape[1]):
                lane, col, half = (int(x) for x in T[t, r])
                for p in ((0, 1) if ins.pack else (None,)):
                    c = col if p is None else 2 * col + p
                    suffix = "" if p is None else ("lo" if p == 0 else "hi")
                    _hold(cells, (lane, c + half * width), f"T{t}:R{r}{'.' + suffix if suffix else ''}", t)
        names = [f"{c}" for c in range(width)] + ([f"s+{c}" for c in range(width)] if halves == 2 else [])
        lanes = 32 if ins.shape == "32x32b" else 16
        return Grid(ins.form, lanes, width * halves, "lane (from taddr's)", "column (from taddr's; s: the split)",
                    cells, names)
    raise ValueError(f"draw: no layout for {ins.op}")


def copy(ins: Instr, desc: int) -> Grid:
    """Where a tcgen05.cp puts shared memory: per Tensor Memory lane (from taddr's) and column
    (from taddr's column), the matrix row and the address of the 4 bytes it holds (with a
    source format, the 16-byte chunk's address and which 4 of its 16 elements)."""
    if ins.op != "tcgen05.cp":
        raise ValueError(f"draw: copies are drawn for tcgen05.cp, not {ins.op}")
    fields = descriptor.decode(desc)
    chunks = descriptor.chunk_addresses(ins, fields)
    lanes = layouts.cp_lane_table(ins)
    per_chunk = descriptor.CHUNK // 4          # columns a chunk fills
    cells: dict = {}
    for r in range(chunks.shape[0]):
        for c in range(chunks.shape[1]):
            for w in range(per_chunk):
                a = int(chunks[r, c])
                label = (f"r{r} 0x{a:x}[{4 * w}:{4 * w + 4}]" if ins.src_fmt else f"r{r} 0x{a + 4 * w:x}")
                for lane in lanes[r]:
                    _hold(cells, (int(lane), c * per_chunk + w), label, r)
    swz = f"swizzle {fields.swizzle_bytes} B" if fields.swizzle else "no swizzle"
    title = (f"{ins.form}: start 0x{fields.start:x}, LBO {fields.lbo}, SBO {fields.sbo}, {swz}"
             + (f", base offset {fields.base_offset}" if fields.base_offset else ""))
    return Grid(title, int(lanes.max()) + 1, chunks.shape[1] * per_chunk, "lane (from taddr's)",
                "column (from taddr's)", cells)


def schedule(ins: Instr, addr, policy: str = "h200") -> Grid:
    """Which rows each of the 8 bank quads serves in each cycle, for an ldmatrix / stmatrix and
    its row addresses: ``h200`` per matrix (its rows in one quad one after another), ``packed``
    matrices mixed (one address a quad a cycle, 8 rows a cycle, the quads with the most rows
    left first). Under ``h200`` the cycles are ``model.wavefronts``'s; under ``packed`` they
    reach its bound when the rows are distinct (repeated rows can need more: the title says so).
    """
    if ins.op not in ("ldmatrix", "stmatrix"):
        raise ValueError(f"draw: bank schedules are drawn for ldmatrix and stmatrix, not {ins.op}")
    reqs = model.plan(ins, addr)
    quads = (32 * 4) // layouts.ROW_BYTES
    cells: dict = {}
    if policy == "h200":
        start = 0
        groups: dict = {}
        for k, r in enumerate(reqs):
            groups.setdefault((r.matrix, r.row // 8), []).append((k, r))
        for _, members in sorted(groups.items()):
            order: dict = {}
            for k, r in members:
                q = (r.addr // layouts.ROW_BYTES) % quads
                seen = order.setdefault(q, [])
                if r.addr not in seen:
                    seen.append(r.addr)
                _hold(cells, (start + seen.index(r.addr), q), f"T{k}:0x{r.addr:x}", k)
            start += max(len(v) for v in order.values())
        cycles = start
    elif policy == "packed":
        # each cycle: the quads with the most rows still to serve first, one address a quad,
        # at most 8 rows (128 bytes) in all
        left: dict = {}
        for k, r in enumerate(reqs):
            left.setdefault((r.addr // layouts.ROW_BYTES) % quads, {}).setdefault(r.addr, []).append(k)
        cycle = 0
        while left:
            room = quads
            for q in sorted(left, key=lambda q: (-len(left[q]), -sum(map(len, left[q].values())), q)):
                if not room:
                    break
                a = max(left[q], key=lambda a: len(left[q][a]))
                served, rest = left[q][a][:room], left[q][a][room:]
                for k in served:
                    _hold(cells, (cycle, q), f"T{k}:0x{a:x}", k)
                room -= len(served)
                if rest:
                    left[q][a] = rest
                else:
                    del left[q][a]
                    if not left[q]:
                        del left[q]
            cycle += 1
        cycles = cycle
    else:
        raise ValueError(f"unknown policy {policy!r} (expected h200 or packed)")
    bound = model.wavefronts(ins, addr, policy)
    note = "" if cycles == bound else f"; the model's bound: {bound}"
    return Grid(f"{ins.form}: bank quads, {policy} ({cycles} cycles{note})", cycles, quads, "cycle",
                "bank quad (banks 4q … 4q+3)", cells)


def _colour(thread) -> str:
    if thread is None:
        return "#eeeeee"
    r, g, b = colorsys.hls_to_rgb((thread * 0.618034) % 1.0, 0.82, 0.55)
    return f"#{int(255 * r):02x}{int(255 * g):02x}{int(255 * b):02x}"


def svg(grid: Grid) -> str:
    """The grid as SVG: a cell per element, its holders' labels, coloured by the first one's
    thread."""
    cw, ch, left, top = 64, 26, 56, 46
    lines = max((len(v) for v in grid.cells.values()), default=1)
    ch = max(ch, 11 * min(lines, 4) + 6)
    width, height = left + cw * grid.cols + 10, top + ch * grid.rows + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="9">',
           f'<text x="4" y="14" font-size="12">{escape(grid.title)}</text>',
           f'<text x="4" y="30">{escape(grid.row_label)} ↓ · {escape(grid.col_label)} →</text>']
    for c in range(grid.cols):
        name = grid.col_names[c] if grid.col_names else str(c)
        out.append(f'<text x="{left + cw * c + 2}" y="{top - 4}">{escape(name)}</text>')
    for r in range(grid.rows):
        out.append(f'<text x="4" y="{top + ch * r + 14}">{r}</text>')
        for c in range(grid.cols):
            holders = grid.cells.get((r, c), [])
            x, y = left + cw * c, top + ch * r
            fill = _colour(holders[0][1]) if holders else "#ffffff"
            out.append(f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="{fill}" stroke="#888"/>')
            shown = holders[:3] + ([(f"+{len(holders) - 3}", None)] if len(holders) > 3 else [])
            for k, (label, _) in enumerate(shown):
                out.append(f'<text x="{x + 2}" y="{y + 10 + 11 * k}" class="cell" data-row="{r}" '
                           f'data-col="{c}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def png(grid: Grid, path) -> None:
    """The grid as a PNG (matplotlib)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    fig, ax = plt.subplots(figsize=(max(4, 0.9 * grid.cols + 1), max(3, 0.4 * grid.rows + 1)))
    for r in range(grid.rows):
        for c in range(grid.cols):
            holders = grid.cells.get((r, c), [])
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=_colour(holders[0][1]) if holders else "white",
                                   edgecolor="#888", linewidth=0.5))
            text = "\n".join(lb for lb, _ in holders[:3]) + (f"\n+{len(holders) - 3}" if len(holders) > 3 else "")
            ax.text(c + 0.05, r + 0.5, text, fontsize=5, va="center", family="monospace")
    ax.set_xlim(0, grid.cols)
    ax.set_ylim(grid.rows, 0)
    ax.set_xticks([c + 0.5 for c in range(grid.cols)])
    ax.set_xticklabels([str(x) for x in grid.col_names or range(grid.cols)], fontsize=6)
    ax.set_yticks([r + 0.5 for r in range(grid.rows)])
    ax.set_yticklabels([str(r) for r in range(grid.rows)], fontsize=6)
    ax.set_xlabel(grid.col_label)
    ax.set_ylabel(grid.row_label)
    ax.set_title(grid.title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def save(grid: Grid, path: str) -> None:
    """Write ``grid`` to ``path``: SVG or PNG by its extension."""
    if path.endswith(".svg"):
        with open(path, "w") as f:
            f.write(svg(grid))
    elif path.endswith(".png"):
        png(grid, path)
    else:
        raise ValueError(f"draw: {path!r}: the picture must be a .svg or a .png")
