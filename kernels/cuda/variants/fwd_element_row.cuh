// fwd.element_row: D <= 8192, any alignment: a block per row, the row in registers, coalesced
// element-wise accesses (odd D, misaligned or odd-strided rows); and its launch form
// fwd.element_row.realigned: the same kernel with the row moved between global and shared memory
// in 16-byte vectors (elements only before the row's first 16-byte boundary and after its last);
// the same bits.
#pragma once

#include "forward_variant.h"

namespace rmsnorm::cuda::fwd {

// Element row: any alignment, the row in registers
// ---------------------------------------------------------------------------------------------

inline constexpr int kElementSlots = 16;        // elements per thread
inline constexpr int kElementMaxThreads = 512;  // so D <= 8192 (128 registers: no spill)
inline constexpr int kElementMaxGroups = kElementSlots * kElementMaxThreads / static_cast<int>(kQuantGroup);

// Thread t owns elements t, t + B, ..., t + 15·B of the row (B = blockDim.x, a function of D
// only): every load or store instruction of a warp touches 32 consecutive elements, coalesced
// whatever the alignment of the row start, and the reduction order depends on D alone, so rows
// of odd width (every row start at a different alignment) are batch-invariant. x (and o) are
// read once; all of a thread's loads are issued before the first use.
// Per-block FP8: the group maxima meet in shared memory through integer atomicMax on |y|'s bit
// patterns, one per warp and step after the warp's own maximum — a maximum is order-independent
// and exact, so this stays deterministic.
//
// kRealign (fwd.element_row.realigned): the same mapping, order and arithmetic — the same bits — but
// the row moves between global and shared memory in 16-byte vectors (realign_load/store below):
// x (and o) are copied into shared memory first, each thread reads its elements from there, and
// y (and the fused add's residual) is written to shared memory and stored from there. An
// element access moves 2 bytes of a 16-bit row per thread and instruction; a vector 16.
// kEarlyW (fwd.element_row's FP8 forward of few rows, kEarlyWeightsMaxRows): the row's weights are
// loaded with its x, before the row sum, instead of after it: a second round trip to memory
// otherwise (the same values and arithmetic: the same bits).
template <typename T, typename G, bool kQuant, bool kAdd, Mutant M, bool kRealign = false, bool kPersistent = false,
          bool kEarlyW = false>
__global__ void __launch_bounds__(kElementMaxThreads) fwd_element_kernel(Params p) {
  begin_dependent_grid();
  constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  constexpr int K = kElementSlots;
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  __shared__ unsigned group_bits[kQuant ? kElementMaxGroups : 1];
  __shared__ float group_inv[kQuant ? kElementMaxGroups : 1];
  // Column indices in 32 bits (D <= 8192); row offsets stay 64-bit (row_off).
  const int t = static_cast<int>(threadIdx.x);
  const int B = static_cast<int>(blockDim.x);
  const int D = static_cast<int>(p.dim);
  const G* g = static_cast<const G*>(p.g);
  const bool weighted = p.convention != static_cast<int>(Convention::no_weight);

  // One block per row (the launcher checks R < 2^31): nothing is carried from row to row, so
  // no per-slot address arithmetic is hoisted out of a row loop and held in registers.
  // kPersistent (fwd.element_row.realigned): a grid of a few blocks per SM walks the rows blockIdx.x +
  // k·gridDim.x with the row's weights held in registers from the start (16 fp32 per thread):
  // a row of the one-block-per-row form pays a global load, a conversion and the convention per
  // element for its weights, and a block launch (ncu: 60 instructions per element at D = 1025,
  // 0.45 of the copy). Same mapping, order and arithmetic: the same bits.
  static_assert(!kPersistent || kRealign, "persistent rows: the realigned form only");
  static_assert(!kEarlyW || (!kPersistent && M == Mutant::none), "early weights: the product's block-per-row form");
  // This thread's K effective weights (1 past D and without weights).
  [[maybe_unused]] auto thread_weights = [&](float (&w)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = t + k * B;
      w[k] = (weighted && j < D) ? effective_weight(to_float(g[j]), p.convention) : 1.0f;
    }
  };
  [[maybe_unused]] float w_held[kPersistent ? K : 1];
  if constexpr (kPersistent) thread_weights(w_held);
  auto row_body = [&](const std::int64_t row) {
    // kRealign: two row buffers of realign_buffer_bytes(D, sizeof(T)) in dynamic shared memory
    // (x, then the residual or y; o, then y under the fused add).
    extern __shared__ __align__(16) unsigned char realign_mem[];
    T* const buf_a = reinterpret_cast<T*>(realign_mem);
    T* const buf_b = reinterpret_cast<T*>(realign_mem + realign_buffer_bytes(D, sizeof(T)));
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    [[maybe_unused]] const T* orow =
        kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;
    [[maybe_unused]] int lead_x = 0, lead_o = 0;
    if constexpr (kRealign) {
      lead_x = realign_load(buf_a, xr, D, t, B);
      if constexpr (kAdd) lead_o = realign_load(buf_b, orow, D, t, B);
      if constexpr (kPersistent) {  // the block's next row into L2, behind this row's loads
        if (row + gridDim.x < p.rows) {
          const std::int64_t next = row + gridDim.x;
          prefetch_row_l2(static_cast<const T*>(p.x) + row_off<M>(next, p.x_stride, D, sizeof(T)), D * sizeof(T), t, B);
          if constexpr (kAdd)
            prefetch_row_l2(static_cast<const T*>(p.o) + row_off<M>(next, p.o_stride, D, sizeof(T)), D * sizeof(T), t,
                            B);
        }
      }
      __syncthreads();
    }
    float h[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = t + k * B;
      if constexpr (kRealign) {
        h[k] = j < D ? to_float(buf_a[lead_x + j]) : 0.0f;
      } else {
        h[k] = j < D ? load_scalar(xr, j) : 0.0f;
      }
    }
    [[maybe_unused]] float w_early[kEarlyW ? K : 1];
    if constexpr (kEarlyW) thread_weights(w_early);
    [[maybe_unused]] float hn[K];  // M17: the unrounded x + o that the mutant normalizes
    if constexpr (kAdd) {
      T* xw = static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T));
      float o[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int j = t + k * B;
        if constexpr (kRealign) {
          o[k] = j < D ? to_float(buf_b[lead_o + j]) : 0.0f;
        } else {
          o[k] = j < D ? load_scalar(orow, j) : 0.0f;
        }
      }
      [[maybe_unused]] int lead_w = 0;
      if constexpr (kRealign) {
        __syncthreads();  // every x and o read from the buffers: buf_a takes the residual
        lead_w = realign_lead(xw);
      }
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int j = t + k * B;
        hn[k] = h[k] + o[k];
        h[k] = round_through<T>(hn[k]);
        if constexpr (kRealign) {
          if (j < D) buf_a[lead_w + j] = from_float<T>(h[k]);
        } else {
          if (j < D) store_scalar(xw, j, h[k]);
        }
        if constexpr (M == Mutant::M17_add_unrounded_sum) h[k] = hn[k];
      }
      if constexpr (kRealign) {
        __syncthreads();
        realign_store(xw, buf_a, D, t, B);
      }
    }
    // kRealign: the buffer y goes through (x's buffer, or o's under the fused add: x's holds the
    // residual being stored). Without the fused add every thread has read its x from buf_a
    // before block_sum's barrier below, so y may overwrite it after.
    [[maybe_unused]] T* const buf_y = kAdd ? buf_b : buf_a;
    // Σh²: the slots in order (zeros past D add exact zeros), then the block tree.
    SumSquares<T, M> ss;
