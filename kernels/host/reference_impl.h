// host.reference (docs/contract.md#semantics): the whole contract in plain C++, fp32, so the
// harness has a target on machines without a GPU. It is a variant like any kernel: validated
// launchers, a declared accumulation shape, and the bug catalog as compile-time switches. Shared
// by its registration (reference.cpp, in librmsnorm) and its mutants (kernels/mutants).
//
// Accumulation shape: 32 "lanes" each sum every 32nd element of the row sequentially in fp32,
// then the 32 partials meet in a pairwise tree (16, 8, 4, 2, 1): per_thread = ceil(D/32),
// tree_depth = 5 — the shape of one warp of a CUDA kernel.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rmsnorm/formats.h"
#include "rmsnorm/validate.h"
#include "rmsnorm/variant.h"

namespace rmsnorm::host_reference {

inline constexpr int kLanes = 32;
inline constexpr int kTreeDepth = 5;  // log2(kLanes)
inline constexpr std::int64_t kVector = 8;  // the "vector width" of the M9 tail over-read

// Element access with 64-bit offsets (the M11 mutant is device-only).
template <Mutant M>
inline std::int64_t row_offset(std::int64_t row, std::int64_t stride, std::int64_t dim) {
  return row * (M == Mutant::M8_stride_ignored ? dim : stride);
}

inline float ld(const void* base, DType t, std::int64_t i) { return load_as_float(base, t, i); }
inline void st(void* base, DType t, std::int64_t i, float v, Overflow ov = Overflow::ieee) {
  store_rounded(base, t, i, static_cast<double>(v), ov);
}
inline float rn(float v, DType t) { return static_cast<float>(round_to(v, t)); }
inline bool is16(DType t) { return t == DType::f16 || t == DType::bf16; }

// Σ v_j² in the declared shape. M3 keeps the running sums in the 16-bit input type; M7 squares
// in that type before widening; M16 lets the lane count depend on R.
template <Mutant M>
float sum_of_squares(const float* v, std::int64_t n, DType in, std::int64_t rows) {
  int lanes = kLanes;
  if (M == Mutant::M16_order_depends_on_rows && rows % 2 == 1) lanes = kLanes / 2;
  float acc[kLanes] = {};
  for (std::int64_t j = 0; j < n; ++j) {
    float sq = v[j] * v[j];
    if (M == Mutant::M7_square_before_upcast && is16(in)) sq = rn(sq, in);
    float& a = acc[j % lanes];
    a = a + sq;
    if (M == Mutant::M3_low_precision_sum && is16(in)) a = rn(a, in);
  }
  for (int w = lanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] = acc[l] + acc[l + w];
  return acc[0];
}

template <Mutant M>
float row_rstd(float sum, std::int64_t dim, float eps) {
  // The mean divides by D, never by a padded width (seed: D = 1025 padded to 2048).
  const std::int64_t divisor =
      M == Mutant::M1_padded_divisor ? (dim + kLanes - 1) / kLanes * kLanes : dim;
  const float mean = sum / static_cast<float>(divisor);
  if (M == Mutant::M2_eps_outside_root) return 1.0f / std::sqrt(mean) + eps;
  return 1.0f / std::sqrt(mean + eps);  // ε inside the root
}

// D <= 2^24, the declared range (Variant's default): the mean divides by D in fp32, and beyond
// 2^24 not every width is an fp32 value (the CUDA variants decline those widths for the same
// reason). Accepting them would make the declared range a lie (the declared-range property).
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
template <typename Args>
Status within_range(const Args& a) {
  Status s = validate(a);
  if (s.ok() && a.dim > kMaxDim)
    s = Status::fail(Status::Code::unsupported, "D > 2^24 (the mean divides by D in fp32)");
  return s;
}
inline Status can_implement_forward(const ForwardArgs& a) { return within_range(a); }
inline Status can_implement_backward(const BackwardArgs& a) { return within_range(a); }

template <Mutant M>
Status run_forward(const ForwardArgs& a) {
  Status s = within_range(a);
  if (!s.ok()) return s;
  const std::int64_t D = a.dim;
  const bool add = a.o.data != nullptr;
  std::vector<float> v(static_cast<std::size_t>(D)), y(static_cast<std::size_t>(D));
  const std::int64_t groups = quant_groups(D);
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const std::int64_t xo = row_offset<M>(r, a.x.stride, D);
    for (std::int64_t j = 0; j < D; ++j) v[j] = ld(a.x.data, a.x.type, xo + j);
    if (M == Mutant::M9_tail_overread && D % kVector != 0) {
      // Read the whole last vector, then mask the lanes past the row: 0·(poison) is NaN.
      float spill = 0.0f;
      for (std::int64_t j = D; j < (D + kVector - 1) / kVector * kVector; ++j)
        spill += 0.0f * ld(a.x.data, a.x.type, xo + j);
      v[D - 1] += spill;
    }
    if (add) {
      const std::int64_t oo = row_offset<M>(r, a.o.stride, D);
      for (std::int64_t j = 0; j < D; ++j) {
        const float h = v[j] + ld(a.o.data, a.o.type, oo + j);  // exact in fp32 for 16-bit types
        st(a.x.data, a.x.type, xo + j, h);                        // h' = RN_x(h + o), written back
        v[j] = M == Mutant::M17_add_unrounded_sum ? h : rn(h, a.x.type);
      }
    }
    const float rs = row_rstd<M>(sum_of_squares<M>(v.data(), D, a.x.type, a.rows), D, a.eps);
    if (a.rstd) a.rstd[r] = rs;
    for (std::int64_t j = 0; j < D; ++j) {
      const std::int64_t gi = M == Mutant::M20_weight_by_row ? r % D : j;
      const float w = a.convention == Convention::no_weight ? 1.0f : ld(a.g, a.g_type, gi);
      switch (a.convention) {
        case Convention::llama: y[j] = rn(rn(v[j] * rs, a.x.type) * w, a.x.type); break;
        case Convention::gemma: y[j] = (v[j] * rs) * (1.0f + w); break;
        case Convention::no_weight: y[j] = v[j] * rs; break;
        case Convention::standard:
        default:
          y[j] = M == Mutant::M15_llama_double_round ? rn(rn(v[j] * rs, a.x.type) * w, a.x.type) : (v[j] * rs) * w;
      }
    }
    const std::int64_t yo = row_offset<M>(r, a.y.stride, D);
    if (a.quant == Quant::none) {
      for (std::int64_t j = 0; j < D; ++j) st(a.y.data, a.y.type, yo + j, y[j]);
      continue;
    }
    // FP8: q = RN_fp8_sat(y / s) from the fp32 y.
    const float fmax = static_cast<float>(Fp8Quant::max(a.y.type));
    const float floor = Fp8Quant::scale_floor(a.y.type);
    const Overflow ov = M == Mutant::M14_fp8_no_saturation ? Overflow::ieee : Overflow::saturate;
    auto quantize = [&](std::int64_t from, std::int64_t to, float s) {
      for (std::int64_t j = from; j < to; ++j) {
        const float yj = M == Mutant::M13_fp8_via_bf16 ? rn(y[j], DType::bf16) : y[j];
        st(a.y.data, a.y.type, yo + j, yj / s, ov);
      }
    };
    auto dynamic_scale = [&](std::int64_t from, std::int64_t to) {
      float amax = 0.0f;
      for (std::int64_t j = from; j < to; ++j) amax = std::fmax(amax, std::fabs(y[j]));
      const float s = amax / fmax;
      return M == Mutant::M12_scale_no_floor ? s : std::fmax(s, floor);
    };
    if (a.quant == Quant::static_scale) {
      quantize(0, D, a.scale[0]);
    } else if (a.quant == Quant::dynamic_token) {
      const float s = dynamic_scale(0, D);
      a.scale[r] = s;
      quantize(0, D, s);
    } else {
      for (std::int64_t gi = 0; gi < groups; ++gi) {
        const std::int64_t from = gi * kQuantGroup, to = std::min(D, from + kQuantGroup);
        const float s = dynamic_scale(from, to);
        a.scale[r * groups + gi] = s;
        quantize(from, to, s);
      }
    }
  }
  return Status::success();
}

