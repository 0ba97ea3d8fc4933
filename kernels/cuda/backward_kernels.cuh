// Backward kernels (docs/contract.md#semantics, the backward): dx per row and the first stage of a
// deterministic two-stage dg, shared by the backward variants (variants/bwd_*.cuh), products and
// mutants alike.
//
// Maths, per row (r = the forward's fp32 rstd, w = g, 1 + g or 1 by convention):
//   ĝ_j = RN32(dy_j · w_j),  x̂_j = RN32(x_j · r)
//   s   = Σ_j ĝ_j x̂_j        fp32: each thread chains its own elements (fma), then a butterfly
//   c   = RN32(s / D)          a true IEEE division by D (D ≤ 2^24 is exact in fp32)
//   dx_j = RN_T( RN32(r · RN32(ĝ_j − x̂_j c)) [+ dresidual_j, one more fp32 rounding] )
//   dg partial of a program: acc_j = Σ_{its rows, in row order} dy_j x̂_j   (fma chain)
// Zero rows need no special case: x̂ = 0, c = 0, so dx = r ĝ = dy ⊙ w / √eps (docs/properties.md#p6).
//
// Work split: P = kProgramsPerSM × SM count programs (a function of the device only). A program
// is one CUDA block holding kRows row streams (one warp each when kRows > 1, the whole block when
// kRows == 1). Stream q of the launched grid takes rows q, q + Q, q + 2Q, … with Q = streams
// launched, which depends only on R and P. Each stream keeps its dg partial in fp32 registers
// (its columns never change across rows); at the end the streams of a program are added in
// stream order (shared memory) and the program writes its row of the [P_launched, D] workspace.
// The second kernel adds the P_launched rows of every column in a fixed order. No float atomics
// (except in mutant M10), so dg is bitwise reproducible for the same R on the same device.
#pragma once

#include "device_common.cuh"

