// bwd.cluster_rows.vec8: the backward for aligned rows too long for one block's registers
// (16-bit: 16384 < D ≤ 65536; fp32: 8192 < D ≤ 65536), one row split over a Hopper thread-block
// cluster of kClusterCtas CTAs (sm_90: a variant of its own, as issue #3 asks for cluster code).
//
// Why. Beyond what one block can hold, the re-reading kernel reads x and dy twice and keeps each
// program's dg partial row (D fp32) in the workspace, read and written for every row: at
// D = 65536 that is 256 KB per program, more than the L2 holds for all programs, so ~14 bytes
// move per element where 6 must (measured 0.16 of the copy on the H200). Split over a cluster,
// each CTA owns a fixed column slice of every row: its x and dy chunks and its dg partial stay in
// registers (one chunk of 8 per thread, the next row's chunk prefetched for 16-bit types), so x
// and dy are read once and dg costs nothing per row. The row after the prefetched one is asked
// of L2 (prefetch_l2) a row ahead: H200, session 7, bf16: backward 0.47 -> 0.56 of the copy at
// D = 65536 and 0.32 -> 0.39 at 32768, fused add 0.52 -> 0.62-0.64 and 0.35 -> 0.45-0.46
// (R = 4096-32768). ncu at 4096 x 65536 then: 2.26 TB/s, 15 co-resident clusters of 8 (120 of
// 132 SMs), 8 warps per scheduler, 0.57 instructions issued per cycle and scheduler.
//
// Per row, each CTA reduces its slice (the thread's chain of 8, then the block butterfly), writes
// its partial into slot [parity][rank] of EVERY CTA of the cluster (distributed shared memory),
// and the cluster barrier makes all kClusterCtas partials visible everywhere; every CTA then adds
// them in the same fixed tree (so all agree bitwise on s and c = s / D). A slot of parity p is
// rewritten two rows later, after the next row's cluster barrier, which no CTA passes before all
// have read this row's slots: double buffering suffices (as for the block reduction's buffers).
//
// Declared shape (a function of D): 8 elements per thread (at most D), tree depth 5 +
// ceil_log2(threads / 32) in the block + ceil_log2(kClusterCtas) across the cluster. dg: a
// cluster chains its rows in order (rows k, k + Q, …), then stage 2 over the Q partial rows,
// Q = the device's co-resident clusters of the largest configuration (a function of the device).
#pragma once

#include <cooperative_groups.h>

#include "backward_launch.cuh"

