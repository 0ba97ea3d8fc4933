// fwd.shifted_row: the forward and the fused-add forward of rows that do not start on a 16-byte
// boundary (odd D above all: 1025, 4097, 8191, where every row starts at another alignment),
// read and written in 16-byte vectors where they lie: only the weights (once per block) and, in
// groups of several warps, one chunk per warp and row go through shared memory. With FP8 outputs
// of 16-bit rows (every scale mode) as well: see FP8 below.
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
// FP8. A 16-bit row's lead is L = (its start in elements) mod 8, so chunk c, elements
// [8c − L, 8c − L + 8), starts 8c − L elements past the row's start: in an FP8 y whose row starts
// lie at the same residue mod 8 bytes (base mod 8 = x's base mod 16 / 2, row stride ≡ x's mod 8),
// that chunk is one aligned 8-byte vector. So each chunk's codes are one 8-byte store (bytes at the
// row's two ends); a per-token amax is taken over the row's elements only, y formed twice (for the
// amax, then for the codes) rather than held. Per-block scales: a group of 128 columns is 16
// chunks' columns, and chunk c's columns from 8c on lie in group c / 16; only a chunk with c a
// multiple of 16 is cut, its first L elements (columns 8c − L .. 8c − 1) in the group before. So a
// group's maximum is its 16 chunks' (16 consecutive lanes: lanes are whole warps) and the cut
// part of the chunk after them, and a cut chunk's codes take two scales.
// fwd.packed_rows stages tiles in shared memory and stores y element by element: issue-bound at
// 0.60-0.62 of the copy at 32768 x 1025 bf16 (ncu); this kernel runs 0.65-0.66 there (H200;
// the dispatch table says where it is dispatched).
//
// Mapping (a function of D only): a row to a group of `lanes` threads (whole warps), chunk c to
// thread c % lanes as its (c / lanes)-th of ITERS; a block's groups take consecutive rows of its
// residue class; the grid is persistent (the table is filled once per block, after the block's
// first loads are issued).
// Order, the same at every lead (docs/contract.md#semantics: a row's bits do not depend on its
// position, and its position sets its lead): Σh² is summed over column chunks, columns
// [8c, 8c + 8), as fwd.block_row sums them: chained per thread over c = i·lanes + t in chunk then
// column order, then the warp butterfly and, for groups of several warps, the group's partials. A
// column chunk is the last 8 − L elements of the thread's chunk c and the first L of chunk c + 1,
// which the next lane holds (a shuffle); the warp's last lane takes it from lane 0's next chunk (a
// one-warp group) or from the next warp's lane 0 through shared memory. The lead is uniform over a
// block, so the column window is chosen by one switch over L (compile-time extraction).
#pragma once

#include <numeric>

#include "forward_variant.h"

