// Packed tiles: consecutive rows of a packed tensor (row stride = D) moved as one span of
// 16-byte cp.async vectors into shared-memory stages, whatever the alignment of the rows; the
// shared machinery of bwd.packed_rows (backward_packed.cuh, where the design is described) and
// fwd.packed_rows (variants/fwd_packed_rows.cuh).
//
// Mapping: a block is GR groups of G threads, a tile GR·RG consecutive rows, group q taking rows
// q·RG .. q·RG + RG − 1 of it. Columns: warp w of a group owns the row's columns
// [w·32M, (w + 1)·32M), lane l of it the columns w·32M + l + 32m (m < M): a warp's access is 32
// consecutive elements, and a thread's elements lie 32 apart, a compile-time distance, so every
// access is its row's base address plus an immediate offset. (With a run-time distance, gt +
// m·G, each element's shared and global addresses would be stepped by it, 64-bit for the global
// ones: about 57 instructions per element in fwd.packed_rows at 32768 x 1025 by ncu, 60 % of them
// integer arithmetic.) G and M are functions of D alone (so is a row's
// accumulation shape: a thread's terms chained in column order, then the group butterfly of
// 5 + ceil_log2(G / 32) levels); GR and RG depend on D, the element size and the tensors a tile
// holds (they only decide which rows a group takes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "async_copy.cuh"
#include "rmsnorm/variant.h"

