"""Property-based fuzz of what users feed the tools: the PTX front end, the model, the trace
reader and replay. The property is the documented contract, not a value: every input gives a
result or the documented error (``PtxError``, ``ModelError``, ``TraceError``, all ValueErrors
naming what is wrong), never another exception.

``make test`` runs a bounded number of examples, the same each run (derandomized);
``make fuzz`` runs many more at random (``TENSORLSU_FUZZ_EXAMPLES``, default 20,000 a property)
and prints how many each property tried.
"""

import atexit
import json
import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorlsu.hdl.pipeline import forms
from tensorlsu.sim import model, ptx, trace

_LONG = "TENSORLSU_FUZZ_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("TENSORLSU_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not _LONG, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])
TRIED: dict[str, int] = {}


def _count(name: str) -> None:
    TRIED[name] = TRIED.get(name, 0) + 1


@atexit.register
def _report():
    if _LONG and TRIED:
        print("fuzz examples tried: " + ", ".join(f"{k} {v}" for k, v in sorted(TRIED.items())))


# -- the front end ---------------------------------------------------------------------------
OPCODES = ["ldmatrix", "stmatrix", "wmma.load", "wmma", "tcgen05.ld", "tcgen05.st", "tcgen05.cp", "tcgen05"]
QUALS = sorted(ptx._VOCAB) + ["ld", "load", "st", "x3", "m9n8", "", "shared::cluster", "sync", "aligned"]
OPERANDS = ["{r0}", "{r0, r1}", "{r0,r1,r2,r3}", "{%r0,%r1,%r2,%r3,%r4,%r5,%r6,%r7}", "[p]", "[%rd0]", "[16]",
            "[p+16]", "[p+0x10]", "[p-16]", "[017]", "16", "017", "0x10", "-1", "99999999999999999999999",
            "١٦", "٩", "[p+١٦]", "r", "{}", "[", "]", "{r0", "0b11", "1e3", "%r998", "[%r998+32]", "%rd1",
            "0xc0004020", "0x" + "f" * 17]
CONSTANTS = ["017", "08", "0b101", "0x", "16U", "16u", "-16", "+16", "0x10000000000000000", "9" * 30, "١٦", "- 16"]
TARGETS = ["sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a", "sm_110a", "sm_120a", "sm_80", "sm_70",
           "sm_٩٠a", "sm_999", "sm_100x", "", "sm_"]


#: Legal texts with operands, to mutate: every shared-path form, and tcgen05 forms.
LEGAL = [f.text for f in forms.FORMS]
#: ... and texts with constants in their operands, drawn as often as all of those
LEGAL_CONSTANTS = [
    "tcgen05.ld.sync.aligned.16x32bx2.x2.b32 {%r0, %r1}, [%r8], 4;",
    "tcgen05.ld.red.sync.aligned.32x32b.x2.min.abs.NaN.f32 {%r0, %r1}, %r9, [%r8];",
    "tcgen05.st.sync.aligned.16x64b.x2.unpack::16b.b32 [%r8], {%r0, %r1};",
    "tcgen05.cp.cta_group::1.32x128b.warpx4.b8x16.b4x16_p64 [%r8+16], 0x4000404000010000;",
    "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, [%rd0], 32;"]


@st.composite
def mutated_texts(draw):
    """A legal text with its qualifiers shuffled, one dropped or doubled, an operand replaced
    by another operand, or its last constant (or address offset) by another constant."""
    text = draw(st.sampled_from(LEGAL) | st.sampled_from(LEGAL_CONSTANTS))
    head, _, ops = text.partition(" ")
    opc = next(o for o in ("wmma.load", "tcgen05.ld", "tcgen05.st", "tcgen05.cp", "ldmatrix", "stmatrix")
               if head.startswith(o))
    quals = head[len(opc) + 1:].split(".")
    how = draw(st.sampled_from(["shuffle", "drop", "double", "operand", "operand", "constant"]))
    if how == "shuffle":
        quals = draw(st.permutations(quals))
    elif how == "drop" and quals:
        del quals[draw(st.integers(0, len(quals) - 1))]
    elif how == "double" and quals:
        quals.insert(draw(st.integers(0, len(quals))), draw(st.sampled_from(quals)))
    elif how == "operand":
        parts = ptx._split_operands(ops.rstrip(";"))
        k = draw(st.integers(0, len(parts) - 1))
        parts[k] = draw(st.sampled_from(OPERANDS + CONSTANTS + [f"[{c}]" for c in CONSTANTS]
                                        + [f"[%rd0+{c}]" for c in CONSTANTS]))
        ops = ", ".join(parts) + ";"
    elif how == "constant":
        # the text's last operand (a stride, a split, a descriptor) or address offset
        parts = ptx._split_operands(ops.rstrip(";"))
        c = draw(st.sampled_from(CONSTANTS))
        if parts[-1].startswith("["):
            parts[-1] = parts[-1].split("+")[0].rstrip("]") + f"+{c}]"
        else:
            parts[-1] = c
        ops = ", ".join(parts) + ";"
    return f"{opc}.{'.'.join(quals)} {ops}"


@st.composite
def instruction_texts(draw):
    pick = draw(st.integers(0, 9))
    if pick == 0:
        return draw(st.text(max_size=120))
    if pick < 5:
        return draw(mutated_texts())
    quals = draw(st.lists(st.sampled_from(QUALS), max_size=10))
    head = ".".join([draw(st.sampled_from(OPCODES))] + quals)
    ops = draw(st.lists(st.sampled_from(OPERANDS) | st.text(max_size=12), max_size=4))
    return head + (" " + ", ".join(ops) if ops else "") + draw(st.sampled_from(["", ";", " ;"]))