namespace rmsnorm::cuda::bwd {

inline constexpr int kProgramsPerSM = 2;
inline constexpr int kMultiRows = 16;         // row streams (warps) per program, D <= 256
inline constexpr int kMultiRowsWide = 8;      // row streams (warps) per program, 256 < D <= 512
inline constexpr int kRereadThreads = 1024;   // large-D kernel
inline constexpr int kColsPerStage2Block = 32;
inline constexpr int kStage2Lanes = 16;       // partial rows read in parallel per column

enum class WeightMode : int { standard = 0, gemma = 1, none = 2 };

template <typename T, typename G>
struct Params {
  const T* x = nullptr;
  const T* dy = nullptr;
  T* dx = nullptr;
  const T* dres = nullptr;  // add_backward: dresidual, else null
  const G* g = nullptr;     // null with WeightMode::none
  const float* rstd = nullptr;
  std::int64_t sx = 0, sdy = 0, sdx = 0, sdres = 0;  // row strides, elements
  std::int64_t rows = 0;
  std::int64_t dim = 0;
  WeightMode weight = WeightMode::standard;
  float* partials = nullptr;   // [gridDim.x, dim] fp32, or null when dg is not wanted
  float* dg_atomic = nullptr;  // mutant M10 only: [dim] fp32, zeroed, updated by atomicAdd
};

// Row start of a view under the mutants that break addressing: M8 takes the stride as D,
// M11 forms the row's byte offset in 32-bit arithmetic (as the forward's M11: it wraps at 4 GiB,
// which P18's rows 2^31 elements apart cross for every type; an element count would wrap only
// at 2^32 elements, past P18's reach).
template <Mutant M, typename P>
__device__ __forceinline__ P* row_start(P* base, std::int64_t row, std::int64_t stride, std::int64_t dim) {
  const std::int64_t s = M == Mutant::M8_stride_ignored ? dim : stride;
  return base + row_offset<M == Mutant::M11_offsets_32bit>(row, s, static_cast<unsigned>(sizeof(P)));
}

// Chunk c of a row (elements [8c, 8c+8) ∩ [0, D)). Full chunks of 16-byte-aligned rows take
// vector loads; the last partial chunk and every chunk of a misaligned view are read element by
// element, never past element D−1. Missing elements are zero.
template <typename T, bool kAligned>
__device__ __forceinline__ Chunk<T> load_row_chunk(const T* row, std::int64_t c, std::int64_t dim) {
  const std::int64_t e0 = c * kChunk;
  const std::int64_t n = dim - e0;
  if (kAligned && n >= kChunk) return load_chunk(row + e0);
  return load_chunk_partial(row + e0, n >= kChunk ? kChunk : static_cast<int>(n));
}

template <typename G, bool kAligned>
__device__ __forceinline__ Chunk<G> load_weight_chunk(const G* g, std::int64_t c, std::int64_t dim) {
  const std::int64_t e0 = c * kChunk;
  const std::int64_t n = dim - e0;
  if (kAligned && n >= kChunk) return load_chunk_ro(g + e0);
  return load_chunk_partial(g + e0, n >= kChunk ? kChunk : static_cast<int>(n));
}

template <typename T, bool kAligned>
__device__ __forceinline__ void store_row_chunk(T* row, std::int64_t c, std::int64_t dim, const float (&v)[kChunk]) {
  const std::int64_t e0 = c * kChunk;
  const std::int64_t n = dim - e0;
  if (kAligned && n >= kChunk) {
    store_chunk(row + e0, pack<T>(v));
  } else {
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (j < n) row[e0 + j] = from_float<T>(v[j]);
  }
}

// w_j as fp32: g, 1 + g (one fp32 rounding) or 1.
__device__ __forceinline__ float weight_value(float g, WeightMode mode) {
  return mode == WeightMode::gemma ? 1.0f + g : (mode == WeightMode::none ? 1.0f : g);
}

// The weight of one element of `row` as fp32: `held`, its column's w_j, except under M20, which
// takes g[row mod D] (the weight picked by the row, broadcast over it). Every kernel's weights
// pass through it or chunk_weights (which calls it for M20).
template <Mutant M, typename T, typename G>
__device__ __forceinline__ float element_weight(const Params<T, G>& p, std::int64_t row, float held) {
  if constexpr (M == Mutant::M20_weight_by_row) {
    (void)held;
    return p.weight == WeightMode::none ? 1.0f : weight_value(to_float(p.g[row % p.dim]), p.weight);
  } else {
    (void)p;
    (void)row;
    return held;
  }
}

// The weights of one chunk as fp32. M20 broadcasts g[row mod D] over the whole row.
template <typename T, typename G, bool kAligned, Mutant M>
__device__ __forceinline__ void chunk_weights(const Params<T, G>& p, std::int64_t row, std::int64_t c,
                                              float (&w)[kChunk]) {
  if (p.weight == WeightMode::none) {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) w[j] = 1.0f;
    return;
  }
  if constexpr (M == Mutant::M20_weight_by_row) {
    const float wr = element_weight<M>(p, row, 0.0f);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) w[j] = wr;
  } else {
    (void)row;
    const Chunk<G> gc = load_weight_chunk<G, kAligned>(p.g, c, p.dim);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) w[j] = weight_value(chunk_get(gc, j), p.weight);
  }
}

// A thread's dg sums of its K chunks, started at -0 (the exact identity of +).
template <int K>
__device__ __forceinline__ void start_dg_sums(float (&acc)[K][kChunk]) {
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int j = 0; j < kChunk; ++j) acc[k][j] = -0.0f;
}

// The weights of chunk c of `row` as fp32 where this thread owns the chunk, zeros elsewhere (a
// chunk it does not own adds exact zeros to its chain). The row matters only to M20; kernels that
// load the weights once per program pass row 0 (they carry no M20).
template <typename T, typename G, Mutant M>
__device__ __forceinline__ void owned_chunk_weights(const Params<T, G>& p, bool owned, std::int64_t row, std::int64_t c,
                                                    float (&w)[kChunk]) {
  if (owned) {
    chunk_weights<T, G, true, M>(p, row, c, w);
  } else {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) w[j] = 0.0f;
  }
}

