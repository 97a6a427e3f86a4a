"""Bad input of every kind gets its documented error, naming what is wrong, and never a traceback.

Expected values: the documented contracts. ``tensorlsu replay`` exits 2 for a malformed trace
or argument (naming the line), 1 only when an expectation fails; a record whose operands the
unit's ports cannot carry is refused by the check both backends share (README, "Trace
replay"); the model API raises ``ModelError`` (a ValueError) naming the operand; ``tensorlsu
draw`` exits 2 with a message. Each case below was, before, a traceback, a truncation or a
silent wrong answer.
"""

import json

import numpy as np
import pytest
from tensorlsu.cosim import cli
from tensorlsu.sim import model, ptx, trace

LD = "ldmatrix.sync.aligned.m8n8.x1.shared.b16"
ST = "stmatrix.sync.aligned.m8n8.x2.shared.b16"
WMMA = "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16"
TST = "tcgen05.st.sync.aligned.16x32bx2.x1.b32"
TMEM = np.zeros((model.TMEM_LANES, model.TMEM_COLS), np.uint32)


def _replay(tmp_path, capsys, lines, *args):
    """(exit code, stdout + stderr) of a replay of ``lines`` (text, or bytes written as is)."""
    p = tmp_path / "t.jsonl"
    if isinstance(lines, bytes):
        p.write_bytes(lines)
    else:
        p.write_text("\n".join(json.dumps(x) if isinstance(x, dict) else x for x in lines) + "\n")
    rc = cli.main(["replay", str(p), *args])
    out = capsys.readouterr()
    return rc, out.out + out.err


# (what, records, exit code, words the output must hold): each record is refused by name
REFUSED = [
    ("an empty instruction", [{"instr": ""}], "empty instruction text"),
    ("row addresses near 2^63", [{"instr": LD, "addr": [2 ** 63 - 16] * 32}],
     "row address of thread 0 0x7ffffffffffffff0 is outside 0 … 2^32 - 1"),
    ("a row address of 2^70", [{"instr": LD, "addr": [2 ** 70] * 32}], "0x400000000000000000 is outside"),
    ("a negative row address", [{"instr": LD, "addr": [-16] + [0] * 31}], "-0x10 is outside 0 … 2^32 - 1"),
    ("a row address of 2^32", [{"instr": LD, "addr": [2 ** 32] * 32}], "0x100000000 is outside"),
    ("a stride of 2^60", [{"instr": WMMA, "addr": 0, "stride": 2 ** 60}], "stride 0x1000000000000000 is outside"),
    ("a stride of 2^32 + 16", [{"instr": WMMA, "addr": 0, "stride": 2 ** 32 + 16}], "stride 0x100000010 is outside"),
    ("a stride of 2^70", [{"instr": WMMA, "addr": 0, "stride": 2 ** 70}], "stride 0x400000000000000000 is"),
    ("a shared matrix address of 2^32", [{"instr": WMMA, "addr": 2 ** 32}], "shared matrix address"),
    ("a split of 2^70", [{"instr": TST, "taddr": 0, "warp": 0, "split": 2 ** 70}], "immHalfSplitoff"),
    ("a taddr of 2^40", [{"instr": TST, "taddr": 2 ** 40, "warp": 0, "split": 4}], "taddr 0x10000000000 is outside"),
    ("an empty smem image", [{"instr": LD, "addr": [0] * 32, "smem": ""}], "'smem' is an empty image"),
    ("no registers a thread", [{"instr": ST, "addr": [16 * t for t in range(32)], "regs": [[]] * 32}],
     "'regs' gives 0 words a thread; stmatrix.sync.aligned.m8n8.x2.shared.b16 stores 2"),
    ("an extra register word", [{"instr": ST, "addr": [16 * t for t in range(32)], "regs": [[1, 2, 3]] * 32}],
     "'regs' gives 3 words a thread"),
]


@pytest.mark.parametrize("what,records,words", REFUSED, ids=[c[0] for c in REFUSED])
def test_a_refused_record_names_why(tmp_path, capsys, what, records, words):
    rc, out = _replay(tmp_path, capsys, records)
    assert rc == 1 and "Traceback" not in out
    assert words in out, out
    # as an expected refusal, the record passes
    rc, out = _replay(tmp_path, capsys, [dict(r, expect={"error": words}) for r in records])
    assert rc == 0, out


MALFORMED = [
    ("a 5,000-digit integer row", ['{"instr": "x", "addr": [' + "9" * 5000 + "]}"], "line 1: not a trace record"),
    ("a line of 100,000 '['", ["[" * 100_000], "line 1: not a trace record (JSON nested too deeply)"),
    ("a 5,000-digit integer", ['{"instr": "x", "addr": ' + "9" * 5000 + "}"], "line 1: not a trace record"),
    ("a non-UTF-8 byte", b'{"instr": "x"}\n{"instr": "\xff"}\n', "line 2: not UTF-8 text (byte 0xff"),
    ("a record without addr", [{"instr": LD}], "line 1: ldmatrix needs 'addr'"),
    ("a float address", [{"instr": WMMA, "addr": 0.5}], "line 1: addr must be an integer, not float"),
    ("a string address", [{"instr": WMMA, "addr": "16"}], "line 1: addr must be an integer, not str"),
    ("row addresses for a wmma.load", [{"instr": WMMA, "addr": [0] * 32}], "line 1: wmma.load takes one matrix"),
]


