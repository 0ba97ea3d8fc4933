// bwd.staged_rows: the backward for aligned rows of 512 < D ≤ 16384 (fp32: ≤ 8192) with
// the rows in flight held in shared memory instead of registers.
//
// Why. The register-resident kernel (backward_fused_kernel) can keep only one row ahead of the
// one it works on: its registers bound the bytes in flight per SM (about 32 KB at D = 4096), and
// a backward streams 6 bytes per element against that latency (measured on the H200: 0.52-0.72
// of the same-run copy for D = 2048-8192). Here each thread copies its own chunks of the next
// S − 1 rows straight into shared memory with cp.async (16-byte asynchronous copies, sm_80 and
// later: a variant of its own, as is every path beyond plain loads), S stages of
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
// ROWS > 1 (bwd.staged_streams, below): the block is ROWS groups of blockDim.x / ROWS
// threads, each a row stream of its own (rows first + (i·ROWS + g)·step). The streams go in
// step: every thread runs as many iterations as stream 0 has rows (the most; the others have as
// many or one fewer), an iteration past its own rows only keeps the block's barrier; one
// block-wide barrier per iteration for all the streams' reductions (groups_sum). The groups' dg
// partials meet in shared memory at the end, added in group order.
// Mutants (M ≠ none): M4 (cmean_of), M5 (chunk_dx), M8 (row_start).
template <typename T, typename G, int K, bool kResidual, int ROWS = 1, Mutant M = Mutant::none>
__global__ void __launch_bounds__(ROWS == 1 ? kStagedMaxThreads : K == 4 ? kStreamsWideThreads : kStreamsMaxThreads,
                                  (ROWS == 1 && K <= 2) ? 2 : 1)
    backward_staged_kernel(Params<T, G> p, int stages) {
  static_assert(ROWS >= 1 && ROWS <= kStagedMaxStreams, "row streams per block");
  begin_dependent_grid();  // the grid ahead has finished; stage 2 may now be scheduled
  constexpr int kTensors = kResidual ? 3 : 2;
  extern __shared__ __align__(16) unsigned char stage_mem[];
  __shared__ float reduce_buf[2][ROWS][kWarp];

  const int nthreads = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int group_threads = nthreads / ROWS;  // threads of one row stream
  const int g = ROWS == 1 ? 0 : t / group_threads;
  const int gt = ROWS == 1 ? t : t % group_threads;
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

  // Row i of this thread's stream.
  const std::int64_t stream_first = first + g * step, stream_step = ROWS * step;
  auto row_of = [&](std::int64_t i) { return stream_first + i * stream_step; };
  // One commit group per row of this stream (empty past its last row, so the count stays uniform).
  auto issue = [&](std::int64_t i, int s) {
    const std::int64_t row = row_of(i);
    if (row < p.rows) {
      const T* xr = row_start<M>(p.x, row, p.sx, dim);
      const T* dyr = row_start<M>(p.dy, row, p.sdy, dim);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const std::int64_t c = gt + static_cast<std::int64_t>(k) * group_threads;
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
    const std::int64_t c = gt + static_cast<std::int64_t>(k) * group_threads;
    owned_chunk_weights<T, G, M>(p, c < nchunks, 0, c, w[k]);
  }
  float acc[K][kChunk];  // dg partial of this thread's columns
  start_dg_sums(acc);

  const std::int64_t my_rows = stream_first < p.rows ? (p.rows - stream_first + stream_step - 1) / stream_step : 0;
  // Iterations: stream 0's rows (the most of any stream); ROWS == 1: the thread's own.
  const std::int64_t iterations = ROWS == 1 ? my_rows : (first < p.rows ? (p.rows - first + stream_step - 1) / stream_step : 0);
  for (int s = 0; s < stages - 1; ++s) issue(s, s);
  int parity = 0;
  for (std::int64_t i = 0; i < iterations; ++i) {
    issue(i + stages - 1, static_cast<int>((i + stages - 1) % stages));
    wait_copies(stages - 1);  // this thread's copies of row i have landed
    const bool mine = ROWS == 1 || i < my_rows;  // past its stream's rows: the barrier only
    const int s = static_cast<int>(i % stages);
    const std::int64_t row = row_of(i);
    const float r = mine ? *rstd_slot(s) : 0.0f;

    float sum = -0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = gt + static_cast<std::int64_t>(k) * group_threads;
      if (mine && c < nchunks) {
        const Chunk<T> xc = *chunk_slot(s, 0, k), dyc = *chunk_slot(s, 1, k);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) sum = fmaf(chunk_get(dyc, j) * w[k][j], chunk_get(xc, j) * r, sum);
      }
    }
    const float total = ROWS == 1 ? block_sum(sum, reduce_buf[parity][0])
                                  : groups_sum(sum, reduce_buf[parity][g], gt, group_threads);
    const float cmean = cmean_of<M>(total, dim_f);
    parity ^= 1;
    if (!mine) continue;

    T* dxrow = row_start<M>(p.dx, row, p.sdx, dim);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::int64_t c = gt + static_cast<std::int64_t>(k) * group_threads;
      if (c < nchunks) {
        const Chunk<T> xc = *chunk_slot(s, 0, k), dyc = *chunk_slot(s, 1, k);
        float out[kChunk];
        chunk_dx<M>(xc, dyc, w[k], r, cmean, acc[k], out);
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
  // The dg sums pass through the stages' shared memory (write_dg_partial; ROWS rows of D floats
  // rounded up to a chunk: two stages hold them, and streams_smem() makes sure) once every copy
  // has retired and every stage has been read.
  __syncthreads();
  write_dg_partial<K, ROWS, true>(p.partials + static_cast<std::int64_t>(blockIdx.x) * dim, acc, gt, group_threads, dim, g,
                                  reinterpret_cast<float*>(stage_mem), t, nthreads);
}

// The same streams with lean addressing (bwd.staged_streams' 16-bit rows except the plain
// backward of many wide rows: streams_lean_preferred). backward_staged_kernel's loop is mostly
// address arithmetic (ncu at 8192 x 4096 bf16: 1.11 warp instructions per element, 2.71 issued
// per cycle and SM): here what depends only on a thread's columns is computed once
// (each chunk's byte offset in a row, its slot in a stage, how many of its bytes lie in the
// row), a row's base addresses once per row, the stage and the row advance by additions, and a
// full chunk's copies go through integer addresses. The arithmetic and its order are
// backward_staged_kernel's (the same chains, groups_sum, chunk_dx), so the two agree bitwise.
// dx goes through a pointer derived from the parameter: from an integer nvcc makes the stores
// generic (ST, not STG), 5-9 % slower.
// Mutants: as backward_staged_kernel.
template <typename T, typename G, int K, bool kResidual, int ROWS, Mutant M = Mutant::none>
__global__ void __launch_bounds__(K == 4 ? kStreamsWideThreads : kStreamsMaxThreads, 1)
    backward_streams_lean_kernel(Params<T, G> p, int stages) {
  static_assert(ROWS > 1 && ROWS <= kStagedMaxStreams, "row streams per block");
  begin_dependent_grid();  // the grid ahead has finished; stage 2 may now be scheduled
  constexpr int kTensors = kResidual ? 3 : 2;
  constexpr int kChunkBytes = static_cast<int>(sizeof(Chunk<T>));
  constexpr int kWords = Chunk<T>::kWords;
  extern __shared__ __align__(16) unsigned char stage_mem[];
  __shared__ float reduce_buf[2][ROWS][kWarp];

  const int nthreads = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int group_threads = nthreads / ROWS;  // threads of one row stream
  const int g = t / group_threads;
  const int gt = t % group_threads;
  const std::int64_t dim = p.dim;
  const int nchunks = static_cast<int>((dim + kChunk - 1) / kChunk);  // ≤ 1024 (D ≤ 8192)
  const bool want_dg = p.partials != nullptr;
  const float dim_f = static_cast<float>(dim);
  const std::int64_t first = blockIdx.x, step = gridDim.x;

  // Stage s: [kTensors][K][threads] chunks, then [threads] rstd values (as the staged kernel).
  const int chunk_bytes = kTensors * K * nthreads * kChunkBytes;
  const int stage_bytes = chunk_bytes + nthreads * static_cast<int>(sizeof(float));
  const int tensor_bytes = K * nthreads * kChunkBytes;  // one tensor's slots in a stage
  const std::uint32_t stage0 = shared_address(stage_mem);
  // Per chunk k: its byte offset in a row and its valid bytes there (0: not this thread's; the
  // row's last chunk may be partial).
  std::uint32_t row_off[K];
  int valid[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = gt + k * group_threads;
    const std::int64_t left = c < nchunks ? dim - std::int64_t{c} * kChunk : 0;
    valid[k] = static_cast<int>(left >= kChunk ? kChunk : left) * static_cast<int>(sizeof(T));
    row_off[k] = static_cast<std::uint32_t>(c) * kChunkBytes;
  }
  auto slot_off = [&](int q, int k) { return q * tensor_bytes + (k * nthreads + t) * kChunkBytes; };
  auto chunk_at = [&](int s, int q, int k) {
    return *reinterpret_cast<const Chunk<T>*>(stage_mem + s * stage_bytes + slot_off(q, k));
  };
  auto rstd_at = [&](int s) {
    return *reinterpret_cast<const float*>(stage_mem + s * stage_bytes + chunk_bytes + t * static_cast<int>(sizeof(float)));
  };
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
  // One commit group per row of this stream (empty past its last row, so the count stays uniform).
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

  float w[K][kChunk];  // the weights of this thread's columns, once
#pragma unroll
  for (int k = 0; k < K; ++k) owned_chunk_weights<T, G, M>(p, valid[k] > 0, 0, gt + k * group_threads, w[k]);
  float acc[K][kChunk];  // dg partial of this thread's columns
  start_dg_sums(acc);

  // Row i of this thread's stream: stream_first + i·stream_step; every thread runs stream 0's
  // iterations (the most), past its own rows only for the barrier.
  const std::int64_t stream_first = first + g * step, stream_step = ROWS * step;
  const std::int64_t my_rows = stream_first < p.rows ? (p.rows - stream_first + stream_step - 1) / stream_step : 0;
  const std::int64_t iterations = first < p.rows ? (p.rows - first + stream_step - 1) / stream_step : 0;
  std::int64_t ahead_row = stream_first;  // the next row to issue, into stage ahead_s
  int ahead_s = 0;
  for (; ahead_s < stages - 1; ++ahead_s, ahead_row += stream_step) issue(ahead_row, ahead_s);

  int parity = 0, s = 0;  // s: the stage of row i
  std::int64_t row = stream_first;
  for (std::int64_t i = 0; i < iterations; ++i, row += stream_step, s = s + 1 == stages ? 0 : s + 1) {
    issue(ahead_row, ahead_s);
    ahead_row += stream_step;
    ahead_s = ahead_s + 1 == stages ? 0 : ahead_s + 1;
    wait_copies(stages - 1);  // this thread's copies of row i have landed
    const bool mine = i < my_rows;  // past its stream's rows: the barrier only
    const float r = mine ? rstd_at(s) : 0.0f;
    float sum = -0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (mine && valid[k] > 0) {
        const Chunk<T> xc = chunk_at(s, 0, k), dyc = chunk_at(s, 1, k);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) sum = fmaf(chunk_get(dyc, j) * w[k][j], chunk_get(xc, j) * r, sum);
      }
    }
    const float cmean = cmean_of<M>(groups_sum(sum, reduce_buf[parity][g], gt, group_threads), dim_f);
    parity ^= 1;
    if (!mine) continue;
    unsigned char* const dxrow = reinterpret_cast<unsigned char*>(row_start<M>(p.dx, row, p.sdx, dim));
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (valid[k] > 0) {
        float out[kChunk];
        chunk_dx<M>(chunk_at(s, 0, k), chunk_at(s, 1, k), w[k], r, cmean, acc[k], out);
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
  }
  wait_copies(0);  // no copy may outlive the block (the trailing groups are empty)

  if (!want_dg) return;
  __syncthreads();  // the streams meet in the stages' memory (streams_smem() makes room)
  write_dg_partial<K, ROWS, true>(p.partials + first * dim, acc, gt, group_threads, dim, g, reinterpret_cast<float*>(stage_mem),
                            t, nthreads);
}

