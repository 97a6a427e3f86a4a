"""The regression's jobs for the ports beyond the shared-memory path: wmma.load from global and
generic addresses (through the AXI port), tcgen05.ld / tcgen05.st on the four quadrants, and
tcgen05.cp (with shared-path instructions offered behind it). Each maker takes the deck's
state (the model's shared memory, global image and Tensor Memory) and gives a job and the
model's expectation of each of its instructions; ``rates`` draws the job's idle and
back-pressure.

Expected error codes: a model refusal named by its phrase (the unit's codes per family, as
docs/ports.md and docs/tcgen05-cp.md give them); the global refusals the model cannot tell
apart (a read past the memory behind the port, an address outside the global range) are
built as such and carry their code. DECERR comes from the native harness's memory only (cocotbext-axi's
AxiRam answers SLVERR past its end): the deck's jobs with ports run on the native engine.
"""

from __future__ import annotations

import random
import re

import numpy as np
from tensorlsu.cosim.jobs import quadrant_image, tmem_instr_job
from tensorlsu.cosim.layout import GMEM_AT, GMEM_BYTES
from tensorlsu.cosim.native import DECERR_AT
from tensorlsu.hdl.codes import Error, Space
from tensorlsu.hdl.copy.records import FORMS as COPY_FORMS
from tensorlsu.hdl.copy.records import instr_fields as copy_fields
from tensorlsu.hdl.params import Params
from tensorlsu.hdl.pipeline import forms
from tensorlsu.sim import descriptor, model, ptx
from tmemgen import random_case

#: idle / back-pressure levels a job draws (the coverage's back-pressure axis)
RATES = {"none": 0.0, "some": 0.2, "heavy": 0.6}
#: bytes of the global image the deck's global wmma.loads read (at GMEM_AT)
GLOBAL_IMAGE = 64 * 1024

#: the error codes each family may give, for the coverage table
FAMILY_ERRORS = {
    "ldmatrix": ("NONE", "MISALIGNED", "OUT_OF_RANGE"),
    "stmatrix": ("NONE", "MISALIGNED", "OUT_OF_RANGE", "OVERLAP"),
    "wmma.load": ("NONE", "MISALIGNED", "OUT_OF_RANGE", "STRIDE"),
    "wmma.load global": ("NONE", "MISALIGNED", "OUT_OF_RANGE", "SLVERR", "DECERR"),
    "wmma.load generic shared": ("NONE", "MISALIGNED"),
    "tcgen05.ld": ("NONE", "QUADRANT", "COLUMNS"),
    "tcgen05.st": ("NONE", "QUADRANT", "COLUMNS"),
    "tcgen05.cp": ("NONE", "DESCRIPTOR", "MISALIGNED", "OUT_OF_RANGE", "COLUMNS", "LANES"),
}

_TMEM_CODES = (("immHalfSplitoff", Error.SPLIT), ("lanes", Error.QUADRANT), ("columns", Error.COLUMNS))
_CP_CODES = (("descriptor", Error.DESCRIPTOR), ("swizzle row", Error.MISALIGNED), ("reaches past", Error.OUT_OF_RANGE),
             ("multiple of 4", Error.MISALIGNED), ("columns", Error.COLUMNS), ("beyond lane", Error.LANES))


def code_of(message: str, table) -> Error:
    for words, code in table:
        if words in message:
            return code
    raise ValueError(f"no error code for {message!r}")


def rates(rng: random.Random) -> tuple[str, list[float]]:
    """A job's level and its (idle, back-pressure): the same level on every port."""
    level = rng.choice(list(RATES))
    return level, [RATES[level], RATES[level]]


#: how often a global wmma.load is refused, for each of its four refusals; a generic one in
#: the shared window, misaligned
REFUSE_GLOBAL, REFUSE_SHARED = 0.09, 0.5


