"""ptx.parse: forms of the PTX texts, and the exact refusals for forms they forbid.

Expected values come from the PTX ISA 9.0 texts (syntax, Table 49, Target ISA notes).
"""

import pytest
from tensorlsu.sim import ptx
from tensorlsu.sim.ptx import PtxError, parse


def test_descriptor_is_frozen_hashable_and_order_free():
    a = parse("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {r0,r1,r2,r3}, [p];", "sm_90a")
    b = parse("ldmatrix.sync.aligned.x4.m8n8.trans.shared.b16 {r0,r1,r2,r3}, [p];", "sm_90a")
    assert a.form == b.form == "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
    assert (a.shape, a.num, a.trans, a.space, a.type, a.nregs) == ("m8n8", 4, True, "shared", "b16", 4)
    assert a == b and len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.num = 2


def test_state_spaces_are_equivalent_or_generic():
    s = parse("ldmatrix.sync.aligned.m8n8.x1.shared.b16", "sm_90a")
    c = parse("ldmatrix.sync.aligned.m8n8.x1.shared::cta.b16", "sm_90a")
    g = parse("ldmatrix.sync.aligned.m8n8.x1.b16", "sm_90a")
    assert s == c and g.space == "generic"


def test_text_round_trips():
    for text in ["ldmatrix.sync.aligned.m16n16.x2.trans.shared::cta.b8x16.b6x16_p32 {d0, d1, d2, d3}, [addr];",
                 "stmatrix.sync.aligned.m16n8.x4.trans.b8 [addr], {r0, r1, r2, r3};",
                 "wmma.load.a.sync.aligned.row.m8n8k4.shared.f64 {x0}, [ptr], 8;",
                 "tcgen05.ld.red.sync.aligned.16x32bx2.x8.u32.max {r0, r1, r2, r3, r4, r5, r6, r7}, redVal, [taddr3], 16;"]:
        ins = parse(text, "sm_103a")
        assert parse(ins.text, "sm_103a").form == ins.form


@pytest.mark.parametrize("text,nregs", [
    ("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8", 2),
    ("ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8", 4),
    ("ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b4x16_p64", 4),
    ("stmatrix.sync.aligned.m16n8.x2.trans.shared.b8", 2),
    ("wmma.load.a.sync.aligned.row.m16n16k16.f16", 8),
    ("wmma.load.a.sync.aligned.row.m8n32k16.bf16", 2),
    ("wmma.load.b.sync.aligned.col.m8n32k16.s8", 4),
    ("wmma.load.c.sync.aligned.col.m8n8k4.f64", 2),
    ("wmma.load.a.sync.aligned.row.m8n8k32.s4", 1),
    ("tcgen05.ld.sync.aligned.16x256b.x32.b32", 128),
    ("tcgen05.ld.sync.aligned.16x128b.x64.b32", 128),
    ("tcgen05.ld.sync.aligned.32x32b.x128.pack::16b.b32", 128),
    ("tcgen05.st.sync.aligned.16x256b.x32.b32", 128),
    ("tcgen05.st.sync.aligned.16x128b.x4.unpack::16b.b32", 8),
    ("tcgen05.st.sync.aligned.16x32bx2.x128.b32", 128),
])
def test_register_counts(text, nregs):
    assert parse(text, "sm_100a").nregs == nregs


