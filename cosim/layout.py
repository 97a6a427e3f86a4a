"""The unit's port payloads as the testbench packs and unpacks them, and where the testbench's
AXI memory lies: plain Python, no RTL import, so that the host side and the cocotb side share
it."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

__all__ = ["Layout", "GMEM_AT", "GMEM_BYTES"]

#: Where the testbench's AXI memory holds a record's global image (its page offset kept).
GMEM_AT = 0x10_0000
#: Bytes of the testbench's AXI memory (reads past it answer SLVERR).
GMEM_BYTES = 0x40_0000


@dataclass(frozen=True)
class Layout:
    """Bit positions of the unit's stream payloads, made from the Amaranth layouts on the host side
    (:func:`tensorlsu.cosim.runner.layout_of`) and read by the cocotb side from the jobs file."""

    lanes: int
    smem_bytes: int
    line_bytes: int
    form_bits: int
    addr_bits: int
    line_bits: int
    result_error: int
    result_last: int
    result_cycles: int
    result_regs: int
    regs_bits: int
    instr_space: int
    cycle_bits: int
    error_bits: int
    #: width of the instruction's ``space`` field
    space_bits: int = 2
    #: data width of the global AXI port (0: none); where generic addresses see shared memory
    axi_data_bits: int = 0
    shared_window_base: int = 0
    #: Tensor Memory columns (0: none) and the (offset, width) of each field of the quadrant
    #: ports' payloads
    tmem_columns: int = 0
    tmem_instr: dict | None = None
    tmem_result: dict | None = None
    tmem_fill_data: int = 0
    #: source registers of every thread in a beat of a quadrant's store port
    tmem_store_regs: int = 0
    #: (offset, width) of the fields of the tcgen05.cp port's instruction (None: no port)
    cp_instr: dict | None = None

    def places(self, port: str) -> dict:
        """The (offset, width) of each field of ``port`` (``tmem_instr``, ``tmem_result``,
        ``cp_instr``); ValueError when the unit was built without it."""
        places = getattr(self, port)
        if places is None:
            raise ValueError(f"the unit was built without the {port} port (tmem_columns=0)")
        return places

    @staticmethod
    def _pack(places: dict, fields: dict) -> int:
        """``fields`` (name → value) at their (offset, width) in ``places``."""
        v = 0
        for name, x in fields.items():
            off, width = places[name]
            v |= (int(x) & ((1 << width) - 1)) << off
        return v

    def pack_cp_instr(self, fields: dict) -> int:
        return self._pack(self.places("cp_instr"), fields)

    def pack_tmem_instr(self, fields: dict) -> int:
        return self._pack(self.places("tmem_instr"), fields)

    def pack_tmem_fill(self, col: int, words) -> int:
        return col | self.pack_words(words) << self.tmem_fill_data

    def pack_tmem_store(self, regs: list) -> list[int]:
        """A tcgen05.st's source registers (each the 32 threads' words, register 0 first) as the
        quadrant's store port takes them: ``tmem_store_regs`` consecutive registers a beat, the
        last beat's missing ones zero."""
        n, width = self.tmem_store_regs, 32 * self.lanes
        return [sum(self.pack_words(r) << (width * k) for k, r in enumerate(regs[i:i + n]))
                for i in range(0, len(regs), n)]

    def unpack_tmem_result(self, v: int) -> dict:
        places = self.places("tmem_result")
        out: dict = {name: (v >> off) & ((1 << width) - 1) for name, (off, width) in places.items()
                     if name != "data"}
        off = places["data"][0]
        words = [(v >> (off + 32 * k)) & 0xFFFFFFFF for k in range(2 * self.lanes)]
        out["data"] = [words[:self.lanes], words[self.lanes:]]
        return out

    def pack_instr(self, form: int, addr, stride: int = 0, space: int = 0) -> int:
        """``addr``: 32 row addresses, or one wmma.load matrix address (given to every lane)."""
        if isinstance(addr, int):
            addr = [addr] * self.lanes
        v = form
        mask = (1 << self.addr_bits) - 1
        if self.addr_bits == 32 and 0 <= min(addr) and max(addr) <= mask:
            v |= int.from_bytes(struct.pack(f"<{len(addr)}I", *addr), "little") << self.form_bits
        else:
            for i, a in enumerate(addr):
                # addresses that do not fit the operand become the last one (out of range)
                a = a if 0 <= a <= mask else mask
                v |= a << (self.form_bits + self.addr_bits * i)
        stride = stride if 0 <= stride <= mask else mask
        return v | stride << (self.form_bits + self.addr_bits * self.lanes) | space << self.instr_space

    def pack_instrs(self, instrs: list[dict], words: int) -> bytes:
        """:meth:`pack_instr` of every instruction (``form``, ``addr``, ``stride``, ``space``
        keys), ``words`` 32-bit words each, little-endian: all at once, for a long burst."""
        n, mask = len(instrs), (1 << self.addr_bits) - 1
        try:
            addr = np.array([i["addr"] if isinstance(i["addr"], list) else [i["addr"]] * self.lanes
                             for i in instrs], dtype=np.int64).reshape(n, self.lanes)
        except OverflowError:       # past 64 bits: clamped one by one below
            addr = None
        if addr is None or self.addr_bits > 32 or np.any(addr < 0) or np.any(addr > mask):
            return b"".join(self.pack_instr(i["form"], i["addr"], i.get("stride", 0), i.get("space", 0))
                            .to_bytes(4 * words, "little") for i in instrs)
        out = np.zeros((n, words + 1), dtype=np.uint64)      # a word past the end takes spill-over

        def put(values, off: int, width: int) -> None:
            # values of at most 32 bits at bit ``off`` of each instruction's payload
            k, shift = divmod(off, 32)
            v = np.asarray(values, dtype=np.uint64) << np.uint64(shift)
            out[:, k] |= v & np.uint64(0xFFFFFFFF)
            if shift + width > 32:
                out[:, k + 1] |= v >> np.uint64(32)
        put([i["form"] for i in instrs], 0, self.form_bits)
        for t in range(self.lanes):
            put(addr[:, t], self.form_bits + self.addr_bits * t, self.addr_bits)
        stride = np.array([i.get("stride", 0) for i in instrs], dtype=np.int64)
        put(np.where((stride < 0) | (stride > mask), mask, stride), self.form_bits + self.addr_bits * self.lanes,
            self.addr_bits)
        put([i.get("space", 0) for i in instrs], self.instr_space, self.space_bits)
        return out[:, :words].astype("<u4").tobytes()

    def pack_words(self, words) -> int:
        return sum(int(w) << (32 * i) for i, w in enumerate(words))

    def pack_fill(self, line: int, chunk: bytes) -> int:
        return line | int.from_bytes(chunk, "little") << self.line_bits

    def unpack_result(self, v: int) -> dict:
        return {"data": [(v >> (32 * t)) & 0xFFFFFFFF for t in range(self.lanes)],
                "error": (v >> self.result_error) & ((1 << self.error_bits) - 1),
                "last": (v >> self.result_last) & 1,
                "regs": (v >> self.result_regs) & ((1 << self.regs_bits) - 1),
                "cycles": (v >> self.result_cycles) & ((1 << self.cycle_bits) - 1)}


