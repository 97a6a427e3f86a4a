"""cocotb drivers and monitors for the unit's ports, for a user's own testbench, the way
cocotbext-axi drives an AXI bus. The project's own harness (:mod:`.cocotb_lsu`) uses them too.

Every port of the unit is a ``<name>__payload`` / ``__valid`` / ``__ready`` stream
(docs/ports.md): :class:`StreamSource` drives one into the unit, :class:`StreamSink` takes one
out, each with an optional rate of idle cycles or back-pressure. :class:`LsuDriver` puts them
together for the shared-memory side (``instr``, ``store``, ``result``, ``fill``, ``dump_req``,
``dump``) and speaks in instructions::

    lsu = LsuDriver(dut, layout_for(params))      # layout_for: tensorlsu.cosim.runner
    await lsu.reset()
    await lsu.load(image)                          # shared memory, through the fill port
    out = await lsu.run("ldmatrix.sync.aligned.m8n8.x4.shared.b16", addr)
    out["regs"]      # uint32[32, 4] (None for a store), out["error"] (None, or a code's name)

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
from tensorlsu.hdl.pipeline.forms import form_id
from tensorlsu.sim import ptx
from tensorlsu.sim.ptx import Instr

from .layout import Layout

__all__ = ["StreamSource", "StreamSink", "ResultMonitor", "LsuDriver", "TIMEOUT"]

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


class LsuDriver:
    """The unit's shared-memory side as instructions (see the module's docstring)."""

    def __init__(self, dut, layout: Layout, *, idle: float = 0.0, backpressure: float = 0.0, seed: int = 1):
        self.dut, self.layout = dut, layout
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
