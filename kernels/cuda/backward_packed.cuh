// bwd.packed_rows: the backward of packed rows (every row stride = D) that are not 16-byte
// aligned — odd D above all (1025, 4097, 8191: every row starts at a different alignment) and
// offset bases — read as 16-byte vectors anyway.
//
// Why. A misaligned row cannot be read in 16-byte vectors of its own, so bwd.persistent_rows
// reads it element by element: 0.29 of the same-run copy at 32768 x 1025 bf16 on the H200, 78
// instructions per element, 87 % excess sectors (ncu). But packed
// rows are one contiguous span: a tile of consecutive rows of a tensor is TR·D consecutive
// elements, aligned everywhere except at its two ends. So a block copies the whole tile with
// 16-byte cp.async copies into shared memory (each tensor at its own lead, element j of the tile
// at slot lead + j: the vectors are aligned on both sides) and its threads read the elements
// from there, 32 consecutive elements per warp instruction.
//
// What is read. A vector at a tile's edge holds elements of the neighbouring rows: they belong
// to the same tensor (packed: no gaps) and their slots are never read back. A vector that would
// reach before the tensor's first element is read element by element, and one past its last
// element copies only the bytes up to the tile's end (cp.async's src-size): no byte outside the
// tensor is read. dx is written element by element straight to global memory (a warp's store
// covers 32 consecutive elements: whole sectors), so nothing outside the tile is written and the
// neighbouring tiles of other blocks (and, in place, dx over dy) never see a byte of this one.
//
// Pipeline and barriers. Any thread copies any vector of a tile and any thread reads any
// element, so a tile's copies are published by a barrier: the one barrier of each iteration
// (the rows' reduction, groups_sum_n). Iteration i, per thread:
//   1. reads tile i (stage i mod S) and sums its rows' ĝ x̂;
//   2. waits for its own copies of tile i + 1 (cp.async.wait_group: S − 3 groups may pend);
//   3. the reduction's barrier: every thread has finished iteration i − 1 (so tile i − 1's
//      stage is free) and its copies of tile i + 1 are visible;
//   4. issues tile i + S − 1 into tile i − 1's stage and writes tile i's dx.
// S ≥ 3 stages; with few tiles per program only as many as it has (small R: less shared memory).
//
// Mapping and order. A block is GR groups of G threads (G a multiple of 32); a tile is GR·RG
// consecutive rows, group q taking its rows q·RG .. q·RG + RG − 1 (RG rows per group per tile,
// so that a thread's work per tile — its copies, the wait, the barrier — is spread over RG·M
// elements; with RG = 1 and the dx through shared memory a thread spends about 500 of its 770
// instructions per tile there: 3.8 warp instructions per element, ncu). A
// thread of a group owns up to M columns 32 apart (packed_tiles.cuh: warp-wide chunks); its
// columns never change, so it holds their weights and its dg sums in registers. s is chained per
// thread in column order (packed_row_shape), then the group butterfly (5 + ceil_log2(G / 32)
// levels); c = s / D;
// dx_j = r·(ĝ_j − x̂_j c) [+ dres_j]: the maths of backward_kernels.cuh. dg: group q chains its
// rows in row order, the GR groups are added in group order at the end (GR − 1 adds), stage 2 as
// everywhere. All of it depends on D, R and the SM count only: batch invariant (a row's dx does
// not depend on its neighbours, its tile or its lead) and bitwise reproducible.
#pragma once

#include "backward_launch.cuh"
#include "packed_tiles.cuh"

