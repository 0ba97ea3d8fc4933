// fwd.cluster_row: the forward family (forward, fused add, FP8 outputs, both fusions) for aligned
// rows too long for one block's registers, one row split over a Hopper thread-block cluster
// (sm_90, a variant of its own): 8 CTAs, each owning a fixed column slice of every row.
//
// Why. fwd.large_d holds a row of D = 65536 (128 KB of bf16) in one 1024-thread block's shared
// memory, one block per SM: its phases (load the row, reduce, scale, store) run back to back, so
// the SM's loads idle through the reduction and the stores (H200: 0.71-0.83 of the copy at
// D = 65536). Split over a cluster, a CTA holds 1/8 of the row in registers (two
// 16-byte chunks per thread for 16-bit rows), two CTAs share an SM, and each thread has the
// cluster's next row in flight (in registers; the FP8 forms ask L2 for it) while it reduces,
// scales and stores this one.
//
// Per row: each CTA sums its slice (the thread's chain over its chunks in order, then the block
// butterfly), writes that partial into slot [parity][rank] of every CTA of the cluster
// (distributed shared memory), one cluster barrier, and every CTA adds the 8 partials in the same
// fixed tree, so all agree bitwise on Σh² and r. The dynamic per-token FP8 scale takes a second
// exchange of the same kind (a max: exact in any order). A slot of parity p is rewritten two rows
// later, after the next row's first cluster barrier, which no CTA passes before every CTA has read
// this row's slots: double buffering suffices. Per-block FP8 groups (16 chunks) never straddle two
// CTAs: a slice is a multiple of 16 chunks, and a group's chunks sit on 16 consecutive lanes of
// one step (the 16-lane butterfly of fwd.block_row).
//
// Declared shape (a function of D): the thread's chain of at most slots x 8 elements, tree depth
// 5 + ceil_log2(threads / 32) in the block + 3 across the cluster, the larger over the shapes.
#pragma once

#include <cooperative_groups.h>

#include "cluster_reduce.cuh"
#include "forward_variant.h"

