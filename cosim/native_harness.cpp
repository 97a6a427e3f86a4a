// The native test bench of tensorlsu_lsu: a compiled Verilator main that drives every port of the
// unit from a command stream and returns what the unit gave, with no Python between clock edges.
//
// It does what the cocotb module (cosim/cocotb_lsu.py) does, port for port: streams with idle
// cycles on the inputs and back-pressure on the outputs (each beat waits while a draw falls
// under `idle`; each cycle an awaited output is ready unless a draw falls under `backpressure`),
// a reset of two cycles, fill and dump, instruction streams whose results are collected until
// each instruction's last beat, and an AXI memory (reads only, as the unit uses it) with a set
// latency, a set beat rate, pauses on both read channels and beats of different ids in any
// order. It checks nothing of the data: the host (cosim/native.py) packs the commands and
// compares what comes back with the model. A handshake that waits TIMEOUT cycles stops the run
// with the port's name.
//
// Commands on stdin and replies on stdout are little-endian 32-bit words, each command
// `op, then its words`; the build defines HAS_AXI, HAS_TMEM, HAS_CP for the ports the unit has.

#include "Vtensorlsu_lsu.h"
#include "Vtensorlsu_lsu___024root.h"
#include "verilated.h"
#ifdef TRACE
#include "verilated_fst_c.h"
#endif

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

// Verilator spells the "__" of a port's name "___05F"
#define PORT(a, b) a##___05F##b
#define QPORT(a, q, b) a##___05F##q##___05F##b

// The model's eval() settles the logic the inputs drive (the "ico" region) on every call, then
// runs the clock edge's regions, which settle everything downstream of the registers again. So
// the bench settles the inputs only in a cycle where one of them changed, and at the rising
// edge runs the edge's regions alone: each cycle costs the edge, plus the settle when the
// inputs moved. The regions are the pinned Verilator's (pyproject.toml); declared weak, so that
// without them the bench calls eval() twice a cycle as usual.
bool Vtensorlsu_lsu___024root___eval_phase__act(Vtensorlsu_lsu___024root*) __attribute__((weak));
bool Vtensorlsu_lsu___024root___eval_phase__nba(Vtensorlsu_lsu___024root*) __attribute__((weak));

namespace {

bool regions_known() {
    return Vtensorlsu_lsu___024root___eval_phase__act && Vtensorlsu_lsu___024root___eval_phase__nba;
}

// The clock (already set) with the inputs as the last eval() saw them: its edge's regions, or,
// at a falling edge, only the trigger update that notes the clock's level.
void eval_clock(Vtensorlsu_lsu* top) {
    Vtensorlsu_lsu___024root* root = top->rootp;
    do {
        root->__VactIterCount = 0;
        while (Vtensorlsu_lsu___024root___eval_phase__act(root)) {}
    } while (Vtensorlsu_lsu___024root___eval_phase__nba(root));
}

using Words = std::vector<uint32_t>;
const uint64_t TIMEOUT = 20000;

enum Op : uint32_t {
    OP_END = 0, OP_CONFIG = 1, OP_RESET = 2, OP_SMEM_SIZE = 3, OP_PUT = 4, OP_DUMP = 5,
    OP_STREAMS = 6, OP_GMEM_WRITE = 7, OP_RATES = 8,
};

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "harness: %s\n", why.c_str());
    std::exit(3);
}

uint32_t read_word() {
    uint32_t w;
    if (std::fread(&w, 4, 1, stdin) != 1) fail("the command stream ended early");
    return w;
}

Words read_words(size_t n) {
    Words w(n);
    if (n && std::fread(w.data(), 4, n, stdin) != n) fail("the command stream ended early");
    return w;
}

void write_words(const uint32_t* w, size_t n) { std::fwrite(w, 4, n, stdout); }
void write_word(uint32_t w) { write_words(&w, 1); }

// Payload access for every width Verilator gives a port.
template <std::size_t N> void set(VlWide<N>& p, const uint32_t* w) { for (size_t i = 0; i < N; i++) p[i] = w[i]; }
template <std::size_t N> void get(const VlWide<N>& p, uint32_t* w) { for (size_t i = 0; i < N; i++) w[i] = p[i]; }
template <std::size_t N> size_t words_of(const VlWide<N>&) { return N; }
template <class T> void set(T& p, const uint32_t* w) {
    p = static_cast<T>(sizeof(T) > 4 ? (uint64_t(w[1]) << 32 | w[0]) : w[0]);
}
template <class T> void get(const T& p, uint32_t* w) {
    w[0] = static_cast<uint32_t>(p);
    if (sizeof(T) > 4) w[1] = static_cast<uint32_t>(uint64_t(p) >> 32);
}
template <class T> size_t words_of(const T&) { return sizeof(T) > 4 ? 2 : 1; }

