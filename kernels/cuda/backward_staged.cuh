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
#include "cluster_reduce.cuh"

namespace rmsnorm::cuda::bwd {

inline constexpr std::int64_t kStagedMinDim = 513;        // up to 512 a warp per row does better
inline constexpr std::int64_t kStagedMaxDim16 = 16384;
inline constexpr std::int64_t kStagedMaxDim32 = 8192;
inline constexpr int kStagedMaxStages = kMaxCopyStages;
inline constexpr int kStagedMaxThreads = 512;
inline constexpr std::size_t kStagedSmemPerBlock = 110 * 1024;  // two blocks in an SM's 228 KB
inline constexpr int kStagedMaxStreams = 6;    // bwd.staged_streams: row streams per block
inline constexpr int kStreamsMaxThreads = 768;  // bwd.staged_streams: one block per SM, <= 85 registers
inline constexpr int kStreamsWideThreads = 512; // bwd.staged_streams at K = 4: 2 streams, <= 128 registers

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
// A row over `threads` threads of `chunks` chunks each: chains of at most chunks·8 elements (and
// at most D), then the warp and cross-warp butterflies.
inline AccumShape chunked_row_shape(int threads, int chunks, std::int64_t dim) {
  AccumShape s;
  s.per_thread = std::min<std::int64_t>(std::int64_t{chunks} * kChunk, dim);
  s.tree_depth = 5 + ceil_log2(threads / kWarp);
  return s;
}
inline AccumShape staged_row_shape(std::int64_t dim) {
  const StagedConfig c = staged_config(dim);
  return chunked_row_shape(c.threads, c.chunks, dim);
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
// ROWS > 1 (bwd.staged_streams.vec8, below): the block is ROWS groups of blockDim.x / ROWS
// threads, each a row stream of its own (rows first + (i·ROWS + g)·step). The streams go in
// step: every thread runs as many iterations as stream 0 has rows (the most; the others have as
// many or one fewer), an iteration past its own rows only keeps the block's barrier; one
// block-wide barrier per iteration for all the streams' reductions (groups_sum). The groups' dg
// partials meet in shared memory at the end, added in group order.
// CL > 1 (bwd.staged_cluster.vec8, backward_cluster.cuh): one row stream per program, the
// program a cluster of CL CTAs, each CTA a fixed column slice of `slice_chunks` chunks of every
// row (its stages, weights and dg sums those of its slice only); the CTAs' block sums meet in
// cluster_sum (cluster_reduce.cuh), so all of them agree bitwise on c. Its block shapes are
// those of bwd.cluster_rows (kCluster16, kCluster32): 512 threads, K = 2, two CTAs per SM for
// 16-bit rows; 1024 threads, K = 1, one CTA per SM for fp32 rows.
//
// Addresses (session 12: the loop was mostly address arithmetic, 1.11 warp instructions per
// element at 8192 x 4096 bf16, 2.71 issued per cycle and SM, ncu): what depends only on the
// thread's columns is computed once before the loop (each chunk's byte offset in a row and in
// a stage, and how many of its bytes lie inside the row), a row's base addresses once per row,
// the stage and the row advance by additions, and the copies of a full chunk go through
// copy16_async_at (integer addresses).
template <typename T, int K, int ROWS, int CL>
inline constexpr int staged_block_limit =
    CL > 1 ? (sizeof(T) == 2 ? 512 : 1024) : ROWS == 1 ? kStagedMaxThreads : K == 4 ? kStreamsWideThreads : kStreamsMaxThreads;
template <typename T, int K, int ROWS, int CL>
inline constexpr int staged_block_min = CL > 1 ? (sizeof(T) == 2 ? 2 : 1) : (ROWS == 1 && K <= 2) ? 2 : 1;

template <typename T, typename G, int K, bool kResidual, int ROWS = 1, int CL = 1>
__global__ void __launch_bounds__(staged_block_limit<T, K, ROWS, CL>, staged_block_min<T, K, ROWS, CL>)
    backward_staged_kernel(Params<T, G> p, int stages, int slice_chunks) {
  static_assert(ROWS >= 1 && ROWS <= kStagedMaxStreams, "row streams per block");
  static_assert(CL == 1 || (ROWS == 1 && (CL == 4 || CL == 8)), "a cluster runs one row stream of 4 or 8 CTAs");
  constexpr Mutant M = Mutant::none;
  allow_dependent_launch();  // stage 2 may be scheduled now; it waits for this grid to finish
  constexpr int kTensors = kResidual ? 3 : 2;
  constexpr int kChunkBytes = static_cast<int>(sizeof(Chunk<T>));
  constexpr int kWords = Chunk<T>::kWords;
  extern __shared__ __align__(16) unsigned char stage_mem[];
  __shared__ float reduce_buf[2][ROWS][kWarp];
  __shared__ float cluster_slots[2][CL];

  const int nthreads = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int group_threads = nthreads / ROWS;  // threads of one row stream
  const int g = ROWS == 1 ? 0 : t / group_threads;
  const int gt = ROWS == 1 ? t : t % group_threads;
  const std::int64_t dim = p.dim;
  const int nchunks = static_cast<int>((dim + kChunk - 1) / kChunk);  // ≤ 8192 (D ≤ 65536)
  const bool want_dg = p.partials != nullptr;
  const float dim_f = static_cast<float>(dim);  // exact for D ≤ 2^24
  int rank = 0;
  std::int64_t first = blockIdx.x, step = gridDim.x;
  if constexpr (CL > 1) {
    rank = static_cast<int>(cooperative_groups::this_cluster().block_rank());
    first = blockIdx.x / CL;
    step = gridDim.x / CL;
  } else {
    (void)slice_chunks;
  }
  // This thread's chunks: c = slice0 + gt + k·group_threads, those below `limit` its own.
  const int slice0 = CL > 1 ? rank * slice_chunks : 0;
  const int limit = CL > 1 ? min(nchunks, slice0 + slice_chunks) : nchunks;

  // Stage s: [kTensors][K][threads] chunks, then [threads] rstd values.
  const int chunk_bytes = kTensors * K * nthreads * kChunkBytes;
  const int stage_bytes = chunk_bytes + nthreads * static_cast<int>(sizeof(float));
  const int tensor_bytes = K * nthreads * kChunkBytes;  // one tensor's slots in a stage
  const std::uint32_t stage0 = shared_address(stage_mem);
  // Per chunk k: its byte offset in a row, its valid bytes there (0: not this thread's; the
  // row's last chunk may be partial), its slot's byte offset in a stage.
  std::uint32_t row_off[K];
  int valid[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = slice0 + gt + k * group_threads;
    const std::int64_t left = c < limit ? dim - std::int64_t{c} * kChunk : 0;
    valid[k] = static_cast<int>(left >= kChunk ? kChunk : left) * static_cast<int>(sizeof(T));
    row_off[k] = static_cast<std::uint32_t>(c) * kChunkBytes;
  }
  auto slot_off = [&](int q, int k) { return q * tensor_bytes + (k * nthreads + t) * kChunkBytes; };
  auto chunk_at = [&](int s, int q, int k) {
    return *reinterpret_cast<const Chunk<T>*>(stage_mem + s * stage_bytes + slot_off(q, k));
  };

  // One commit group per row of this stream (empty past its last row, so the count stays uniform).
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
  for (int k = 0; k < K; ++k) {
    if (valid[k] > 0) {
      chunk_weights<T, G, true, M>(p, 0, slice0 + gt + k * group_threads, w[k]);
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

  // Row i of this thread's stream: stream_first + i·stream_step.
  const std::int64_t stream_first = first + g * step, stream_step = ROWS * step;
  const std::int64_t my_rows = stream_first < p.rows ? (p.rows - stream_first + stream_step - 1) / stream_step : 0;
  // Iterations: stream 0's rows (the most of any stream); ROWS == 1: the thread's own.
  const std::int64_t iterations = ROWS == 1 ? my_rows : (first < p.rows ? (p.rows - first + stream_step - 1) / stream_step : 0);
  if constexpr (CL > 1) cooperative_groups::this_cluster().sync();  // DSMEM only once every CTA runs
  std::int64_t ahead_row = stream_first;  // the next row to issue, into stage ahead_s
  int ahead_s = 0;
  for (int s = 0; s < stages - 1; ++s) {
    issue(ahead_row, ahead_s);
    ahead_row += stream_step;
    ++ahead_s;
  }
  // Row pieces on a stage: its rstd, its partial Σ ĝ·x̂ over this thread's chunks, its dx (and
  // the dg sums).
  auto rstd_at = [&](int s) {
    return *reinterpret_cast<const float*>(stage_mem + s * stage_bytes + chunk_bytes + t * static_cast<int>(sizeof(float)));
  };
  auto partial_of = [&](int s, float r, bool mine) {
    float sum = -0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (mine && valid[k] > 0) {
        const Chunk<T> xc = chunk_at(s, 0, k), dyc = chunk_at(s, 1, k);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) sum = fmaf(chunk_get(dyc, j) * w[k][j], chunk_get(xc, j) * r, sum);
      }
    }
    return sum;
  };
  auto write_dx = [&](int s, float r, float cmean, std::int64_t row) {
    // A pointer, not an integer: derived from the kernel's parameter, nvcc keeps it in the global
    // space (STG); from an integer the stores became generic (ST), and the lean kernel's first
    // H200 run was 5-9 % slower at 32768 x 2048-4096 (session 12, call 2).
    unsigned char* const dxrow = reinterpret_cast<unsigned char*>(row_start<M>(p.dx, row, p.sdx, dim));
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (valid[k] > 0) {
        const Chunk<T> xc = chunk_at(s, 0, k), dyc = chunk_at(s, 1, k);
        float out[kChunk];
#pragma unroll
        for (int j = 0; j < kChunk; ++j) {
          const float dyv = chunk_get(dyc, j);
          const float xh = chunk_get(xc, j) * r;
          out[j] = fmaf(-xh, cmean, dyv * w[k][j]) * r;
          acc[k][j] = fmaf(dyv, xh, acc[k][j]);
        }
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

  int parity = 0, s = 0;  // s: the stage of row i
  std::int64_t row = stream_first;
  if constexpr (CL == 1) {
    for (std::int64_t i = 0; i < iterations; ++i, row += stream_step, s = s + 1 == stages ? 0 : s + 1) {
      issue(ahead_row, ahead_s);
      ahead_row += stream_step;
      ahead_s = ahead_s + 1 == stages ? 0 : ahead_s + 1;
      wait_copies(stages - 1);  // this thread's copies of row i have landed
      const bool mine = ROWS == 1 || i < my_rows;  // past its stream's rows: the barrier only
      const float r = mine ? rstd_at(s) : 0.0f;
      const float sum = partial_of(s, r, mine);
      const float total = ROWS == 1 ? block_sum(sum, reduce_buf[parity][0]) : groups_sum(sum, reduce_buf[parity][g], gt, group_threads);
      const float cmean = __fdiv_rn(total, dim_f);
      parity ^= 1;
      if (!mine) continue;
      write_dx(s, r, cmean, row);
    }
  } else {
    // The cluster's rows, skewed by one: row i + 1 is reduced in the CTA (its block sum) while
    // the cluster barrier of row i completes; then row i's c, row i + 1's slot writes and
    // arrive, and row i's dx. A CTA holds rows i and i + 1 in their stages, rows i + 2 …
    // i + stages − 1 in flight, and refills row i's stage once its dx is written: all stages are
    // issued up front, and before row i + 1's reduction stages + i groups are committed, so at
    // most stages − 2 may still be pending. Slots: row i + 1's writes into the other CTAs
    // (parity of row i − 1) come after this CTA's wait for row i, which no CTA passes before
    // every CTA has arrived for row i, i.e. read its row i − 1 slots; and this CTA reads its row
    // i slots before it arrives for row i + 1, after which row i + 2 may write them.
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    issue(ahead_row, ahead_s);  // the last stage: all of them in flight
    ahead_row += stream_step;
    if (iterations > 0) {
      wait_copies(stages - 1);  // row 0
      cluster_put<CL>(cluster, cluster_slots[0], rank, t, block_sum(partial_of(0, rstd_at(0), true), reduce_buf[0][0]));
      cluster_arrive();
    }
    for (std::int64_t i = 0; i < iterations; ++i, row += stream_step) {
      const int next = s + 1 == stages ? 0 : s + 1;
      const bool more = i + 1 < iterations;  // the same in every CTA of the cluster
      float part_next = 0.0f;
      if (more) {
        wait_copies(stages - 2);  // row i + 1
        part_next = block_sum(partial_of(next, rstd_at(next), true), reduce_buf[parity ^ 1][0]);
      }
      cluster_wait();  // row i's partials, from every CTA
      const float cmean = __fdiv_rn(cluster_tree_sum<CL>(cluster_slots[parity]), dim_f);
      parity ^= 1;
      if (more) {
        cluster_put<CL>(cluster, cluster_slots[parity], rank, t, part_next);
        cluster_arrive();
      }
      write_dx(s, rstd_at(s), cmean, row);
      issue(ahead_row, s);  // row i + stages into row i's stage
      ahead_row += stream_step;
      s = next;
    }
  }
  wait_copies(0);  // no copy may outlive the block (the trailing groups are empty)
  // No CTA may exit while another can still write into its slots (remote shared memory must
  // outlive its last access): one more cluster barrier after the last row.
  if constexpr (CL > 1) cooperative_groups::this_cluster().sync();

  if (!want_dg) return;
  // ROWS > 1: the streams meet in the stages' shared memory (ROWS·D floats: streams_smem()
  // makes room for them) once every copy has retired and every stage has been read.
  if constexpr (ROWS > 1) __syncthreads();
  // A cluster's CTA writes its slice's columns only (the bound: the slice's end, at most D).
  const std::int64_t columns = CL > 1 ? std::min<std::int64_t>(dim, std::int64_t{limit} * kChunk) : dim;
  write_dg_partial<K, ROWS>(p.partials + first * dim, acc, slice0 + gt, group_threads, columns, g,
                            reinterpret_cast<float*>(stage_mem), t, nthreads);
}

// bwd.staged_streams.vec8 (aligned, 512 < D ≤ 8192, fp32 ≤ 4096): the staged kernel with
// ROWS ∈ {2, 3, 6} row streams in one block per SM.
//
// Why. On the H200 bwd.staged_rows issued 0.67 warp instructions per cycle and scheduler with a
// third of the cycles idle, at 0.79 of the copy (32768 x 4096 bf16, ncu): about 40 instructions per
// element, because a row of 4096 took 512 threads of one chunk each, and a row's fixed work (its
// copies, the reduction and its barrier, the division, the address arithmetic) was paid per
// 8 elements; and an SM worked on two rows at a time (two blocks). Here a thread takes K = 2 chunks
// from D = 2048 on (a row of 4096: 256 threads), and one block of up to 768 threads per SM holds
// ROWS streams of rows (3 of 256 threads, or 6 of up to 128) in step, one block-wide barrier per
// iteration for all their reductions, at most 85 registers a thread. P = the SM count programs (fewer dg partial rows than
// bwd.staged_rows' 2 per SM); the streams of a program add their dg partials in shared memory at
// the end, in stream order. Stages: as many as fit 200 KB, 2 to 8.
// Rows of 4096 < D <= 8192 (16-bit; fp32 rows would not fit two stages): K = 4, two streams of up
// to 256 threads (K = 4 holds 64 fp32 of weights and dg sums: more than 85 registers).
inline constexpr std::int64_t kStreamsMaxDim = 8192;
inline constexpr std::int64_t kStreamsMaxDim32 = 4096;
inline constexpr std::size_t kStreamsSmemPerBlock = 200 * 1024;
struct StreamsConfig {
  int threads = 0;  // per stream
  int chunks = 1;   // K
  int rows = 3;     // streams per block (ROWS)
  int block() const { return threads * rows; }
};
// From D alone: K = 1 below 256 chunks, 2 to 512, else 4; threads a multiple of 32; 6 streams of
// <= 128 threads, else 3 of <= 256, at K = 4 two.
inline StreamsConfig streams_config(std::int64_t dim) {
  const std::int64_t nc = chunks_of(dim);
  StreamsConfig c;
  c.chunks = nc < 256 ? 1 : nc <= 512 ? 2 : 4;
  c.threads = static_cast<int>(ceil_div(ceil_div(nc, c.chunks), kWarp) * kWarp);
  c.rows = c.chunks == 4 ? 2 : c.threads <= 128 ? 6 : 3;
  return c;
}
inline AccumShape streams_row_shape(std::int64_t dim) {
  const StreamsConfig c = streams_config(dim);
  return chunked_row_shape(c.threads, c.chunks, dim);
}
inline StagedConfig streams_block(const StreamsConfig& c) { return {c.block(), c.chunks}; }
inline int streams_stages(const StreamsConfig& c, std::size_t elem_bytes, bool residual) {
  const std::size_t fit = kStreamsSmemPerBlock / staged_stage_bytes(streams_block(c), elem_bytes, residual);
  return static_cast<int>(std::clamp<std::size_t>(fit, 2, kStagedMaxStages));
}
// Dynamic shared memory: the stages, and at the end the streams' dg partials (ROWS·D floats).
inline std::size_t streams_smem(const StreamsConfig& c, std::int64_t dim, std::size_t elem_bytes, bool residual) {
  const std::size_t stages = static_cast<std::size_t>(streams_stages(c, elem_bytes, residual)) *
                             staged_stage_bytes(streams_block(c), elem_bytes, residual);
  return std::max(stages, static_cast<std::size_t>(c.rows) * static_cast<std::size_t>(dim) * sizeof(float));
}
// Whether the streams take rows of this width and element size: fp32 rows only to D = 4096 (the
// K = 4 form of wider rows has no fp32 instance: its 64 fp32 weights and dg sums exceed the
// registers), and only where two stages fit: fp32 rows with the fused add (three tensors of
// 32-byte chunks) exceed the block's opt-in shared memory beyond D = 2048 or so. Those rows go
// to bwd.staged_rows.
// (The width limit was missing until session 6: fp32 rows of 4096 < D with two stages that fit,
// no fused add, were accepted and then nothing launched; the fuzzer found it, dx left as it was.
// corpora/regressions/backward_streams_f32_wide_no_launch.case.)
inline bool streams_fits(std::int64_t dim, std::size_t elem_bytes, bool residual) {
  if (elem_bytes == 4 && dim > kStreamsMaxDim32) return false;
  return streams_smem(streams_config(dim), dim, elem_bytes, residual) <= kStreamsSmemPerBlock + 16 * 1024;
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
    kernel<<<static_cast<unsigned>(grid), c.threads, smem, st>>>(p, stages, 0);
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

template <typename T, typename G>
inline void launch_streams(const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  const StreamsConfig c = streams_config(p.dim);
  const bool residual = p.dres != nullptr;
  const int stages = streams_stages(c, sizeof(T), residual);
  const std::size_t smem = streams_smem(c, p.dim, sizeof(T), residual);
  auto go = [&](auto kernel) {
    (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    kernel<<<static_cast<unsigned>(grid), c.block(), smem, st>>>(p, stages, 0);
  };
  auto with_shape = [&](auto res) {
    constexpr bool kRes = decltype(res)::value;
    switch (c.chunks * 8 + c.rows) {
      case 1 * 8 + 3: return go(backward_staged_kernel<T, G, 1, kRes, 3>);
      case 1 * 8 + 6: return go(backward_staged_kernel<T, G, 1, kRes, 6>);
      case 2 * 8 + 6: return go(backward_staged_kernel<T, G, 2, kRes, 6>);
      case 4 * 8 + 2:
        if constexpr (sizeof(T) == 2) return go(backward_staged_kernel<T, G, 4, kRes, 2>);
        return;  // unreachable: fp32 rows beyond D = 4096 are declined by streams_fits (test_launch_configs)
      default: return go(backward_staged_kernel<T, G, 2, kRes, 3>);
    }
  };
  if (residual) {
    with_shape(std::true_type{});
  } else {
    with_shape(std::false_type{});
  }
}

inline Status streams_can_implement(const BackwardArgs& a) {
  using Code = Status::Code;
  Status s = can_implement(a, /*mutant=*/false);
  if (!s.ok()) return s;
  if (a.dim < kStagedMinDim) return Status::fail(Code::unsupported, "D <= 512 (a warp per row: bwd.persistent_rows)");
  if (a.dim > kStreamsMaxDim) return Status::fail(Code::unsupported, "D > 8192 (a stream's row would not fit its 256 threads: bwd.staged_rows)");
  if (a.rows > 0 && !streams_fits(a.dim, size_of(a.x.type), a.dresidual.data != nullptr))
    return Status::fail(Code::unsupported, "the stages of this row type would not fit shared memory (bwd.staged_rows)");
  if (a.rows > 0 && !all_aligned(a))
    return Status::fail(Code::misaligned, "16-byte asynchronous copies need every row and g 16-byte aligned");
  return Status::success();
}

// The dispatch hint of bwd.staged_streams, from its time against bwd.staged_rows on the H200
// (session 5, the lockstep streams, bench --variant 'bwd.staged*'), 16-bit rows:
//   D <= 4096 (K <= 2, call A): from R = 512 0.76-0.98x (backward 32768 x 2048 0.76x: 0.92 of
//     the copy), at R = 1-64 1.02-1.39x (few programs have a row, and each carries a
//     768-thread block's set-up);
//   4096 < D <= 8192 (K = 4, two streams, call B): 0.66-0.98x at D = 6144 and 8192 from R = 512
//     (backward 512 x 8192 0.66x), at D = 5120 0.84-1.02x (backward 32768 x 5120 1.02x).
// fp32 rows mixed (call A: D = 2048 1.07-1.17x at R >= 512, D = 4096 0.86x at R = 512 but 1.09x
// at 32768). Below kStreamsMinRows, and for fp32 rows, the dispatcher goes on to
// bwd.staged_rows.
inline constexpr std::int64_t kStreamsMinRows = 512;
inline bool streams_preferred(const BackwardArgs& a) {
  return size_of(a.x.type) == 2 && a.rows >= kStreamsMinRows;
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

// Programs: P = 2·SMs, except where one block fills an SM (K = 4, 16-bit rows of D > 8192: 120
// registers x 512 threads, and 135 KB of stages). There P = SMs: with 2·SMs the grid ran as two
// waves, each paying the pipeline's fill and drain, and wrote twice the dg partials (264 rows of
// D fp32, 17 MB at D = 16384 against 403 MB of rows at R = 4096; ncu at 4096 x 16384, session
// 10: DRAM 59.5 %). staged_dg_shape declares the chains of both.
inline bool staged_one_per_sm(const StagedConfig& c) { return c.chunks > 2; }
inline AccumShape staged_dg_shape(std::int64_t rows) {
  const AccumShape two = dg_shape_of(rows, {});
  const AccumShape one = dg_shape_of(rows, {}, /*programs_per_sm=*/1);
  return {std::max(two.per_thread, one.per_thread), std::max(two.tree_depth, one.tree_depth)};
}

inline Status staged_launch(const BackwardArgs& a) {
  const StagedConfig sc = staged_config(a.dim);
  const Config cfg{sc.threads, 1, sc.chunks, false};  // one row stream per program: grid = min(P, R)
  const std::int64_t grid = staged_one_per_sm(sc) ? one_per_sm_grid(a.rows, 1) : programs_for(cfg, a.rows);
  if (grid <= 0) return no_programs();
  return run_stages<Mutant::none>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool) {
    launch_staged<typename decltype(tt)::type, typename decltype(gt)::type>(p, n, st);
  });
}

inline Status streams_launch(const BackwardArgs& a) {
  const StreamsConfig sc = streams_config(a.dim);
  // One program per SM, ROWS streams each.
  const std::int64_t grid = one_per_sm_grid(a.rows, sc.rows);
  if (grid <= 0) return no_programs();
  return run_stages<Mutant::none>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool) {
    launch_streams<typename decltype(tt)::type, typename decltype(gt)::type>(p, n, st);
  });
}

}  // namespace rmsnorm::cuda::bwd
