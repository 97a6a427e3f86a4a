"""The load/store unit: banked shared memory, bank scheduler, row crossbar, decompressor and
fragment shuffles for every ldmatrix / stmatrix form.

Data flow (docs/ARCHITECTURE.md): an instruction (form id + 32 thread addresses) is checked;
its rows are served by the bank scheduler, one distinct address per bank quad per cycle, into a
row buffer (through the decompressor); the fragment shuffle, generated from the model's layout
tables, turns the row buffer into one result beat per destination register. stmatrix takes
one data beat per source register, shuffles it into the row buffer the other way, and writes
the rows back through the scheduler.
"""

from __future__ import annotations



from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from . import forms
from .params import ROW_BYTES, Params
from .scheduler import BankScheduler

__all__ = ["Error", "LoadStoreUnit", "FORM_BITS", "ADDR_BITS", "CYCLE_BITS"]

#: Width of the form-id field of an instruction.
FORM_BITS = 6
#: Width of a thread's address operand.
ADDR_BITS = 32
#: Width of the bank-cycle count reported with each result beat.
CYCLE_BITS = 8
_ROW_BITS = 8 * ROW_BYTES
_FMT = {None: 0, "b6x16_p32": 1, "b4x16_p64": 2}


class Error(enum.Enum, shape=unsigned(3)):
    """Error code of a result beat."""

    #: The instruction completed.
    NONE = 0
    #: A row address is not 16-byte aligned.
    MISALIGNED = 1
    #: A row reaches outside shared memory.
    OUT_OF_RANGE = 2
    #: The form id names no form of this unit.
    UNSUPPORTED = 3
    #: Two threads of one stmatrix store the same row (a race the PTX leaves undefined).
    OVERLAP = 4


def _decompress(m: Module, row: Signal, fmt: Signal) -> Signal:
    """The 16 packed elements of a row, one per byte (sim/decompress.py), or the row itself."""
    out = Signal(_ROW_BITS)
    b6 = Cat(*[Cat(row[6 * j:6 * j + 6], Const(0, 2)) for j in range(16)])
    b4 = Cat(*[Cat(row[4 * j:4 * j + 4], Const(0, 4)) for j in range(16)])
    with m.Switch(fmt):
        with m.Case(_FMT["b6x16_p32"]):
            m.d.comb += out.eq(b6)
        with m.Case(_FMT["b4x16_p64"]):
            m.d.comb += out.eq(b4)
        with m.Default():
            m.d.comb += out.eq(row)
    return out


