"""cocotb test module: runs a list of jobs through the Verilog of the load/store unit.

The jobs and the results are JSON files named by ``TENSORLSU_JOBS`` / ``TENSORLSU_RESULTS``
(written and read by :mod:`tensorlsu.hdl.cosim`, which also compares them with the model: this
module only drives and records). ``TENSORLSU_IDLE`` and ``TENSORLSU_BACKPRESSURE`` are the
probabilities of an idle cycle on the input streams and of a cycle without ready on the
output streams.
"""

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from tensorlsu.hdl import cosim

_TIMEOUT = 20000  # cycles one handshake may take before the test fails


class TB:
    """Clock, reset, stream drivers with idle / back-pressure, and memory access."""

    def __init__(self, dut, layout: "cosim.Layout", seed: int, idle: float, backpressure: float):
        self.dut, self.lay = dut, layout
        self.rng = random.Random(seed)
        self.idle, self.bp = idle, backpressure
        self.cycle = 0
        self.mem = bytearray(layout.smem_bytes)  # what the banks hold, as far as the TB knows
        self.known = False
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        cocotb.start_soon(self._count())
        for name in ("instr", "store", "fill", "dump_req"):
            getattr(dut, f"{name}__valid").value = 0
        for name in ("result", "dump"):
            getattr(dut, f"{name}__ready").value = 0

    async def _count(self):
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0

    async def put(self, name: str, value: int):
        while self.rng.random() < self.idle:
            await RisingEdge(self.dut.clk)
        valid, ready = getattr(self.dut, f"{name}__valid"), getattr(self.dut, f"{name}__ready")
        getattr(self.dut, f"{name}__payload").value = value
        valid.value = 1
        for _ in range(_TIMEOUT):
            await RisingEdge(self.dut.clk)
            if ready.value:
                valid.value = 0
                return
        raise TimeoutError(f"{name}: no ready in {_TIMEOUT} cycles")

    async def get(self, name: str) -> int:
        valid, ready = getattr(self.dut, f"{name}__valid"), getattr(self.dut, f"{name}__ready")
        payload = getattr(self.dut, f"{name}__payload")
        for _ in range(_TIMEOUT):
            ready.value = int(self.rng.random() >= self.bp)
            await RisingEdge(self.dut.clk)
            if ready.value and valid.value:
                ready.value = 0
                return payload.value.to_unsigned()
        raise TimeoutError(f"{name}: no valid in {_TIMEOUT} cycles")

    async def load_image(self, image: bytes):
        """Fill the lines whose contents differ from ``image`` (zero-padded)."""
        lb = self.lay.line_bytes
        new = bytearray(self.lay.smem_bytes)
        new[:len(image)] = image
        for line in range(self.lay.smem_bytes // lb):
            chunk = new[line * lb:(line + 1) * lb]
            if self.known and chunk == self.mem[line * lb:(line + 1) * lb]:
                continue
            await self.put("fill", self.lay.pack_fill(line, bytes(chunk)))
        self.mem, self.known = new, True

    async def dump_lines(self, n: int) -> bytes:
        out = bytearray()
        for line in range(n):
            await self.put("dump_req", line)
            out += (await self.get("dump")).to_bytes(self.lay.line_bytes, "little")
        return bytes(out)

    async def collect(self) -> dict:
        """The beats of one instruction; error and cycle count as the last beat gives them."""
        beats = []
        while True:
            d = self.lay.unpack_result(await self.get("result"))
            beats.append(d["data"])
            if d["last"]:
                return {"beats": beats, "error": d["error"], "cycles": d["cycles"]}

    async def burst(self, instrs: list[dict]) -> dict:
        """Issue instructions back to back (store data on its own stream) and record, per
        instruction, the cycle it was accepted and the cycle of its last result beat."""
        accepted, out = [], []

        async def send_instrs():
            for ins in instrs:
                await self.put("instr", self.lay.pack_instr(ins["form"], ins["addr"], ins.get("stride", 0)))
                accepted.append(self.cycle)

        async def send_data():
            for ins in instrs:
                for beat in ins.get("store", []):
                    await self.put("store", self.lay.pack_words(beat))

        a, b = cocotb.start_soon(send_instrs()), cocotb.start_soon(send_data())
        for _ in instrs:
            res = await self.collect()
            res["done"] = self.cycle
            out.append(res)
        await a
        await b
        for o, c in zip(out, accepted):
            o["accepted"] = c
        return {"burst": out}

    async def execute(self, job: dict) -> dict:
        if job.get("reset"):
            await self.reset()
        if "burst" in job:
            if job.get("image") is not None:
                await self.load_image(bytes.fromhex(job["image"]))
            self.known = False
            res = await self.burst(job["burst"])
            if job.get("dump_lines"):
                res["dump"] = (await self.dump_lines(job["dump_lines"])).hex()
            return res
        if job.get("image") is not None:
            await self.load_image(bytes.fromhex(job["image"]))
        start = None

        async def send():
            nonlocal start
            await self.put("instr", self.lay.pack_instr(job["form"], job["addr"], job.get("stride", 0)))
            start = self.cycle
            for beat in job.get("store", []):
                await self.put("store", self.lay.pack_words(beat))

        sender = cocotb.start_soon(send())
        res = await self.collect()
        res["latency"] = self.cycle - start
        res["accepted"], res["done"] = start, self.cycle
        await sender
        if job.get("dump_lines"):
            dumped = await self.dump_lines(job["dump_lines"])
            res["dump"] = dumped.hex()
            self.mem[:len(dumped)] = dumped
        if "store" in job and job.get("dump_lines", 0) * self.lay.line_bytes < self.lay.smem_bytes:
            self.known = False  # a store may have changed lines the TB did not read back
        return res


@cocotb.test()
async def run_jobs(dut):
    with open(os.environ["TENSORLSU_JOBS"]) as f:
        spec = json.load(f)
    lay = cosim.Layout(**spec["layout"])
    tb = TB(dut, lay, spec.get("seed", 1), float(os.environ.get("TENSORLSU_IDLE", "0")),
            float(os.environ.get("TENSORLSU_BACKPRESSURE", "0")))
    await tb.reset()
    progress = os.environ.get("TENSORLSU_PROGRESS")
    results = []
    for job in spec["jobs"]:
        results.append(await tb.execute(job))
        if progress:
            with open(progress, "a") as f:
                f.write(f"{len(results)} {len(spec['jobs'])}\n")
    with open(os.environ["TENSORLSU_RESULTS"], "w") as f:
        json.dump(results, f)
