// bwd.cluster_rows: the backward for aligned rows too long for one block's registers
// (16-bit: 16384 < D ≤ 65536; fp32: 8192 < D ≤ 65536), one row split over a Hopper thread-block
// cluster (sm_90: a variant of its own, as is all cluster code): 8 CTAs of up to 512
// threads and 2 chunks per thread, two CTAs per SM, for 16-bit rows; 8 CTAs of up to 1024 threads
// and one chunk per thread for fp32 rows (ClusterShape).
//
// Why. Beyond what one block can hold, the re-reading kernel reads x and dy twice and keeps each
// program's dg partial row (D fp32) in the workspace, read and written for every row: at
// D = 65536 that is 256 KB per program, more than the L2 holds for all programs, so ~14 bytes
// move per element where 6 must (measured 0.16 of the copy on the H200). Split over a cluster,
// each CTA owns a fixed column slice of every row: its x and dy chunks and its dg partial stay in
// registers, so x and dy are read once and dg costs nothing per row. The next row of the cluster
// is asked of L2 (prefetch_l2) while this one is reduced and written.
//
// The shape (H200, bf16): 8 CTAs of 1024 threads and one chunk per thread fit 15 co-resident
// clusters (120 of 132 SMs; 0.56 of the copy at D = 65536 with the next row asked of L2); 4 CTAs
// of 1024 threads and two chunks per thread use every SM but leave one CTA per SM waiting at its
// barriers with nothing else to run (0.69-0.70 at D = 65536, 0.37-0.39 at D = 20000, where a
// cluster count taken at 1024 threads leaves 320 threads in a CTA). Hence CTAs of at most 512
// threads, two per SM, so one CTA's loads run while the other waits at its barriers; and the
// cluster count taken at the block size launched.
//
// Per row, each CTA reduces its slice (the thread's chain over its chunks in order, then the
// block butterfly), writes its partial into slot [parity][rank] of EVERY CTA of the cluster
// (distributed shared memory), and the cluster barrier makes all partials visible everywhere;
// every CTA then adds them in the same fixed tree (so all agree bitwise on s and c = s / D). A
// slot of parity p is rewritten two rows later, after the next row's cluster barrier, which no
// CTA passes before all have read this row's slots: double buffering suffices (as for the block
// reduction's buffers).
//
// Declared shape (a function of D): slots x 8 elements per thread (at most D), tree depth 5 +
// ceil_log2(threads / 32) in the block + ceil_log2(CTAs) across the cluster, the larger of the
// two shapes. dg: a cluster chains its rows in order (rows k, k + Q, …), then stage 2 over the Q
// partial rows, Q = the device's co-resident clusters of the row type's shape at the block size
// launched (a function of D), at most P = the workspace's rows, at most ceil(R / 2).
#pragma once

#include <cooperative_groups.h>

#include "backward_launch.cuh"
#include "backward_staged.cuh"
#include "cluster_reduce.cuh"