namespace rmsnorm::cuda::bwd {

inline constexpr int kClusterCtas = 8;  // the portable maximum cluster size
inline constexpr int kClusterMaxThreads = 1024;
inline constexpr std::int64_t kClusterMaxDim = std::int64_t{kClusterCtas} * kClusterMaxThreads * kChunk;  // 65536
inline constexpr std::int64_t kClusterMinDim16 = kMaxFusedDim16 + 1;  // below: register-resident / staged
inline constexpr std::int64_t kClusterMinDim32 = kMaxFusedDim + 1;

// Chunks per CTA slice and threads per CTA, from D alone.
inline std::int64_t cluster_slice_chunks(std::int64_t dim) { return ceil_div(chunks_of(dim), kClusterCtas); }
inline int cluster_threads(std::int64_t dim) {
  return static_cast<int>(ceil_div(cluster_slice_chunks(dim), kWarp) * kWarp);
}
inline AccumShape cluster_row_shape(std::int64_t dim) {
  AccumShape s;
  s.per_thread = std::min<std::int64_t>(kChunk, dim);
  s.tree_depth = 5 + ceil_log2(cluster_threads(dim) / kWarp) + ceil_log2(kClusterCtas);
  return s;
}

template <typename T, typename G>
__global__ void __cluster_dims__(kClusterCtas, 1, 1) __launch_bounds__(kClusterMaxThreads, 1)
    backward_cluster_kernel(Params<T, G> p, std::int64_t slice_chunks) {
  namespace cg = cooperative_groups;
  constexpr Mutant M = Mutant::none;
  constexpr bool kPrefetch = sizeof(T) == 2;  // fp32 chunks are twice the registers
  allow_dependent_launch();  // stage 2 may be scheduled now; it waits for this grid to finish
  __shared__ float reduce_buf[2][kWarp];
  __shared__ float cluster_slots[2][kClusterCtas];

  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const std::int64_t cluster_id = blockIdx.x / kClusterCtas;
  const std::int64_t nclusters = gridDim.x / kClusterCtas;
  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t dim = p.dim;
  const std::int64_t nchunks = (dim + kChunk - 1) / kChunk;
  const std::int64_t c = rank * slice_chunks + t;  // this thread's chunk of every row
  const bool mine = t < slice_chunks && c < nchunks;
  const bool want_dg = p.partials != nullptr;
  const float dim_f = static_cast<float>(dim);  // exact for D ≤ 2^24

  // The weights of this thread's columns, loaded where used (L1 hits after the first row): held
  // across the loop they push the 16-bit instances past 64 registers.
  auto weights = [&](float (&w)[kChunk]) {
    if (mine) {
      chunk_weights<T, G, true, M>(p, 0, c, w);
    } else {
#pragma unroll
      for (int j = 0; j < kChunk; ++j) w[j] = 0.0f;
    }
  };
  float acc[kChunk];
#pragma unroll
  for (int j = 0; j < kChunk; ++j) acc[j] = -0.0f;  // -0 is the exact identity of +

  auto load = [&](std::int64_t row, Chunk<T>& xs, Chunk<T>& dys, float& rr) {
    if (row < p.rows && mine) {
      xs = load_row_chunk<T, true>(row_start<M>(p.x, row, p.sx, dim), c, dim);
      dys = load_row_chunk<T, true>(row_start<M>(p.dy, row, p.sdy, dim), c, dim);
    } else {
      xs = dys = zero_chunk<T>();
    }
    rr = row < p.rows ? p.rstd[row] : 0.0f;
  };

  // Distributed shared memory may be touched only once every CTA of the cluster runs.
  cluster.sync();

  Chunk<T> xc, dyc;
  float r = 0.0f;
  std::int64_t row = cluster_id;
  load(row, xc, dyc, r);
  int parity = 0;
  // Every CTA of a cluster runs the same rows (row < R is uniform over the cluster): the
  // cluster barriers below are reached by all of them the same number of times.
  for (; row < p.rows; row += nclusters) {
    Chunk<T> xn, dyn;
    float rn = 0.0f;
    if constexpr (kPrefetch) load(row + nclusters, xn, dyn, rn);
    // The row after that into L2 (x and dy; dres of the next row under the fused add), one
    // prefetch per 128-byte line by the thread whose chunk starts it: that row's register loads
    // then wait on L2, not DRAM.
    {
      constexpr std::int64_t kPerLine = kL2Line / static_cast<std::int64_t>(sizeof(Chunk<T>));
      const std::int64_t ahead = row + (kPrefetch ? 2 : 1) * nclusters;
      if (mine && c % kPerLine == 0) {
        if (ahead < p.rows) {
          prefetch_l2(row_start<M>(p.x, ahead, p.sx, dim) + c * kChunk);
          prefetch_l2(row_start<M>(p.dy, ahead, p.sdy, dim) + c * kChunk);
        }
        if (p.dres && row + nclusters < p.rows) prefetch_l2(row_start<M>(p.dres, row + nclusters, p.sdres, dim) + c * kChunk);
      }
    }

    float s = -0.0f;
    if (mine) {
      float w[kChunk];
      weights(w);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) s = fmaf(chunk_get(dyc, j) * w[j], chunk_get(xc, j) * r, s);
    }
    const float block_total = block_sum(s, reduce_buf[parity]);
    if (t < kClusterCtas) *cluster.map_shared_rank(&cluster_slots[parity][rank], t) = block_total;  // into CTA t
    cluster.sync();  // release our slot writes, acquire everyone's
    const float* own = &cluster_slots[parity][0];
    static_assert(kClusterCtas == 8, "the fixed tree below adds 8 partials");
    const float total = ((own[0] + own[1]) + (own[2] + own[3])) +
                        ((own[4] + own[5]) + (own[6] + own[7]));
    parity ^= 1;
    const float cmean = __fdiv_rn(total, dim_f);

    if (mine) {
      float w[kChunk];
      weights(w);
      float out[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const float dyv = chunk_get(dyc, j);
        const float xh = chunk_get(xc, j) * r;
        out[j] = fmaf(-xh, cmean, dyv * w[j]) * r;
        acc[j] = fmaf(dyv, xh, acc[j]);
      }
      if (p.dres) {
        const Chunk<T> rc = load_row_chunk<T, true>(row_start<M>(p.dres, row, p.sdres, dim), c, dim);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) out[j] += chunk_get(rc, j);
      }
      store_row_chunk<T, true>(row_start<M>(p.dx, row, p.sdx, dim), c, dim, out);
    }
    if constexpr (kPrefetch) {
      xc = xn;
      dyc = dyn;
      r = rn;
    } else {
      load(row + nclusters, xc, dyc, r);
    }
  }
  // No CTA may exit while another can still write into its slots (remote shared memory must
  // outlive its last access): one more cluster barrier after the last row.
  cluster.sync();

  if (!want_dg || !mine) return;
  float* part = p.partials + cluster_id * dim;
