// fwd.shifted_row: the forward and the fused-add forward of rows that do not start on a 16-byte
// boundary (odd D above all: 1025, 4097, 8191, where every row starts at another alignment),
// read and written in 16-byte vectors where they lie, with no trip through shared memory.
//
// Why. The row's own tensors (x, y, and under the fused add o and the residual) share one frame:
// every row starts at the same offset from a 16-byte boundary in each of them (checked by the
// launcher, never assumed). Then chunk c of a row, elements [8c − L, 8c − L + 8) with L the row's
// lead (its start's offset from the boundary below, in elements), is one aligned 16-byte vector
// of every tensor: the same vector loads and stores as fwd.block_row, with element accesses only
// for the row's first and last chunk (the bytes outside the row belong to its neighbours and are
// never touched). Only the weights do not share the frame (their columns start at 16 bytes), so
// a block keeps them in shared memory shifted to its rows' lead: table[8c + j] = g[8c + j − L]
// (zero outside the row), one aligned vector per chunk. The leads of rows r, r + 1, ... repeat
// with a period P (1, 2, 4 or 8: 16 bytes over the gcd with the row stride's residue), so block
// b takes only rows of residue b mod P: one lead per block, one table.
// fwd.packed_rows, before it, staged tiles in shared memory and stored y element by element:
// issue-bound at 0.60-0.62 of the copy at 32768 x 1025 bf16 (ncu, session 16).
//
// Mapping (a function of D only): a row to a group of `lanes` threads (whole warps), chunk c to
// thread c % lanes as its (c / lanes)-th of ITERS; a block's groups take consecutive rows of its
// residue class; the grid is persistent (the table is filled once per block, after the block's
// first loads are issued).
// Order: Σh² chained per thread in chunk then element order (the elements outside the row are
// zeros, which leave the chain's value as it is), then the warp butterfly and, for groups of
// several warps, the group's partials (block barrier, double-buffered by row parity).
#pragma once

#include <numeric>

#include "forward_kernels.cuh"

