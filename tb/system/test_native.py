# amaranth: UnusedElaboratable=no
"""The native harness (cosim/native): what it adds to the cocotb bench's jobs, and how it fails.

The jobs themselves run through both engines in test_lsu_rtl.py and test_tmem_rtl.py; here,
the AXI memory's latency and ordering, a stalled port named, and the host's packing of a
burst's instructions and reading of its result beats, all at once.
"""

import random
import threading

import cute
import gemm
import numpy as np
import pytest
from tensorlsu.cosim import native, runner
from tensorlsu.cosim.layout import GMEM_AT
from tensorlsu.cosim.native import DECERR_AT, AxiMemory
from tensorlsu.cosim.runner import run_jobs
from tensorlsu.hdl.codes import Error, Space
from tensorlsu.hdl.params import DEEP_GLOBAL_PORT, Params
from tensorlsu.hdl.pipeline import forms
from tensorlsu.sim import model, ptx

A = ptx.parse("wmma.load.a.sync.aligned.row.m16n16k16.global.f16", "sm_90a")


def _fragments(n: int, image: bytes) -> list[dict]:
    """One fragment of A alone (with the global image), then ``n``, each 512 bytes after the
    one before, back to back."""
    burst = [{"form": forms.form_id(A), "addr": GMEM_AT + 512 * k, "stride": 16, "space": Space.GLOBAL.value}
             for k in range(n)]
    return [dict(burst[0], gmem=image.hex(), gmem_at=GMEM_AT), {"burst": burst}]


@pytest.mark.parametrize("latency", [1, 60])
def test_axi_latency_is_the_memorys(latency):
    """A global fragment's results come no sooner than the memory's latency after the
    instruction is taken, and carry the data whatever the latency and the order of beats."""
    image = bytes((7 * i + 3) % 256 for i in range(512 * 6))
    results, _ = run_jobs(_fragments(6, image), sim="verilator", axi=AxiMemory(latency=latency, pause=0.2))
    one = results[0]
    assert one["done"] - one["accepted"] > latency
    mem = model.Memory(global_=image, global_base=GMEM_AT)
    for k, res in enumerate(results[1]["burst"]):
        want = model.wmma_load(A, mem, GMEM_AT + 512 * k, 16)
        assert res["error"] == 0 and [list(x) for x in zip(*res["beats"])] == want.tolist()


def test_axi_latency_costs_throughput_beyond_what_is_in_flight():
    """At 200 clocks of latency the port's throughput is what it keeps in flight a round trip,
    far below a beat a clock (8 clocks a 512-byte fragment; bench: the latency table)."""
    image = bytes(512 * 16)
    fast, _ = run_jobs(_fragments(16, image), sim="verilator", axi=AxiMemory(latency=2))
    slow, _ = run_jobs(_fragments(16, image), sim="verilator", axi=AxiMemory(latency=200))

    def clk_per_fragment(res):
        b = res[1]["burst"]
        return (b[-1]["done"] - b[0]["done"]) / (len(b) - 1)
    assert clk_per_fragment(fast) < 20 < 60 < clk_per_fragment(slow)


def test_more_contexts_hide_the_latency_they_cover():
    """Eight contexts and eight ids of 8-beat bursts keep 64 beats in flight: at 40 clocks of
    latency (a memory answering in order) a 512-byte fragment every 8 clocks, a beat a clock,
    where two contexts give one every round trip; every fragment carries its data."""
    image = bytes((5 * i + 1) % 256 for i in range(512 * 24))
    port = {"axi_contexts": 8, "axi_outstanding": 8, "axi_burst": 8}
    deep, _ = run_jobs(_fragments(24, image), sim="verilator", axi=AxiMemory(latency=40, reorder=False), params=port)
    two, _ = run_jobs(_fragments(24, image), sim="verilator", axi=AxiMemory(latency=40, reorder=False),
                      params={"axi_contexts": 2})

    def clk_per_fragment(res):
        b = res[1]["burst"]
        return (b[-1]["done"] - b[0]["done"]) / (len(b) - 1)
    assert clk_per_fragment(deep) <= 8.25 and clk_per_fragment(two) > 20
    mem = model.Memory(global_=image, global_base=GMEM_AT)
    for k, res in enumerate(deep[1]["burst"]):
        want = model.wmma_load(A, mem, GMEM_AT + 512 * k, 16)
        assert res["error"] == 0 and [list(x) for x in zip(*res["beats"])] == want.tolist()


def test_two_ids_keep_an_interleaving_memory_at_a_beat_a_clock():
    """The deep port (32 contexts, 32 bursts of 8 beats in flight) at 200 clocks of latency,
    from the harness's memory that answers each beat from any due burst that is the oldest of
    its id: with an id per burst it starves the oldest pass, which lands first (about 0.75 beats
    a clock, reports/bench.md); with its bursts on two ids in turn, a 512-byte fragment every 8
    clocks, a beat a clock; every fragment carries its data."""
    image = bytes((3 * i + 7) % 256 for i in range(512 * 64))
    port = {**DEEP_GLOBAL_PORT, "axi_ids": 2}
    res, _ = run_jobs(_fragments(64, image), sim="verilator", axi=AxiMemory(latency=200, reorder=True), params=port)
    b = res[1]["burst"]
    assert (b[-1]["done"] - b[0]["done"]) / (len(b) - 1) <= 8.1
    mem = model.Memory(global_=image, global_base=GMEM_AT)
    for k, r in enumerate(b):
        want = model.wmma_load(A, mem, GMEM_AT + 512 * k, 16)
        assert r["error"] == 0 and [list(x) for x in zip(*r["beats"])] == want.tolist()


