# amaranth: UnusedElaboratable=no
"""Parameters: each bad one refused with a message naming it (by Params and by the unit), and
the geometry they imply. Expected values: the PTX forms (32-thread warps), the H200's shared
memory (228 KiB, 32 banks of 4 bytes) and the AXI4 limits."""

import pytest
from tensorlsu.hdl.lsu import LoadStoreUnit
from tensorlsu.hdl.params import Params, TmemParams


@pytest.mark.parametrize("kwargs,message", [
    ({"lanes": 16}, "lanes must be 32 (the PTX forms are defined for 32-thread warps), not 16"),
    ({"banks": 24}, "banks must be a power of two, not 24"),
    ({"bank_bytes": 3}, "bank_bytes must be a power of two, not 3"),
    ({"banks": 2}, "banks * bank_bytes must be a multiple of 16 bytes (one matrix row), not 8"),
    ({"smem_bytes": 1000}, "smem_bytes must be a multiple of banks * bank_bytes = 128, not 1000"),
    ({"smem_bytes": 256 * 1024}, "smem_bytes must be at most 233472 (228 KiB), not 262144"),
    ({"schedule": "fifo"}, "schedule must be one of 'h200', 'packed', not 'fifo'"),
    ({"smem_bytes": 0}, "smem_bytes must be a positive integer, not 0"),
    ({"banks": True}, "banks must be a positive integer, not True"),
    ({"tmem_columns": 48}, "tmem_columns must be 0 (no Tensor Memory) or a power of two from 32 to 512, not 48"),
    ({"tmem_columns": 1024}, "tmem_columns must be 0 (no Tensor Memory) or a power of two from 32 to 512, not 1024"),
    ({"axi_data_bits": 64}, "axi_data_bits must be 128, 256 or 512, not 64"),
    ({"axi_outstanding": 0}, "axi_outstanding must be an integer from 1 to 64, not 0"),
    ({"axi_outstanding": 65}, "axi_outstanding must be an integer from 1 to 64, not 65"),
    ({"axi_ids": 3, "axi_outstanding": 12}, "axi_ids must be 0 (one per burst in flight) or a power of two that "
                                            "divides axi_outstanding = 12, not 3"),
    ({"axi_ids": 8}, "axi_ids must be 0 (one per burst in flight) or a power of two that divides "
                     "axi_outstanding = 4, not 8"),
    ({"axi_ids": 4, "axi_outstanding": 6}, "axi_ids must be 0 (one per burst in flight) or a power of two that "
                                           "divides axi_outstanding = 6, not 4"),
    ({"axi_ids": True}, "axi_ids must be 0 (one per burst in flight) or a power of two that divides "
                        "axi_outstanding = 4, not True"),
    ({"axi_contexts": 3}, "axi_contexts must be a power of two from 2 to 32, not 3"),
    ({"axi_contexts": 64}, "axi_contexts must be a power of two from 2 to 32, not 64"),
    ({"axi_burst": 17}, "axi_burst must be an integer from 1 to 16, not 17"),
    ({"dsp_multipliers": 1}, "dsp_multipliers must be True or False, not 1"),
    ({"row_buffer_lutram": "yes"}, "row_buffer_lutram must be True or False, not 'yes'"),
    ({"port_slices": "skid"}, "port_slices must be one of 'registered', 'forward', not 'skid'"),
    ({"row_buffer_lutram": True, "schedule": "packed"},
     "row_buffer_lutram needs the h200 policy (one landing a cycle into a block), not packed"),
    ({"banks": 16}, "the tcgen05.cp port reads a step's 8 chunks of 16 bytes from 8 bank quads at once: it needs "
                    "banks * bank_bytes = 128, not 64 (build with tmem_columns=0 for no copy port)"),
])
def test_parameters_are_validated(kwargs, message):
    with pytest.raises(ValueError) as e:
        Params(**kwargs)
    assert str(e.value) == message
    with pytest.raises(ValueError) as e:
        LoadStoreUnit(**kwargs)
    assert str(e.value) == message


def test_parameter_geometry():
    p = Params(smem_bytes=228 * 1024)
    assert (p.line_bytes, p.quads, p.lines) == (128, 8, 1824)
    # line indices: 1824 lines need 11 bits; the default 16 KiB is 128 lines of 128 bytes (7)
    assert (p.line_bits, Params().line_bits, Params(smem_bytes=128).line_bits) == (11, 7, 1)
    assert Params(banks=64, tmem_columns=0).quads == 16
    # h200 serves one 8-row matrix per cycle (docs/facts.md); a packer mixes all 32 rows
    assert (Params().window, Params(schedule="packed").window) == (8, 32)


@pytest.mark.parametrize("kwargs,message", [
    ({"columns": 48}, "tmem columns must be a power of two from 32 to 512, not 48"),
    ({"columns": 512, "banks": 3}, "tmem banks must be 1 or 2, not 3"),
])
def test_tmem_parameters_are_validated(kwargs, message):
    with pytest.raises(ValueError) as e:
        TmemParams(**kwargs)
    assert str(e.value) == message


def test_the_unit_owns_its_tensor_memory_parameters():
    assert Params().tmem == TmemParams(512, 2)
    assert Params(tmem_columns=64, tmem_banks=1).tmem == TmemParams(64, 1)
    assert Params(tmem_columns=0).tmem is None
    # one AXI id per outstanding burst
    assert [Params(axi_outstanding=n).axi_id_bits for n in (1, 2, 4, 5, 16, 64)] == [1, 1, 2, 3, 4, 6]
    # or fewer ids, each of several bursts in flight
    assert [Params(axi_outstanding=32, axi_ids=n).axi_id_bits for n in (1, 2, 4, 32)] == [1, 1, 2, 5]
    assert Params(axi_outstanding=32, axi_ids=4).axi_id_count == 4 and Params(axi_outstanding=5).axi_id_count == 5
    # the pass queue holds a pass per global context beside the served one
    assert [Params(axi_contexts=n).pass_queue_depth for n in (2, 4, 32)] == [2, 4, 32]
    assert Params(axi_contexts=8, global_bytes=0).pass_queue_depth == 2


@pytest.mark.parametrize("kwargs", [{"banks": 16, "tmem_columns": 0}])
def test_lines_other_than_the_copys_build_without_its_port(kwargs):
    """64-byte bank lines build where there is no copy port (the copy port builds on 128-byte
    lines, as every other test's unit does)."""
    from amaranth.back import rtlil
    unit = LoadStoreUnit(smem_bytes=2048, **kwargs)
    assert not unit.params.copy_port
    rtlil.convert(unit)