namespace rmsnorm::cuda::fwd {

inline constexpr std::int64_t kShiftedMaxDim = 8192;
inline constexpr int kShiftedLeads = kVecBytes / 2;  // leads a 16-bit row can have (fp32: 4)
inline constexpr int kShiftedBlockThreads = 256;     // groups per block: as many rows as fit 256 threads
// Register budget, as blocks per SM: 85 registers for 16-bit rows (64 spilled 12-24 bytes in
// the 5-chunk and fused-add forms, CUDA 13.0), 128 for fp32 rows.
template <typename T>
inline constexpr int kShiftedMinBlocks = sizeof(T) == 2 ? 3 : 2;

struct ShiftedConfig {
  int lanes = 0;   // threads per row (a multiple of 32)
  int iters = 0;   // chunks per thread: 4 or 5
  int groups = 0;  // rows per block
  int block() const { return lanes * groups; }
  int columns() const { return lanes * iters * kChunk; }  // one lead's table row
};
// Chunks a row can span: ceil((L + D) / 8) at the largest lead (7).
constexpr std::int64_t shifted_chunks(std::int64_t dim) { return (dim + kShiftedLeads - 1 + kChunk - 1) / kChunk; }
// 4 or 5 chunks a thread, whichever leaves fewer idle slots (4 on a tie): D = 1025 takes one warp
// of 5 (160 slots for 130 chunks) where 4 would take two warps (256).
inline ShiftedConfig shifted_config(std::int64_t dim) {
  const std::int64_t n = shifted_chunks(dim);
  auto lanes_for = [&](std::int64_t iters) { return ((n + iters - 1) / iters + kWarp - 1) / kWarp * kWarp; };
  ShiftedConfig c;
  const std::int64_t l4 = lanes_for(4), l5 = lanes_for(5);
  c.iters = l5 * 5 < l4 * 4 ? 5 : 4;
  c.lanes = static_cast<int>(c.iters == 5 ? l5 : l4);
  c.groups = std::max(1, kShiftedBlockThreads / c.lanes);
  return c;
}
inline std::size_t shifted_table_bytes(std::int64_t dim, std::size_t weight_bytes) {
  return static_cast<std::size_t>(shifted_config(dim).columns()) * weight_bytes;
}
// The period of the rows' leads: 16 bytes / gcd(16, the row stride's bytes mod 16), in rows.
inline int shifted_period(std::int64_t stride, std::size_t elem_bytes) {
  const auto residue = static_cast<std::int64_t>(static_cast<std::uint64_t>(stride) * elem_bytes % kVecBytes);
  return static_cast<int>(kVecBytes / std::gcd(std::int64_t{kVecBytes}, residue));  // gcd(16, 0) = 16: period 1
}
// A thread's longest chain: over every lead L (0-7 covers both element sizes) and thread t, the
// row's elements in its chunks t, t + lanes, ...; then the butterfly of the group's warps.
inline AccumShape shifted_row_shape(std::int64_t dim) {
  const ShiftedConfig c = shifted_config(dim);
  AccumShape s;
  s.per_thread = 0;
  for (std::int64_t lead = 0; lead < kShiftedLeads; ++lead) {
    const std::int64_t n = (lead + dim + kChunk - 1) / kChunk;
    for (std::int64_t t = 0; t < std::min<std::int64_t>(c.lanes, n); ++t) {
      std::int64_t elems = 0;
      for (std::int64_t ch = t; ch < n; ch += c.lanes)
        elems += std::min(ch * kChunk - lead + kChunk, dim) - std::max(ch * kChunk - lead, std::int64_t{0});
      s.per_thread = std::max(s.per_thread, elems);
    }
  }
  s.tree_depth = 5 + ceil_log2(c.lanes / kWarp);
  return s;
}

// Chunk [e0, e0 + 8) of a row of D elements whose element e0 lies on a 16-byte boundary when
// 0 <= e0: one vector inside the row, element loads at its ends (zeros outside it).
template <typename T>
__device__ __forceinline__ Chunk<T> load_shifted_chunk(const T* row, int e0, int D) {
  if (e0 >= 0 && e0 + kChunk <= D) return load_chunk_once(row + e0);
  float f[kChunk];
#pragma unroll
  for (int j = 0; j < kChunk; ++j) f[j] = (e0 + j >= 0 && e0 + j < D) ? to_float(row[e0 + j]) : 0.0f;
  return pack<T>(f);  // exact: each value is already a T
}
template <typename T>
__device__ __forceinline__ void store_shifted_chunk(T* row, int e0, int D, const Chunk<T>& v) {
  if (e0 >= 0 && e0 + kChunk <= D) {
    store_chunk_once(row + e0, v);
    return;
  }
#pragma unroll
  for (int j = 0; j < kChunk; ++j)
    if (e0 + j >= 0 && e0 + j < D) row[e0 + j] = from_float<T>(chunk_get(v, j));  // exact re-encoding
}

template <typename T, typename G, bool kAdd, int ITERS>
__global__ void __launch_bounds__(kShiftedBlockThreads, kShiftedMinBlocks<T>)
    fwd_shifted_kernel(Params p, int lanes, int period) {
  extern __shared__ __align__(16) unsigned char shifted_mem[];  // the weights at this block's lead
  __shared__ float partials[2][kShiftedBlockThreads / kWarp];   // by row parity: each group's warps

  const int t = static_cast<int>(threadIdx.x);
  const int q = t / lanes, gt = t % lanes;
  const int groups = static_cast<int>(blockDim.x) / lanes;
  const int lane = t & (kWarp - 1), group_warps = lanes / kWarp;
  const int D = static_cast<int>(p.dim);  // <= 8192
  const int columns = lanes * ITERS * kChunk;
  G* const table = reinterpret_cast<G*>(shifted_mem);
  const bool weighted = p.convention != static_cast<int>(Convention::no_weight);
  // Rows residue + period·k of this block's class, its groups taking consecutive k.
  const int residue = static_cast<int>(blockIdx.x) % period;
  const std::int64_t class_blocks = gridDim.x / period;
  const std::int64_t step = class_blocks * groups;
  int parity = 0;
  bool table_ready = false;

  for (std::int64_t k0 = static_cast<std::int64_t>(blockIdx.x / period) * groups; residue + period * k0 < p.rows;
       k0 += step) {
    const std::int64_t row = residue + period * (k0 + q);
    const bool active = row < p.rows;  // groups past R still join the barriers
    const T* const xr = static_cast<const T*>(p.x) + row_offset(row, p.x_stride, sizeof(T));
    const int L = realign_lead(xr);  // the block's (one class), every tensor's (the launcher's check)

    // 1. Every load of the row before any use.
    Chunk<T> h[ITERS];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
      const int e0 = (i * lanes + gt) * kChunk - L;
      h[i] = active ? load_shifted_chunk(xr, e0, D) : zero_chunk<T>();
    }
    if constexpr (kAdd) {
      const T* const orow = static_cast<const T*>(p.o) + row_offset(row, p.o_stride, sizeof(T));
      Chunk<T> ov[ITERS];
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const int e0 = (i * lanes + gt) * kChunk - L;
        ov[i] = active ? load_shifted_chunk(orow, e0, D) : zero_chunk<T>();
      }
      // 2. h = RN_x(x + o), written back to the residual stream.
      T* const xw = static_cast<T*>(p.x_out) + row_offset(row, p.x_stride, sizeof(T));
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const int e0 = (i * lanes + gt) * kChunk - L;
        float a[kChunk], b[kChunk];
        unpack(h[i], a);
        unpack(ov[i], b);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) a[j] = a[j] + b[j];
        h[i] = pack<T>(a);
        if (active && e0 < D) store_shifted_chunk(xw, e0, D, h[i]);
      }
    }

    // The weights at the block's lead, once, while its first rows are in flight.
    if (!table_ready) {
      for (int k = t; k < columns; k += static_cast<int>(blockDim.x)) {
        const int col = k - L;
        table[k] = (weighted && col >= 0 && col < D) ? static_cast<const G*>(p.g)[col] : from_float<G>(0.0f);
      }
      __syncthreads();
      table_ready = true;
    }

    // 3. Σh²: sequential per thread (chunk order, element order), then the group's tree.
    SumSquares<T, Mutant::none> ss;
