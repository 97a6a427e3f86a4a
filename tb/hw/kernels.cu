// Two real kernels' shared-memory streams, recorded by the kernels themselves: one warp runs
// a GEMM tile loop (Swizzle<3,4,3> tiles filled with STS.128, read with ldmatrix .x4 and
// .x2.trans) and a swizzled epilogue (stmatrix .x4 / .x4.trans / .x2 / .x1 into a swizzled C
// tile, read back with LDS.128, and a column read with LDS.32). Every traced instruction is
// inline PTX, so the SASS is the one named; each lane logs its generic address and the words
// it loaded or stored. sass_capture.py builds this, runs it and writes Accel-Sim's format.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));  \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

constexpr int kLanes = 32;
constexpr int kSmem = 12288;       // A tile, B tile, C tile: 4 KiB each
constexpr int kMaxOps = 256;

// What each traced instruction is; sass_capture.py names the SASS opcode of each.
enum Op : int { STS128 = 1, LDSM_X4, LDSM_X2_T, STSM_X4, STSM_X4_T, STSM_X2, STSM_X1, LDS128, LDS32 };

struct Log {
  int ops;
  int op[kMaxOps];
  int site[kMaxOps];          // the kernel source line of the instruction (the trace's PC / 16)
  unsigned long long addr[kMaxOps][kLanes];
  uint32_t data[kMaxOps][kLanes][4];
};

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of 128-byte rows, Swizzle<3,4,3>.
__device__ __forceinline__ uint32_t swz(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); }

__device__ __forceinline__ void note(Log* log, int n, Op op, int site, uint32_t saddr, const uint32_t* w,
                                     int words) {
  int t = threadIdx.x;
  if (t == 0) { log->op[n] = op; log->site[n] = site; log->ops = n + 1; }
  log->addr[n][t] = (unsigned long long)__cvta_shared_to_generic(saddr);
  for (int k = 0; k < 4; ++k) log->data[n][t][k] = k < words ? w[k] : 0;
}

#define NOTE(op, a, w, words) note(log, n++, op, __LINE__, a, w, words)

__device__ __forceinline__ uint32_t smem_base() {
  extern __shared__ __align__(1024) uint8_t sm[];
  return (uint32_t)__cvta_generic_to_shared(sm);
}

__device__ void clear(uint32_t base) {     // untraced: the traced stream starts from zeros
  for (int i = threadIdx.x; i < kSmem / 16; i += kLanes)
    asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" ::"r"(base + 16 * i), "r"(0));
  __syncwarp();
}

__global__ void gemm_tile(const uint4* g, uint32_t* out, Log* log) {
  uint32_t base = smem_base(), A = base, B = base + 4096, acc = 0;
  int t = threadIdx.x, n = 0;
  clear(base);
  for (int ktile = 0; ktile < 2; ++ktile) {
    for (int tile = 0; tile < 2; ++tile)          // A then B: 32 rows x 8 chunks each
      for (int i = 0; i < 8; ++i) {
        int idx = i * kLanes + t, row = idx / 8, chunk = idx % 8;
        uint4 v = g[(ktile * 2 + tile) * 256 + idx];
        uint32_t a = (tile ? B : A) + swz(row, chunk), w[4] = {v.x, v.y, v.z, v.w};
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
        NOTE(STS128, a, w, 4);
      }
    __syncwarp();
    for (int mi = 0; mi < 2; ++mi)                // A fragments, m16 x k16 each
      for (int kk = 0; kk < 4; ++kk) {
        uint32_t a = A + swz(mi * 16 + t % 16, kk * 2 + t / 16), r[4];
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
        NOTE(LDSM_X4, a, r, 4);
        acc ^= r[0] + 3 * r[1] + 5 * r[2] + 7 * r[3];
      }
    for (int kk = 0; kk < 4; ++kk) {              // B fragments, k16 x n8, transposed
      uint32_t a = B + swz(kk * 8 + t % 8 + 16 * ((t / 8) % 2), kk), r[2];
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                   : "=r"(r[0]), "=r"(r[1]) : "r"(a));
      NOTE(LDSM_X2_T, a, r, 2);
      acc ^= r[0] + 11 * r[1];
    }
    __syncwarp();
  }
  out[t] = acc;
}

