// bwd.packed_rows.vec8: the backward of packed rows (every row stride = D) that are not 16-byte
// aligned — odd D above all (1025, 4097, 8191: every row starts at a different alignment) and
// offset bases — moved as 16-byte vectors anyway.
//
// Why. A misaligned row cannot be read in 16-byte vectors of its own, so bwd.persistent_rows
// reads it element by element: 0.29 of the same-run copy at 32768 x 1025 bf16 on the H200
// (session 8), 78 instructions per element, 87 % excess sectors (ncu, session 6). But packed
// rows are one contiguous span: a tile of consecutive rows [t·TR, t·TR + TR) of a tensor is
// TR·D consecutive elements, aligned everywhere except at its two ends. So a block copies the
// whole tile with 16-byte cp.async copies into shared memory (each tensor at its own lead,
// element j of the tile at slot lead + j: the vectors are aligned on both sides) and its threads
// read the elements from there; dx goes to a shared buffer in the same layout and leaves in
// 16-byte vectors, element stores only for the partial vectors at the tile's two ends.
//
// What is read. A vector at a tile's edge holds elements of the neighbouring rows: they belong
// to the same tensor (packed: no gaps) and their slots are never read back. A vector that would
// reach before the tensor's first element is read element by element, and one past its last
// element copies only the bytes up to it (cp.async's src-size): no byte outside the tensor is
// read. Stores are exact: no element outside the tile is written, so the neighbouring tiles of
// other blocks (and, in place, dx over dy) never see a byte of this one.
//
// Pipeline and barriers. Any thread copies any vector of a tile and any thread reads any
// element, so a tile's copies are published by a barrier: the one barrier of each iteration
// (the row reduction's, groups_sum). Iteration i, per thread:
//   1. reads tile i (stage i mod S) and sums its row's ĝ x̂;
//   2. waits for its own copies of tile i + 1 (cp.async.wait_group: S − 3 groups may pend);
//   3. the reduction's barrier: every thread has finished iteration i − 1 (so tile i − 1's
//      stage and the dx buffer of tile i − 2 are free) and its copies of tile i + 1 are visible;
//   4. issues tile i + S − 1 into tile i − 1's stage, stores tile i − 1's dx (the buffer the
//      previous iteration filled), and writes tile i's dx into the other of the two dx buffers.
// After the loop one more barrier publishes the last tile's dx. S ≥ 3 stages.
//
// Mapping and order. A block is TR groups of G threads (G a multiple of 32); group q works on
// row q of every tile. Thread gt of a group owns the columns gt + m·G (m < M = ceil(D / G)):
// each warp reads 32 consecutive elements from shared memory (no bank conflict, whatever the
// lead), and a thread's columns never change, so it holds their weights and its dg sums in
// registers. s is chained per thread in column order (ceil(D / G) terms), then the group
// butterfly (5 + ceil_log2(G / 32) levels); c = s / D; dx_j = r·(ĝ_j − x̂_j c) [+ dres_j]: the
// maths of backward_kernels.cuh. dg: group q chains the rows q of its block's tiles in row order
// (ceil(R / (P·TR)) terms, P = the programs launched ≤ the SM count), the TR groups are added in
// group order at the end (TR − 1 adds), stage 2 as everywhere. All of it depends on D, R and
// the SM count only: batch invariant (a row's dx does not depend on its neighbours or its lead)
// and bitwise reproducible.
#pragma once

#include "async_copy.cuh"
#include "backward_launch.cuh"