#pragma unroll
    for (int i = 0; i < ITERS; ++i)
#pragma unroll
      for (int j = 0; j < kChunk; ++j) ss.add(chunk_get(h[i], j));
    float total = warp_sum(ss.acc);
    if (group_warps > 1) {  // uniform over the grid
      float* const mine = &partials[parity][q * group_warps];
      if (lane == 0) mine[gt / kWarp] = total;
      __syncthreads();
      total = partials_allreduce(mine, lane, group_warps, SumOp{}, 0.0f);
      parity ^= 1;
    }
    const float r = rstd_of<Mutant::none>(total, D, D, p.eps);
    if (active && gt == 0 && p.rstd != nullptr) p.rstd[row] = r;

    // 4. y = (h·r)·w.
    T* const yr = static_cast<T*>(p.y) + row_offset(row, p.y_stride, sizeof(T));
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
      const int c = i * lanes + gt;
      const int e0 = c * kChunk - L;
      if (!active || e0 >= D) continue;
      float w[kChunk];
      weights_of(*reinterpret_cast<const Chunk<G>*>(table + c * kChunk), p.convention, w);
      float y[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = y_of<T, Mutant::none>(chunk_get(h[i], j), r, w[j], p.convention);
      store_shifted_chunk(yr, e0, D, pack<T>(y));
    }
  }
}

}  // namespace rmsnorm::cuda::fwd