namespace rmsnorm::cuda::bwd {

inline constexpr std::int64_t kPackedMaxDim16 = kPackedMaxDim;
inline constexpr std::int64_t kPackedMaxDim32 =
    4096;  // wider fp32 rows: no instance (13 columns of fp32 weights and sums spill)

// The tiles (packed_tiles.cuh) planned for three tensors (x, dy, dres), with a row's rstd.
inline constexpr int kPackedTensors = 3;
inline PackedConfig packed_config(std::int64_t dim, std::size_t elem_bytes) {
  return packed_tile_config(dim, elem_bytes, kPackedTensors);
}
// dg: a group chains its rows. A program has at most ceil(T / P) tiles (T = ceil(R / (GR·RG))
// tiles, P ≤ the SM count programs), so a group at most RG·ceil(R / (P·GR·RG)) rows, an integer
// below R / (P·GR) + RG: at most ceil(R / (P·GR)) + RG − 1. The GR groups then add in order
// (GR − 1 adds): dg_shape_of's chain for S = GR streams, plus RG − 1 ≤ kPackedRowsPerGroup − 1.
inline AccumShape packed_dg_shape(std::int64_t rows) {
  static_assert(kPackedMaxGroups == 8, "the list below");
  AccumShape s = dg_shape_of(rows, {2, 3, 4, 5, 6, 7, 8}, /*programs_per_sm=*/1);
  s.per_thread = std::min(s.per_thread + kPackedRowsPerGroup - 1, std::max<std::int64_t>(rows, 1));
  return s;
}
// Shared memory: S stages of [x, dy (, dres) tiles][GR·RG rstd].
inline std::size_t packed_stage_bytes(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, bool residual) {
  return packed_ring_stage_bytes(c, dim, elem_bytes, residual ? 3 : 2, /*row_floats=*/true);
}
inline int packed_stages(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, bool residual,
                         std::int64_t tiles_per_program = 0) {
  return packed_ring_stages(packed_stage_bytes(c, dim, elem_bytes, residual), tiles_per_program);
}
// The dynamic shared memory of a launch with `stages` stages; at the end they hold the groups'
// dg sums (GR·D floats), so it is at least that.
inline std::size_t packed_smem(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, bool residual,
                               int stages) {
  const std::size_t ring = static_cast<std::size_t>(stages) * packed_stage_bytes(c, dim, elem_bytes, residual);
  return std::max(ring, static_cast<std::size_t>(c.groups) * static_cast<std::size_t>(dim) * sizeof(float));
}
inline bool packed_fits(std::int64_t dim, std::size_t elem_bytes, bool residual) {
  return packed_stages(packed_config(dim, elem_bytes), dim, elem_bytes, residual) >= kPackedMinStages;
}

// Mutants (MU ≠ none): M4 (cmean_of), M5 (dx_of), M20 (element_weight: g[row mod D] in place of
// the held column weights). M8 has no switch here: packed rows have stride D.
template <typename T, typename G, int M, int RG, bool kResidual, Mutant MU = Mutant::none>
__global__ void __launch_bounds__(M > kPackedPerThread ? kPackedWideMaxThreads : kPackedMaxThreads, 1)
    backward_packed_kernel(Params<T, G> p, int group_threads, int groups, int stages) {
  begin_dependent_grid();  // the grid ahead has finished; stage 2 may now be scheduled
  constexpr int kTensors = kResidual ? 3 : 2;
  // Each thread's x̂ of its RG rows stays in registers between the passes, and its dy too
  // (RG·M ≤ 16) except in the wide instance without the fused add (M = 13), which reads dy again
  // in the dx pass (the stage is refilled only after the next iteration's barrier): holding it
  // there spills 84 bytes beside the stepped addresses, at the 96 registers of a 640-thread
  // bound; in the wide fused-add instance (unstepped, below) re-reading it spills 112.
  constexpr bool kHoldDy = RG * M <= 16 && (M <= kPackedPerThread || kResidual);
  // The per-element arithmetic unconditional with only the store predicated (fewer instructions
  // per element); the wide instance with the fused add keeps a branch per element: the
  // unconditional form's registers spill there (100 bytes, at the 96 registers of its bound).
  constexpr bool kStepped = !(kResidual && M > kPackedPerThread);
  extern __shared__ __align__(16) unsigned char packed_mem[];
  __shared__ float reduce_buf[2][kPackedMaxGroups][RG][kWarp];

  const PackedThread me(group_threads);
  const int t = me.t, nthreads = me.nthreads, q = me.q, gt = me.gt;
  const int D = static_cast<int>(p.dim);  // ≤ 8192
  const float dim_f = static_cast<float>(D);
  const int tile_rows = groups * RG;
  const int tile_elems = tile_rows * D;
  const std::int64_t total = p.rows * p.dim;  // elements of each packed tensor

  const std::size_t tile_bytes = static_cast<std::size_t>(realign_buffer_bytes(tile_elems, sizeof(T)));
  const std::size_t rstd_bytes = (static_cast<std::size_t>(tile_rows) * sizeof(float) + 15) / 16 * 16;
  const std::size_t stage_bytes = kTensors * tile_bytes + rstd_bytes;
  auto tile_buf = [&](int s, int k) { return reinterpret_cast<T*>(packed_mem + s * stage_bytes + k * tile_bytes); };
  auto rstd_buf = [&](int s) { return reinterpret_cast<float*>(packed_mem + s * stage_bytes + kTensors * tile_bytes); };

  // The tile of rows [row0, row0 + GR·RG) (elements from e0 = row0·D) into stage s: one commit
  // group per tile (empty past the last, so the group count stays uniform).
  auto issue = [&](std::int64_t row0, int s) {
    if (row0 < p.rows) {
      const int nr = static_cast<int>(min(static_cast<std::int64_t>(tile_rows), p.rows - row0));
      const std::int64_t e0 = row0 * D;
      stage_packed_span(tile_buf(s, 0), p.x, e0, nr * D, total, t, nthreads);
      stage_packed_span(tile_buf(s, 1), p.dy, e0, nr * D, total, t, nthreads);
      if constexpr (kResidual) stage_packed_span(tile_buf(s, 2), p.dres, e0, nr * D, total, t, nthreads);
      if (t < nr) copy4_async(rstd_buf(s) + t, p.rstd + row0 + t);
    }
    commit_copies();
  };

  // This thread's columns: c0 + 32m for m < ncols (packed_tiles.cuh; ncols = 0 past the row).
  const int c0 = packed_first_col(gt, M);
  const int ncols = packed_cols(c0, D, M);
  // Bytes between a thread's consecutive elements of a row (a constant: immediate offsets).
  constexpr std::uint32_t kStep = kWarp * sizeof(T);
  // Full warps take element code without a test per element (packed_tiles.cuh: by_warp).
  const bool full_warp = (c0 - gt % kWarp) + kWarp * M <= D;

  // The weights of this thread's columns, once; its dg sums.
  float w[M], acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const int col = c0 + m * kWarp;
    w[m] = 0.0f;
    if (col < D) w[m] = p.weight == WeightMode::none ? 1.0f : weight_value(to_float(p.g[col]), p.weight);
    acc[m] = -0.0f;  // -0 is the exact identity of +
  }