namespace rmsnorm::cuda::bwd {

// The cluster shape by row type. 16-bit rows: 8 CTAs of up to 512 threads, 2 chunks per thread,
// launch bounds asking for two CTAs per SM (64 registers; 8-CTA clusters of 1024 threads and one
// chunk: the H200 holds 15 at once, 120 of its 132 SMs; 4 CTAs of 1024 threads and
// two chunks: one CTA per SM, each waiting at its barriers with nothing else to run). fp32 rows:
// 8 CTAs of up to 1024 threads, one chunk per thread (two fp32 chunks of x and dy and their dg
// partials do not fit 64 registers).
inline constexpr ClusterShape kCluster16{8, 2, 512, 2};
inline constexpr ClusterShape kCluster32{8, 1, 1024, 1};
// kWide: the fused-add backward of 16-bit rows over kClusterWideMinDim keeps 4 CTAs of up to 1024
// threads, one per SM (H200: at D = 65536 the fused add runs 0.82 of the copy in that form and
// 0.77-0.78 in the 8x512 one; at D = 40000 the 8x512 form is 7-10 % faster, and so is the plain
// backward everywhere; the cut between 40000 and 65536 is not measured).
inline constexpr ClusterShape kCluster16Wide{4, 2, 1024, 1};
inline constexpr std::int64_t kClusterWideMinDim = 49152;
template <typename T, bool kWide = false>
inline constexpr ClusterShape cluster_shape_of = sizeof(T) == 2 ? (kWide ? kCluster16Wide : kCluster16) : kCluster32;
inline bool cluster_wide(DType t, std::int64_t dim, bool residual) {
  return size_of(t) == 2 && residual && dim > kClusterWideMinDim;
}
inline ClusterShape cluster_shape_for(DType t, bool wide = false) {
  return size_of(t) == 2 ? (wide ? kCluster16Wide : kCluster16) : kCluster32;
}
inline constexpr int kClusterMaxCtas = 8;
inline constexpr int kClusterMaxThreads = 1024;
inline constexpr std::int64_t kClusterMaxDim = 65536;  // 8 x 512 x 2 x 8 (16-bit), 8 x 1024 x 8 (fp32)
static_assert(std::int64_t{kCluster16.ctas} * kCluster16.max_threads * kCluster16.slots * kChunk == kClusterMaxDim &&
                  std::int64_t{kCluster16Wide.ctas} * kCluster16Wide.max_threads * kCluster16Wide.slots * kChunk == kClusterMaxDim &&
                  std::int64_t{kCluster32.ctas} * kCluster32.max_threads * kCluster32.slots * kChunk == kClusterMaxDim,
              "every shape reaches D = 65536");
static_assert(kCluster16.max_threads <= kClusterMaxThreads && kCluster32.max_threads <= kClusterMaxThreads &&
                  kCluster16.max_threads * kCluster16.min_blocks <= 2048 && kCluster32.max_threads * kCluster32.min_blocks <= 2048,
              "a CTA's threads, and the CTAs an SM is asked to hold");
inline constexpr std::int64_t kClusterMinDim16 = kMaxFusedDim16 + 1;  // below: register-resident / staged
inline constexpr std::int64_t kClusterMinDim32 = kMaxFusedDim + 1;

// Chunks per CTA slice and threads per CTA, from D and the shape.
inline std::int64_t cluster_slice_chunks(std::int64_t dim, ClusterShape cs) { return ceil_div(chunks_of(dim), cs.ctas); }
inline int cluster_threads(std::int64_t dim, ClusterShape cs) {
  return static_cast<int>(ceil_div(ceil_div(cluster_slice_chunks(dim, cs), cs.slots), kWarp) * kWarp);
}
// Declared (a function of D alone): the longest chain and the deepest tree of the three shapes.
inline AccumShape cluster_row_shape(std::int64_t dim) {
  AccumShape s;
  for (const ClusterShape cs : {kCluster16, kCluster16Wide, kCluster32}) s = widest(s, cluster_row_accum(cs, cluster_threads(dim, cs), dim));
  return s;
}

// Mutants (M ≠ none): M4 (cmean_of), M5 (chunk_dx), M8 (row_start), M20 (the weights, loaded per
// row: owned_chunk_weights).
template <typename T, typename G, bool kWide = false, Mutant M = Mutant::none>
__global__ void __cluster_dims__(cluster_shape_of<T, kWide>.ctas, 1, 1)
    __launch_bounds__(cluster_shape_of<T, kWide>.max_threads, cluster_shape_of<T, kWide>.min_blocks)
    backward_cluster_kernel(Params<T, G> p, std::int64_t slice_chunks) {
  namespace cg = cooperative_groups;
  constexpr int kClusterCtas = cluster_shape_of<T, kWide>.ctas;
  constexpr int kClusterSlots = cluster_shape_of<T, kWide>.slots;
  begin_dependent_grid();  // the grid ahead has finished; stage 2 may now be scheduled
  __shared__ float reduce_buf[2][kWarp];
  __shared__ float cluster_slots[2][kClusterCtas];

  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const std::int64_t cluster_id = blockIdx.x / kClusterCtas;
  const std::int64_t nclusters = gridDim.x / kClusterCtas;
  const int t = static_cast<int>(threadIdx.x);
  const int nthreads = static_cast<int>(blockDim.x);
  const std::int64_t dim = p.dim;
  const std::int64_t nchunks = (dim + kChunk - 1) / kChunk;
  // This thread's chunks of every row: slice chunks t and t + blockDim (coalesced across the CTA).
  // 32-bit column indices (at most 8192 chunks: D ≤ 65536) keep registers for the row.
  int cs[kClusterSlots];
  bool mine[kClusterSlots];
#pragma unroll
  for (int k = 0; k < kClusterSlots; ++k) {
    const int in_slice = t + k * nthreads;
    cs[k] = rank * static_cast<int>(slice_chunks) + in_slice;
    mine[k] = in_slice < slice_chunks && cs[k] < nchunks;
  }
  const bool want_dg = p.partials != nullptr;
  const float dim_f = static_cast<float>(dim);  // exact for D ≤ 2^24

  // The weights of chunk k, loaded where used (L1 / L2 hits after the first row).
  auto weights = [&](int k, std::int64_t row, float (&w)[kChunk]) { owned_chunk_weights<T, G, M>(p, mine[k], row, cs[k], w); };
  float acc[kClusterSlots][kChunk];
  start_dg_sums(acc);

  // The next row of this cluster into L2 (x, dy; dres of this row), one prefetch per 128-byte
  // line by the thread whose chunk starts it: its loads at the top of the next step then wait
  // on L2, not DRAM (no register prefetch: two chunks per thread leave no registers for it).
  auto prefetch = [&](std::int64_t row) {
    constexpr std::int64_t kPerLine = kL2Line / static_cast<std::int64_t>(sizeof(Chunk<T>));
#pragma unroll
    for (int k = 0; k < kClusterSlots; ++k) {
      if (!mine[k] || cs[k] % static_cast<int>(kPerLine) != 0) continue;
      if (row + nclusters < p.rows) {
        prefetch_l2(row_start<M>(p.x, row + nclusters, p.sx, dim) + cs[k] * kChunk);
        prefetch_l2(row_start<M>(p.dy, row + nclusters, p.sdy, dim) + cs[k] * kChunk);
      }
      if (p.dres) prefetch_l2(row_start<M>(p.dres, row, p.sdres, dim) + cs[k] * kChunk);
    }
  };

  // Distributed shared memory may be touched only once every CTA of the cluster runs.
  cluster.sync();

  int parity = 0;
  // Every CTA of a cluster runs the same rows (row < R is uniform over the cluster): the
  // cluster barriers below are reached by all of them the same number of times.
  for (std::int64_t row = cluster_id; row < p.rows; row += nclusters) {
    Chunk<T> xc[kClusterSlots], dyc[kClusterSlots];
    const T* xrow = row_start<M>(p.x, row, p.sx, dim);
    const T* dyrow = row_start<M>(p.dy, row, p.sdy, dim);
#pragma unroll
    for (int k = 0; k < kClusterSlots; ++k) {
      xc[k] = mine[k] ? load_row_chunk<T, true>(xrow, cs[k], dim) : zero_chunk<T>();
      dyc[k] = mine[k] ? load_row_chunk<T, true>(dyrow, cs[k], dim) : zero_chunk<T>();
    }
    const float r = p.rstd[row];
    prefetch(row);

    // The thread's chain: chunk 0's 8 elements, then chunk 1's (zeros past the slice add exact 0).
    float s = -0.0f;
#pragma unroll
    for (int k = 0; k < kClusterSlots; ++k) {
      float w[kChunk];
      weights(k, row, w);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) s = fmaf(chunk_get(dyc[k], j) * w[j], chunk_get(xc[k], j) * r, s);
    }
    const float total = cluster_sum<kClusterCtas>(cluster, cluster_slots[parity], rank, t, block_sum(s, reduce_buf[parity]));
    parity ^= 1;
    const float cmean = cmean_of<M>(total, dim_f);

    T* dxrow = row_start<M>(p.dx, row, p.sdx, dim);
    const T* dresrow = p.dres ? row_start<M>(p.dres, row, p.sdres, dim) : nullptr;
#pragma unroll
    for (int k = 0; k < kClusterSlots; ++k) {
      if (!mine[k]) continue;
      float w[kChunk];
      weights(k, row, w);
      float out[kChunk];
      chunk_dx<M>(xc[k], dyc[k], w, r, cmean, acc[k], out);
      if (dresrow) {
        const Chunk<T> rc = load_row_chunk<T, true>(dresrow, cs[k], dim);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) out[j] += chunk_get(rc, j);
      }
      store_row_chunk<T, true>(dxrow, cs[k], dim, out);
    }
  }
  // No CTA may exit while another can still write into its slots (remote shared memory must
  // outlive its last access): one more cluster barrier after the last row.
  cluster.sync();

  if (!want_dg) return;
  // The cluster's dg partial row. Where it is 16-byte aligned (D a multiple of 4 and the
  // workspace aligned: the API asks only 4 bytes of it), a chunk's eight sums go as two 16-byte
  // stores: eight 4-byte stores of a warp touch 32 sectors each, so the L2 took every sector of
  // partials in eight write requests (write_dg_partial says what that cost the staged kernels,
  // which pass the sums through their stages instead; this kernel has no shared memory to spare).
  float* part = p.partials + cluster_id * dim;
  const bool vec = (reinterpret_cast<std::uintptr_t>(part) & 15) == 0 && dim % 4 == 0;
