// bwd.staged_rows.vec8: the backward for aligned rows of 512 < D ≤ 16384 (fp32: ≤ 8192) with
// the rows in flight held in shared memory instead of registers.
//
// Why. The register-resident kernel (backward_fused_kernel) can keep only one row ahead of the
// one it works on: its registers bound the bytes in flight per SM (about 32 KB at D = 4096), and
// a backward streams 6 bytes per element against that latency (measured on the H200: 0.52-0.72
// of the same-run copy for D = 2048-8192). Here each thread copies its own chunks of the next
// S − 1 rows straight into shared memory with cp.async (16-byte asynchronous copies, sm_80 and
// later: a variant of its own, as issue #3 asks for anything beyond plain loads), S stages of
// x, dy (and the incoming residual gradient) per block, S chosen from D so that two blocks fit
// an SM: ~100 KB of loads in flight per SM whatever D is.
//
// Ownership. Thread t copies chunk c = t + k·threads (k < K) of every tensor of a row into its
// own slots and is the only one to read them back, after cp.async.wait_group has retired its own
// copies; so the stages need no barrier, and a stage is refilled only by the thread that read it
// (its reads are done: they are ordinary shared loads that precede the refill in program order).
// The one barrier per row is the block reduction's, on alternating buffers as in the fused kernel.
//
// Maths and order: those of backward_kernels.cuh (ĝ = dy·w, x̂ = x·r, s chained per thread in
// chunk then element order, block butterfly, c = s / D, dx = r·(ĝ − x̂c) [+ dres]; dg partials in
// registers, one row of the workspace per program). Declared shape: K·8 elements per thread
// (at most D), tree depth 5 + ceil_log2(threads / 32). Chunks past D are zero-filled by the copy
// itself (src-size 0 or the tail's bytes), so nothing past a row's last element is read.
#pragma once

#include "async_copy.cuh"
#include "backward_launch.cuh"