namespace rmsnorm::cuda::fwd {

// The cluster shape by row type: 16-bit rows 8 CTAs of up to 512 threads, 2 chunks per thread,
// two CTAs per SM (64 registers: the row's chunks, the next row's, the weights of one chunk);
// fp32 rows 8 CTAs of up to 1024 threads, one chunk per thread (fp32 chunks take twice the
// registers), one CTA per SM.
inline constexpr ClusterShape kFwdCluster16{8, 2, 512, 2};
inline constexpr ClusterShape kFwdCluster32{8, 1, 1024, 1};
template <typename T>
inline constexpr ClusterShape fwd_cluster_shape_of = sizeof(T) == 2 ? kFwdCluster16 : kFwdCluster32;
inline ClusterShape fwd_cluster_shape_for(DType t) { return size_of(t) == 2 ? kFwdCluster16 : kFwdCluster32; }
inline constexpr int kFwdClusterCtas = 8;
inline constexpr std::int64_t kFwdClusterMaxDim = 65536;
static_assert(std::int64_t{kFwdCluster16.ctas} * kFwdCluster16.max_threads * kFwdCluster16.slots * kChunk ==
                      kFwdClusterMaxDim &&
                  std::int64_t{kFwdCluster32.ctas} * kFwdCluster32.max_threads * kFwdCluster32.slots * kChunk ==
                      kFwdClusterMaxDim,
              "every shape reaches D = 65536");
static_assert(kFwdCluster16.ctas == kFwdClusterCtas && kFwdCluster32.ctas == kFwdClusterCtas, "one cluster size");
static_assert(kFwdCluster16.max_threads % kGroupChunks == 0 && kFwdCluster32.max_threads % kGroupChunks == 0,
              "an FP8 group's 16 chunks on 16 consecutive lanes of one step");

// Chunks per CTA slice (a multiple of an FP8 group's 16 chunks, so no group straddles two CTAs)
// and threads per CTA (whole warps), from D and the shape.
inline std::int64_t fwd_cluster_slice(std::int64_t dim, ClusterShape cs) {
  const std::int64_t chunks = (dim + kChunk - 1) / kChunk;
  const std::int64_t per_cta = (chunks + cs.ctas - 1) / cs.ctas;
  return (per_cta + kGroupChunks - 1) / kGroupChunks * kGroupChunks;
}
inline int fwd_cluster_threads(std::int64_t dim, ClusterShape cs) {
  const std::int64_t per_thread = (fwd_cluster_slice(dim, cs) + cs.slots - 1) / cs.slots;
  return static_cast<int>((per_thread + kWarp - 1) / kWarp * kWarp);
}
inline AccumShape fwd_cluster_row_shape(std::int64_t dim) {
  AccumShape s;
  for (const ClusterShape cs : {kFwdCluster16, kFwdCluster32})
    s = widest(s, cluster_row_accum(cs, fwd_cluster_threads(dim, cs), dim));
  return s;
}

// Whether this device launches thread-block clusters (sm_90+), cached per device: no_device
// without one (a CPU-only machine: the check is not judged there), unsupported without clusters.
inline Status cluster_launch_status() {
  static int cached[kFeatureCacheDevices] = {};
  return device_feature_status(cached, cudaDevAttrClusterLaunch, 1, "launch a cluster on",
                               "no thread-block cluster launch on this device (sm_90+)");
}

template <typename T, typename G, bool kQuant, bool kAdd, Mutant M>
__global__ void __cluster_dims__(kFwdClusterCtas, 1, 1)
    __launch_bounds__(fwd_cluster_shape_of<T>.max_threads, fwd_cluster_shape_of<T>.min_blocks)
        fwd_cluster_kernel(Params p, std::int64_t slice_chunks) {
  begin_dependent_grid();
  namespace cg = cooperative_groups;
  constexpr int S = fwd_cluster_shape_of<T>.slots;
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  __shared__ float sum_slots[2][kFwdClusterCtas];
  __shared__ float max_slots[2][kFwdClusterCtas];

  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const std::int64_t cluster_id = blockIdx.x / kFwdClusterCtas;
  const std::int64_t nclusters = gridDim.x / kFwdClusterCtas;
  const int t = static_cast<int>(threadIdx.x);
  const int nthreads = static_cast<int>(blockDim.x);
  const std::int64_t D = p.dim;
  const std::int64_t full = D / kChunk;
  const int n_tail = static_cast<int>(D % kChunk);
  const std::int64_t nchunks = full + (n_tail > 0 ? 1 : 0);
  // This thread's chunks of every row: slice chunks t and t + blockDim (coalesced across the CTA).
  // 32-bit column indices (at most 8192 chunks: D ≤ 65536) keep registers for the rows.
  int cs[S];
  bool mine[S];
#pragma unroll
  for (int k = 0; k < S; ++k) {
    const int in_slice = t + k * nthreads;
    cs[k] = rank * static_cast<int>(slice_chunks) + in_slice;
    mine[k] = in_slice < slice_chunks && cs[k] < nchunks;
  }

  // x (and o) of this thread's chunks of `row` (zero chunks outside the row or past R).
  auto load = [&](std::int64_t row, Chunk<T>(&xc)[S], Chunk<T>(&oc)[S]) {
    const bool live = row < p.rows;
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(live ? row : 0, p.x_stride, D, sizeof(T));
    const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(live ? row : 0, p.o_stride, D, sizeof(T)) : nullptr;
#pragma unroll
    for (int k = 0; k < S; ++k) {
      xc[k] = live && mine[k] ? load_row_chunk<T, M, true>(xr, cs[k], full, n_tail) : zero_chunk<T>();
      if constexpr (kAdd)
        oc[k] = live && mine[k] ? load_row_chunk<T, M, true>(orow, cs[k], full, n_tail) : zero_chunk<T>();
    }
  };

  // kRegAhead: the cluster's next row is loaded into registers while this one is reduced and
  // written. The FP8 forms have no registers for it at two CTAs per SM (they spilled): they ask
  // L2 for the next row instead, one prefetch per 128-byte line by the thread whose chunk starts it.
  constexpr bool kRegAhead = !kQuant;
  auto prefetch = [&](std::int64_t row) {
    if (row >= p.rows) return;
    constexpr int kPerLine = kL2Line / static_cast<int>(sizeof(Chunk<T>));
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;
#pragma unroll
    for (int k = 0; k < S; ++k) {
      if (!mine[k] || cs[k] % kPerLine != 0) continue;
      prefetch_l2(xr + std::int64_t{cs[k]} * kChunk);
      if constexpr (kAdd) prefetch_l2(orow + std::int64_t{cs[k]} * kChunk);
    }
  };

  // Distributed shared memory may be touched only once every CTA of the cluster runs.
  cluster.sync();

  Chunk<T> xc[S], oc[S];
  if constexpr (kRegAhead) load(cluster_id, xc, oc);
  int parity = 0;
  // Every CTA of a cluster runs the same rows (row < R is uniform over the cluster): the cluster
  // barriers below are reached by all of them the same number of times.
  for (std::int64_t row = cluster_id; row < p.rows; row += nclusters) {
    if constexpr (!kRegAhead) load(row, xc, oc);
    // 1. Fused add: h = RN(x + o), written back to the residual stream; then x and o are dead.
    Chunk<T> h[S];
    if constexpr (kAdd) {
      T* xw = static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T));
#pragma unroll
      for (int k = 0; k < S; ++k) {
        h[k] = add_rounded(xc[k], oc[k]);
        if (mine[k]) store_row_chunk<T, true>(xw, cs[k], full, n_tail, h[k]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < S; ++k) h[k] = xc[k];
    }
    // 2. The cluster's next row into registers (or L2): in flight through this row's
    // reduction, barriers and stores.
    if constexpr (kRegAhead) {
      load(row + nclusters, xc, oc);
    } else {
      prefetch(row + nclusters);
    }

    // 3. Σh²: the thread's chain (chunk order, element order; zeros past the slice add exact 0),
    // the block butterfly, then the 8 CTA partials through distributed shared memory.
    SumSquares<T, M> ss;
#pragma unroll
    for (int k = 0; k < S; ++k)
#pragma unroll
      for (int j = 0; j < kChunk; ++j) ss.add(chunk_get(h[k], j));
    const float total =
        cluster_sum<kFwdClusterCtas>(cluster, sum_slots[parity], rank, t, block_sum(ss.acc, sum_partials));
    const float r = rstd_of<M>(total, D, nchunks * kChunk, p.eps);
    if (rank == 0 && t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    // 4. Outputs. y of chunk k from h, r and the weights (loaded where used: L1/L2 hits).
    auto y_chunk = [&](int k, float(&y)[kChunk]) {
      float w[kChunk];
      load_weights<G, M>(p, row, cs[k], full, n_tail, w);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = y_of<T, M>(chunk_get(h[k], j), r, w[j], p.convention);
    };
    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
#pragma unroll
      for (int k = 0; k < S; ++k) {
        if (!mine[k]) continue;
        float y[kChunk];
        y_chunk(k, y);
        store_row_chunk<T, true>(yr, cs[k], full, n_tail, pack<T>(y));
      }
    } else {
      // y is formed where it is used (twice for the dynamic scale: once for the amax, once to
      // quantize; the same bits both times) rather than held: 16 more live registers spilled.
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      const float s_row = row_fp8_scale<M>(p, row, rank == 0 && t == 0, [&] {
        unsigned bits = 0;
#pragma unroll
        for (int k = 0; k < S; ++k) {
          if (!mine[k]) continue;
          float y[kChunk];
          y_chunk(k, y);
          bits = max(bits, chunk_amax_bits(y, cs[k], full, n_tail));
        }
        const float block_amax = block_max(__uint_as_float(bits), max_partials);
        if (t < kFwdClusterCtas) *cluster.map_shared_rank(&max_slots[parity][rank], t) = block_amax;
        cluster.sync();
        const float* m = &max_slots[parity][0];
        // NaN-propagating (nan_max), in the same order everywhere.
        return nan_max(nan_max(nan_max(m[0], m[1]), nan_max(m[2], m[3])),
                       nan_max(nan_max(m[4], m[5]), nan_max(m[6], m[7])));
      });
      const float inv_row = __fdiv_rn(1.0f, s_row);  // static / dynamic: one reciprocal per row
#pragma unroll
      for (int k = 0; k < S; ++k) {
        float y[kChunk];
        if (mine[k]) {
          y_chunk(k, y);
        } else {
#pragma unroll
          for (int j = 0; j < kChunk; ++j) y[j] = 0.0f;
        }
        // Every thread runs every step: the butterfly sees full warps.
        store_fp8_output<M, kGroupChunks>(p, qr, row, cs[k], mine[k], t, y, inv_row, mode, full, n_tail);
      }
    }
    parity ^= 1;
  }
  // No CTA may exit while another can still write into its slots (remote shared memory must
  // outlive its last access): one more cluster barrier after the last row.
  cluster.sync();
}