struct Rng {
    std::mt19937_64 gen;
    std::uniform_real_distribution<double> u{0.0, 1.0};
    double operator()() { return u(gen); }
};

// An input stream: beats wait in a queue; each is shown after its idle draws, and held until taken.
struct In {
    std::string name;
    size_t words = 0;
    std::function<void(const uint32_t*)> payload;
    CData* valid = nullptr;
    CData* ready = nullptr;
    std::deque<Words> queue;
    bool shown = false;
    uint64_t waited = 0;
    bool timed = false;            // keep the cycle each beat moved (instruction ports)
    std::vector<uint64_t> taken;
};

// An output stream: while beats are awaited its ready is drawn each cycle; every beat moved is kept.
struct Out {
    std::string name;
    size_t words = 0;
    std::function<void(uint32_t*)> payload;
    CData* valid = nullptr;
    CData* ready = nullptr;
    int last_bit = -1;             // the payload bit that ends an instruction (-1: every beat does)
    uint64_t awaited = 0;          // instructions (or beats, with no last bit) still to come
    uint64_t waited = 0;
    std::vector<Words> beats;
    std::vector<uint64_t> at;
};

struct AxiBurst {
    uint32_t id, addr, len, size;
    uint64_t due;
    uint32_t beat = 0;
    uint32_t resp = 0;             // 0 OKAY, 2 SLVERR, 3 DECERR
};

class Bench {
public:
    std::unique_ptr<VerilatedContext> ctx{new VerilatedContext};
    std::unique_ptr<Vtensorlsu_lsu> top;
    uint64_t cycle = 0;
    uint64_t busy_ns = 0;          // time spent in clock cycles (not waiting for commands)
    bool moved = true;             // an input changed since the model last settled them
    bool fast = regions_known();
    double idle = 0, backpressure = 0;
    Rng rng;
    std::vector<In*> ins;
    std::vector<Out*> outs;
    // the AXI memory
    uint32_t axi_latency = 2, axi_beat_gap = 1, axi_reorder = 1;
    uint64_t decerr_at = ~uint64_t(0);   // addresses from here on decode to nothing
    double axi_pause = 0;
    std::vector<uint8_t> gmem;
    std::deque<AxiBurst> bursts;
    uint64_t next_beat_at = 0;
#ifdef TRACE
    std::unique_ptr<VerilatedFstC> waves;
#endif

    explicit Bench(const char* trace) {
        top.reset(new Vtensorlsu_lsu{ctx.get()});
#ifdef TRACE
        if (trace) {
            ctx->traceEverOn(true);
            waves.reset(new VerilatedFstC);
            top->trace(waves.get(), 99);
            waves->open(trace);
            fast = false;          // the waves take the model's own eval()
        }
#else
        (void)trace;
#endif
        top->clk = 0;
        top->rst = 0;
#ifdef HAS_AXI
        top->PORT(axi, awready) = 0;   // the unit only reads
        top->PORT(axi, wready) = 0;
        top->PORT(axi, bvalid) = 0;
#endif
    }

    ~Bench() {
        top->final();
#ifdef TRACE
        if (waves) waves->close();
#endif
    }

    // An input the bench drives: noted if it changes.
    template <class T> void drive(T& port, T value) {
        if (port != value) {
            port = value;
            moved = true;
        }
    }

    template <class P> In* in(const std::string& name, P& payload, CData& valid, CData& ready) {
        In* s = new In;
        s->name = name;
        s->words = words_of(payload);
        s->payload = [&payload](const uint32_t* w) { set(payload, w); };
        s->valid = &valid;
        s->ready = &ready;
        ins.push_back(s);
        return s;
    }

    template <class P> Out* out(const std::string& name, P& payload, CData& valid, CData& ready) {
        Out* s = new Out;
        s->name = name;
        s->words = words_of(payload);
        s->payload = [&payload](uint32_t* w) { get(payload, w); };
        s->valid = &valid;
        s->ready = &ready;
        outs.push_back(s);
        return s;
    }

