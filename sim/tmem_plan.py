"""How a Tensor Memory quadrant runs each tcgen05.ld / tcgen05.st form: its schedule of column
reads or writes, generated from :func:`tensorlsu.sim.layouts.tmem_table` (never by hand).

Every register of every form touches the *same* columns in all the lanes it uses (the table's
column never depends on the lane), so a step reads or writes whole columns (one column of all
32 lanes per access). The quadrant's memory is one bank or two by column parity
(``TmemParams.banks``), each with two ports. One bank: a step is any two columns. Two banks: a
step is at most two *groups*, each two columns of one half whose offsets differ in parity (one
of them lands in each bank, whatever the parity of taddr's column and of the split) or a single
column: four accesses, two per bank; access ``2g + e`` is element ``e`` of group ``g``. A result
*beat* carries one or two whole registers; it is assembled over the steps that read its
columns.

A form repeats with a *period* of registers: register ``p·R + i`` touches the cells of register
``i`` moved ``p·C`` columns on (``R``, ``C``: :attr:`Plan.period_regs`, :attr:`Plan.period_cols`).
The plan lists the beats of one period; :func:`plan` checks that the whole form is that period
repeated.

A beat is two registers (one in a .x1 of one register). Loads pair a period's registers so
that the beats need the fewest steps (16x256b .pack pairs registers that share their columns,
in different lanes); stores pair consecutive registers, the order the store port brings them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

from . import layouts, ptx
from .ptx import TCGEN05_REGS_PER_X1, Instr

__all__ = ["PORTS", "PORTS_PER_BANK", "BANKS", "accesses", "Cell", "Step", "Beat", "Plan", "plan", "SHAPES", "NUMS", "MAX_REGS", "lanes_of",
           "cols_of", "Variant", "Schedule", "schedule", "forms"]

#: Ports of each bank of a quadrant's memory (each reads or writes one column a step).
PORTS_PER_BANK = 2
#: Banks of a quadrant's memory by default: 2, by column parity (four column accesses a step);
#: 1 is half the ports and about half the logic (TmemParams.banks).
BANKS = 2


def accesses(banks: int = BANKS) -> int:
    """Column accesses a step: with two banks, access ``2g + e`` is element ``e`` of group ``g``;
    with one, the memory's two ports."""
    return PORTS_PER_BANK * banks


#: Column accesses a step with the default banks.
PORTS = accesses(BANKS)

#: The shapes in the order of their code in the instruction port.
SHAPES = ("32x32b", "16x32bx2", "16x64b", "16x128b", "16x256b")
#: .num values, in the order of their code (log2).
NUMS = (1, 2, 4, 8, 16, 32, 64, 128)
#: Registers a thread has at most in one instruction.
MAX_REGS = 128


@dataclass(frozen=True, order=True)
class Cell:
    """One column of one lane: ``off`` columns after taddr's column (plus immHalfSplitoff when
    ``half``), in lane ``lane`` after taddr's lane."""

    off: int
    half: int
    lane: int


@dataclass(frozen=True)
class Step:
    """The (column offset, half) each access of a step serves; None: the access is idle.
    With two banks, accesses ``2g`` and ``2g + 1`` are a group: two columns of one half whose
    offsets differ in parity, or the first alone."""

    ports: tuple[tuple[int, int] | None, ...]


@dataclass(frozen=True)
class Beat:
    """Registers ``regs`` of the period (one or two) and the steps that read or write them."""

    regs: tuple[int, ...]
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Plan:
    """One form's schedule: :attr:`beats` of one period, repeated :attr:`periods` times."""

    period_regs: int
    period_cols: int
    periods: int
    beats: tuple[Beat, ...]
    #: 32 or 16: the lanes the form spans from taddr's lane.
    lanes: int
    #: Columns the form spans from taddr's column (one half of a .16x32bx2).
    cols: int
    #: ``cells[r][t][piece]``: the cell piece ``piece`` of register ``r`` of thread ``t`` comes
    #: from (``piece`` 1 only with 16-bit packing: the register's high half).
    cells: tuple


