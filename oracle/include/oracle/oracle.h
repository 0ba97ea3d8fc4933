// The oracle: exact answers for every op of docs/contract.md#semantics and, per output element, the
// set of values a correct kernel may return (docs/contract.md#acceptance). FP64 with a rigorous
// error bound is the fast path; where that enclosure straddles a rounding boundary of the output
// type, Boost.Multiprecision decides (exact rational comparison — the last step of Ziv's strategy).
// OpenMP over rows.
//
// The oracle works on dense host copies of a case: inputs as float values (every input type
// widens exactly into fp32) and outputs as the bit patterns the variant wrote. Layout, strides
// and guard bands belong to the harness, not here.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rmsnorm/types.h"

namespace oracle {

using rmsnorm::AccumShape;
using rmsnorm::Convention;
using rmsnorm::DType;
using rmsnorm::Quant;

// ---------------------------------------------------------------------------------------------
// Cases and results
// ---------------------------------------------------------------------------------------------

struct ForwardCase {
  std::int64_t rows = 0, dim = 0;
  DType x_type = DType::bf16;  // x, o and (without quant) y
  DType g_type = DType::bf16;
  DType y_type = DType::bf16;  // = x_type, or e4m3/e5m2 with quant
  Convention convention = Convention::standard;
  Quant quant = Quant::none;
  float eps = 1e-6f;
  float static_scale = 1.0f;   // Quant::static_scale only
  std::vector<float> x;        // [rows*dim]; values representable in x_type
  std::vector<float> o;        // [rows*dim] for fused add, else empty
  std::vector<float> g;        // [dim]; empty for no_weight
};

struct ForwardResult {           // what the variant wrote, dense
  std::vector<std::uint32_t> y;  // [rows*dim] bit patterns of y_type
  std::vector<float> rstd;       // [rows] or empty when not requested
  std::vector<std::uint32_t> h;  // fused add: the residual written back, bits of x_type
  std::vector<float> scale;      // dynamic_token: [rows]; per_block: [rows*ceil(dim/128)]
};

struct BackwardCase {
  std::int64_t rows = 0, dim = 0;
  DType x_type = DType::bf16;    // x, dy, dx, dresidual
  DType g_type = DType::bf16;
  DType dg_type = DType::f32;
  Convention convention = Convention::standard;
  float eps = 1e-6f;
  std::vector<float> x, dy;      // [rows*dim]
  std::vector<float> g;          // [dim]; empty for no_weight
  std::vector<float> rstd;       // [rows]: the r the backward is given (normally RN32 of exact r)
  std::vector<float> dresidual;  // [rows*dim] for add_backward, else empty
};

struct BackwardResult {
  std::vector<std::uint32_t> dx;  // bits of x_type
  std::vector<std::uint32_t> dg;  // bits of dg_type, [dim]; empty when dg was not asked for
};

// ---------------------------------------------------------------------------------------------
// Verdicts and the error profile
// ---------------------------------------------------------------------------------------------

struct Profile {
  std::int64_t elements = 0;           // output elements checked
  std::int64_t correctly_rounded = 0;  // equal to RN_out(exact)
  std::int64_t failures = 0;
  double max_ulp = 0;                  // max |got - exact| in ulps of the output type at exact
  double max_err_over_bound = 0;       // max |got - exact| / (allowed deviation), <= 1 passes
  std::int64_t fallbacks = 0;          // elements decided by the multiprecision path
  // Distributions of the elements judged on a range (docs/certificates.md#distributions), per
  // output type (index DType): the distance to the exact value in ulps, bin 0 for <= 1/2 ulp
  // and bin b for (2^(b-2), 2^(b-1)] ulps, the last bin open-ended; and err/bound, bin 0 for
  // the correctly rounded value (whatever its ratio: where the set is that one value, it is 1),
  // bin b for [(b-1)/10, b/10) and bin 10 for [0.9, 1], bin 11 above 1 (a failure).
  static constexpr int kUlpBins = 28, kBoundBins = 12, kTypes = 5;
  std::int64_t ulp_hist[kTypes][kUlpBins] = {};
  std::int64_t bound_hist[kTypes][kBoundBins] = {};
  static int ulp_bin(double ulps);
  static int bound_bin(double err_over_bound);
  void merge(const Profile& o);
};

// err/bound of one element judged on a range: |got − exact| (d = got − exact) over `allowed`,
// the distance from exact to the accepted end on got's side; <= 1 exactly when `accepted` (the
// judge's own verdict decides the edge cases: NaN ratios, rounding at the very end).
inline double err_over_bound(double d, double allowed, bool accepted) {
  const double inf = std::numeric_limits<double>::infinity();
  double r = d == 0 ? 0.0 : (allowed > 0 ? std::fabs(d) / allowed : inf);
  if (std::isnan(r)) r = accepted ? 1.0 : inf;
  return accepted ? std::min(r, 1.0) : std::max(r, 1.0 + 0x1p-40);
}

struct Verdict {
  bool pass = true;
  Profile profile;
  std::string first_failure;  // "y[3,17]: got 0x3f80 (1.0) accept [0x3f81, 0x3f82] exact 1.0078125..."
  std::string error;          // the case itself is invalid (then pass = false)
};

// The set of values a correct kernel may write for one output element
// (docs/contract.md#acceptance).
struct Acceptance {
  enum class Kind : std::uint8_t {
    range,       // any value v with value(lo) <= v <= value(hi) (±0 compare equal)
    any,         // outside the guaranteed domain (NaN/Inf input, Σx² > FLT_MAX, ...): anything
    nan_only,    // the exact result is NaN (eps = 0 and an all-zero row): only NaN
    exact_bits,  // exactly `rounded` (a zero with its exact sign; the fused-add residual)
  };
  Kind kind = Kind::range;
  std::uint32_t lo = 0, hi = 0;  // bits of the smallest and the largest accepted value
  std::uint32_t rounded = 0;     // bits of RN_out(exact), the correctly rounded output
  double exact = 0;              // FP64 approximation of the exact value (for reports)
  bool fallback = false;         // some decision for it was taken by the multiprecision path
};
// err/bound (above) of an element of type t against its acceptance set: for the exact-bits and
// NaN-only kinds 0 when accepted and +inf otherwise; 0 for kind any.
double err_over_bound(const Acceptance& a, std::uint32_t got, DType t);

// How rounding decisions are taken: `fast` = FP64 enclosure, multiprecision only when the
// enclosure straddles a rounding boundary; `exact_only` = every decision by exact rational
// comparison (slow; the reference the fast path is tested against).
enum class Evaluation : std::uint8_t { fast, exact_only };

// ---------------------------------------------------------------------------------------------
// Checking a variant's output
// ---------------------------------------------------------------------------------------------

// Forward family: y (or q and its scales), rstd, and the written-back residual.
// `shape` is the variant's declared row reduction shape (Variant::row_shape(dim)).
Verdict check_forward(const ForwardCase& c, const ForwardResult& got, AccumShape shape);

// Backward: dx per element within the magnitude-weighted bound, dg within its bound.
Verdict check_backward(const BackwardCase& c, const BackwardResult& got, AccumShape row_shape,
                       AccumShape dg_shape);

// ---------------------------------------------------------------------------------------------
// Exact values (for reports, properties and central differences)
// ---------------------------------------------------------------------------------------------

// Validation of a case (sizes consistent, D >= 1, eps >= 0 finite, types legal).
std::string validate(const ForwardCase& c);   // "" when valid
std::string validate(const BackwardCase& c);

// The exact r of each row, enclosed: r in [lo, hi] (rigorous). With fused add, of RN(h + o).
struct Enclosure { double lo = 0, hi = 0; double mid() const { return 0.5 * (lo + hi); } };
std::vector<Enclosure> row_rstd(const ForwardCase& c);

// RN32 of the exact r per row (the rstd the harness hands a backward). Exact (Ziv).
std::vector<float> rstd_rounded(const ForwardCase& c);

// The plain forward whose r a backward case is handed: same rows, dim, x, g, eps, convention;
// y in the x type.
ForwardCase forward_of(const BackwardCase& b);

// The correctly rounded output RN_out(y) per element (Ziv-exact), bits of y_type. For quant
// modes the oracle uses exact scales (static: given; dynamic: exact amax / max, floored).
// Rows outside the guaranteed domain (NaN/Inf input, Σx² > FLT_MAX, a kernel's fp32 Σx²/D + eps
// that may overflow, or fp32 underflow that may leave it at 0: mean square + eps ≲ 2^-149; see
// forward_row.cpp) and eps = 0 all-zero rows get the type's NaN.
std::vector<std::uint32_t> forward_rounded(const ForwardCase& c);

// FP64 approximations of the exact value before the output rounding, for printing and
// differences: y (llama: RN_in(x·r)·g), or y / s_exact for the FP8 modes. NaN outside the domain.
std::vector<double> forward_values(const ForwardCase& c);

// The residual stream written back by fused add: RN_x(h + o), bits of x_type.
std::vector<std::uint32_t> residual_rounded(const ForwardCase& c);

// Exact backward (FP64 approximations of dx and dg, using the given rstd as r).
struct BackwardValues { std::vector<double> dx, dg; };
BackwardValues backward_values(const BackwardCase& c);

// Analytic gradient of L = Σ w ⊙ y (w = dy) with r recomputed exactly from x, and its central
// difference estimate [L(x + h e_i) − L(x − h e_i)] / (2h), in FP64 (multiprecision where FP64
// cancels). Used by P3.
struct GradientCheck {
  double max_rel_dx = 0, max_rel_dg = 0;  // max |analytic − central| / scale
  bool pass = true;
  std::string first_failure;
};
GradientCheck check_gradient_central(const BackwardCase& c);

// Per element acceptance sets of the forward family. q of the FP8 modes is judged with the
// kernel's scales when `kernel_scale` is given (static: the case's scale), otherwise with
// RN32 of the exact scales (what a perfect kernel writes). `scale` judges a kernel's scales
// against the exact ones. `error` is set (and the rest empty) for an invalid case.
struct ForwardAcceptance {
  std::vector<Acceptance> y;      // [rows*dim]
  std::vector<Acceptance> rstd;   // [rows]
  std::vector<Acceptance> scale;  // dynamic_token [rows]; per_block [rows*ceil(dim/128)]
  std::vector<std::uint32_t> h;   // fused add: RN_x(h + o) bits
  std::int64_t fallbacks = 0;
  std::string error;
};
ForwardAcceptance forward_acceptance(const ForwardCase& c, AccumShape shape,
                                     Evaluation mode = Evaluation::fast,
                                     const std::vector<float>* kernel_scale = nullptr);
// Mode-selectable versions of the exact answers above (fallback counts through `fallbacks`).
std::vector<std::uint32_t> forward_rounded(const ForwardCase& c, Evaluation mode,
                                           std::int64_t* fallbacks = nullptr);
std::vector<float> rstd_rounded(const ForwardCase& c, Evaluation mode,
                                std::int64_t* fallbacks = nullptr);
// RN32 of the exact FP8 scales (dynamic_token / per_block), laid out as ForwardResult::scale.
std::vector<float> scales_rounded(const ForwardCase& c);

// Backward acceptance sets and the correctly rounded dx, dg (dg only with a weight).
struct BackwardAcceptance {
  std::vector<Acceptance> dx;  // [rows*dim]
  std::vector<Acceptance> dg;  // [dim], empty for no_weight
  std::int64_t fallbacks = 0;
  std::string error;
};
BackwardAcceptance backward_acceptance(const BackwardCase& c, AccumShape row_shape,
                                       AccumShape dg_shape, Evaluation mode = Evaluation::fast);
BackwardResult backward_rounded(const BackwardCase& c, Evaluation mode = Evaluation::fast,
                                std::int64_t* fallbacks = nullptr);

// Central differences against a caller-supplied analytic gradient (e.g. a deliberately wrong
// formula, to show the check can fail). dx: [rows*dim], dg: [dim] or empty.
GradientCheck check_gradient_central(const BackwardCase& c, const BackwardValues& analytic);

// Relative bound of the fp32 rstd for a shape: eps_r = ((k + d)/2 + 5)·u·factor.
double rstd_relative_bound(AccumShape shape);

// The accumulation bound of docs/contract.md#forward-bound for a shape: eps32 = ((k + d)/2 + 7)·u
// (with its second-order factor), relative, for the forward under `conv`.
double forward_relative_bound(AccumShape shape, Convention conv);

}  // namespace oracle