def global_wmma(rng: random.Random, mem: np.ndarray, gmem: np.ndarray, smem_bytes: int, bank_cycles) -> tuple[dict, dict]:
    """A wmma.load from global memory or a generic address (in the shared window or not);
    sometimes misaligned, past the memory behind the port, or outside the global range.
    ``bank_cycles(fid, offset, stride)``: a shared pass's bank cycles under the run's policy."""
    p = Params(smem_bytes=smem_bytes)
    while True:
        fid = rng.randrange(len(forms.FORMS))
        inf = forms.info(fid)
        if inf.wmma:
            break
    sh = forms.FORMS[fid]
    stride = inf.least + inf.stride_grain * rng.choice([0, 0, 1, 3])
    span = (inf.lines - 1) * stride * inf.bits // 8 + inf.line_bytes
    space = rng.choice([Space.GLOBAL, Space.GLOBAL, Space.GENERIC])
    in_shared = space == Space.GENERIC and rng.random() < 0.5 and span <= smem_bytes
    limit = smem_bytes if in_shared else GLOBAL_IMAGE
    while span > limit:
        stride = inf.least
        span = (inf.lines - 1) * stride * inf.bits // 8 + inf.line_bytes
    off = model.WMMA_ADDR_ALIGN * rng.randrange((limit - span) // model.WMMA_ADDR_ALIGN + 1)
    addr = (p.shared_window_base if in_shared else GMEM_AT) + off
    name = f"{sh.form} ({'generic shared' if in_shared else 'global'})"
    exp = {"form": name, "family": "wmma.load generic shared" if in_shared else "wmma.load global"}
    # refusals often enough that nearly every form meets each of them at every level in a
    # million instructions (a generic shared matrix can only be misaligned)
    how = rng.random() / (REFUSE_SHARED if in_shared else REFUSE_GLOBAL)
    code = None
    if how < 1:
        addr += 16
        code = Error.MISALIGNED
    elif how < 2 and not in_shared:
        # the matrix's last bytes past the memory behind the port, which answers SLVERR
        addr = GMEM_BYTES - model.WMMA_ADDR_ALIGN * rng.randrange(1, max(2, -(-span // model.WMMA_ADDR_ALIGN)))
        code = Error.SLVERR
    elif how < 3 and not in_shared:
        addr, code = p.global_base + p.global_bytes - model.WMMA_ADDR_ALIGN, Error.OUT_OF_RANGE
    elif how < 4 and not in_shared:
        addr, code = DECERR_AT + model.WMMA_ADDR_ALIGN * rng.randrange(1024), Error.DECERR   # no subordinate
    job = {"form": fid, "addr": addr, "stride": stride, "space": space.value}
    if code is not None:
        exp["code"] = code
        return job, exp
    if in_shared:
        exp["regs"] = model.wmma_load(sh, model.Memory(shared=mem), off, stride)
    else:
        gl = ptx.parse(sh.form.replace(".shared.", ".global."), "sm_90a")
        exp["regs"] = model.wmma_load(gl, model.Memory(global_=gmem, global_base=GMEM_AT), addr, stride)
    exp["cycles"] = bank_cycles(fid, off, stride) if in_shared else 0    # a global pass occupies no bank
    return job, exp


def tmem_job(rng: random.Random, nrng, tm: np.ndarray, cols: int, per_port: int) -> tuple[dict, list, np.ndarray]:
    """Every quadrant's port at once: random loads and stores (some refused); the new image."""
    job, want = {"tmem": {}}, []
    for q in range(4):
        instrs = []
        for _ in range(rng.randrange(1, per_port + 1)):
            ins, taddr, warp, split = random_case(rng, q, cols, bad=0.1)
            regs = nrng.integers(0, 1 << 32, size=(32, ins.nregs), dtype=np.uint64).astype(np.uint32)
            instrs.append(tmem_instr_job(ins, taddr, warp, split, regs))
            w = {"quadrant": q, "ins": ins, "form": f"{ins.op}.{ins.shape}", "family": ins.op}
            try:
                if ins.op == "tcgen05.st":
                    tm = model.tcgen05_st(ins, tm, taddr, warp, regs, split, cols=cols)
                else:
                    r, red = model.tcgen05_ld(ins, tm, taddr, warp, split, cols=cols)
                    w["regs"] = r.tolist()
                    if red is not None:
                        w["redval"] = red.tolist()
            except model.ModelError as e:
                w["code"] = code_of(str(e), _TMEM_CODES)
            want.append(w)
        job["tmem"][str(q)] = instrs
    return job, want, tm


def copy_job(rng: random.Random, mem: np.ndarray, tm: np.ndarray, cols: int) -> tuple[dict, dict, np.ndarray]:
    """A tcgen05.cp of a random form, format, swizzle and descriptor on the shared memory as it
    is (some refused); the new image."""
    shape, cast = COPY_FORMS[rng.randrange(len(COPY_FORMS))]
    fmt = rng.choice([None, None, "b6x16_p32", "b4x16_p64"])
    ins = ptx.parse(f"tcgen05.cp.cta_group::{rng.choice([1, 2])}.{shape}" + (f".{cast}" if cast else "")
                    + (f".b8x16.{fmt}" if fmt else "") + " [t], d;", "sm_100a")
    code = rng.choice([0, 6, 4, 2])
    pattern = 8 * descriptor.SWIZZLE_BYTES[code] if code else 16
    smem_bytes = len(mem)
    start = pattern * rng.randrange(smem_bytes // pattern // 2)
    lbo, sbo = 16 * rng.randrange(1, 33), 16 * rng.randrange(1, 33)
    desc = descriptor.encode(start, lbo, sbo, code)
    lanes = {"128x256b": [0], "128x128b": [0], "4x256b": [0, 1, 31]}.get(shape, [0])
    taddr = rng.choice(lanes) << 16 | 4 * rng.randrange(cols // 4)
    r = rng.random()
    if r < 0.03:
        desc |= 1 << rng.choice([14, 30, 47, 52, 61])          # a field no copy may use
    elif r < 0.05:
        taddr += rng.choice([1, 2])                              # a column origin off 4
    elif r < 0.07:
        taddr = (32 << 16) | (taddr & 0xFFFF)                    # past lane 127 for most forms
    elif r < 0.09:
        # reads past shared memory: its second row (swizzled) or chunk starts there, whatever the
        # shape (a .4x256b copy reads 128 bytes, less than a swizzle pattern)
        desc = descriptor.encode(smem_bytes - (32 if code else 16), lbo, sbo, code)
    elif r < 0.11:
        taddr = (taddr & ~0xFFFF) | cols                         # columns past the allocation
    exp = {"form": re.sub(r"\.cta_group::\d", "", ins.form), "family": "tcgen05.cp"}
    try:
        tm = model.tcgen05_cp(ins, mem, desc, taddr, tm, cols=cols)
    except model.ModelError as e:
        exp["code"] = code_of(str(e), _CP_CODES)
    return {"cp": copy_fields(ins, desc, taddr)}, exp, tm


def images(tm: np.ndarray) -> dict:
    return {str(q): quadrant_image(tm, q) for q in range(4)}