namespace rmsnorm::cuda::fwd {

inline constexpr std::int64_t kShiftedMaxDim = 8192;
inline constexpr int kShiftedLeads = kVecBytes / 2;  // leads a 16-bit row can have (fp32: 4)
inline constexpr int kShiftedBlockThreads = 256;     // groups per block: as many rows as fit 256 threads
// Register budget, as blocks per SM: 80 registers for the plain forward of 16-bit rows (64
// spilled 12-24 bytes in the 5-chunk forms, CUDA 13.0), 128 for the fused add (80 spilled 4-24
// bytes in its 5-chunk forms) and for fp32 rows.
// FP8 outputs take their op's budget (y is formed twice, not held: 72-80 at 3 blocks, none
// spills), but per-block scales 2 blocks (at 3 the 5-chunk forms spill 4-8 bytes).
template <typename T, bool kAdd, bool kBlock>
inline constexpr int kShiftedMinBlocks = sizeof(T) == 2 && !kAdd && !kBlock ? 3 : 2;

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

// Σh² of a thread's column chunks (see Order above) at lead L: the window [L, L + 8) of the
// thread's chunk i followed by the chunk after it, next(i).
template <int L, typename T, int ITERS, typename Next>
__device__ __forceinline__ float column_chain(const Chunk<T> (&h)[ITERS], Next&& next) {
  SumSquares<T, Mutant::none> ss;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    const Chunk<T> n = next(i);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) ss.add(j + L < kChunk ? chunk_get(h[i], j + L) : chunk_get(n, j + L - kChunk));
  }
  return ss.acc;
}
template <typename T, int ITERS, typename Next>
__device__ __forceinline__ float column_chain_at(int lead, const Chunk<T> (&h)[ITERS], Next&& next) {
  switch (lead) {
    case 0:
      return column_chain<0>(h, next);
    case 1:
      return column_chain<1>(h, next);
    case 2:
      return column_chain<2>(h, next);
    case 3:
      return column_chain<3>(h, next);
    default:
      break;
  }
  if constexpr (sizeof(T) == 2) {
    switch (lead) {
      case 4:
        return column_chain<4>(h, next);
      case 5:
        return column_chain<5>(h, next);
      case 6:
        return column_chain<6>(h, next);
      default:
        return column_chain<7>(h, next);
    }
  }
  return 0.0f;  // fp32 rows have leads 0-3
}

