"""A refused stmatrix takes its source beats and drops them: the next stmatrix gets its own.

A producer sends every stmatrix's beats, refused or not (docs/ports.md), the way a user's
producer does: it cannot know the verdict without repeating the unit's checks. These tests
offer a refused stmatrix's beats before its instruction (the beats wait on the port while
loads ahead of it are served), with it, and after it (the instruction is accepted first), for
every refusal kind the shared path has (MISALIGNED, OUT_OF_RANGE, OVERLAP) and every .num,
followed by good stores. Expected values: the model (a refused store changes nothing; the good
stores write their own registers), which the H200 vectors pin; a dump of the whole memory
checks every row.
"""

import random

import numpy as np
import pytest
from tensorlsu.cosim.runner import run_jobs
from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.pipeline import forms
from tensorlsu.hdl.smem.owed import OWED_BEATS
from tensorlsu.sim import model, ptx

SMEM = 16 * 1024      # the size tb/system/test_lsu_rtl.py builds: its builds are reused
ROW = 16
LINE = 128


def _stmatrix(num: int, trans: bool = False):
    return ptx.parse(f"stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16", "sm_90")


def _rows(rng: random.Random, n: int) -> list[int]:
    rows = [ROW * r for r in rng.sample(range(SMEM // ROW), n)]
    return rows + [rows[t % n] for t in range(n, 32)]


def _broken(rng: random.Random, rows: list[int], n: int, how: str) -> list[int]:
    a = list(rows)
    i = rng.randrange(n)
    if how == "misaligned":
        a[i] += rng.choice([2, 4, 8])
    elif how == "range":
        a[i] = SMEM + ROW * rng.randrange(4)
    else:
        a[(i + 1 + rng.randrange(n - 1)) % n] = a[i]
    return a


KINDS = {"misaligned": Error.MISALIGNED, "range": Error.OUT_OF_RANGE, "overlap": Error.OVERLAP}


def _program(seed: int):
    """Good and refused stmatrix of every kind and .num, with loads between them; each job's
    store beats are random words (a refused store's too). Returns the instructions, the codes
    the unit must give and the memory the model leaves."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    mem = np.zeros(SMEM, dtype=np.uint8)
    instrs, codes = [], []

    def store(ins, addr, code):
        nonlocal mem
        regs = nrng.integers(0, 1 << 32, (32, ins.nregs), dtype=np.uint64)
        instrs.append({"form": forms.form_id(ins), "addr": addr,
                       "store": [[int(regs[t, r]) for t in range(32)] for r in range(ins.nregs)]})
        if code == Error.NONE:
            mem = model.stmatrix(ins, mem, addr, regs)
        else:
            with pytest.raises(model.ModelError):
                model.stmatrix(ins, mem, addr, regs)
        codes.append(code)

    for how, code in KINDS.items():
        for num in (1, 2, 4):
            ins = _stmatrix(num, trans=rng.random() < 0.5)
            # a load or two ahead: the refused store's beats wait on the port before it
            ld = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90")
            for _ in range(rng.randrange(1, 3)):
                instrs.append({"form": forms.form_id(ld), "addr": _rows(rng, 32)})
                codes.append(Error.NONE)
            store(ins, _broken(rng, _rows(rng, 8 * num), 8 * num, how), code)
            if rng.random() < 0.5:      # two refusals in a row
                store(ins, _broken(rng, _rows(rng, 8 * num), 8 * num, how), code)
            good = _stmatrix(rng.choice([1, 2, 4]))
            store(good, _rows(rng, 8 * good.nregs), Error.NONE)
    return instrs, codes, mem


def _check(results, codes, mem):
    """Each instruction's code, and the memory the last job read back, against the model."""
    dumped = results[-1]["dump"]
    results = [r for r in results if "error" in r]
    got = [r["error"] for r in results]
    assert got == [c.value for c in codes]
    dump = np.frombuffer(bytes.fromhex(dumped), dtype=np.uint8)
    bad = np.flatnonzero(dump != mem)
    assert bad.size == 0, f"{bad.size} bytes differ from the model, the first at 0x{bad[0]:x}"


SIMS = ["icarus", "verilator"]


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("policy", ["h200", "packed"])
def test_refused_store_beats_before_with_and_after(sim, policy):
    instrs, codes, mem = _program(seed=3 + len(policy))
    lines = SMEM // LINE
    # before / with: one burst, the beats offered as soon as the port takes them, at two
    # levels of idle; after: each instruction alone, its beats offered once it is accepted
    jobs = [{"burst": instrs, "image": bytes(SMEM).hex()}, {"burst": [], "dump_lines": lines}]
    results, _ = run_jobs(jobs, sim=sim, policy=policy, smem_bytes=SMEM)
    _check(results[0]["burst"] + [results[1]], codes, mem)
    results, _ = run_jobs(jobs, sim=sim, policy=policy, smem_bytes=SMEM, idle=0.4, backpressure=0.3, seed=9)
    _check(results[0]["burst"] + [results[1]], codes, mem)
    alone = [{**ins, "image": bytes(SMEM).hex()} if k == 0 else dict(ins) for k, ins in enumerate(instrs)]
    alone[-1]["dump_lines"] = lines
    results, _ = run_jobs(alone, sim=sim, policy=policy, smem_bytes=SMEM, idle=0.3, seed=4)
    _check(results, codes, mem)


def test_more_refused_stores_in_a_row_than_the_unit_may_owe():
    """More refused stmatrix in a row than the unit may owe beats to (``OWED_BEATS``), on
    streams that idle most cycles, then a good one: every beat is dropped in its turn and the
    good store writes its own (tb/smem/test_owed.py holds the count at its bound)."""
    ins = _stmatrix(4)
    n = OWED_BEATS // 4 + 3
    rng = random.Random(1)
    instrs = [{"form": forms.form_id(ins), "addr": _broken(rng, _rows(rng, 32), 32, "misaligned"),
               "store": [[k * 1000 + r] * 32 for r in range(4)]} for k in range(n)]
    good = _rows(rng, 32)
    regs = np.arange(128, dtype=np.uint64).reshape(32, 4) * 0x01010101
    instrs.append({"form": forms.form_id(ins), "addr": good,
                   "store": [[int(regs[t, r]) for t in range(32)] for r in range(4)], "dump_lines": SMEM // LINE})
    mem = model.stmatrix(ins, np.zeros(SMEM, dtype=np.uint8), good, regs)
    results, _ = run_jobs([{"burst": instrs[:-1], "image": bytes(SMEM).hex()}, instrs[-1]], sim="verilator",
                          smem_bytes=SMEM, idle=0.9, seed=2)
    _check(results[0]["burst"] + [results[1]], [Error.MISALIGNED] * n + [Error.NONE], mem)