// bwd.staged_streams (aligned, 512 < D ≤ 8192, fp32 ≤ 4096): the staged kernel with
// ROWS ∈ {2, 3, 6} row streams in one block per SM.
//
// Why. On the H200 bwd.staged_rows issues 0.67 warp instructions per cycle and scheduler with a
// third of the cycles idle, at 0.79 of the copy (32768 x 4096 bf16, ncu): about 40 instructions per
// element, because a row of 4096 takes 512 threads of one chunk each, and a row's fixed work (its
// copies, the reduction and its barrier, the division, the address arithmetic) is paid per
// 8 elements; and an SM works on two rows at a time (two blocks). Here a thread takes K = 2 chunks
// from D = 2048 on (a row of 4096: 256 threads), and one block of up to 768 threads per SM holds
// ROWS streams of rows (3 of 256 threads, or 6 of up to 128) in step, one block-wide barrier per
// iteration for all their reductions, at most 85 registers a thread. P = the SM count programs (fewer dg partial rows than
// bwd.staged_rows' 2 per SM); the streams of a program add their dg partials in shared memory at
// the end, in stream order. Stages: as many as fit 200 KB, 2 to 8.
// Rows of 4096 < D <= 8192 (16-bit; fp32 rows would not fit two stages): K = 4, two streams of up
// to 256 threads (K = 4 holds 64 fp32 of weights and dg sums: more than 85 registers).
inline constexpr std::int64_t kStreamsMaxDim = 8192;
inline constexpr std::int64_t kStreamsMaxDim32 = 4096;
// fp32 rows with the fused add: two stages of three tensors fit up to here, and again from 2049 to
// 2560 (a wider stream): the declared range is one interval, so the streams stop at 2040 and
// bwd.staged_rows takes the rest (test_launch_configs checks that every width up to it fits).
inline constexpr std::int64_t kStreamsMaxDim32Add = 2040;
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
// Dynamic shared memory: the stages, and at the end the streams' dg partials (write_dg_partial).
inline std::size_t streams_smem(const StreamsConfig& c, std::int64_t dim, std::size_t elem_bytes, bool residual) {
  const std::size_t stages = static_cast<std::size_t>(streams_stages(c, elem_bytes, residual)) *
                             staged_stage_bytes(streams_block(c), elem_bytes, residual);
  return std::max(stages, dg_combine_bytes(c.rows, dim));
}
// Whether the streams take rows of this width and element size: fp32 rows only to D = 4096 (the
// K = 4 form of wider rows has no fp32 instance: its 64 fp32 weights and dg sums exceed the
// registers), and only where two stages fit: fp32 rows with the fused add (three tensors of
// 32-byte chunks) exceed the block's opt-in shared memory beyond D = 2048 or so. Those rows go
// to bwd.staged_rows.
// (Without the width limit, fp32 rows of 4096 < D with two stages that fit, no fused add, would
// be accepted and then nothing launched, dx left as it was:
// corpora/regressions/backward_streams_f32_wide_no_launch.case.)
inline bool streams_fits(std::int64_t dim, std::size_t elem_bytes, bool residual) {
  if (elem_bytes == 4 && dim > (residual ? kStreamsMaxDim32Add : kStreamsMaxDim32)) return false;
  return streams_smem(streams_config(dim), dim, elem_bytes, residual) <= kStreamsSmemPerBlock + 16 * 1024;
}