class KnownImage:
    """What a testbench knows the unit's shared memory holds, so that a fill writes only the
    lines that differ from it. A job that may have written memory makes lines unknown: those its
    ``writes`` names (the lines of its stores' rows), or all of them when it names none."""

    def __init__(self, smem_bytes: int, line_bytes: int):
        self.mem, self.line_bytes = bytearray(smem_bytes), line_bytes
        self.known = False                  # False: no line is known
        self.stale: set[int] = set()        # lines a store may have changed since

    def fill(self, image: bytes) -> list[tuple[int, bytes]]:
        """The (line, contents) to write for memory to hold ``image`` (zero-padded); from then
        on it is known to."""
        lb, new = self.line_bytes, bytearray(len(self.mem))
        new[:len(image)] = image
        out = [(line, bytes(new[at:at + lb])) for line, at in enumerate(range(0, len(new), lb))
               if not self.known or line in self.stale or new[at:at + lb] != self.mem[at:at + lb]]
        self.mem, self.known = new, True
        self.stale.clear()
        return out

    def forget(self, job: dict) -> None:
        """``job`` ran and may have written memory where it did not read it back."""
        writes = job.get("writes")
        if writes is None:
            self.known = False
        else:
            self.stale.update(writes)

    def read_back(self, dumped: bytes) -> None:
        """The first lines of memory, as a dump read them."""
        self.mem[:len(dumped)] = dumped
        self.stale -= set(range(-(-len(dumped) // self.line_bytes)))