template <Mutant M>
Status run_backward(const BackwardArgs& a) {
  Status s = within_range(a);
  if (!s.ok()) return s;
  const std::int64_t D = a.dim;
  const bool add = a.dresidual.data != nullptr;
  std::vector<float> dg(static_cast<std::size_t>(D), 0.0f);
  auto one_row = [&](std::int64_t r, std::vector<float>& xh, std::vector<float>& gh) {
    const float rs = a.rstd[r];
    const std::int64_t xo = row_offset<M>(r, a.x.stride, D), yo = row_offset<M>(r, a.dy.stride, D);
    bool zero_row = true;
    float acc[kLanes] = {};
    for (std::int64_t j = 0; j < D; ++j) {
      const float xj = ld(a.x.data, a.x.type, xo + j), dyj = ld(a.dy.data, a.dy.type, yo + j);
      const std::int64_t gi = M == Mutant::M20_weight_by_row ? r % D : j;
      float w = 1.0f;
      if (a.convention == Convention::standard || a.convention == Convention::llama) w = ld(a.g, a.g_type, gi);
      if (a.convention == Convention::gemma) w = 1.0f + ld(a.g, a.g_type, gi);
      zero_row = zero_row && xj == 0.0f;
      xh[j] = xj * rs;   // x̂ = x·r
      gh[j] = dyj * w;   // ĝ = dy ⊙ w
      acc[j % kLanes] = acc[j % kLanes] + gh[j] * xh[j];
      if (a.dg) dg[j] = M == Mutant::M10_dg_float_atomics ? dg[j] : dg[j] + dyj * xh[j];
    }
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) acc[l] = acc[l] + acc[l + w];
    // c = mean(ĝ ⊙ x̂): the reduction term that couples the row (r depends on all of x).
    const float c = M == Mutant::M4_bwd_sum_not_mean ? acc[0] : acc[0] / static_cast<float>(D);
    const std::int64_t dxo = row_offset<M>(r, a.dx.stride, D);
    const std::int64_t ro = add ? row_offset<M>(r, a.dresidual.stride, D) : 0;
    for (std::int64_t j = 0; j < D; ++j) {
      float dx = M == Mutant::M5_bwd_no_reduction ? rs * gh[j] : rs * (gh[j] - xh[j] * c);
      if (M == Mutant::M6_zero_row_shortcut && zero_row) dx = 0.0f;
      if (add) dx = dx + ld(a.dresidual.data, a.dresidual.type, ro + j);
      st(a.dx.data, a.dx.type, dxo + j, dx);
    }
  };
  if (M == Mutant::M10_dg_float_atomics) {
    // The bug: rows race to add into dg, so the summation order (and the bits) vary run to run.
#pragma omp parallel
    {
      std::vector<float> xh(static_cast<std::size_t>(D)), gh(static_cast<std::size_t>(D));
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t r = 0; r < a.rows; ++r) {
        one_row(r, xh, gh);
        if (a.dg) {
          const std::int64_t yo = row_offset<M>(r, a.dy.stride, D);
          for (std::int64_t j = 0; j < D; ++j) {
            const float add_j = ld(a.dy.data, a.dy.type, yo + j) * xh[j];
#pragma omp atomic
            dg[j] += add_j;
          }
        }
      }
    }
  } else {
    std::vector<float> xh(static_cast<std::size_t>(D)), gh(static_cast<std::size_t>(D));
    for (std::int64_t r = 0; r < a.rows; ++r) one_row(r, xh, gh);
  }
  if (a.dg)
    for (std::int64_t j = 0; j < D; ++j) st(a.dg, a.dg_type, j, dg[j]);
  return Status::success();
}

inline AccumShape row_shape(std::int64_t dim) { return {(dim + kLanes - 1) / kLanes, kTreeDepth}; }
// dg: one sequential fp32 sum over the rows per column.
inline AccumShape dg_shape(std::int64_t rows) { return {rows, 0}; }

inline constexpr std::uint32_t kAllOps = (1u << kOpCount) - 1u;

template <Mutant M>
Variant make(std::string name, std::string description) {
  Variant v;
  v.name = std::move(name);
  v.description = std::move(description);
  v.memory = Memory::host;
  v.mutant = M;
  v.ops = kAllOps;
  v.can_implement_forward = can_implement_forward;
  v.run_forward = run_forward<M>;
  v.can_implement_backward = can_implement_backward;
  v.run_backward = run_backward<M>;
  v.row_shape = row_shape;
  v.dg_shape = dg_shape;
  return v;
}

}  // namespace rmsnorm::host_reference
