"""The bank rule as a C header (tensorlsu.sim.cheader): compiled with the machine's C compiler
and checked against the model on random patterns (rows drawn from a small pool, so that bank
conflicts and repeated rows are common), every form, both policies."""

import shutil
import subprocess

import numpy as np
import pytest
from tensorlsu.cosim import cli
from tensorlsu.sim import cheader, model, ptx

DRIVER = r"""
#include <stdio.h>
#include "tensorlsu_banks.h"
int main(void) {
    char kind; int a, b, policy; uint32_t addr[32];   /* M rows 0 policy, or S width active policy */
    while (scanf(" %c %d %d %d", &kind, &a, &b, &policy) == 4) {
        for (int t = 0; t < 32; ++t) scanf("%u", &addr[t]);
        printf("%d\n", kind == 'M' ? tlsu_matrix_wavefronts(a, addr, policy)
                                   : tlsu_shared_wavefronts(a, addr, (uint32_t)b, policy));
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("g++")
    assert cc, "no C compiler"
    d = tmp_path_factory.mktemp("cheader")
    assert cli.main(["cheader", "--out", str(d / "tensorlsu_banks.h")]) == 0
    (d / "driver.c").write_text(DRIVER)
    lang = ["-x", "c++"] if cc.endswith("++") else ["-std=c99"]
    subprocess.run([cc, *lang, "-O2", "-Wall", "-Werror", "-I", str(d), str(d / "driver.c"), "-o", str(d / "driver")],
                   check=True, capture_output=True, text=True)
    return d / "driver"


def run(driver, lines):
    out = subprocess.run([str(driver)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


def test_matrix_forms_match_the_model(driver):
    rng = np.random.default_rng(11)
    lines, want = [], []
    for (op, shape, num), text in cheader.FORMS.items():
        ins = ptx.parse(text, "sm_100a")
        for _ in range(150):
            pool = rng.integers(0, 64, rng.integers(1, 40)) * 16
            addr = [int(x) for x in rng.choice(pool, 32)]
            for p, policy in enumerate(model.POLICIES):
                rows = ins.num * (16 if shape == "m16n16" else 8)    # the PTX text: an .m16n16 matrix is 16 rows
                lines.append(f"M {rows} 0 {p} " + " ".join(map(str, addr)))
                want.append(model.wavefronts(ins, addr, policy))
    assert run(driver, lines) == want


def test_plain_accesses_match_the_model(driver):
    rng = np.random.default_rng(12)
    lines, want = [], []
    for width in model.SHARED_WIDTHS:
        for _ in range(300):
            pool = rng.integers(0, 4096 // width, rng.integers(1, 40)) * width
            addr = [int(x) for x in rng.choice(pool, 32)]
            active = int(rng.integers(0, 1 << 32)) if rng.random() < 0.5 else 0xFFFFFFFF
            lanes = [a if active >> t & 1 else None for t, a in enumerate(addr)]
            for p, policy in enumerate(model.POLICIES):
                lines.append(f"S {width} {active} {p} " + " ".join(map(str, addr)))
                want.append(model.shared_wavefronts(width, lanes, policy))
    assert run(driver, lines) == want


def test_bad_input_is_minus_one(driver):
    misaligned = " ".join(["8"] + ["0"] * 31)
    assert run(driver, [f"M 8 0 0 {misaligned}", f"S 16 1 0 {misaligned}", f"S 3 1 0 {misaligned}",
                        f"S 16 2 0 {misaligned}"]) == [-1, -1, -1, 1]


def test_the_header_lists_every_form_the_front_end_takes():
    text = cheader.generate()
    assert text.count('{"ldmatrix.') == 8 and text.count('{"stmatrix.') == 6
    assert '{"ldmatrix.m16n16.x2", 32}' in text