@pytest.mark.parametrize("text,target,message", [
    ("ldmatrix.sync.aligned.m16n16.x1.shared.b8", "sm_100a", ".trans is mandatory with .m16n16"),
    ("ldmatrix.sync.aligned.m16n16.x4.trans.b8", "sm_100a", ".m16n16 takes .x1 or .x2 only"),
    ("ldmatrix.sync.aligned.m8n16.x1.trans.b8x16.b6x16_p32", "sm_100a", ".trans is not allowed with .m8n16"),
    ("ldmatrix.sync.aligned.m8n16.x1.b8", "sm_100a", ".m8n16 needs the formats"),
    ("ldmatrix.sync.aligned.m8n16.x1.b6x16_p32.b8x16", "sm_100a", "illegal format pair"),
    ("ldmatrix.sync.aligned.m8n8.x1.b8", "sm_100a", ".m8n8 takes type .b16"),
    ("ldmatrix.sync.aligned.m8n8.x3.b16", "sm_100a", "illegal qualifier .x3"),
    ("ldmatrix.sync.aligned.m8n8.x8.b16", "sm_100a", "illegal .num .x8"),
    ("ldmatrix.sync.m8n8.x1.b16", "sm_90a", "mandatory .aligned qualifier is missing"),
    ("ldmatrix.sync.aligned.m8n8.x1.global.b16", "sm_90a", "state space .global is not allowed"),
    ("ldmatrix.sync.aligned.m8n8.x2.b16 {r0}, [p]", "sm_90a", "needs 2 register(s) in the vector, got 1"),
    ("ldmatrix.sync.aligned.m8n8.x1.trans.trans.b16", "sm_90a", ".trans given 2 times"),
    ("ldmatrix.sync.aligned.m16n16.x1.trans.b8", "sm_90a", "not supported on target sm_90a"),
    ("ldmatrix.sync.aligned.m8n8.x1.b16", "sm_72", "not supported on target sm_72 (needs sm_75"),
    ("stmatrix.sync.aligned.m16n8.x1.shared.b8", "sm_100a", ".trans is mandatory with .m16n8"),
    ("stmatrix.sync.aligned.m16n8.x1.trans.b16", "sm_100a", ".m16n8 takes type .b8 only"),
    ("stmatrix.sync.aligned.m8n8.x1.b16", "sm_89", "stmatrix is not supported on target sm_89"),
    ("stmatrix.sync.aligned.m8n8.x1.b16 {r0}, [p]", "sm_90a", "expected an address operand"),
    ("wmma.load.a.sync.aligned.col.m8n8k32.s4", "sm_90a", "sub-byte .s4 takes layout .row only"),
    ("wmma.load.b.sync.aligned.row.m8n8k128.b1", "sm_90a", "sub-byte .b1 takes layout .col only"),
    ("wmma.load.c.sync.aligned.row.m16n16k8.f16", "sm_90a", "type .f16 is not allowed with .m16n16k8"),
    ("wmma.load.a.sync.aligned.row.m16n16k16.bf16", "sm_75", "needs sm_80"),
    ("wmma.load.a.sync.aligned.m16n16k16.f16", "sm_90a", "layout qualifier .row or .col is missing"),
    ("wmma.load.a.sync.aligned.row.m16n16k16.local.f16", "sm_90a", "state space .local is not allowed"),
    ("wmma.load.d.sync.aligned.row.m16n16k16.f16", "sm_90a", "illegal matrix .d"),
    ("tcgen05.ld.sync.aligned.16x256b.x64.b32", "sm_100a", "not a valid combination"),
    ("tcgen05.ld.sync.aligned.16x128b.x128.b32", "sm_100a", "not a valid combination"),
    ("tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {r0}, [t]", "sm_100a", "takes 3 operands"),
    ("tcgen05.ld.sync.aligned.32x32b.x1.b32 {r0}, [t], 16", "sm_100a", "takes 2 operands"),
    ("tcgen05.ld.red.sync.aligned.32x32b.x1.min.f32", "sm_103a", ".red needs .num of at least .x2"),
    ("tcgen05.ld.red.sync.aligned.32x32b.x2.min.abs.u32", "sm_103a", ".abs need type .f32"),
    ("tcgen05.ld.red.sync.aligned.16x64b.x2.min.f32", "sm_103a", ".red is allowed with .32x32b and .16x32bx2 only"),
    ("tcgen05.ld.red.sync.aligned.32x32b.x2.f32", "sm_103a", ".red needs a reduction .min or .max"),
    ("tcgen05.ld.sync.aligned.32x32b.x2.abs.b32", "sm_103a", ".abs and .NaN are allowed only with .red"),
    ("tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32", "sm_100a", "tcgen05.ld.red is not supported on target sm_100a"),
    ("tcgen05.ld.sync.aligned.32x32b.x2.b32", "sm_120a", "tcgen05.ld is not supported on target sm_120a"),
    ("tcgen05.ld.sync.aligned.32x32b.x2.b32", "sm_103", "not supported on target sm_103 "),
    ("tcgen05.ld.sync.aligned.32x32b.x2.f32", "sm_100a", "takes .b32"),
    ("tcgen05.mma.cta_group::1.kind::f16", "sm_100a", "unknown instruction"),
    ("tcgen05.st.sync.aligned.32x32b.x2.pack::16b.b32", "sm_100a", "takes .unpack::16b"),
    ("tcgen05.ld.sync.aligned.32x32b.x2.unpack::16b.b32", "sm_100a", "takes .pack::16b"),
    ("tcgen05.st.red.sync.aligned.32x32b.x2.min.u32", "sm_103a", "tcgen05.st has no reduction"),
    ("tcgen05.st.sync.aligned.32x32b.x2.min.u32", "sm_103a", "tcgen05.st has no reduction"),
    ("tcgen05.st.sync.aligned.32x32b.x2.u32", "sm_100a", "takes .b32"),
    ("tcgen05.st.sync.aligned.16x256b.x64.b32", "sm_100a", "not a valid combination"),
    ("tcgen05.st.sync.aligned.16x32bx2.x2.b32 [t], {r0, r1}", "sm_100a", "takes 3 operands"),
    ("tcgen05.st.sync.aligned.32x32b.x2.b32 {r0, r1}, [t]", "sm_100a", "expected an address operand"),
    ("tcgen05.st.sync.aligned.32x32b.x2.b32 [t], {r0, r1, r2}", "sm_100a", "needs 2 register(s)"),
    ("tcgen05.st.sync.aligned.32x32b.x2.b32", "sm_90a", "tcgen05.st is not supported on target sm_90a"),
    ("tcgen05.st.sync.aligned.32x32b.x2.b32", "sm_120a", "tcgen05.st is not supported on target sm_120a"),
    ("ldmatrix.sync.aligned.m8n8.x1.b16", "sm_99", "unknown target"),
    ("ldmatrix.sync.aligned.m8n8.x1.b16", "sm_89a", "takes no 'a' suffix"),
    ("ldmatrix.sync.aligned.m8n8.x1.b16", "compute_90", "is not of the form"),
    # tcgen05.cp
    ("tcgen05.cp.128x256b [t], d;", "sm_100a", "mandatory .cta_group"),
    ("tcgen05.cp.cta_group::1 [t], d;", "sm_100a", "shape qualifier is missing"),
    ("tcgen05.cp.cta_group::1.64x128b [t], d;", "sm_100a", "needs a multicast qualifier (.warpx2::02_13 or .warpx2::01_23)"),
    ("tcgen05.cp.cta_group::1.32x128b.warpx2::02_13 [t], d;", "sm_100a", ".warpx2::02_13 is not allowed with .32x128b (it takes .warpx4)"),
    ("tcgen05.cp.cta_group::1.4x256b.warpx4 [t], d;", "sm_100a", "(it takes no multicast)"),
    ("tcgen05.cp.cta_group::1.128x256b.b8x16 [t], d;", "sm_100a", "decompression needs both formats"),
    ("tcgen05.cp.cta_group::1.128x256b.b6x16_p32.b8x16 [t], d;", "sm_100a", "comes before the source format"),
    ("tcgen05.cp.cta_group::1.128x256b.b8x16.b6x16_p32.b4x16_p64 [t], d;", "sm_100a", "more than one source format"),
    ("tcgen05.cp.cta_group::1.cta_group::2.128x256b [t], d;", "sm_100a", "more than one .cta_group"),
    ("tcgen05.cp.sync.aligned.cta_group::1.128x256b [t], d;", "sm_100a", "illegal qualifier .sync"),
    ("tcgen05.cp.cta_group::1.128x256b.shared [t], d;", "sm_100a", "illegal qualifier .shared"),
    ("tcgen05.cp.cta_group::1.256x128b [t], d;", "sm_100a", "illegal qualifier .256x128b"),
    ("tcgen05.cp.cta_group::1.128x256b [t];", "sm_100a", "takes 2 operands"),
    ("tcgen05.cp.cta_group::1.128x256b [t-16], d;", "sm_100a", "expected a Tensor Memory address"),
    ("tcgen05.cp.cta_group::1.128x256b [t], [d];", "sm_100a", "s-desc must be a 64-bit register or an immediate"),
    ("tcgen05.cp.cta_group::1.128x256b [t], 0x10000000000000000;", "sm_100a", "does not fit 64 bits"),
    ("tcgen05.cp.cta_group::1.128x256b [t], d;", "sm_90a", "not supported on target sm_90a"),
    ("tcgen05.cp.cta_group::1.128x256b [t], d;", "sm_120a", "not supported on target sm_120a"),
])
def test_refusals_name_the_problem(text, target, message):
    with pytest.raises(PtxError) as e:
        parse(text, target)
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)