namespace rmsnorm::cuda::bwd {

inline constexpr std::int64_t kStagedMinDim = 513;        // up to 512 a warp per row does better
inline constexpr std::int64_t kStagedMaxDim16 = 16384;
inline constexpr std::int64_t kStagedMaxDim32 = 8192;
inline constexpr int kStagedMaxStages = kMaxCopyStages;
inline constexpr int kStagedMaxThreads = 512;
inline constexpr std::size_t kStagedSmemPerBlock = 110 * 1024;  // two blocks in an SM's 228 KB

// Threads and chunks per thread, from D alone (the accumulation shape is a function of D).
struct StagedConfig {
  int threads = 0;
  int chunks = 1;  // K
};
inline StagedConfig staged_config(std::int64_t dim) {
  const std::int64_t nc = chunks_of(dim);
  const int k = nc <= 512 ? 1 : (nc <= 1024 ? 2 : 4);
  return {static_cast<int>(ceil_div(ceil_div(nc, k), kWarp) * kWarp), k};
}
inline AccumShape staged_row_shape(std::int64_t dim) {
  const StagedConfig c = staged_config(dim);
  AccumShape s;
  s.per_thread = std::min<std::int64_t>(std::int64_t{c.chunks} * kChunk, dim);
  s.tree_depth = 5 + ceil_log2(c.threads / kWarp);
  return s;
}
// Bytes of one stage: every staged tensor's chunks plus one rstd slot per thread.
inline std::size_t staged_stage_bytes(const StagedConfig& c, std::size_t elem_bytes, bool residual) {
  const std::size_t tensors = residual ? 3 : 2;
  return tensors * static_cast<std::size_t>(c.threads) * c.chunks * kChunk * elem_bytes +
         static_cast<std::size_t>(c.threads) * sizeof(float);
}
inline int staged_stages(const StagedConfig& c, std::size_t elem_bytes, bool residual) {
  const std::size_t fit = kStagedSmemPerBlock / staged_stage_bytes(c, elem_bytes, residual);
  return static_cast<int>(std::clamp<std::size_t>(fit, 2, kStagedMaxStages));
}

// K ≤ 2: at most 64 registers, two blocks of 512 threads per SM; K = 4 (D > 8192): one.
template <typename T, typename G, int K, bool kResidual>
__global__ void __launch_bounds__(kStagedMaxThreads, K <= 2 ? 2 : 1) backward_staged_kernel(Params<T, G> p, int stages) {
  constexpr Mutant M = Mutant::none;
  constexpr int kTensors = kResidual ? 3 : 2;
  extern __shared__ __align__(16) unsigned char stage_mem[];
  __shared__ float reduce_buf[2][kWarp];

  const int nthreads = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t dim = p.dim;
  const std::int64_t nchunks = (dim + kChunk - 1) / kChunk;
  const bool want_dg = p.partials != nullptr;
  const float dim_f = static_cast<float>(dim);  // exact for D ≤ 2^24
  const std::int64_t first = blockIdx.x, step = gridDim.x;

  // Stage s: [kTensors][K][threads] chunks, then [threads] rstd values.
  const std::size_t chunk_bytes = static_cast<std::size_t>(kTensors) * K * nthreads * sizeof(Chunk<T>);
  const std::size_t stage_bytes = chunk_bytes + static_cast<std::size_t>(nthreads) * sizeof(float);
  auto chunk_slot = [&](int s, int q, int k) {
    return reinterpret_cast<Chunk<T>*>(stage_mem + s * stage_bytes) + (q * K + k) * nthreads + t;
  };
  auto rstd_slot = [&](int s) { return reinterpret_cast<float*>(stage_mem + s * stage_bytes + chunk_bytes) + t; };

  // One commit group per row of this program (empty past the last row, so the count stays uniform).
  auto issue = [&](std::int64_t i, int s) {
    const std::int64_t row = first + i * step;
    if (row < p.rows) {
      const T* xr = row_start<M>(p.x, row, p.sx, dim);
      const T* dyr = row_start<M>(p.dy, row, p.sdy, dim);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const std::int64_t c = t + static_cast<std::int64_t>(k) * nthreads;
        stage_chunk(chunk_slot(s, 0, k), xr, c, dim);
        stage_chunk(chunk_slot(s, 1, k), dyr, c, dim);
        if constexpr (kResidual) stage_chunk(chunk_slot(s, 2, k), row_start<M>(p.dres, row, p.sdres, dim), c, dim);
      }
      copy4_async(rstd_slot(s), p.rstd + row);
    }
    commit_copies();
  };

  // The weights of this thread's columns, once (they do not change from row to row).
  float w[K][kChunk];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::int64_t c = t + static_cast<std::int64_t>(k) * nthreads;
    if (c < nchunks) {
      chunk_weights<T, G, true, M>(p, 0, c, w[k]);
    } else {
#pragma unroll
      for (int j = 0; j < kChunk; ++j) w[k][j] = 0.0f;
    }
  }
  float acc[K][kChunk];  // dg partial of this thread's columns
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int j = 0; j < kChunk; ++j) acc[k][j] = -0.0f;  // -0 is the exact identity of +

  const std::int64_t my_rows = first < p.rows ? (p.rows - first + step - 1) / step : 0;
  for (int s = 0; s < stages - 1; ++s) issue(s, s);
  int parity = 0;
  for (std::int64_t i = 0; i < my_rows; ++i) {
    issue(i + stages - 1, static_cast<int>((i + stages - 1) % stages));
    wait_copies(stages - 1);  // this thread's copies of row i have landed
    const int s = static_cast<int>(i % stages);
    const std::int64_t row = first + i * step;
    const float r = *rstd_slot(s);

    float sum = -0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = t + static_cast<std::int64_t>(k) * nthreads;
      if (c < nchunks) {
        const Chunk<T> xc = *chunk_slot(s, 0, k), dyc = *chunk_slot(s, 1, k);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) sum = fmaf(chunk_get(dyc, j) * w[k][j], chunk_get(xc, j) * r, sum);
      }
    }
    const float cmean = __fdiv_rn(block_sum(sum, reduce_buf[parity]), dim_f);
    parity ^= 1;

    T* dxrow = row_start<M>(p.dx, row, p.sdx, dim);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = t + static_cast<std::int64_t>(k) * nthreads;
      if (c < nchunks) {
        const Chunk<T> xc = *chunk_slot(s, 0, k), dyc = *chunk_slot(s, 1, k);
        float out[kChunk];
#pragma unroll
        for (int j = 0; j < kChunk; ++j) {
          const float dyv = chunk_get(dyc, j);
          const float xh = chunk_get(xc, j) * r;
          out[j] = fmaf(-xh, cmean, dyv * w[k][j]) * r;
          acc[k][j] = fmaf(dyv, xh, acc[k][j]);
        }
        if constexpr (kResidual) {
          const Chunk<T> rc = *chunk_slot(s, 2, k);
#pragma unroll
          for (int j = 0; j < kChunk; ++j) out[j] += chunk_get(rc, j);
        }
        store_row_chunk<T, true>(dxrow, c, dim, out);
      }
    }
  }
  wait_copies(0);  // no copy may outlive the block (the trailing groups are empty)

  if (!want_dg) return;
  float* part = p.partials + static_cast<std::int64_t>(blockIdx.x) * dim;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::int64_t c = t + static_cast<std::int64_t>(k) * nthreads;
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (c * kChunk + j < dim) part[c * kChunk + j] = acc[k][j];
  }
}

