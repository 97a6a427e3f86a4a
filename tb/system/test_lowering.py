"""The unit's expressions as Amaranth lowers them: no shared expression copied into every use.

Amaranth copies an expression into each place that uses it when it lowers a design (its value
transformers rebuild trees, so a shared subexpression stops being shared): an expression used by
three gates of the next layer of a Wallace tree is copied three times a layer, 3 ** depth in
all. The copies are the same logic (synthesis merges them), but each is elaborated, converted
and written out, and the simulators evaluate every one: the address stage's carry-save tree made
8.8 MB of the unit's 44.7 MB of RTLIL that way. The cure is a signal for a value used more than
once. This test walks the unit's statements before lowering and counts, per source line, the
nodes that lowering copies: a shared expression's tree size times its uses past the first.
"""

from __future__ import annotations

from collections import Counter

import pytest
from amaranth import Module, Signal
from amaranth.hdl import _ast, _ir

import tensorlsu.hdl.lsu as lsu
from tensorlsu.hdl.params import Params

#: Copied nodes one source line may cause. The most now: field reads of views over expressions
#: (about 21,000, most of them the accept stage's chunk indexes) and the load shuffle's
#: multiplexer trees (16,000); the address stage's carry-save tree alone was 143,000 before
#: its layers were signals.
MOST_COPIED = 25_000


def _children(v):
    if isinstance(v, _ast.Operator):
        return v.operands
    if isinstance(v, _ast.Slice):
        return (v.value,)
    if isinstance(v, _ast.Part):
        return (v.value, v.offset)
    if isinstance(v, _ast.Concat):
        return v.parts
    if isinstance(v, _ast.SwitchValue):
        return (v.test, *(value for _, value in v.cases))
    return ()


def _roots(statements):
    for s in statements:
        if isinstance(s, _ast.Assign):
            yield from (s.lhs, s.rhs)
        elif isinstance(s, _ast.Switch):
            yield s.test
            for case in s.cases:
                yield from _roots(case[1])


def copied_nodes(fragment) -> Counter:
    """Per ``file:line`` of a shared expression, the nodes lowering copies, over ``fragment`` and
    its subfragments (each module's statements are lowered on their own)."""
    copied: Counter = Counter()
    tree: dict[int, int] = {}
    uses: Counter = Counter()
    nodes: dict[int, _ast.Value] = {}

    def size(v) -> int:
        if id(v) not in tree:
            n = 1
            for c in _children(v):
                uses[id(c)] += 1
                nodes[id(c)] = c
                n += size(c)
            tree[id(v)] = n
        return tree[id(v)]

    for stmts in fragment.statements.values():
        for root in _roots(stmts):
            size(root)
    for key, n in uses.items():
        if n > 1 and tree[key] > 1:
            loc = nodes[key].src_loc
            copied[f"{loc[0].rsplit('/', 2)[-2]}/{loc[0].rsplit('/', 1)[-1]}:{loc[1]}" if loc else "?"] += \
                (n - 1) * tree[key]
    for sub, *_ in fragment.subfragments:
        copied += copied_nodes(sub)
    return copied


def _plain(m, name: str, component):
    """``lsu._core`` without the domain renamer, which rebuilds every expression of a stage (and
    so would hide from the walk what the stage's own code shares)."""
    m.submodules[name] = component
    return component


@pytest.fixture(scope="module")
def unit_fragment():
    """The Tensor Memory unit, elaborated."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lsu, "_core", _plain)
        return _ir.Fragment.get(lsu.LoadStoreUnit(Params(tmem_columns=64)), None)


def test_no_source_line_makes_lowering_copy_much(unit_fragment):
    copied = copied_nodes(unit_fragment)
    worst = [(line, n) for line, n in copied.most_common() if n > MOST_COPIED]
    assert not worst, f"expressions used more than once (make them signals): {worst}"


def test_the_walk_sees_a_shared_expression_copied():
    """The count itself, against a tree counted by hand: ``x0 = a ^ b`` (3 nodes) is used three
    times, copied twice: 6. Each layer ``x = (x & c) | (x ^ c) | (x + c)`` holds three
    operators of x (1 + size(x) + 1 each) and two ORs: x1 has 2 + 3 · 5 = 17 nodes and x2
    2 + 3 · 19 = 59; each is used three times (x3 once): 2 · 17 + 2 · 59 = 152 from the loop's
    line. Signals are leaves, never counted."""
    m = Module()
    a, b, c, out = Signal(8), Signal(8), Signal(8), Signal(8)
    x = a ^ b
    for _ in range(3):
        x = (x & c) | (x ^ c) | (x + c)
    m.d.comb += out.eq(x)
    copied = copied_nodes(_ir.Fragment.get(m, None))
    assert {line.rsplit(":", 1)[0] for line in copied} == {"system/test_lowering.py"}
    assert sorted(copied.values()) == [6, 152]
    m2 = Module()
    y = Signal(8)
    m2.d.comb += [y.eq(a ^ b), out.eq((y & c) | (y ^ c) | (y + c))]
    assert not copied_nodes(_ir.Fragment.get(m2, None)), "a signal is used, not copied"