__global__ void epilogue(const uint32_t* frag, uint32_t* out, Log* log) {
  uint32_t base = smem_base(), C = base + 8192;
  int t = threadIdx.x, n = 0;
  clear(base);
  for (int mi = 0; mi < 2; ++mi)                  // the accumulators, as b16 pairs, into C
    for (int ni = 0; ni < 4; ++ni) {
      uint32_t a = C + swz(mi * 16 + t % 16, ni * 2 + t / 16), r[4];
      for (int k = 0; k < 4; ++k) r[k] = frag[((mi * 4 + ni) * 4 + k) * kLanes + t];
      if (mi == 1 && ni == 3) {
        asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                     ::"r"(a), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]));
        NOTE(STSM_X4_T, a, r, 4);
      } else {
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                     ::"r"(a), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]));
        NOTE(STSM_X4, a, r, 4);
      }
    }
  {                                               // a narrower tail: .x2 then .x1 over rows 0-15
    uint32_t r[2] = {frag[t] ^ 0x5a5a5a5au, frag[kLanes + t] ^ 0xa5a5a5a5u};
    uint32_t a = C + swz(t % 16, 7);
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(a), "r"(r[0]), "r"(r[1]));
    NOTE(STSM_X2, a, r, 2);
    a = C + swz(16 + t % 8, 6);
    asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(a), "r"(r[1]));
    NOTE(STSM_X1, a, r + 1, 1);
  }
  __syncwarp();
  uint32_t acc = 0;
  for (int i = 0; i < 8; ++i) {                   // read C back a row at a time
    int idx = i * kLanes + t, row = idx / 8, chunk = idx % 8;
    uint32_t a = C + swz(row, chunk), r[4];
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    NOTE(LDS128, a, r, 4);
    acc ^= r[0] + r[1] + r[2] + r[3];
  }
  {                                               // a column: every lane in the same bank
    uint32_t a = C + 128 * t + 4, r;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(r) : "r"(a));
    NOTE(LDS32, a, &r, 1);
    acc ^= r;
  }
  out[t] = acc;
}

static void dump(const char* kernel, const Log& log, unsigned long long window, unsigned dynamic) {
  printf("{\"kernel\": \"%s\", \"smem_base\": %llu, \"smem_bytes\": %u, \"ops\": [", kernel, window,
         dynamic + kSmem);
  for (int n = 0; n < log.ops; ++n) {
    printf("%s{\"op\": %d, \"site\": %d, \"addr\": [", n ? ", " : "", log.op[n], log.site[n]);
    for (int t = 0; t < kLanes; ++t) printf("%s%llu", t ? ", " : "", log.addr[n][t]);
    printf("], \"data\": [");
    for (int t = 0; t < kLanes; ++t)
      printf("%s[%u, %u, %u, %u]", t ? ", " : "", log.data[n][t][0], log.data[n][t][1], log.data[n][t][2],
             log.data[n][t][3]);
    printf("]}");
  }
  printf("]}\n");
}

// The shared window's generic base (what NVBit reports as the shared base) and where the
// dynamic shared memory starts in it (past any the system reserves).
__global__ void window(unsigned long long* at) {
  extern __shared__ __align__(1024) uint8_t sm[];
  at[0] = (unsigned long long)__cvta_shared_to_generic(0);
  at[1] = (unsigned long long)__cvta_generic_to_shared(sm);
}

int main(int argc, char** argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], nullptr, 0) : 2026;
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> host(4096);
  for (auto& w : host) w = (uint32_t)rng();
  uint32_t *g, *out;
  Log* log;
  unsigned long long* at;
  CK(cudaMalloc(&g, host.size() * 4));
  CK(cudaMalloc(&out, kLanes * 4));
  CK(cudaMalloc(&log, sizeof(Log)));
  CK(cudaMalloc(&at, 16));
  CK(cudaMemcpy(g, host.data(), host.size() * 4, cudaMemcpyHostToDevice));
  Log h;
  unsigned long long where[2];
  window<<<1, 1, kSmem>>>(at);
  CK(cudaMemcpy(where, at, 16, cudaMemcpyDeviceToHost));
  CK(cudaMemset(log, 0, sizeof(Log)));
  gemm_tile<<<1, kLanes, kSmem>>>((const uint4*)g, out, log);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(&h, log, sizeof(Log), cudaMemcpyDeviceToHost));
  dump("gemm_tile", h, where[0], (unsigned)where[1]);
  CK(cudaMemset(log, 0, sizeof(Log)));
  epilogue<<<1, kLanes, kSmem>>>(g, out, log);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(&h, log, sizeof(Log), cudaMemcpyDeviceToHost));
  dump("epilogue", h, where[0], (unsigned)where[1]);
  return 0;
}
