// rmsnorm-timeline: when each block of a block-per-row forward starts and ends, next to a copy of
// the same bytes, to take apart a cost per call that a median time cannot (notes/PERF.md,
// session 19: the bf16 forward at D = 4096-16384 takes the copy's time plus 1.7-4.2 µs at every R
// from 3960 to 32768 rows).
//
// Forms of one kernel over the same rows, and copies of the same bytes, each timed with CUDA
// events as rmsnorm-bench times (median of --iters behind a stream-holding kernel,
// event_timing.cuh; rotating buffer sets larger than L2; session 20's calls 1-8 timed back-to-back
// launches without the hold); four of them then run once more with a timestamp per block
// (%globaltimer at its first instruction and after its last store was issued, and its SM):
// - fwd: fwd.block_row's plain kernel (fwd_regs_body, the production template, bf16 rows and
//   weights) in the production launch shape;
// - ahead: the same with its L2 prefetch one wave ahead (fwd_regs_ahead_kernel's body);
// - rowcopy: the same blocks and thread mapping with the reduction and the weights taken out
//   (each thread loads its chunks, then stores them): the block granularity alone;
// - gpre: fwd with the weights asked of L2 at each block's start (every block, or the first wave's);
// - ahead1: the prefetch one wave ahead in the first wave only;
// - iters2 / iters8: the same kernel with 2 or 8 chunks a thread (twice or half the threads);
// - occ-1 / occ/2: fwd held to one block an SM fewer, or half, by unused dynamic shared memory;
// - stagger250 / 500 / 1000: fwd_regs_stagger_kernel (the product's form since session 20), the first
//   wave's k-th block of an SM starting k * 250 / 500 / 1000 ns late;
// - staged: the kernel in fwd.staged_rows' form (a persistent grid, next rows staged by cp.async);
// - gridcopy2 / gridcopy4: a persistent grid-stride copy kernel (2 or 4 vectors a thread a step);
// - memcpy: cudaMemcpyAsync device to device of the same bytes (events only: no blocks to stamp).
// The per-block stamps are summarised per kernel: the span (first start to last end), how long
// the first wave took to start on every SM, the drain (the last block's start to the last end),
// and the rows finished per interval of the span as bandwidth (read + write bytes of the rows
// whose block ended in it): a ramp at the start or a tail at the end shows there.
//
// The stamps cost each block two global-timer reads and one store of 24 bytes: the stamped run's
// span is compared with the events' median to show what they cost.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "event_timing.cuh"
#include "forward_launch.cuh"

