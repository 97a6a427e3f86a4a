"""cocotb drivers and monitors for the unit's ports, for a user's own testbench, the way
cocotbext-axi drives an AXI bus. The project's own harness (:mod:`.cocotb_lsu`) uses them too.

Every port of the unit is a ``<name>__payload`` / ``__valid`` / ``__ready`` stream
(docs/ports.md): :class:`StreamSource` drives one into the unit, :class:`StreamSink` takes one
out, each with an optional rate of idle cycles or back-pressure. Three drivers put them
together and speak in instructions: :class:`LsuDriver` for the shared-memory side (``instr``,
``store``, ``result``, ``fill``, ``dump_req``, ``dump``), :class:`QuadrantDriver` for one
Tensor Memory quadrant's ports (``tmem_*__Q``: tcgen05.ld / tcgen05.st) and
:class:`CopyDriver` for the copy port (``cp_instr``, ``cp_result``: tcgen05.cp)::

    lsu = LsuDriver(dut, layout_for(params))      # layout_for: tensorlsu.cosim.runner
    await lsu.reset()
    await lsu.load(image)                          # shared memory, through the fill port
    out = await lsu.run("ldmatrix.sync.aligned.m8n8.x4.shared.b16", addr)
    out["regs"]      # uint32[32, 4] (None for a store), out["error"] (None, or a code's name)

    quad = QuadrantDriver(dut, layout, 0)          # quadrant 0: lanes 0-31, warp 0 of the group
    await quad.load(columns)                       # uint32[32, tmem_columns]
    await quad.run("tcgen05.st.sync.aligned.32x32b.x2.b32", taddr=0, regs=regs)
    out = await quad.run("tcgen05.ld.sync.aligned.32x32b.x2.b32", taddr=0)
    cp = CopyDriver(dut, layout)
    err = await cp.run("tcgen05.cp.cta_group::1.128x256b", desc, taddr=0)   # None, or a code's name

The clock is the testbench's (start a ``cocotb.clock.Clock`` on ``dut.clk``). Results come
back in order, one instruction's beats after another; :meth:`LsuDriver.run` sends one
instruction and waits for its result, :meth:`LsuDriver.send` and :meth:`LsuDriver.receive`
split the two for instructions in flight together. The global port is an AXI4 master: put
cocotbext-axi's ``AxiRam`` on its ``axi`` prefix (``bus_separator="__"``). Example:
examples/cocotb (run by tb/system/test_examples.py).
"""

from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from tensorlsu.hdl.codes import Error
from tensorlsu.hdl.copy.records import instr_fields as cp_instr_fields
from tensorlsu.hdl.pipeline.forms import form_id
from tensorlsu.hdl.tmem.records import instr_fields as tmem_instr_fields
from tensorlsu.sim import ptx
from tensorlsu.sim.ptx import Instr

from .jobs import tmem_outcome
from .layout import Layout

__all__ = ["StreamSource", "StreamSink", "ResultMonitor", "LsuDriver", "QuadrantDriver", "CopyDriver",
           "hold_idle", "TIMEOUT"]

#: Cycles one handshake may take before the driver gives up (TimeoutError).
TIMEOUT = 20000


class _Stream:
    """The three signals of the stream ``name`` (docs/ports.md) and the random source of its rate."""

    def __init__(self, dut, name: str, rng: random.Random | None):
        self.dut, self.name = dut, name
        self.rng = rng or random.Random(0)
        self.valid, self.ready = getattr(dut, f"{name}__valid"), getattr(dut, f"{name}__ready")
        self.payload = getattr(dut, f"{name}__payload")


class StreamSource(_Stream):
    """Drives the stream ``name`` into the unit: :meth:`send` offers a beat and returns when it
    moved. Before each beat, a cycle idles with probability ``idle``."""

    def __init__(self, dut, name: str, *, idle: float = 0.0, rng: random.Random | None = None):
        super().__init__(dut, name, rng)
        self.idle = idle
        self.valid.value = 0

    async def send(self, value: int) -> None:
        while self.rng.random() < self.idle:
            await RisingEdge(self.dut.clk)
        self.payload.value = value
        self.valid.value = 1
        for _ in range(TIMEOUT):
            await RisingEdge(self.dut.clk)
            if self.ready.value:
                self.valid.value = 0
                return
        raise TimeoutError(f"{self.name}: no ready in {TIMEOUT} cycles")


