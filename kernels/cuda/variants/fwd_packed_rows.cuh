// fwd.packed_rows: the forward and the fused-add forward of packed rows (every row stride = D)
// at any alignment — odd D above all (1025, 4097, 8191: every row starts at another alignment)
// — with 16-byte vectors anyway: the backward's packed tiles (packed_tiles.cuh; the design in
// backward_packed.cuh), here for x (and o).
//
// Why. fwd.element_row.realigned moves each row through shared memory in 16-byte vectors, but one row
// per block at a time, synchronously: 0.50 of the same-run copy at 32768 x 1025 bf16 (fused add
// 0.44; H200). Here a program keeps
// several tiles of consecutive rows in flight (cp.async stages), and a thread's work per tile is
// 2 rows of up to 8 columns (or 1 of up to 13).
//
// Per iteration, per thread (as the backward): read tile i from its stage — the fused add forms
// h = RN(x + o) and writes it to the residual right away (element stores, a warp's store 32
// consecutive elements) — and sum h² of its rows' columns; wait for its own copies of tile
// i + 1; the rows' reduction (groups_sum_n, the one barrier: it also publishes tile i + 1 and
// frees tile i − 1's stage); issue tile i + S − 1; then r = 1/sqrt(Σh²/D + eps) per row (stored
// to rstd when asked), y = (h·r)·w written element by element. Nothing outside the tile is
// written; in place (y = x, or y = o under the fused add, the residual over x) the tile was
// copied to shared memory before any of its outputs is written.
//
// Columns and order (packed_tiles.cuh): warp-wide chunks, a thread's elements 32 apart; Σh²
// chained per thread in column order (at most min(M, ceil(D / 32)) terms, from +0), then the
// group butterfly (5 + ceil_log2(G / 32) levels): packed_row_shape(D). The maths of every forward
// (forward_kernels.cuh: rstd_of, y_of, effective_weight).
//
// FP8 outputs (kQuant; the alternative for odd D is fwd.element_row.realigned's one row per block, 0.32 of
// the copy for add + FP8 at 32768 x 1025 bf16 on the H200): y stays fp32 in h's registers; the
// scale is the given one, the row's amax (a second barrier: the amax needs r; a maximum of |y|'s
// bits is exact in any order, so the bits stay batch-invariant), or per block of 128 columns the
// group maxima in shared memory (a warp's redux, then one atomicMax per warp and column step), a
// pass over the tile's groups for their scales, and a third barrier; the codes are stored byte by
// byte.
#pragma once

#include "forward_variant.h"
#include "packed_tiles.cuh"