#pragma unroll
  for (int k = 0; k < kClusterSlots; ++k) {
    if (!mine[k]) continue;
    const std::int64_t c0 = std::int64_t{cs[k]} * kChunk;
    if (vec && c0 + kChunk <= dim) {
      float4* const dst = reinterpret_cast<float4*>(part + c0);
      dst[0] = make_float4(acc[k][0], acc[k][1], acc[k][2], acc[k][3]);
      dst[1] = make_float4(acc[k][4], acc[k][5], acc[k][6], acc[k][7]);
    } else {
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        if (c0 + j < dim) part[c0 + j] = acc[k][j];
    }
  }
}

// Co-resident clusters of the type's shape at `threads` a CTA, from the occupancy calculator — a
// function of the device, the shape and the block size (cached); 0 when none fits or no device.
// M: the kernel asked about (a mutant launches as many clusters as its own kernel fits).
template <typename T, bool kWide, Mutant M = Mutant::none>
inline std::int64_t cluster_programs(int threads) {
  constexpr int kSizes = kClusterMaxThreads / kWarp;
  static std::int64_t cached[64][kSizes + 1] = {};
  int dev = 0;
  if (threads <= 0 || threads > cluster_shape_of<T, kWide>.max_threads || cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const int slot = static_cast<int>(ceil_div(threads, kWarp));
  if (dev >= 0 && dev < 64 && cached[dev][slot] > 0) return cached[dev][slot];
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(cluster_shape_of<T, kWide>.ctas, 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(slot * kWarp), 1, 1);
  cfg.dynamicSmemBytes = 0;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, backward_cluster_kernel<T, T, kWide, M>, &cfg) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64) cached[dev][slot] = n;
  return n;
}
// Mutants are built for bf16 rows only (run_stages): none of another type.
template <Mutant M = Mutant::none>
inline std::int64_t cluster_programs_for(DType t, bool wide, int threads) {
  if constexpr (M != Mutant::none) {
    if (t != DType::bf16) return 0;
  } else {
    if (size_of(t) != 2) return cluster_programs<float, false>(threads);
  }
  return wide ? cluster_programs<__nv_bfloat16, true, M>(threads) : cluster_programs<__nv_bfloat16, false, M>(threads);
}
// Clusters launched for R rows at `threads` a CTA: the co-resident ones, at most P (the workspace
// holds P partial rows) and at most ceil(R / 2), so that a cluster chains two rows or more: every
// cluster writes a D-wide fp32 partial row that stage 2 reads, and with one row per cluster those
// partials are 2/3 of the rows' own bytes (16-bit; the 64-row cases run 4-25 % slower with 64
// clusters than with 33). Both the launcher and the declared dg chain use it.
template <Mutant M = Mutant::none>
inline std::int64_t cluster_count_at(DType t, bool wide, int threads, std::int64_t rows) {
  const std::int64_t q = cluster_programs_for<M>(t, wide, threads);
  return std::min({q, programs(), ceil_div(rows, 2)});
}