@pytest.mark.parametrize("what,lines,words", MALFORMED, ids=[c[0] for c in MALFORMED])
@pytest.mark.parametrize("backend", ["model", "rtl"])
def test_a_malformed_trace_exits_2_naming_the_line(tmp_path, capsys, what, lines, words, backend):
    """Both backends: the malformed record stops the replay before any simulation."""
    rc, out = _replay(tmp_path, capsys, lines, "--backend", backend)
    assert rc == 2 and "Traceback" not in out
    assert words in out, out


ARGS = [
    ("--emit naming a folder", lambda d: ["--emit", str(d)], "--emit: "),
    ("--smem-bytes of 10^12", lambda d: ["--smem-bytes", str(10 ** 12)], "shared memory is 1 … 233472 bytes"),
    ("--smem-bytes of 0", lambda d: ["--smem-bytes", "0"], "shared memory is 1"),
    ("--show -1", lambda d: ["--show", "-1"], "-1 is negative"),
]


@pytest.mark.parametrize("what,args,words", ARGS, ids=[c[0] for c in ARGS])
def test_a_bad_argument_exits_2(tmp_path, capsys, what, args, words):
    rec = {"instr": LD, "addr": [0] * 32}
    try:
        rc, out = _replay(tmp_path, capsys, [rec], *args(tmp_path))
    except SystemExit as e:             # argparse's own exit, with its message
        rc, out = e.code, capsys.readouterr().err
    assert rc == 2 and "Traceback" not in out
    assert words in out, out


DRAW = [
    ("--out in a missing folder", ["--out", "/nonexistent/x.svg"], "--out: "),
    ("--addr of 2^64", ["--addr", ",".join([str(2 ** 64)] * 32)], "is outside 0 … 2^32 - 1"),
    ("--addr of 31 addresses", ["--addr", ",".join(["0"] * 31)], "32 thread addresses, not 31"),
]


@pytest.mark.parametrize("what,args,words", DRAW, ids=[c[0] for c in DRAW])
def test_draw_refuses_by_name(capsys, what, args, words):
    assert cli.main(["draw", LD, *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err


MODEL = [
    ("a store register of -1", lambda: model.stmatrix(ST, np.zeros(1024, np.uint8), [16 * t for t in range(32)],
                                                       [[-1, 0]] * 32), "register values must be 32-bit"),
    ("a store register of 2^32", lambda: model.tcgen05_st("tcgen05.st.sync.aligned.32x32b.x1.b32", TMEM, 0, 0,
                                                          [[2 ** 32]] * 32), "register values must be 32-bit"),
    ("a float row address", lambda: model.ldmatrix(LD, np.zeros(1024, np.uint8), [0.5] * 32),
     "addr of thread 0 must be an integer, not float"),
    ("a numeric-string row address", lambda: model.ldmatrix(LD, np.zeros(1024, np.uint8), ["16"] * 32),
     "must be an integer, not str"),
    ("a stride of 2^60", lambda: model.wmma_load(WMMA, model.Memory(shared=bytes(4096)), 0, 2 ** 60),
     "stride 0x1000000000000000 is outside 0 … 2^32 - 1"),
    ("a float stride", lambda: model.wmma_load(WMMA, model.Memory(shared=bytes(4096)), 0, 16.0),
     "stride must be an integer, not float"),
    ("a split of 2^70", lambda: model.tcgen05_ld("tcgen05.ld.sync.aligned.16x32bx2.x1.b32", TMEM, 0, 0, 2 ** 70),
     "immHalfSplitoff 0x400000000000000000 is outside -2^31 … 2^31 - 1"),
    ("a warp of 0.5", lambda: model.tcgen05_ld("tcgen05.ld.sync.aligned.32x32b.x1.b32", TMEM, 0, 0.5),
     "warp index must be an integer"),
    ("a bool address", lambda: model.ldmatrix(LD, np.zeros(1024, np.uint8), [True] * 32), "not bool"),
]


@pytest.mark.parametrize("what,call,words", MODEL, ids=[c[0] for c in MODEL])
def test_the_model_refuses_by_name(what, call, words):
    with pytest.raises(model.ModelError) as e:
        call()
    assert words in str(e.value)


def test_model_and_rtl_checks_share_one_verdict_before_either_runs():
    """The shared check refuses before the backend: an RTL backend whose simulation would
    fail the test is never asked for these records."""

    class Untouchable:
        name = "rtl"

        def execute_all(self, records):
            assert not records, "a record the shared check refuses reached the backend"
            return []
    recs = list(trace.read([json.dumps(r) for _, rs, _ in REFUSED for r in rs if r["instr"]]))
    for o_model, o_rtl in zip(trace.run(recs, trace.ModelBackend()), trace.run(recs, Untouchable())):
        assert o_model.produced == o_rtl.produced
        assert "error" in o_model.produced


def test_ptx_error_is_a_value_error():
    with pytest.raises(ValueError):
        ptx.parse("")