def lanes_of(shape: str) -> int:
    """Lanes a shape spans."""
    return 32 if shape == "32x32b" else 16


def cols_of(shape: str, num: int, pack: bool) -> int:
    """Columns one access of the shape spans (one half of .16x32bx2)."""
    width = {"32x32b": 1, "16x32bx2": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}[shape]
    return width * num * (2 if pack else 1)


def _instr(op: str, shape: str, num: int, pack: bool) -> Instr:
    q = "pack::16b" if op == "tcgen05.ld" else "unpack::16b"
    return ptx.parse(f"{op}.sync.aligned.{shape}.x{num}{'.' + q if pack else ''}.b32", "sm_100a")


def _reg_cells(T, r: int, pack: bool) -> tuple:
    """Per thread, the cells of register ``r``: one, or two (low half, high half) packed."""
    out: list[tuple[Cell, ...]] = []
    for t in range(T.shape[0]):
        lane, col, half = (int(x) for x in T[t, r])
        if pack:
            out.append((Cell(2 * col, half, lane), Cell(2 * col + 1, half, lane)))
        else:
            out.append((Cell(col, half, lane),))
    return tuple(out)


def _columns(cells_of_regs) -> list[tuple[int, int]]:
    return sorted({(c.off, c.half) for reg in cells_of_regs for th in reg for c in th})


def _steps(cols: list[tuple[int, int]], banks: int) -> tuple[Step, ...]:
    """The fewest steps that serve ``cols``. One bank: any two columns a step. Two banks: two
    groups a step, each one column or two columns of one half whose offsets differ in parity
    (so one lands in each bank, whatever the parity of taddr's column and of the split)."""
    out: list[Step] = []
    if banks == 1:
        for k in range(0, len(cols), PORTS_PER_BANK):
            ports = tuple(cols[k:k + PORTS_PER_BANK])
            out.append(Step(ports + (None,) * (PORTS_PER_BANK - len(ports))))
        return tuple(out)
    groups: list[tuple[tuple[int, int] | None, tuple[int, int] | None]] = []
    for half in sorted({h for _, h in cols}):
        even = [c for c in cols if c[1] == half and c[0] % 2 == 0]
        odd = [c for c in cols if c[1] == half and c[0] % 2 == 1]
        for k in range(max(len(even), len(odd))):
            pair = [x[k] for x in (even, odd) if k < len(x)]
            groups.append((pair[0], pair[1] if len(pair) == 2 else None))
    per_step = accesses(banks) // 2
    for k in range(0, len(groups), per_step):
        chunk = groups[k:k + per_step]
        chunk += [(None, None)] * (per_step - len(chunk))
        out.append(Step(tuple(c for group in chunk for c in group)))
    return tuple(out)


