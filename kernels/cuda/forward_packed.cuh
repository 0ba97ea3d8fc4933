// fwd.packed_rows: the forward and the fused-add forward of packed rows (every row stride = D)
// at any alignment — odd D above all (1025, 4097, 8191: every row starts at another alignment)
// — with 16-byte vectors anyway: the backward's packed tiles (packed_tiles.cuh; the design in
// backward_packed.cuh), here for x (and o).
//
// Why. fwd.realigned_row moves each row through shared memory in 16-byte vectors, but one row
// per block at a time, synchronously: 0.50 of the same-run copy at 32768 x 1025 bf16 (fused add
// 0.44; H200, session 9), 60 instructions per element (ncu, session 6). Here a program keeps
// several tiles of consecutive rows in flight (cp.async stages), and a thread's work per tile is
// 2 rows of up to 8 columns (or 1 of up to 13).
//
// Per iteration, per thread (as the backward): read tile i from its stage — the fused add forms
// h = RN(x + o) and writes it to the residual right away (element stores, a warp's store 32
// consecutive elements) — and sum h² of its rows' columns; wait for its own copies of tile
// i + 1; the rows' reduction (groups_sum_n, the one barrier: it also publishes tile i + 1 and
// frees tile i − 1's stage); issue tile i + S − 1; then r = 1/sqrt(Σh²/D + eps) per row (stored
// to rstd when asked), y = (h·r)·w written element by element. Nothing outside the tile is
// written; in place (y = x, or y = o under the fused add, the residual over x) the tile was
// copied to shared memory before any of its outputs is written.
//
// Order: Σh² chained per thread in column order (ceil(D / G) terms, from +0), then the group
// butterfly (5 + ceil_log2(G / 32) levels): packed_row_shape(D). The maths of every forward
// (forward_kernels.cuh: rstd_of, y_of, effective_weight). No FP8 outputs (they keep
// fwd.realigned_row).
#pragma once

#include "forward_kernels.cuh"
#include "packed_tiles.cuh"

