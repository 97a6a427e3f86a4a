"""SASS address traces (Accel-Sim's tracer, NVBit's mem_trace): hand-written lines for every
shared opcode and address format (tb/sasslines.py), checked against bank cycles derived there
by hand from the bank rule."""

import json
import re
import subprocess

import ptxgen
import pytest
from tensorlsu.cosim import cli
from tensorlsu.hdl.pipeline import forms
from tensorlsu.sim import model, sass

from sasslines import B8_LINES, B8_ROWS, BASE, CASES, FIRST, SWIZZLED, deltas, listed, trace_text


def costed(text, fmt="auto", base=None):
    return sass.costs(sass.read(text.splitlines(), fmt), base)


@pytest.mark.parametrize("line,opcode,h200,packed", CASES, ids=[c[1] + f"-{i}" for i, c in enumerate(CASES)])
def test_each_shared_opcode_costs_what_the_bank_rule_gives(line, opcode, h200, packed):
    (c,), base = costed(trace_text([line]))
    assert base == BASE and c.error is None and c.access.opcode == opcode
    assert c.cycles == {"h200": h200, "packed": packed}
    assert (c.access.cta, c.access.warp, c.access.kernel) == ((1, 0, 0), 3, "tile")


def test_the_three_address_formats_give_the_same_lanes():
    rows = [BASE + a for a in SWIZZLED]
    as_list = f"0010 ffffffff 1 R4 LDSM.16.M88.4 1 R2 2 {listed(SWIZZLED)}"
    as_deltas = f"0010 ffffffff 1 R4 LDSM.16.M88.4 1 R2 2 {deltas(SWIZZLED)}"
    strided = "0010 ffffffff 1 R4 LDSM.16.M88.4 1 R2 2 1 0x7f0000000000 16"
    got = [next(sass.read(trace_text([x]).splitlines())).addrs for x in (as_list, as_deltas, strided)]
    assert list(got[0]) == rows == list(got[1])
    assert list(got[2]) == [BASE + 16 * t for t in range(32)]


def test_a_partial_mask_leaves_the_inactive_lanes_out():
    a = next(sass.read(trace_text(["0010 0000f0f0 1 R1 LDS 1 R2 4 2 0x7f0000000000 4 4 4 12 4 4 4"]).splitlines()))
    active = [t for t in range(32) if 0xF0F0 >> t & 1]
    assert [t for t, x in enumerate(a.addrs) if x is not None] == active
    assert [a.addrs[t] - BASE for t in active] == [0, 4, 8, 12, 24, 28, 32, 36]


def test_raw_tracer_lines_carry_their_block_and_warp():
    """The tracer's own .trace lines (before post-processing) start with cta x, y, z and warp."""
    line = "2 0 0 5 0010 ffffffff 1 R4 LDSM.16.M88.4 1 R2 2 1 0x7f0000000000 16 0"
    (a,) = sass.read(["-shmem base_addr = 0x00007f0000000000", line])
    assert (a.cta, a.warp, a.pc, a.smem_base) == ((2, 0, 0), 5, 0x10, BASE)


def test_nvbit_mem_trace_lines():
    addrs = " ".join(f"0x{BASE + a:016x}" for a in SWIZZLED)
    lines = ["------------- NVBit (NVidia Binary Instrumentation Tool) Loaded --------------",
             "Kernel tile(float*) - grid size 1,1,1 - block size 32,1,1 - nregs 40 - shmem 16384 - cuda stream id 0",
             f"MEMTRACE: CTX 0x000055d0c0a0b0c0 - grid_launch_id 0 - CTA 0,0,0 - warp 1 - LDSM.16.M88.4 - {addrs}",
             f"CTA 0,0,0 - warp 2 - LDS - {' '.join(['0x0000000000000000'] * 31 + [f'0x{BASE + 4:x}'])}",
             "application output between the lines is skipped"]
    assert sass.detect(lines) == "nvbit"
    (ldsm, lds), base = costed("\n".join(lines))
    assert base == BASE     # no header: the lowest address rounded down to 1 KiB
    assert (ldsm.access.kernel, ldsm.access.warp, ldsm.cycles["h200"]) == ("tile(float*)", 1, 4)
    assert lds.access.mask == 1 << 31 and lds.cycles == {"h200": 1, "packed": 1}