// c of a row from its reduced Σ ĝ x̂: the mean, RN32(s / D) (M4: the sum itself). Every kernel
// forms c here.
template <Mutant M>
__device__ __forceinline__ float cmean_of(float total, float dim_f) {
  if constexpr (M == Mutant::M4_bwd_sum_not_mean) {
    // The sum as a division by 1 (exact): kept a division, as the product's, so that nvcc
    // schedules the kernel alike (dropped, the wide cluster kernel spilled 52 bytes).
    (void)dim_f;
    return __fdiv_rn(total, 1.0f);
  } else {
    return __fdiv_rn(total, dim_f);
  }
}

// dx of one element before the residual's gradient: r·(ĝ − x̂·c) with ĝ = dy·w, as
// fma(−x̂, c, dy·w)·r (M5: r·ĝ, the reduction term dropped). Every kernel but the register path
// (which has its own, with its other switches) forms dx here, chunk_dx or directly. (ĝ is formed
// here, after −x̂, as the products always did: nvcc schedules some of them differently otherwise.)
template <Mutant M>
__device__ __forceinline__ float dx_of(float xh, float cmean, float dy, float w, float r) {
  if constexpr (M == Mutant::M5_bwd_no_reduction) {
    // r·ĝ for finite c: the term multiplied by 0, not removed, so c's division stays and nvcc
    // schedules the kernel alike (removed, the wide cluster kernel spilled 48 bytes).
    return fmaf(-xh, 0.0f * cmean, dy * w) * r;
  } else {
    return fmaf(-xh, cmean, dy * w) * r;
  }
}

// dx of one chunk before the residual's gradient, dx_j = r·(ĝ_j − x̂_j·c) with ĝ = dy·w and
// x̂ = x·r (one rounding order for every kernel that holds the chunk: fma(−x̂, c, ĝ)·r, dx_of),
// and the chunk's dg sums acc_j += dy_j·x̂_j.
template <Mutant M, typename T>
__device__ __forceinline__ void chunk_dx(const Chunk<T>& xc, const Chunk<T>& dyc, const float (&w)[kChunk], float r,
                                         float cmean, float (&acc)[kChunk], float (&out)[kChunk]) {
#pragma unroll
  for (int j = 0; j < kChunk; ++j) {
    const float dyv = chunk_get(dyc, j);
    const float xh = chunk_get(xc, j) * r;
    out[j] = dx_of<M>(xh, cmean, dyv, w[j], r);
    acc[j] = fmaf(dyv, xh, acc[j]);
  }
}

// Sum over a row stream's threads: a warp butterfly (kRows > 1: one warp per row) or the block
// all-reduce over two alternating shared buffers (one barrier per row; a buffer is rewritten
// only after every warp has passed the next row's barrier, i.e. finished reading it).
template <int kRows>
__device__ __forceinline__ float row_sum(float v, float (*buffers)[kWarp], int parity) {
  if constexpr (kRows > 1) {
    (void)buffers;
    (void)parity;
    return warp_sum<kWarp>(v);
  } else {
    return block_sum(v, buffers[parity]);
  }
}

// A stream's row in write_dg_partial's shared memory: the columns rounded up to a chunk, so that
// every chunk's 16-byte stores stay aligned.
__host__ __device__ inline constexpr std::int64_t dg_combine_pitch(std::int64_t columns) {
  return (columns + kChunk - 1) / kChunk * kChunk;
}

