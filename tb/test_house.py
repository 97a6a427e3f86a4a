"""The house's rules, read from the source: imports run only downward (the model, then the
ground floor of codes and parameters, the library, the instruction pipeline, the three memory
wings, the copy wing that joins two of them, the top, the Verilog emitter, the harness), with no circle and no import inside a
function to dodge one; no function longer than 150 lines. Expected values: docs/ARCHITECTURE.md
("The house")."""

import ast
import re

import pytest
from conftest import ROOT
from tensorlsu.hdl.codes import Error

#: Each package's floor; a module imports only from its own floor or below, and the wings of
#: one floor (smem, gmem, tmem) not from each other.
FLOORS = [("sim", 0), ("hdl.codes", 1), ("hdl.params", 1), ("hdl", 1), ("hdl.lib", 2), ("hdl.pipeline", 3),
          ("hdl.smem", 4), ("hdl.gmem", 4), ("hdl.tmem", 4), ("hdl.copy", 5), ("hdl.lsu", 6),
          ("hdl.verilog", 7), ("hdl.__main__", 7), ("cosim", 8)]
#: Imports inside functions that are not there to dodge a circle: the command line loads the
#: RTL backend (the dev extras) and the pictures (matplotlib) only when asked for.
LAZY = {("cosim.cli", "cosim.backend"), ("cosim.cli", "sim.draw"), ("cosim.cli", "sim.model"),
        ("cosim.cli", "sim.ptx")}
MAX_LINES = 150


def _modules():
    out = {}
    for top in ("sim", "hdl", "cosim"):
        for f in sorted((ROOT / top).rglob("*.py")):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


MODULES = _modules()


def _floor(mod):
    best = max((p for p in FLOORS if mod == p[0] or mod.startswith(p[0] + ".")), key=lambda p: len(p[0]))
    return best


def _imports(mod, path):
    """(imported module, inside a function) of every import of this project's modules."""
    tree = ast.parse(path.read_text())
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    local = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local |= {id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                src = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("tensorlsu."):
                src = node.module[len("tensorlsu."):]
            else:
                continue
            names = [f"{src}.{a.name}" if f"{src}.{a.name}" in MODULES else src for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name[len("tensorlsu."):] for a in node.names if a.name.startswith("tensorlsu.")]
        for n in names:
            if n in MODULES:
                yield n, id(node) in local


GRAPH = {mod: sorted(set(_imports(mod, path))) for mod, path in MODULES.items()}


def test_imports_run_downward():
    wrong = []
    for mod, deps in GRAPH.items():
        (pkg, floor) = _floor(mod)
        for dep, _ in deps:
            dpkg, dfloor = _floor(dep)
            if dfloor > floor or (dfloor == floor and dpkg != pkg and floor == 4):
                wrong.append(f"{mod} (floor {floor}) imports {dep} (floor {dfloor})")
    assert not wrong, "\n".join(wrong)


def test_no_import_circle():
    state, stack, circles = {}, [], []

    def visit(mod):
        state[mod] = 1
        stack.append(mod)
        for dep, _ in GRAPH[mod]:
            if state.get(dep) == 1:
                circles.append(" -> ".join(stack[stack.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[mod] = 2
    for mod in GRAPH:
        if mod not in state:
            visit(mod)
    assert not circles, "\n".join(circles)


def test_no_import_inside_a_function():
    lazy = {(mod, dep) for mod, deps in GRAPH.items() for dep, inside in deps if inside}
    assert lazy <= LAZY, sorted(lazy - LAZY)


@pytest.mark.parametrize("top", ["hdl", "sim", "cosim", "tb", "synth", "formal"])
def test_no_function_over_150_lines(top):
    long = []
    for f in sorted((ROOT / top).rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_LINES:
                    long.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not long, "\n".join(long)


def test_the_rules_see_the_wings():
    """The checks above read what they claim to: every wing is there, and an import that runs
    upward would be caught (the floors are not all one)."""
    for wing in ("hdl.pipeline.accept", "hdl.smem.serve", "hdl.gmem.fetch", "hdl.tmem.quadrant",
                 "hdl.lib.mux", "hdl.verilog.emit", "cosim.runner", "cosim.cocotb_lsu"):
        assert wing in MODULES
    assert ("hdl.codes", False) in GRAPH["hdl.pipeline.records"]
    assert _floor("hdl.smem.serve")[1] > _floor("hdl.pipeline.records")[1] > _floor("hdl.codes")[1]


@pytest.mark.parametrize("top", ["tb", "synth", "formal"])
def test_the_flows_import_the_project_at_the_top(top):
    """Tests, synthesis and formal scripts import the project's modules at module level too."""
    inside = []
    for f in sorted((ROOT / top).rglob("*.py")):
        for fn in ast.walk(ast.parse(f.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for n in ast.walk(fn):
                    if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("tensorlsu"):
                        inside.append(f"{f.relative_to(ROOT)}:{n.lineno} {n.module}")
    assert not inside, "\n".join(inside)


def test_the_error_table_names_every_code():
    """docs/ARCHITECTURE.md's error table has a row for every code of ``Error``, with its value."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    rows = {(int(v), n) for v, n in re.findall(r"^\| (\d+) \| `([A-Z_]+)` \|", text, flags=re.M)}
    assert rows == {(e.value, e.name) for e in Error}