  int parity = 0;
  PackedRing(p.rows, tile_rows, stages).run(issue, [&](int s, std::int64_t row0, int nrows, auto&& issue_next) {
    const std::int64_t e0 = row0 * D;
    const T* xs = tile_buf(s, 0) + realign_lead(p.x + e0);
    const T* dys = tile_buf(s, 1) + realign_lead(p.dy + e0);

    float sum[RG], r[RG];
    [[maybe_unused]] float xh[RG][M], dyv[kHoldDy ? RG : 1][kHoldDy ? M : 1];
    // The weight of element m of row k: the held column weight; M20's, g[row mod D], once a row
    // (element_weight; per element, its loads spilled).
    [[maybe_unused]] float w_row[RG] = {};
    auto weight = [&](int k, int m) {
      if constexpr (MU == Mutant::M20_weight_by_row) {
        return w_row[k];
      } else {
        return w[m];
      }
    };
#pragma unroll
    for (int k = 0; k < RG; ++k) {
      const int row = q * RG + k;  // in the tile
      [[maybe_unused]] const int n = row < nrows ? ncols : 0;
      r[k] = row < nrows ? rstd_buf(s)[row] : 0.0f;
      if constexpr (MU == Mutant::M20_weight_by_row) w_row[k] = element_weight<MU>(p, row0 + row, 0.0f);
      sum[k] = -0.0f;
      if constexpr (kStepped) {
        // This thread's elements of the row: its first one's address plus m·kStep.
        const std::uint32_t xa = shared_address(xs + row * D + c0);
        const std::uint32_t da = shared_address(dys + row * D + c0);
        by_warp(full_warp && row < nrows, [&](auto full_c) {
          constexpr bool kFull = decltype(full_c)::value;
#pragma unroll
          for (int m = 0; m < M; ++m) {
            xh[k][m] = 0.0f;
            if constexpr (kHoldDy) dyv[k][m] = 0.0f;
            if (kFull || m < n) {
              xh[k][m] = to_float(load_shared_at<T>(xa + m * kStep)) * r[k];
              const float dv = to_float(load_shared_at<T>(da + m * kStep));
              if constexpr (kHoldDy) dyv[k][m] = dv;
              sum[k] = fmaf(dv * weight(k, m), xh[k][m], sum[k]);
            }
          }
        });
      } else {
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const int col = c0 + m * kWarp;
          xh[k][m] = 0.0f;
          if (m < n) {
            xh[k][m] = to_float(xs[row * D + col]) * r[k];
            const float dv = to_float(dys[row * D + col]);
            if constexpr (kHoldDy) dyv[k][m] = dv;
            sum[k] = fmaf(dv * weight(k, m), xh[k][m], sum[k]);
          }
        }
      }
    }
    wait_copies(stages - 3);  // this thread's copies of tile i + 1, published by the barrier below
    groups_sum_n<RG>(sum, &reduce_buf[parity][q][0][0], gt, group_threads);
    parity ^= 1;

    issue_next();  // into tile i − 1's stage

    [[maybe_unused]] const T* rs = nullptr;
    if constexpr (kResidual) rs = tile_buf(s, 2) + realign_lead(p.dres + e0);
#pragma unroll
    for (int k = 0; k < RG; ++k) {
      const int row = q * RG + k;
      if (row >= nrows) continue;
      const float cmean = cmean_of<MU>(sum[k], dim_f);
      [[maybe_unused]] const std::uint64_t dxa = global_address(p.dx + e0 + static_cast<std::int64_t>(row) * D + c0);
      [[maybe_unused]] const T* dp = dys + row * D + c0;
      [[maybe_unused]] const T* rp = kResidual ? rs + row * D + c0 : nullptr;
      if constexpr (kStepped) {
        // The arithmetic of every m unconditionally (past the row xh = dy = 0: acc[m] of an
        // absent column is never written out), the store predicated: no branch per element.
        [[maybe_unused]] const std::uint32_t da = kHoldDy ? 0u : shared_address(dp);
        [[maybe_unused]] const std::uint32_t ra = kResidual ? shared_address(rp) : 0u;
        by_warp(full_warp, [&](auto full_c) {
#pragma unroll
          for (int m = 0; m < M; ++m) {
            const bool in_row = decltype(full_c)::value || m < ncols;
            float dv = 0.0f;
            if constexpr (kHoldDy) {
              dv = dyv[k][m];
            } else if (in_row) {
              dv = to_float(load_shared_at<T>(da + m * kStep));
            }
            float out = dx_of<MU>(xh[k][m], cmean, dv, weight(k, m), r[k]);
            if constexpr (kResidual) {
              if (in_row) out += to_float(load_shared_at<T>(ra + m * kStep));
            }
            acc[m] = fmaf(dv, xh[k][m], acc[m]);
            if (in_row) store_global_at(dxa + m * kStep, from_float<T>(out));
          }
        });
      } else {
        T* const dxr = p.dx + e0 + static_cast<std::int64_t>(row) * D;
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const int col = c0 + m * kWarp;
          if (m < ncols) {
            const float dv = kHoldDy ? dyv[kHoldDy ? k : 0][kHoldDy ? m : 0] : to_float(dp[m * kWarp]);
            float out = dx_of<MU>(xh[k][m], cmean, dv, weight(k, m), r[k]);
            if constexpr (kResidual) out += to_float(rp[m * kWarp]);
            dxr[col] = from_float<T>(out);
            acc[m] = fmaf(dv, xh[k][m], acc[m]);
          }
        }
      }
    }
  });

  if (p.partials == nullptr) return;
  float* part = p.partials + static_cast<std::int64_t>(blockIdx.x) * D;
  if (groups == 1) {
#pragma unroll
    for (int m = 0; m < M; ++m) {
      if (m < ncols) part[c0 + m * kWarp] = acc[m];
    }
    return;
  }
  // The groups meet in the stages' memory ([GR, D] floats: packed_smem() makes room), added in
  // group order, once every thread is done with the stages.
  __syncthreads();
  float* combine = reinterpret_cast<float*>(packed_mem);