namespace rmsnorm::cuda::fwd {

// Tiles planned for two tensors (x and o), no per-row floats (r is computed here).
inline constexpr int kPackedFwdTensors = 2;
inline PackedConfig packed_fwd_config(std::int64_t dim, std::size_t elem_bytes) {
  return packed_tile_config(dim, elem_bytes, kPackedFwdTensors);
}
inline std::size_t packed_fwd_stage_bytes(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, bool add) {
  return packed_ring_stage_bytes(c, dim, elem_bytes, add ? 2 : 1, /*row_floats=*/false);
}
inline int packed_fwd_stages(std::int64_t dim, std::size_t elem_bytes, bool add, std::int64_t tiles_per_program = 0) {
  return packed_ring_stages(packed_fwd_stage_bytes(packed_fwd_config(dim, elem_bytes), dim, elem_bytes, add), tiles_per_program);
}

template <typename T, typename G, int M, int RG, bool kAdd>
__global__ void __launch_bounds__(M > kPackedPerThread ? kPackedWideMaxThreads : kPackedMaxThreads, 1)
    fwd_packed_kernel(Params p, int group_threads, int groups, int stages) {
  constexpr int kTensors = kAdd ? 2 : 1;
  extern __shared__ __align__(16) unsigned char packed_mem[];
  __shared__ float reduce_buf[2][kPackedMaxGroups][RG][kWarp];

  const PackedThread me(group_threads);
  const int t = me.t, nthreads = me.nthreads, q = me.q, gt = me.gt;
  const int D = static_cast<int>(p.dim);  // ≤ 8192
  const int tile_rows = groups * RG;
  const std::int64_t total = p.rows * p.dim;  // elements of each packed tensor
  const T* const x = static_cast<const T*>(p.x);
  [[maybe_unused]] const T* const o = static_cast<const T*>(p.o);
  [[maybe_unused]] T* const h_out = static_cast<T*>(p.x_out);
  T* const y = static_cast<T*>(p.y);

  const std::size_t tile_bytes = static_cast<std::size_t>(realign_buffer_bytes(std::int64_t{tile_rows} * D, sizeof(T)));
  const std::size_t stage_bytes = kTensors * tile_bytes;
  auto tile_buf = [&](int s, int k) { return reinterpret_cast<T*>(packed_mem + s * stage_bytes + k * tile_bytes); };

  // The tile of rows [row0, row0 + GR·RG) into stage s: one commit group per tile (empty past
  // the last, so the group count stays uniform).
  auto issue = [&](std::int64_t row0, int s) {
    if (row0 < p.rows) {
      const int nr = static_cast<int>(min(static_cast<std::int64_t>(tile_rows), p.rows - row0));
      stage_packed_span(tile_buf(s, 0), x, row0 * D, nr * D, total, t, nthreads);
      if constexpr (kAdd) stage_packed_span(tile_buf(s, 1), o, row0 * D, nr * D, total, t, nthreads);
    }
    commit_copies();
  };

  // The effective weights of this thread's columns, once.
  const bool weighted = p.convention != static_cast<int>(Convention::no_weight);
  float w[M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const int col = gt + m * group_threads;
    w[m] = (weighted && col < D) ? effective_weight(to_float(static_cast<const G*>(p.g)[col]), p.convention) : 1.0f;
  }

  // Columns of this thread: gt + m·G for m < ncols (ceil((D − gt) / G), at most M).
  const int ncols = min(M, (D - gt + group_threads - 1) / group_threads);
  // The convention's one branch per row instead of one per element (y_of: llama rounds h·r).
  constexpr int kLlama = static_cast<int>(Convention::llama), kStandard = static_cast<int>(Convention::standard);
  const bool llama = p.convention == kLlama;
  // Bytes between a thread's consecutive elements of a row.
  const std::uint64_t step_bytes = static_cast<std::uint64_t>(group_threads) * sizeof(T);

  int parity = 0;
  PackedRing(p.rows, tile_rows, stages).run(issue, [&](int s, std::int64_t row0, int nrows, auto&& issue_next) {
    const std::int64_t e0 = row0 * D;
    const T* xs = tile_buf(s, 0) + realign_lead(x + e0);
    [[maybe_unused]] const T* os = nullptr;
    if constexpr (kAdd) os = tile_buf(s, 1) + realign_lead(o + e0);

    float ss[RG], h[RG][M];
#pragma unroll
    for (int k = 0; k < RG; ++k) {
      const int row = q * RG + k;  // in the tile
      const int n = row < nrows ? ncols : 0;
      // This thread's elements of the row, m·G apart: pointers (and global addresses) stepped
      // by G (the compiler otherwise forms each element's address from the parameters anew).
      std::uint32_t xa = shared_address(xs + row * D + gt);
      [[maybe_unused]] std::uint32_t oa = kAdd ? shared_address(os + row * D + gt) : 0u;
      [[maybe_unused]] std::uint64_t ha = kAdd ? global_address(h_out + e0 + static_cast<std::int64_t>(row) * D + gt) : 0;
      SumSquares<T, Mutant::none> sq;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        // h of an absent column (m ≥ n) is left unset: nothing below reads it.
        if (m < n) {
          float v = to_float(load_shared_at<T>(xa));
          if constexpr (kAdd) {
            v = round_through<T>(v + to_float(load_shared_at<T>(oa)));
            store_global_at(ha, from_float<T>(v));  // the residual stream
            oa += static_cast<std::uint32_t>(step_bytes);
            ha += step_bytes;
          }
          h[k][m] = v;
          sq.add(v);
        }
        xa += static_cast<std::uint32_t>(step_bytes);
      }
      ss[k] = sq.acc;
    }
    wait_copies(stages - 3);  // this thread's copies of tile i + 1, published by the barrier below
    groups_sum_n<RG>(ss, &reduce_buf[parity][q][0][0], gt, group_threads);
    parity ^= 1;

    issue_next();  // into tile i − 1's stage

#pragma unroll
    for (int k = 0; k < RG; ++k) {
      const int row = q * RG + k;
      if (row >= nrows) continue;
      const float r = rstd_of<Mutant::none>(ss[k], D, D, p.eps);
      if (gt == 0 && p.rstd != nullptr) p.rstd[row0 + row] = r;
      std::uint64_t ya = global_address(y + e0 + static_cast<std::int64_t>(row) * D + gt);
      if (llama) {
#pragma unroll
        for (int m = 0; m < M; ++m, ya += step_bytes)
          if (m < ncols) store_global_at(ya, from_float<T>(y_of<T, Mutant::none>(h[k][m], r, w[m], kLlama)));
      } else {
#pragma unroll
        for (int m = 0; m < M; ++m, ya += step_bytes)
          if (m < ncols) store_global_at(ya, from_float<T>(y_of<T, Mutant::none>(h[k][m], r, w[m], kStandard)));
      }
    }
  });
}

}  // namespace rmsnorm::cuda::fwd