namespace rmsnorm::cuda {

inline constexpr std::int64_t kPackedMaxDim = 8192;     // the widest row of the wide instance
inline constexpr int kPackedMaxThreads = 640;           // one block per SM: 20 warps, at most 96 registers
inline constexpr int kPackedMaxGroups = 8;              // row groups per block
inline constexpr int kPackedRowsPerGroup = 2;           // RG of the M = 8 instance
inline constexpr int kPackedPerThread = 8;              // columns per thread up to D = 5120
inline constexpr int kPackedPerThreadWide = 13;         // 5120 < D <= 8192, RG = 1
// The wide instance's block: G for D = 8192 at 13 columns a thread (640 threads, 20 warps: 5 per
// SM sub-partition), so its launch bounds allow 96 registers; a 768-thread bound (6 warps per
// sub-partition) allows 80, where 12 columns a thread spilled 4 bytes.
inline constexpr int kPackedWideMaxThreads =
    static_cast<int>((kPackedMaxDim + kPackedPerThreadWide - 1) / kPackedPerThreadWide + kWarp - 1) / kWarp * kWarp;
inline constexpr int kPackedMinStages = 3;
inline constexpr std::size_t kPackedSmem = 200 * 1024;  // the stages
inline constexpr int kPackedPlannedStages = 4;

struct PackedConfig {
  int threads = 0;     // G
  int per_thread = 0;  // M (the template instance; a thread owns packed_cols(...) ≤ M columns)
  int groups = 1;      // GR
  int per_group = 1;   // RG
  int per_sm = 1;      // blocks an SM holds at once: the threads and the stage memory are split among them
  int block() const { return threads * groups; }
  int tile_rows() const { return groups * per_group; }
};
// G (a multiple of 32, ≤ 640) and M from D alone; `per_sm` blocks an SM (2: where a group of G
// threads fits half of 640, each block gets half the threads and half the stage memory, so that
// one block's rows reduce and store while the other's load); RG = 2 while four stages of two rows
// of the `tensors` a tile holds fit the block's stage memory, else 1; GR as many as fit its
// threads, at most 8, and four stages. Two blocks are planned only where they hold as many
// threads as one would: with half the stage memory a block may fit fewer groups (fp32 rows at
// D = 1025: one group of 160 threads a block where one block holds three; 12-17 % slower).
inline PackedConfig packed_tile_config_for(std::int64_t dim, std::size_t elem_bytes, int tensors, int per_sm) {
  PackedConfig c;
  const bool wide = dim > std::int64_t{kPackedPerThread} * kPackedMaxThreads;
  c.per_thread = wide ? kPackedPerThreadWide : kPackedPerThread;
  const std::int64_t per_row = (dim + c.per_thread - 1) / c.per_thread;
  c.threads = static_cast<int>((per_row + kWarp - 1) / kWarp * kWarp);
  c.per_sm = !wide && c.threads <= kPackedMaxThreads / per_sm ? per_sm : 1;
  const std::size_t smem = kPackedSmem / static_cast<std::size_t>(c.per_sm);
  const std::size_t row_bytes =
      static_cast<std::size_t>(kPackedPlannedStages) * static_cast<std::size_t>(tensors) * static_cast<std::size_t>(dim) * elem_bytes;
  c.per_group = !wide && kPackedRowsPerGroup * row_bytes <= smem ? kPackedRowsPerGroup : 1;
  const std::int64_t by_smem = static_cast<std::int64_t>(smem / (static_cast<std::size_t>(c.per_group) * row_bytes));
  c.groups = static_cast<int>(std::clamp<std::int64_t>(by_smem, 1, std::min(kPackedMaxGroups, kPackedMaxThreads / c.per_sm / c.threads)));
  return c;
}
inline PackedConfig packed_tile_config(std::int64_t dim, std::size_t elem_bytes, int tensors, int per_sm = 1) {
  const PackedConfig one = packed_tile_config_for(dim, elem_bytes, tensors, 1);
  if (per_sm == 1) return one;
  const PackedConfig more = packed_tile_config_for(dim, elem_bytes, tensors, per_sm);
  return more.per_sm * more.block() >= one.block() ? more : one;
}
// The column layout above: thread gt of a group (M columns a thread) takes c0 + 32m for
// m < ncols. One definition for both kernels and for test_launch_configs, which checks for every D
// that a group's threads own the row's columns once each and that packed_row_shape bounds every
// thread's chain.
__host__ __device__ __forceinline__ int packed_first_col(int gt, int per_thread) {
  return (gt / kWarp) * (kWarp * per_thread) + gt % kWarp;
}
__host__ __device__ __forceinline__ int packed_cols(int c0, int dim, int per_thread) {
  const int n = c0 < dim ? (dim - c0 + kWarp - 1) / kWarp : 0;
  return n < per_thread ? n : per_thread;
}
// A warp whose chunk lies inside the row (every warp of a group but the last, at most) has all M
// columns in every lane: (c0 − lane) + 32M <= D, warp-uniform (each kernel writes it out; as a
// function it changes fwd.packed_rows' register allocation). by_warp(full, body) runs
// body(std::true_type) there, element code without a test per element, and body(std::false_type)
// elsewhere (5-13 % fewer warp instructions in fwd.packed_rows at 32768 x 1025).
template <typename Body>
__device__ __forceinline__ void by_warp(bool full, Body&& body) {
  if (full) {
    body(std::true_type{});
  } else {
    body(std::false_type{});
  }
}
// A row's reduction: the first lanes of a full warp chain M terms, a row of D <= 32M has one warp
// whose lanes chain at most ceil(D / 32); then the group butterfly.
inline AccumShape packed_row_shape(std::int64_t dim) {
  const PackedConfig c = packed_tile_config(dim, 2, 1);  // G and M depend on D only
  AccumShape s;
  s.per_thread = std::min<std::int64_t>(c.per_thread, (dim + kWarp - 1) / kWarp);
  s.tree_depth = 5 + ceil_log2(c.threads / kWarp);
  return s;
}

// One stage: `tensors` tiles and, with row_floats, one float per tile row (the rstd a backward
// reads), each part a multiple of 16 bytes.
inline std::size_t packed_tile_bytes(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes) {
  return static_cast<std::size_t>(realign_buffer_bytes(c.tile_rows() * dim, elem_bytes));
}
inline std::size_t packed_ring_stage_bytes(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, int tensors,
                                           bool row_floats) {
  const std::size_t floats = row_floats ? (static_cast<std::size_t>(c.tile_rows()) * sizeof(float) + 15) / 16 * 16 : 0;
  return static_cast<std::size_t>(tensors) * packed_tile_bytes(c, dim, elem_bytes) + floats;
}
// Stages of `stage_bytes` that fit (at most kMaxCopyStages); `tiles_per_program` > 0 caps them
// at what a program has to hold: its tiles, plus the two of the ring's arithmetic (small R: less
// shared memory to configure, and nothing copied for tiles that do not exist).
inline int packed_ring_stages(std::size_t stage_bytes, std::int64_t tiles_per_program = 0, int per_sm = 1) {
  const std::size_t smem = kPackedSmem / static_cast<std::size_t>(per_sm);
  std::int64_t stages = static_cast<std::int64_t>(std::min<std::size_t>(smem / stage_bytes, kMaxCopyStages));
  if (tiles_per_program > 0 && stages >= kPackedMinStages)
    stages = std::max<std::int64_t>(kPackedMinStages, std::min<std::int64_t>(stages, tiles_per_program + 2));
  return static_cast<int>(stages);
}

// Copies the n elements at element offset e0 of a packed tensor of `total` elements into
// buf[lead + j], lead = realign_lead(src), by threads t of `nthreads`: one 16-byte cp.async per
// vector; element loads for a vector that starts before the tensor (only when e0 < lead) and for
// one that ends past it (its elements up to the n-th). The element loads are plain stores to
// shared memory; like the copies they are published by the caller's next barrier.
//
// The interior vectors (all but those two edge cases) go through one loop whose shared and
// global addresses are integers stepped by 16·nthreads bytes: a thread issues a tile's ~2-4
// vectors per tensor at about six instructions each.
template <typename T>
__device__ __forceinline__ void stage_packed_span(T* buf, const T* base, std::int64_t e0, int n, std::int64_t total,
                                                  int t, int nthreads) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  const T* src = base + e0;
  const int lead = realign_lead(src);
  const int words = (lead + n + kPer - 1) / kPer;
  const bool head_out = e0 < lead;                                             // word 0 starts before the tensor
  const bool tail_out = e0 - lead + static_cast<std::int64_t>(words) * kPer > total;  // the last word ends after it
  const int first = head_out ? 1 : 0, last = tail_out ? words - 1 : words;     // interior words [first, last)
  const std::uint64_t aligned = global_address(src - lead);
  int w = first + t;
  std::uint32_t dst = shared_address(buf) + 16u * static_cast<std::uint32_t>(w);
  std::uint64_t from = aligned + 16u * static_cast<std::uint64_t>(w);
  const std::uint32_t step = 16u * static_cast<std::uint32_t>(nthreads);
  for (; w < last; w += nthreads, dst += step, from += step) copy16_async_at(dst, from);
  if (head_out && t == 0) {
    const int end = min(kPer - lead, n);
    for (int j = 0; j < end; ++j) buf[lead + j] = src[j];
  }
  // The vector that ends past the tensor: its elements up to the tensor's end, by element loads
  // (one thread). A cp.async of fewer source bytes than 16 (src-size) reads only those, but
  // compute-sanitizer's memcheck counts it as a 16-byte read past the allocation (as with the
  // bench's exact-size buffers, D = 33, R = 4100); element loads leave nothing to interpret.
  if (tail_out && t == (words - 1) % nthreads && !(head_out && words == 1)) {
    const int from = (words - 1) * kPer;  // its first element in buf; src[from - lead] in the tensor
#pragma unroll 1
    for (int j = 0; j < lead + n - from; ++j) buf[from + j] = src[from - lead + j];
  }
}