def test_reads_where_no_subordinate_is_answer_decerr():
    """The harness's address space past DECERR_AT answers DECERR (cocotbext-axi's AxiRam has no
    such answer); the unit refuses the instruction with it and goes on."""
    job = {"form": forms.form_id(A), "addr": DECERR_AT + 4096, "stride": 16, "space": Space.GLOBAL.value}
    ok = dict(job, addr=GMEM_AT, gmem=bytes(512).hex(), gmem_at=GMEM_AT)
    results, _ = run_jobs([job, ok], sim="verilator")
    assert [r["error"] for r in results] == [Error.DECERR.value, Error.NONE.value]
    assert len(results[0]["beats"]) == 8 and not any(any(b) for b in results[0]["beats"])


def test_a_stalled_port_is_named():
    """An stmatrix whose source beat never comes: the harness stops with the port that waited."""
    st = ptx.parse("stmatrix.sync.aligned.m8n8.x1.shared.b16", "sm_90a")
    job = {"form": forms.form_id(st), "addr": [16 * t for t in range(32)], "store": []}
    with pytest.raises(RuntimeError, match="result: no valid in 20000 cycles"):
        run_jobs([job], sim="verilator")


def test_the_gemm_streams_tiles_are_cutes_swizzle():
    """tb/gemm.py's tile addresses are CuTe's Swizzle<3,4,3> of the row-major 128-byte-row
    address (tb/cute.py), and each of its ldmatrix.x4 touches every bank quad once a row set."""
    for base in (0, gemm.TILE, 3 * gemm.TILE):
        for r in range(128):
            for c in range(8):
                assert gemm.swizzled(base, r, c) == cute.swizzle(base + 128 * r + 16 * c, 3)
    ins = gemm.LDSM
    for slab in range(8):
        for k in range(4):
            assert model.wavefronts(ins, gemm.ldsm_rows(0, slab, k)) == 4   # conflict-free


def test_result_beats_are_put_in_register_order_for_all_instructions_at_once():
    """The host's one-pass ordering of result beats (native._in_register_order) against
    instructions made here with their beats shuffled: each instruction's registers 0..n-1 in
    order, beats that name none dropped beside named ones and kept when none is named; a beat
    naming two registers, a register named twice or one missing: no order (the beat-by-beat
    reading then names the fault)."""
    rng = np.random.default_rng(5)
    masks, last, want = [], [], []
    for _ in range(300):
        n = int(rng.integers(0, 5))            # 0: a refusal's beat, naming no register
        beats = [1 << r for r in range(n)] + [0] * (int(rng.integers(0, 3)) if n else 1 + int(rng.integers(0, 3)))
        rng.shuffle(beats)
        at = len(masks)
        masks += beats
        last.append(len(masks) - 1)
        want += ([at + beats.index(1 << r) for r in range(n)] if n else list(range(at, len(masks))))
    order, ends = native._in_register_order(np.array(last), np.array(masks, dtype=np.int64))
    assert order.tolist() == want
    assert ends[-1] == len(want) and len(ends) == len(last)
    for bad in ([0b11, 0], [1, 1], [1, 4]):
        assert native._in_register_order(np.array([1]), np.array(bad, dtype=np.int64)) is None


def test_instructions_packed_all_at_once_are_packed_one_by_one():
    """Layout.pack_instrs (a burst's instructions in one pass) against Layout.pack_instr (each
    alone, the cocotb bench's): row lists, one wmma address, strides and spaces, and addresses
    past the operand (clamped to its last value)."""
    lay = runner.layout_for(Params())
    rng = random.Random(3)
    words = (lay.form_bits + lay.addr_bits * (lay.lanes + 1) + 31) // 32 + 1
    bursts = [[{"form": rng.randrange(1 << lay.form_bits), "addr": [rng.randrange(1 << 32) for _ in range(32)]}
               for _ in range(20)],
              [{"form": 5, "addr": rng.randrange(1 << 32), "stride": rng.randrange(1 << 16),
                "space": rng.randrange(3)} for _ in range(20)],
              [{"form": 1, "addr": [1 << 40] + [16] * 31, "stride": -1}]]
    for instrs in bursts:
        one_by_one = b"".join(lay.pack_instr(i["form"], i["addr"], i.get("stride", 0), i.get("space", 0))
                              .to_bytes(4 * words, "little") for i in instrs)
        assert lay.pack_instrs(instrs, words) == one_by_one


def test_the_harness_runs_the_first_jobs_while_the_host_makes_the_rest():
    """Jobs given as a generator reach the harness as they are made: the generator stops
    halfway until a result has come back (an engine that read every job first, or held them in
    its buffer, would have none by then)."""
    ld = ptx.parse("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "sm_90a")
    job = {"form": forms.form_id(ld), "addr": [16 * t for t in range(32)]}
    first = threading.Event()
    came_halfway = []

    def jobs(n=2000):
        for k in range(n):
            if k == n // 2:
                came_halfway.append(first.wait(60))
            yield job

    run_jobs(jobs(), sim="verilator", on_result=lambda k, res: first.set())
    assert came_halfway == [True]