// Declared for R rows: the longest dg chain over the cluster counts q a form launches at each
// block size, count_at(threads, R) (a cluster chains ceil(R / q) rows; stage 2 adds
// ceil(q / lanes) per lane, then its tree).
template <typename Count>
inline AccumShape cluster_chain_shape(std::int64_t rows, int max_threads, Count count_at) {
  AccumShape s;
  s.tree_depth = ceil_log2(kStage2Lanes);
  const std::int64_t r = std::max<std::int64_t>(rows, 1);
  for (int threads = kWarp; threads <= max_threads; threads += kWarp) {
    const std::int64_t q = std::max<std::int64_t>(count_at(threads, r), 1);
    s.per_thread = std::max(s.per_thread, ceil_div(r, q) + ceil_div(q, kStage2Lanes) - 1);
  }
  return s;
}
inline AccumShape cluster_dg_shape(std::int64_t rows) {
  AccumShape s;
  struct Form { DType t; bool wide; };
  for (const Form f : {Form{DType::bf16, false}, Form{DType::bf16, true}, Form{DType::f32, false}})
    s = widest(s, cluster_chain_shape(rows, cluster_shape_for(f.t, f.wide).max_threads,
                                      [&](int threads, std::int64_t r) { return cluster_count_at(f.t, f.wide, threads, r); }));
  return s;
}

inline Status cluster_can_implement(const BackwardArgs& a) {
  using Code = Status::Code;
  Status s = can_implement(a, /*mutant=*/false);
  if (!s.ok()) return s;
  const std::int64_t min_dim = size_of(a.x.type) == 2 ? kClusterMinDim16 : kClusterMinDim32;
  if (a.dim < min_dim)
    return Status::fail(Code::unsupported, "D < " + std::to_string(min_dim) + " for this type (one block holds the row)");
  if (a.dim > kClusterMaxDim) return Status::fail(Code::unsupported, "D > 65536 (a cluster's CTAs x 1024 threads x its chunks x 8)");
  if (a.rows > 0 && !all_aligned(a)) return Status::fail(Code::misaligned, "16-byte vector accesses need every row and g aligned");
  const bool wide = cluster_wide(a.x.type, a.dim, a.dresidual.data != nullptr);
  if (cluster_programs_for(a.x.type, wide, cluster_shape_for(a.x.type, wide).max_threads) <= 0)
    return Status::fail(Code::unsupported, "no co-resident " + std::to_string(cluster_shape_for(a.x.type, wide).ctas) + "-CTA cluster on this device");
  return Status::success();
}

template <Mutant M>
inline Status cluster_launch(const BackwardArgs& a) {
  // The programs are the q clusters, each writing one partial row: q ≤ min(P, R) rows of the
  // workspace.
  const bool wide = cluster_wide(a.x.type, a.dim, a.dresidual.data != nullptr);
  const ClusterShape cs = cluster_shape_for(a.x.type, wide);
  const int threads = cluster_threads(a.dim, cs);
  const std::int64_t q = cluster_count_at<M>(a.x.type, wide, threads, a.rows);
  if (q <= 0) return no_programs();
  return run_stages<M>(a, q, [&](auto tt, auto gt, const auto& p, std::int64_t clusters, cudaStream_t st, bool) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    const std::int64_t slice = cluster_slice_chunks(a.dim, cs);
    if constexpr (sizeof(T) == 2) {
      if (wide) {
        launch_kernel(backward_cluster_kernel<T, G, true, M>, static_cast<unsigned>(clusters * cs.ctas), threads, 0, st,
                      p, slice);
        return;
      }
    }
    launch_kernel(backward_cluster_kernel<T, G, false, M>, static_cast<unsigned>(clusters * cs.ctas), threads, 0, st, p,
                  slice);
  });
}