// Stage 1 of the staged path (stage 2 and everything around it: launch<M>() in backward_launch.cuh).
template <typename T, typename G>
inline void launch_staged(const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  const StagedConfig c = staged_config(p.dim);
  const bool residual = p.dres != nullptr;
  const int stages = staged_stages(c, sizeof(T), residual);
  const std::size_t smem = static_cast<std::size_t>(stages) * staged_stage_bytes(c, sizeof(T), residual);
  auto go = [&](auto kernel) {
    // A refusal here makes the launch below fail, and launch_status() report it.
    (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    kernel<<<static_cast<unsigned>(grid), c.threads, smem, st>>>(p, stages);
  };
  auto with_k = [&](auto res) {
    constexpr bool kRes = decltype(res)::value;
    if (c.chunks == 1) return go(backward_staged_kernel<T, G, 1, kRes>);
    if (c.chunks == 2) return go(backward_staged_kernel<T, G, 2, kRes>);
    if constexpr (sizeof(T) == 2) go(backward_staged_kernel<T, G, 4, kRes>);
  };
  if (residual) {
    with_k(std::true_type{});
  } else {
    with_k(std::false_type{});
  }
}

inline Status staged_can_implement(const BackwardArgs& a) {
  using Code = Status::Code;
  Status s = can_implement(a, /*mutant=*/false);
  if (!s.ok()) return s;
  if (a.dim < kStagedMinDim) return Status::fail(Code::unsupported, "D <= 512 (a warp per row: bwd.persistent_rows)");
  const std::int64_t max_dim = size_of(a.x.type) == 2 ? kStagedMaxDim16 : kStagedMaxDim32;
  if (a.dim > max_dim)
    return Status::fail(Code::unsupported, "D > " + std::to_string(max_dim) + " for this type (the stages would not fit shared memory)");
  if (a.rows > 0 && !all_aligned(a))
    return Status::fail(Code::misaligned, "16-byte asynchronous copies need every row and g 16-byte aligned");
  return Status::success();
}

inline Status staged_launch(const BackwardArgs& a) {
  const StagedConfig sc = staged_config(a.dim);
  const Config cfg{sc.threads, 1, sc.chunks, false};  // one row stream per program: grid = min(P, R)
  const std::int64_t grid = programs_for(cfg, a.rows);
  if (grid <= 0) return no_programs();
  return run_stages<Mutant::none>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool) {
    launch_staged<typename decltype(tt)::type, typename decltype(gt)::type>(p, n, st);
  });
}

}  // namespace rmsnorm::cuda::bwd
