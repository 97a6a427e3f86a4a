"""PTX legality: ptx.parse against NVIDIA's assembler on generated texts.

Expected verdicts come from ptxas (PyPI nvidia-cuda-nvcc 13.0.88), an independent oracle.
The only allowed disagreements are forms ptxas accepts although the PTX texts do not list
them (ptxgen.ptxas_extra, docs/ptxas.md); there the texts win and parse must refuse.
"""

import collections

import ptxgen
import pytest
from tensorlsu.sim import ptx


@pytest.fixture(scope="module")
def texts():
    return ptxgen.generate()


@pytest.fixture(scope="module")
def assembler():
    path = ptxgen.ptxas_path()
    assert path is not None, "ptxas not found: install the dev extras (nvidia-cuda-nvcc)"
    return path


FAMILIES = ("ldmatrix", "stmatrix", "wmma", "tcgen05.ld", "tcgen05.st", "tcgen05.cp")


def _family(text):
    head = text.split()[0]
    return ".".join(head.split(".")[:2]) if head.startswith("tcgen05") else head.split(".")[0]


def _ours(text, target):
    try:
        ptx.parse(text, target)
        return True, ""
    except ptx.PtxError as e:
        assert str(e), "a refusal must say why"
        return False, str(e)


def test_enough_texts_of_every_family(texts):
    assert len(texts) >= 5000
    fams = collections.Counter(_family(t) for t in texts)
    assert set(fams) == set(FAMILIES)
    assert min(fams.values()) >= 400


@pytest.mark.parametrize("target", ptxgen.TARGETS)
def test_verdicts_match_ptxas(texts, assembler, target):
    verdicts = ptxgen.ptxas_verdicts(texts, target, assembler)
    counts = collections.Counter()
    wrong = []
    for text, theirs in zip(texts, verdicts):
        ours, msg = _ours(text, target)
        fam = _family(text)
        counts[(fam, theirs)] += 1
        if ours == theirs:
            counts["agree"] += 1
            continue
        extra = ptxgen.ptxas_extra(text)
        if extra and theirs and not ours:
            counts["documented"] += 1
            continue
        wrong.append(f"{'accepted' if ours else 'refused'} by parse ({msg}), "
                     f"{'accepted' if theirs else 'refused'} by ptxas: {text}")
    print(f"\n{target}: {len(texts)} texts, {counts['agree']} agree, {counts['documented']} "
          f"documented ptxas extras; legal/illegal per family: "
          + ", ".join(f"{f} {counts[(f, True)]}/{counts[(f, False)]}"
                      for f in FAMILIES))
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:30])
    # both verdicts occur in every family on targets that have the newer forms
    for fam in ("ldmatrix", "stmatrix", "wmma"):
        assert counts[(fam, True)] and counts[(fam, False)]
    # Tensor Memory exists on the sm_100 / sm_103 / sm_110 families only
    for fam in ("tcgen05.ld", "tcgen05.st", "tcgen05.cp"):
        if target in ("sm_90a", "sm_120a"):
            assert counts[(fam, True)] == 0
        else:
            assert counts[(fam, True)] and counts[(fam, False)]