#pragma unroll
    for (int k = 0; k < K; ++k) ss.add(h[k]);
    const float total = block_sum<kBarrier>(ss.acc, sum_partials);
    const float r = rstd_of<M>(total, D, ((D + kChunk - 1) / kChunk) * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    float y[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = t + k * B;
      float w = 1.0f;
      if constexpr (kPersistent) {
        w = w_held[k];
      } else if constexpr (kEarlyW) {
        w = w_early[k];
      } else if (weighted && j < D) {
        w = effective_weight(to_float(g[M == Mutant::M20_weight_by_row
                                            ? static_cast<int>(static_cast<unsigned>(row) % static_cast<unsigned>(D))
                                            : j]),
                             p.convention);
      }
      y[k] = y_of<T, M>(h[k], r, w, p.convention);
    }

    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
      if constexpr (kRealign) {
        const int lead_y = realign_lead(yr);
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int j = t + k * B;
          if (j < D) buf_y[lead_y + j] = from_float<T>(y[k]);
        }
        __syncthreads();
        realign_store(yr, buf_y, D, t, B);
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int j = t + k * B;
          if (j < D) store_scalar(yr, j, y[k]);
        }
      }
    } else {
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      float inv_row = 0.0f;
      if (mode == Quant::per_block) {
        for (int gi = t; gi < static_cast<int>(p.groups); gi += B) group_bits[gi] = 0u;
        __syncthreads();
        // Step k of a warp covers 32 consecutive columns from a multiple of 32 (B is one), so one
        // group of 128: the warp's maximum first (redux; a column past D offers 0, below every
        // |y|'s bits), then one shared atomic per warp and step, as fwd.packed_rows meets them
        // (32 lanes' atomics on one address are served one by one).
        static_assert(kQuantGroup % kWarp == 0, "a warp's step lies in one group");
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int j = t + k * B;
          const unsigned m = __reduce_max_sync(kFullMask, j < D ? abs_bits(y[k]) : 0u);
          if ((t & (kWarp - 1)) == 0 && j < D) atomicMax(&group_bits[j / static_cast<int>(kQuantGroup)], m);
        }
        __syncthreads();
        for (int gi = t; gi < static_cast<int>(p.groups); gi += B) {
          const float s = scale_of<M>(__uint_as_float(group_bits[gi]), p);
          p.scale[row * p.groups + gi] = s;
          group_inv[gi] = __fdiv_rn(1.0f, s);
        }
        __syncthreads();
      } else {
        float s_row = 0.0f;
        if (mode == Quant::static_scale) {
          s_row = *p.scale;
        } else {
          unsigned bits = 0;
#pragma unroll
          for (int k = 0; k < K; ++k)
            if (t + k * B < D) bits = max(bits, abs_bits(y[k]));
          s_row = scale_of<M>(block_max<kBarrier>(__uint_as_float(bits), max_partials), p);
          if (t == 0) p.scale[row] = s_row;
        }
        inv_row = __fdiv_rn(1.0f, s_row);
      }
      [[maybe_unused]] unsigned char* const buf_q = reinterpret_cast<unsigned char*>(buf_y);
      [[maybe_unused]] const int lead_q = kRealign ? realign_lead(qr) : 0;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int j = t + k * B;
        if (j < D) {
          const float inv_s = mode == Quant::per_block ? group_inv[j / static_cast<int>(kQuantGroup)] : inv_row;
          if constexpr (kRealign) {
            buf_q[lead_q + j] = quantize<M>(y[k], inv_s, p.fp8_fmt, p.fp8_max);
          } else {
            qr[j] = quantize<M>(y[k], inv_s, p.fp8_fmt, p.fp8_max);
          }
        }
      }
      if constexpr (kRealign) {
        __syncthreads();
        realign_store(qr, buf_q, D, t, B);
      }
    }
  };
  if constexpr (kPersistent) {
    for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
      row_body(row);
      // The next row's copies overwrite the buffers this row's stores read, and its reductions
      // reuse the partials.
      __syncthreads();
    }
  } else {
    row_body(blockIdx.x);
  }
}