// ---------------------------------------------------------------------------------------------
// bwd.staged_cluster: the cluster's column slices with the rows ahead in shared memory
// ---------------------------------------------------------------------------------------------
//
// Why. bwd.cluster_rows holds only the current row (its loads at the top of a row, then the
// reductions, a cluster barrier, the stores; the next row asked of L2): 0.69-0.71 of the copy at
// D = 65536 whatever R (H200). Here each CTA stages the next rows of its slice by
// cp.async (backward_staged_cluster_kernel, below): its loads run through the reductions, barriers
// and stores of the rows before, and the next row's reduction runs while the cluster barrier of
// this one completes (the rows skewed by one). The shapes are bwd.cluster_rows' (kCluster16: 8 CTAs of up to
// 512 threads, two chunks each, two CTAs per SM; kCluster32: 8 of up to 1024 threads, one chunk,
// one CTA per SM), one row stream per cluster; stages as many as fit the shared memory a CTA may
// have at that occupancy (110 KB for two CTAs per SM, 204 KB for one), 2 to 8.
//
// Declared: the row as bwd.cluster_rows (cluster_row_shape: its kCluster16 and kCluster32 shapes
// are two of the three it covers); dg: a cluster chains its rows, then stage 2 over the q partial rows (q = the co-resident clusters at the block size and shared
// memory launched, at most P and ceil(R / 2)).
// The kernel: one row stream per cluster of CL CTAs, each CTA a fixed column slice of
// `slice_chunks` chunks of every row (its stages, weights and dg sums those of its slice only);
// the CTAs' block sums meet through distributed shared memory (cluster_reduce.cuh), so all of
// them agree bitwise on c. The per-row maths and order are backward_staged_kernel's (ĝ = dy·w,
// x̂ = x·r, the thread's chain over its chunks in order, the block butterfly, then the fixed tree
// over the CTAs; dx = r·(ĝ − x̂c) [+ dres]); each thread copies its own chunks of the rows ahead
// into its own slots, as there.
//
// Addresses (backward_staged_kernel's loop is mostly address arithmetic, 1.11 warp instructions
// per element at 8192 x 4096 bf16, 2.71 issued per cycle and SM, ncu): what depends
// only on the thread's columns is computed once before the loop (each chunk's byte offset in a
// row and in a stage, and how many of its bytes lie inside the row), a row's base addresses once
// per row, the stage and the row advance by additions, and the copies of a full chunk go through
// copy16_async_at (integer addresses). The same rewrite of backward_staged_kernel itself
// measures faster at most shapes but slower at its best ones (32768 x 4096 bf16: 0.88 of the copy
// against 0.95 in the bench, although ncu times the kernel alone 5 % faster), so that kernel keeps
// its own form.
// Mutants (M ≠ none): M4 (cmean_of), M5 (chunk_dx), M8 (row_start).
template <typename T, typename G, int K, bool kResidual, int CL, Mutant M = Mutant::none>
__global__ void __launch_bounds__(sizeof(T) == 2 ? 512 : 1024, sizeof(T) == 2 ? 2 : 1)
    backward_staged_cluster_kernel(Params<T, G> p, int stages, int slice_chunks) {
  static_assert(CL == 4 || CL == 8, "a cluster of 4 or 8 CTAs");
  begin_dependent_grid();  // the grid ahead has finished; stage 2 may now be scheduled
  constexpr int kTensors = kResidual ? 3 : 2;
  constexpr int kChunkBytes = static_cast<int>(sizeof(Chunk<T>));
  constexpr int kWords = Chunk<T>::kWords;
  extern __shared__ __align__(16) unsigned char stage_mem[];
  __shared__ float reduce_buf[2][1][kWarp];
  __shared__ float cluster_slots[2][CL];

  const int nthreads = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t dim = p.dim;
  const int nchunks = static_cast<int>((dim + kChunk - 1) / kChunk);  // ≤ 8192 (D ≤ 65536)
  const bool want_dg = p.partials != nullptr;
  const float dim_f = static_cast<float>(dim);  // exact for D ≤ 2^24
  const int rank = static_cast<int>(cooperative_groups::this_cluster().block_rank());
  const std::int64_t first = blockIdx.x / CL, step = gridDim.x / CL;
  // This thread's chunks: c = slice0 + t + k·threads, those below `limit` its own.
  const int slice0 = rank * slice_chunks;
  const int limit = min(nchunks, slice0 + slice_chunks);

  // Stage s: [kTensors][K][threads] chunks, then [threads] rstd values.
  const int chunk_bytes = kTensors * K * nthreads * kChunkBytes;
  const int stage_bytes = chunk_bytes + nthreads * static_cast<int>(sizeof(float));
  const int tensor_bytes = K * nthreads * kChunkBytes;  // one tensor's slots in a stage
  const std::uint32_t stage0 = shared_address(stage_mem);
  // Per chunk k: its byte offset in a row, its valid bytes there (0: not this thread's; the
  // row's last chunk may be partial).
  std::uint32_t row_off[K];
  int valid[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = slice0 + t + k * nthreads;
    const std::int64_t left = c < limit ? dim - std::int64_t{c} * kChunk : 0;
    valid[k] = static_cast<int>(left >= kChunk ? kChunk : left) * static_cast<int>(sizeof(T));
    row_off[k] = static_cast<std::uint32_t>(c) * kChunkBytes;
  }
  auto slot_off = [&](int q, int k) { return q * tensor_bytes + (k * nthreads + t) * kChunkBytes; };
  auto chunk_at = [&](int s, int q, int k) {
    return *reinterpret_cast<const Chunk<T>*>(stage_mem + s * stage_bytes + slot_off(q, k));
  };

  // One commit group per row (empty past the last row, so the count stays uniform).
  auto copy_chunk = [&](std::uint32_t dst, const T* row, int k) {
    const std::uint64_t src = global_address(row) + row_off[k];
    if (valid[k] == kChunkBytes) {
#pragma unroll
      for (int w = 0; w < kWords; ++w) copy16_async_at(dst + 16 * w, src + 16 * w);
    } else if (valid[k] > 0) {  // the row's last chunk: the copy zero-fills past D
#pragma unroll
      for (int w = 0; w < kWords; ++w) {
        const int part = max(0, min(16, valid[k] - 16 * w));
        copy16_async(stage_mem + (dst - stage0) + 16 * w, reinterpret_cast<const void*>(src + (part > 0 ? 16 * w : 0)), part);
      }
    }
  };
  auto issue = [&](std::int64_t row, int s) {
    if (row < p.rows) {
      const T* xr = row_start<M>(p.x, row, p.sx, dim);
      const T* dyr = row_start<M>(p.dy, row, p.sdy, dim);
      const T* dresr = kResidual ? row_start<M>(p.dres, row, p.sdres, dim) : nullptr;
      const std::uint32_t base = stage0 + static_cast<std::uint32_t>(s * stage_bytes);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        copy_chunk(base + slot_off(0, k), xr, k);
        copy_chunk(base + slot_off(1, k), dyr, k);
        if constexpr (kResidual) copy_chunk(base + slot_off(2, k), dresr, k);
      }
      copy4_async(stage_mem + s * stage_bytes + chunk_bytes + t * static_cast<int>(sizeof(float)), p.rstd + row);
    }
    commit_copies();
  };

  // The weights of this thread's columns, once (they do not change from row to row).
  float w[K][kChunk];