namespace {

using rmsnorm::cuda::fwd::Params;
using T = __nv_bfloat16;
namespace fwd = rmsnorm::cuda::fwd;
using rmsnorm::cuda::Chunk;
using rmsnorm::cuda::kChunk;
using rmsnorm::Mutant;

struct Stamp {
  unsigned long long start, end;
  unsigned sm, pad;
};

using rmsnorm::cuda::global_timer_ns;
__device__ __forceinline__ unsigned sm_id() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ void stamp(Stamp* st, unsigned long long t0) {
  if (st == nullptr) return;
  __syncthreads();
  if (threadIdx.x == 0) st[blockIdx.x] = Stamp{t0, global_timer_ns(), sm_id(), 0};
}

constexpr int kIters = fwd::kBlockRowIters;  // fwd.block_row's chunks per thread
constexpr int kThreadsMax = fwd::regs_block_threads<0, T, false>;
constexpr int kMinBlocks = fwd::regs_min_blocks<0, T, false, false, Mutant::none, false, true>;

__global__ void __launch_bounds__(kThreadsMax, kMinBlocks) fwd_stamped(Params p, Stamp* st) {
  const unsigned long long t0 = global_timer_ns();
  fwd::fwd_regs_body<T, T, false, false, 0, kIters, Mutant::none, false, false, false>(p, 0);
  stamp(st, t0);
}
__global__ void __launch_bounds__(kThreadsMax, kMinBlocks) ahead_stamped(Params p, std::int64_t ahead, Stamp* st) {
  const unsigned long long t0 = global_timer_ns();
  fwd::fwd_regs_body<T, T, false, false, 0, kIters, Mutant::none, false, false, true>(p, ahead);
  stamp(st, t0);
}
// The candidate: the block asks L2 for the weights before its first load of x. Without it, every
// block of the first wave asks for g only after its row's sum, and the first of those misses
// waits in DRAM's queue behind the whole wave's loads of x.
// first_blocks > 0: only the blocks below it prefetch (0: every block).
__global__ void __launch_bounds__(kThreadsMax, kMinBlocks) gpre_stamped(Params p, std::int64_t first_blocks, Stamp* st) {
  const unsigned long long t0 = global_timer_ns();
  if (first_blocks == 0 || blockIdx.x < first_blocks)
    rmsnorm::cuda::prefetch_row_l2(p.g, p.dim * static_cast<std::int64_t>(sizeof(T)), static_cast<int>(threadIdx.x),
                                   static_cast<int>(blockDim.x));
  fwd::fwd_regs_body<T, T, false, false, 0, kIters, Mutant::none, false, false, false>(p, 0);
  stamp(st, t0);
}
// The L2 prefetch one wave ahead in the first wave only: the blocks that start together ask for
// the second wave's rows with their own, so DRAM has work through the first wave's reductions
// and stores, and no later block pays for a prefetch.
__global__ void __launch_bounds__(kThreadsMax, kMinBlocks) ahead1_stamped(Params p, std::int64_t wave, Stamp* st) {
  const unsigned long long t0 = global_timer_ns();
  fwd::fwd_regs_body<T, T, false, false, 0, kIters, Mutant::none, false, false, true>(p, blockIdx.x < wave ? wave : 0);
  stamp(st, t0);
}
// Another thread mapping of the same kernel: I chunks a thread (fwd.block_row holds 4), so twice
// the threads a row at I = 2, half at I = 8 (a different reduction order: another variant's bits).
template <int I>
__global__ void __launch_bounds__(kThreadsMax, kMinBlocks) iters_form(Params p) {
  fwd::fwd_regs_body<T, T, false, false, 0, I, Mutant::none, false, false, false>(p, 0);
}
// The same rows, blocks and chunk mapping as fwd_stamped, nothing between the loads and stores.
__global__ void __launch_bounds__(kThreadsMax, kMinBlocks) rowcopy_stamped(Params p, Stamp* st) {
  const unsigned long long t0 = global_timer_ns();
  const std::int64_t row = blockIdx.x;
  const std::int64_t full = p.dim / kChunk;
  const T* xr = static_cast<const T*>(p.x) + row * p.x_stride;
  T* yr = static_cast<T*>(p.y) + row * p.y_stride;
  Chunk<T> h[kIters];
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const std::int64_t c = static_cast<std::int64_t>(i) * blockDim.x + threadIdx.x;
    h[i] = fwd::load_row_chunk<T, Mutant::none, true>(xr, c, full, 0);
  }
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const std::int64_t c = static_cast<std::int64_t>(i) * blockDim.x + threadIdx.x;
    fwd::store_row_chunk<T>(yr, c, full, 0, h[i]);
  }
  stamp(st, t0);
}

// A grid-stride copy of the same bytes: a full-occupancy persistent grid, each thread moving U
// 16-byte vectors per step (loads first, then stores): what an SM copy kernel reaches, beside the
// memcpy (the bench's reference).
template <int U>
__global__ void __launch_bounds__(256) gridcopy(const uint4* __restrict__ x, uint4* __restrict__ y, std::int64_t n) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x * U;
  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * blockDim.x * U + threadIdx.x; base < n; base += step) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t i = base + static_cast<std::int64_t>(u) * blockDim.x;
      if (i < n) v[u] = __ldcs(x + i);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t i = base + static_cast<std::int64_t>(u) * blockDim.x;
      if (i < n) __stcs(y + i, v[u]);
    }
  }
}

struct Set {
  T* x = nullptr;
  T* y = nullptr;
};

