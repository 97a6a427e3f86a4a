"""PTX legality: ptx.parse against NVIDIA's assembler on generated texts.

Expected verdicts come from ptxas (PyPI nvidia-cuda-nvcc 13.0.88), an independent oracle.
The only allowed disagreements are forms ptxas accepts although the PTX texts do not list
them (ptxgen.ptxas_extra, docs/ptxas.md); there the texts win and parse must refuse.
"""

import collections

import pytest

import ptxgen
from tensorlsu.sim import ptx


@pytest.fixture(scope="module")
def texts():
    return ptxgen.generate()


@pytest.fixture(scope="module")
def assembler():
    path = ptxgen.ptxas_path()
    assert path is not None, "ptxas not found: install the dev extras (nvidia-cuda-nvcc)"
    return path


def _ours(text, target):
    try:
        ptx.parse(text, target)
        return True, ""
    except ptx.PtxError as e:
        assert str(e), "a refusal must say why"
        return False, str(e)


def test_enough_texts_of_every_family(texts):
    assert len(texts) >= 5000
    fams = collections.Counter(t.split(".")[0] for t in texts)
    assert set(fams) == {"ldmatrix", "stmatrix", "wmma", "tcgen05"}
    assert min(fams.values()) >= 400


@pytest.mark.parametrize("target", ptxgen.TARGETS)
def test_verdicts_match_ptxas(texts, assembler, target):
    verdicts = ptxgen.ptxas_verdicts(texts, target, assembler)
    counts = collections.Counter()
    wrong = []
    for text, theirs in zip(texts, verdicts):
        ours, msg = _ours(text, target)
        fam = text.split(".")[0]
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
                      for f in ("ldmatrix", "stmatrix", "wmma", "tcgen05")))
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:30])
    # both verdicts occur in every family on targets that have the newer forms
    for fam in ("ldmatrix", "stmatrix", "wmma"):
        assert counts[(fam, True)] and counts[(fam, False)]
