// fwd.large_d: D <= 2^24, a 1024-thread block per row (fwd_smem_kernel), the row cached in shared
// memory as far as it fits and re-read from L2 beyond it; and its launch form fwd.large_d.pair:
// 512-thread blocks, two per SM, each caching its row in half the SM's shared memory.
#pragma once

#include "forward_variant.h"

namespace rmsnorm::cuda::fwd {

// ---------------------------------------------------------------------------------------------
// Large D: shared-memory row cache (then global re-read beyond its capacity)
// ---------------------------------------------------------------------------------------------

inline constexpr int kSmemThreads = 1024;
// fwd.large_d.pair: 512-thread blocks, two per SM, each with half the SM's shared memory for its
// row cache: one row's loads overlap the other row's reduction, FP8 scale and stores (with 1024
// threads one block fills the SM and its phases run back to back: FP8 at D = 16384 0.32 of the
// copy on the H200; this form measures 0.46-0.47 there).
inline constexpr int kSmemPairThreads = 512;
inline constexpr int kSmemPairBlocksPerSM = 2;
// Chunks in flight per thread and tensor in the loading pass: 64 registers per thread at 1024
// threads leave room for 64 bytes of one tensor in flight, 32 bytes each of two.
template <typename T, bool kAdd>
inline constexpr int kSmemUnroll = sizeof(T) == 2 ? (kAdd ? 2 : 4) : (kAdd ? 1 : 2);

template <typename T, typename G, bool kQuant, bool kAdd, Mutant M, int THREADS = kSmemThreads, bool kStash = false>
__global__ void __launch_bounds__(THREADS, THREADS == kSmemThreads ? 1 : kSmemPairBlocksPerSM)
    fwd_smem_kernel(Params p, std::int64_t cache_chunks) {
  begin_dependent_grid();
  static_assert(THREADS == kSmemThreads || THREADS == kSmemPairThreads, "large-D block shapes");
  static_assert(!kStash || (kQuant && M == Mutant::none), "the y stash: FP8 outputs of the product");
  constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  extern __shared__ uint4 smem_cache[];
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  Chunk<T>* cache = reinterpret_cast<Chunk<T>*>(smem_cache);

  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t D = p.dim;
  const std::int64_t full = D / kChunk;
  const int n_tail = static_cast<int>(D % kChunk);
  const std::int64_t nchunks = full + (n_tail > 0 ? 1 : 0);
  constexpr std::int64_t B = THREADS;

  // kStash (FP8 with a dynamic per-token scale, the product; launched where the row's h and its y
  // as fp32 both fit the block's shared memory): the amax pass parks each chunk's y there, and the
  // quantizing pass reads it back instead of computing it a second time (a second weight load,
  // unpacking and 16 multiplies per chunk). Two planes of float4 after the cache (elements 0-3,
  // 4-7 of chunk c at lo[c], hi[c]): a warp's accesses are 512 contiguous bytes each. The thread
  // that writes chunk c reads it back (the same c = t + k·B), so no barrier; the bits are those of
  // the recomputation, y being formed by the same code. A kernel of its own: a run-time switch in
  // the one kernel slows the 16-bit FP8 forward 4-5 % where no stash fits. Where it is launched
  // (16-bit D <= 16384 on fwd.large_d.pair, <= 32768 on fwd.large_d; fp32 <= 12288 / 24576) it
  // measures FP8 5-11 % and add + FP8 3-10 % faster on the H200, nothing slower.
  [[maybe_unused]] float4* const stash_lo = reinterpret_cast<float4*>(cache + nchunks);
  [[maybe_unused]] float4* const stash_hi = stash_lo + nchunks;
  // kFusedAmax (the product's FP8 forms without the stash: rows the stash does not fit): with a
  // dynamic per-token scale the loading pass also takes max_j |RN(h_j·w_j)| (the weights loaded
  // with the row), reduced beside Σh² behind one barrier, and amax = RN(r · that max): y is formed
  // once, in the quantizing pass, instead of once more for the amax (an extra pass over the cache
  // and the row's weights, and a second barrier). The derivation (the same two roundings as y's,
  // within the oracle's eps32) and the fallback below 2^-126 are fused_amax's. Not for
  // fp32 weights beside 16-bit rows: those forms spilled 4 bytes at 64 registers (CUDA 13).
  constexpr bool kFusedAmax = kQuant && !kStash && M == Mutant::none && !(sizeof(T) == 2 && sizeof(G) == 4);
  const bool fused = kFusedAmax && static_cast<Quant>(p.quant) == Quant::dynamic_token;

  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;
    T* xw = kAdd ? static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T)) : nullptr;

    // Pass 1: read the row (kSmemUnroll<T, kAdd> chunks in flight per thread), fused add, cache, Σh².
    // Thread t owns chunks t, t + B, t + 2B, ... in this order: per_thread = 8·ceil(nchunks/B).
    SumSquares<T, M> ss;
    [[maybe_unused]] unsigned hw_bits = 0;  // kFusedAmax: max |RN(h·w)| bits of this thread's chunks
    for (std::int64_t base = t; base < nchunks; base += B * kSmemUnroll<T, kAdd>) {
      Chunk<T> h[kSmemUnroll<T, kAdd>];
      Chunk<T> ov[kSmemUnroll<T, kAdd>];
#pragma unroll
      for (int u = 0; u < kSmemUnroll<T, kAdd>; ++u) h[u] = load_row_chunk<T, M>(xr, base + u * B, full, n_tail);
      if constexpr (kAdd) {
#pragma unroll
        for (int u = 0; u < kSmemUnroll<T, kAdd>; ++u) ov[u] = load_row_chunk<T, M>(orow, base + u * B, full, n_tail);
      }
#pragma unroll
      for (int u = 0; u < kSmemUnroll<T, kAdd>; ++u) {
        const std::int64_t c = base + u * B;
        if (c >= nchunks) break;
        float a[kChunk];
        unpack(h[u], a);
        if constexpr (kAdd) {
          const Chunk<T> rounded = add_rounded(h[u], ov[u]);
          store_row_chunk(xw, c, full, n_tail, rounded);
          h[u] = rounded;
          unpack(h[u], a);
        }
        if (c < cache_chunks) cache[c] = h[u];
#pragma unroll
        for (int j = 0; j < kChunk; ++j) ss.add(a[j]);
        if constexpr (kFusedAmax) {
          if (fused) {
            float w[kChunk], hw[kChunk];
            load_weights<G, M>(p, row, c, full, n_tail, w);
#pragma unroll
            for (int j = 0; j < kChunk; ++j) hw[j] = __fmul_rn(a[j], w[j]);
            hw_bits = max(hw_bits, chunk_amax_bits(hw, c, full, n_tail));
          }
        }
      }
    }
    // fwd.large_d's grid is persistent (as many blocks as fit at once): the head of the block's
    // next row goes to L2 now, its loads overlapping this row's reduction and stores. Only the
    // head, the bytes of pass 1's first step (64 KB of x; 32 KB each of x and o): that is what
    // the next row waits on first, and whole rows (128 KB per SM at D = 65536, 17 MB on the
    // device) are evicted before use, doubling the DRAM reads (H200, the plain forward at
    // D = 65536: 0.63 of the copy with whole rows prefetched against 0.82 without).
    if constexpr (THREADS == kSmemThreads) {
      if (row + gridDim.x < p.rows) {
        const std::int64_t next = row + gridDim.x;
        constexpr std::int64_t kHead = std::int64_t{kSmemUnroll<T, kAdd>} * THREADS * kVecBytes;
        const std::int64_t head = std::min<std::int64_t>(D * static_cast<std::int64_t>(sizeof(T)), kHead);
        prefetch_row_l2(static_cast<const T*>(p.x) + row_off<M>(next, p.x_stride, D, sizeof(T)), head, t, THREADS);
        if constexpr (kAdd)
          prefetch_row_l2(static_cast<const T*>(p.o) + row_off<M>(next, p.o_stride, D, sizeof(T)), head, t, THREADS);
      }
    }
    // The reduction's barrier also publishes the cache.
    float total = ss.acc;
    [[maybe_unused]] float hw_max = 0.0f;
    if (fused) {
      hw_max = __uint_as_float(hw_bits);
      block_sum_max<kBarrier>(total, hw_max, sum_partials, max_partials);
    } else {
      total = block_sum<kBarrier>(ss.acc, sum_partials);
    }
    const float r = rstd_of<M>(total, D, nchunks * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    // h of chunk c: from the cache, or re-read (this thread wrote it itself under fused add).
    auto h_chunk = [&](std::int64_t c) -> Chunk<T> {
      if (c < cache_chunks) return cache[c];
      if constexpr (kAdd) return load_row_chunk<T, Mutant::none>(xw, c, full, n_tail);
      return load_row_chunk<T, M>(xr, c, full, n_tail);
    };
    auto y_chunk = [&](std::int64_t c, float(&y)[kChunk]) {
      float w[kChunk];
      load_weights<G, M>(p, row, c, full, n_tail, w);
      const Chunk<T> hc = h_chunk(c);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = y_of<T, M>(chunk_get(hc, j), r, w[j], p.convention);
    };

    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
      for (std::int64_t c = t; c < nchunks; c += B) {
        float y[kChunk];
        y_chunk(c, y);
        store_row_chunk(yr, c, full, n_tail, pack<T>(y));
      }
    } else {
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      // (fwd.large_d keeps the scale's prologue written out: through row_fp8_scale the compiler
      // schedules the y stash's instances differently, and those ran on the H200 as they are.)
      float s_row = 0.0f;
      if (mode == Quant::static_scale) {
        s_row = *p.scale;
      } else if (mode == Quant::dynamic_token) {
        // fused_amax written out (through it the compiler schedules every FP8 instance of this
        // kernel differently, those with the stash too; these ran on the H200 as they are).
        float amax;
        if (fused && (hw_max >= 0x1p-126f || hw_max != hw_max)) {
          amax = __fmul_rn(hw_max, r);  // kFusedAmax above
        } else {
          unsigned bits = 0;
          for (std::int64_t c = t; c < nchunks; c += B) {
            float y[kChunk];
            y_chunk(c, y);
            bits = max(bits, chunk_amax_bits(y, c, full, n_tail));
            if constexpr (kStash) {
              stash_lo[c] = make_float4(y[0], y[1], y[2], y[3]);
              stash_hi[c] = make_float4(y[4], y[5], y[6], y[7]);
            }
          }
          if (fused) __syncthreads();  // max_partials were read by block_sum_max
          amax = block_max<kBarrier>(__uint_as_float(bits), max_partials);
        }
        s_row = scale_of<M>(amax, p);
        if (t == 0) p.scale[row] = s_row;
      }
      const float inv_row = __fdiv_rn(1.0f, s_row);  // static / dynamic: one reciprocal per row
      // Every thread runs the same number of steps, so the group butterflies see full warps.
      const std::int64_t steps = (nchunks + B - 1) / B;
      for (std::int64_t k = 0; k < steps; ++k) {
        const std::int64_t c = k * B + t;
        const bool mine = c < nchunks;
        float y[kChunk];
        if (mine) {
          if constexpr (kStash) {
            if (mode == Quant::dynamic_token) {
              const float4 lo = stash_lo[c], hi = stash_hi[c];
              y[0] = lo.x, y[1] = lo.y, y[2] = lo.z, y[3] = lo.w;
              y[4] = hi.x, y[5] = hi.y, y[6] = hi.z, y[7] = hi.w;
            } else {
              y_chunk(c, y);
            }
          } else {
            y_chunk(c, y);
          }
        }
        store_fp8_output<M, kGroupChunks>(p, qr, row, c, mine, t, y, inv_row, mode, full, n_tail);
      }
    }
    __syncthreads();  // the cache and the partials are reused by the next row
  }
}