// element_row: at most 16 elements per thread, threads a multiple of 32.
inline int element_threads(std::int64_t dim) {
  return static_cast<int>(
      std::clamp<std::int64_t>(round_up((dim + kElementSlots - 1) / kElementSlots, kWarp), kWarp, kElementMaxThreads));
}
inline constexpr std::int64_t kElementRowMaxDim = std::int64_t{kElementSlots} * kElementMaxThreads;

template <Mutant M>
Status element_row_refuse(const ForwardArgs& a, const std::string& who) {
  if (a.dim > kElementRowMaxDim)
    return Status::fail(Status::Code::unsupported,
                        who + ": D > " + std::to_string(kElementRowMaxDim) + " (16 elements per thread, 512 threads)");
  if (a.rows > std::int64_t{0x7fffffff})
    return Status::fail(Status::Code::unsupported, who + ": R >= 2^31 (one block per row)");
  return Status::success();
}
inline AccumShape element_row_shape(std::int64_t dim) {
  // The same mapping and order in both forms (only the row's trips to memory differ).
  const int b = element_threads(dim);
  return strided_block_shape(dim, b);
}

struct fwd_element_row_realigned {
  static constexpr const char* kName = "fwd.element_row.realigned";
  static constexpr const char* kAlias = "fwd.realigned_row";
  static constexpr int kRank = 1000;
  static constexpr const char* kDescription =
      "D <= 8192, any alignment: fwd.element_row with the row moved through shared memory in 16-byte vectors";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = 8192, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::any;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M3_low_precision_sum, Mutant::M8_stride_ignored,
                             Mutant::M13_fp8_via_bf16, Mutant::M18_missing_barrier>;

