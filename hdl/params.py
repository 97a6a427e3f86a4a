"""Validated parameters of the load/store unit."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tensorlsu.sim.model import GROUP_ROWS, SMEM_BYTES

__all__ = ["ASYNC_MEMORY", "Params", "TmemParams", "DEEP_GLOBAL_PORT", "FPGA_GLOBAL_PORT", "PORT_SLICES", "fpga_build", "fpga_params", "Policy", "POLICIES", "MAX_SMEM_BYTES",
           "ROW_BYTES", "ROW_BITS", "GROUP_ROWS", "TMEM_LANES", "TMEM_QUADRANTS"]


class Policy(str, enum.Enum):
    """Bank scheduling policy. A ``str`` enum: ``Policy.H200 == "h200"``."""

    #: The H200's rule: the banks serve one 8-row group (an ``.m8n8`` matrix, half an
    #: ``.m16n16`` one, eight wmma chunks) at a time.
    H200 = "h200"
    #: A packer that mixes every row of an instruction in each cycle (the bound of a unit
    #: with more scheduling freedom than the H200).
    PACKED = "packed"

    def __str__(self):
        return self.value


#: The policies' names, as the command lines take them.
POLICIES = tuple(p.value for p in Policy)
#: Largest shared memory per SM of the architectures the forms come from (228 KiB).
MAX_SMEM_BYTES = SMEM_BYTES
#: Bytes of one matrix row: every ldmatrix / stmatrix row is 16 bytes.
ROW_BYTES = 16
#: Bits of one row (a bank quad's word, a row-buffer slot).
ROW_BITS = 8 * ROW_BYTES
#: Bank line a tcgen05.cp step reads: the eight 16-byte chunks of a core-matrix group, one a
#: bank quad, in one cycle (docs/tcgen05-cp.md); the copy port needs lines of this size.
COPY_LINE_BYTES = 8 * ROW_BYTES
#: The attributes of a memory read asynchronously (an FPGA's LUT RAM): the Verilog emitter leaves it
#: an array with them, where every other memory becomes an SRAM module (hdl/verilog/memories.py).
ASYNC_MEMORY = {"ram_style": "distributed"}
#: Lanes of one Tensor Memory quadrant (and threads of a warp).
TMEM_LANES = 32
#: Lane quadrants of Tensor Memory (warps of a warpgroup).
TMEM_QUADRANTS = 4


#: The kinds of slice on the unit's ports (:attr:`Params.port_slices`, :mod:`tensorlsu.hdl.lib.slice`).
PORT_SLICES = ("registered", "forward")

#: The global port built to hide a memory latency of a few hundred clocks (docs/ports.md):
#: 32 contexts (16 KiB of rows), 32 ids, bursts of 8 beats (a 512-byte pass in one burst).
DEEP_GLOBAL_PORT = {"axi_contexts": 32, "axi_outstanding": 32, "axi_burst": 8}

#: The global port of the FPGA build (:func:`fpga_params`): 128-bit data and two contexts. Two
#: contexts hold about 1 KiB in flight, the port's 16 bytes a clock for 64 clocks of memory
#: latency; the 512-bit port's wide beat selects and four contexts' slot multiplexers cost the
#: ECP5 unit about 8k LUT4 more (docs/log.md).
FPGA_GLOBAL_PORT = {"axi_data_bits": 128, "axi_contexts": 2}


@dataclass(frozen=True)
class TmemParams:
    """Parameters of the Tensor Memory: ``columns`` per lane, a power of two from 32 to 512;
    ``banks`` of a quadrant's memory, 2 (by column parity: four column accesses a step, the
    rates of docs/ARCHITECTURE.md) or 1 (two accesses a step, about half the logic)."""

    columns: int = 512
    banks: int = 2

    def __post_init__(self):
        c = self.columns
        if not isinstance(c, int) or isinstance(c, bool) or c < 32 or c > 512 or c & (c - 1):
            raise ValueError(f"tmem columns must be a power of two from 32 to 512, not {c!r}")
        if self.banks not in (1, 2) or isinstance(self.banks, bool):
            raise ValueError(f"tmem banks must be 1 or 2, not {self.banks!r}")

    @property
    def col_bits(self) -> int:
        return (self.columns - 1).bit_length()


@dataclass(frozen=True)
class Params:
    """Parameters of :class:`~tensorlsu.hdl.lsu.LoadStoreUnit`.

    Parameters
    ----------
    lanes : int
        Threads per warp; the PTX forms are defined for 32.
    banks : int
        Shared-memory banks (a power of two; ``banks * bank_bytes`` a multiple of 16).
    bank_bytes : int
        Width of one bank in bytes (a power of two).
    smem_bytes : int
        Shared-memory size in bytes: a multiple of ``banks * bank_bytes``, at most 228 KiB.
    schedule : Policy or str
        :class:`Policy` (or its name, ``"h200"`` / ``"packed"``).
    tmem_columns : int
        Tensor Memory columns per lane (a power of two, 32 … 512), in four lane quadrants of
        32 lanes; 0 builds the unit without Tensor Memory (the shared-memory path alone).
    tmem_banks : int
        Banks of each quadrant's memory: 2 (by column parity, four column accesses a step) or 1
        (two a step: half the rate of the 16-lane forms and of tcgen05.cp, less logic).
    axi_data_bits : int
        Data width of the global-memory AXI4 read port: 512 (one 64-byte line a beat), 256 or
        128.
    axi_outstanding : int
        Read bursts the global port keeps in flight (1 … 64).
    axi_ids : int
        AXI ids the global port's bursts use in turn: 0 (the default) for one per burst in
        flight, else a power of two that divides ``axi_outstanding`` (the bursts of one id are
        the subordinate's to return in order). The port lands its passes in order, so from a
        memory that interleaves the beats of all bursts it may, fewer ids than bursts keep it
        from starving the oldest pass (docs/ports.md, the global port).
    axi_burst : int
        The most beats of one read burst (1 … 16).
    axi_contexts : int
        Global passes the global port fetches at once (a power of two, 2 … 32): the served
        one and those queued behind it; the pass queue holds as many passes. Each context
        keeps a pass's 32 chunk addresses and 512 bytes of rows, so this is the memory latency
        the port hides: about ``axi_contexts`` × 512 bytes in flight.
    global_base, global_bytes : int
        The global memory wmma.load may read: ``global_base`` … ``+ global_bytes`` in the
        32-bit address space (other addresses are refused, ``OUT_OF_RANGE``); ``global_bytes``
        0 builds the unit without the global port.
    shared_window_base, shared_window_bytes : int
        The shared-memory window of generic addresses: a generic wmma.load address inside it is
        the shared-memory offset ``address - shared_window_base``; any other is global.
    dsp_multipliers : bool
        How the address stage builds a wmma.load's line offsets (line × stride): False, as
        carry-save partial products (standard cells: no multiplier and no carry chain before
        the first register); True, one multiplier a slot, for an FPGA's DSP blocks (the ECP5's
        MULT18X18D), which would otherwise spend LUTs on every full adder. The same cycles either
        way.
    row_buffer_lutram : bool
        How the result stage holds the load row buffer: False, as flip-flops read through a
        multiplexer per window row (standard cells); True, as memories with asynchronous reads
        (an FPGA's LUT RAM, the ECP5's DPR16X4), whose reads are those multiplexers
        (:class:`~tensorlsu.hdl.pipeline.rowbuf.RowBufferMemory`). Needs one landing a cycle
        into a block (the ``"h200"`` policy). The same cycles either way.
    port_slices : str
        The slices on the unit's ports (:mod:`tensorlsu.hdl.lib.slice`): ``"registered"``, every
        port's signals from flip-flops both ways (a block inside an SM); ``"forward"``, the
        ports' valid and payload from flip-flops and each ``ready`` passed through (an FPGA's
        build: half the slices' flip-flops and no multiplexer in front of them). The same
        cycles either way.

    Raises
    ------
    ValueError
        With a message naming the bad parameter.
    """

    lanes: int = 32
    banks: int = 32
    bank_bytes: int = 4
    smem_bytes: int = 16 * 1024
    schedule: Policy = Policy.H200
    tmem_columns: int = 512
    tmem_banks: int = 2
    axi_data_bits: int = 512
    axi_outstanding: int = 4
    axi_ids: int = 0
    axi_burst: int = 4
    axi_contexts: int = 4
    global_base: int = 0
    global_bytes: int = 0xFF00_0000
    shared_window_base: int = 0xFF00_0000
    shared_window_bytes: int = 1 << 24
    dsp_multipliers: bool = False
    row_buffer_lutram: bool = False
    port_slices: str = "registered"

    def __post_init__(self):
        for name in ("lanes", "banks", "bank_bytes", "smem_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, not {v!r}")
        if self.lanes != 32:
            raise ValueError(f"lanes must be 32 (the PTX forms are defined for 32-thread warps), "
                             f"not {self.lanes}")
        if self.banks & (self.banks - 1):
            raise ValueError(f"banks must be a power of two, not {self.banks}")
        if self.bank_bytes & (self.bank_bytes - 1):
            raise ValueError(f"bank_bytes must be a power of two, not {self.bank_bytes}")
        if self.line_bytes % ROW_BYTES:
            raise ValueError(f"banks * bank_bytes must be a multiple of {ROW_BYTES} bytes (one matrix "
                             f"row), not {self.line_bytes}")
        if self.smem_bytes % self.line_bytes:
            raise ValueError(f"smem_bytes must be a multiple of banks * bank_bytes = "
                             f"{self.line_bytes}, not {self.smem_bytes}")
        if self.smem_bytes > MAX_SMEM_BYTES:
            raise ValueError(f"smem_bytes must be at most {MAX_SMEM_BYTES} (228 KiB), "
                             f"not {self.smem_bytes}")
        if self.schedule not in POLICIES:
            raise ValueError(f"schedule must be one of {', '.join(map(repr, POLICIES))}, "
                             f"not {self.schedule!r}")
        object.__setattr__(self, "schedule", Policy(self.schedule))
        c = self.tmem_columns
        if isinstance(c, bool) or not isinstance(c, int) or (c != 0 and (c < 32 or c > 512 or c & (c - 1))):
            raise ValueError(f"tmem_columns must be 0 (no Tensor Memory) or a power of two from 32 "
                             f"to 512, not {c!r}")
        if isinstance(self.tmem_banks, bool) or self.tmem_banks not in (1, 2):
            raise ValueError(f"tmem_banks must be 1 or 2, not {self.tmem_banks!r}")
        if self.copy_port and self.line_bytes != COPY_LINE_BYTES:
            raise ValueError(f"the tcgen05.cp port reads a step's {COPY_LINE_BYTES // ROW_BYTES} chunks of "
                             f"{ROW_BYTES} bytes from {COPY_LINE_BYTES // ROW_BYTES} bank quads at once: it needs "
                             f"banks * bank_bytes = {COPY_LINE_BYTES}, not {self.line_bytes} (build with "
                             "tmem_columns=0 for no copy port)")
        if self.axi_data_bits not in (128, 256, 512):
            raise ValueError(f"axi_data_bits must be 128, 256 or 512, not {self.axi_data_bits!r}")
        for name, most in (("axi_outstanding", 64), ("axi_burst", 16)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= most:
                raise ValueError(f"{name} must be an integer from 1 to {most}, not {v!r}")
        v = self.axi_ids
        if isinstance(v, bool) or not isinstance(v, int) or not (
                v == 0 or (v & (v - 1) == 0 and 0 < v <= self.axi_outstanding and self.axi_outstanding % v == 0)):
            raise ValueError(f"axi_ids must be 0 (one per burst in flight) or a power of two that divides "
                             f"axi_outstanding = {self.axi_outstanding}, not {v!r}")
        v = self.axi_contexts
        if isinstance(v, bool) or not isinstance(v, int) or v not in (2, 4, 8, 16, 32):
            raise ValueError(f"axi_contexts must be a power of two from 2 to 32, not {v!r}")
        for name in ("global_base", "global_bytes", "shared_window_base", "shared_window_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v % 32:
                raise ValueError(f"{name} must be a non-negative multiple of 32, not {v!r}")
        for name in ("global", "shared_window"):
            if getattr(self, f"{name}_base") + getattr(self, f"{name}_bytes") > 1 << 32:
                raise ValueError(f"{name}_base + {name}_bytes must be at most 2**32 (32-bit addresses)")
        if not isinstance(self.dsp_multipliers, bool):
            raise ValueError(f"dsp_multipliers must be True or False, not {self.dsp_multipliers!r}")
        if not isinstance(self.row_buffer_lutram, bool):
            raise ValueError(f"row_buffer_lutram must be True or False, not {self.row_buffer_lutram!r}")
        if self.row_buffer_lutram and self.schedule is not Policy.H200:
            raise ValueError("row_buffer_lutram needs the h200 policy (one landing a cycle into a block), "
                             f"not {self.schedule}")
        if self.port_slices not in PORT_SLICES:
            raise ValueError(f"port_slices must be one of {', '.join(map(repr, PORT_SLICES))}, "
                             f"not {self.port_slices!r}")
        if self.shared_window_bytes < self.smem_bytes:
            raise ValueError(f"shared_window_bytes must be at least smem_bytes = {self.smem_bytes}, "
                             f"not {self.shared_window_bytes}")

    @property
    def tmem(self):
        """The Tensor Memory's parameters, or None without one."""
        return TmemParams(self.tmem_columns, self.tmem_banks) if self.tmem_columns else None

    @property
    def copy_port(self) -> bool:
        """The unit has the tcgen05.cp port: it has Tensor Memory (a copy step writes four
        columns of a quadrant, one per port of its two banks; with one bank, two a cycle)."""
        return self.tmem is not None

    @property
    def axi_id_count(self) -> int:
        """AXI ids of the global port: ``axi_ids``, or one per burst in flight."""
        return self.axi_ids or self.axi_outstanding

    @property
    def axi_id_bits(self) -> int:
        """Width of the AXI ids of the global port."""
        return max(1, (self.axi_id_count - 1).bit_length())

    @property
    def pass_queue_depth(self) -> int:
        """Passes the pass queue holds: as many as the global port's contexts (the served pass
        has left the queue, so all but one of them can be queued behind it), at least 2."""
        return max(2, self.axi_contexts) if self.global_port else 2

    @property
    def global_port(self) -> bool:
        """The unit has the global-memory AXI port."""
        return self.global_bytes > 0

    @property
    def pass_addr_bits(self) -> int:
        """Width of a pass's slot addresses: 32-bit global addresses with the global port,
        shared-memory offsets without."""
        return 32 if self.global_port else self.smem_addr_bits

    @property
    def line_bytes(self) -> int:
        """Bytes all banks deliver in one cycle (128 on the H200)."""
        return self.banks * self.bank_bytes

    @property
    def quads(self) -> int:
        """Groups of banks that hold one 16-byte row."""
        return self.line_bytes // ROW_BYTES

    @property
    def window(self) -> int:
        """Row slots the bank scheduler may mix in one cycle: one 8-row group (an ``.m8n8``
        matrix, half of an ``.m16n16`` one, eight wmma chunks) under ``"h200"``, every slot
        under ``"packed"``. The scheduler, the landing crossbar and the store write crossbar
        are this wide."""
        return GROUP_ROWS if self.schedule is Policy.H200 else self.lanes

    @property
    def windows(self) -> int:
        """Windows of one pass: 4 under ``"h200"``, 1 under ``"packed"``."""
        return self.lanes // self.window

    @property
    def store_direct(self) -> bool:
        """Each stmatrix source beat is exactly one window (``"h200"``): the window is written
        straight from the store stream's payload, which the producer holds until ready.
        Otherwise the beats are kept in a store row buffer until all have arrived."""
        return self.window == GROUP_ROWS

    @property
    def precompare(self) -> bool:
        """The row comparisons of the next window are registered a cycle ahead (a pass has
        several windows: ``"h200"``), so the scheduler only combines them."""
        return self.windows > 1

    @property
    def pass_blocks(self) -> int:
        """Row-buffer blocks of one pass (32 slots)."""
        return self.lanes // GROUP_ROWS

    @property
    def row_bits(self) -> int:
        """Width of a row index within shared memory (quad and line of a 16-byte row)."""
        return self.quad_bits + self.line_bits

    @property
    def quad_bits(self) -> int:
        """Width of a bank-quad index."""
        return max(1, (self.quads - 1).bit_length())

    @property
    def smem_addr_bits(self) -> int:
        """Width of a byte offset within shared memory."""
        return (self.smem_bytes - 1).bit_length()

    @property
    def pair_passes(self) -> bool:
        """The bank stage serves the two passes of a two-pass wmma.load together (``"packed"``):
        the second's rows take the bank quads the first leaves free each cycle, so the fragment
        pays its busiest quad once (:class:`~tensorlsu.hdl.smem.serve.BankStage`)."""
        return self.schedule is Policy.PACKED

    @property
    def ring_passes(self) -> int:
        """Passes the load row buffer holds: three, so that the bank stage fills the next two
        passes while the head's beats still read the last; six when passes are paired, so that
        two 1 KiB fragments' pairs fill while the last one's are read. A pass whose every beat
        reads all of its blocks (a wmma.load accumulator: each register of an ``.f64``
        fragment, or of either half of a 1 KiB one, spans all its rows) frees its blocks only
        at its last beat, some ten cycles after the bank stage began it (its reads, the rows'
        landing ``BankStage.LAND_AFTER`` cycles later, its beats): with fewer passes than that
        round trip spans, the banks would wait on it, slower than the H200 issues these loads
        (docs/log.md)."""
        return 6 if self.pair_passes else 3

    @property
    def row_blocks(self) -> int:
        """Blocks of 8 row slots in the load row buffer (a ring of ``ring_passes`` passes; not a
        power of two, so positions on it wrap by comparison, :mod:`~tensorlsu.hdl.lib.modular`)."""
        return self.ring_passes * self.pass_blocks

    @property
    def entries(self) -> int:
        """Result entries (:class:`~tensorlsu.hdl.pipeline.result.ResultStage`): one emitting,
        one filled and waiting, one filling, and one more, taken while the rows of the one
        before are still on their way from the banks (``BankStage.LAND_AFTER`` cycles: with
        three entries the shortest wmma.load accumulators back to back, two bank cycles each,
        took 2.67 clocks an instruction where the H200 takes 2.07); with paired passes six:
        an entry is busy some six cycles from its take to the cycle after its last beat, and a
        packed ldmatrix .x1 with no conflict issues one a clock only if six are in flight
        (docs/log.md); six also hold two pairs while the next pair is taken
        (with four, the pair waited for the last beat of the one before). An entry is taken only
        the cycle after its previous instruction gave its last beat, so the take (and all of
        the bank stage) depends on no result handshake of the same cycle."""
        return 6 if self.pair_passes else 4

    @property
    def lines(self) -> int:
        """Depth of each bank."""
        return self.smem_bytes // self.line_bytes

    @property
    def line_bits(self) -> int:
        """Width of a line index (within each bank)."""
        return max(1, (self.lines - 1).bit_length())


def fpga_build(schedule: str = "h200") -> dict:
    """The FPGA build's parameters (``make synth``'s ECP5 blocks, ``make verilog FPGA=1``): the
    address stage's line offsets on DSP multipliers, the load row buffer in LUT RAM (under
    ``h200``, which lands one block a cycle), forward port slices and :data:`FPGA_GLOBAL_PORT`."""
    return {"dsp_multipliers": True, "row_buffer_lutram": schedule == "h200", "port_slices": "forward",
            **FPGA_GLOBAL_PORT}


def fpga_params(schedule: Policy | str = "h200", **kwargs) -> Params:
    """:func:`fpga_build`'s :class:`Params`; ``kwargs`` set any other parameter or override it."""
    return Params(schedule=Policy(schedule), **{**fpga_build(schedule), **kwargs})