// A large-D block's dynamic shared memory for a row of n chunks of chunk_bytes within `budget`:
// the h cache (as many chunks as fit; the rest re-read), and for FP8 with a dynamic per-token
// scale (stash_wanted), where the whole row's h and its y as fp32 (two float4 a chunk) both fit,
// the y stash after the cache (fwd_smem_kernel's kStash). A pure function of its arguments, so
// test_launch_configs checks it for every D without a GPU.
struct LargeDSmem {
  std::int64_t cache_chunks = 0;
  std::size_t bytes = 0;
  bool stash = false;
};
inline constexpr std::int64_t kStashBytesPerChunk = 2 * 16;
static_assert(kStashBytesPerChunk == 2 * sizeof(float4), "the stash holds a chunk's y as two float4");
inline LargeDSmem large_d_smem(std::int64_t n, std::int64_t chunk_bytes, std::int64_t budget, bool stash_wanted) {
  LargeDSmem m;
  m.cache_chunks = std::min<std::int64_t>(n, budget / chunk_bytes);
  m.bytes = static_cast<std::size_t>(m.cache_chunks * chunk_bytes);
  const std::int64_t with_stash = n * (chunk_bytes + kStashBytesPerChunk);
  if (stash_wanted && m.cache_chunks == n && with_stash <= budget) {
    m.bytes = static_cast<std::size_t>(with_stash);
    m.stash = true;
  }
  return m;
}