class StreamSink(_Stream):
    """Takes the stream ``name`` out of the unit: :meth:`recv` returns the next beat's payload.
    In each cycle, ``ready`` is low with probability ``backpressure``."""

    def __init__(self, dut, name: str, *, backpressure: float = 0.0, rng: random.Random | None = None):
        super().__init__(dut, name, rng)
        self.backpressure = backpressure
        self.ready.value = 0

    async def recv(self) -> int:
        for _ in range(TIMEOUT):
            self.ready.value = int(self.rng.random() >= self.backpressure)
            await RisingEdge(self.dut.clk)
            if self.ready.value and self.valid.value:
                self.ready.value = 0
                return self.payload.value.to_unsigned()
        raise TimeoutError(f"{self.name}: no valid in {TIMEOUT} cycles")


class ResultMonitor(StreamSink):
    """The ``result`` stream, an instruction at a time: :meth:`instruction` gathers beats up
    to the one marked last and places each by its register mask."""

    def __init__(self, dut, layout: Layout, **kwargs):
        super().__init__(dut, "result", **kwargs)
        self.layout = layout

    async def instruction(self) -> dict:
        """``beats`` (the registers in order, each 32 threads' words; a store's completion
        beat as it came), ``named`` (whether the beats named registers: a load's), ``error``
        (the code) and ``cycles`` (bank cycles), as the last beat gives them. AssertionError
        when the beats name a register twice or leave a gap."""
        beats, regs = [], {}
        while True:
            d = self.layout.unpack_result(await self.recv())
            beats.append(d["data"])
            for r in range(self.layout.regs_bits):
                if d["regs"] >> r & 1:
                    if r in regs:
                        raise AssertionError(f"register {r} in two result beats")
                    regs[r] = d["data"]
            if d["last"]:
                if regs:
                    if sorted(regs) != list(range(len(regs))):
                        raise AssertionError(f"result beats named registers {sorted(regs)}")
                    beats = [regs[r] for r in range(len(regs))]
                return {"beats": beats, "named": bool(regs), "error": d["error"], "cycles": d["cycles"]}


def hold_idle(dut, layout: Layout) -> None:
    """Every stream of the unit idle: valid low on the ones into it, ready low on the ones out
    of it. A four-state simulator (Icarus) starts undriven inputs at X, which would reach the
    unit's shared arbiters; a driver made later takes its own ports over."""
    ins, outs = ["instr", "store", "fill", "dump_req"], ["result", "dump"]
    for q in range(4 if layout.tmem_columns else 0):
        ins += [f"tmem_{n}__{q}" for n in ("instr", "store", "fill", "dump_req")]
        outs += [f"tmem_{n}__{q}" for n in ("result", "dump")]
    if layout.cp_instr:
        ins, outs = ins + ["cp_instr"], outs + ["cp_result"]
    for name in ins:
        getattr(dut, f"{name}__valid").value = 0
    for name in outs:
        getattr(dut, f"{name}__ready").value = 0


