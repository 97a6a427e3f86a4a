// Host runners of the capture harness: each makes random cases for one generated kernel,
// runs it on the GPU and prints one trace record (JSON line) per case.
#pragma once
#include <algorithm>
#include <cmath>

static std::string g_target, g_source;

static void set_meta(const char* target, const char* gpu) {
  g_target = target;
  g_source = std::string("tb/hw/capture.py on ") + gpu;
}

static void head(const std::string& instr) {
  printf("{\"instr\":\"%s\",\"target\":\"%s\",\"source\":\"%s\"", instr.c_str(), g_target.c_str(),
         g_source.c_str());
}

template <class T>
static T* dev(const std::vector<T>& v) {
  T* p;
  CK(cudaMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)));
  if (!v.empty()) CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

template <class T>
static std::vector<T> host(const T* p, size_t n) {
  std::vector<T> v(n);
  CK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// ---- ldmatrix ------------------------------------------------------------------------
template <class K>
static void run_ld(K kernel, const char* instr, int nregs, int rows, int cases, Rng& rng) {
  for (int c = 0; c < cases; ++c) {
    int img_rows = std::max(32, rows) + rng.below(96);
    auto img = image(rng, 16 * img_rows, c == 0);
    auto addr = row_addrs(rng, img_rows, c % 4 == 3);
    auto *d_img = dev(img);
    auto *d_addr = dev(addr);
    uint32_t* d_out;
    CK(cudaMalloc(&d_out, kLanes * nregs * 4));
    kernel<<<1, kLanes, img.size()>>>(d_img, (int)img.size(), d_addr, d_out);
    CK(cudaGetLastError());
    auto out = host(d_out, kLanes * nregs);
    head(instr);
    printf(",\"smem\":\"%s\",\"addr\":%s,\"expect\":{\"regs\":%s}}\n", hex(img.data(), img.size()).c_str(),
           ints_json(addr).c_str(), regs_json(out, nregs).c_str());
    cudaFree(d_img); cudaFree(d_addr); cudaFree(d_out);
  }
  (void)rows;
}

// ---- stmatrix ------------------------------------------------------------------------
template <class K>
static void run_st(K kernel, const char* instr, int nregs, int rows, int cases, Rng& rng) {
  for (int c = 0; c < cases; ++c) {
    int img_rows = std::max(32, rows) + rng.below(96);
    auto img = image(rng, 16 * img_rows, c == 0);
    auto addr = row_addrs(rng, img_rows, false);  // overlapping rows in one stmatrix race
    std::vector<uint32_t> regs(kLanes * nregs);
    for (auto& r : regs) r = rng.u32();
    auto *d_img = dev(img);
    auto *d_addr = dev(addr);
    auto *d_regs = dev(regs);
    uint8_t* d_out;
    CK(cudaMalloc(&d_out, img.size()));
    kernel<<<1, kLanes, img.size()>>>(d_img, (int)img.size(), d_addr, d_regs, d_out);
    CK(cudaGetLastError());
    auto out = host(d_out, img.size());
    head(instr);
    printf(",\"smem\":\"%s\",\"addr\":%s,\"regs\":%s,\"expect\":{\"smem\":\"%s\"}}\n",
           hex(img.data(), img.size()).c_str(), ints_json(addr).c_str(), regs_json(regs, nregs).c_str(),
           hex(out.data(), out.size()).c_str());
    cudaFree(d_img); cudaFree(d_addr); cudaFree(d_regs); cudaFree(d_out);
  }
}

// ---- wmma.load -----------------------------------------------------------------------
// lead: elements of the leading dimension (the default stride); other: the other dimension.
template <class K>
static void run_wmma(K kernel, const char* instr, int words, int bits, int lead, int other,
                     const char* space, int cases, Rng& rng) {
  std::string sp = space;
  for (int c = 0; c < cases; ++c) {
    // Strides: the leading dimension plus multiples of 16 bytes (of the dimension itself
    // where it is narrower than 16 bytes).
    int lead_bits = lead * bits, grain_bits = std::min(128, lead_bits);
    long long stride = lead + (long long)rng.below(4) * (grain_bits / bits);
    long long span = ((other - 1) * stride * bits + lead_bits + 7) / 8;
    long long off = 32LL * rng.below(8);
    size_t n = (size_t)((off + span + 31) / 32 * 32 + 32 * rng.below(3));
    auto img = image(rng, n, c == 0);
    bool in_shared = sp == "shared" || (sp == "generic" && c % 2 == 0);
    auto *d_img = dev(img);
    uint8_t* d_g = dev(img);
    uint32_t* d_out;
    CK(cudaMalloc(&d_out, kLanes * words * 4));
    kernel<<<1, kLanes, in_shared ? n : 0>>>(d_img, in_shared ? (int)n : 0, off, (int)stride, d_g,
                                             in_shared, d_out);
    CK(cudaGetLastError());
    auto out = host(d_out, kLanes * words);
    head(instr);
    if (in_shared)
      printf(",\"smem\":\"%s\",\"addr\":%lld", hex(img.data(), n).c_str(), off);
    else
      printf(",\"gmem\":\"%s\",\"gmem_base\":%lld,\"addr\":%lld", hex(img.data(), n).c_str(),
             (long long)(uintptr_t)d_g, (long long)(uintptr_t)d_g + off);
    printf(",\"stride\":%lld,\"expect\":{\"regs\":%s}}\n", stride, regs_json(out, words).c_str());
    cudaFree(d_img); cudaFree(d_g); cudaFree(d_out);
  }
}

// ---- saturated throughput -------------------------------------------------------------
// 32 warps of one block issue the same instruction with the same row addresses; cycles per
// instruction at saturation are the shared-memory cycles one instruction occupies.
template <class K>
static void run_tp(K kernel, const char* instr, int rows, int store, int patterns, Rng& rng) {
  const int warps = 32, iters = 64, unroll = 8, smem = 4096;
  for (int p = 0; p < patterns; ++p) {
    std::vector<long long> addr(kLanes);
    if (p < 4) {  // conflict-free, then 2-, 4-, 8-way conflicts (row stride 32/64/128 B)
      int stride = 16 << p;
      for (int t = 0; t < kLanes; ++t) addr[t] = (long long)(stride * t) % smem;
    } else {
      int pool = 8 << rng.below(6);  // rows drawn from 8 … 256 candidates
      if (store) {
        addr = row_addrs(rng, 256, false);
      } else {
        for (int t = 0; t < kLanes; ++t) addr[t] = 16LL * rng.below(pool);
      }
    }
    if (store) {  // distinct rows among the threads that supply them
      std::vector<long long> used(addr.begin(), addr.begin() + rows);
      std::sort(used.begin(), used.end());
      if (std::adjacent_find(used.begin(), used.end()) != used.end()) continue;
    }
    auto *d_addr = dev(addr);
    long long* d_cyc;
    uint32_t* d_sink;
    CK(cudaMalloc(&d_cyc, 8));
    CK(cudaMalloc(&d_sink, warps * kLanes * 4));
    double best = 1e30;
    for (int rep = 0; rep < 4; ++rep) {
      kernel<<<1, warps * kLanes, smem>>>(d_addr, iters, d_cyc, d_sink, 0u);
      CK(cudaGetLastError());
      auto cyc = host(d_cyc, 1);
      if (rep) best = std::min(best, (double)cyc[0] / (warps * iters * unroll));
    }
    head(instr);
    printf(",\"smem\":\"%s\",\"addr\":%s", std::string(2 * smem, '0').c_str(), ints_json(addr).c_str());
    if (store) {
      std::vector<uint32_t> zeros(kLanes * (rows / 8), 0);
      printf(",\"regs\":%s", regs_json(zeros, rows / 8).c_str());
    }
    printf(",\"measured_cpi\":%.3f,\"expect\":{\"wavefronts\":%d}}\n", best, (int)std::lround(best));
    cudaFree(d_addr); cudaFree(d_cyc); cudaFree(d_sink);
  }
}

// ---- tcgen05.ld (sm_100 family) ---------------------------------------------------------
// One warp (index 0 of its warpgroup): lanes 0-31 of Tensor Memory are filled with random
// words, then read back with the instruction at a random lane/column offset.
template <class K>
static void run_tc(K kernel, const char* instr, int nregs, int red, int half_split, int split,
                   int per, int cases, Rng& rng) {
  const int lanes = 32, cols = 512;
  for (int c = 0; c < cases; ++c) {
    std::vector<uint32_t> img(128 * cols, 0);
    for (int i = 0; i < lanes * cols; ++i) img[i] = rng.u32();
    bool sixteen = per != 1 || half_split || std::string(instr).find(".16x64b") != std::string::npos;
    int lane0 = sixteen ? 16 * rng.below(2) : 0;
    int width = nregs * (std::string(instr).find("pack::16b") != std::string::npos ? 2 : 1);
    int span = width + (half_split ? split : 0);
    int col0 = rng.below(std::max(1, cols - span - 8));
    uint32_t taddr = ((uint32_t)lane0 << 16) | (uint32_t)col0;
    auto *d_img = dev(img);
    uint32_t *d_out, *d_red;
    CK(cudaMalloc(&d_out, kLanes * nregs * 4));
    CK(cudaMalloc(&d_red, kLanes * 4));
    kernel<<<1, kLanes>>>(d_img, taddr, d_out, d_red);
    CK(cudaGetLastError());
    auto out = host(d_out, kLanes * nregs);
    auto rv = host(d_red, kLanes);
    head(instr);
    printf(",\"tmem\":\"%s\",\"taddr\":%u,\"warp\":0", hex((const uint8_t*)img.data(), lanes * cols * 4).c_str(),
           taddr);
    if (half_split) printf(",\"split\":%d", split);
    printf(",\"expect\":{\"regs\":%s", regs_json(out, nregs).c_str());
    if (red) {
      std::vector<long long> r(rv.begin(), rv.end());
      printf(",\"redval\":%s", ints_json(r).c_str());
    }
    printf("}}\n");
    cudaFree(d_img); cudaFree(d_out); cudaFree(d_red);
  }
}