#pragma unroll
  for (int k = 0; k < K; ++k) owned_chunk_weights<T, G, M>(p, valid[k] > 0, 0, slice0 + t + k * nthreads, w[k]);
  float acc[K][kChunk];  // dg partial of this thread's columns
  start_dg_sums(acc);

  // Row i of this cluster: first + i·step (the same rows, hence the same barriers, in every CTA).
  const std::int64_t iterations = first < p.rows ? (p.rows - first + step - 1) / step : 0;
  cooperative_groups::this_cluster().sync();  // distributed shared memory only once every CTA runs
  std::int64_t ahead_row = first;  // the next row to issue, into stage ahead_s
  int ahead_s = 0;
  for (int s = 0; s < stages - 1; ++s) {
    issue(ahead_row, ahead_s);
    ahead_row += step;
    ++ahead_s;
  }
  // Row pieces on a stage: its rstd, its partial Σ ĝ·x̂ over this thread's chunks, its dx (and
  // the dg sums).
  auto rstd_at = [&](int s) {
    return *reinterpret_cast<const float*>(stage_mem + s * stage_bytes + chunk_bytes + t * static_cast<int>(sizeof(float)));
  };
  auto partial_of = [&](int s, float r) {
    float sum = -0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (valid[k] > 0) {
        const Chunk<T> xc = chunk_at(s, 0, k), dyc = chunk_at(s, 1, k);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) sum = fmaf(chunk_get(dyc, j) * w[k][j], chunk_get(xc, j) * r, sum);
      }
    }
    return sum;
  };
  auto write_dx = [&](int s, float r, float cmean, std::int64_t row) {
    // A pointer, not an integer: derived from the kernel's parameter, nvcc keeps it in the global
    // space (STG); from an integer the stores become generic (ST).
    unsigned char* const dxrow = reinterpret_cast<unsigned char*>(row_start<M>(p.dx, row, p.sdx, dim));
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (valid[k] > 0) {
        const Chunk<T> xc = chunk_at(s, 0, k), dyc = chunk_at(s, 1, k);
        float out[kChunk];
        chunk_dx<M>(xc, dyc, w[k], r, cmean, acc[k], out);
        if constexpr (kResidual) {
          const Chunk<T> rc = chunk_at(s, 2, k);
#pragma unroll
          for (int j = 0; j < kChunk; ++j) out[j] += chunk_get(rc, j);
        }
        T* dst = reinterpret_cast<T*>(dxrow + row_off[k]);
        if (valid[k] == kChunkBytes) {
          store_chunk(dst, pack<T>(out));
        } else {
#pragma unroll
          for (int j = 0; j < kChunk; ++j)
            if (j * static_cast<int>(sizeof(T)) < valid[k]) dst[j] = from_float<T>(out[j]);
        }
      }
    }
  };

  // The rows, skewed by one: row i + 1 is reduced in the CTA (its block sum) while the cluster
  // barrier of row i completes; then row i's c, row i + 1's slot writes and arrive, and row i's
  // dx. A CTA holds rows i and i + 1 in their stages, rows i + 2 … i + stages − 1 in flight, and
  // refills row i's stage once its dx is written: all stages are issued up front, and before row
  // i + 1's reduction stages + i groups are committed, so at most stages − 2 may still be
  // pending. Slots: row i + 1's writes into the other CTAs (parity of row i − 1) come after this
  // CTA's wait for row i, which no CTA passes before every CTA has arrived for row i, i.e. read
  // its row i − 1 slots; and this CTA reads its row i slots before it arrives for row i + 1,
  // after which row i + 2 may write them.
  int parity = 0, s = 0;  // s: the stage of row i
  std::int64_t row = first;
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  issue(ahead_row, ahead_s);  // the last stage: all of them in flight
  ahead_row += step;
  if (iterations > 0) {
    wait_copies(stages - 1);  // row 0
    cluster_put<CL>(cluster, cluster_slots[0], rank, t, block_sum(partial_of(0, rstd_at(0)), reduce_buf[0][0]));
    cluster_arrive();
  }
  for (std::int64_t i = 0; i < iterations; ++i, row += step) {
    const int next = s + 1 == stages ? 0 : s + 1;
    const bool more = i + 1 < iterations;  // the same in every CTA of the cluster
    float part_next = 0.0f;
    if (more) {
      wait_copies(stages - 2);  // row i + 1
      part_next = block_sum(partial_of(next, rstd_at(next)), reduce_buf[parity ^ 1][0]);
    }
    cluster_wait();  // row i's partials, from every CTA
    const float cmean = cmean_of<M>(cluster_tree_sum<CL>(cluster_slots[parity]), dim_f);
    parity ^= 1;
    if (more) {
      cluster_put<CL>(cluster, cluster_slots[parity], rank, t, part_next);
      cluster_arrive();
    }
    write_dx(s, rstd_at(s), cmean, row);
    issue(ahead_row, s);  // row i + stages into row i's stage
    ahead_row += step;
    s = next;
  }
  wait_copies(0);  // no copy may outlive the block (the trailing groups are empty)
  // No CTA may exit while another can still write into its slots (remote shared memory must
  // outlive its last access): one more cluster barrier after the last row.
  cooperative_groups::this_cluster().sync();

  if (!want_dg) return;
  // A CTA writes its slice's columns only (the bound: the slice's end, at most D).
  const std::int64_t columns = std::min<std::int64_t>(dim, std::int64_t{limit} * kChunk);
  // Through the stages' shared memory (the slice's columns: one stage of x and dy holds them).
  write_dg_partial<K, 1, true>(p.partials + first * dim, acc, slice0 + t, nthreads, columns, 0,
                               reinterpret_cast<float*>(stage_mem), t, nthreads, slice0);
}