// Where fwd.large_d runs on its persistent grid with the next row's head prefetched: everywhere
// but the plain forward of rows over 64 KB, which keeps a block per row (measured on the H200,
// bf16, D = 65536: 0.79-0.82 of the copy a block per row against 0.69-0.70 persistent).
inline constexpr std::int64_t kLargeDPlainPersistentMaxRowBytes = 64 * 1024;
inline bool large_d_persistent(const ForwardArgs& a) {
  const bool plain = a.quant == Quant::none && a.o.data == nullptr;
  return !plain || a.dim * static_cast<std::int64_t>(size_of(a.x.type)) <= kLargeDPlainPersistentMaxRowBytes;
}

// fwd.large_d (1024 threads, one block per SM) and fwd.large_d.pair (512 threads, two).
template <Mutant M, typename V, int THREADS>
Status launch_large_d(const ForwardArgs& a) {
  return run_variant<M, V>(a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    const std::string who = V::kName;
    const std::int64_t budget = smem_cache_budget(THREADS == kSmemThreads ? 1 : kSmemPairBlocksPerSM);
    // FP8 with a dynamic per-token scale where the row's h and its y as fp32 both fit: the kernel
    // with the y stash (y formed once instead of twice), with room for it.
    const LargeDSmem m = large_d_smem(chunks_of(a.dim), static_cast<std::int64_t>(sizeof(Chunk<T>)), budget,
                                      kQ && M == Mutant::none && a.quant == Quant::dynamic_token);
    const std::int64_t cache_chunks = m.cache_chunks;
    const std::size_t bytes = m.bytes;
    auto kernel = fwd_smem_kernel<T, G, kQ, kA, M, THREADS>;
    if constexpr (kQ && M == Mutant::none) {
      if (m.stash) kernel = fwd_smem_kernel<T, G, kQ, kA, M, THREADS, true>;
    }
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    // fwd.large_d: a persistent grid, each block prefetching the head of its next row (the
    // kernel's loop), except the plain forward of rows over 64 KB, which keeps a block per row.
    // fwd.large_d.pair: a block per row (its two blocks per SM overlap already).
    std::int64_t grid = a.rows;
    if constexpr (THREADS == kSmemThreads) {
      if (e == cudaSuccess && large_d_persistent(a)) e = persistent_grid(kernel, THREADS, bytes, a.rows, grid);
    }
    if (e != cudaSuccess) {
      result = Status::fail(Status::Code::launch_failed, who + ": launch shape: " + cudaGetErrorString(e));
      return;
    }
    launch_kernel(kernel, grid_for(grid), THREADS, bytes, s, p, cache_chunks);
  });
}

