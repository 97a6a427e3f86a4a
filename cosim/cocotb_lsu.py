"""cocotb test module: runs a list of jobs through the Verilog of the load/store unit.

The jobs and the results are JSON files named by ``TENSORLSU_JOBS`` / ``TENSORLSU_RESULTS``
(written and read by :mod:`tensorlsu.cosim.runner`; :mod:`tensorlsu.cosim.backend` and the
tests compare them with the model: this module only drives and records). ``TENSORLSU_IDLE``
and ``TENSORLSU_BACKPRESSURE`` are the probabilities of an idle cycle on the input streams and
of a cycle without ready on the output streams.
"""

import json
import os
import random
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from .drivers import ResultMonitor, StreamSink, StreamSource, hold_idle
from .layout import GMEM_BYTES, KnownImage, Layout

# cocotbext-axi 0.1.28 and cocotb-bus 0.3.0 work with cocotb 2.1 but still call the APIs it
# deprecates: those warnings, raised from their modules, and no others, are ignored
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(cocotbext|cocotb_bus)(\..*)?$")


class TB:
    """Clock, reset, stream drivers with idle / back-pressure, and memory access."""

    def __init__(self, dut, layout: Layout, seed: int, idle: float, backpressure: float):
        self.dut, self.lay = dut, layout
        self.rng = random.Random(seed)
        self.idle, self.bp = idle, backpressure
        self.ports: dict = {}       # the streams' drivers, made as first used
        self.cycle = 0
        self.image = KnownImage(layout.smem_bytes, layout.line_bytes)   # what the banks hold, as far as known
        dut.smem_size.value = layout.smem_bytes
        Clock(dut.clk, 10, unit="ns").start()
        cocotb.start_soon(self._count())
        quads = range(4 if layout.tmem_columns else 0)
        hold_idle(dut, layout)
        self.tmem: dict[int, bytes | None] = {q: None for q in quads}    # what each quadrant holds, as far as known
        self.ram = None
        if layout.axi_data_bits:
            from cocotbext.axi import AxiBus, AxiRam
            self.ram = AxiRam(AxiBus.from_prefix(dut, "axi", bus_separator="__"), dut.clk, dut.rst,
                              size=GMEM_BYTES)
            # reads past the memory fail (AxiRam then answers SLVERR) instead of wrapping
            wrapped = self.ram.read_if._read

            async def read_or_fail(address, length):
                if address + length > GMEM_BYTES:
                    raise IndexError(f"AXI read at 0x{address:x} is past the memory")
                return await wrapped(address, length)
            self.ram.read_if._read = read_or_fail
            if backpressure:
                for ch in (self.ram.read_if.ar_channel, self.ram.read_if.r_channel):
                    ch.set_pause_generator(self._pauses(backpressure))

    def _pauses(self, p: float):
        while True:
            yield self.rng.random() < p

    async def _count(self):
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0

    def set_rates(self, idle: float, backpressure: float):
        """Idle and back-pressure rates of every stream from now on."""
        self.idle, self.bp = idle, backpressure
        for port in self.ports.values():
            if isinstance(port, StreamSource):
                port.idle = idle
            else:
                port.backpressure = backpressure

    def _port(self, name: str, kind):
        port = self.ports.get(name)
        if port is None:
            if kind is StreamSource:
                port = StreamSource(self.dut, name, idle=self.idle, rng=self.rng)
            elif kind is ResultMonitor:
                port = ResultMonitor(self.dut, self.lay, backpressure=self.bp, rng=self.rng)
            else:
                port = StreamSink(self.dut, name, backpressure=self.bp, rng=self.rng)
            self.ports[name] = port
        return port

    async def put(self, name: str, value: int):
        await self._port(name, StreamSource).send(value)

    async def get(self, name: str) -> int:
        return await self._port(name, StreamSink).recv()

    async def load_image(self, image: bytes):
        """Fill the lines whose contents differ from ``image`` (zero-padded)."""
        for line, chunk in self.image.fill(image):
            await self.put("fill", self.lay.pack_fill(line, chunk))

    async def dump_lines(self, n: int) -> bytes:
        out = bytearray()
        for line in range(n):
            await self.put("dump_req", line)
            out += (await self.get("dump")).to_bytes(self.lay.line_bytes, "little")
        return bytes(out)

    async def collect(self) -> dict:
        """The registers of one instruction (:meth:`ResultMonitor.instruction`)."""
        got = await self._port("result", ResultMonitor).instruction()
        return {"beats": got["beats"], "error": got["error"], "cycles": got["cycles"]}

    async def stream(self, instrs: list[dict], instr_port: str, pack, store_port: str, collect,
                     pack_store=None) -> list[dict]:
        """Issue ``instrs`` back to back on ``instr_port`` (``pack`` makes each one's payload),
        their store beats on ``store_port``, on their own (``pack_store`` makes an instruction's
        beats from its source registers; by default one register a beat); per instruction,
        what ``collect()`` reads of its result beats, the cycle it was accepted and the cycle
        of its last beat."""
        pack_store = pack_store or (lambda regs: [self.lay.pack_words(r) for r in regs])
        accepted, out = [], []

        async def send_instrs():
            for ins in instrs:
                await self.put(instr_port, pack(ins))
                accepted.append(self.cycle)

        async def send_data():
            for ins in instrs:
                for beat in pack_store(ins.get("store", [])):
                    await self.put(store_port, beat)

        a, b = cocotb.start_soon(send_instrs()), cocotb.start_soon(send_data())
        for _ in instrs:
            res = await collect()
            res["done"] = self.cycle
            out.append(res)
        await a
        await b
        for o, c in zip(out, accepted):
            o["accepted"] = c
        return out

    def pack(self, ins: dict) -> int:
        """The instruction port's payload of a shared-memory-path instruction."""
        return self.lay.pack_instr(ins["form"], ins["addr"], ins.get("stride", 0), ins.get("space", 0))

    # -- Tensor Memory ------------------------------------------------------------------
    async def tmem_load(self, q: int, image: bytes):
        """Fill the columns of quadrant ``q`` that differ from ``image`` (column-major: 32
        lanes × 4 bytes per column)."""
        cb = 4 * self.lay.lanes
        old = self.tmem[q]
        for c in range(self.lay.tmem_columns):
            col = image[c * cb:(c + 1) * cb]
            if old is not None and old[c * cb:(c + 1) * cb] == col:
                continue
            words = [int.from_bytes(col[4 * t:4 * t + 4], "little") for t in range(self.lay.lanes)]
            await self.put(f"tmem_fill__{q}", self.lay.pack_tmem_fill(c, words))
        self.tmem[q] = image

    async def tmem_dump(self, q: int) -> bytes:
        out = bytearray()
        for c in range(self.lay.tmem_columns):
            await self.put(f"tmem_dump_req__{q}", c)
            v = await self.get(f"tmem_dump__{q}")
            out += v.to_bytes(4 * self.lay.lanes, "little")
        self.tmem[q] = bytes(out)
        return bytes(out)

    async def tmem_port(self, q: int, instrs: list[dict]) -> list[dict]:
        """Run one quadrant's instructions in order; per instruction its beats, the cycle it
        was taken and the cycle of its last beat."""
        async def collect():
            beats = []
            while True:
                beats.append(self.lay.unpack_tmem_result(await self.get(f"tmem_result__{q}")))
                if beats[-1]["last"]:
                    return {"beats": beats}

        out = await self.stream(instrs, f"tmem_instr__{q}", lambda ins: self.lay.pack_tmem_instr(ins["fields"]),
                                f"tmem_store__{q}", collect, self.lay.pack_tmem_store)
        if any(ins.get("store") for ins in instrs):
            self.tmem[q] = None
        return out

    async def tmem_job(self, job: dict) -> dict:
        """Images in, every quadrant's instructions at once, images out."""
        for q, image in (job.get("tmem_image") or {}).items():
            await self.tmem_load(int(q), bytes.fromhex(image))
        ports = {q: cocotb.start_soon(self.tmem_port(int(q), instrs)) for q, instrs in job["tmem"].items()}
        res: dict = {"tmem": {q: await t for q, t in ports.items()}}
        if job.get("tmem_dump"):
            res["tmem_dump"] = {str(q): (await self.tmem_dump(q)).hex() for q in self.tmem}
        return res

    async def cp_job(self, job: dict) -> dict:
        """tcgen05.cp: shared memory (unless the job has no ``image``) and the quadrants' images
        in, the copy (or ``cps``, copies back to back), each result beat (the error code, the
        cycles it was taken and answered), and every quadrant out (unless ``tmem_dump`` is
        false). ``after``: shared-path instructions offered on ``instr`` as soon as the first
        copy is taken (their results in ``after``; ``dump_lines`` lines of shared memory read
        back at the end)."""
        if job.get("image") is not None:
            await self.load_image(bytes.fromhex(job["image"]))
        for q, image in job.get("tmem_image", {}).items():
            await self.tmem_load(int(q), bytes.fromhex(image))
        instrs, accepted = job.get("cps") or [job["cp"]], []
        behind = None

        async def send():
            nonlocal behind
            for fields in instrs:
                await self.put("cp_instr", self.lay.pack_cp_instr(fields))
                accepted.append(self.cycle)
                if behind is None and job.get("after"):
                    behind = cocotb.start_soon(self.stream(job["after"], "instr", self.pack, "store", self.collect))

        sender = cocotb.start_soon(send())
        copies = []
        for _ in instrs:
            error = await self.get("cp_result")
            copies.append({"error": error, "done": self.cycle})
        await sender
        for c, a in zip(copies, accepted):
            c["accepted"] = a
        res = {**copies[0], "copies": copies, "latency": copies[0]["done"] - copies[0]["accepted"]}
        if behind is not None:
            res["after"] = await behind
            self.image.known = False
        if job.get("dump_lines"):
            res["dump"] = (await self.dump_lines(job["dump_lines"])).hex()
        if job.get("tmem_dump", True):
            res["tmem_dump"] = {str(q): (await self.tmem_dump(q)).hex() for q in self.tmem}
        else:                   # what the quadrants hold is no longer known
            self.tmem = dict.fromkeys(self.tmem)
        return res

    async def execute(self, job: dict) -> dict:
        # the shared memory the job's instructions may address (the record's image, or all)
        self.dut.smem_size.value = job.get("smem_size", self.lay.smem_bytes)
        if job.get("rates"):        # this job's idle and back-pressure, on every stream
            self.set_rates(*job["rates"])
        if job.get("reset"):
            await self.reset()
        if job.get("gmem"):
            assert self.ram is not None, "a global image for a unit without the global port"
            self.ram.write(job["gmem_at"], bytes.fromhex(job["gmem"]))
        if "tmem" in job:
            return await self.tmem_job(job)
        if "cp" in job:
            return await self.cp_job(job)
        if "burst" in job:
            if job.get("image") is not None:
                await self.load_image(bytes.fromhex(job["image"]))
            self.image.forget(job)
            res: dict = {"burst": await self.stream(job["burst"], "instr", self.pack, "store", self.collect)}
            if job.get("dump_lines"):
                res["dump"] = (await self.dump_lines(job["dump_lines"])).hex()
            return res
        if job.get("image") is not None:
            await self.load_image(bytes.fromhex(job["image"]))
        start = -1             # the cycle the instruction is taken

        async def send():
            nonlocal start
            await self.put("instr", self.pack(job))
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
            self.image.read_back(dumped)
        if "store" in job and job.get("dump_lines", 0) * self.lay.line_bytes < self.lay.smem_bytes:
            self.image.forget(job)  # a store may have changed lines the TB did not read back
        return res


@cocotb.test()
async def run_jobs(dut):
    with open(os.environ["TENSORLSU_JOBS"]) as f:
        spec = json.load(f)
    lay = Layout(**spec["layout"])
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
