"""The load/store unit: banked shared memory, bank scheduler, row crossbar, decompressor and
fragment shuffles for every ldmatrix / stmatrix form and wmma.load from shared memory.

Data flow (docs/ARCHITECTURE.md): an instruction (form id + 32 thread addresses) is checked;
its rows are served by the bank scheduler, one distinct address per bank quad per cycle (from
a window of ``Params.window`` rows: one 8-row group under h200), into the row buffer, a ring
of 8-slot blocks (through the decompressor); the fragment shuffle, generated from the model's
layout tables, turns the row buffer into one result beat per destination register. stmatrix
takes one data beat per source register, shuffles it into rows the other way, and writes the
rows back through the scheduler (under h200 each window straight from its beat). wmma.load generates its chunk addresses from the matrix
address and the stride and runs like an ldmatrix whose rows are those chunks, in one or two
passes (:mod:`tensorlsu.hdl.forms`).
"""

from __future__ import annotations

import operator
from functools import reduce

from amaranth import C, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from tensorlsu.sim.model import WMMA_ADDR_ALIGN

from . import forms
from .crossbar import BankCrossbar
from .decompress import FORMAT_CODES, Decompressor
from .mux import mux_tree
from .params import GROUP_ROWS, ROW_BYTES, Params
from .scheduler import BankScheduler
from .shuffle import LoadShuffle, StoreShuffle, beat_rows

__all__ = ["Error", "LoadStoreUnit", "FORM_BITS", "ADDR_BITS", "CYCLE_BITS"]

#: Width of the form-id field of an instruction.
FORM_BITS = (len(forms.FORMS) - 1).bit_length()
#: Width of a thread's address operand.
ADDR_BITS = 32
#: Width of the bank-cycle count reported with each result beat.
CYCLE_BITS = 8
_ROW_BITS = 8 * ROW_BYTES
_FMT = FORMAT_CODES


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
    #: A wmma.load stride below the leading dimension, or not a multiple of 16 bytes (of the
    #: whole line, where a line is narrower).
    STRIDE = 5


