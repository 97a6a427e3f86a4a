"""The package as users get it: a wheel built from this tree, installed with pip into a clean
virtual environment with the oldest numpy the range allows, runs the README's quick start from
outside the repository; the version has one source; the public API passes the type check."""

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import venv
import zipfile

import pytest
import tensorlsu
from conftest import ROOT

import typecheck

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: the floor of the runtime range, which only this test installs (CI's lock has the newest)
NUMPY_FLOOR = re.fullmatch(r"numpy>=([\d.]+),<\d+", PYPROJECT["project"]["dependencies"][0]).group(1)

#: the README's quick start, its Python part: a swizzled ldmatrix (Swizzle<3,4,3> rows of 128 B)
#: is conflict-free, four clocks for four matrices; the same rows unswizzled take 32
QUICK_START = """
from tensorlsu.sim import ptx, model, draw
ins = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", target="sm_90a")
addr = [(t % 8) * 128 + ((t // 8 ^ t % 8) << 4) for t in range(32)]
plain = [(t % 8) * 128 + ((t // 8) << 4) for t in range(32)]
print(model.wavefronts(ins, addr), model.wavefronts(ins, plain))
draw.save(draw.schedule(ins, addr, "h200"), "swizzled.svg")
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel of the files git tracks, built in a copy of them: what a clone builds, and no
    race with the tree's own build/ folder, which setuptools also writes into."""
    out, src = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    got = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr[-3000:]
    (path,) = out.glob("tensorlsu-*.whl")
    return path


def test_the_wheel_holds_the_package_its_data_and_types(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for must in ("tensorlsu/__init__.py", "tensorlsu/py.typed", "tensorlsu/data/h200_sm90.jsonl",
                 "tensorlsu/sim/model.py", "tensorlsu/hdl/lsu.py", "tensorlsu/cosim/native_harness.cpp"):
        assert must in names, must
    assert wheel.name.startswith(f"tensorlsu-{tensorlsu.__version__}-")
    assert not any(n.startswith(("tb/", "synth/", "formal/")) for n in names)


def test_a_clean_venv_installs_the_wheel_and_runs_the_quick_start(wheel, tmp_path):
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    py = env / "bin" / "python"
    t0 = time.perf_counter()
    quiet = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}   # pip's own deprecations
    subprocess.run([py, "-m", "pip", "install", "-q", str(wheel), f"numpy=={NUMPY_FLOOR}"],
                   check=True, capture_output=True, env=quiet)
    installed = time.perf_counter() - t0
    work = tmp_path / "work"        # outside the repository: nothing of the tree on the path
    work.mkdir()

    def run(*args):
        return subprocess.run(args, cwd=work, capture_output=True, text=True, timeout=300)

    got = run(env / "bin" / "tensorlsu", "--version")
    assert got.stdout.strip() == f"tensorlsu {tensorlsu.__version__}"
    t0 = time.perf_counter()
    got = run(env / "bin" / "tensorlsu", "replay", "h200_sm90")
    assert got.returncode == 0, got.stdout + got.stderr
    assert "822 records, 822 passed, 0 failed" in got.stdout
    got = run(py, "-c", QUICK_START)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["4", "32"]
    assert (work / "swizzled.svg").read_text().startswith("<svg")
    quick = time.perf_counter() - t0
    # numpy alone: the RTL says which extra it needs rather than failing on a bare import
    got = run(py, "-c", "import tensorlsu.hdl")
    assert "pip install 'tensorlsu[rtl]'" in got.stderr
    got = run(env / "bin" / "tensorlsu", "replay", "h200_sm90", "--backend", "rtl")
    assert got.returncode == 2 and "pip install 'tensorlsu[sim]'" in got.stderr and "Traceback" not in got.stderr
    got = run(py, "-c", "import numpy, tensorlsu; print(numpy.__version__, tensorlsu.__version__)")
    numpy_version, version = got.stdout.split()
    assert numpy_version.split(".")[:2] == NUMPY_FLOOR.split(".")[:2] and version == tensorlsu.__version__
    print(f"pip install {installed:.1f} s, quick start {quick:.1f} s")
    assert quick < 60


def test_the_version_has_one_source():
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tensorlsu.__version__"}
    from importlib.metadata import version
    assert version("tensorlsu") == tensorlsu.__version__


def test_the_package_passes_the_type_check():
    assert typecheck.main() == 0


def test_the_type_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from tensorlsu.sim import model\nmodel.wavefronts(3, 'x', policy=1.5)\n")
    got = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                          "--cache-dir", str(tmp_path / "cache"), str(bad)],
                         cwd=typecheck.link_tree(), capture_output=True, text=True)
    assert got.returncode == 1 and "wavefronts" in got.stdout, got.stdout


def test_the_extras_split_by_job_and_the_lock_pins_each():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(extras) == {"rtl", "sim", "synth", "formal", "oracle", "pictures", "test", "dev"}
    lock = {}
    for line in (ROOT / "ci.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, ver = line.partition("==")
            lock[name.lower().replace("_", "-")] = ver
    for job, reqs in extras.items():
        for req in reqs:
            if req.startswith("tensorlsu["):
                continue
            name = re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower().replace("_", "-")
            assert name in lock, f"{job}: {name} is not in ci.lock"
            assert not req.endswith(lock[name]) or ">=" in req, f"{job}: {req} is a pin, not a range"
    assert "numpy" in lock