inline constexpr std::int64_t kStagedClusterMinDim = kStagedMinDim;  // 513: a warp per row below
inline constexpr std::size_t kStagedClusterSmem16 = kStagedSmemPerBlock;  // two CTAs per SM
inline constexpr std::size_t kStagedClusterSmem32 = 204 * 1024;          // one CTA per SM
inline constexpr std::size_t kStagedClusterBytes = 36 * 1024;            // past the block rows: staged_cluster_config
static_assert(kCluster16.max_threads == 512 && kCluster16.min_blocks == 2 && kCluster16.slots == 2 &&
                  kCluster32.max_threads == 1024 && kCluster32.min_blocks == 1 && kCluster32.slots == 1,
              "bwd.staged_cluster runs bwd.cluster_rows' shapes (its launch bounds state them)");

struct StagedClusterConfig {
  ClusterShape shape;
  int threads = 0;          // per CTA
  std::int64_t slice = 0;   // chunks per CTA
  int stages = 0;
  std::size_t smem = 0;     // dynamic, per CTA
};
inline StagedClusterConfig staged_cluster_config(DType t, std::int64_t dim, bool residual) {
  StagedClusterConfig c;
  c.shape = cluster_shape_for(t);
  c.threads = cluster_threads(dim, c.shape);
  c.slice = cluster_slice_chunks(dim, c.shape);
  const StagedConfig block{c.threads, c.shape.slots};
  const std::size_t stage = staged_stage_bytes(block, size_of(t), residual);
  const std::size_t budget = size_of(t) == 2 ? kStagedClusterSmem16 : kStagedClusterSmem32;
  // Past the rows one block holds (16-bit D > 16384, fp32 > 8192) a CTA stages at most
  // kStagedClusterBytes, and at least 3 stages (rows i and i + 1 and one in flight: the skewed
  // loop's least; 2 where 3 exceed the budget). Filling the budget would give small slices 8
  // stages, so two CTAs would hold an SM where their registers allow up to six (64 x 160 threads
  // at 16392), and bwd.cluster_rows, with no stages, would fit more clusters (1.3-1.4x faster at
  // 16392 from R = 512). Capped, the bf16 backward at 16392 runs 0.61-0.75 of the copy from
  // R = 512 (0.44-0.58 uncapped; H200). Rows one block holds keep their budget's stages: the
  // few-row hint below is measured with them.
  const std::int64_t block_max = size_of(t) == 2 ? kClusterMinDim16 - 1 : kClusterMinDim32 - 1;
  const std::size_t cap = dim > block_max ? std::max<std::size_t>(3 * stage, kStagedClusterBytes) : budget;
  c.stages = static_cast<int>(std::clamp<std::size_t>(std::min(budget, cap) / stage, 2, kStagedMaxStages));
  c.smem = static_cast<std::size_t>(c.stages) * stage;
  return c;
}