namespace rmsnorm::cuda::bwd {

inline constexpr std::int64_t kPackedMaxDim16 = 8192;
inline constexpr std::int64_t kPackedMaxDim32 = 4096;  // wider fp32 tiles leave fewer than 3 stages
inline constexpr int kPackedMaxThreads = 768;           // one block per SM, at most 85 registers
inline constexpr int kPackedMaxRows = 8;                // rows per tile (groups per block)
inline constexpr int kPackedPerThread = 8;              // columns per thread up to D = 6144
inline constexpr int kPackedPerThreadWide = 13;         // 6144 < D <= 8192 (16-bit rows)
// The wide instance's block: G for D = 8192 at 13 columns a thread (640 threads, 20 warps: 5 per
// SM sub-partition), so its launch bounds allow 96 registers; the 768-thread bound (6 warps per
// sub-partition) allows 80, where 12 columns a thread spilled 4 bytes.
inline constexpr int kPackedWideMaxThreads =
    static_cast<int>((kPackedMaxDim16 + kPackedPerThreadWide - 1) / kPackedPerThreadWide + kWarp - 1) / kWarp * kWarp;
inline constexpr int kPackedMinStages = 3;
inline constexpr std::size_t kPackedSmem = 200 * 1024;  // the stages and the two dx buffers
// The dispatch hint (packed_preferred, below): where it measured faster than bwd.persistent_rows.
inline constexpr std::int64_t kPackedPreferredMinDim = 513;
inline constexpr std::int64_t kPackedPreferredNarrowMaxDim = 1536;
inline constexpr std::int64_t kPackedPreferredNarrowMinRows = 4096;
inline constexpr std::int64_t kPackedPreferredWideMinDim = 4097;

// From D alone: G threads per row (a multiple of 32, ≤ 768), M columns per thread, TR rows per
// tile (as many groups as fit 768 threads, at most 8).
struct PackedConfig {
  int threads = 0;     // G
  int per_thread = 0;  // M (the template instance; a thread owns ceil(D / G) ≤ M columns)
  int rows = 1;        // TR
  int block() const { return threads * rows; }
};
inline PackedConfig packed_config(std::int64_t dim) {
  PackedConfig c;
  c.per_thread = dim <= std::int64_t{kPackedPerThread} * kPackedMaxThreads ? kPackedPerThread : kPackedPerThreadWide;
  c.threads = static_cast<int>(ceil_div(ceil_div(dim, c.per_thread), kWarp) * kWarp);
  c.rows = std::min(kPackedMaxRows, kPackedMaxThreads / c.threads);
  return c;
}
inline AccumShape packed_row_shape(std::int64_t dim) {
  const PackedConfig c = packed_config(dim);
  AccumShape s;
  s.per_thread = std::min<std::int64_t>(ceil_div(dim, c.threads), dim);
  s.tree_depth = 5 + ceil_log2(c.threads / kWarp);
  return s;
}
// The dg chain over every tile row count packed_config() may choose (2 to kPackedMaxRows, and 1).
inline AccumShape packed_dg_shape(std::int64_t rows) {
  static_assert(kPackedMaxRows == 8, "the list below");
  return dg_shape_of(rows, {2, 3, 4, 5, 6, 7, 8}, /*programs_per_sm=*/1);
}

// Shared memory: two dx buffers of a tile, then S stages of [x, dy (, dres) tiles][TR rstd].
inline std::size_t packed_tile_bytes(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes) {
  return static_cast<std::size_t>(realign_buffer_bytes(c.rows * dim, elem_bytes));
}
inline std::size_t packed_rstd_bytes(const PackedConfig& c) {
  return (static_cast<std::size_t>(c.rows) * sizeof(float) + 15) / 16 * 16;
}
inline std::size_t packed_stage_bytes(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, bool residual) {
  return (residual ? 3 : 2) * packed_tile_bytes(c, dim, elem_bytes) + packed_rstd_bytes(c);
}
inline int packed_stages(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, bool residual) {
  const std::size_t dx = 2 * packed_tile_bytes(c, dim, elem_bytes);
  if (dx >= kPackedSmem) return 0;
  const std::size_t fit = (kPackedSmem - dx) / packed_stage_bytes(c, dim, elem_bytes, residual);
  return static_cast<int>(std::min<std::size_t>(fit, kMaxCopyStages));
}
// The dynamic shared memory of a launch; at the end the stages hold the groups' dg sums
// (TR·D floats), so it is at least that.
inline std::size_t packed_smem(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, bool residual) {
  const std::size_t dx = 2 * packed_tile_bytes(c, dim, elem_bytes);
  const std::size_t stages = static_cast<std::size_t>(packed_stages(c, dim, elem_bytes, residual)) *
                             packed_stage_bytes(c, dim, elem_bytes, residual);
  return dx + std::max(stages, static_cast<std::size_t>(c.rows) * static_cast<std::size_t>(dim) * sizeof(float));
}
inline bool packed_fits(std::int64_t dim, std::size_t elem_bytes, bool residual) {
  return packed_stages(packed_config(dim), dim, elem_bytes, residual) >= kPackedMinStages;
}

// Copies n elements of a packed tensor, starting at `src` (before / after: the tensor's
// elements before src and after the n), into buf[lead + j], lead = realign_lead(src), by
// threads t of `nthreads`: one 16-byte cp.async per vector, element loads for a vector that
// starts before the tensor, only the bytes up to the tensor's end for one that ends after it.
// The element loads are plain (synchronous) stores to shared memory; like the copies they are
// published by the caller's next barrier.
template <typename T>
__device__ __forceinline__ void stage_packed_span(T* buf, const T* src, int n, std::int64_t before, std::int64_t after,
                                                  int t, int nthreads) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  const int lead = realign_lead(src);
  const int words = (lead + n + kPer - 1) / kPer;
  const auto base = reinterpret_cast<std::uintptr_t>(src) - static_cast<std::uintptr_t>(lead) * sizeof(T);
  for (int w = t; w < words; w += nthreads) {
    const int lo = w * kPer - lead;  // the vector's first element, relative to src
    const int hi = lo + kPer;
    if (lo < 0 && before + lo < 0) {
      const int end = min(hi, n);
      for (int j = 0; j < end; ++j) buf[lead + j] = src[j];
    } else if (hi > n && hi - n > after) {
      copy16_async(buf + w * kPer, reinterpret_cast<const void*>(base + 16u * static_cast<unsigned>(w)),
                   (n - lo) * static_cast<int>(sizeof(T)));
    } else {
      copy16_async(buf + w * kPer, reinterpret_cast<const void*>(base + 16u * static_cast<unsigned>(w)), 16);
    }
  }
}

