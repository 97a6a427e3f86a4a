"""Constant tables indexed by a signal, as one wide word per row.

Many small tables indexed by the same signal (the step row of a Tensor Memory quadrant) are
kept as one table of wide rows: one multiplexer instead of one per table, which is what
keeps the quadrant's netlist (and a Verilator model of it) small.

:func:`select` picks one of a few values by index as a binary tree of two-way multiplexers.
``Array(values)[index]`` makes a decoded one-hot AND/OR network instead, which neither the
FPGA mapping (no multiplexer to cover) nor the solvers handle well.
"""

from __future__ import annotations

from amaranth import Cat, Const, Mux, Signal, Value, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory

__all__ = ["LOGIC_ROM", "rom", "rom_hot", "hot_any", "table", "select", "candidates", "selects", "selects_ahead"]


def rom(m, index, fields: dict, name: str):
    """``fields``: name → (shape, list of values, one per row). Returns a view of a signal
    whose fields hold row ``index`` of every table (rows past the end read the last), read
    from one :func:`table`."""
    layout = data.StructLayout({k: shape for k, (shape, _) in fields.items()})
    rows = len(next(iter(fields.values()))[1])
    assert all(len(v) == rows for _, v in fields.values()), "tables of different lengths"
    index = Value.cast(index)
    if rows > 1 << len(index):
        raise ValueError(f"{rows} rows do not fit an index of {len(index)} bits")
    values = [{k: v[min(r, rows - 1)] for k, (_, v) in fields.items()} for r in range(1 << len(index))]
    return table(m, index, layout, dict(enumerate(values)), name, attrs=LOGIC_ROM)


#: The attributes that keep a table logic in synthesis: a table whose row is registered (the
#: gather's selects) is otherwise taken into FPGA block RAM with the register, and a block
#: RAM's clock-to-output is several times a flip-flop's.
LOGIC_ROM = {"rom_style": "logic"}


def table(m, index, layout, rows: dict, name: str, attrs: dict | None = None):
    """A view of ``layout`` holding row ``index`` of a constant table: ``rows`` maps an index
    to its row (what ``layout.const`` takes: a dict of fields, a list for an array); every
    other index of ``index``'s range reads all zero. The table is a memory read
    asynchronously, so it stays one array in the emitted Verilog: a simulator reads one word a
    cycle where a case statement of every field (one multiplexer tree per field, its
    comparisons repeated) is evaluated whole every cycle. A synthesis tool makes of it what it
    would make of the case statement (a ROM of constants): logic, or with ``attrs``
    :data:`LOGIC_ROM` nothing but logic."""
    layout = data.StructLayout(layout) if isinstance(layout, dict) else layout
    depth = 1 << len(index)
    assert all(0 <= k < depth for k in rows), "a row outside the index's range"
    init = [layout.const(rows[k]).as_value().value if k in rows else 0 for k in range(depth)]
    mem = m.submodules[f"{name}_table"] = Memory(shape=unsigned(layout.size), depth=depth, init=init,
                                                 attrs=attrs)
    port = mem.read_port(domain="comb")
    out = Signal(layout, name=name)
    m.d.comb += [port.addr.eq(index), out.as_value().eq(port.data)]
    return out


def select(values, index):
    """``values[index]`` as a tree of ``Mux`` on the bits of ``index`` (an index past the end
    gives one of the values: callers mask it)."""
    values = list(values)
    bit = 0
    while len(values) > 1:
        values = [Mux(index[bit], values[k + 1], values[k]) if k + 1 < len(values) else values[k]
                  for k in range(0, len(values), 2)]
        bit += 1
    return values[0]


def candidates(moves):
    """From ``(row, target, source)`` triples: per target, its distinct sources in order of
    appearance, and per target and row the index of the source it takes there."""
    cands, table = {}, {}
    for row, target, src in moves:
        lst = cands.setdefault(target, [])
        if src not in lst:
            lst.append(src)
        table.setdefault(target, {})[row] = lst.index(src)
    return cands, table


def _select_columns(cands, table, rows: int):
    """The distinct columns of selects (one per group of targets that share it), by field."""
    columns: dict[tuple, tuple[str, int]] = {}
    column_of: dict = {}
    for target in sorted(cands):
        n = len(cands[target])
        col = tuple(table[target].get(r, n) for r in range(rows))
        columns.setdefault(col, (f"sel{len(columns)}", n))
        column_of[target] = col
    return columns, column_of


def rom_hot(m, hot, fields: dict, name: str):
    """:func:`rom` indexed by a one-hot ``hot`` (bit ``i`` high: row ``i``; none high: all
    zero): each bit of the row is the OR of the ``hot`` bits of the rows that set it. No index
    is decoded, so a bit lies a balanced OR tree behind the register that holds ``hot``."""
    layout = data.StructLayout({k: shape for k, (shape, _) in fields.items()})
    rows = len(next(iter(fields.values()))[1])
    assert all(len(v) == rows for _, v in fields.values()), "tables of different lengths"
    assert len(hot) == rows, "one bit of the index a row"
    words = [layout.const({k: v[r] for k, (_, v) in fields.items()}).as_value().value for r in range(rows)]
    out = Signal(layout, name=name)
    m.d.comb += out.as_value().eq(Cat(*[hot_any(hot, [r for r in range(rows) if words[r] >> b & 1])
                                        for b in range(layout.size)]))
    return out


def hot_any(hot, rows):
    """Whether any of bits ``rows`` of ``hot`` is high, as the OR of ``hot`` masked by a
    constant: the same OR tree in synthesis, one AND and one compare in a simulator, where the
    bits gathered one by one (``Cat(...).any()``) cost a shift and a mask each."""
    mask = sum(1 << r for r in set(rows))
    return (hot & Const(mask, len(hot))).any() if mask else Const(0, 1)


def selects_ahead(m, cands, table, rows: int, name: str, loads) -> dict:
    """:func:`selects`, registered and read a cycle ahead: ``loads`` is a list of
    ``(strobe, hot, order)`` in priority order; at an edge where ``strobe`` is high the
    selects of row ``order[i]`` are loaded, ``i`` the high bit of the one-hot ``hot``. So the
    selects are flip-flops, and in the cycle before them lies an OR tree a bit
    (:func:`rom_hot`), no decoded index."""
    columns, column_of = _select_columns(cands, table, rows)
    looked = []
    for k, (strobe, hot, order) in enumerate(loads):
        looked.append((strobe, rom_hot(m, hot, {field: (range(n + 1), [col[r] for r in order])
                                                for col, (field, n) in columns.items()}, f"{name}_{k}")))
    held = Signal.like(looked[0][1], name=f"{name}_held")
    for k, (strobe, sels) in enumerate(looked):
        with (m.If if k == 0 else m.Elif)(strobe):
            m.d.sync += held.eq(sels)
    return {target: held[columns[col][0]] for target, col in column_of.items()}


def selects(m, index, cands, table, rows: int, name: str = "selects", load=None) -> dict:
    """Per target of :func:`candidates`, a select signal: the index of its source in row
    ``index``, or the number of its sources where the row has none. Targets with the same
    column of selects share one, and all are fields of one ROM. With ``load``, the selects are
    registered: row ``index`` is read at the edges where ``load`` is high."""
    columns, column_of = _select_columns(cands, table, rows)
    sels = rom(m, index, {field: (range(n + 1), list(col)) for col, (field, n) in columns.items()}, name)
    if load is not None:
        held = Signal.like(sels, name=f"{name}_held")
        with m.If(load):
            m.d.sync += held.eq(sels)
        sels = held
    return {target: sels[columns[col][0]] for target, col in column_of.items()}