#pragma unroll
  for (int m = 0; m < M; ++m) {
    if (m < ncols) combine[q * D + c0 + m * kWarp] = acc[m];
  }
  __syncthreads();
  for (int col = t; col < D; col += nthreads) {
    float v = combine[col];
    for (int k = 1; k < groups; ++k) v += combine[k * D + col];
    part[col] = v;
  }
}

template <typename T, typename G, Mutant MU>
inline void launch_packed(const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  const PackedConfig c = packed_config(p.dim, sizeof(T));
  const bool residual = p.dres != nullptr;
  const std::int64_t tiles = ceil_div(p.rows, c.tile_rows());
  const int stages = packed_stages(c, p.dim, sizeof(T), residual, ceil_div(tiles, grid));
  const std::size_t smem = packed_smem(c, p.dim, sizeof(T), residual, stages);
  auto go = [&](auto kernel) {
    // A refusal here makes the launch below fail, and launch_status() report it.
    (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    launch_kernel(kernel, static_cast<unsigned>(grid), c.block(), smem, st, p, c.threads, c.groups, stages);
  };
  auto with_m = [&](auto res) {
    constexpr bool kRes = decltype(res)::value;
    if (c.per_thread == kPackedPerThread) {
      if (c.per_group == kPackedRowsPerGroup)
        return go(backward_packed_kernel<T, G, kPackedPerThread, kPackedRowsPerGroup, kRes, MU>);
      return go(backward_packed_kernel<T, G, kPackedPerThread, 1, kRes, MU>);
    }
    // Wider rows are 16-bit only (packed_can_implement declines fp32 rows over kPackedMaxDim32).
    if constexpr (sizeof(T) == 2) go(backward_packed_kernel<T, G, kPackedPerThreadWide, 1, kRes, MU>);
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
    return Status::fail(Code::unsupported, "D > " + std::to_string(max_dim) +
                                               " for this type (a tile's stages would not fit shared memory)");
  if (a.rows > 0 && !all_packed(a))
    return Status::fail(Code::unsupported, "rows are not packed (a row stride differs from D): bwd.persistent_rows");
  if (a.rows > 0 && !packed_fits(a.dim, size_of(a.x.type), a.dresidual.data != nullptr))
    return Status::fail(Code::unsupported, "fewer than 3 stages of this tile fit shared memory");
  return Status::success();
}

template <Mutant MU>
inline Status packed_launch(const BackwardArgs& a) {
  const PackedConfig c = packed_config(a.dim, size_of(a.x.type));
  // One program per SM, a tile of GR·RG rows per iteration.
  const std::int64_t grid = one_per_sm_grid(a.rows, c.tile_rows());
  if (grid <= 0) return no_programs();
  return run_stages<MU>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool) {
    launch_packed<typename decltype(tt)::type, typename decltype(gt)::type, MU>(p, n, st);
  });
}

}  // namespace rmsnorm::cuda::bwd