// A program's row of the dg workspace, from each thread's fp32 column sums acc[k] of chunk
// first + k·step, for the row's columns [chunk0·8, dim) (chunk0 > 0: a cluster CTA's slice).
// kShared (every kernel but the register path's single row stream, which has no shared memory to
// spare): each stream's sums go to its own row of `combine` (S rows of `pitch` floats, pitch the
// columns rounded up to a chunk; free to use: the caller has made sure nothing still reads it), a
// chunk's eight as two 16-byte stores; after the block's barrier each column adds the S rows in
// stream order (S − 1 sequential adds, declared in dg_shape_of) and the row leaves in one
// coalesced pass. Written straight from the registers instead, a thread's eight consecutive
// floats are eight 4-byte stores, each of a warp's touching 32 sectors: the L2 took eight write
// requests per sector of partials (H200, ncu at 4096 x 16384 bf16 on bwd.staged_rows: 3.0 M
// more L2 write sectors with dg than without, for 0.27 M sectors of partials, and stage 1
// 19.5 us slower). And 4-byte stores at a 32-byte stride into shared memory meet 8-way bank
// conflicts; 16-byte ones meet two-way ones. Every thread of the block
// calls it (`tid` of `nthreads`).
template <int K, int S, bool kShared = (S > 1)>
__device__ __forceinline__ void write_dg_partial(float* part, const float (&acc)[K][kChunk], std::int64_t first,
                                                 std::int64_t step, std::int64_t dim, int stream, float* combine,
                                                 int tid, int nthreads, std::int64_t chunk0 = 0) {
  static_assert(kShared || S == 1, "row streams meet in shared memory");
  if constexpr (!kShared) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = first + static_cast<std::int64_t>(k) * step;
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        if (c * kChunk + j < dim) part[c * kChunk + j] = acc[k][j];
    }
  } else {
    const std::int64_t col0 = chunk0 * kChunk;
    const std::int64_t width = dim > col0 ? dim - col0 : 0;
    const std::int64_t pitch = dg_combine_pitch(width);
    float* const mine = combine + static_cast<std::int64_t>(stream) * pitch;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = first + static_cast<std::int64_t>(k) * step;
      if (c * kChunk < dim) {  // its columns past dim are never read back
        float4* const dst = reinterpret_cast<float4*>(mine + (c - chunk0) * kChunk);
        dst[0] = make_float4(acc[k][0], acc[k][1], acc[k][2], acc[k][3]);
        dst[1] = make_float4(acc[k][4], acc[k][5], acc[k][6], acc[k][7]);
      }
    }
    __syncthreads();
    for (std::int64_t col = tid; col < width; col += nthreads) {
      float v = combine[col];
#pragma unroll
      for (int q = 1; q < S; ++q) v += combine[q * pitch + col];
      part[col0 + col] = v;
    }
  }
}
// The shared memory write_dg_partial's kShared form takes for S streams of `columns` columns.
inline constexpr std::size_t dg_combine_bytes(int streams, std::int64_t columns) {
  return static_cast<std::size_t>(streams) * static_cast<std::size_t>(dg_combine_pitch(columns)) * sizeof(float);
}