@FUZZ
@given(instruction_texts(), st.sampled_from(TARGETS) | st.text(max_size=10))
def test_the_front_end_answers_every_text(text, target):
    _count("front end")
    try:
        ins = ptx.parse(text, target)
    except ptx.PtxError as e:
        assert str(e)
        return
    assert isinstance(ins, ptx.Instr) and ins.form


# -- the model and replay --------------------------------------------------------------------
INTS = (st.integers(-(1 << 70), 1 << 70) | st.sampled_from([0, 16, 32, 2 ** 32 - 16, 2 ** 32, 2 ** 63 - 16, -1])
        | st.integers(0, 4096).map(lambda x: x * 16))
VALUES = INTS | st.floats(allow_nan=True) | st.text(max_size=4) | st.booleans() | st.none()
ROW_FORMS = [f.form for f in forms.FORMS]
TMEM_FORMS = ["tcgen05.ld.sync.aligned.32x32b.x1.b32", "tcgen05.ld.sync.aligned.16x32bx2.x2.b32",
              "tcgen05.st.sync.aligned.16x64b.x1.b32", "tcgen05.st.sync.aligned.16x32bx2.x1.unpack::16b.b32",
              "tcgen05.ld.red.sync.aligned.32x32b.x2.min.u32",
              "tcgen05.cp.cta_group::1.128x256b", "tcgen05.cp.cta_group::2.32x128b.warpx4.b8x16.b4x16_p64",
              "tcgen05.cp.cta_group::1.4x256b [%r1], 0x40004020"]


@st.composite
def records(draw):
    instr = draw(st.sampled_from(ROW_FORMS + TMEM_FORMS) | instruction_texts())
    rec = {"instr": instr}
    if draw(st.booleans()):
        rec["target"] = draw(st.sampled_from(TARGETS))
    addr = draw(st.lists(INTS, min_size=32, max_size=32) | INTS | VALUES | st.lists(VALUES, max_size=33))
    for key, value in (("addr", addr), ("stride", draw(VALUES)), ("taddr", draw(VALUES)),
                       ("warp", draw(VALUES)), ("split", draw(VALUES)), ("desc", draw(VALUES)),
                       ("tmem_cols", draw(st.sampled_from([32, 64, 512, 48, 0, -32]) | VALUES)),
                       ("gmem_base", draw(VALUES))):
        if draw(st.integers(0, 2)):
            rec[key] = value
    for key in ("smem", "gmem", "tmem"):
        if draw(st.integers(0, 2)) == 0:
            rec[key] = draw(st.sampled_from(["", "00", "0", "zz"]) | st.binary(max_size=256).map(bytes.hex))
    if draw(st.booleans()):
        n = draw(st.integers(0, 5))
        rec["regs"] = draw(st.lists(st.lists(st.integers(-1, 1 << 33), min_size=n, max_size=n), min_size=31,
                                    max_size=33) | VALUES)
    if draw(st.integers(0, 3)) == 0:
        rec["expect"] = draw(st.sampled_from([{}, {"error": "x"}, {"wavefronts": 1}, {"regs": []}, [],
                                              {"nonsense": 1}, {"smem": "0"}]))
    return rec


@FUZZ
@given(records(), st.sampled_from(["h200", "packed"]))
def test_replay_answers_every_record(rec, policy):
    """A record is read and run through the model backend: an outcome, or the trace error
    that names its line; never another exception."""
    _count("replay records")
    try:
        recs = list(trace.read([json.dumps(rec)]))     # NaN and infinity as Python writes them
        outcomes = list(trace.run(recs, trace.ModelBackend(policy=policy, smem_bytes=4096)))
    except trace.TraceError as e:
        assert str(e).startswith("line 1: "), e
        return
    assert len(outcomes) == 1
    json.dumps(trace.emitted(outcomes[0]))


@FUZZ
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_the_trace_reader_answers_every_line(line):
    _count("trace lines")
    try:
        list(trace.read([line]))
    except trace.TraceError as e:
        assert str(e).startswith("line 1: "), e


@FUZZ
@given(st.sampled_from(ROW_FORMS), st.lists(VALUES | INTS, min_size=30, max_size=33), VALUES | INTS,
       st.lists(st.lists(VALUES | INTS, min_size=1, max_size=4), min_size=31, max_size=33))
def test_the_model_api_answers_every_operand(form, addr, stride, regs):
    """The model's functions called with any operands: a result or ModelError."""
    _count("model calls")
    ins = ptx.parse(form, "sm_100a")
    smem = np.zeros(2048, np.uint8)
    try:
        if ins.op == "ldmatrix":
            model.ldmatrix(ins, smem, addr)
        elif ins.op == "stmatrix":
            model.stmatrix(ins, smem, addr, regs)
        else:
            model.wmma_load(ins, model.Memory(shared=smem), addr[0], stride)
    except model.ModelError as e:
        assert str(e)


@FUZZ
@given(st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 32) - 1), st.sampled_from(TMEM_FORMS[5:7]))
def test_the_model_answers_every_copy_descriptor(desc, taddr, form):
    _count("copy descriptors")
    ins = ptx.parse(form + " [%r1], %rd1", "sm_100a")
    try:
        model.tcgen05_cp(ins, np.zeros(4096, np.uint8), desc, taddr, cols=512)
    except model.ModelError as e:
        assert str(e)