// fwd.cluster_row (above): the co-resident clusters of the instantiation at the
// block size launched (cudaOccupancyMaxActiveClusters, cached per device and block size), at
// most R; each cluster walks rows cluster + k·clusters.
template <typename Kernel>
std::int64_t fwd_cluster_programs(Kernel kernel, int threads, int max_threads) {
  constexpr int kSizes = 1024 / kWarp;
  static std::int64_t cached[64][kSizes + 1] = {};
  int dev = 0;
  if (threads <= 0 || threads > max_threads || cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const int slot = threads / kWarp;
  if (dev >= 0 && dev < 64 && cached[dev][slot] > 0) return cached[dev][slot];
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kFwdClusterCtas, 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64) cached[dev][slot] = n;
  return n;
}

struct fwd_cluster_row {
  static constexpr const char* kName = "fwd.cluster_row";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 400;
  static constexpr const char* kDescription =
      "aligned, D <= 65536: one row over an 8-CTA thread-block cluster, slices in registers, the next row in flight, "
      "the row sum (and the dynamic FP8 amax) through distributed shared memory";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = kFwdClusterMaxDim, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M3_low_precision_sum, Mutant::M8_stride_ignored,
                             Mutant::M9_tail_overread, Mutant::M13_fp8_via_bf16, Mutant::M19_misaligned_as_aligned>;