// Stage 1 for D ≤ kThreads/kRows · kChunks · 8: the row stays in registers between the
// reduction and the dx pass (x and dy read once). kChunks chunks per thread; kPrefetch loads the
// next row of the stream before working on the current one (only when registers allow).
template <typename T, typename G, int kThreads, int kRows, int kChunks, bool kAligned, Mutant M>
__global__ void __launch_bounds__(kThreads, (kThreads <= 512 && kChunks <= 2) ? kProgramsPerSM : 1) backward_fused_kernel(Params<T, G> p) {
  static_assert(kRows == 1 || kThreads / kRows == kWarp, "several rows per block means one warp per row");
  static_assert(kThreads % kWarp == 0 && kThreads <= 1024, "block shape");
  begin_dependent_grid();  // the grid ahead has finished; stage 2 may now be scheduled
  constexpr int kGroup = kThreads / kRows;  // threads of one row stream
  // Prefetch only where it fits in the registers (16-bit types, one chunk per thread).
  constexpr bool kPrefetch = kChunks == 1 && sizeof(T) == 2;
  extern __shared__ float combine[];        // [kRows, D] when kRows > 1 and dg is wanted
  __shared__ float reduce_buf[4][kWarp];

  const int stream_in_block = static_cast<int>(threadIdx.x) / kGroup;
  const int t = static_cast<int>(threadIdx.x) % kGroup;
  const std::int64_t stream = static_cast<std::int64_t>(blockIdx.x) * kRows + stream_in_block;
  const std::int64_t nstreams = static_cast<std::int64_t>(gridDim.x) * kRows;
  const std::int64_t dim = p.dim;
  const std::int64_t nchunks = (dim + kChunk - 1) / kChunk;
  const bool want_dg = p.partials != nullptr;
  const float dim_f = static_cast<float>(dim);  // exact for D ≤ 2^24

  float acc[kChunks][kChunk];  // this thread's dg partial (columns fixed across rows)
  start_dg_sums(acc);

  // The weights of this thread's columns, loaded once per program and held (they are the same
  // for every row; M20, the weight picked by the row, loads them per row): a per-row form loads
  // and converts them twice per row, element by element on misaligned rows (ncu,
  // bwd.persistent_rows at 32768 x 1025: 78 instructions per element). Up to two
  // chunks per thread (16 fp32 registers); the 4-chunk form keeps the per-row loads, and so do
  // the mutants (M20 picks the weight by row; M11's fp32 forms spill at the 64-register caps).
  constexpr bool kHoldW = kChunks <= 2 && M == Mutant::none;
  [[maybe_unused]] float w_held[kHoldW ? kChunks : 1][kChunk];
  if constexpr (kHoldW) {
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const std::int64_t c = t + static_cast<std::int64_t>(k) * kGroup;
      if (c < nchunks) {
        chunk_weights<T, G, kAligned, M>(p, 0, c, w_held[k]);
      } else {
#pragma unroll
        for (int j = 0; j < kChunk; ++j) w_held[k][j] = 0.0f;
      }
    }
  }
  // The weights of chunk k (column chunk c) for this row.
  auto weights = [&](int k, std::int64_t row_, std::int64_t c, float (&w)[kChunk]) {
    if constexpr (kHoldW) {
#pragma unroll
      for (int j = 0; j < kChunk; ++j) w[j] = w_held[k][j];
    } else {
      chunk_weights<T, G, kAligned, M>(p, row_, c, w);
    }
  };

  Chunk<T> xc[kChunks], dyc[kChunks];
  float r = 0.0f;
  auto load_row = [&](std::int64_t row, Chunk<T> (&xs)[kChunks], Chunk<T> (&dys)[kChunks], float& rr) {
    const T* xrow = row_start<M>(p.x, row, p.sx, dim);
    const T* dyrow = row_start<M>(p.dy, row, p.sdy, dim);
    rr = p.rstd[row];
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const std::int64_t c = t + static_cast<std::int64_t>(k) * kGroup;
      if (c < nchunks) {
        xs[k] = load_row_chunk<T, kAligned>(xrow, c, dim);
        dys[k] = load_row_chunk<T, kAligned>(dyrow, c, dim);
      } else {
        xs[k] = zero_chunk<T>();
        dys[k] = zero_chunk<T>();
      }
    }
  };

  std::int64_t row = stream;
  int parity = 0;
  if (row < p.rows) load_row(row, xc, dyc, r);
  while (row < p.rows) {
    const std::int64_t next = row + nstreams;
    Chunk<T> xn[kChunks], dyn[kChunks];
    float rn = 0.0f;
    if constexpr (kPrefetch) {
      if (next < p.rows) {
        load_row(next, xn, dyn, rn);
      } else {
#pragma unroll
        for (int k = 0; k < kChunks; ++k) xn[k] = dyn[k] = zero_chunk<T>();
      }
    }

    // s = Σ ĝ x̂ over this thread's elements, in chunk then element order (M16: reversed on
    // odd R, so a row's bits depend on the batch size).
    float s = -0.0f;
    float zero_test = -0.0f;  // M6 only: Σ|x|, zero iff the row is zero
    auto accumulate = [&](int k, int j, const float (&w)[kChunk]) {
      const float xh = chunk_get(xc[k], j) * r;
      const float gh = chunk_get(dyc[k], j) * w[j];
      s = fmaf(gh, xh, s);
      if constexpr (M == Mutant::M6_zero_row_shortcut) zero_test += fabsf(chunk_get(xc[k], j));
    };
    const bool reversed = M == Mutant::M16_order_depends_on_rows && (p.rows & 1) != 0;
    if (!reversed) {
#pragma unroll
      for (int k = 0; k < kChunks; ++k) {
        const std::int64_t c = t + static_cast<std::int64_t>(k) * kGroup;
        if (c < nchunks) {
          float w[kChunk];
          weights(k, row, c, w);
#pragma unroll
          for (int j = 0; j < kChunk; ++j) accumulate(k, j, w);
        }
      }
    } else {
#pragma unroll
      for (int k = kChunks - 1; k >= 0; --k) {
        const std::int64_t c = t + static_cast<std::int64_t>(k) * kGroup;
        if (c < nchunks) {
          float w[kChunk];
          weights(k, row, c, w);
#pragma unroll
          for (int j = kChunk - 1; j >= 0; --j) accumulate(k, j, w);
        }
      }
    }
    const float total = row_sum<kRows>(s, reduce_buf, parity);
    bool zero_row = false;
    if constexpr (M == Mutant::M6_zero_row_shortcut) zero_row = row_sum<kRows>(zero_test, reduce_buf, 2 + parity) == 0.0f;
    parity ^= 1;
    // c = mean of ĝ x̂ (M4: the sum; M5 drops the term altogether below).
    const float cmean = cmean_of<M>(total, dim_f);

    T* dxrow = row_start<M>(p.dx, row, p.sdx, dim);
    const T* dresrow = p.dres ? row_start<M>(p.dres, row, p.sdres, dim) : nullptr;
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const std::int64_t c = t + static_cast<std::int64_t>(k) * kGroup;
      if (c < nchunks) {
        float w[kChunk];
        weights(k, row, c, w);
        float out[kChunk];
#pragma unroll
        for (int j = 0; j < kChunk; ++j) {
          const float xv = chunk_get(xc[k], j), dyv = chunk_get(dyc[k], j);
          const float xh = xv * r;
          const float gh = dyv * w[j];
          float d = M == Mutant::M5_bwd_no_reduction ? gh * r : fmaf(-xh, cmean, gh) * r;
          if (M == Mutant::M6_zero_row_shortcut && zero_row) d = 0.0f;
          out[j] = d;
          if constexpr (M == Mutant::M10_dg_float_atomics) {
            if (want_dg && c * kChunk + j < dim) atomicAdd(p.dg_atomic + c * kChunk + j, dyv * xh);
          } else {
            acc[k][j] = fmaf(dyv, xh, acc[k][j]);
          }
        }
        if (dresrow) {
          const Chunk<T> rc = load_row_chunk<T, kAligned>(dresrow, c, dim);
#pragma unroll
          for (int j = 0; j < kChunk; ++j) out[j] += chunk_get(rc, j);
        }
        store_row_chunk<T, kAligned>(dxrow, c, dim, out);
      }
    }

    if constexpr (kPrefetch) {
#pragma unroll
      for (int k = 0; k < kChunks; ++k) {
        xc[k] = xn[k];
        dyc[k] = dyn[k];
      }
      r = rn;
    } else {
      if (next < p.rows) load_row(next, xc, dyc, r);
    }
    row = next;
  }

  if (M == Mutant::M10_dg_float_atomics || !want_dg) return;
  write_dg_partial<kChunks, kRows>(p.partials + static_cast<std::int64_t>(blockIdx.x) * dim, acc, t, kGroup, dim,
                                   stream_in_block, combine, static_cast<int>(threadIdx.x), kThreads);
}