// Stage 1 of the staged path (stage 2 and everything around it: launch<M>() in backward_launch.cuh).
template <typename T, typename G, Mutant M>
inline void launch_staged(const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  const StagedConfig c = staged_config(p.dim);
  const bool residual = p.dres != nullptr;
  const int stages = staged_stages(c, sizeof(T), residual);
  const std::size_t smem = static_cast<std::size_t>(stages) * staged_stage_bytes(c, sizeof(T), residual);
  auto go = [&](auto kernel) {
    // A refusal here makes the launch below fail, and launch_status() report it.
    (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    launch_kernel(kernel, static_cast<unsigned>(grid), c.threads, smem, st, p, stages);
  };
  auto with_k = [&](auto res) {
    constexpr bool kRes = decltype(res)::value;
    if (c.chunks == 1) return go(backward_staged_kernel<T, G, 1, kRes, 1, M>);
    if (c.chunks == 2) return go(backward_staged_kernel<T, G, 2, kRes, 1, M>);
    if constexpr (sizeof(T) == 2) go(backward_staged_kernel<T, G, 4, kRes, 1, M>);
  };
  if (residual) {
    with_k(std::true_type{});
  } else {
    with_k(std::false_type{});
  }
}

// Which kernel runs the streams: the lean one (backward_streams_lean_kernel) for 16-bit rows,
// except the plain backward of more than 8192 rows wider than 1024 (H200, bf16: the lean kernel
// 1.02-1.10x at 4096-8192 rows, the fused add 1.00-1.05x up to 32768 rows; but the plain backward
// at 32768 rows 0.86-0.91 of the copy against 0.91-0.96 at D = 2048-8192, although under ncu
// alone at 32768 x 4096 the lean kernel is the faster, 194 against 206 us: unexplained). fp32
// rows are not measured with it and keep the staged kernel.
inline constexpr std::int64_t kStreamsLeanMaxRows = 8192;
inline constexpr std::int64_t kStreamsLeanAnyRowsMaxDim = 1024;
inline bool streams_lean_preferred(std::size_t elem_bytes, std::int64_t rows, std::int64_t dim, bool residual) {
  return elem_bytes == 2 && (residual || rows <= kStreamsLeanMaxRows || dim <= kStreamsLeanAnyRowsMaxDim);
}

template <typename T, typename G, Mutant M>
inline void launch_streams(const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  const StreamsConfig c = streams_config(p.dim);
  const bool residual = p.dres != nullptr;
  const int stages = streams_stages(c, sizeof(T), residual);
  const std::size_t smem = streams_smem(c, p.dim, sizeof(T), residual);
  const bool lean = streams_lean_preferred(sizeof(T), p.rows, p.dim, residual);
  auto go = [&](auto kernel) {
    (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    launch_kernel(kernel, static_cast<unsigned>(grid), c.block(), smem, st, p, stages);
  };
  // The staged kernel or, for 16-bit rows where it measured faster, the lean one.
  auto run = [&](auto res, auto k, auto rows) {
    constexpr bool kRes = decltype(res)::value;
    constexpr int K = decltype(k)::value, ROWS = decltype(rows)::value;
    if constexpr (sizeof(T) == 2) {
      if (lean) return go(backward_streams_lean_kernel<T, G, K, kRes, ROWS, M>);
    }
    go(backward_staged_kernel<T, G, K, kRes, ROWS, M>);
  };
  auto with_shape = [&](auto res) {
    using I1 = std::integral_constant<int, 1>;
    using I2 = std::integral_constant<int, 2>;
    using I3 = std::integral_constant<int, 3>;
    using I4 = std::integral_constant<int, 4>;
    using I6 = std::integral_constant<int, 6>;
    switch (c.chunks * 8 + c.rows) {
      case 1 * 8 + 3: return run(res, I1{}, I3{});
      case 1 * 8 + 6: return run(res, I1{}, I6{});
      case 2 * 8 + 6: return run(res, I2{}, I6{});
      case 4 * 8 + 2:
        if constexpr (sizeof(T) == 2) return run(res, I4{}, I2{});
        return;  // unreachable: fp32 rows beyond D = 4096 are declined by streams_fits (test_launch_configs)
      default: return run(res, I2{}, I3{});
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
// registers x 512 threads, and 135 KB of stages). There P = SMs: with 2·SMs the grid would run as
// two waves, each paying the pipeline's fill and drain, and write twice the dg partials (264 rows
// of D fp32, 17 MB at D = 16384 against 403 MB of rows at R = 4096; ncu at 4096 x 16384: DRAM
// 59.5 %). staged_dg_shape declares the chains of both.
inline bool staged_one_per_sm(const StagedConfig& c) { return c.chunks > 2; }
inline AccumShape staged_dg_shape(std::int64_t rows) {
  const AccumShape two = dg_shape_of(rows, {});
  const AccumShape one = dg_shape_of(rows, {}, /*programs_per_sm=*/1);
  return {std::max(two.per_thread, one.per_thread), std::max(two.tree_depth, one.tree_depth)};
}

// The launchers: Mutant::none for the products, the mutant's switch otherwise (bf16 rows and
// weights only: run_stages).
template <Mutant M>
inline Status staged_launch(const BackwardArgs& a) {
  const StagedConfig sc = staged_config(a.dim);
  const Config cfg{sc.threads, 1, sc.chunks, false};  // one row stream per program: grid = min(P, R)
  const std::int64_t grid = staged_one_per_sm(sc) ? one_per_sm_grid(a.rows, 1) : programs_for(cfg, a.rows);
  if (grid <= 0) return no_programs();
  return run_stages<M>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool) {
    launch_staged<typename decltype(tt)::type, typename decltype(gt)::type, M>(p, n, st);
  });
}

template <Mutant M>
inline Status streams_launch(const BackwardArgs& a) {
  const StreamsConfig sc = streams_config(a.dim);
  // One program per SM, ROWS streams each.
  const std::int64_t grid = one_per_sm_grid(a.rows, sc.rows);
  if (grid <= 0) return no_programs();
  return run_stages<M>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool) {
    launch_streams<typename decltype(tt)::type, typename decltype(gt)::type, M>(p, n, st);
  });
}

}  // namespace rmsnorm::cuda::bwd