#pragma unroll
  for (int j = 0; j < kChunk; ++j)
    if (c * kChunk + j < dim) part[c * kChunk + j] = acc[j];
}

// Clusters launched: the co-resident clusters of the largest configuration (1024 threads a CTA),
// from the occupancy calculator — a function of the device only (cached per device); at most R.
inline std::int64_t cluster_programs() {
  static std::int64_t cached[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64 && cached[dev] > 0) return cached[dev];
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kClusterCtas, 1, 1);
  cfg.blockDim = dim3(kClusterMaxThreads, 1, 1);
  cfg.dynamicSmemBytes = 0;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, backward_cluster_kernel<__nv_bfloat16, __nv_bfloat16>, &cfg) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64) cached[dev] = n;
  return n;
}

inline AccumShape cluster_dg_shape(std::int64_t rows) {
  const std::int64_t q = std::max<std::int64_t>(cluster_programs(), 1);
  AccumShape s;
  s.per_thread = ceil_div(std::max<std::int64_t>(rows, 1), q) + ceil_div(q, kStage2Lanes) - 1;
  s.tree_depth = ceil_log2(kStage2Lanes);
  return s;
}

inline Status cluster_can_implement(const BackwardArgs& a) {
  using Code = Status::Code;
  Status s = can_implement(a, /*mutant=*/false);
  if (!s.ok()) return s;
  const std::int64_t min_dim = size_of(a.x.type) == 2 ? kClusterMinDim16 : kClusterMinDim32;
  if (a.dim < min_dim)
    return Status::fail(Code::unsupported, "D < " + std::to_string(min_dim) + " for this type (one block holds the row)");
  if (a.dim > kClusterMaxDim) return Status::fail(Code::unsupported, "D > 65536 (8 CTAs x 1024 threads x 8)");
  if (a.rows > 0 && !all_aligned(a)) return Status::fail(Code::misaligned, "16-byte vector accesses need every row and g aligned");
  if (cluster_programs() <= 0) return Status::fail(Code::unsupported, "no co-resident 8-CTA cluster on this device");
  return Status::success();
}

inline Status cluster_launch(const BackwardArgs& a) {
  // The programs are the q clusters, each writing one partial row: q ≤ min(P, R) rows of the
  // workspace (q ≤ SMs / 8 < P = 2·SMs).
  const std::int64_t q = std::min<std::int64_t>(cluster_programs(), a.rows);
  if (q <= 0) return no_programs();
  const int threads = cluster_threads(a.dim);
  return run_stages<Mutant::none>(a, q, [&](auto tt, auto gt, const auto& p, std::int64_t clusters, cudaStream_t st, bool) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    backward_cluster_kernel<T, G><<<static_cast<unsigned>(clusters * kClusterCtas), threads, 0, st>>>(p, cluster_slice_chunks(a.dim));
  });
}

}  // namespace rmsnorm::cuda::bwd