// The summary line of one stamped run (times in µs from the first block's start).
void summarize(const char* name, std::int64_t rows, std::int64_t dim, double event_us, const std::vector<Stamp>& st,
               int sms, FILE* csv) {
  unsigned long long t0 = ~0ull, t1 = 0, last_start = 0;
  std::vector<unsigned long long> first_on_sm(static_cast<std::size_t>(sms), ~0ull);
  for (const Stamp& s : st) {
    t0 = std::min(t0, s.start);
    t1 = std::max(t1, s.end);
    last_start = std::max(last_start, s.start);
    if (s.sm < first_on_sm.size()) first_on_sm[s.sm] = std::min(first_on_sm[s.sm], s.start);
  }
  unsigned long long all_started = 0;
  for (unsigned long long f : first_on_sm)
    if (f != ~0ull) all_started = std::max(all_started, f);
  std::vector<double> dur;
  for (const Stamp& s : st) dur.push_back(static_cast<double>(s.end - s.start) / 1000.0);
  std::sort(dur.begin(), dur.end());
  const double span = static_cast<double>(t1 - t0) / 1000.0;
  std::printf("%-8s %6lld x %-6lld events %8.2f us  span %8.2f  first wave on every SM %5.2f  last start %8.2f  drain %5.2f  "
              "block median %5.2f p90 %5.2f\n",
              name, static_cast<long long>(rows), static_cast<long long>(dim), event_us, span,
              static_cast<double>(all_started - t0) / 1000.0, static_cast<double>(last_start - t0) / 1000.0,
              static_cast<double>(t1 - last_start) / 1000.0, dur[dur.size() / 2], dur[dur.size() * 9 / 10]);
  // Rows finished per twentieth of the span, as TB/s of read + write bytes.
  constexpr int kBins = 20;
  std::vector<double> done(kBins, 0);
  for (const Stamp& s : st) {
    const int b = std::min(kBins - 1, static_cast<int>(static_cast<double>(s.end - t0) / (span * 1000.0) * kBins));
    done[static_cast<std::size_t>(b)] += 1;
  }
  const double row_bytes = 2.0 * static_cast<double>(dim) * sizeof(T);
  std::printf("%-8s   TB/s per 1/%d of the span:", name, kBins);
  for (double d : done) std::printf(" %4.2f", d * row_bytes / (span / kBins * 1e-6) / 1e12);
  std::printf("\n");
  if (csv) {
    for (std::size_t b = 0; b < st.size(); ++b)
      std::fprintf(csv, "%s,%lld,%lld,%zu,%u,%.3f,%.3f\n", name, static_cast<long long>(rows), static_cast<long long>(dim), b,
                   st[b].sm, static_cast<double>(st[b].start - t0) / 1000.0, static_cast<double>(st[b].end - t0) / 1000.0);
  }
}