// A thread of a packed-tile block: t of nthreads, in group q (of group_threads) as thread gt.
struct PackedThread {
  int t, nthreads, q, gt;
  __device__ explicit PackedThread(int group_threads)
      : t(static_cast<int>(threadIdx.x)), nthreads(static_cast<int>(blockDim.x)), q(t / group_threads), gt(t % group_threads) {}
};

// A program's ring of tiles: tiles blockIdx.x, blockIdx.x + gridDim.x, ... of GR·RG rows each,
// in stages 0, 1, ..., S − 1, 0, ...; `issue(row0, stage)` copies the tile of rows from row0 into
// a stage and commits one copy group (an empty one past the last tile). The prologue issues
// S − 1 tiles and publishes the first (its copies waited for, then a barrier); each iteration
// the caller issues the next tile after its barrier (issue_next) and moves on (next); run() is
// that loop.
struct PackedRing {
  std::int64_t rows, step_rows, iterations;
  std::int64_t row0, issue_row;  // the current tile's first row, the next tile to issue
  int stages, tile_rows, stage = 0, issue_stage = 0;

  __device__ PackedRing(std::int64_t rows_, int tile_rows_, int stages_)
      : rows(rows_), step_rows(static_cast<std::int64_t>(gridDim.x) * tile_rows_), iterations(0),
        row0(static_cast<std::int64_t>(blockIdx.x) * tile_rows_), issue_row(row0), stages(stages_), tile_rows(tile_rows_) {
    iterations = row0 < rows ? (rows - row0 + step_rows - 1) / step_rows : 0;
  }
  // Rows of the current tile (the last may be short).
  __device__ int tile_rows_now() const { return static_cast<int>(min(static_cast<std::int64_t>(tile_rows), rows - row0)); }
  template <typename Issue>
  __device__ void issue_next(Issue&& issue) {
    issue(issue_row, issue_stage);
    issue_row += step_rows;
    issue_stage = issue_stage + 1 == stages ? 0 : issue_stage + 1;
  }
  template <typename Issue>
  __device__ void prologue(Issue&& issue) {
    for (int k = 0; k < stages - 1; ++k) issue_next(issue);
    wait_copies(stages - 2);  // the first tile has landed (this thread's copies) ...
    __syncthreads();          // ... and everyone's
  }
  __device__ void next() {
    row0 += step_rows;
    stage = stage + 1 == stages ? 0 : stage + 1;
  }
  // The program's loop over its tiles: the prologue, then body(stage, row0, rows, issue_next)
  // per tile, where the body calls issue_next() once, after the barrier that frees tile i − 1's
  // stage; at the end no copy outlives the block (the trailing groups are empty).
  template <typename Issue, typename Body>
  __device__ void run(Issue&& issue, Body&& body) {
    prologue(issue);
    for (std::int64_t i = 0; i < iterations; ++i) {
      body(stage, row0, tile_rows_now(), [&] { issue_next(issue); });
      next();
    }
    wait_copies(0);
  }
};

}  // namespace rmsnorm::cuda