// kQ: FP8 outputs; kBlock: per-block scales (kQ only; p.quant says which otherwise).
template <typename T, typename G, bool kAdd, bool kQ, bool kBlock, int ITERS, Mutant M>
__global__ void __launch_bounds__(kShiftedBlockThreads, kShiftedMinBlocks<T, kAdd, kBlock>)
    fwd_shifted_kernel(Params p, int lanes, int period) {
  static_assert(kQ || !kBlock, "per-block scales are an FP8 form");
  begin_dependent_grid();
  extern __shared__ __align__(16) unsigned char shifted_mem[];                      // the weights at this block's lead
  __shared__ float partials[kShiftedBlockThreads / kWarp];                          // each group's warps' sums
  __shared__ float max_partials[kQ && !kBlock ? kShiftedBlockThreads / kWarp : 1];  // FP8 per token: their amaxes
  // FP8 per block, each row group's (row_groups + 1 slots each): its groups' maxima, the spills of
  // their first chunks, their reciprocal scales.
  constexpr int kGroupSlots = kBlock ? kShiftedBlockThreads * ITERS / kGroupChunks + kShiftedBlockThreads / kWarp : 1;
  __shared__ float group_max[kGroupSlots], group_spill[kGroupSlots], group_inv[kGroupSlots];
  __shared__ Chunk<T> edges[kShiftedBlockThreads / kWarp][ITERS + 1];  // each warp's lane 0's chunks

  const int t = static_cast<int>(threadIdx.x);
  const int q = t / lanes, gt = t % lanes;
  const int groups = static_cast<int>(blockDim.x) / lanes;
  const int lane = t & (kWarp - 1), warp = t / kWarp, group_warps = lanes / kWarp;
  const int D = static_cast<int>(p.dim);  // <= 8192
  const int columns = lanes * ITERS * kChunk;
  G* const table = reinterpret_cast<G*>(shifted_mem);
  const bool weighted = p.convention != static_cast<int>(Convention::no_weight);
  // Rows residue + period·k of this block's class, its groups taking consecutive k; every row of
  // the class (those past R too) has the lead of its first.
  const int residue = static_cast<int>(blockIdx.x) % period;
  const std::int64_t class_blocks = gridDim.x / period;
  const std::int64_t step = class_blocks * groups;
  const int L = realign_lead(static_cast<const T*>(p.x) + row_off<M>(residue, p.x_stride, D, sizeof(T)));
  bool table_ready = false;

  for (std::int64_t k0 = static_cast<std::int64_t>(blockIdx.x / period) * groups; residue + period * k0 < p.rows;
       k0 += step) {
    const std::int64_t row = residue + period * (k0 + q);
    const bool active = row < p.rows;  // groups past R still join the barriers
    const T* const xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));

    // 1. Every load of the row before any use.
    auto load_row = [&](const T* r, Chunk<T>(&dst)[ITERS]) {
#pragma unroll
      for (int i = 0; i < ITERS; ++i)
        dst[i] = active ? load_shifted_chunk(r, (i * lanes + gt) * kChunk - L, D) : zero_chunk<T>();
    };
    Chunk<T> h[ITERS];
    load_row(xr, h);
    // L2, the group's next row (this warp's loads of it then wait on L2, not DRAM: DRAM keeps
    // working through this row's sums and stores).
    const std::int64_t next_row = row + period * step;
    const std::int64_t row_bytes = static_cast<std::int64_t>(D) * static_cast<std::int64_t>(sizeof(T)) + kL2Line;
    if (next_row < p.rows)
      prefetch_row_l2(static_cast<const T*>(p.x) + row_off<M>(next_row, p.x_stride, D, sizeof(T)), row_bytes, gt,
                      lanes);
    if constexpr (kAdd) {
      if (next_row < p.rows)
        prefetch_row_l2(static_cast<const T*>(p.o) + row_off<M>(next_row, p.o_stride, D, sizeof(T)), row_bytes, gt,
                        lanes);
      const T* const orow = static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T));
      Chunk<T> ov[ITERS];
      load_row(orow, ov);
      // 2. h = RN_x(x + o), written back to the residual stream.
      T* const xw = static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T));
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const int e0 = (i * lanes + gt) * kChunk - L;
        h[i] = add_rounded(h[i], ov[i]);
        if (active && e0 < D) store_shifted_chunk(xw, e0, D, h[i]);
      }
    }

    // The weights at the block's lead, once, while its first rows are in flight (published by
    // the barrier below).
    if (!table_ready) {
      for (int k = t; k < columns; k += static_cast<int>(blockDim.x)) {
        const int col = k - L;
        table[k] = (weighted && col >= 0 && col < D) ? static_cast<const G*>(p.g)[col] : from_float<G>(0.0f);
      }
    }
    // Groups of several warps: each warp's lane 0 publishes its chunks for the warp before it.
    if (group_warps > 1) {  // uniform over the grid
      if (lane == 0) {
#pragma unroll
        for (int i = 0; i < ITERS; ++i) edges[warp][i] = h[i];
        edges[warp][ITERS] = zero_chunk<T>();
      }
      __syncthreads();
    } else if (!table_ready) {
      __syncthreads();
    }
    table_ready = true;

    // 3. Σh² over column chunks, then the group's tree.
    const int last_warp_of_group = (gt / kWarp) == group_warps - 1;
    auto next = [&](int i) {
      // Lane 0 offers its next chunk (the one a one-warp group's lane 31 needs), the others their
      // own; every lane takes lane + 1's offer.
      Chunk<T> offer = h[i];
      if (lane == 0) offer = i + 1 < ITERS ? h[i + 1 < ITERS ? i + 1 : i] : zero_chunk<T>();
      Chunk<T> n;
#pragma unroll
      for (int k = 0; k < Chunk<T>::kWords; ++k) {
        n.w[k].x = __shfl_sync(kFullMask, offer.w[k].x, (lane + 1) & (kWarp - 1));
        n.w[k].y = __shfl_sync(kFullMask, offer.w[k].y, (lane + 1) & (kWarp - 1));
        n.w[k].z = __shfl_sync(kFullMask, offer.w[k].z, (lane + 1) & (kWarp - 1));
        n.w[k].w = __shfl_sync(kFullMask, offer.w[k].w, (lane + 1) & (kWarp - 1));
      }
      if (group_warps > 1 && lane == kWarp - 1)
        n = last_warp_of_group ? edges[warp + 1 - group_warps][i + 1] : edges[warp + 1][i];
      return n;
    };
    float total = warp_sum(column_chain_at<T>(L, h, next));
    if (group_warps > 1) {
      float* const mine = &partials[q * group_warps];
      if (lane == 0) mine[gt / kWarp] = total;
      __syncthreads();
      total = partials_allreduce(mine, lane, group_warps, SumOp{}, 0.0f);
    }
    const float r = rstd_of<M>(total, D, D, p.eps);
    if (active && gt == 0 && p.rstd != nullptr) p.rstd[row] = r;

    // 4. y = (h·r)·w, the thread's chunk i at a time.
    auto y_chunk = [&](int i, float(&y)[kChunk]) {
      float w[kChunk];
      weights_of(*reinterpret_cast<const Chunk<G>*>(table + (i * lanes + gt) * kChunk), p.convention, w);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = y_of<T, M>(chunk_get(h[i], j), r, w[j], p.convention);
    };
    if constexpr (!kQ) {
      T* const yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const int e0 = (i * lanes + gt) * kChunk - L;
        if (!active || e0 >= D) continue;
        float y[kChunk];
        y_chunk(i, y);
        store_shifted_chunk(yr, e0, D, pack<T>(y));
      }
    } else {
      // 5. FP8. Per token, the amax over the row's elements of y (formed, not held: the codes'
      // pass forms each y again from the same operands, the same bits). Per block (see FP8 above),
      // each group of 16 chunks' maximum, with the spill of the chunk after it, by one butterfly
      // over its 16 lanes and shared memory; then the scales, then the codes.
      const int row_groups = ITERS * lanes / kGroupChunks;  // groups of 16 of the row group's chunks
      [[maybe_unused]] float* const ginv = kBlock ? &group_inv[q * (row_groups + 1)] : nullptr;
      float inv_s = 0.0f;
      if constexpr (kBlock) {
        float* const gmax = &group_max[q * (row_groups + 1)];
        float* const gspill = &group_spill[q * (row_groups + 1)];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
          const int c = i * lanes + gt;
          const int e0 = c * kChunk - L;
          const bool cut = c % kGroupChunks == 0;  // the group's first chunk (lanes are whole warps)
          float y[kChunk];
          y_chunk(i, y);
          unsigned main_bits = 0, spill_bits = 0;
#pragma unroll
          for (int j = 0; j < kChunk; ++j) {
            if (e0 + j < 0 || e0 + j >= D) continue;
            if (cut && j < L)
              spill_bits = max(spill_bits, abs_bits(y[j]));
            else
              main_bits = max(main_bits, abs_bits(y[j]));
          }
          const float m = warp_allreduce<kGroupChunks>(__uint_as_float(main_bits), MaxOp{});
          if (cut) {
            gmax[c / kGroupChunks] = m;
            gspill[c / kGroupChunks] = __uint_as_float(spill_bits);
          }
        }
        __syncthreads();
        for (int g = gt; g < static_cast<int>(p.groups); g += lanes) {
          const float spill_after = g + 1 < row_groups ? gspill[g + 1] : 0.0f;
          const float s = scale_of<M>(nan_max(gmax[g], spill_after), p);
          if (active) p.scale[row * p.groups + g] = s;
          ginv[g] = __fdiv_rn(1.0f, s);
        }
        __syncthreads();  // the next row's maxima overwrite gmax and gspill only past this
      } else {
        float s_row = 0.0f;
        if (static_cast<Quant>(p.quant) == Quant::dynamic_token) {  // uniform over the grid
          unsigned bits = 0;
#pragma unroll
          for (int i = 0; i < ITERS; ++i) {
            const int e0 = (i * lanes + gt) * kChunk - L;
            float y[kChunk];
            y_chunk(i, y);
#pragma unroll
            for (int j = 0; j < kChunk; ++j)
              if (e0 + j >= 0 && e0 + j < D) bits = max(bits, abs_bits(y[j]));
          }
          float amax = warp_max(__uint_as_float(bits));
          if (group_warps > 1) {
            float* const mine = &max_partials[q * group_warps];
            if (lane == 0) mine[gt / kWarp] = amax;
            __syncthreads();
            amax = partials_allreduce(mine, lane, group_warps, MaxOp{}, 0.0f);
            // The next row's maxima overwrite these only behind that row's sum barrier.
          }
          s_row = scale_of<M>(amax, p);
          if (active && gt == 0) p.scale[row] = s_row;
        } else {
          s_row = *p.scale;
        }
        inv_s = __fdiv_rn(1.0f, s_row);
      }
      unsigned char* const qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const int c = i * lanes + gt;
        const int e0 = c * kChunk - L;
        if (!active || e0 >= D) continue;
        float y[kChunk];
        y_chunk(i, y);
        uint2 v;
        if constexpr (kBlock) {
          // Columns from 8c on in group c / 16 (none in the row past its last group); a cut chunk's
          // first L in the group before.
          const int g = c / kGroupChunks;
          v = quantize8<M>(y, g < static_cast<int>(p.groups) ? ginv[g] : 1.0f, p.fp8_fmt, p.fp8_max);
          if (c % kGroupChunks == 0 && L > 0 && g > 0) {
            const uint2 u = quantize8<M>(y, ginv[g - 1], p.fp8_fmt, p.fp8_max);
            const std::uint64_t low = (std::uint64_t{1} << (8 * L)) - 1;  // bytes 0 .. L-1
            const std::uint64_t a = (std::uint64_t{v.y} << 32 | v.x) & ~low, b = (std::uint64_t{u.y} << 32 | u.x) & low;
            v = make_uint2(static_cast<unsigned>(a | b), static_cast<unsigned>((a | b) >> 32));
          }
        } else {
          v = quantize8<M>(y, inv_s, p.fp8_fmt, p.fp8_max);
        }
        if (e0 >= 0 && e0 + kChunk <= D) {
          __stcs(reinterpret_cast<uint2*>(qr + e0), v);  // 8-byte aligned: y shares x's frame
        } else {
#pragma unroll
          for (int j = 0; j < kChunk; ++j)
            if (e0 + j >= 0 && e0 + j < D)
              qr[e0 + j] = static_cast<unsigned char>(((j < 4 ? v.x : v.y) >> (8 * (j & 3))) & 0xffu);
        }
      }
    }
  }
}