def test_half_split_operand():
    ins = parse("tcgen05.ld.sync.aligned.16x32bx2.x2.b32 {r0, r1}, [t], 0x10;", "sm_100a")
    assert ins.split == 16
    with pytest.raises(PtxError, match="immHalfSplitoff must be an integer immediate"):
        parse("tcgen05.ld.sync.aligned.16x32bx2.x2.b32 {r0, r1}, [t], r5;", "sm_100a")


def test_tcgen05_st_operands_and_order():
    ins = parse("tcgen05.st.sync.aligned.16x32bx2.x2.unpack::16b.b32 [t], 32, {r0, r1};", "sm_100a")
    assert (ins.op, ins.split, ins.pack, ins.nregs, ins.is_load) == ("tcgen05.st", 32, True, 2, False)
    assert parse(ins.text, "sm_100a") == parse(ins.text, "sm_100a")
    assert parse(ins.text, "sm_100a").form == ins.form
    other = parse("tcgen05.st.x2.unpack::16b.aligned.16x32bx2.sync.b32 [t], 32, {r0, r1};", "sm_100a")
    assert other.form == ins.form
    for ok in ("sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f", "sm_101a"):
        parse("tcgen05.st.sync.aligned.32x32b.x1.b32", ok)
    for bad in ("sm_90a", "sm_100", "sm_120a", "sm_120f"):
        with pytest.raises(PtxError, match="tcgen05.st is not supported"):
            parse("tcgen05.st.sync.aligned.32x32b.x1.b32", bad)