class LoadStoreUnit(wiring.Component):
    """Warp-level matrix load/store unit for ldmatrix, stmatrix and wmma.load.

    Pipelined: an accepted instruction is checked in A and waits, checked and with its row
    addresses, in a queue of two passes (B); the banks serve one pass's rows while the
    result stage emits the previous one's beats; each load
    takes the next blocks of the row-buffer ring, and a block is filled again once the beats
    that read it have left. A load's beat leaves as soon as the rows it needs have landed.

    Parameters
    ----------
    params : Params
        Validated parameters (lanes, banks, bank width, shared-memory size, policy); keyword
        arguments build one when ``params`` is omitted.

    Members
    -------
    instr : In(stream.Signature(StructLayout{form, addr, stride}))
        Form id (:func:`tensorlsu.hdl.forms.form_id`) and each thread's row address; for
        wmma.load ``addr[0]`` is the matrix address (a shared-memory offset) and ``stride``
        the stride operand in elements.
    store : In(stream.Signature(ArrayLayout(32, lanes)))
        stmatrix source registers, one beat per register, after the instruction.
    result : Out(stream.Signature(StructLayout{data, error, last, cycles}))
        ldmatrix / wmma.load: one beat per destination register (a .f64 register is two beats,
        low word first); stmatrix: one completion beat. A refused
        instruction gives the same number of beats with ``error`` set and zero data.
        ``cycles``, on the last beat, is the number of cycles the instruction occupied the
        banks (earlier beats may leave before the last rows are read, and carry 0).
    fill : In(stream.Signature(StructLayout{line, data}))
        Bank-parallel write of one line (all banks) while idle: DMA fills, test images.
    dump_req, dump : In / Out(stream.Signature(...))
        Bank-parallel read of one line while idle.
    """

    def __new__(cls, params: Params | None = None, **kwargs):
        # Refuse bad parameters before the component exists (no half-built elaboratable).
        if params is None:
            Params(**kwargs)
        return super().__new__(cls)

    def __init__(self, params: Params | None = None, **kwargs):
        if params is None:
            params = Params(**kwargs)
        elif kwargs:
            raise TypeError("give either params or keyword parameters, not both")
        if not isinstance(params, Params):
            raise TypeError(f"params must be a Params, not {type(params).__name__}")
        self.params = p = params
        self.line_bits = p.line_bits
        lanes = p.lanes
        self.instr_layout = data.StructLayout({
            "form": unsigned(FORM_BITS), "addr": data.ArrayLayout(unsigned(ADDR_BITS), lanes),
            "stride": unsigned(ADDR_BITS)})
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
        W = p.window                    # slots the scheduler mixes in one cycle
        NW = R // W
        qbits = max(1, (Q - 1).bit_length())
        rowbits = qbits + LB            # row index within shared memory
        infos = [forms.info(f) for f in range(len(forms.FORMS))]
        wmmas = [(f, inf) for f, inf in enumerate(infos) if inf.wmma]
        # instruction entries: one emitting, one filled and waiting, one filling; an entry is
        # taken only the cycle after its previous instruction gave its last beat, so the take
        # (and all of F) depends on no result handshake of this cycle
        NBUF = 3
        BLK = forms.BLOCK               # slots per block of the row buffer
        NB = p.row_blocks               # blocks in the row buffer ring
        LOGB = R // BLK                 # blocks of one instruction
        # h200: stmatrix beat r stores exactly window r (8 rows), so each window is written
        # straight from the store stream's payload, which a producer holds until ready; the
        # packer mixes all windows and keeps every beat in store rows first.
        direct = W == GROUP_ROWS

        # ---- bank quads: one memory of 16-byte words per group of banks ------------------
        rd, wr = [], []
        for q in range(Q):
            mem = memory.Memory(shape=unsigned(_ROW_BITS), depth=p.lines, init=[])
            m.submodules[f"quad{q}"] = mem
            rd.append(mem.read_port())
            wr.append(mem.write_port())
        # Each quad's read and write ports share one address: a quad is never read and written
        # in one cycle (loads read, stores write, fill and dump run alone), which synth/run.py
        # relies on to leave the block RAMs' read-during-write result open.
        q_addr = [Signal(LB, name=f"quad{q}_addr") for q in range(Q)]
        for q in range(Q):
            m.d.comb += [rd[q].en.eq(0), rd[q].addr.eq(q_addr[q]), wr[q].addr.eq(q_addr[q])]

        # ---- per-form constants of a form id ---------------------------------------------
        const_shapes = {"valid": 1, "load": 1, "wmma": 1, "used": R, "nregs": range(R + 1), "fmt": 2,
                        "pend": range(R + 1), "lastpass": 1, "lastwin": range(NW), "align": range(NB),
                        "blocks": range(NB + 1), "need0": R, "rest0": LOGB,
                        "lastbeat": range(R)}
        per_pass = ("used", "pend", "lastwin", "blocks", "need0", "rest0")   # the keys that differ between passes

        def const_regs(prefix, keys=tuple(const_shapes)):
            return {k: Signal(const_shapes[k], name=f"{prefix}_{k}") for k in keys}

        def form_consts(fid_sig, prefix, pass_sig=None):
            """Constants of a form id; ``used`` and ``pend`` (its last beat) of pass
            ``pass_sig`` (pass 0 when None)."""
            c = {k: Signal(shape, name=f"{prefix}_{k}") for k, shape in const_shapes.items()}
            with m.Switch(fid_sig):
                for f, inf in enumerate(infos):
                    with m.Case(f):
                        m.d.comb += [c["valid"].eq(1), c["load"].eq(inf.load), c["wmma"].eq(inf.wmma),
                                     c["nregs"].eq(inf.nregs),
                                     # the result's last beat (a store: its completion beat)
                                     c["lastbeat"].eq(inf.nregs - 1 if inf.load else 0),
                                     c["fmt"].eq(_FMT[inf.src_fmt]),
                                     c["lastpass"].eq(len(inf.passes) - 1)]
                        # buffer space: packed entries take whole halves of the ring
                        m.d.comb += c["align"].eq(max(inf.align, W // BLK) - 1)
                        # need0 / rest0: the slots the pass's first result beat reads, and the
                        # blocks its beats read from there on
                        first = [inf.pass_end(q - 1) + 1 if q else 0 for q in range(len(inf.passes))]
                        per = [(inf.used(q), inf.pass_end(q), (len(inf.passes[q]) - 1) // W,
                                max(inf.blocks(q), W // BLK) if inf.load else 0,
                                beat_rows(inf, first[q]) if inf.load else 0,
                                inf.rest_blocks(first[q]) if inf.load else 0)
                               for q in range(len(inf.passes))]
                        for k, v in (("used", 0), ("pend", 1), ("lastwin", 2), ("blocks", 3), ("need0", 4),
                                     ("rest0", 5)):
                            if pass_sig is None or len(per) == 1:
                                m.d.comb += c[k].eq(per[0][v])
                            else:
                                m.d.comb += c[k].eq(Mux(pass_sig, per[1][v], per[0][v]))
            return c

        # ---- checks of an incoming instruction -------------------------------------------
        ip = self.instr.payload
        ic = form_consts(ip.form, "in")
        ic1 = form_consts(ip.form, "in1", C(1))     # the second pass's constants
        mis, oor = Signal(R), Signal(R)
        rowused = Signal(R)             # rows of an ldmatrix / stmatrix
        m.d.comb += rowused.eq(Mux(ic["wmma"], 0, ic["used"]))
        limit = p.smem_bytes - ROW_BYTES
        for i in range(R):
            a = ip.addr[i]
            m.d.comb += [mis[i].eq(rowused[i] & (a[:4] != 0)),
                         oor[i].eq(rowused[i] & (a > limit))]
        # wmma.load: matrix address, stride (the model's rules) and the span of its lines
        w_lg_bits = Signal(range(7))    # log2 of the element width
        w_lg_lines = Signal(range(6))   # log2 of the number of lines
        w_lbytes = Signal(range(129))   # bytes per line
        w_least = Signal(range(129))    # leading dimension: the least stride
        w_gmask = Signal(8)             # the stride is a multiple of this + 1
        with m.Switch(ip.form):
            for f, inf in wmmas:
                with m.Case(f):
                    m.d.comb += [w_lg_bits.eq(inf.bits.bit_length() - 1),
                                 w_lg_lines.eq(inf.lines.bit_length() - 1), w_lbytes.eq(inf.line_bytes),
                                 w_least.eq(inf.least), w_gmask.eq(inf.stride_grain - 1)]
        # A stride of 2^(sw+3) elements or more puts the second line beyond shared memory
        # even for 1-bit elements: the span arithmetic only needs the low sw+3 bits.
        sw = p.smem_bytes.bit_length() + 3
        w_huge = Signal()
        w_sb = Signal(sw + 3)           # stride in bytes
        w_span = Signal(sw + 8)         # first byte of the last line, from the matrix address
        m.d.comb += [w_huge.eq(ip.stride[sw:].any()),
                     w_sb.eq((ip.stride[:sw] << w_lg_bits) >> 3), w_span.eq((w_sb << w_lg_lines) - w_sb)]
        w_err = Signal(Error)
        with m.If(ip.addr[0][:(WMMA_ADDR_ALIGN - 1).bit_length()] != 0):
            m.d.comb += w_err.eq(Error.MISALIGNED)
        with m.Elif((ip.stride < w_least) | ((ip.stride & w_gmask) != 0)):
            m.d.comb += w_err.eq(Error.STRIDE)
        with m.Elif(w_huge | (ip.addr[0] + w_span + w_lbytes > p.smem_bytes)):
            m.d.comb += w_err.eq(Error.OUT_OF_RANGE)

        in_err = Signal(Error)
        with m.If(~ic["valid"]):
            m.d.comb += in_err.eq(Error.UNSUPPORTED)
        with m.Elif(ic["wmma"]):
            m.d.comb += in_err.eq(w_err)
        with m.Elif(mis.any()):
            m.d.comb += in_err.eq(Error.MISALIGNED)
        with m.Elif(oor.any()):
            m.d.comb += in_err.eq(Error.OUT_OF_RANGE)

        # ---- A: accepted instruction -----------------------------------------------------
        a_valid = Signal()
        a_form = Signal(FORM_BITS)
        # wide data registers have no reset: nothing reads them before their valid bits say so
        a_addr = Signal(data.ArrayLayout(unsigned(ADDR_BITS), R), reset_less=True)
        a_err_in = Signal(Error)        # the checks of the accepted instruction but overlap
        a_hit = Signal()                # the stmatrix overlap check found two threads on a row
        a_sb = Signal(p.smem_bytes.bit_length())   # wmma stride in bytes (checked in range)
        a_pass = Signal()
        a_move = Signal()               # the pass in A moves on to B
        a_done = Signal()               # ... and it is the instruction's last
        a_chk_done = Signal()           # the stmatrix overlap check is complete
        # the constants of the pass in A, registered when the instruction is accepted (no form
        # decode between A and the stages after it); the second pass's constants wait in ac1
        ac = const_regs("a")
        ac1 = const_regs("a1", per_pass)
        # (an overlap refuses a store, of one pass: a_err_in decides when A is done)
        m.d.comb += a_done.eq(a_move & ((a_err_in != Error.NONE) | (a_pass == ac["lastpass"])))

        # chunk addresses of the wmma pass in A: addr + line · stride + 16 · chunk. Per slot:
        # the line it holds and an index into the chunks it holds in some form, decoded from
        # the form as the instruction is accepted, for both passes, and registered (no form
        # decode before the arithmetic). The line offset is a product (an 18×18 multiplier
        # on the FPGA): a multiplexer over each slot's up to 10 possible line offsets took
        # 1.7k LUT4 more.
        aw = (p.smem_bytes - 1).bit_length()   # the span was checked: chunks lie in shared memory
        slot_chunks = [sorted({inf.passes[q][s][1] for _, inf in wmmas for q in range(len(inf.passes))
                               if s < len(inf.passes[q])}) for s in range(R)]
        nlines = max(inf.lines for _, inf in wmmas)
        sel_shapes = [range(nlines)] * R + [range(max(1, len(o))) for o in slot_chunks]
        in_idx = [[Signal(sh, name=f"in{q}_wsel{k}") for k, sh in enumerate(sel_shapes)] for q in range(2)]
        a_idx = [[Signal(sh, name=f"a{q}_wsel{k}") for k, sh in enumerate(sel_shapes)] for q in range(2)]
        with m.Switch(ip.form):
            for f, inf in wmmas:
                with m.Case(f):
                    for q in range(2):
                        ps = inf.passes[min(q, len(inf.passes) - 1)]
                        for s in range(min(R, len(ps))):
                            m.d.comb += [in_idx[q][s].eq(ps[s][0]),
                                         in_idx[q][R + s].eq(slot_chunks[s].index(ps[s][1]))]
        l_idx, c_idx = a_idx[0][:R], a_idx[0][R:]
        w_addr = []
        for s in range(R):
            wa = Signal(aw, name=f"w_addr{s}")
            line_off = Signal(aw, name=f"w_off{s}")
            chunk = mux_tree(c_idx[s], [c * ROW_BYTES for c in slot_chunks[s]])
            m.d.comb += [line_off.eq(a_sb * l_idx[s]), wa.eq(a_addr[0][:aw] + line_off + chunk)]
            w_addr.append(wa)

        # ---- B: a queue of two checked passes, with their row (or chunk) addresses and
        # constants, all registered: handing one to the banks involves no decode, comparator
        # or adder, and A moves on whenever the queue has room (a register), so that the
        # instruction port's ready depends on no bank or result-stage decision
        NQ = 2
        bq_valid = Signal(NQ)
        bq_form = [Signal(FORM_BITS, name=f"b{k}_form") for k in range(NQ)]
        bq_err = [Signal(Error, name=f"b{k}_err") for k in range(NQ)]
        # the overlap verdict enters the queue as it is, and becomes the error when the pass is
        # read out: the 256 comparators end in a register
        bq_ovl = Signal(NQ)
        bq_addr = [[Signal(aw, name=f"b{k}_addr{i}", reset_less=True) for i in range(R)] for k in range(NQ)]
        bq_c = [const_regs(f"b{k}") for k in range(NQ)]
        b_wp, b_rp = Signal(range(NQ), name="b_wp"), Signal(range(NQ), name="b_rp")
        # the oldest pass of the queue
        b_valid = Signal()
        b_form = Signal(FORM_BITS)
        b_err = Signal(Error)
        b_addr = [Signal(aw, name=f"b_addr{i}") for i in range(R)]
        bc = {k: Signal(shape, name=f"b_{k}") for k, shape in const_shapes.items()}
        m.d.comb += b_valid.eq(bq_valid.bit_select(b_rp, 1))
        with m.Switch(b_rp):
            for k in range(NQ):
                with m.Case(k):
                    m.d.comb += [b_form.eq(bq_form[k]),
                                 b_err.eq(Mux(bq_ovl[k] & (bq_err[k] == Error.NONE), Error.OVERLAP, bq_err[k]))]
                    m.d.comb += [b_addr[i].eq(bq_addr[k][i]) for i in range(R)]
                    m.d.comb += [bc[c].eq(bq_c[k][c]) for c in bc]
        b_take = Signal()               # the oldest pass moves on to an entry (and to F)
        take_ok = Signal()              # ... and F takes it (it was not refused)
        m.d.comb += take_ok.eq(b_take & (b_err == Error.NONE))

        # ---- instruction entries, in order: one emitting, one waiting, one filling ---------
        e_valid = Signal(NBUF)
        e_set, e_clr = Signal(NBUF), Signal(NBUF)
        e_form = [Signal(FORM_BITS, name=f"e{b}_form") for b in range(NBUF)]
        e_err = [Signal(Error, name=f"e{b}_err") for b in range(NBUF)]
        ec = [const_regs(f"e{b}", ("load", "wmma", "nregs", "pend", "lastbeat")) for b in range(NBUF)]
        # the slots the entry's next result beat reads: set from the pass's constants when
        # the entry is taken, then decoded one beat ahead, so that the result's valid is a
        # comparison of registers (no form decode before the handshake)
        e_need = [Signal(R, name=f"e{b}_need") for b in range(NBUF)]
        # ... and the ring blocks its beats read from the next one on, the same way
        e_rest = [Signal(LOGB, name=f"e{b}_rest") for b in range(NBUF)]
        landed = [Signal(R, name=f"e{b}_landed") for b in range(NBUF)]
        cyc = [Signal(CYCLE_BITS, name=f"e{b}_cycles") for b in range(NBUF)]
        wdone = Signal(NBUF)
        head, tail = Signal(range(NBUF), name="head"), Signal(range(NBUF), name="tail")

        def after(b):
            """The entry after ``b``, in order."""
            return Mux(b == NBUF - 1, 0, b + 1)
        e_start = [Signal(range(NB), name=f"e{b}_start") for b in range(NBUF)]  # first ring block
        e_bmask = [Signal(NB, name=f"e{b}_blocks") for b in range(NBUF)]  # ring blocks it fills
        # the load row buffer: a ring of NB blocks; an instruction's slot s is ring slot
        # (BLK · start + s) mod (BLK · NB)
        rowbuf = [Signal(_ROW_BITS, name=f"row{i}", reset_less=True) for i in range(BLK * NB)]
        sbuf = [] if direct else [Signal(_ROW_BITS, name=f"s_row{i}", reset_less=True)
                                  for i in range(R)]  # stmatrix rows (packed)

        # ---- F: the instruction the banks serve ------------------------------------------
        f_valid = Signal()
        f_buf = Signal(range(NBUF))         # the entry F fills
        f_start = Signal(range(NB))
        # ring blocks the oldest entry's remaining beats still read, as of the last cycle (a
        # register, off the scheduler's path; one cycle late is only conservative)
        busy = Signal(NB)
        f_form = Signal(FORM_BITS)
        f_addr = [Signal(aw, name=f"f_addr{i}", reset_less=True) for i in range(R)]
        f_pending = Signal(R)
        f_recv = Signal(range(R + 1))       # stmatrix beats received
        # the constants F needs, registered when it takes the instruction (no form decode
        # on the scheduler's path)
        fc = {k: Signal(shape, name=f"f_{k}") for k, shape in (("load", 1), ("nregs", range(R + 1)), ("fmt", 2))}
        quad_of = [f_addr[i][4:4 + qbits] for i in range(R)]
        line_of = [f_addr[i][4 + qbits:4 + qbits + LB] for i in range(R)]

        # The window served this cycle (h200: one 8-row group at a time, wmma chunks too, eight
        # slots per group): the windows are served in order, and every slot of windows 0 …
        # f_lastwin is used. F's rows shift down by a window as one is done, so the window
        # is always rows 0 … W - 1 (no multiplexer on the scheduler's loop); f_win counts.
        # Only the window's rows reach the scheduler, the landing and the store crossbars.
        f_win = Signal(range(NW))
        f_lastwin = Signal(range(NW))
        f_next = Signal()               # the window is done and another follows
        w_quad, w_line = quad_of[:W], line_of[:W]
        # Under h200 the row comparisons of the window are registers: the first window's are
        # made when F takes the pass (from B's registers), each next one's from F's next rows
        # while the window before it is served. The scheduler only combines them.
        pairs = NW > 1
        npairs = W * (W - 1) // 2

        def pair_bits(rows):
            """Which pairs of ``rows`` share a quad, and which an address (bit ``pair(i, j)``)."""
            sq, sl = [None] * npairs, [None] * npairs
            for i in range(W):
                for j in range(i):
                    a, b = rows[i], rows[j]
                    k = BankScheduler.pair(i, j)
                    sq[k] = a[4:4 + qbits] == b[4:4 + qbits]
                    sl[k] = sq[k] & (a[4 + qbits:] == b[4 + qbits:])
            return Cat(*sq), Cat(*sl)

        def clash_of(pend, sq, sl):
            """Two of the rows ``pend`` want different lines of one quad: the window is not
            served in one cycle (the scheduler's contract, formal/specs.py)."""
            return Cat(*[pend[i] & pend[j] & sq[BankScheduler.pair(i, j)] & ~sl[BankScheduler.pair(i, j)]
                         for i in range(W) for j in range(i)]).any()
        f_sq = Signal(npairs, name="f_same_quad")
        f_sl = Signal(npairs, name="f_same_line")
        f_all_recv = Signal()           # every stmatrix beat is in (direct: it is by the last window)
        m.d.comb += f_all_recv.eq(fc["load"] | (f_recv == fc["nregs"]) | direct)
        # a load's window waits while the oldest entry, another one, still reads its blocks
        win_first = Signal(range(NB))   # the window's first ring block
        m.d.comb += win_first.eq(f_start + f_win * (W // BLK))
        # the window's ring blocks, a register: set when F takes a pass, turned by a window's
        # blocks as the next window comes (no adder or decoder before the scheduler)
        win_blocks = Signal(NB)
        # A load's window is blocked while the head, another entry, still reads one of its
        # blocks, or a filled entry waiting behind the head holds one: a register, set from
        # the next cycle's head, entries, F's entry and window and the ring's release (at the
        # end), so that F's loop (go-ahead → window end → finish → B's take) starts from it.
        f_blocked = Signal()

        def blocked(head, f_buf, e_valid, e_bmask, win_blocks, busy):
            waiting = reduce(operator.or_, [Mux(e_valid[b] & (head != b) & (f_buf != b), e_bmask[b], 0)
                                            for b in range(NBUF)])
            return (head != f_buf) & (win_blocks & (busy | waiting)).any()
        # The window is served or waits as a whole: a load while the blocks are read, an h200
        # stmatrix until its beat is there, a packed one until all its beats are (a packer
        # that mixes matrices waits for all of them, so that its cycles stay the busiest
        # quad's row count). The scheduler sees the pending rows regardless, so that the
        # lines it picks (the bank addresses) do not wait for this decision; the accesses and
        # what counts as served do.
        win_ok = Signal()
        m.d.comb += win_ok.eq(f_valid & Mux(fc["load"], ~f_blocked, self.store.valid if direct else f_all_recv))
        served = Signal(W)

        # the scheduler and the write and landing crossbars of the window
        xbar = m.submodules.crossbar = BankCrossbar(rows=W, quads=Q, line_bits=LB, pairs=pairs)
        m.d.comb += [xbar.eligible.eq(f_pending[:W]), served.eq(Mux(win_ok, xbar.served, 0))]
        for j in range(W):
            m.d.comb += [xbar.quad[j].eq(w_quad[j]), xbar.line[j].eq(w_line[j])]
        if pairs:
            m.d.comb += [xbar.same_quad.eq(f_sq), xbar.same_line.eq(f_sl)]
        # the write crossbar's next window: the pass F takes (from B), or F's next window
        m.d.comb += [xbar.take.eq(take_ok), xbar.take_rows.eq(bc["used"][:W]),
                     xbar.step.eq(win_ok)]
        m.d.comb += [xbar.take_quad[j].eq(b_addr[j][4:4 + qbits]) for j in range(W)]
        if pairs:
            m.d.comb += [xbar.advance.eq(f_next), xbar.next_rows.eq(f_pending[W:2 * W])]
            m.d.comb += [xbar.next_quad[j].eq(quad_of[W + j]) for j in range(W)]
        # the banks work this cycle (some row is pending: the scheduler serves one,
        # formal/specs.py)
        any_grant = Signal()
        win_done = Signal()             # the window's last pending rows are served now
        if pairs:
            # The window's end needs no scheduler: every pending row is served this cycle when
            # the window may be served and no two pending rows want different lines of one
            # quad. Whether the window is empty and whether its rows clash are registers, set
            # with the pending rows and their comparisons (below), so F's loop (window end →
            # next window or next pass → B's take) starts from them.
            w_empty = Signal(init=1)
            w_clash = Signal()
            m.d.comb += [win_done.eq(w_empty | (win_ok & ~w_clash)), any_grant.eq(win_ok & ~w_empty)]
        else:
            m.d.comb += [win_done.eq((f_pending[:W] & ~served) == 0), any_grant.eq(win_ok & f_pending[:W].any())]
        m.d.comb += f_next.eq(f_valid & win_done & (f_win != f_lastwin))
        with m.If(f_next):
            m.d.sync += f_win.eq(f_win + 1)
            m.d.sync += [f_addr[i].eq(f_addr[i + W]) for i in range(R - W)]
            if pairs:
                nsq, nsl = pair_bits(f_addr[W:2 * W])
                m.d.sync += [f_sq.eq(nsq), f_sl.eq(nsl), w_empty.eq(f_pending[W:2 * W] == 0),
                             w_clash.eq(clash_of(f_pending[W:2 * W], nsq, nsl))]
        if pairs:
            # the same window, after this cycle: empty once done; its rows left clash as the
            # rows not served now do (nothing is served unless the window may be)
            with m.Elif(f_valid):
                m.d.sync += w_empty.eq(win_done)
                with m.If(win_ok):
                    m.d.sync += w_clash.eq(clash_of(f_pending[:W] & ~xbar.served, f_sq, f_sl))
        f_finish = Signal()
        m.d.comb += f_finish.eq(f_valid & f_all_recv & (f_win == f_lastwin) & win_done)
        f_free = Signal()
        m.d.comb += f_free.eq(~f_valid | f_finish)

        # the window's store rows
        sshuf = m.submodules.store_shuffle = StoreShuffle(lanes=R, form_bits=FORM_BITS)
        s_win = [Signal(_ROW_BITS, name=f"s_win{j}") for j in range(W)]
        if direct:
            m.d.comb += [sshuf.form.eq(f_form), sshuf.beat.eq(f_win), sshuf.data.eq(self.store.payload)]
            m.d.comb += [s_win[j].eq(sshuf.rows[j]) for j in range(W)]
        else:
            m.d.comb += [s_win[j].eq(mux_tree(f_win, sbuf[j::W])) for j in range(W)]
        # loads read, stores write, the granted line of every quad
        m.d.comb += [xbar.rows[j].eq(s_win[j]) for j in range(W)]
        for q in range(Q):
            m.d.comb += q_addr[q].eq(xbar.addr[q])
            with m.If(fc["load"]):
                m.d.comb += rd[q].en.eq(xbar.access[q] & win_ok)
            with m.Else():
                m.d.comb += wr[q].en.eq(xbar.access[q] & win_ok)
            m.d.comb += wr[q].data.eq(xbar.write[q])

        with m.If(f_valid):
            with m.If(any_grant):
                with m.Switch(f_buf):
                    for b in range(NBUF):
                        with m.Case(b):
                            m.d.sync += cyc[b].eq(cyc[b] + 1)
            m.d.sync += f_pending.eq(Mux(f_next, f_pending >> W, f_pending & ~Cat(served, C(0, R - W))))

        # ---- rows land one cycle after they were read (through the decompressor) ---------
        land = Signal(W)                # window slots landing
        land_win = Signal(range(NW))
        land_buf = Signal(range(NBUF))
        land_first = Signal(range(NB))  # ring block of the landing window's first slot
        land_fmt = Signal(2)
        m.d.sync += [land.eq(Mux(fc["load"], served, 0)), land_win.eq(f_win),
                     land_buf.eq(f_buf), land_first.eq(win_first), land_fmt.eq(fc["fmt"])]
        # a wmma line narrower than a row (8 bytes) may start in the upper half of its row:
        # such a slot lands with its halves swapped, so its bytes are always bytes 0-7
        half_slots = sorted({s % W for _, inf in wmmas if inf.line_bytes < ROW_BYTES
                             for q in inf.passes for s in range(len(q))})
        land_half = Signal(W)
        m.d.sync += [land_half[j].eq(f_addr[j][3]) for j in half_slots]
        for q in range(Q):
            d = m.submodules[f"decompress{q}"] = Decompressor()
            m.d.comb += [d.row.eq(rd[q].data), d.fmt.eq(land_fmt)]
            m.d.comb += xbar.quad_data[q].eq(d.out)
        land_all = Signal(R)            # the landing slots, at their place in the buffer
        with m.Switch(land_win):
            for w in range(NW):
                with m.Case(w):
                    m.d.comb += land_all.eq(land << (w * W))
        for j in range(W):
            row_in = Signal(_ROW_BITS, name=f"row_in{j}")
            m.d.comb += row_in.eq(xbar.land[j])
            if j in half_slots:
                # only the low half of such a slot is ever read: it takes the high half of
                # the row when the line starts at byte 8
                h = _ROW_BITS // 2
                row_q = row_in
                row_in = Signal(_ROW_BITS, name=f"row_in{j}_half")
                m.d.comb += row_in.eq(Cat(Mux(land_half[j], row_q[h:], row_q[:h]), row_q[h:]))
            # windows start at multiples of W // BLK blocks (packed: a ring half)
            for first in range(0, NB, W // BLK):
                with m.If(land[j] & (land_first == first)):
                    m.d.sync += rowbuf[BLK * ((first + j // BLK) % NB) + j % BLK].eq(row_in)
        with m.Switch(land_buf):
            for b in range(NBUF):
                with m.Case(b):
                    m.d.sync += landed[b].eq(landed[b] | land_all)

        # ---- stmatrix data beats ------------------------------------------------------------
        pre = Signal()
        store_hs = Signal()
        m.d.comb += store_hs.eq(self.store.valid & self.store.ready)
        if direct:
            # a beat is taken in the cycle its window's last rows are written
            m.d.comb += self.store.ready.eq(f_valid & ~fc["load"] & win_done)
        else:
            # The first beat of the next stmatrix may arrive in the cycle the current one
            # writes its last rows (it fills other rows, or rows already read): stores run
            # back to back.
            m.d.comb += pre.eq(f_finish & b_valid & (b_err == Error.NONE) & ~e_valid.bit_select(tail, 1)
                               & bc["valid"] & ~bc["load"])
            m.d.comb += self.store.ready.eq((f_valid & ~fc["load"] & (f_recv != fc["nregs"])) | pre)
            m.d.comb += [sshuf.form.eq(Mux(pre, b_form, f_form)), sshuf.beat.eq(Mux(pre, 0, f_recv)),
                         sshuf.data.eq(self.store.payload)]
            with m.If(store_hs):
                with m.Switch(sshuf.group):
                    for g in range(R // GROUP_ROWS):
                        with m.Case(g):
                            m.d.sync += [sbuf[GROUP_ROWS * g + j].eq(sshuf.rows[j])
                                         for j in range(GROUP_ROWS)]
            with m.If(store_hs & ~pre):
                m.d.sync += f_recv.eq(f_recv + 1)
        with m.If(f_finish & ~fc["load"]):
            m.d.sync += wdone.bit_select(f_buf, 1).eq(1)

        # ---- fill and dump: bank-parallel access while nothing is in flight ---------------
        idle = Signal()
        d_valid = Signal()
        m.d.comb += idle.eq(~a_valid & (bq_valid == 0) & ~f_valid & (e_valid == 0) & ~d_valid)
        m.d.comb += [self.fill.ready.eq(idle), self.dump_req.ready.eq(idle & ~self.fill.valid)]
        with m.If(self.fill.valid & self.fill.ready):
            for q in range(Q):
                m.d.comb += [q_addr[q].eq(self.fill.payload.line),
                             wr[q].data.eq(self.fill.payload.data[_ROW_BITS * q:_ROW_BITS * (q + 1)]),
                             wr[q].en.eq(1)]
        with m.Elif(self.dump_req.valid & self.dump_req.ready):
            for q in range(Q):
                m.d.comb += [q_addr[q].eq(self.dump_req.payload), rd[q].en.eq(1)]
            m.d.sync += d_valid.eq(1)
        m.d.comb += [self.dump.valid.eq(d_valid), self.dump.payload.eq(Cat(*[rd[q].data for q in range(Q)]))]
        with m.If(self.dump.valid & self.dump.ready):
            m.d.sync += d_valid.eq(0)

        # ---- A → entries and F -------------------------------------------------------------
        # ring space of a load: the next blocks after the previous load's, aligned
        alloc = Signal(range(NB))
        a_start = Signal(range(NB))
        a_bmask = Signal(NB)
        m.d.comb += a_start.eq((alloc + bc["align"]) & ~bc["align"])
        m.d.comb += a_bmask.eq(Mux(bc["load"], Cat(*[
            Cat(*[(k < bc["blocks"]) & ((a_start + k)[:len(a_start)] == pb) for k in range(LOGB)]).any()
            for pb in range(NB)]), 0))
        # stmatrix overlap (two threads storing one row), in A, over one or two cycles: row i
        # is compared with rows i + d (d = 1 … 8, mod 32) of a copy that turns by 8 rows a
        # cycle, so cycle c covers distances 8c + 1 … 8c + 8: an .x1 (8 rows) needs one
        # cycle, .x2 / .x4 two (a distance d and 32 - d are the same pairs). Reported only when
        # every row is aligned and in range, so the row indices suffice. 256 comparators
        # instead of 496 pairs at once, and off the instruction port's path.
        OD = GROUP_ROWS                 # distances per cycle
        a_rot = [Signal(rowbits, name=f"a_rot{i}", reset_less=True) for i in range(R)]
        a_rot_used = Signal(R)
        a_chk = Signal()                # check cycle
        a_found = Signal()
        hits = [a_rot_used[(i + d) % R] & ac["used"][i]
                & (a_addr[i][4:4 + rowbits] == a_rot[(i + d) % R]) for i in range(R) for d in range(1, OD + 1)]
        m.d.comb += a_hit.eq(~ac["load"] & (a_found | Cat(*hits).any()))
        # x1 stores: one cycle; loads need none
        m.d.comb += a_chk_done.eq(ac["load"] | ~ac["used"][OD:].any() | a_chk)
        with m.If(self.instr.valid & self.instr.ready):
            m.d.sync += [a_rot[i].eq(ip.addr[i][4:4 + rowbits]) for i in range(R)]
            m.d.sync += [a_rot_used.eq(Mux(ic["load"], 0, ic["used"])), a_chk.eq(0), a_found.eq(0)]
        with m.Elif(a_valid & ~a_chk_done):
            m.d.sync += [a_rot[i].eq(a_rot[(i + OD) % R]) for i in range(R)]
            m.d.sync += [a_rot_used.eq(a_rot_used.rotate_right(OD)), a_chk.eq(1), a_found.eq(a_hit)]
        wb_take = Signal(NB)            # the first window's ring blocks of the pass F takes
        m.d.comb += wb_take.eq(Cat(*[Cat(*[(a_start + k)[:len(a_start)] == pb for k in range(W // BLK)]).any()
                                     for pb in range(NB)]))
        slot_free = Signal()
        m.d.comb += slot_free.eq(~e_valid.bit_select(tail, 1))
        m.d.comb += b_take.eq(b_valid & slot_free & ((b_err != Error.NONE) | f_free))
        m.d.comb += a_move.eq(a_valid & a_chk_done & ~bq_valid.all())
        m.d.comb += self.instr.ready.eq((~a_valid | a_done) & ~d_valid
                                        & ~(idle & (self.fill.valid | self.dump_req.valid)))
        with m.If(self.instr.valid & self.instr.ready):
            m.d.sync += [a_valid.eq(1), a_form.eq(ip.form), a_addr.eq(ip.addr), a_err_in.eq(in_err),
                         a_sb.eq(w_sb), a_pass.eq(0)]
            m.d.sync += [ac[k].eq(ic[k]) for k in ac] + [ac1[k].eq(ic1[k]) for k in ac1]
            m.d.sync += [a_idx[q][k].eq(in_idx[q][k]) for q in range(2) for k in range(2 * R)]
        with m.Elif(a_done):
            m.d.sync += a_valid.eq(0)
        with m.Elif(a_move):
            m.d.sync += a_pass.eq(1)
            m.d.sync += [ac[k].eq(ac1[k]) for k in ac1]
            m.d.sync += [a_idx[0][k].eq(a_idx[1][k]) for k in range(2 * R)]

        b_set, b_clr = Signal(NQ), Signal(NQ)
        with m.If(a_move):
            m.d.comb += b_set.bit_select(b_wp, 1).eq(1)
            m.d.sync += b_wp.eq(b_wp + 1)
            with m.Switch(b_wp):
                for k in range(NQ):
                    with m.Case(k):
                        m.d.sync += [bq_form[k].eq(a_form), bq_err[k].eq(a_err_in), bq_ovl[k].eq(a_hit)]
                        m.d.sync += [bq_c[k][c].eq(ac[c]) for c in bc]
                        m.d.sync += [bq_addr[k][i].eq(Mux(ac["wmma"], w_addr[i], a_addr[i][:aw])) for i in range(R)]
        with m.If(b_take):
            m.d.comb += b_clr.bit_select(b_rp, 1).eq(1)
            m.d.sync += b_rp.eq(b_rp + 1)
        m.d.sync += bq_valid.eq((bq_valid & ~b_clr) | b_set)

        with m.If(f_finish):
            m.d.sync += f_valid.eq(0)
        with m.If(b_take):
            m.d.comb += e_set.bit_select(tail, 1).eq(1)
            m.d.sync += tail.eq(after(tail))
            with m.Switch(tail):
                for b in range(NBUF):
                    with m.Case(b):
                        m.d.sync += [e_form[b].eq(b_form), e_err[b].eq(b_err),
                                     e_start[b].eq(a_start),
                                     landed[b].eq(0), cyc[b].eq(0), wdone[b].eq(0), e_need[b].eq(bc["need0"]),
                                     e_rest[b].eq(bc["rest0"])]
                        m.d.sync += [ec[b][k].eq(bc[k]) for k in ec[b]]
            with m.If(b_err == Error.NONE):
                with m.If(bc["load"]):
                    m.d.sync += alloc.eq(a_start + bc["blocks"])
                m.d.sync += [fc[k].eq(bc[k]) for k in fc]
                m.d.sync += [f_valid.eq(1), f_form.eq(b_form), f_win.eq(0), f_start.eq(a_start),
                             f_lastwin.eq(bc["lastwin"]), f_pending.eq(bc["used"]), f_recv.eq(store_hs & pre)]
                m.d.sync += [f_addr[i].eq(b_addr[i]) for i in range(R)]
                if pairs:
                    tsq, tsl = pair_bits(b_addr[:W])
                    m.d.sync += [f_sq.eq(tsq), f_sl.eq(tsl), w_empty.eq(bc["used"][:W] == 0),
                                 w_clash.eq(clash_of(bc["used"][:W], tsq, tsl))]

        # ---- E: result beats of the oldest entry, in order --------------------------------
        h_form = Signal(FORM_BITS)
        h_err = Signal(Error)
        h_landed = Signal(R)
        h_cyc = Signal(CYCLE_BITS)
        h_start = Signal(range(NB))
        o_bmask = Signal(NB)            # the next entry's blocks
        hc = {k: Signal(const_shapes[k], name=f"h_{k}") for k in ec[0]}
        with m.Switch(head):
            for b in range(NBUF):
                with m.Case(b):
                    m.d.comb += [h_form.eq(e_form[b]), h_err.eq(e_err[b]),
                                 h_landed.eq(landed[b]), h_cyc.eq(cyc[b]), h_start.eq(e_start[b]),
                                 o_bmask.eq(Mux(e_valid[(b + 1) % NBUF], e_bmask[(b + 1) % NBUF], 0))]
                    m.d.comb += [hc[k].eq(ec[b][k]) for k in hc]
        h_valid = Signal()
        m.d.comb += h_valid.eq(e_valid.bit_select(head, 1))
        beat = Signal(range(R + 1))
        shuf = m.submodules.shuffle = LoadShuffle(lanes=R, form_bits=FORM_BITS, blocks=NB)
        m.d.comb += [shuf.form.eq(h_form), shuf.beat.eq(beat), shuf.start.eq(h_start)]
        m.d.comb += [shuf.rows[i].eq(rowbuf[i]) for i in range(BLK * NB)]
        # blocks the head's beats from this one on read (the ring's release)
        h_rest = Signal(LOGB)
        rest_next = Signal(LOGB)        # ... from its next beat on, within the entry
        with m.Switch(head):
            for b in range(NBUF):
                with m.Case(b):
                    m.d.comb += h_rest.eq(e_rest[b])
        h_busy = Signal(NB)
        m.d.comb += h_busy.eq(Mux(h_valid & (h_err == Error.NONE), Cat(*[
            Cat(*[h_rest[k] & ((h_start + k)[:len(h_start)] == pb) for k in range(LOGB)]).any()
            for pb in range(NB)]), 0))
        shuffled = shuf.out
        need = Signal(R)                # the head's current beat
        need_next = Signal(R)           # ... and its next one, within the entry
        with m.Switch(head):
            for b in range(NBUF):
                with m.Case(b):
                    m.d.comb += need.eq(e_need[b])
        with m.Switch(h_form):
            for f, inf in enumerate(infos):
                if inf.load:
                    with m.Case(f):
                        with m.Switch(beat):
                            for r in range(inf.nregs - 1):
                                with m.Case(r):
                                    m.d.comb += [need_next.eq(beat_rows(inf, r + 1)),
                                                 rest_next.eq(inf.rest_blocks(r + 1))]
        carry = Signal(CYCLE_BITS)      # bank cycles of the instruction's earlier pass
        reported = Signal(CYCLE_BITS)
        if p.schedule == "packed":
            # a packer still delivers at most one 128-byte register beat per cycle
            m.d.comb += reported.eq(Mux(~hc["wmma"] & (h_cyc < hc["nregs"]), hc["nregs"], h_cyc + carry))
        else:
            m.d.comb += reported.eq(h_cyc + carry)

        last = Signal()
        entry_end = Signal()            # the entry's last beat (a pass may end before `last`)
        res = self.result.payload
        with m.If(h_valid):
            with m.If(h_err != Error.NONE):
                # a refused load gives all its beats, anything else one
                m.d.comb += [self.result.valid.eq(1), res.error.eq(h_err), last.eq(beat == hc["lastbeat"]),
                             entry_end.eq(last)]
            with m.Elif(hc["load"]):
                # the bank-cycle count is final (and reported) on the last beat only
                m.d.comb += [self.result.valid.eq((h_landed & need) == need), res.data.eq(shuffled),
                             res.cycles.eq(Mux(last, reported, 0)), last.eq(beat == hc["lastbeat"]),
                             entry_end.eq(beat == hc["pend"])]
            with m.Else():
                m.d.comb += [self.result.valid.eq(wdone.bit_select(head, 1)), res.cycles.eq(reported),
                             last.eq(1), entry_end.eq(1)]
        m.d.comb += res.last.eq(last)
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += beat.eq(beat + 1)
            with m.If(~entry_end):
                with m.Switch(head):
                    for b in range(NBUF):
                        with m.Case(b):
                            m.d.sync += [e_need[b].eq(need_next), e_rest[b].eq(rest_next)]
            with m.If(entry_end):
                m.d.comb += e_clr.bit_select(head, 1).eq(1)
                m.d.sync += carry.eq(carry + h_cyc)
            with m.If(last):
                m.d.sync += [beat.eq(0), carry.eq(0)]

        # The next state of the registers F's blocked check reads: each register takes it, and
        # the check (above) is made from it, so the check is a register too.
        end_now = e_clr.any()           # the head's entry gives its last beat
        head_n = Signal.like(head)
        f_buf_n = Signal.like(f_buf)
        e_valid_n = Signal.like(e_valid)
        e_bmask_n = [Signal.like(e_bmask[b], name=f"e{b}_blocks_next") for b in range(NBUF)]
        win_blocks_n = Signal.like(win_blocks)
        busy_n = Signal.like(busy)
        m.d.comb += [head_n.eq(Mux(end_now, after(head), head)), f_buf_n.eq(Mux(take_ok, tail, f_buf)),
                     e_valid_n.eq((e_valid & ~e_clr) | e_set),
                     win_blocks_n.eq(Mux(take_ok, wb_take, Mux(f_next, win_blocks.rotate_left(W // BLK), win_blocks))),
                     # after the head's last beat the next head may read all of its blocks
                     busy_n.eq(Mux(end_now, o_bmask, h_busy))]
        m.d.comb += [e_bmask_n[b].eq(Mux(b_take & (tail == b), Mux(b_err == Error.NONE, a_bmask, 0), e_bmask[b]))
                     for b in range(NBUF)]
        m.d.sync += [head.eq(head_n), f_buf.eq(f_buf_n), e_valid.eq(e_valid_n), win_blocks.eq(win_blocks_n),
                     busy.eq(busy_n)] + [e_bmask[b].eq(e_bmask_n[b]) for b in range(NBUF)]
        m.d.sync += f_blocked.eq(blocked(head_n, f_buf_n, e_valid_n, e_bmask_n, win_blocks_n, busy_n))
        return m