def test_offsets_without_a_base_keep_the_bank_cycles():
    """The inferred base is a multiple of 128 bytes: cycles are those of the true offsets."""
    text = "\n".join(line for line in trace_text([c[0] for c in CASES]).splitlines()
                     if not line.startswith("-shmem base_addr"))
    with_header, _ = costed(trace_text([c[0] for c in CASES]))
    without, base = costed(text)
    assert base == BASE and [c.cycles for c in without] == [c.cycles for c in with_header]
    shifted, base = costed(text, base=BASE - 4096)
    assert base == BASE - 4096 and [c.cycles for c in shifted] == [c.cycles for c in with_header]


@pytest.mark.parametrize("line,why", [
    ("0010 ffffffff 1 R4 LDSM.16.M88.4 1 R2 2 1 0x7f0000000008 16 0", "not 16-byte aligned"),
    ("0010 ffffffff 1 R4 LDS.64 1 R2 8 1 0x7f0000000004 8 0", "not aligned to the 8-byte access"),
    ("0010 ffffffff 1 R4 LDSM.16.M88.8 1 R2 2 1 0x7f0000000000 16 0", "an LDSM variant not known here"),
    ("0010 ffffffff 1 R4 LDS.U.128 1 R2 16 1 0x7f0000000000 16 0", "an LDS variant not known here"),
    ("0010 fffffff7 1 R4 LDSM.16.M88 1 R2 2 1 0x7f0000000000 16 0", "lane 3 inactive"),
    ("0010 ffffffff 1 R4 LDS 1 R2 4 1 0x7e0000000000 4 0", "not in the shared window"),
])
def test_an_access_that_cannot_run_is_refused_by_name(line, why):
    (c,), _ = costed(trace_text([line]))
    assert c.cycles == {} and why in c.error and f"line {FIRST}," in c.error


@pytest.mark.parametrize("line,why", [
    ("0010 ffffffff 1 R4 LDS 1 R2 4 0 0x7f0000000000", "32 active lanes but 1 addresses"),
    ("0010 ffffffff 1 R4 LDS 1 R2 4 7 0x7f0000000000", "address format 7"),
    ("0010 ffffffff 1 R4 LDS 1 R2 4 1 0x7f0000000000", "without its base and stride"),
    ("0010 ffffffff 1 R4 LDS 1 R2", "without its memory width"),
    ("this is no trace line", "not an Accel-Sim trace line"),
])
def test_a_malformed_line_names_its_line(line, why):
    with pytest.raises(sass.SassError, match=why) as e:
        list(sass.read(trace_text([line]).splitlines(), "accelsim"))
    assert f"line {FIRST}:" in str(e.value)


def test_other_instructions_are_counted_not_costed():
    lines = ["0010 ffffffff 1 R4 LDG.E.128 1 R2 16 1 0x7f1000000000 16 0",
             "0020 ffffffff 1 R5 IMAD 2 R1 R2 0 0",
             "0030 ffffffff 1 R4 LDS 1 R2 4 1 0x7f0000000000 4 0"]
    got, _ = costed(trace_text(lines))
    assert [(c.access.opcode, c.op is not None) for c in got] == [("LDG.E.128", False), ("LDS", True)]


def test_the_command_replays_a_sass_trace(tmp_path, capsys):
    path = tmp_path / "kernel-1.traceg"
    path.write_text(trace_text([c[0] for c in CASES]))
    emit = tmp_path / "costs.jsonl"
    assert cli.main(["replay", str(path), "--emit", str(emit)]) == 0
    out = capsys.readouterr().out
    assert "(accelsim): 10 memory instructions, 10 in shared memory" in out
    rows = [json.loads(x) for x in emit.read_text().splitlines()]
    assert [r["wavefronts"] for r in rows] == [{"h200": c[2], "packed": c[3]} for c in CASES]
    # a refused access fails the replay; a file that is no trace at all is bad input
    path.write_text(trace_text([CASES[0][0], "0010 ffffffff 1 R4 LDS.64 1 R2 8 1 0x7f0000000004 8 0"]))
    assert cli.main(["replay", str(path)]) == 1
    assert f"REFUSED line {FIRST + 1}," in capsys.readouterr().out
    # the project's trace options do not apply to a SASS trace: said, not ignored
    assert cli.main(["replay", str(path), "--stream"]) == 2
    assert "--stream applies to the project's traces" in capsys.readouterr().err
    path.write_text("garbage\n")
    assert cli.main(["replay", str(path), "--format", "nvbit"]) == 0     # nothing in it
    assert cli.main(["replay", str(path), "--format", "accelsim"]) == 2
    assert "not an Accel-Sim trace line" in capsys.readouterr().err