// fwd.shifted_row's limits: a warp's rows follow one another (load, sum, store), so its loads wait
// idle through the row's work; the column-chunk order (the shuffles and the switch over the lead,
// which make a row's bits independent of its position) costs 12-15 % at 32768 x 1025, and a second
// register set for the next row's loads costs more than it gains (128 registers a thread halve the
// warps an SM holds).
// fwd.shifted_row (above): a persistent grid of shifted_config(D) blocks, a whole
// number of residue classes of the rows' lead period; the weights at a block's lead as dynamic
// shared memory.

struct fwd_shifted_row {
  static constexpr const char* kName = "fwd.shifted_row";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 800;
  static constexpr const char* kDescription =
      "D <= 8192, rows of any alignment whose tensors share one 16-byte frame, every forward op (FP8: 16-bit rows): "
      "a group of whole warps per row, the row in registers, 16-byte vectors where the "
      "row lies (element accesses at its two ends only), the weights in shared memory at the block's lead, the row sum "
      "over column chunks whatever the lead";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = 8192, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::shared_frame;
  static constexpr bool kQuant16BitRows = true;  // FP8 outputs of 16-bit rows only (refuse())
  using Mutants = MutantList<Mutant::M2_eps_outside_root, Mutant::M8_stride_ignored, Mutant::M13_fp8_via_bf16,
                             Mutant::M15_llama_double_round>;