template <typename T, typename G, int M, bool kResidual>
__global__ void __launch_bounds__(M > kPackedPerThread ? kPackedWideMaxThreads : kPackedMaxThreads, 1)
    backward_packed_kernel(Params<T, G> p, int group_threads, int tile_rows, int stages) {
  allow_dependent_launch();  // stage 2 may be scheduled now; it waits for this grid to finish
  constexpr int kTensors = kResidual ? 3 : 2;
  extern __shared__ __align__(16) unsigned char packed_mem[];
  __shared__ float reduce_buf[2][kPackedMaxRows][kWarp];

  const int nthreads = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int q = t / group_threads;   // the tile row of this thread's group
  const int gt = t % group_threads;  // the thread in its group
  const std::int64_t dim = p.dim;
  const int D = static_cast<int>(dim);  // ≤ 8192
  const float dim_f = static_cast<float>(dim);
  const std::int64_t total = p.rows * dim;  // elements of each packed tensor
  const std::int64_t tiles = (p.rows + tile_rows - 1) / tile_rows;
  const std::int64_t first = blockIdx.x, step = gridDim.x;
  const std::int64_t iterations = first < tiles ? (tiles - first + step - 1) / step : 0;

  const std::size_t tile_bytes = static_cast<std::size_t>(realign_buffer_bytes(std::int64_t{tile_rows} * dim, sizeof(T)));
  const std::size_t rstd_bytes = (static_cast<std::size_t>(tile_rows) * sizeof(float) + 15) / 16 * 16;
  const std::size_t stage_bytes = kTensors * tile_bytes + rstd_bytes;
  unsigned char* const stage_mem = packed_mem + 2 * tile_bytes;
  auto tile_buf = [&](int s, int k) { return reinterpret_cast<T*>(stage_mem + s * stage_bytes + k * tile_bytes); };
  auto rstd_buf = [&](int s) { return reinterpret_cast<float*>(stage_mem + s * stage_bytes + kTensors * tile_bytes); };
  auto dx_buf = [&](std::int64_t i) { return reinterpret_cast<T*>(packed_mem + (i & 1) * tile_bytes); };
  auto tile_of = [&](std::int64_t i) { return first + i * step; };
  auto rows_of = [&](std::int64_t tile) {
    return static_cast<int>(min(static_cast<std::int64_t>(tile_rows), p.rows - tile * tile_rows));
  };

  // Tile i of this block into stage s: one commit group per tile (empty past the last, so the
  // group count stays uniform).
  auto issue = [&](std::int64_t i, int s) {
    const std::int64_t tile = tile_of(i);
    if (tile < tiles) {
      const int nr = rows_of(tile);
      const std::int64_t e0 = tile * tile_rows * dim;
      const int n = nr * D;
      const std::int64_t after = total - e0 - n;
      stage_packed_span(tile_buf(s, 0), p.x + e0, n, e0, after, t, nthreads);
      stage_packed_span(tile_buf(s, 1), p.dy + e0, n, e0, after, t, nthreads);
      if constexpr (kResidual) stage_packed_span(tile_buf(s, 2), p.dres + e0, n, e0, after, t, nthreads);
      if (t < nr) copy4_async(rstd_buf(s) + t, p.rstd + tile * tile_rows + t);
    }
    commit_copies();
  };
  // Tile i's dx, from the buffer its iteration filled, by every thread (exact stores).
  auto store_dx = [&](std::int64_t i) {
    const std::int64_t tile = tile_of(i);
    realign_store(p.dx + tile * tile_rows * dim, dx_buf(i), rows_of(tile) * D, t, nthreads);
  };

  // The weights of this thread's columns, once; its dg sums.
  float w[M], acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const int col = gt + m * group_threads;
    w[m] = 0.0f;
    if (col < D) w[m] = p.weight == WeightMode::none ? 1.0f : weight_value(to_float(p.g[col]), p.weight);
    acc[m] = -0.0f;  // -0 is the exact identity of +
  }

  for (int s = 0; s < stages - 1; ++s) issue(s, s);
  wait_copies(stages - 2);  // tile 0 has landed (this thread's copies) ...
  __syncthreads();          // ... and everyone's
  int parity = 0;
  for (std::int64_t i = 0; i < iterations; ++i) {
    const int s = static_cast<int>(i % stages);
    const std::int64_t tile = tile_of(i);
    const bool mine = q < rows_of(tile);  // the last tile may have fewer rows
    const std::int64_t e0 = tile * tile_rows * dim;
    const std::int64_t row_e = static_cast<std::int64_t>(q) * D;  // the row inside the tile
    const T* xs = tile_buf(s, 0) + realign_lead(p.x + e0) + row_e;
    const T* dys = tile_buf(s, 1) + realign_lead(p.dy + e0) + row_e;
    const float r = mine ? rstd_buf(s)[q] : 0.0f;

    // The wide instance reads dy again in the dx pass (13 more held values); the stage is not
    // refilled before the next iteration's barrier.
    constexpr bool kHoldDy = M <= kPackedPerThread;
    float xh[M], dyv[kHoldDy ? M : 1];
    float sum = -0.0f;
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int col = gt + m * group_threads;
      xh[m] = 0.0f;
      if (mine && col < D) {
        xh[m] = to_float(xs[col]) * r;
        const float dv = to_float(dys[col]);
        if constexpr (kHoldDy) dyv[m] = dv;
        sum = fmaf(dv * w[m], xh[m], sum);
      }
    }
    wait_copies(stages - 3);  // this thread's copies of tile i + 1, published by the barrier below
    const float total_s = groups_sum(sum, reduce_buf[parity][q], gt, group_threads);
    parity ^= 1;
    const float cmean = __fdiv_rn(total_s, dim_f);

    issue(i + stages - 1, static_cast<int>((i + stages - 1) % stages));  // into tile i − 1's stage
    if (i > 0) store_dx(i - 1);
    if (!mine) continue;
    T* dxs = dx_buf(i) + realign_lead(p.dx + e0) + row_e;
    [[maybe_unused]] const T* rs = nullptr;
    if constexpr (kResidual) rs = tile_buf(s, 2) + realign_lead(p.dres + e0) + row_e;
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int col = gt + m * group_threads;
      if (col < D) {
        const float dv = kHoldDy ? dyv[kHoldDy ? m : 0] : to_float(dys[col]);
        float out = fmaf(-xh[m], cmean, dv * w[m]) * r;
        if constexpr (kResidual) out += to_float(rs[col]);
        dxs[col] = from_float<T>(out);
        acc[m] = fmaf(dv, xh[m], acc[m]);
      }
    }
  }
  wait_copies(0);  // no copy may outlive the block (the trailing groups are empty)
  __syncthreads();  // the last tile's dx buffer is complete; every stage has been read
  if (iterations > 0) store_dx(iterations - 1);

  if (p.partials == nullptr) return;
  float* part = p.partials + static_cast<std::int64_t>(blockIdx.x) * dim;
  if (tile_rows == 1) {
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int col = gt + m * group_threads;
      if (col < D) part[col] = acc[m];
    }
    return;
  }
  // The groups meet in the stages' memory ([TR, D] floats: packed_smem() makes room), added in
  // group order.
  float* combine = reinterpret_cast<float*>(stage_mem);
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const int col = gt + m * group_threads;
    if (col < D) combine[q * D + col] = acc[m];
  }
  __syncthreads();
  for (int col = t; col < D; col += nthreads) {
    float v = combine[col];
    for (int k = 1; k < tile_rows; ++k) v += combine[k * D + col];
    part[col] = v;
  }
}