    // One clock: inputs for the cycle, settle, the handshakes at the rising edge, the edge.
    void step() {
        auto t0 = std::chrono::steady_clock::now();
        for (In* s : ins) {
            if (!s->shown && !s->queue.empty() && !(rng() < idle)) {
                s->payload(s->queue.front().data());
                s->shown = true;
                s->waited = 0;
                moved = true;
            }
            drive(*s->valid, CData(s->shown));
        }
        for (Out* s : outs) drive(*s->ready, CData(s->awaited > 0 && !(rng() < backpressure)));
#ifdef HAS_AXI
        axi_drive();
#endif
        top->clk = 0;
        if (moved || !fast) {
            top->eval();
            moved = false;
        } else {
            eval_clock(top.get());
        }
#ifdef TRACE
        if (waves) waves->dump(2 * cycle);
#endif
        for (In* s : ins) {
            if (!s->shown) continue;
            if (*s->ready) {
                s->queue.pop_front();
                s->shown = false;
                if (s->timed) s->taken.push_back(cycle);
            } else if (++s->waited > TIMEOUT) {
                fail(s->name + ": no ready in " + std::to_string(TIMEOUT) + " cycles");
            }
        }
        for (Out* s : outs) {
            if (!s->awaited) continue;
            if (*s->valid && *s->ready) {
                Words w(s->words);
                s->payload(w.data());
                if (s->last_bit < 0 || (w[s->last_bit / 32] >> (s->last_bit % 32) & 1)) s->awaited--;
                s->beats.push_back(std::move(w));
                s->at.push_back(cycle);
                s->waited = 0;
            } else if (++s->waited > TIMEOUT) {
                fail(s->name + ": no valid in " + std::to_string(TIMEOUT) + " cycles");
            }
        }
#ifdef HAS_AXI
        axi_edge();
#endif
        top->clk = 1;
        if (fast) eval_clock(top.get());
        else top->eval();
#ifdef TRACE
        if (waves) waves->dump(2 * cycle + 1);
#endif
        cycle++;
        busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    }

#ifdef HAS_AXI
    // The AXI memory: a read burst's beats are due `axi_latency` cycles after its address is
    // taken, then one every `axi_beat_gap` cycles; with `axi_reorder`, each beat comes from any
    // due burst that is the oldest of its id (beats of different ids interleave), else from the
    // oldest burst. A burst that reaches past the memory answers SLVERR on every beat; one that
    // starts at `decerr_at` or above, DECERR (no subordinate there).
    AxiBurst* r_burst = nullptr;
    bool r_shown = false;

    void axi_drive() {
        drive(top->PORT(axi, arready), CData(!(rng() < axi_pause)));
        if (!r_shown && cycle >= next_beat_at && !(rng() < axi_pause)) {
            std::vector<AxiBurst*> due;
            for (AxiBurst& b : bursts) {
                bool first_of_id = true;   // beats of one id stay in order
                for (AxiBurst& o : bursts) {
                    if (&o == &b) break;
                    first_of_id &= o.id != b.id;
                }
                if (b.due <= cycle && first_of_id) due.push_back(&b);
                if (!axi_reorder) break;   // in order: the oldest burst only
            }
            if (!due.empty()) {
                r_burst = due[axi_reorder ? size_t(rng() * due.size()) % due.size() : 0];
                r_shown = true;
                AxiBurst& b = *r_burst;
                uint32_t bytes = 1u << b.size;
                uint32_t addr = (b.addr & ~(bytes - 1)) + b.beat * bytes;
                std::vector<uint32_t> data((words_of(top->PORT(axi, rdata))), 0);
                if (!b.resp) std::memcpy(data.data(), &gmem[addr], bytes);
                set(top->PORT(axi, rdata), data.data());
                top->PORT(axi, rid) = b.id;
                top->PORT(axi, rresp) = b.resp;
                top->PORT(axi, rlast) = b.beat == b.len;
                moved = true;
            }
        }
        drive(top->PORT(axi, rvalid), CData(r_shown));
    }