def test_the_plain_rule_is_the_wmma_rule():
    """shared_wavefronts phases lanes as the measured wmma.load LDS sequences do: an LDS.64
    of a c.row f32 fragment at a conflict-free stride costs its two phases."""
    assert model.shared_wavefronts(8, [8 * t for t in range(32)]) == 2
    assert model.shared_wavefronts(4, [None] * 32) == 0
    with pytest.raises(model.ModelError, match="1, 2, 4, 8 or 16 bytes"):
        model.shared_wavefronts(32, [0] * 32)


def test_every_ldmatrix_stmatrix_form_has_one_opcode():
    """The 27 forms the unit runs, each under an opcode of its own, and back."""
    texts = sorted(f.form for f in forms.ROW_FORMS)
    assert sorted(sass.LDSM_FORMS.values()) == texts and len(sass.LDSM_FORMS) == 27
    for opcode, text in sass.LDSM_FORMS.items():
        assert sass.sass_opcode(text) == opcode and sass.shared_op(opcode).form == text


def test_ptxas_spells_each_form_as_its_opcode(tmp_path):
    """The compiler as the oracle: every form assembled for sm_100a (a kernel each) and
    disassembled; the LDSM / STSM opcode is the one sass_opcode gives."""
    ptxas = ptxgen.ptxas_path()
    assert ptxas is not None, "ptxas: the oracle extra (make venv) installs it"
    nvdisasm = ptxas.with_name("nvdisasm")
    assert nvdisasm.exists(), "nvdisasm: the oracle extra (make venv) installs it"
    kernels = []
    for k, f in enumerate(forms.ROW_FORMS):
        regs = ", ".join(f"r{1 + j}" for j in range(f.nregs))
        if f.op == "ldmatrix":      # each loaded register stored, so that the load stays
            body = [f"{f.form} {{{regs}}}, [r0];"] + [f"st.global.u32 [rd0+{4 * j}], r{1 + j};" for j in range(f.nregs)]
        else:
            body = [f"ld.global.u32 r{1 + j}, [rd0+{4 * j}];" for j in range(f.nregs)] + [f"{f.form} [r0], {{{regs}}};"]
        kernels.append(f".visible .entry k{k}(.param .u64 p)\n{{\n.reg .b32 r<9>;\n.reg .b64 rd<1>;\n"
                       f".shared .align 16 .b8 s{k}[1024];\nmov.u32 r0, s{k};\nld.param.u64 rd0, [p];\n"
                       + "\n".join(body) + "\nret;\n}\n")
    (tmp_path / "forms.ptx").write_text(".version 9.0\n.target sm_100a\n.address_size 64\n" + "".join(kernels))
    subprocess.run([str(ptxas), "-arch=sm_100a", str(tmp_path / "forms.ptx"), "-o", str(tmp_path / "forms.cubin")],
                   check=True, timeout=300)
    text = subprocess.run([str(nvdisasm), str(tmp_path / "forms.cubin")], capture_output=True, text=True,
                          check=True, timeout=300).stdout
    found = {}
    parts = re.split(r"\.text\.k(\d+):", text)
    for k, body in zip(parts[1::2], parts[2::2]):
        found[int(k)] = re.findall(r"\b((?:LDSM|STSM)\.[A-Za-z0-9._]+)", body)
    assert {k: found.get(k) for k in range(len(forms.ROW_FORMS))} == \
        {k: [sass.sass_opcode(f)] for k, f in enumerate(forms.ROW_FORMS)}


def test_a_b8_opcode_replays_for_sm_100a(tmp_path, capsys):
    """A decompressing LDSM and a .b8 STSM from a trace: their forms need sm_100a, taken as the
    target unless one is given; a target without them is refused by name."""
    path = tmp_path / "kernel-1.traceg"
    path.write_text(trace_text(B8_LINES))
    (ld, st), _ = costed(path.read_text())
    assert ld.op.form == "ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b4x16_p64" and ld.op.target == "sm_100a"
    assert st.op.form == "stmatrix.sync.aligned.m16n8.x2.trans.shared.b8" and st.op.rows == 16
    assert ld.cycles["h200"] == model.wavefronts(ld.op.form, B8_ROWS)
    assert cli.main(["replay", str(path)]) == 0
    capsys.readouterr()
    assert cli.main(["replay", str(path), "--target", "sm_90a"]) == 2
    err = capsys.readouterr().err
    assert f"line {FIRST}" in err and "LDSM.U4x16P64TO8.M816.4" in err and "not supported on target sm_90a" in err