struct fwd_large_d_pair {
  static constexpr const char* kName = "fwd.large_d.pair";
  static constexpr const char* kAlias = "fwd.large_d_pair";
  static constexpr int kRank = 600;
  static constexpr const char* kDescription =
      "D <= 2^24: fwd.large_d with 512-thread blocks, two per SM, each caching its row in half the SM's shared memory";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = kMaxDim, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M8_stride_ignored, Mutant::M9_tail_overread,
                             Mutant::M18_missing_barrier>;

  static AccumShape shape(std::int64_t dim) { return chunked_block_shape(dim, kSmemPairThreads); }

  template <Mutant M>
  static Status refuse(const ForwardArgs&, const std::string&) {
    return Status::success();
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return launch_large_d<M, fwd_large_d_pair, kSmemPairThreads>(a);
  }
};

struct fwd_large_d {
  static constexpr const char* kName = "fwd.large_d";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 700;
  static constexpr const char* kDescription =
      "D <= 2^24: a 1024-thread block per row, row cached in shared memory (re-read beyond it)";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = kMaxDim, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M8_stride_ignored, Mutant::M9_tail_overread,
                             Mutant::M11_offsets_32bit, Mutant::M13_fp8_via_bf16, Mutant::M18_missing_barrier,
                             Mutant::M19_misaligned_as_aligned>;

  static AccumShape shape(std::int64_t dim) { return chunked_block_shape(dim, kSmemThreads); }

  template <Mutant M>
  static Status refuse(const ForwardArgs&, const std::string&) {
    return Status::success();
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return launch_large_d<M, fwd_large_d, kSmemThreads>(a);
  }
};

}  // namespace rmsnorm::cuda::fwd
