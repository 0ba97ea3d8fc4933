// fwd.scalar: D <= 2^24, any alignment: element-wise loads, two passes over global memory.
#pragma once

#include "forward_variant.h"

namespace rmsnorm::cuda::fwd {

// Scalar: any alignment
// ---------------------------------------------------------------------------------------------

inline constexpr int kScalarMaxThreads = 512;  // 128 registers: the FP8 + fused add forms need more than 64

// Thread t owns elements t, t + B, t + 2B, ... (B = blockDim.x) in every pass, so under fused
// add and in place each thread re-reads only what it wrote itself; the per-block FP8 pass
// reads other threads' h after a barrier.
template <typename T, typename G, bool kQuant, bool kAdd, Mutant M>
__global__ void __launch_bounds__(kScalarMaxThreads) fwd_scalar_kernel(Params p) {
  begin_dependent_grid();
  constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  const std::int64_t t = threadIdx.x;
  const std::int64_t B = blockDim.x;
  const std::int64_t D = p.dim;
  const G* g = static_cast<const G*>(p.g);
  const bool weighted = p.convention != static_cast<int>(Convention::no_weight);

  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    // Under fused add h lives in x_out after pass 1.
    const T* hr = kAdd ? static_cast<const T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T)) : xr;
    const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;

    SumSquares<T, M> ss;
    for (std::int64_t j = t; j < D; j += B) {
      float v = load_scalar(xr, j);
      if constexpr (kAdd) {
        const float sum = v + load_scalar(orow, j);
        v = round_through<T>(sum);
        store_scalar(static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T)), j, v);
      }
      ss.add(v);
    }
    const float total = block_sum<kBarrier>(ss.acc, sum_partials);
    const float r = rstd_of<M>(total, D, ((D + kChunk - 1) / kChunk) * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    auto h_at = [&](std::int64_t j) -> float { return load_scalar(hr, j); };
    auto y_at = [&](std::int64_t j) -> float {
      float w = 1.0f;
      if (weighted)
        w = effective_weight((M == Mutant::M20_weight_by_row)
                                 ? to_float(g[static_cast<unsigned>(row) % static_cast<unsigned>(D)])
                                 : to_float(g[j]),
                             p.convention);
      return y_of<T, M>(h_at(j), r, w, p.convention);
    };

    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
      for (std::int64_t j = t; j < D; j += B) store_scalar(yr, j, y_at(j));
    } else {
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      float s_row = 0.0f;
      if (mode == Quant::static_scale) {
        s_row = *p.scale;
      } else if (mode == Quant::dynamic_token) {
        float amax = 0.0f;
        for (std::int64_t j = t; j < D; j += B) amax = nan_max(amax, fabsf(y_at(j)));
        amax = block_max<kBarrier>(amax, max_partials);
        s_row = scale_of<M>(amax, p);
        if (t == 0) p.scale[row] = s_row;
      } else if (mode == Quant::per_block) {
        // One thread per group: its amax sequentially, then the scale to global memory.
        float* srow = p.scale + row * p.groups;
        for (std::int64_t gi = t; gi < p.groups; gi += B) {
          float amax = 0.0f;
          const std::int64_t end = (gi + 1) * kQuantGroup < D ? (gi + 1) * kQuantGroup : D;
          for (std::int64_t j = gi * kQuantGroup; j < end; ++j) amax = nan_max(amax, fabsf(y_at(j)));
          srow[gi] = scale_of<M>(amax, p);
        }
        __syncthreads();  // the scales are read by other threads below
      }
      for (std::int64_t j = t; j < D; j += B) {
        const float s = mode == Quant::per_block ? p.scale[row * p.groups + j / kQuantGroup] : s_row;
        qr[j] = quantize<M>(y_at(j), __fdiv_rn(1.0f, s), p.fp8_fmt, p.fp8_max);
      }
    }
    __syncthreads();  // partials and (per-block) scales are reused by the next row
  }
}

inline int scalar_threads(std::int64_t dim) {
  return static_cast<int>(std::clamp<std::int64_t>(round_up((dim + 7) / 8, kWarp), kWarp, kScalarMaxThreads));
}

struct fwd_scalar {
  static constexpr const char* kName = "fwd.scalar";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 1200;
  static constexpr const char* kDescription = "any alignment, D <= 2^24: element-wise loads, two passes";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = kMaxDim, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::any;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M3_low_precision_sum, Mutant::M8_stride_ignored,
                             Mutant::M13_fp8_via_bf16, Mutant::M18_missing_barrier, Mutant::M20_weight_by_row>;

  static AccumShape shape(std::int64_t dim) {
    const int b = scalar_threads(dim);
    return strided_block_shape(dim, b);
  }

  template <Mutant M>
  static Status refuse(const ForwardArgs&, const std::string&) {
    return Status::success();
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return run_variant<M, fwd_scalar>(
        a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status&) {
          using T = typename decltype(tt)::type;
          using G = typename decltype(gt)::type;
          constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
          launch_kernel(fwd_scalar_kernel<T, G, kQ, kA, M>, grid_for(a.rows), scalar_threads(a.dim), 0, s, p);
        });
  }
};

}  // namespace rmsnorm::cuda::fwd