namespace rmsnorm::cuda::fwd {

// Tiles planned for two tensors (x and o), no per-row floats (r is computed here); two blocks an
// SM where a row's group fits 320 threads (D <= 2560).
inline constexpr int kPackedFwdTensors = 2;
inline constexpr int kPackedFwdPerSM = 2;
inline PackedConfig packed_fwd_config(std::int64_t dim, std::size_t elem_bytes) {
  return packed_tile_config(dim, elem_bytes, kPackedFwdTensors, kPackedFwdPerSM);
}
inline std::size_t packed_fwd_stage_bytes(const PackedConfig& c, std::int64_t dim, std::size_t elem_bytes, bool add) {
  return packed_ring_stage_bytes(c, dim, elem_bytes, add ? 2 : 1, /*row_floats=*/false);
}
inline int packed_fwd_stages(std::int64_t dim, std::size_t elem_bytes, bool add, std::int64_t tiles_per_program = 0) {
  const PackedConfig c = packed_fwd_config(dim, elem_bytes);
  return packed_ring_stages(packed_fwd_stage_bytes(c, dim, elem_bytes, add), tiles_per_program, c.per_sm);
}

// FP8 per block of 128: one group maximum per (tile row, group) in shared memory, at most
// kPackedMaxQuantEntries (the largest tile_rows · ceil(D / 128) of any D <= 8192 is 80, at
// D = 897: 10 rows of 7 groups; packed_quant_entries below, checked by the launcher and for every
// D by test_launch_configs).
inline constexpr int kPackedMaxQuantEntries = 128;
inline std::int64_t packed_quant_entries(std::int64_t dim, std::size_t elem_bytes) {
  return std::int64_t{packed_fwd_config(dim, elem_bytes).tile_rows()} * ((dim + kQuantGroup - 1) / kQuantGroup);
}

template <typename T, typename G, int M, int RG, bool kAdd, bool kQuant, Mutant MU>
__global__ void __launch_bounds__(M > kPackedPerThread ? kPackedWideMaxThreads : kPackedMaxThreads, 1)
    fwd_packed_kernel(Params p, int group_threads, int groups, int stages) {
  begin_dependent_grid();
  constexpr int kTensors = kAdd ? 2 : 1;
  // Columns past a row's end: predicated accesses (kPredicated) in the fused add and the FP8
  // forms, 2-27 % faster than a branch around each element there (H200, D = 513-8191, R = 4096
  // and 32768); the plain forward keeps the branch (predicated, it runs 1-7 % slower in bf16 rows).
  constexpr bool kPredicated = kAdd || kQuant;
  extern __shared__ __align__(16) unsigned char packed_mem[];
  __shared__ float reduce_buf[2][kPackedMaxGroups][RG][kWarp];
  // FP8: the per-token amax partials (a second barrier per tile: the amax needs r), and per block
  // of 128 the group maxima as |y|'s bits (integer atomicMax: exact and order-free) and their
  // reciprocal scales.
  __shared__ float max_buf[kQuant ? kPackedMaxGroups : 1][RG][kWarp];
  __shared__ unsigned group_bits[kQuant ? kPackedMaxQuantEntries : 1];
  __shared__ float group_inv[kQuant ? kPackedMaxQuantEntries : 1];

  const PackedThread me(group_threads);
  const int t = me.t, nthreads = me.nthreads, q = me.q, gt = me.gt;
  const int D = static_cast<int>(p.dim);  // ≤ 8192
  const int tile_rows = groups * RG;
  const std::int64_t total = p.rows * p.dim;  // elements of each packed tensor
  const T* const x = static_cast<const T*>(p.x);
  [[maybe_unused]] const T* const o = static_cast<const T*>(p.o);
  [[maybe_unused]] T* const h_out = static_cast<T*>(p.x_out);
  T* const y = static_cast<T*>(p.y);

  const std::size_t tile_bytes = static_cast<std::size_t>(realign_buffer_bytes(std::int64_t{tile_rows} * D, sizeof(T)));
  const std::size_t stage_bytes = kTensors * tile_bytes;
  auto tile_buf = [&](int s, int k) { return reinterpret_cast<T*>(packed_mem + s * stage_bytes + k * tile_bytes); };

  // The tile of rows [row0, row0 + GR·RG) into stage s: one commit group per tile (empty past
  // the last, so the group count stays uniform).
  auto issue = [&](std::int64_t row0, int s) {
    if (row0 < p.rows) {
      const int nr = static_cast<int>(min(static_cast<std::int64_t>(tile_rows), p.rows - row0));
      stage_packed_span(tile_buf(s, 0), x, row0 * D, nr * D, total, t, nthreads);
      if constexpr (kAdd) stage_packed_span(tile_buf(s, 1), o, row0 * D, nr * D, total, t, nthreads);
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

  // The effective weights of this thread's columns, once.
  const bool weighted = p.convention != static_cast<int>(Convention::no_weight);
  float w[M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const int col = c0 + m * kWarp;
    w[m] = (weighted && col < D) ? effective_weight(to_float(static_cast<const G*>(p.g)[col]), p.convention) : 1.0f;
  }

  [[maybe_unused]] const Quant mode = static_cast<Quant>(p.quant);
  [[maybe_unused]] float inv_static = 0.0f;
  if constexpr (kQuant) {
    if (mode == Quant::static_scale) inv_static = __fdiv_rn(1.0f, *p.scale);
    // Zero group maxima for the first tile (published by the ring's prologue barrier); each
    // tile's scale pass zeroes the entries it reads.
    for (int e = t; e < kPackedMaxQuantEntries; e += nthreads) group_bits[e] = 0u;
  }

  // The convention's one branch per row instead of one per element (y_of: llama rounds h·r).
  constexpr int kLlama = static_cast<int>(Convention::llama), kStandard = static_cast<int>(Convention::standard);
  const bool llama = p.convention == kLlama;

  int parity = 0;
  PackedRing(p.rows, tile_rows, stages).run(issue, [&](int s, std::int64_t row0, int nrows, auto&& issue_next) {
    const std::int64_t e0 = row0 * D;
    const T* xs = tile_buf(s, 0) + realign_lead(x + e0);
    [[maybe_unused]] const T* os = nullptr;
    if constexpr (kAdd) os = tile_buf(s, 1) + realign_lead(o + e0);

    float ss[RG], h[RG][M];
#pragma unroll
    for (int k = 0; k < RG; ++k) {
      const int row = q * RG + k;  // in the tile
      const int n = row < nrows ? ncols : 0;
      // This thread's elements of the row: its first one's address plus m·kStep.
      const std::uint32_t xa = shared_address(xs + row * D + c0);
      [[maybe_unused]] const std::uint32_t oa = kAdd ? shared_address(os + row * D + c0) : 0u;
      [[maybe_unused]] const std::uint64_t ha =
          kAdd ? global_address(h_out + e0 + static_cast<std::int64_t>(row) * D + c0) : 0;
      SumSquares<T, MU> sq;
      by_warp(full_warp && row < nrows, [&](auto full_c) {
        constexpr bool kFull = decltype(full_c)::value;
#pragma unroll
        for (int m = 0; m < M; ++m) {
          if constexpr (kFull) {
            float v = to_float(load_shared_at<T>(xa + m * kStep));
            if constexpr (kAdd) {
              const T hb = from_float<T>(v + to_float(load_shared_at<T>(oa + m * kStep)));
              v = to_float(hb);
              store_global_at(ha + m * kStep, hb);  // the residual stream
            }
            h[k][m] = v;
            sq.add(v);
          } else if constexpr (!kPredicated) {
            // h of an absent column (m ≥ n) is left unset: nothing below reads it.
            if (m < n) {
              const float v = to_float(load_shared_at<T>(xa + m * kStep));
              h[k][m] = v;
              sq.add(v);
            }
          } else {
            // An absent column (m ≥ n) is loaded as +0 (predicated off) and not stored: its
            // square adds +0 to a sum that is +0 or more, which leaves every bit of it as it was.
            const bool on = m < n;
            float v = to_float(load_shared_if<T>(on, xa + m * kStep));
            if constexpr (kAdd) {
              const T hb = from_float<T>(v + to_float(load_shared_if<T>(on, oa + m * kStep)));
              v = to_float(hb);
              store_global_if(on, ha + m * kStep, hb);  // the residual stream
            }
            h[k][m] = v;
            sq.add(v);
          }
        }
      });
      ss[k] = sq.acc;
    }
    wait_copies(stages - 3);  // this thread's copies of tile i + 1, published by the barrier below
    groups_sum_n<RG>(ss, &reduce_buf[parity][q][0][0], gt, group_threads);
    parity ^= 1;

    issue_next();  // into tile i − 1's stage

    if constexpr (!kQuant) {
#pragma unroll
      for (int k = 0; k < RG; ++k) {
        const int row = q * RG + k;
        if (row >= nrows) continue;
        const float r = rstd_of<MU>(ss[k], D, D, p.eps);
        if (gt == 0 && p.rstd != nullptr) p.rstd[row0 + row] = r;
        const std::uint64_t ya = global_address(y + e0 + static_cast<std::int64_t>(row) * D + c0);
        // Column m's y: a predicated store (kPredicated) or a store behind the branch (y formed
        // inside it, as the plain forward's SASS shows).
        by_warp(full_warp, [&](auto full_c) {
          constexpr bool kFull = decltype(full_c)::value;
          auto put_y = [&](int m, auto&& y_at) {
            if constexpr (kFull) {
              store_global_at(ya + m * kStep, from_float<T>(y_at()));
            } else if constexpr (kPredicated) {
              store_global_if(m < ncols, ya + m * kStep, from_float<T>(y_at()));
            } else if (m < ncols) {
              store_global_at(ya + m * kStep, from_float<T>(y_at()));
            }
          };
          if (llama) {
#pragma unroll
            for (int m = 0; m < M; ++m) put_y(m, [&] { return y_of<T, MU>(h[k][m], r, w[m], kLlama); });
          } else {
#pragma unroll
            for (int m = 0; m < M; ++m) put_y(m, [&] { return y_of<T, MU>(h[k][m], r, w[m], kStandard); });
          }
        });
      }
    } else {
      // FP8 outputs: y (fp32, in h's registers), its scale, then q = RN_fp8_sat(y / s) stored
      // byte by byte (a warp's store covers 32 consecutive bytes). The barriers below are taken
      // by every thread (rows past the tile contribute nothing), the mode is uniform.
      unsigned bits[RG];
#pragma unroll
      for (int k = 0; k < RG; ++k) {
        const int row = q * RG + k;
        const int n = row < nrows ? ncols : 0;
        const float r = rstd_of<MU>(ss[k], D, D, p.eps);
        if (gt == 0 && p.rstd != nullptr && row < nrows) p.rstd[row0 + row] = r;
        bits[k] = 0u;
        if (llama) {
#pragma unroll
          for (int m = 0; m < M; ++m) h[k][m] = y_of<T, MU>(h[k][m], r, w[m], kLlama);
        } else {
#pragma unroll
          for (int m = 0; m < M; ++m) h[k][m] = y_of<T, MU>(h[k][m], r, w[m], kStandard);
        }
        // Absent columns kept out of the maximum (their y is 0·r·1, NaN where r = inf).
#pragma unroll
        for (int m = 0; m < M; ++m) bits[k] = m < n ? max(bits[k], abs_bits(h[k][m])) : bits[k];
      }
      float inv_row[RG];
      if (mode == Quant::dynamic_token) {
        float amax[RG];
#pragma unroll
        for (int k = 0; k < RG; ++k) amax[k] = __uint_as_float(bits[k]);
        groups_allreduce_n<RG>(amax, &max_buf[q][0][0], gt, group_threads, MaxOp{}, 0.0f);
#pragma unroll
        for (int k = 0; k < RG; ++k) {
          const int row = q * RG + k;
          const float s = scale_of<MU>(amax[k], p);
          if (gt == 0 && row < nrows) p.scale[row0 + row] = s;
          inv_row[k] = __fdiv_rn(1.0f, s);
        }
      } else {
#pragma unroll
        for (int k = 0; k < RG; ++k) inv_row[k] = inv_static;
      }
      const int ngroups = static_cast<int>(p.groups);
      // Per block: a warp's 32 columns wcol + 32m + [0, 32) lie in one group of 128 (wcol, the
      // warp's first column, is a multiple of 32), group (wcol + 32m) / 128. wcol is made opaque
      // here so that the compiler forms each step's group index where it is used: hoisted out of
      // the tile loop, the 2·M indices held in registers spill 20-24 bytes at 96 registers
      // (with the run-time column step).
      unsigned wcol = static_cast<unsigned>(c0) & ~static_cast<unsigned>(kWarp - 1);
      asm volatile("" : "+r"(wcol));
      auto group_of = [&](int m) {
        return (wcol + static_cast<unsigned>(m * kWarp)) / static_cast<unsigned>(kQuantGroup);
      };
      if (mode == Quant::per_block) {
        // The warp's maximum first (redux), then one shared atomic per warp and column step.
        const int lane = gt & (kWarp - 1);
#pragma unroll
        for (int k = 0; k < RG; ++k) {
          const int row = q * RG + k;
          const int n = row < nrows ? ncols : 0;
#pragma unroll
          for (int m = 0; m < M; ++m) {
            const unsigned b = __reduce_max_sync(kFullMask, m < n ? abs_bits(h[k][m]) : 0u);
            const bool present = wcol + static_cast<unsigned>(m * kWarp) < static_cast<unsigned>(D);
            if (lane == 0 && row < nrows && present) atomicMax(&group_bits[row * ngroups + group_of(m)], b);
          }
        }
        __syncthreads();
        if (t <
            nrows * ngroups) {  // a tile's entries never outnumber the block's threads (test_launch_configs, every D)
          const float s = scale_of<MU>(__uint_as_float(group_bits[t]), p);
          group_bits[t] = 0u;  // for the next tile: its atomics follow its first barrier
          p.scale[row0 * ngroups + t] = s;
          group_inv[t] = __fdiv_rn(1.0f, s);
        }
        __syncthreads();
      }
      // The codes, each row's columns with the reciprocal scale inv_of(k, row, m).
      unsigned char* const q8 = static_cast<unsigned char*>(p.y);
      auto store_codes = [&](auto&& inv_of) {
#pragma unroll
        for (int k = 0; k < RG; ++k) {
          const int row = q * RG + k;
          if (row >= nrows) continue;
          const std::uint64_t qa = global_address(q8 + e0 + static_cast<std::int64_t>(row) * D + c0);
          by_warp(full_warp, [&](auto full_c) {
            constexpr bool kFull = decltype(full_c)::value;
#pragma unroll
            for (int m = 0; m < M; ++m) {
              const unsigned char code = quantize<MU>(h[k][m], inv_of(k, row, m), p.fp8_fmt, p.fp8_max);
              if constexpr (kFull) {
                store_global_at(qa + m * kWarp, code);
              } else {
                store_global_if(m < ncols, qa + m * kWarp, code);
              }
            }
          });
        }
      };
      if (mode == Quant::per_block) {
        store_codes([&](int, int row, int m) { return group_inv[row * ngroups + group_of(m)]; });
      } else {
        store_codes([&](int k, int, int) { return inv_row[k]; });
      }
    }
  });
}

// fwd.packed_rows: one program per SM, two where the tile plan holds as many
// threads that way (D <= 2560; at most the tiles), the stages capped at a program's tiles.
// Dispatched for the fused add, the fused add + FP8, the FP8 forward per block and the plain
// forward of packed rows where it measured faster: its rows in the dispatch table.
struct fwd_packed_rows {
  static constexpr const char* kName = "fwd.packed_rows";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 900;
  static constexpr const char* kDescription =
      "D <= 8192, packed rows (stride = D) of any alignment, every forward op (FP8 outputs: static, per token, per "
      "block of 128): tiles of consecutive rows copied as 16-byte vectors into shared-memory stages (cp.async), "
      "outputs stored element by element";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = 8192, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::packed;
  using Mutants = MutantList<Mutant::M2_eps_outside_root, Mutant::M3_low_precision_sum, Mutant::M12_scale_no_floor,
                             Mutant::M13_fp8_via_bf16>;

  static AccumShape shape(std::int64_t dim) { return packed_row_shape(dim); }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    const std::int64_t D = a.dim;
    // Any alignment, but packed rows: a tile of consecutive rows is one span of each tensor.
    if (D > kPackedMaxDim)
      return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kPackedMaxDim));
    if (a.quant == Quant::per_block && packed_quant_entries(D, size_of(a.x.type)) > kPackedMaxQuantEntries)
      return Status::fail(Status::Code::unsupported,
                          who + ": a tile's FP8 groups exceed " + std::to_string(kPackedMaxQuantEntries));
    const bool packed = a.rows <= 1 || (a.x.stride == D && a.y.stride == D && (a.o.data == nullptr || a.o.stride == D));
    if (!packed)
      return Status::fail(Status::Code::unsupported, who + ": rows are not packed (a row stride differs from D)");
    if (packed_fwd_stages(D, size_of(a.x.type), a.o.data != nullptr) < kPackedMinStages)
      return Status::fail(Status::Code::unsupported, who + ": fewer than 3 stages of this tile fit shared memory");
    return Status::success();
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return run_variant<M, fwd_packed_rows>(
        a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
          using T = typename decltype(tt)::type;
          using G = typename decltype(gt)::type;
          constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
          const int sms = sm_count();
          if (sms <= 0) {
            result = Status::fail(Status::Code::no_device, "fwd.packed_rows: no CUDA device answered for the SM count");
          } else {
            const PackedConfig c = packed_fwd_config(a.dim, sizeof(T));
            const std::int64_t tiles = (a.rows + c.tile_rows() - 1) / c.tile_rows();
            const std::int64_t grid = std::min<std::int64_t>(std::int64_t{c.per_sm} * sms, tiles);
            const int stages = packed_fwd_stages(a.dim, sizeof(T), kA, (tiles + grid - 1) / grid);
            const std::size_t smem = static_cast<std::size_t>(stages) * packed_fwd_stage_bytes(c, a.dim, sizeof(T), kA);
            auto go = [&](auto kernel) {
              cudaError_t e =
                  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
              // Two blocks an SM need the largest shared-memory carveout.
              if (e == cudaSuccess && c.per_sm > 1)
                e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared);
              if (e != cudaSuccess) {
                result = Status::fail(Status::Code::launch_failed,
                                      std::string("fwd.packed_rows: shared memory: ") + cudaGetErrorString(e));
                return;
              }
              launch_kernel(kernel, grid_for(grid), c.block(), smem, s, p, c.threads, c.groups, stages);
            };
            if (c.per_thread == kPackedPerThreadWide) {
              go(fwd_packed_kernel<T, G, kPackedPerThreadWide, 1, kA, kQ, M>);
            } else if (c.per_group == kPackedRowsPerGroup) {
              go(fwd_packed_kernel<T, G, kPackedPerThread, kPackedRowsPerGroup, kA, kQ, M>);
            } else {
              go(fwd_packed_kernel<T, G, kPackedPerThread, 1, kA, kQ, M>);
            }
          }
        });
  }
};

}  // namespace rmsnorm::cuda::fwd