template <typename T, typename G, bool kRes, Mutant M = Mutant::none>
inline auto staged_cluster_kernel() {
  return backward_staged_cluster_kernel<T, G, cluster_shape_of<T>.slots, kRes, cluster_shape_of<T>.ctas, M>;
}
// The launch configuration of a cluster of c's shape (its cluster dimension is an attribute of
// the launch: the kernel is backward_staged_kernel's, whose other instances run unclustered).
struct ClusterLaunch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1] = {};
  ClusterLaunch(const StagedClusterConfig& c, std::int64_t clusters, cudaStream_t st) {
    cfg.gridDim = dim3(static_cast<unsigned>(clusters * c.shape.ctas), 1, 1);
    cfg.blockDim = dim3(static_cast<unsigned>(c.threads), 1, 1);
    cfg.dynamicSmemBytes = c.smem;
    cfg.stream = st;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(c.shape.ctas);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
};
// Co-resident clusters of that configuration (cached per device, type size, fused add and block
// size); 0 when none fits or no device answers. M: the kernel asked about (mutants: bf16 only).
template <Mutant M = Mutant::none>
inline std::int64_t staged_cluster_programs(DType t, std::int64_t dim, bool residual) {
  const StagedClusterConfig c = staged_cluster_config(t, dim, residual);
  static std::int64_t cached[64][2][2][kClusterMaxThreads / kWarp + 1] = {};
  int dev = 0;
  if (c.threads <= 0 || cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const int ti = size_of(t) == 2 ? 0 : 1, ri = residual ? 1 : 0, bi = c.threads / kWarp;
  const bool cacheable = dev >= 0 && dev < 64;
  if (cacheable && cached[dev][ti][ri][bi] > 0) return cached[dev][ti][ri][bi];
  int n = 0;
  auto query = [&](auto kernel) {
    ClusterLaunch l(c, 1, nullptr);
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(c.smem)) != cudaSuccess ||
        cudaOccupancyMaxActiveClusters(&n, kernel, &l.cfg) != cudaSuccess)
      n = 0;
  };
  // The occupancy of an instance is that of its type size and fused add (G changes nothing).
  if constexpr (M != Mutant::none) {
    if (t == DType::bf16)
      residual ? query(staged_cluster_kernel<__nv_bfloat16, __nv_bfloat16, true, M>())
               : query(staged_cluster_kernel<__nv_bfloat16, __nv_bfloat16, false, M>());
  } else if (size_of(t) == 2) {
    residual ? query(staged_cluster_kernel<__nv_bfloat16, __nv_bfloat16, true>()) : query(staged_cluster_kernel<__nv_bfloat16, __nv_bfloat16, false>());
  } else {
    residual ? query(staged_cluster_kernel<float, float, true>()) : query(staged_cluster_kernel<float, float, false>());
  }
  (void)cudaGetLastError();
  if (n <= 0) return 0;
  if (cacheable) cached[dev][ti][ri][bi] = n;
  return n;
}
template <Mutant M = Mutant::none>
inline std::int64_t staged_cluster_count(DType t, std::int64_t dim, bool residual, std::int64_t rows) {
  return std::min({staged_cluster_programs<M>(t, dim, residual), programs(), ceil_div(rows, 2)});
}
// Declared for R rows: the longest dg chain over the cluster counts any D and form can launch.
inline AccumShape staged_cluster_dg_shape(std::int64_t rows) {
  AccumShape s;
  for (const DType t : {DType::bf16, DType::f32})
    for (const bool residual : {false, true}) {
      const ClusterShape cs = cluster_shape_for(t);
      // The stages, hence the occupancy, follow the block size: the smallest D of each.
      s = widest(s, cluster_chain_shape(rows, cs.max_threads, [&](int threads, std::int64_t r) {
                   const std::int64_t dim = std::max<std::int64_t>(kStagedClusterMinDim, std::int64_t{threads - kWarp} * cs.slots * cs.ctas * kChunk + 1);
                   return staged_cluster_count(t, dim, residual, r);
                 }));
    }
  return s;
}

inline Status staged_cluster_can_implement(const BackwardArgs& a) {
  using Code = Status::Code;
  Status s = can_implement(a, /*mutant=*/false);
  if (!s.ok()) return s;
  if (a.dim < kStagedClusterMinDim) return Status::fail(Code::unsupported, "D <= 512 (a warp per row: bwd.persistent_rows)");
  if (a.dim > kClusterMaxDim) return Status::fail(Code::unsupported, "D > 65536 (a cluster's CTAs x 1024 threads x its chunks x 8)");
  if (a.rows > 0 && !all_aligned(a)) return Status::fail(Code::misaligned, "16-byte asynchronous copies need every row and g 16-byte aligned");
  if (a.rows > 0 && staged_cluster_programs(a.x.type, a.dim, a.dresidual.data != nullptr) <= 0)
    return Status::fail(Code::unsupported, "no co-resident " + std::to_string(cluster_shape_for(a.x.type).ctas) + "-CTA cluster with these stages on this device");
  return Status::success();
}

template <Mutant M>
inline Status staged_cluster_launch(const BackwardArgs& a) {
  const bool residual = a.dresidual.data != nullptr;
  const std::int64_t q = staged_cluster_count<M>(a.x.type, a.dim, residual, a.rows);
  if (q <= 0) return no_programs();
  return run_stages<M>(a, q, [&](auto tt, auto gt, const auto& p, std::int64_t clusters, cudaStream_t st, bool) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    const StagedClusterConfig c = staged_cluster_config(a.x.type, a.dim, residual);
    auto go = [&](auto kernel) {
      // A refusal here makes the launch fail, and launch_status() report it.
      (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(c.smem));
      ClusterLaunch l(c, clusters, st);
      (void)launch_kernel_ex(l.cfg, kernel, p, c.stages, static_cast<int>(c.slice));
    };
    if (residual) {
      go(staged_cluster_kernel<T, G, true, M>());
    } else {
      go(staged_cluster_kernel<T, G, false, M>());
    }
  });
}

}  // namespace rmsnorm::cuda::bwd
