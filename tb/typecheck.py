"""The type check of the whole package: mypy over every module of the wheel, as the wheel lays
them out (``tensorlsu/sim``, ``tensorlsu/hdl``, ...), configured in pyproject.toml.

The repository keeps the wings in folders of their own (``sim/``, ``hdl/``, ``cosim/``,
``data/``, ``src/tensorlsu``); mypy maps module names to folders, so this script links them
under ``build/typecheck/tensorlsu`` first. Exit status: mypy's.

    python tb/typecheck.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck"

#: where each subpackage lives in the repository (pyproject.toml's package-dir)
WINGS = {"sim": "sim", "hdl": "hdl", "cosim": "cosim", "data": "data"}

#: every module of the package: the model, the RTL, the harness and drivers, the command
PACKAGES = ("tensorlsu.sim", "tensorlsu.hdl", "tensorlsu.cosim")
MODULES = ("tensorlsu", "tensorlsu.data")


def link_tree() -> Path:
    pkg = TREE / "tensorlsu"
    pkg.mkdir(parents=True, exist_ok=True)
    links = {"__init__.py": ROOT / "src/tensorlsu/__init__.py", "py.typed": ROOT / "src/tensorlsu/py.typed",
             **{name: ROOT / folder for name, folder in WINGS.items()}}
    for name, target in links.items():
        link = pkg / name
        if link.is_symlink() and link.resolve() == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    return TREE


def main() -> int:
    tree = link_tree()
    args = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(ROOT / "build" / "mypy-cache")]
    for p in PACKAGES:
        args += ["-p", p]
    for m in MODULES:
        args += ["-m", m]
    return subprocess.run(args, cwd=tree).returncode


if __name__ == "__main__":
    sys.exit(main())