// A positive integer, the whole of `s`, or exit 2 naming it.
std::int64_t parse_positive(const std::string& s, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || x <= 0) {
    std::fprintf(stderr, "rmsnorm-timeline: bad %s '%s': a positive integer\n", what, s.c_str());
    std::exit(2);
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::int64_t> rows = {4096, 8192, 4096, 32768}, dims = {8192, 4096, 16384, 8192};
  int iters = 50;
  const char* csv_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shapes" && i + 1 < argc) {  // RxD,RxD,...
      rows.clear();
      dims.clear();
      std::string s = argv[++i];
      std::size_t pos = 0;
      while (pos <= s.size()) {
        const std::size_t comma = std::min(s.find(',', pos), s.size());
        const std::string item = s.substr(pos, comma - pos);
        const std::size_t x = item.find('x');
        if (x == std::string::npos) {
          std::fprintf(stderr, "rmsnorm-timeline: a shape is RxD, not '%s'\n", item.c_str());
          return 2;
        }
        rows.push_back(parse_positive(item.substr(0, x), "row count"));
        dims.push_back(parse_positive(item.substr(x + 1), "width"));
        pos = comma + 1;
      }
    } else if (a == "--iters" && i + 1 < argc) {
      iters = static_cast<int>(parse_positive(argv[++i], "--iters"));
    } else if (a == "--csv" && i + 1 < argc) {
      csv_path = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: rmsnorm-timeline [--shapes RxD,...] [--iters N] [--csv PATH]\n"
                   "  bf16 rows, D a multiple of 8 up to %d (fwd.block_row's plain kernel)\n",
                   kThreadsMax * kIters * kChunk);
      return a == "--help" ? 0 : 2;
    }
  }
  int dev = 0, sms = 0, l2 = 0, count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "rmsnorm-timeline: no CUDA device to time on (%s)\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 2;
  }
  BENCH_CUDA(cudaGetDevice(&dev));
  BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  FILE* csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv) std::fprintf(csv, "kernel,rows,dim,block,sm,start_us,end_us\n");
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreate(&s));
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::int64_t R = rows[k], D = dims[k];
    if (D % kChunk != 0 || D > kThreadsMax * kIters * kChunk) {
      std::fprintf(stderr, "rmsnorm-timeline: D = %lld: a multiple of 8 up to %d\n", static_cast<long long>(D),
                   kThreadsMax * kIters * kChunk);
      return 2;
    }
    const std::size_t n = static_cast<std::size_t>(R * D), bytes = n * sizeof(T);
    const int sets = static_cast<int>(std::max<std::size_t>(2, (4 * static_cast<std::size_t>(l2)) / (2 * bytes) + 1));
    std::vector<Set> set(static_cast<std::size_t>(sets));
    std::vector<T> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = __float2bfloat16(static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f);
    for (Set& b : set) {
      BENCH_CUDA(cudaMalloc(&b.x, bytes));
      BENCH_CUDA(cudaMalloc(&b.y, bytes));
      BENCH_CUDA(cudaMemcpy(b.x, host.data(), bytes, cudaMemcpyHostToDevice));
    }
    T* g = nullptr;
    BENCH_CUDA(cudaMalloc(&g, static_cast<std::size_t>(D) * sizeof(T)));
    BENCH_CUDA(cudaMemcpy(g, host.data(), static_cast<std::size_t>(D) * sizeof(T), cudaMemcpyHostToDevice));
    float* rstd = nullptr;
    BENCH_CUDA(cudaMalloc(&rstd, static_cast<std::size_t>(R) * sizeof(float)));
    Stamp* st = nullptr;
    BENCH_CUDA(cudaMalloc(&st, static_cast<std::size_t>(R) * sizeof(Stamp)));

    auto params = [&](int i) {
      Params p;
      p.x = set[static_cast<std::size_t>(i)].x;
      p.x_out = set[static_cast<std::size_t>(i)].x;
      p.y = set[static_cast<std::size_t>(i)].y;
      p.g = g;
      p.rstd = rstd;
      p.rows = R;
      p.dim = D;
      p.x_stride = p.o_stride = p.y_stride = D;
      p.eps = 1e-6f;
      return p;
    };
    const int threads = fwd::block_row_config(D).lanes;  // the product's mapping
    int per_sm = 0;
    BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fwd::fwd_regs_ahead_kernel<T, T, false, false, kIters>, threads, 0));
    const std::int64_t wave = static_cast<std::int64_t>(per_sm) * sms;
    const dim3 grid(static_cast<unsigned>(R));
    const int threads2 = static_cast<int>(std::min<std::int64_t>(kThreadsMax, ((D / kChunk + 1) / 2 + 31) / 32 * 32));
    const int threads8 = static_cast<int>(std::max<std::int64_t>(32, ((D / kChunk + 7) / 8 + 31) / 32 * 32));
    if (threads2 * 2 * kChunk < D) std::printf("(iters2 does not cover D = %lld: its figure is not a forward)\n", static_cast<long long>(D));
    std::printf("shape %lld x %lld bf16: %d threads a block, %d blocks an SM (ahead kernel), %d SMs, %d buffer sets\n",
                static_cast<long long>(R), static_cast<long long>(D), threads, per_sm, sms, sets);

    // Events: the production kernels themselves (no stamps), the row copy unstamped, the memcpy;
    // then the stamped forms, to show what the stamps cost.
    const std::int64_t ahead = wave < R ? wave : 0;
    // fwd.staged_rows' shape for this kernel (FP8 outputs only in the product): a persistent grid,
    // each block's next rows staged in shared memory, the next row's loads in flight through the
    // current row's reduction and stores.
    auto staged_kernel = fwd::fwd_regs_kernel<T, T, false, false, 0, kIters, Mutant::none, true>;
    int reg_blocks = 0;
    BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&reg_blocks, staged_kernel, threads, 0));
    const fwd::StagedLaunch sl = fwd::staged_launch_shape(reg_blocks, fwd::staged_stage_bytes(D, sizeof(T), false));
    BENCH_CUDA(cudaFuncSetAttribute(staged_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sl.smem)));
    const unsigned staged_grid = static_cast<unsigned>(std::min<std::int64_t>(R, static_cast<std::int64_t>(sl.blocks_per_sm) * sms));
    std::printf("staged: %d blocks an SM, %d stages, %zu bytes\n", sl.blocks_per_sm, sl.stages, sl.smem);
    // The production kernel held to fewer blocks an SM by unused dynamic shared memory: one fewer
    // than its registers allow, and half.
    auto prod = fwd::fwd_regs_kernel<T, T, false, false, 0, kIters, Mutant::none>;
    int prod_per_sm = 0, smem_per_sm = 0;
    BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&prod_per_sm, prod, threads, 0));
    BENCH_CUDA(cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    auto smem_for = [&](int b) {
      int lo = 0;
      for (int bytes = 0; bytes <= smem_per_sm; bytes += 1024) {  // the most bytes that still fit b blocks
        int got = 0;
        BENCH_CUDA(cudaFuncSetAttribute(prod, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(bytes, 1024)));
        BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&got, prod, threads, static_cast<std::size_t>(bytes)));
        if (got >= b) lo = bytes; else break;
      }
      return static_cast<std::size_t>(lo);
    };
    const std::int64_t prod_wave = static_cast<std::int64_t>(prod_per_sm) * sms;
    const std::size_t occ_less_smem = smem_for(std::max(1, prod_per_sm - 1));
    const std::size_t occ_half_smem = smem_for(std::max(1, prod_per_sm / 2));
    BENCH_CUDA(cudaFuncSetAttribute(prod, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(std::max(occ_less_smem, occ_half_smem))));
    std::printf("production kernel: %d blocks an SM; occ-1: %d (%zu bytes), occ/2: %d (%zu bytes)\n", prod_per_sm,
                std::max(1, prod_per_sm - 1), occ_less_smem, std::max(1, prod_per_sm / 2), occ_half_smem);
    int gc_per_sm = 0;
    BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&gc_per_sm, gridcopy<2>, 256, 0));
    const unsigned gc2 = static_cast<unsigned>(gc_per_sm * sms);
    BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&gc_per_sm, gridcopy<4>, 256, 0));
    const unsigned gc4 = static_cast<unsigned>(gc_per_sm * sms);
    std::vector<double> plain = {
        time_us([&](int i) { fwd::fwd_regs_kernel<T, T, false, false, 0, kIters, Mutant::none><<<grid, threads, 0, s>>>(params(i)); }, sets, iters, false, s),
        time_us([&](int i) { fwd::fwd_regs_ahead_kernel<T, T, false, false, kIters><<<grid, threads, 0, s>>>(params(i), ahead); }, sets, iters, false, s),
        time_us([&](int i) { rowcopy_stamped<<<grid, threads, 0, s>>>(params(i), nullptr); }, sets, iters, false, s),
        time_us([&](int i) { gpre_stamped<<<grid, threads, 0, s>>>(params(i), 0, nullptr); }, sets, iters, false, s),
        time_us([&](int i) { gpre_stamped<<<grid, threads, 0, s>>>(params(i), wave, nullptr); }, sets, iters, false, s),
        time_us([&](int i) { ahead1_stamped<<<grid, threads, 0, s>>>(params(i), ahead, nullptr); }, sets, iters, false, s),
        time_us([&](int i) { iters_form<2><<<grid, threads2, 0, s>>>(params(i)); }, sets, iters, false, s),
        time_us([&](int i) { iters_form<8><<<grid, threads8, 0, s>>>(params(i)); }, sets, iters, false, s),
        time_us([&](int i) { prod<<<grid, threads, occ_less_smem, s>>>(params(i)); }, sets, iters, false, s),
        time_us([&](int i) { prod<<<grid, threads, occ_half_smem, s>>>(params(i)); }, sets, iters, false, s),
        time_us([&](int i) { fwd::fwd_regs_stagger_kernel<T, T, false, false, kIters><<<grid, threads, 0, s>>>(params(i), prod_wave, static_cast<unsigned>(sms), 250); }, sets, iters, false, s),
        time_us([&](int i) { fwd::fwd_regs_stagger_kernel<T, T, false, false, kIters><<<grid, threads, 0, s>>>(params(i), prod_wave, static_cast<unsigned>(sms), 500); }, sets, iters, false, s),
        time_us([&](int i) { fwd::fwd_regs_stagger_kernel<T, T, false, false, kIters><<<grid, threads, 0, s>>>(params(i), prod_wave, static_cast<unsigned>(sms), 1000); }, sets, iters, false, s),
        time_us([&](int i) { staged_kernel<<<staged_grid, threads, sl.smem, s>>>(params(i)); }, sets, iters, false, s),
        time_us([&](int i) { gridcopy<2><<<gc2, 256, 0, s>>>(reinterpret_cast<const uint4*>(set[static_cast<std::size_t>(i)].x), reinterpret_cast<uint4*>(set[static_cast<std::size_t>(i)].y), static_cast<std::int64_t>(bytes / 16)); }, sets, iters, false, s),
        time_us([&](int i) { gridcopy<4><<<gc4, 256, 0, s>>>(reinterpret_cast<const uint4*>(set[static_cast<std::size_t>(i)].x), reinterpret_cast<uint4*>(set[static_cast<std::size_t>(i)].y), static_cast<std::int64_t>(bytes / 16)); }, sets, iters, false, s),
        time_us([&](int i) { BENCH_CUDA(cudaMemcpyAsync(set[static_cast<std::size_t>(i)].y, set[static_cast<std::size_t>(i)].x, bytes, cudaMemcpyDeviceToDevice, s)); },
                sets, iters, false, s)};
    const std::vector<double> stamped = {
        time_us([&](int i) { fwd_stamped<<<grid, threads, 0, s>>>(params(i), st); }, sets, iters, false, s),
        time_us([&](int i) { ahead_stamped<<<grid, threads, 0, s>>>(params(i), ahead, st); }, sets, iters, false, s),
        time_us([&](int i) { rowcopy_stamped<<<grid, threads, 0, s>>>(params(i), st); }, sets, iters, false, s),
        time_us([&](int i) { gpre_stamped<<<grid, threads, 0, s>>>(params(i), 0, st); }, sets, iters, false, s),
        time_us([&](int i) { ahead1_stamped<<<grid, threads, 0, s>>>(params(i), ahead, st); }, sets, iters, false, s)};
    const char* labels[] = {"fwd", "ahead", "rowcopy", "gpre", "gpre-first-wave", "ahead-first-wave", "iters2", "iters8", "occ-1", "occ/2", "stagger250", "stagger500", "stagger1000", "staged", "gridcopy2", "gridcopy4"};
    const double mc = plain.back();
    std::printf("events, median of %d (us):", iters);
    for (std::size_t i = 0; i + 1 < plain.size(); ++i) std::printf("  %s %.2f", labels[i], plain[i]);
    std::printf("  memcpy %.2f   (stamped:", mc);
    for (double t : stamped) std::printf(" %.2f", t);
    std::printf(")\nratio to memcpy:");
    for (std::size_t i = 0; i + 1 < plain.size(); ++i) std::printf("  %s %.3f", labels[i], mc / plain[i]);
    std::printf("\n");
    std::vector<Stamp> host_st(static_cast<std::size_t>(R));
    const char* names[] = {"fwd", "ahead", "rowcopy", "gpre", "ahead1"};
    for (int kk = 0; kk < 5; ++kk) {
      BENCH_CUDA(cudaStreamSynchronize(s));
      if (kk == 0) fwd_stamped<<<grid, threads, 0, s>>>(params(0), st);
      if (kk == 1) ahead_stamped<<<grid, threads, 0, s>>>(params(0), ahead, st);
      if (kk == 2) rowcopy_stamped<<<grid, threads, 0, s>>>(params(0), st);
      if (kk == 3) gpre_stamped<<<grid, threads, 0, s>>>(params(0), 0, st);
      if (kk == 4) ahead1_stamped<<<grid, threads, 0, s>>>(params(0), ahead, st);
      BENCH_CUDA(cudaGetLastError());
      BENCH_CUDA(cudaMemcpyAsync(host_st.data(), st, host_st.size() * sizeof(Stamp), cudaMemcpyDeviceToHost, s));
      BENCH_CUDA(cudaStreamSynchronize(s));
      summarize(names[kk], R, D, plain[kk == 4 ? 5 : static_cast<std::size_t>(kk)], host_st, sms, csv);
    }
    for (Set& b : set) {
      BENCH_CUDA(cudaFree(b.x));
      BENCH_CUDA(cudaFree(b.y));
    }
    BENCH_CUDA(cudaFree(g));
    BENCH_CUDA(cudaFree(rstd));
    BENCH_CUDA(cudaFree(st));
  }
  if (csv) std::fclose(csv);
  return 0;
}