@lru_cache(maxsize=None)
def plan(op: str, shape: str, num: int, pack: bool, banks: int = BANKS) -> Plan:
    """The schedule of ``op`` (``tcgen05.ld`` or ``tcgen05.st``) of one shape, .num and
    packing (.red forms run as the plain load of their shape) on a memory of ``banks``."""
    ins = _instr(op, shape, num, pack)
    T = layouts.tmem_table(ins)
    per = TCGEN05_REGS_PER_X1[shape]
    cells = tuple(_reg_cells(T, r, pack) for r in range(ins.nregs))
    # one period: two registers, or the registers of one .x1 when that is more
    pr = min(ins.nregs, max(per, 2))
    pc = cols_of(shape, pr // per, pack) if pr >= per else cols_of(shape, 1, pack)
    periods = ins.nregs // pr
    for r in range(ins.nregs):
        p, i = divmod(r, pr)
        moved = tuple(tuple(Cell(c.off + p * pc, c.half, c.lane) for c in th) for th in cells[i])
        assert cells[r] == moved, (op, shape, num, pack, r)
    regs = list(range(pr))
    groups: list[tuple[int, ...]]
    if pr == 1:
        groups = [(0,)]
    elif op == "tcgen05.st":
        # registers arrive one a beat, in order: a store beat is two consecutive ones
        groups = [(r, r + 1) for r in range(0, pr, 2)]
    else:
        # pair the period's registers so that the beats need the fewest steps
        best: tuple[int, list[tuple[int, ...]]] | None = None
        for order in itertools.permutations(regs):
            pairs = sorted(tuple(sorted(order[k:k + 2])) for k in range(0, len(order), 2))
            key = (sum(len(_steps(_columns([cells[r] for r in g]), banks)) for g in pairs), pairs)
            if best is None or key < best:
                best = key
        assert best is not None
        groups = best[1]
    beats = tuple(Beat(g, _steps(_columns([cells[r] for r in g]), banks)) for g in groups)
    return Plan(pr, pc, periods, beats, lanes_of(shape), cols_of(shape, num, pack), cells)


# --------------------------------------------------------------------------------------
# Every form's plan as one table of steps (the quadrant's sequencer walks it)
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Variant:
    """One step of one class: the row of the step table the sequencer is at."""

    cls: int
    beat: int
    step: int
    ports: tuple            # (off, half) or None per port
    last_step: bool         # the beat's last step
    last_beat: bool         # the period's last beat
    regs: tuple             # the beat's registers in the period
    #: load: ((slot, thread, piece), (access, lane)) pieces this step delivers;
    #: store: ((access, lane), (slot, thread, piece)) cells this step writes.
    moves: tuple
    store: bool
    packed: bool


@dataclass(frozen=True)
class Schedule:
    """The classes (forms that share their steps: same op, shape, packing and period) and
    their steps, one :class:`Variant` per row; ``first[c]``: the first row of class ``c``."""

    keys: tuple             # (op, shape, pack, period_regs) per class
    plans: tuple            # a representative Plan per class
    first: tuple
    variants: tuple
    banks: int

    def cls_of(self, op: str, shape: str, num: int, pack: bool) -> int:
        pl = plan(op, shape, num, pack, self.banks)
        return self.keys.index((op, shape, pack, pl.period_regs))

    def forms(self):
        """(op, shape, num, pack) of every form (:func:`forms`)."""
        return forms()


def forms():
    """(op, shape, num, pack) of every form, .red ones aside (they run as the plain load)."""
    for op in ("tcgen05.ld", "tcgen05.st"):
        for shape in SHAPES:
            for pack in (False, True):
                for num in NUMS:
                    if TCGEN05_REGS_PER_X1[shape] * num <= MAX_REGS:
                        yield op, shape, num, pack


@lru_cache(maxsize=None)
def schedule(banks: int = BANKS) -> Schedule:
    """The step table of every form on a memory of ``banks``."""
    classes: dict[tuple, Plan] = {}
    for op, shape, num, pack in forms():
        pl = plan(op, shape, num, pack, banks)
        classes.setdefault((op, shape, pack, pl.period_regs), pl)
    keys = tuple(sorted(classes, key=str))
    variants: list[Variant] = []
    first: list[int] = []
    for ci, key in enumerate(keys):
        op, shape, pack, _ = key
        pl = classes[key]
        first.append(len(variants))
        for bi, beat in enumerate(pl.beats):
            for si, step in enumerate(beat.steps):
                where = {pc: p for p, pc in enumerate(step.ports) if pc is not None}
                moves: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
                for slot, r in enumerate(beat.regs):
                    for t, cells in enumerate(pl.cells[r]):
                        for piece, c in enumerate(cells):
                            p = where.get((c.off, c.half))
                            if p is None:
                                continue
                            if op == "tcgen05.ld":
                                moves.append(((slot, t, piece), (p, c.lane)))
                            else:
                                moves.append(((p, c.lane), (slot, t, piece)))
                variants.append(Variant(ci, bi, si, step.ports, si == len(beat.steps) - 1,
                                        bi == len(pl.beats) - 1, beat.regs, tuple(moves),
                                        op == "tcgen05.st", pack))
    return Schedule(keys, tuple(classes[k] for k in keys), tuple(first), tuple(variants), banks)