  static AccumShape shape(std::int64_t dim) { return element_row_shape(dim); }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    return element_row_refuse<M>(a, who);
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    // fwd.element_row.realigned: fwd.element_row's kernel with the row moved through shared memory in
    // 16-byte vectors (kRealign); two row buffers of dynamic shared memory (fp32 rows of 8192 with
    // the fused add: 64 KB, beyond the default 48 KB: opted in).
    return run_variant<M, fwd_element_row_realigned>(
        a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
          using T = typename decltype(tt)::type;
          using G = typename decltype(gt)::type;
          constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
          const std::size_t bytes = 2 * static_cast<std::size_t>(realign_buffer_bytes(a.dim, sizeof(T)));
          // The plain forward runs on a persistent grid with its weights held in registers; the fused
          // add and FP8 forms keep a block per row: held weights cost them occupancy (87-111
          // registers) and the persistent form runs 4-51 % slower there (H200, bf16, D = 1025-8191,
          // R = 32768), where the plain forward runs 7-17 % faster.
          constexpr bool kPersist = !kQ && !kA;
          auto kernel = fwd_element_kernel<T, G, kQ, kA, M, true, kPersist>;
          const int threads = element_threads(a.dim);
          cudaError_t e = cudaSuccess;
          if (bytes > 48 * 1024)
            e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
          std::int64_t grid = a.rows;
          if constexpr (kPersist) {
            if (e == cudaSuccess) e = persistent_grid(kernel, threads, bytes, a.rows, grid);
          }
          if (e != cudaSuccess) {
            result = Status::fail(Status::Code::launch_failed,
                                  std::string("fwd.element_row.realigned: launch shape: ") + cudaGetErrorString(e));
            return;
          }
          launch_kernel(kernel, grid_for(grid), threads, bytes, s, p);
        });
  }
};

struct fwd_element_row {
  static constexpr const char* kName = "fwd.element_row";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 1100;
  static constexpr const char* kDescription =
      "D <= 8192, any alignment: a block per row, row in registers, coalesced element-wise accesses";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = 8192, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::any;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M3_low_precision_sum, Mutant::M8_stride_ignored,
                             Mutant::M13_fp8_via_bf16, Mutant::M17_add_unrounded_sum, Mutant::M18_missing_barrier,
                             Mutant::M20_weight_by_row>;

  static AccumShape shape(std::int64_t dim) { return element_row_shape(dim); }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    return element_row_refuse<M>(a, who);
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return run_variant<M, fwd_element_row>(
        a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status&) {
          using T = typename decltype(tt)::type;
          using G = typename decltype(gt)::type;
          constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
          // Few rows of the FP8 forward: the weights loaded with x (kEarlyWeightsMaxRows, as
          // fwd.block_row's few-row form). The forward, the fused add and the fused add + FP8 keep
          // the weights after the row sum, where they measured faster (docs/launch-forms.md).
          if constexpr (M == Mutant::none && sizeof(T) == 2 && kQ && !kA) {
            if (a.rows <= kEarlyWeightsMaxRows) {
              launch_kernel(fwd_element_kernel<T, G, kQ, kA, M, false, false, true>, grid_for(a.rows),
                            element_threads(a.dim), 0, s, p);
              return;
            }
          }
          launch_kernel(fwd_element_kernel<T, G, kQ, kA, M>, grid_for(a.rows), element_threads(a.dim), 0, s, p);
        });
  }
};

}  // namespace rmsnorm::cuda::fwd