// Stage 1 for any D (the large-D path): one block per row at a time; the reduction pass and the
// dx pass each read x and dy (the second read mostly hits L2), and the program's dg partial row
// lives in the workspace itself (each thread owns its columns: read-add-write in row order).
template <typename T, typename G, bool kAligned, Mutant M>
__global__ void __launch_bounds__(kRereadThreads, 1) backward_reread_kernel(Params<T, G> p) {
  begin_dependent_grid();  // the grid ahead has finished; stage 2 may now be scheduled
  __shared__ float reduce_buf[2][kWarp];
  const std::int64_t dim = p.dim;
  const std::int64_t nchunks = (dim + kChunk - 1) / kChunk;
  const bool want_dg = p.partials != nullptr;
  float* part = want_dg ? p.partials + static_cast<std::int64_t>(blockIdx.x) * dim : nullptr;
  const float dim_f = static_cast<float>(dim);
  int parity = 0;
  bool first_row = true;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* xrow = row_start<M>(p.x, row, p.sx, dim);
    const T* dyrow = row_start<M>(p.dy, row, p.sdy, dim);
    const float r = p.rstd[row];
    float s = -0.0f;
    for (std::int64_t c = threadIdx.x; c < nchunks; c += kRereadThreads) {
      const Chunk<T> xc = load_row_chunk<T, kAligned>(xrow, c, dim);
      const Chunk<T> dyc = load_row_chunk<T, kAligned>(dyrow, c, dim);
      float w[kChunk];
      chunk_weights<T, G, kAligned, M>(p, row, c, w);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) s = fmaf(chunk_get(dyc, j) * w[j], chunk_get(xc, j) * r, s);
    }
    const float cmean = cmean_of<M>(block_sum(s, reduce_buf[parity]), dim_f);
    parity ^= 1;
    T* dxrow = row_start<M>(p.dx, row, p.sdx, dim);
    const T* dresrow = p.dres ? row_start<M>(p.dres, row, p.sdres, dim) : nullptr;
    for (std::int64_t c = threadIdx.x; c < nchunks; c += kRereadThreads) {
      const Chunk<T> xc = load_row_chunk<T, kAligned>(xrow, c, dim);
      const Chunk<T> dyc = load_row_chunk<T, kAligned>(dyrow, c, dim);
      float w[kChunk];
      chunk_weights<T, G, kAligned, M>(p, row, c, w);
      float out[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const float dyv = chunk_get(dyc, j);
        const float xh = chunk_get(xc, j) * r;
        out[j] = dx_of<M>(xh, cmean, dyv, w[j], r);
      }
      if (dresrow) {
        const Chunk<T> rc = load_row_chunk<T, kAligned>(dresrow, c, dim);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) out[j] += chunk_get(rc, j);
      }
      store_row_chunk<T, kAligned>(dxrow, c, dim, out);
      if (want_dg) {
#pragma unroll
        for (int j = 0; j < kChunk; ++j) {
          const std::int64_t col = c * kChunk + j;
          // Same fma chain as the register path: acc = fma(dy, x̂, acc), starting from -0.
          if (col < dim) part[col] = first_row ? fmaf(chunk_get(dyc, j), chunk_get(xc, j) * r, -0.0f)
                                               : fmaf(chunk_get(dyc, j), chunk_get(xc, j) * r, part[col]);
        }
      }
    }
    first_row = false;
  }
}