  static AccumShape shape(std::int64_t dim) {
    // Σh² over column chunks, chunk c on thread c % lanes.
    const ShiftedConfig c = shifted_config(dim);
    return chunked_block_shape(dim, c.lanes);
  }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    const std::int64_t D = a.dim;
    // Any alignment, but one frame: every row of x, y (and o) at the same offset from a 16-byte
    // boundary (equal base offsets, and row strides of equal residue when R > 1); an FP8 y at the
    // same offset in elements from an 8-byte boundary as x from a 16-byte one (FP8 above).
    const std::size_t es = size_of(a.x.type);
    if (a.quant != Quant::none) {
      if (es != 2)
        return Status::fail(Status::Code::unsupported,
                            who + ": FP8 outputs of 16-bit rows only (fp32 leads have no 8-byte frame)");
    }
    if (D > kShiftedMaxDim)
      return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kShiftedMaxDim));
    // (offset of row 0, offset step a row) in elements, modulo the elements of the frame's vector.
    auto frame_of = [&](const Tensor& v, std::size_t elem, std::uint64_t vec) {
      const std::uint64_t base = reinterpret_cast<std::uintptr_t>(v.data) % vec / elem;
      const std::uint64_t step = a.rows > 1 ? static_cast<std::uint64_t>(v.stride) * elem % vec / elem : 0;
      return base * kVecBytes + step;
    };
    const std::uint64_t x_frame = frame_of(a.x, es, kVecBytes);
    const bool y_shares =
        a.quant != Quant::none ? frame_of(a.y, 1, kChunk) == x_frame : frame_of(a.y, es, kVecBytes) == x_frame;
    if (!y_shares || (a.o.data != nullptr && frame_of(a.o, es, kVecBytes) != x_frame))
      return Status::fail(Status::Code::misaligned,
                          who + ": the rows of x, y" + (a.o.data ? ", o" : "") +
                              " do not share one frame (base offsets or row strides differ mod 16 bytes, an FP8 y's "
                              "mod 8 elements)");
    return Status::success();
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return run_variant<M, fwd_shifted_row>(
        a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
          using T = typename decltype(tt)::type;
          using G = typename decltype(gt)::type;
          constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
          if constexpr (!kQ || sizeof(T) == 2) {  // can_implement declines FP8 outputs of fp32 rows
            const ShiftedConfig c = shifted_config(a.dim);
            const std::size_t smem = shifted_table_bytes(a.dim, sizeof(G));
            const int period = a.rows > 1 ? shifted_period(a.x.stride, sizeof(T)) : 1;
            auto go = [&](auto kernel) {
              cudaError_t e = cudaSuccess;
              if (smem > 48 * 1024)
                e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
              // As many blocks as fit at once, a whole number of residue classes, none without a row.
              const std::int64_t per_class = ((a.rows + period - 1) / period + c.groups - 1) / c.groups;
              std::int64_t grid = 0;
              if (e == cudaSuccess) e = persistent_grid(kernel, c.block(), smem, per_class * period, grid);
              if (e != cudaSuccess) {
                result = Status::fail(Status::Code::launch_failed,
                                      std::string("fwd.shifted_row: launch shape: ") + cudaGetErrorString(e));
                return;
              }
              grid = std::max<std::int64_t>(grid / period, 1) * period;
              launch_kernel(kernel, grid_for(grid), c.block(), smem, s, p, c.lanes, period);
            };
            auto form = [&](auto iters) {
              constexpr int I = decltype(iters)::value;
              if constexpr (kQ) {
                if (a.quant == Quant::per_block) return go(fwd_shifted_kernel<T, G, kA, true, true, I, M>);
              }
              go(fwd_shifted_kernel<T, G, kA, kQ, false, I, M>);
            };
            if (c.iters == 5)
              form(std::integral_constant<int, 5>{});
            else
              form(std::integral_constant<int, 4>{});
          }
        });
  }
};

}  // namespace rmsnorm::cuda::fwd