class LoadStoreUnit(wiring.Component):
    """Warp-level matrix load/store unit for ldmatrix and stmatrix.

    Parameters
    ----------
    params : Params
        Validated parameters (lanes, banks, bank width, shared-memory size, policy); keyword
        arguments build one when ``params`` is omitted.

    Members
    -------
    instr : In(stream.Signature(StructLayout{form, addr}))
        Form id (:func:`tensorlsu.hdl.forms.form_id`) and each thread's row address.
    store : In(stream.Signature(ArrayLayout(32, lanes)))
        stmatrix source registers, one beat per register, after the instruction.
    result : Out(stream.Signature(StructLayout{data, error, last, cycles}))
        ldmatrix: one beat per destination register; stmatrix: one completion beat. A refused
        instruction gives the same number of beats with ``error`` set and zero data.
        ``cycles`` is the number of cycles the instruction occupied the banks.
    fill : In(stream.Signature(StructLayout{line, data}))
        Bank-parallel write of one line (all banks) while idle: DMA fills, test images.
    dump_req, dump : In / Out(stream.Signature(...))
        Bank-parallel read of one line while idle.
    """

    def __init__(self, params: Params | None = None, **kwargs):
        if params is None:
            params = Params(**kwargs)
        elif kwargs:
            raise TypeError("give either params or keyword parameters, not both")
        if not isinstance(params, Params):
            raise TypeError(f"params must be a Params, not {type(params).__name__}")
        self.params = p = params
        self.line_bits = max(1, (p.lines - 1).bit_length())
        lanes = p.lanes
        self.instr_layout = data.StructLayout({
            "form": unsigned(FORM_BITS), "addr": data.ArrayLayout(unsigned(ADDR_BITS), lanes)})
        self.result_layout = data.StructLayout({
            "data": data.ArrayLayout(unsigned(32), lanes), "error": Error, "last": 1,
            "cycles": unsigned(CYCLE_BITS)})
        self.fill_layout = data.StructLayout({
            "line": unsigned(self.line_bits), "data": unsigned(8 * p.line_bytes)})
        super().__init__({
            "instr": In(stream.Signature(self.instr_layout)),
            "store": In(stream.Signature(data.ArrayLayout(unsigned(32), lanes))),
            "result": Out(stream.Signature(self.result_layout)),
            "fill": In(stream.Signature(self.fill_layout)),
            "dump_req": In(stream.Signature(unsigned(self.line_bits))),
            "dump": Out(stream.Signature(unsigned(8 * p.line_bytes))),
        })

    # ----------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        p = self.params
        R, Q, LB = p.lanes, p.quads, self.line_bits
        qbits = max(1, (Q - 1).bit_length())
        nforms = len(forms.ROW_FORMS)
        infos = [forms.info(f) for f in range(nforms)]

        # ---- bank quads: one memory of 16-byte words per group of banks ------------------
        rd, wr = [], []
        for q in range(Q):
            mem = memory.Memory(shape=unsigned(_ROW_BITS), depth=p.lines, init=[])
            m.submodules[f"quad{q}"] = mem
            rd.append(mem.read_port())
            wr.append(mem.write_port())

        # ---- per-form constants of a form id ---------------------------------------------
        def form_consts(fid_sig, prefix):
            c = {
                "valid": Signal(name=f"{prefix}_valid"),
                "load": Signal(name=f"{prefix}_load"),
                "used": Signal(R, name=f"{prefix}_used"),
                "nregs": Signal(range(R + 1), name=f"{prefix}_nregs"),
                "rows16": Signal(name=f"{prefix}_rows16"),
                "fmt": Signal(2, name=f"{prefix}_fmt"),
            }
            with m.Switch(fid_sig):
                for f, inf in enumerate(infos):
                    with m.Case(f):
                        m.d.comb += [c["valid"].eq(1), c["load"].eq(inf.load),
                                     c["used"].eq((1 << inf.rows) - 1), c["nregs"].eq(inf.nregs),
                                     c["rows16"].eq(inf.rows_per_matrix == 16),
                                     c["fmt"].eq(_FMT[inf.src_fmt])]
            return c

        # ---- checks of an incoming instruction -------------------------------------------
        ip = self.instr.payload
        ic = form_consts(ip.form, "in")
        mis = Signal(R)
        oor = Signal(R)
        limit = p.smem_bytes - ROW_BYTES
        for i in range(R):
            a = ip.addr[i]
            m.d.comb += [mis[i].eq(ic["used"][i] & (a[:4] != 0)),
                         oor[i].eq(ic["used"][i] & (a > limit))]
        overlap = Signal()
        pairs = []
        for i in range(R):
            for j in range(i + 1, R):
                pairs.append(ic["used"][i] & ic["used"][j] & (ip.addr[i] == ip.addr[j]))
        m.d.comb += overlap.eq(Cat(*pairs).any() & ~ic["load"])
        in_err = Signal(Error)
        with m.If(~ic["valid"]):
            m.d.comb += in_err.eq(Error.UNSUPPORTED)
        with m.Elif(mis.any()):
            m.d.comb += in_err.eq(Error.MISALIGNED)
        with m.Elif(oor.any()):
            m.d.comb += in_err.eq(Error.OUT_OF_RANGE)
        with m.Elif(overlap):
            m.d.comb += in_err.eq(Error.OVERLAP)

        # ---- the instruction in flight ----------------------------------------------------
        form = Signal(FORM_BITS)
        addr = Signal(data.ArrayLayout(unsigned(ADDR_BITS), R))
        err = Signal(Error)
        fc = form_consts(form, "cur")
        pending = Signal(R)
        beat = Signal(range(R + 1))
        cycles = Signal(CYCLE_BITS)
        served_d = Signal(R)
        rowbuf = [Signal(_ROW_BITS, name=f"row{i}") for i in range(R)]

        quad_of = [addr[i][4:4 + qbits] for i in range(R)]
        line_of = [addr[i][4 + qbits:4 + qbits + LB] for i in range(R)]

        # h200: only rows of the lowest matrix with pending rows are eligible.
        eligible = Signal(R)
        group = Signal(R)
        if p.schedule == "h200":
            for size, sel in ((8, ~fc["rows16"]), (16, fc["rows16"])):
                with m.If(sel):
                    first = True
                    for g in range(R // size):
                        mask = ((1 << size) - 1) << (size * g)
                        cond = (pending & mask).any()
                        with (m.If(cond) if first else m.Elif(cond)):
                            m.d.comb += group.eq(mask)
                        first = False
        else:
            m.d.comb += group.eq((1 << R) - 1)
        m.d.comb += eligible.eq(pending & group)

        sched = m.submodules.sched = BankScheduler(rows=R, quads=Q, line_bits=LB)
        m.d.comb += sched.eligible.eq(0)
        for i in range(R):
            m.d.comb += [sched.quad[i].eq(quad_of[i]), sched.line[i].eq(line_of[i])]

        # Rows read in the previous cycle land in the row buffer (through the decompressor).
        dec = [_decompress(m, rd[q].data, fc["fmt"]) for q in range(Q)]
        for i in range(R):
            with m.If(served_d[i]):
                with m.Switch(quad_of[i]):
                    for q in range(Q):
                        with m.Case(q):
                            m.d.sync += rowbuf[i].eq(dec[q])
        m.d.sync += served_d.eq(0)

        # Fragment shuffle: result beat ``beat`` of a load form, from the row buffer.
        shuffled = Signal(32 * R)
        with m.Switch(form):
            for f, inf in enumerate(infos):
                if not inf.load:
                    continue
                with m.Case(f):
                    with m.Switch(beat):
                        for r in range(inf.nregs):
                            with m.Case(r):
                                parts = []
                                for t in range(R):
                                    for b in range(4):
                                        row, byte = (int(x) for x in inf.table[t, r, b])
                                        parts.append(rowbuf[row][8 * byte:8 * byte + 8])
                                m.d.comb += shuffled.eq(Cat(*parts))

        reported = Signal(CYCLE_BITS)
        if p.schedule == "packed":
            # a packer still delivers one 128-byte register beat per cycle at most
            m.d.comb += reported.eq(Mux(cycles < fc["nregs"], fc["nregs"], cycles))
        else:
            m.d.comb += reported.eq(cycles)

        for q in range(Q):
            m.d.comb += [rd[q].addr.eq(sched.grant[q].line), rd[q].en.eq(0)]

        store_flat = Signal(32 * R)
        m.d.comb += store_flat.eq(self.store.payload)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.fill.ready.eq(1)
                m.d.comb += self.dump_req.ready.eq(~self.fill.valid)
                m.d.comb += self.instr.ready.eq(~self.fill.valid & ~self.dump_req.valid)
                with m.If(self.fill.valid):
                    for q in range(Q):
                        m.d.comb += [wr[q].addr.eq(self.fill.payload.line),
                                     wr[q].data.eq(self.fill.payload.data[_ROW_BITS * q:_ROW_BITS * (q + 1)]),
                                     wr[q].en.eq(1)]
                with m.Elif(self.dump_req.valid):
                    for q in range(Q):
                        m.d.comb += [rd[q].addr.eq(self.dump_req.payload), rd[q].en.eq(1)]
                    m.next = "DUMP"
                with m.Elif(self.instr.valid):
                    m.d.sync += [form.eq(ip.form), addr.eq(ip.addr), err.eq(in_err),
                                 pending.eq(ic["used"]), beat.eq(0), cycles.eq(0)]
                    with m.If(in_err != Error.NONE):
                        m.next = "ERROR"
                    with m.Elif(ic["load"]):
                        m.next = "FETCH"
                    with m.Else():
                        m.next = "RECV"

            with m.State("DUMP"):
                m.d.comb += [self.dump.valid.eq(1), self.dump.payload.eq(Cat(*[rd[q].data for q in range(Q)]))]
                with m.If(self.dump.ready):
                    m.next = "IDLE"

            with m.State("ERROR"):
                nbeats = Mux(fc["valid"] & fc["load"], fc["nregs"], 1)
                last = beat == nbeats - 1
                m.d.comb += [self.result.valid.eq(1), self.result.payload.error.eq(err),
                             self.result.payload.last.eq(last)]
                with m.If(self.result.ready):
                    m.d.sync += beat.eq(beat + 1)
                    with m.If(last):
                        m.next = "IDLE"

            with m.State("FETCH"):
                m.d.comb += sched.eligible.eq(eligible)
                for q in range(Q):
                    m.d.comb += rd[q].en.eq(sched.grant[q].valid)
                m.d.sync += [pending.eq(pending & ~sched.served), served_d.eq(sched.served)]
                with m.If(sched.served.any()):
                    m.d.sync += cycles.eq(cycles + 1)
                with m.If((pending & ~sched.served) == 0):
                    m.next = "LAND"

            with m.State("LAND"):  # the last rows land in the row buffer
                m.next = "EMIT"

            with m.State("EMIT"):
                last = beat == fc["nregs"] - 1
                m.d.comb += [self.result.valid.eq(1), self.result.payload.data.eq(shuffled),
                             self.result.payload.last.eq(last), self.result.payload.cycles.eq(reported)]
                with m.If(self.result.ready):
                    m.d.sync += beat.eq(beat + 1)
                    with m.If(last):
                        m.next = "IDLE"

            with m.State("RECV"):
                m.d.comb += self.store.ready.eq(1)
                with m.If(self.store.valid):
                    with m.Switch(form):
                        for f, inf in enumerate(infos):
                            if inf.load:
                                continue
                            with m.Case(f):
                                with m.Switch(beat):
                                    for r in range(inf.nregs):
                                        with m.Case(r):
                                            for t in range(R):
                                                for b in range(4):
                                                    row, byte = (int(x) for x in inf.table[t, r, b])
                                                    k = 8 * (4 * t + b)
                                                    m.d.sync += rowbuf[row][8 * byte:8 * byte + 8].eq(
                                                        store_flat[k:k + 8])
                    m.d.sync += beat.eq(beat + 1)
                    with m.If(beat == fc["nregs"] - 1):
                        m.d.sync += beat.eq(0)
                        m.next = "WRITE"

            with m.State("WRITE"):
                m.d.comb += sched.eligible.eq(eligible)
                for q in range(Q):
                    g = sched.grant[q]
                    with m.Switch(g.row):
                        for i in range(R):
                            with m.Case(i):
                                m.d.comb += wr[q].data.eq(rowbuf[i])
                    m.d.comb += [wr[q].addr.eq(g.line), wr[q].en.eq(g.valid)]
                m.d.sync += [pending.eq(pending & ~sched.served), cycles.eq(cycles + 1)]
                with m.If((pending & ~sched.served) == 0):
                    m.next = "DONE"

            with m.State("DONE"):
                m.d.comb += [self.result.valid.eq(1), self.result.payload.last.eq(1),
                             self.result.payload.cycles.eq(reported)]
                with m.If(self.result.ready):
                    m.next = "IDLE"
        return m