class LsuDriver:
    """The unit's shared-memory side as instructions (see the module's docstring). Made first,
    it holds every other port idle (:func:`hold_idle`) until their drivers are made."""

    def __init__(self, dut, layout: Layout, *, idle: float = 0.0, backpressure: float = 0.0, seed: int = 1):
        self.dut, self.layout = dut, layout
        hold_idle(dut, layout)
        rng = random.Random(seed)
        self.instr = StreamSource(dut, "instr", idle=idle, rng=rng)
        self.store = StreamSource(dut, "store", idle=idle, rng=rng)
        self.fill = StreamSource(dut, "fill", idle=idle, rng=rng)
        self.dump_req = StreamSource(dut, "dump_req", idle=idle, rng=rng)
        self.dump = StreamSink(dut, "dump", backpressure=backpressure, rng=rng)
        self.result = ResultMonitor(dut, layout, backpressure=backpressure, rng=rng)
        dut.smem_size.value = layout.smem_bytes

    async def reset(self, cycles: int = 2) -> None:
        self.dut.rst.value = 1
        for _ in range(cycles):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0

    async def load(self, image: bytes, first_line: int = 0) -> None:
        """Write ``image`` into shared memory from line ``first_line`` on (a line: every bank's
        bytes at one index), through the fill port; a partial last line is zero-padded."""
        lb = self.layout.line_bytes
        for k in range(0, len(image), lb):
            chunk = image[k:k + lb].ljust(lb, b"\0")
            await self.fill.send(self.layout.pack_fill(first_line + k // lb, chunk))

    async def read(self, nbytes: int, first_line: int = 0) -> bytes:
        """``nbytes`` of shared memory from line ``first_line`` on, through the dump port."""
        lb, out = self.layout.line_bytes, bytearray()
        for line in range(first_line, first_line + -(-nbytes // lb)):
            await self.dump_req.send(line)
            out += (await self.dump.recv()).to_bytes(lb, "little")
        return bytes(out[:nbytes])

    async def send(self, ins: Instr | str, addr, *, regs=None, stride: int = 0, space: int = 0) -> None:
        """Offer one instruction (and a stmatrix's source registers, ``regs[32][nregs]``, on
        the store port after it). ``addr``: the 32 threads' row addresses, or a wmma.load's
        matrix address; ``space``: a wmma.load's ``Space`` code."""
        ins = ptx.parse(ins, "sm_100a") if isinstance(ins, str) else ins
        await self.instr.send(self.layout.pack_instr(form_id(ins), addr, stride, space))
        if regs is not None:
            words = np.asarray(regs, dtype=np.uint64).reshape(32, -1)
            for r in range(words.shape[1]):
                await self.store.send(self.layout.pack_words(words[:, r]))

    async def receive(self) -> dict:
        """The next instruction's result: ``regs`` (uint32[32, n], None for a store), ``error``
        (None, or the name of its :class:`~tensorlsu.hdl.codes.Error`: ``"MISALIGNED"``, ...)
        and ``cycles`` (the bank cycles it took)."""
        got = await self.result.instruction()
        regs = np.ascontiguousarray(np.array(got["beats"], dtype=np.uint32).T) if got["named"] else None
        error = Error(got["error"])
        return {"regs": regs, "error": None if error == Error.NONE else error.name, "cycles": got["cycles"]}

    async def run(self, ins: Instr | str, addr, **kwargs) -> dict:
        """:meth:`send` then :meth:`receive`, the store data sent while the result is awaited."""
        sender = cocotb.start_soon(self.send(ins, addr, **kwargs))
        out = await self.receive()
        await sender
        return out


def _error_name(code: int) -> str | None:
    error = Error(code)
    return None if error == Error.NONE else error.name


def _parse(ins: Instr | str) -> Instr:
    return ptx.parse(ins, "sm_100a") if isinstance(ins, str) else ins


class QuadrantDriver:
    """One Tensor Memory quadrant's ports (``tmem_instr__Q``, ``tmem_store__Q``,
    ``tmem_result__Q``, ``tmem_fill__Q``, ``tmem_dump_req__Q``, ``tmem_dump__Q``) as
    instructions. Quadrant ``q`` holds lanes 32q to 32q + 31; a warp reaches the quadrant of its
    index in the warpgroup, so the instruction's warp defaults to ``q`` (another is refused with
    ``QUADRANT``, as the hardware refuses it). Results come back in order per quadrant; the four
    quadrants run independently (a driver each)."""

    def __init__(self, dut, layout: Layout, quadrant: int, *, idle: float = 0.0, backpressure: float = 0.0,
                 seed: int = 1):
        if not layout.tmem_columns:
            raise ValueError("the unit was built without Tensor Memory (tmem_columns=0)")
        self.dut, self.layout, self.q = dut, layout, quadrant
        rng = random.Random(seed + 100 * quadrant)
        name = f"tmem_{{}}__{quadrant}"
        self.instr = StreamSource(dut, name.format("instr"), idle=idle, rng=rng)
        self.store = StreamSource(dut, name.format("store"), idle=idle, rng=rng)
        self.fill = StreamSource(dut, name.format("fill"), idle=idle, rng=rng)
        self.dump_req = StreamSource(dut, name.format("dump_req"), idle=idle, rng=rng)
        self.result = StreamSink(dut, name.format("result"), backpressure=backpressure, rng=rng)
        self.dump = StreamSink(dut, name.format("dump"), backpressure=backpressure, rng=rng)

    async def load(self, columns, first: int = 0) -> None:
        """Write ``columns`` (uint32[32, n]: lane by column) into the quadrant from column
        ``first`` on, through the fill port."""
        words = np.asarray(columns, dtype=np.uint64).reshape(self.layout.lanes, -1)
        for c in range(words.shape[1]):
            await self.fill.send(self.layout.pack_tmem_fill(first + c, words[:, c]))

    async def read(self, n: int | None = None, first: int = 0) -> np.ndarray:
        """``n`` columns (default: all of them) from column ``first`` on, through the dump port:
        uint32[32, n]."""
        n = self.layout.tmem_columns - first if n is None else n
        out = np.zeros((self.layout.lanes, n), np.uint32)
        for c in range(n):
            await self.dump_req.send(first + c)
            v = await self.dump.recv()
            out[:, c] = [(v >> (32 * t)) & 0xFFFFFFFF for t in range(self.layout.lanes)]
        return out

    async def send(self, ins: Instr | str, taddr: int, *, regs=None, warp: int | None = None,
                   split: int | None = None) -> Instr:
        """Offer a tcgen05.ld / tcgen05.st at ``taddr`` (lane in bits 31:16, column in 15:0),
        and a store's source registers (``regs``: uint32[32, nregs]; zeros when absent) on the
        store port after it; ``split``: a .16x32bx2 form's immHalfSplitoff. Returns the parsed
        instruction, for :meth:`receive`."""
        ins = _parse(ins)
        fields = tmem_instr_fields(ins, taddr, self.q if warp is None else warp, split)
        await self.instr.send(self.layout.pack_tmem_instr(fields))
        if ins.op == "tcgen05.st":
            words = np.zeros((32, ins.nregs), np.uint64) if regs is None else \
                np.asarray(regs, dtype=np.uint64).reshape(32, ins.nregs)
            for beat in self.layout.pack_tmem_store([list(words[:, r]) for r in range(ins.nregs)]):
                await self.store.send(beat)
        return ins

    async def receive(self, ins: Instr | str) -> dict:
        """The result of ``ins``, the next instruction of this quadrant: ``regs`` (uint32[32,
        nregs] of a load, else None), ``redval`` (a .red load's uint32[32], else None) and
        ``error`` (None, or its code's name). AssertionError when the beats break the port's
        rules (docs/ports.md)."""
        ins, beats = _parse(ins), []
        while True:
            beats.append(self.layout.unpack_tmem_result(await self.result.recv()))
            if beats[-1]["last"]:
                break
        out = tmem_outcome(ins, {"beats": beats})
        regs, redval = out.get("regs"), out.get("redval")
        return {"regs": None if regs is None else np.array(regs, dtype=np.uint32),
                "redval": None if redval is None else np.array(redval, dtype=np.uint32),
                "error": _error_name(out["error"]) if "error" in out else None}

    async def run(self, ins: Instr | str, taddr: int, **kwargs) -> dict:
        """:meth:`send` then :meth:`receive`, the store data sent while the result is awaited."""
        ins = _parse(ins)
        sender = cocotb.start_soon(self.send(ins, taddr, **kwargs))
        out = await self.receive(ins)
        await sender
        return out


class CopyDriver:
    """The tcgen05.cp port (``cp_instr``, ``cp_result``): a copy from shared memory into Tensor
    Memory, one result beat per copy (its error code), in order."""

    def __init__(self, dut, layout: Layout, *, idle: float = 0.0, backpressure: float = 0.0, seed: int = 1):
        if not layout.cp_instr:
            raise ValueError("the unit was built without the copy port (tmem_columns=0)")
        self.dut, self.layout = dut, layout
        rng = random.Random(seed + 1000)
        self.instr = StreamSource(dut, "cp_instr", idle=idle, rng=rng)
        self.result = StreamSink(dut, "cp_result", backpressure=backpressure, rng=rng)

    async def send(self, ins: Instr | str, desc: int, taddr: int) -> None:
        """Offer a tcgen05.cp with its shared-memory descriptor ``desc`` (64 bits) and Tensor
        Memory address ``taddr``."""
        await self.instr.send(self.layout.pack_cp_instr(cp_instr_fields(_parse(ins), desc, taddr)))

    async def receive(self) -> str | None:
        """The next copy's outcome: None when it completed, or its error code's name."""
        return _error_name(await self.result.recv())

    async def run(self, ins: Instr | str, desc: int, taddr: int) -> str | None:
        await self.send(ins, desc, taddr)
        return await self.receive()