  static AccumShape shape(std::int64_t dim) { return fwd_cluster_row_shape(dim); }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    if (a.dim > kFwdClusterMaxDim)
      return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kFwdClusterMaxDim) +
                                                         " (8 CTAs x their threads x their chunks x 8)");
    const Status c = cluster_launch_status();
    if (!c.ok()) return Status::fail(c.code, who + ": " + c.reason);
    return Status::success();
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return run_variant<M, fwd_cluster_row>(a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s,
                                                  Status& result) {
      using T = typename decltype(tt)::type;
      using G = typename decltype(gt)::type;
      constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
      constexpr ClusterShape cs = fwd_cluster_shape_of<T>;
      const int threads = fwd_cluster_threads(a.dim, cs);
      auto kernel = fwd_cluster_kernel<T, G, kQ, kA, M>;
      const std::int64_t clusters = std::min(fwd_cluster_programs(kernel, threads, cs.max_threads), a.rows);
      if (clusters <= 0) {
        result = Status::fail(Status::Code::launch_failed, "fwd.cluster_row: no 8-CTA cluster of " +
                                                               std::to_string(threads) + " threads fits this device");
        return;
      }
      launch_kernel(kernel, grid_for(clusters * cs.ctas), threads, 0, s, p, fwd_cluster_slice(a.dim, cs));
    });
  }
};

}  // namespace rmsnorm::cuda::fwd