template <typename T, typename G>
inline void launch_packed(const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  const PackedConfig c = packed_config(p.dim);
  const bool residual = p.dres != nullptr;
  const int stages = packed_stages(c, p.dim, sizeof(T), residual);
  const std::size_t smem = packed_smem(c, p.dim, sizeof(T), residual);
  auto go = [&](auto kernel) {
    // A refusal here makes the launch below fail, and launch_status() report it.
    (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    kernel<<<static_cast<unsigned>(grid), c.block(), smem, st>>>(p, c.threads, c.rows, stages);
  };
  auto with_m = [&](auto res) {
    constexpr bool kRes = decltype(res)::value;
    if (c.per_thread == kPackedPerThread) return go(backward_packed_kernel<T, G, kPackedPerThread, kRes>);
    // Wider rows are 16-bit only (packed_can_implement declines fp32 rows over kPackedMaxDim32).
    if constexpr (sizeof(T) == 2) go(backward_packed_kernel<T, G, kPackedPerThreadWide, kRes>);
  };
  if (residual) {
    with_m(std::true_type{});
  } else {
    with_m(std::false_type{});
  }
}

// Every row view is packed: its stride is D (one row: any stride).
inline bool all_packed(const BackwardArgs& a) {
  if (a.rows <= 1) return true;
  if (a.x.stride != a.dim || a.dy.stride != a.dim || a.dx.stride != a.dim) return false;
  return a.dresidual.data == nullptr || a.dresidual.stride == a.dim;
}

inline Status packed_can_implement(const BackwardArgs& a) {
  using Code = Status::Code;
  Status s = can_implement(a, /*mutant=*/false);
  if (!s.ok()) return s;
  const std::int64_t max_dim = size_of(a.x.type) == 2 ? kPackedMaxDim16 : kPackedMaxDim32;
  if (a.dim > max_dim)
    return Status::fail(Code::unsupported, "D > " + std::to_string(max_dim) + " for this type (a tile's stages would not fit shared memory)");
  if (a.rows > 0 && !all_packed(a))
    return Status::fail(Code::unsupported, "rows are not packed (a row stride differs from D): bwd.persistent_rows");
  if (a.rows > 0 && !packed_fits(a.dim, size_of(a.x.type), a.dresidual.data != nullptr))
    return Status::fail(Code::unsupported, "fewer than 3 stages of this tile fit shared memory");
  return Status::success();
}

// The dispatch hint, for packed rows that are not all 16-byte aligned (aligned rows have the
// vector variants), from its time against bwd.persistent_rows on the H200 (session 9, two A/B
// pairs, bf16 and fp32, backward and fused add, R = 1-32768; base time / this one):
//   D = 4097, 6145, 8191 (16-bit): 0.99-2.19 at every R (8191: 1.34-2.19);
//   D = 513, 1025 from R = 4096: 1.01-1.94; at R = 1-64 0.49-0.68 (the one-block-per-SM set-up
//     and its 148 KB of stages cost more than a row takes), at R = 512 0.90-0.99;
//   D = 2049: 0.74-1.30, mixed (faster at R = 512, 16-bit 0.82-1.0 from 4096).
// Why it is not faster everywhere: ncu at 32768 x 1025 (session 9) shows 72 % of the issue
// slots busy, 3.8 warp instructions per element: a thread works on 7 elements per tile and pays
// the tile's copies, stores, wait, barrier and index arithmetic for them (NEXT.md).
inline bool packed_preferred(const BackwardArgs& a) {
  if (all_aligned(a)) return false;
  if (a.dim >= kPackedPreferredWideMinDim) return true;
  return a.dim >= kPackedPreferredMinDim && a.dim <= kPackedPreferredNarrowMaxDim && a.rows >= kPackedPreferredNarrowMinRows;
}

inline Status packed_launch(const BackwardArgs& a) {
  const PackedConfig c = packed_config(a.dim);
  // One program per SM, a tile of TR rows per iteration: grid = min(SMs, tiles).
  const std::int64_t sms = programs() / kProgramsPerSM;
  if (sms <= 0) return no_programs();
  const std::int64_t grid = std::min(sms, ceil_div(a.rows, c.rows));
  return run_stages<Mutant::none>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool) {
    launch_packed<typename decltype(tt)::type, typename decltype(gt)::type>(p, n, st);
  });
}

}  // namespace rmsnorm::cuda::bwd