// Stage 2: dg_i = Σ_p partials[p, i] for p < nparts, in a fixed order: lane q of a column adds
// rows q, q+16, … sequentially (ceil(nparts/16) terms), then the 16 lanes meet in a 4-level
// tree. Declared: per_thread ceil(P/16), tree_depth 4 (added to the stage-1 chain).
// Launched as stage 1's programmatic dependent (launch_stage2): it waits for stage 1 on entry.
// The loads of a lane are issued kStage2Batch at a time, then added in row order: the same
// chain, with one memory round trip per batch instead of one per partial row.
inline constexpr int kStage2Batch = 8;
template <typename Out>
__global__ void __launch_bounds__(kColsPerStage2Block * kStage2Lanes)
    dg_column_sum_kernel(const float* partials, std::int64_t nparts, std::int64_t dim, Out* dg) {
  __shared__ float lanes[kStage2Lanes][kColsPerStage2Block];
  const int cx = static_cast<int>(threadIdx.x) % kColsPerStage2Block;
  const int q = static_cast<int>(threadIdx.x) / kColsPerStage2Block;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColsPerStage2Block + cx;
  begin_dependent_grid();
  float v = -0.0f;
  if (col < dim) {
    std::int64_t pr = q;
    for (; pr + (kStage2Batch - 1) * kStage2Lanes < nparts; pr += kStage2Batch * kStage2Lanes) {
      float b[kStage2Batch];
#pragma unroll
      for (int k = 0; k < kStage2Batch; ++k) b[k] = partials[(pr + k * kStage2Lanes) * dim + col];
#pragma unroll
      for (int k = 0; k < kStage2Batch; ++k) v += b[k];
    }
    for (; pr < nparts; pr += kStage2Lanes) v += partials[pr * dim + col];
  }
  lanes[q][cx] = v;
  __syncthreads();
#pragma unroll
  for (int half = kStage2Lanes / 2; half >= 1; half /= 2) {
    if (q < half) lanes[q][cx] += lanes[q + half][cx];
    __syncthreads();
  }
  if (q == 0 && col < dim) dg[col] = from_float<Out>(lanes[0][cx]);
}

}  // namespace rmsnorm::cuda::bwd