    void axi_edge() {
        if (top->PORT(axi, arvalid) && top->PORT(axi, arready)) {
            AxiBurst b{top->PORT(axi, arid), top->PORT(axi, araddr), top->PORT(axi, arlen), top->PORT(axi, arsize), cycle + axi_latency};
            uint64_t end = uint64_t(b.addr & ~((1u << b.size) - 1)) + uint64_t(b.len + 1) * (1u << b.size);
            b.resp = b.addr >= decerr_at ? 3 : end > gmem.size() ? 2 : 0;
            bursts.push_back(b);
        }
        if (r_shown && top->PORT(axi, rready)) {
            r_shown = false;
            next_beat_at = cycle + axi_beat_gap;
            if (r_burst->beat++ == r_burst->len) {
                for (auto it = bursts.begin(); it != bursts.end(); ++it)
                    if (&*it == r_burst) { bursts.erase(it); break; }
            }
            r_burst = nullptr;
        }
    }
#endif

    void reset() {
        moved = true;
        top->rst = 1;
        step();
        step();
        top->rst = 0;
        moved = true;
    }
};

// Ports by index, as the host names them: 0 the shared-memory path; 1 + q the quadrant q; 5 copy.
struct Group {
    In* instr = nullptr;
    In* store = nullptr;
    Out* result = nullptr;
    In* fill = nullptr;
    In* dump_req = nullptr;
    Out* dump = nullptr;
};