def test_family_targets_and_rename():
    text = "ldmatrix.sync.aligned.m16n16.x1.trans.b8"
    for ok in ("sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f", "sm_120a",
               "sm_120f", "sm_121a", "sm_121f", "sm_101a", "sm_101f"):
        parse(text, ok)
    for bad in ("sm_90a", "sm_100", "sm_103", "sm_120", "sm_121"):
        with pytest.raises(PtxError):
            parse(text, bad)
    assert parse(text, "sm_101a").target == "sm_110a"
    # tcgen05.ld.red: sm_103f family and sm_110, not sm_100a/f
    red = "tcgen05.ld.red.sync.aligned.32x32b.x2.max.s32"
    for ok in ("sm_103a", "sm_103f", "sm_110a", "sm_110f", "sm_101a"):
        parse(red, ok)
    for bad in ("sm_100a", "sm_100f", "sm_120a"):
        with pytest.raises(PtxError):
            parse(red, bad)
    assert ptx.parse_target("sm_100a").has_family(100)


# ---- tcgen05.cp ---------------------------------------------------------------------------

def test_tcgen05_cp_fields_and_order():
    a = parse("tcgen05.cp.cta_group::1.32x128b.warpx4.b8x16.b4x16_p64 [taddr+32], sdesc;")
    b = parse("tcgen05.cp.b8x16.warpx4.cta_group::1.b4x16_p64.32x128b [taddr+32], sdesc;")
    assert a.form == b.form == "tcgen05.cp.cta_group::1.32x128b.warpx4.b8x16.b4x16_p64"
    assert (a.shape, a.cta_group, a.multicast, a.dst_fmt, a.src_fmt, a.offset, a.taddr, a.desc) == \
        ("32x128b", 1, "warpx4", "b8x16", "b4x16_p64", 32, None, None)
    assert not a.is_load and a.nregs == 0
    c = parse("tcgen05.cp.cta_group::2.128x256b [64], 0x4000000000000010;", "sm_110f")
    assert (c.cta_group, c.taddr, c.offset, c.desc) == (2, 64, 0, 0x4000000000000010)
    assert parse(a.text).form == a.form
    # the text's negative offset: written as +-16, as the assembler takes it
    assert parse("tcgen05.cp.cta_group::1.128x128b [t+-16], d;").offset == -16