void write_out(Out* s, size_t from) {
    write_word(uint32_t(s->beats.size() - from));
    for (size_t k = from; k < s->beats.size(); k++) {
        write_word(uint32_t(s->at[k]));
        write_words(s->beats[k].data(), s->words);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const char* trace = argc > 1 ? argv[1] : nullptr;
    std::setvbuf(stdout, nullptr, _IOFBF, 1 << 20);
    Bench tb(trace);
    Vtensorlsu_lsu* t = tb.top.get();
    std::vector<Group> groups(6);
#define PORTS(kind, port) tb.kind(#port, t->PORT(port, payload), t->PORT(port, valid), t->PORT(port, ready))
    groups[0].instr = PORTS(in, instr);
    groups[0].store = PORTS(in, store);
    groups[0].result = PORTS(out, result);
    groups[0].fill = PORTS(in, fill);
    groups[0].dump_req = PORTS(in, dump_req);
    groups[0].dump = PORTS(out, dump);
#ifdef HAS_TMEM
#define STREAM(kind, port, q) tb.kind(#port "__" #q, t->QPORT(port, q, payload), t->QPORT(port, q, valid), \
                                 t->QPORT(port, q, ready))
#define QUADRANT(q)                                                 \
    groups[1 + q].instr = STREAM(in, tmem_instr, q);                \
    groups[1 + q].store = STREAM(in, tmem_store, q);                \
    groups[1 + q].result = STREAM(out, tmem_result, q);             \
    groups[1 + q].fill = STREAM(in, tmem_fill, q);                  \
    groups[1 + q].dump_req = STREAM(in, tmem_dump_req, q);          \
    groups[1 + q].dump = STREAM(out, tmem_dump, q);
    QUADRANT(0) QUADRANT(1) QUADRANT(2) QUADRANT(3)
#endif
#ifdef HAS_CP
    groups[5].instr = PORTS(in, cp_instr);
    groups[5].result = PORTS(out, cp_result);
#endif
    for (Group& g : groups)
        if (g.instr) g.instr->timed = true;
    auto group = [&](uint32_t g) -> Group& {
        if (g >= groups.size() || !groups[g].instr && !groups[g].fill) fail("no port group " + std::to_string(g));
        return groups[g];
    };

    tb.reset();
    for (;;) {
        uint32_t op = read_word();
        switch (op) {
        case OP_END:
            write_word(OP_END);
            write_word(uint32_t(tb.cycle));
            write_word(uint32_t(tb.cycle >> 32));
            write_word(uint32_t(tb.busy_ns / 1000));   // microseconds
            write_word(uint32_t(tb.busy_ns / 1000 >> 32));
            std::fflush(stdout);
            return 0;
        case OP_CONFIG: {
            // seed, idle and back-pressure (parts per million), the result streams' last bits,
            // the AXI memory's size, latency, beat gap, pause (ppm), reordering and where DECERR starts
            Words w = read_words(12);
            tb.rng.gen.seed(w[0]);
            tb.idle = w[1] / 1e6;
            tb.backpressure = w[2] / 1e6;
            groups[0].result->last_bit = int(w[3]);
            for (int q = 1; q <= 4; q++)
                if (groups[q].result) groups[q].result->last_bit = int(w[4]);
            tb.gmem.assign(w[5], 0);
            tb.axi_latency = w[6];
            tb.axi_beat_gap = w[7] ? w[7] : 1;
            tb.axi_pause = w[8] / 1e6;
            tb.axi_reorder = w[9];
            if (w[10]) tb.decerr_at = w[10];
            break;
        }
        case OP_RESET:
            tb.reset();
            break;
        case OP_RATES: {
            // idle, back-pressure and the AXI memory's pauses from here on (parts per million)
            Words w = read_words(3);
            tb.idle = w[0] / 1e6;
            tb.backpressure = w[1] / 1e6;
            tb.axi_pause = w[2] / 1e6;
            break;
        }
        case OP_SMEM_SIZE:
            t->smem_size = read_word();
            tb.moved = true;
            break;
        case OP_GMEM_WRITE: {
            uint32_t addr = read_word(), n = read_word();
            Words w = read_words((n + 3) / 4);
            if (uint64_t(addr) + n > tb.gmem.size()) fail("a global image past the AXI memory");
            std::memcpy(&tb.gmem[addr], w.data(), n);
            break;
        }
        case OP_PUT: {
            // fill beats of a group, one after another
            Group& g = group(read_word());
            uint32_t n = read_word();
            for (uint32_t k = 0; k < n; k++) g.fill->queue.push_back(read_words(g.fill->words));
            while (!g.fill->queue.empty()) tb.step();
            break;
        }
        case OP_DUMP: {
            // dump requests of a group, back to back (the port answers them in order)
            Group& g = group(read_word());
            uint32_t n = read_word();
            Words req = read_words(n);
            size_t from = g.dump->beats.size();
            for (uint32_t k = 0; k < n; k++) {
                g.dump_req->queue.push_back(Words(g.dump_req->words, 0));
                g.dump_req->queue.back()[0] = req[k];
            }
            g.dump->awaited = n;
            while (g.dump->awaited) tb.step();
            write_word(OP_DUMP);
            write_out(g.dump, from);
            g.dump->beats.resize(from);
            g.dump->at.resize(from);
            std::fflush(stdout);   // the host may wait for this reply before its next command
            break;
        }
        case OP_STREAMS: {
            // instruction streams of several groups at once: each group's instructions back to
            // back, its store beats on their own, its results until every instruction's last beat;
            // a group may wait for another group's first instruction to be taken
            uint32_t n = read_word();
            struct Run { Group* g; int after; Words instrs; uint32_t count; std::deque<Words> stores; bool started; };
            std::vector<Run> runs(n);
            for (Run& r : runs) {
                r.g = &group(read_word());
                r.after = int32_t(read_word());
                if (r.after >= int32_t(n)) fail("a stream waits for a group the command does not have");
                r.count = read_word();
                uint32_t nstore = read_word();
                r.instrs = read_words(size_t(r.count) * r.g->instr->words);
                for (uint32_t k = 0; k < nstore; k++) r.stores.push_back(read_words(r.g->store->words));
                r.started = false;
            }
            std::vector<size_t> from(n);
            for (size_t i = 0; i < n; i++) {
                Group& g = *runs[i].g;
                from[i] = g.result->beats.size();
                g.instr->taken.clear();
            }
            auto start = [&](Run& r) {
                size_t w = r.g->instr->words;
                for (uint32_t k = 0; k < r.count; k++)
                    r.g->instr->queue.emplace_back(r.instrs.begin() + k * w, r.instrs.begin() + (k + 1) * w);
                for (Words& s : r.stores) r.g->store->queue.push_back(std::move(s));
                r.g->result->awaited += r.count;
                r.started = true;
            };
            for (Run& r : runs)
                if (r.after < 0) start(r);
            for (;;) {
                bool busy = false;
                for (Run& r : runs) {
                    if (!r.started && !runs[r.after].g->instr->taken.empty()) start(r);
                    busy |= !r.started || r.g->result->awaited > 0;
                }
                if (!busy) break;
                tb.step();
            }
            for (Run& r : runs)   // store beats the unit has not taken yet (a refused store's)
                while (r.g->store && !r.g->store->queue.empty()) tb.step();
            write_word(OP_STREAMS);
            for (size_t i = 0; i < n; i++) {
                Group& g = *runs[i].g;
                write_word(uint32_t(g.instr->taken.size()));
                for (uint64_t c : g.instr->taken) write_word(uint32_t(c));
                write_out(g.result, from[i]);
                g.result->beats.resize(from[i]);
                g.result->at.resize(from[i]);
            }
            std::fflush(stdout);
            break;
        }
        default:
            fail("unknown command " + std::to_string(op));
        }
    }
}
