// The forward family, one row at a time: FP64 enclosures of the exact values, acceptance sets
// from the kernel error model, and the multiprecision decision where an enclosure straddles a
// rounding boundary.
//
// Exact quantities. With S = Σ x_j² (an exact dyadic sum), Q = S + D·eps and the exact weight w
// (g, 1 + g, or 1): r = sqrt(D / Q) and |y_j| = |x_j w_j| r = sqrt(N_j / Q) with
// N_j = x_j² w_j² D. Every acceptance endpoint is V = (|y|·A + B) / K with dyadic A > 0, B and
// K > 0, so "V against a grid midpoint m" is the sign of |y|·A − (m·K − B), decided exactly by
// num::compare_sqrt_ratio (both sides squared).
//
// FP64 enclosure of |y|. Each x_j² is exact in FP64 (48 bits, no underflow: ≥ 2^-298), the
// sequential FP64 sum errs by ≤ (D−1)·2^-53·S, /D and +eps by one rounding each, sqrt and 1/· by
// one each: r_d = r(1+ρ), |ρ| ≤ ((D+1)/2 + 2)·2^-53 (first order; the second-order terms for
// D ≤ 2^31 are below a 2^-21 fraction of it, covered by the factor 1 + 2^-20 and one spare unit).
// |x·w| is exact for fp32-representable g (24 + 24 bits), else (gemma's 1 + g) two more roundings;
// the product with r one more. Endpoints then take one outward step (num::dn / num::up) after
// every further FP64 operation, so every enclosure below is rigorous. FP64 never overflows or
// underflows here: 2^-434 ≤ |y| ≤ 2^16·FLT_MAX for finite fp32 inputs.
#include <algorithm>
#include <cmath>
#include <limits>

#include "forward_plan.h"

namespace oracle {
namespace fwd {

using judge::KeyAcceptance;
using judge::kFltMax;
using Kind = Acceptance::Kind;
using num::Dyadic;
using num::Grid;
using num::dn;
using num::up;

namespace {

constexpr double kSecondOrder = 1.0 + 0x1p-20;

bool is_storage_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

// The exact magnitude |x·w| as an ordered pair (hi, lo) with hi + lo exact and hi = RN(hi + lo):
// lexicographic order on pairs is the order of the exact values (RN is monotone).
struct MagPair {
  double hi = 0, lo = 0;
  bool greater(const MagPair& o) const { return hi != o.hi ? hi > o.hi : lo > o.lo; }
};
MagPair exact_mag(float x, float g, Convention conv) {
  if (conv == Convention::gemma) {
    // x·(1 + g) = x + x·g: x·g is exact in FP64, and the two-sum error t is exact.
    const double xg = static_cast<double>(x) * g;
    const double s = static_cast<double>(x) + xg;
    const double bb = s - x;
    const double t = (static_cast<double>(x) - (s - bb)) + (xg - bb);
    return s < 0 ? MagPair{-s, -t} : MagPair{s, t};
  }
  const double p = conv == Convention::no_weight ? static_cast<double>(x) : static_cast<double>(x) * g;
  return {std::fabs(p), 0.0};
}

}  // namespace

std::string make_plan(const ForwardCase& c, AccumShape shape, Plan& p) {
  const std::string shared = judge::validate_shape_and_types(c.rows, c.dim, c.eps, c.x_type, c.g_type, c.convention);
  if (!shared.empty()) return shared;
  const bool no_weight = c.convention == Convention::no_weight;
  if (c.quant == Quant::none) {
    if (!is_storage_float(c.y_type))
      return std::string("invalid case: y type must be f32, f16 or bf16 without quantization (got ") +
             rmsnorm::to_string(c.y_type) + ")";
    if (c.convention == Convention::llama && c.y_type != c.x_type)
      return "invalid case: the llama convention writes y in the input type";
  } else {
    if (!rmsnorm::is_fp8(c.y_type))
      return std::string("invalid case: FP8 quantization needs y type e4m3 or e5m2 (got ") +
             rmsnorm::to_string(c.y_type) + ")";
    if (c.convention == Convention::llama)
      return "invalid case: the llama convention rounds y to the input type; it has no FP8 output";
    if (c.quant == Quant::static_scale && !(std::isfinite(c.static_scale) && c.static_scale > 0))
      return "invalid case: the static scale must be finite and > 0";
  }
  const std::int64_t n = c.rows * c.dim;
  const std::string counts = judge::first_error({judge::count_error("x", c.x.size(), n, "rows*dim"),
                                                 judge::count_error("o", c.o.size(), n, "rows*dim", true),
                                                 judge::count_error("g", c.g.size(), c.dim, "dim", no_weight)});
  if (!counts.empty()) return counts;
  if (!num::representable(c.x, c.x_type)) return "invalid case: some x value is not representable in the x type";
  if (!num::representable(c.o, c.x_type)) return "invalid case: some o value is not representable in the x type";
  if (!no_weight && !num::representable(c.g, c.g_type)) return "invalid case: some g value is not representable in the g type";

  p.c = &c;
  p.fused = !c.o.empty();
  p.quant = c.quant != Quant::none;
  p.dynamic = c.quant == Quant::dynamic_token || c.quant == Quant::per_block;
  p.llama = c.convention == Convention::llama;
  p.gemma = c.convention == Convention::gemma;
  p.no_weight = no_weight;
  p.gy = num::grid_of(c.y_type, p.quant ? rmsnorm::Overflow::saturate : rmsnorm::Overflow::ieee);
  p.gx = num::grid_of(c.x_type, rmsnorm::Overflow::ieee);
  p.g32 = num::grid_of(DType::f32, rmsnorm::Overflow::ieee);
  p.eps32 = forward_relative_bound(shape, p.gemma ? Convention::gemma : Convention::standard);
  p.eps_t = forward_relative_bound(shape, Convention::llama);
  p.eps_r = rstd_relative_bound(shape);
  if (p.quant) {
    p.fp8_max = rmsnorm::Fp8Quant::max(c.y_type);
    p.floor32 = rmsnorm::Fp8Quant::scale_floor(c.y_type);
  }
  if (c.quant == Quant::per_block) {
    p.group_width = rmsnorm::kQuantGroup;
    p.groups = rmsnorm::quant_groups(c.dim);
  } else {
    p.group_width = c.dim;
    p.groups = 1;
  }
  p.w.assign(static_cast<std::size_t>(c.dim), 1.0);
  if (!no_weight)
    for (std::int64_t j = 0; j < c.dim; ++j)
      p.w[j] = p.gemma ? 1.0 + static_cast<double>(c.g[j]) : static_cast<double>(c.g[j]);
  p.w_rel = p.gemma ? 2 * num::kU53 : 0.0;
  p.max_abs_w = 0;
  p.weights_finite = true;
  for (double wj : p.w) {
    if (std::isfinite(wj)) p.max_abs_w = std::max(p.max_abs_w, std::fabs(wj));
    else p.weights_finite = false;
  }
  return "";
}

namespace {

// One row's state: its values, its domain, FP64 r and, on demand, the exact Q = S + D·eps.
struct Row {
  enum class Domain { normal, any, nan_out };
  const Plan* p = nullptr;
  std::int64_t index = 0;
  std::vector<float> xs;  // the normalized input (RN_x(h + o) with fused add)
  Domain domain = Domain::normal;
  double r = 0, rel_r = 0;
  // The kernel's underflow (see evaluate_row): an additive relative term `under`, or, for a
  // large one, multiplicative factors on the acceptance ends (then under = 0).
  double under = 0, f_lo = 1, f_hi = 1;
  bool exact_ready = false;
  Dyadic Q, Dd;

  void ensure_exact() {
    if (exact_ready) return;
    // S = Σ x_j² on the fixed exponent 2^-298 (x = m·2^e with e ≥ -149, |m| < 2^24, so every
    // shift 2e + 298 is ≥ 0 — subnormal x included: normalizing them with frexp gave e down to
    // -172 and a negative shift, which Boost reports by throwing).
    num::BigInt acc = 0;
    for (float v : xs) {
      if (v == 0) continue;
      std::int64_t m = 0;
      int e = 0;
      num::float_parts(v, m, e);
      num::BigInt sq = num::BigInt(m * m);
      acc += sq << (2 * e + 298);
    }
    Dd = Dyadic(static_cast<double>(p->c->dim));
    Q = Dyadic(acc, -298) + Dd * Dyadic(static_cast<double>(p->c->eps));
    exact_ready = true;
  }
  // The factors A of the acceptance ends |v|·A for a kernel bound e (relative, without the
  // underflow): A_lo ≤ (1 − e − under)·f_lo and A_hi ≥ (1 + e + under)·f_hi, rounded outward.
  double lower(double e) const { return f_lo == 1 ? dn(1 - (e + under)) : dn(dn(1 - e) * f_lo); }
  double upper(double e) const { return f_hi == 1 ? up(1 + (e + under)) : up(up(1 + e) * f_hi); }
  Dyadic exact_weight(std::int64_t j) const {
    if (p->no_weight) return Dyadic(1.0);
    if (p->gemma) return Dyadic(1.0) + Dyadic(static_cast<double>(p->c->g[j]));
    return Dyadic(static_cast<double>(p->c->g[j]));
  }
  // N_j = x_j² w_j² D (with_weight = false: llama's t, w = 1).
  Dyadic N(std::int64_t j, bool with_weight) {
    ensure_exact();
    const Dyadic x(static_cast<double>(xs[j]));
    Dyadic n = x * x * Dd;
    if (with_weight) {
      const Dyadic w = exact_weight(j);
      n = n * w * w;
    }
    return n;
  }
};

// The rounding decision of Ziv's strategy: the FP64 enclosure [lo, hi] decides when both ends
// round to the same grid point; otherwise (or always, in exact_only mode) the exact walk.
template <typename Cmp>
std::int64_t decide(const Grid& g, double lo, double hi, Evaluation mode, bool& fallback, Cmp&& cmp) {
  const std::int64_t klo = num::rn_key(lo, g);
  if (mode == Evaluation::fast && num::rn_key(hi, g) == klo) return klo;
  fallback = true;
  return num::rn_walk(g, klo, cmp);
}

// Outward enclosure of (|y|·A + B)/K from [ylo, yhi].
ORACLE_INLINE void scaled(double ylo, double yhi, double A, double B, double K, double& lo, double& hi) {
  lo = dn(ylo * A);
  hi = up(yhi * A);
  if (B != 0) { lo = dn(lo + B); hi = up(hi + B); }
  if (K != 1) { lo = dn(lo / K); hi = up(hi / K); }
}

// RN_grid((|y_j|·A + B)/K) where |y_j| = sqrt(N/Q) (N given lazily).
template <typename GetN>
ORACLE_INLINE std::int64_t key_of(Row& row, const Grid& g, double ylo, double yhi, double A, double B, double K,
                    Evaluation mode, bool& fallback, GetN&& getN) {
  double lo, hi;
  scaled(ylo, yhi, A, B, K, lo, hi);
  const std::int64_t klo = num::rn_key(lo, g);
  if (mode == Evaluation::fast && num::rn_key(hi, g) == klo) return klo;
  fallback = true;
  const Dyadic N = getN(), DA(A), DK(K), DB(B);
  return num::rn_walk(g, klo, [&](double mid) {
    return num::compare_sqrt_ratio(N, row.Q, DA, Dyadic(mid) * DK - DB);
  });
}

// RN_grid of an exact dyadic value known to lie in [lo, hi].
std::int64_t key_of_dyadic(const Grid& g, double lo, double hi, const Dyadic& v, Evaluation mode, bool& fallback) {
  return decide(g, lo, hi, mode, fallback, [&](double mid) { return num::compare(v, Dyadic(mid)); });
}

// Fill a range acceptance from magnitude keys and the sign of the exact value.
KeyAcceptance signed_range(std::int64_t klo, std::int64_t khi, std::int64_t kround, bool neg, const Grid& g,
                           double exact_mag, bool fallback) {
  KeyAcceptance a;
  a.kind = Kind::range;
  if (neg) { a.lo = -khi; a.hi = -klo; } else { a.lo = klo; a.hi = khi; }
  a.rounded = num::bits_of_key(neg ? -kround : kround, g, neg);
  a.exact = neg ? -exact_mag : exact_mag;
  a.fallback = fallback;
  return a;
}

KeyAcceptance signed_zero(bool neg, const Grid& g) {
  KeyAcceptance a;
  a.kind = Kind::exact_bits;
  a.rounded = neg ? g.sign_bit : 0u;
  a.exact = neg ? -0.0 : 0.0;
  return a;
}

KeyAcceptance of_kind(Kind k, std::uint32_t rounded = 0, double exact = 0) {
  KeyAcceptance a;
  a.kind = k;
  a.rounded = rounded;
  a.exact = exact;
  return a;
}

// The row's inputs: x, or with the fused add h' = RN_x(h + o), each written to the sink. In
// FP64 the sum is rounded once more first; that double rounding is innocuous (53 ≥ 2p + 2 for
// p ≤ 24, and results in the x type's subnormal range are exact in FP64), so encode(h + o) is
// RN_x of the exact sum. exact_only recomputes it from the exact dyadic sum.
void load_row(const Plan& p, std::int64_t ri, Evaluation mode, Sink& sink, Row& row) {
  const ForwardCase& c = *p.c;
  const std::int64_t D = c.dim;
  const std::int64_t base = ri * D;
  row.xs.resize(static_cast<std::size_t>(D));
  for (std::int64_t j = 0; j < D; ++j) {
    if (!p.fused) { row.xs[j] = c.x[base + j]; continue; }
    const float h = c.x[base + j], ov = c.o[base + j];
    std::uint32_t bits;
    const double sum = static_cast<double>(h) + static_cast<double>(ov);
    if (mode == Evaluation::exact_only && std::isfinite(h) && std::isfinite(ov)) {
      bool fb = false;
      const Dyadic ex = Dyadic(static_cast<double>(h)) + Dyadic(static_cast<double>(ov));
      const std::int64_t k = key_of_dyadic(p.gx, sum, sum, ex, mode, fb);
      // An exact zero sum is +0 unless both addends are -0 (IEEE sum of zeros).
      const bool negzero = (k == 0) && (ex.sign() < 0 || (ex.sign() == 0 && std::signbit(h) && std::signbit(ov)));
      bits = num::bits_of_key(k, p.gx, negzero);
    } else {
      bits = rmsnorm::encode(sum, c.x_type);
    }
    sink.residual(ri, j, bits);
    row.xs[j] = static_cast<float>(rmsnorm::decode(bits, c.x_type));
  }
}

// The row's domain, its FP64 r, and the kernel's underflow terms.
void classify_row(const Plan& p, Evaluation mode, Row& row) {
  const ForwardCase& c = *p.c;
  const std::int64_t D = c.dim;
  bool special = false;
  double S = 0;
  std::int64_t tiny_squares = 0;  // nonzero x_j with x_j² below FLT_MIN: fp32 squares that underflow
  for (std::int64_t j = 0; j < D; ++j) {
    const double v = row.xs[j];
    if (!std::isfinite(v)) special = true;
    S += v * v;
    if (v != 0 && std::fabs(v) < 0x1p-63) ++tiny_squares;
  }
  const double Dd = static_cast<double>(D);
  const double rel_S = (Dd - 1) * num::kU53 * kSecondOrder;
  const double rel_m = (Dd + 1) * num::kU53 * kSecondOrder;
  const double m = S / Dd + static_cast<double>(c.eps);
  if (special) {
    row.domain = Row::Domain::any;
  } else if (S == 0 && c.eps == 0) {
    row.domain = Row::Domain::nan_out;  // 0·∞: every y is NaN, r = +inf
  } else {
    const double S_lo = dn(S * (1 - rel_S)), S_hi = up(S * (1 + rel_S));
    bool over = S_lo > kFltMax;
    if (!over && (S_hi > kFltMax || mode == Evaluation::exact_only) && S_hi > kFltMax / 2) {
      row.ensure_exact();
      const Dyadic Sx = row.Q - row.Dd * Dyadic(static_cast<double>(c.eps));
      over = num::compare(Sx, Dyadic(kFltMax)) > 0;
    }
    // The quantity under the root overflowing fp32 is outside the domain as well: the kernel's
    // m̂ = fl(μ̂ + eps) is +inf (r̂ = 0, y = 0) once μ̂ + eps ≥ FLT_MAX + ulp/2 = 0x1.ffffffp127,
    // with μ̂ ≤ μ(1 + 2·eps_r) (the fp32 sum and division; eps is exact). Where that may happen
    // the row accepts any output (the same rule in both evaluation modes).
    if (!over) over = up(up(up(S_hi / Dd) * (1 + 2 * p.eps_r)) + static_cast<double>(c.eps)) >= 0x1.ffffffp127;
    if (over) row.domain = Row::Domain::any;
  }
  if (row.domain != Row::Domain::normal) return;
  row.r = 1.0 / std::sqrt(m);
  row.rel_r = ((Dd + 1) / 2 + 3) * num::kU53 * kSecondOrder;
  // Underflow in the kernel model. m = μ + eps with μ = S/D; the kernel computes
  // m̂ = fl(fl(Σ_j fl(x_j²))/D) + eps) in fp32. Besides the relative errors of eps_r:
  //  * a square x_j² < 2^-126 (|x_j| < 2^-63) is rounded to the subnormal grid: absolute error
  //    ≤ 2^-150 each; additions of fp32 values are exact while the sum is subnormal, so the
  //    sum carries ≤ n·2^-150 absolute (n = tiny_squares ≤ D), which the division by D turns
  //    into ≤ (n/D)·2^-150 on the mean — the factor D cancels: the kernels divide the sum;
  //  * the division itself, when its result is subnormal (μ < 2^-126): ≤ 2^-150 more;
  //  * + eps adds nothing absolute (a sum of two multiples of 2^-149 below 2^-126 is exact).
  // So m̂ ∈ [m(1 − ε_m) − α, m(1 + ε_m) + α] with α = α0·(1 + 2·eps_r), α0 = 2^-150·(n/D +
  // [μ < 2^-126]), where (1 + 2·eps_r) bounds the later roundings of the absolute part and
  // ε_m ≤ 2·eps_r (eps_r ≥ (k+d)u/2 + 5u, ε_m ≤ (k+d+2)u). With δ_hi = α/(m_lo(1 − 2 eps_r))
  // and δ_lo = α/m_lo (m_lo ≤ m):
  //   r̂ ≤ r(1 + eps_r)·(1 − δ_hi)^(-1/2),   r̂ ≥ r(1 − eps_r)·(1 + δ_lo)^(-1/2),
  // and every later quantity (y, llama's t, FP8 scales and q) carries the same two factors.
  //  * δ_hi ≤ 1/4 (and eps_r ≤ 1/16, true of every shape here): (1 − δ)^(-1/2) ≤ 1 + 0.62δ on
  //    [0, 1/4] (convex: below its chord) and (1 + δ)^(-1/2) ≥ 1 − δ/2, so the additive term
  //    under = α0/m_lo covers both ends with their cross terms (0.62·δ_hi·(1 + eps_r) ≤
  //    0.62·1.37·under ≤ under; δ_lo/2 ≤ under): the bound is e + under (relative), as in the
  //    rest of the model. This includes every row with eps ≥ 2^-100 (under ≤ 2^-49, whatever
  //    the squares do: eps keeps m̂ away from the underflow) and, with eps = 0, every row with
  //    μ ≥ 2^-147.
  //  * 1/4 < δ_hi < 1: the ends take the factors (1 − δ_hi)^(-1/2) and (1 + δ_lo)^(-1/2).
  //  * δ_hi ≥ 1: m̂ may be 0 (r̂ = inf); only there is the bound void and any output accepted.
  // An all-zero row with eps > 0 has α = 0: m̂ = eps exactly, judged with no underflow term.
  const double m_lo = dn(m * (1 - rel_m));
  const double mu = S / Dd;
  const double alpha0 = 0x1p-150 * (static_cast<double>(tiny_squares) / Dd + (S > 0 && mu < 0x1p-125 ? 1.0 : 0.0));
  const double two_er = 2 * p.eps_r;
  const double alpha = up(up(alpha0) * (1 + two_er));
  const double d_hi = up(alpha / dn(m_lo * (1 - two_er))), d_lo = up(alpha / m_lo);
  if (alpha0 == 0) {
    row.under = 0;
  } else if (d_hi <= 0.25 && two_er <= 0.125) {
    row.under = up(up(alpha0) / m_lo);
  } else if (d_hi < 1) {
    row.f_hi = up(1.0 / dn(std::sqrt(dn(1 - d_hi))));
    row.f_lo = dn(1.0 / up(std::sqrt(up(1 + d_lo))));
  } else {
    row.domain = Row::Domain::any;
  }
}

// rstd: r̂ ∈ [RN32(r(1 − eps_r)), RN32(r(1 + eps_r))].
void judge_rstd(const Plan& p, std::int64_t ri, Evaluation mode, Row& row, Sink& sink) {
  if (row.domain == Row::Domain::any) {
    sink.rstd(ri, of_kind(Kind::any), std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN());
    return;
  }
  if (row.domain == Row::Domain::nan_out) {
    const double inf = std::numeric_limits<double>::infinity();
    sink.rstd(ri, of_kind(Kind::exact_bits, 0x7f800000u, inf), inf, inf);
    return;
  }
  const double rel = row.rel_r + num::kU53;
  const double rlo = dn(row.r * (1 - rel)), rhi = up(row.r * (1 + rel));
  const double e = p.eps_r;
  bool fb = false;
  auto getN = [&] { row.ensure_exact(); return row.Dd; };  // r = sqrt(D/Q)
  const std::int64_t kl = key_of(row, p.g32, rlo, rhi, row.lower(e), 0, 1, mode, fb, getN);
  const std::int64_t kh = key_of(row, p.g32, rlo, rhi, row.upper(e), 0, 1, mode, fb, getN);
  const std::int64_t kr = key_of(row, p.g32, rlo, rhi, 1.0, 0, 1, mode, fb, getN);
  sink.rstd(ri, signed_range(kl, kh, kr, false, p.g32, row.r, fb), rlo, rhi);
}

// FP64 enclosure of |y_j| (weighted), or of |x_j|·r for llama's t.
ORACLE_INLINE void enclose(const Plan& p, const Row& row, std::int64_t j, bool with_weight, double& yd, double& ylo,
                           double& yhi) {
  const double P = with_weight ? std::fabs(static_cast<double>(row.xs[j]) * p.w[j]) : std::fabs(static_cast<double>(row.xs[j]));
  yd = P * row.r;
  const double rel = row.rel_r + (with_weight ? p.w_rel : 0.0) + 3 * num::kU53;
  ylo = dn(yd * (1 - rel));
  yhi = up(yd * (1 + rel));
}

bool y_negative(const Plan& p, const Row& row, std::int64_t j) {
  const bool wneg = p.no_weight ? false : (p.gemma ? std::signbit(p.w[j]) : std::signbit(p.c->g[j]));
  return std::signbit(row.xs[j]) != wneg;
}

// Absolute underflow slack of the kernel's y_j: (x·r)·w with fp32 products that may underflow
// (≤ 2^-150 each, the first scaled by |w|): 2^-148·(1 + |w|) covers both with room.
double eta_of(const Plan& p, std::int64_t j) { return up(num::kEta * (1 + std::fabs(p.w[j]))); }

// The FP8 scales of a row (dynamic modes: exact s = max(amax / fp8_max, floor32) per group),
// and the s each group's q is judged with.
struct ExactScale {
  bool amax_branch = false;
  std::int64_t jstar = -1;
  double value = 0;
  MagPair mag;
};
struct RowScales {
  std::vector<double> used;  // the s q is judged with
  std::vector<char> valid;
  std::vector<ExactScale> exact;
};

// Judges the row's scales (into the sink) and returns the ones q is judged with. A row whose
// scales the kernel cannot form finitely is moved out of the domain first.
RowScales judge_scales(const Plan& p, std::int64_t ri, const RowOptions& o, Row& row, Sink& sink) {
  const ForwardCase& c = *p.c;
  const std::int64_t D = c.dim;
  const Evaluation mode = o.mode;
  RowScales sc;
  sc.used.assign(static_cast<std::size_t>(p.groups), 1.0);
  sc.valid.assign(static_cast<std::size_t>(p.groups), 1);
  sc.exact.resize(static_cast<std::size_t>(p.groups));
  // A non-finite weight (inf, or NaN) is outside the guaranteed domain: y_j = x_j·r·w_j is ±inf
  // or NaN (0·inf), and with dynamic FP8 scales it reaches the scale of its group — for FP8 the
  // whole row is then out of the domain, otherwise only its own column (y_element).
  if (p.quant && !p.weights_finite && row.domain == Row::Domain::normal) row.domain = Row::Domain::any;
  // Dynamic scales come from the kernel's fp32 y (docs/contract.md#fp8: q from the fp32 y). When
  // the row's largest |y| may reach the fp32 overflow threshold — finite x and g, but |g| ~ 2^127
  // with |x·r| ~ 3 (found by the libFuzzer target) — the kernel has no finite y to take the amax of
  // (ŷ = inf, s = inf, q = inf·0 = NaN) while the exact scale is finite: like Σx² overflowing,
  // outside the guaranteed domain. Bound: ŷ ≤ |y|(1 + eps32) before its rounding, so a row with
  // |y|(1 + eps32 + u) < FLT_MAX never overflows. Each group's exact amax (its largest |x·w|) is
  // found once here; the row's largest decides.
  if (p.quant && p.dynamic && row.domain == Row::Domain::normal) {
    const ExactScale* top = nullptr;
    for (std::int64_t b = 0; b < p.groups; ++b) {
      ExactScale& es = sc.exact[b];
      const std::int64_t j0 = b * p.group_width, j1 = std::min(D, j0 + p.group_width);
      for (std::int64_t j = j0; j < j1; ++j) {
        const MagPair mp = exact_mag(row.xs[j], p.no_weight ? 1.0f : c.g[j], c.convention);
        if (es.jstar < 0 || mp.greater(es.mag)) { es.mag = mp; es.jstar = j; }
      }
      if (es.jstar >= 0 && (top == nullptr || es.mag.greater(top->mag))) top = &es;
    }
    if (top != nullptr && top->mag.hi > 0) {
      double yd, ylo, yhi;
      enclose(p, row, top->jstar, true, yd, ylo, yhi);
      if (up(yhi * up(1 + p.eps32 + num::kU)) >= static_cast<double>(kFltMax)) row.domain = Row::Domain::any;
    }
  }
  if (p.quant && row.domain == Row::Domain::normal) {
    for (std::int64_t b = 0; b < p.groups; ++b) {
      ExactScale& es = sc.exact[b];
      if (!p.dynamic) { es.value = c.static_scale; continue; }
      const std::int64_t j0 = b * p.group_width, j1 = std::min(D, j0 + p.group_width);
      const MagPair best = es.mag;  // found above, with es.jstar
      const double floorM = static_cast<double>(p.floor32) * p.fp8_max;  // exact: 24 + 3 bits
      bool fb = false;
      if (best.hi > 0) {
        double yd, ylo, yhi;
        enclose(p, row, es.jstar, true, yd, ylo, yhi);
        if (mode == Evaluation::fast && ylo > floorM) es.amax_branch = true;
        else if (mode == Evaluation::fast && yhi < floorM) es.amax_branch = false;
        else {
          fb = true;
          es.amax_branch = num::compare_sqrt_ratio(row.N(es.jstar, true), row.Q, Dyadic(1.0), Dyadic(floorM)) > 0;
        }
        es.value = es.amax_branch ? yd / p.fp8_max : p.floor32;
      } else {
        es.value = p.floor32;
      }
      // The kernel's s = max(amax̂/max, floor): each ŷ_j is within eps32 (relative) plus η_j
      // (absolute: fp32 underflow of x·r, scaled by |w_j|) of y_j, so amax̂ is within
      // eps32·amax + max_j η_j of amax; one more rounding for the division → s within
      // (eps32 + u + max_j η_j / amax) of the exact s (max is monotone). η is negligible unless
      // the weights are huge (|w| ~ 2^125 makes x·r subnormal while y is O(1): found by the fuzzer).
      double e = p.eps32 + num::kU;
      if (es.amax_branch) {
        double eta_max = 0;
        for (std::int64_t j = j0; j < j1; ++j) eta_max = std::max(eta_max, eta_of(p, j));
        double yd, ylo, yhi;
        enclose(p, row, es.jstar, true, yd, ylo, yhi);
        e = up(e + up(eta_max / ylo));
      }
      auto scale_key = [&](double A) -> std::int64_t {
        if (es.amax_branch) {
          double yd, ylo, yhi;
          enclose(p, row, es.jstar, true, yd, ylo, yhi);
          return key_of(row, p.g32, ylo, yhi, A, 0, p.fp8_max, mode, fb, [&] { return row.N(es.jstar, true); });
        }
        const Dyadic v = Dyadic(static_cast<double>(p.floor32)) * Dyadic(A);
        return key_of_dyadic(p.g32, dn(p.floor32 * A), up(p.floor32 * A), v, mode, fb);
      };
      const std::int64_t kl = scale_key(row.lower(e)), kh = scale_key(row.upper(e)), kr = scale_key(1.0);
      const KeyAcceptance acc = signed_range(kl, kh, kr, false, p.g32, es.value, fb);
      if (o.want_scale) sink.scale(ri, b, acc);
      double s = rmsnorm::decode(acc.rounded, DType::f32);
      if (o.kernel_scale) {
        const std::size_t idx = static_cast<std::size_t>(ri * p.groups + b);
        s = idx < o.kernel_scale->size() ? static_cast<double>((*o.kernel_scale)[idx]) : std::numeric_limits<double>::quiet_NaN();
      }
      sc.used[b] = s;
      sc.valid[b] = std::isfinite(s) && s > 0;
    }
  } else if (p.quant && p.dynamic && o.want_scale) {
    for (std::int64_t b = 0; b < p.groups; ++b) sink.scale(ri, b, of_kind(Kind::any));
  }
  if (p.quant && !p.dynamic) sc.used.assign(1, c.static_scale);
  return sc;
}

// The hot path (a plain forward in a normal row, fast mode): the same enclosures and keys as
// y_element, with the per-row constants hoisted; an element whose enclosures straddle a boundary
// is left to y_element (pending stays 1).
void y_fast(const Plan& p, const Row& row, KeyAcceptance* out, char* pending) {
  const ForwardCase& c = *p.c;
  const std::int64_t D = c.dim;
  const Grid g = p.gy;
  const double r = row.r;
  const double rel = row.rel_r + p.w_rel + 3 * num::kU53;
  const double below = 1 - rel, above = 1 + rel;
  const double e = p.eps32;
  const double A_lo = row.lower(e), A_hi = row.upper(e);
  // Where η_j ≤ |y_j|·2^-58, the absolute η folds into a relative factor 1 ∓ 2^-58: then each
  // acceptance end is yd times one precomputed constant (rounded outward once here and once
  // per element). Below that magnitude y_element keeps η explicit.
  const double y_min = up(num::kEta * (1 + p.max_abs_w)) * 0x1p60;
  const double cL_lo = dn(dn(dn(below * A_lo)) * (1 - 0x1p-58)), cL_hi = up(up(above * A_lo));
  const double cH_lo = dn(below * A_hi), cH_hi = up(up(up(above * A_hi)) * (1 + 0x1p-58));
  const float* xs = row.xs.data();
  const double* w = p.w.data();
  const bool wsign = !p.no_weight && !p.gemma;
  const float* gf = wsign ? c.g.data() : nullptr;
  for (std::int64_t j = 0; j < D; ++j) {
    const double P = std::fabs(static_cast<double>(xs[j]) * w[j]);
    const double yd = P * r;
    if (!(yd >= y_min) || !(yd <= std::numeric_limits<double>::max())) continue;  // zero, tiny or non-finite: y_element
    const std::int64_t kr = num::rn_key(dn(yd * below), g);
    if (num::rn_key(up(yd * above), g) != kr) continue;
    const std::int64_t kl = num::rn_key(dn(yd * cL_lo), g);
    if (num::rn_key(up(yd * cL_hi), g) != kl) continue;
    const std::int64_t kh = num::rn_key(dn(yd * cH_lo), g);
    if (num::rn_key(up(yd * cH_hi), g) != kh) continue;
    const bool neg = std::signbit(xs[j]) != (wsign ? std::signbit(gf[j]) : std::signbit(w[j]));
    KeyAcceptance& a = out[j];
    a.kind = Kind::range;
    a.lo = neg ? -kh : kl;
    a.hi = neg ? -kl : kh;
    a.rounded = (neg ? g.sign_bit : 0u) | static_cast<std::uint32_t>(kr);
    a.exact = neg ? -yd : yd;
    a.fallback = false;
    pending[j] = 0;
  }
}

// The acceptance of y_j (q_j under FP8) in general.
KeyAcceptance y_element(const Plan& p, const RowOptions& o, Row& row, const RowScales& sc, std::int64_t j) {
  const ForwardCase& c = *p.c;
  const Grid& gy = p.gy;
  const Evaluation mode = o.mode;
  if (row.domain == Row::Domain::any) return of_kind(Kind::any);
  if (row.domain == Row::Domain::nan_out)
    return of_kind(Kind::nan_only, rmsnorm::traits_of(c.y_type).nan_bits, std::numeric_limits<double>::quiet_NaN());
  if (!std::isfinite(p.w[j])) return of_kind(Kind::any);
  const float xj = row.xs[j];
  const bool neg = y_negative(p, row, j);
  const bool zero = xj == 0 || p.w[j] == 0;
  if (zero) return signed_zero(neg, gy);

  if (p.llama) {
    // t = RN_in(x·r) ∈ [RN_in(x r(1 − eps_t) − η), RN_in(x r(1 + eps_t) + η)] (magnitudes),
    // then y = RN_in(t·g) with one fp32 rounding of the product: u more, η more.
    double td, tlo, thi;
    enclose(p, row, j, false, td, tlo, thi);
    bool fb = false;
    const double e = p.eps_t;
    auto getN = [&] { return row.N(j, false); };
    const std::int64_t ktl = key_of(row, p.gx, tlo, thi, row.lower(e), -num::kEta, 1, mode, fb, getN);
    const std::int64_t kth = key_of(row, p.gx, tlo, thi, row.upper(e), num::kEta, 1, mode, fb, getN);
    const std::int64_t ktr = key_of(row, p.gx, tlo, thi, 1.0, 0, 1, mode, fb, getN);
    const double ag = std::fabs(static_cast<double>(c.g[j]));
    auto y_key = [&](std::int64_t kt, double factor, double B) {
      const double pv = num::value_of_key(kt, p.gx) * ag;  // exact (≤ 24 + 24 bits)
      const double lo = dn(dn(pv * factor) + B), hi = up(up(pv * factor) + B);
      const Dyadic v = Dyadic(pv) * Dyadic(factor) + Dyadic(B);
      return key_of_dyadic(gy, lo, hi, v, mode, fb);
    };
    const std::int64_t kl = y_key(ktl, 1 - num::kU, -num::kEta);
    const std::int64_t kh = y_key(kth, 1 + num::kU, num::kEta);
    const double pr = num::value_of_key(ktr, p.gx) * ag;  // exact, so one RN is exact
    const std::int64_t kr = num::rn_key(pr, gy);
    return signed_range(kl, kh, kr, neg, gy, pr, fb);
  }

  double yd, ylo, yhi;
  enclose(p, row, j, true, yd, ylo, yhi);
  bool fb = false;
  auto getN = [&] { return row.N(j, true); };
  const double eta = eta_of(p, j);
  if (!p.quant) {
    // ŷ ∈ [RN_out(|y|(1 − eps32) − η), RN_out(|y|(1 + eps32) + η)], signed by y.
    const double e = p.eps32;
    const std::int64_t kl = key_of(row, gy, ylo, yhi, row.lower(e), -eta, 1, mode, fb, getN);
    const std::int64_t kh = key_of(row, gy, ylo, yhi, row.upper(e), eta, 1, mode, fb, getN);
    const std::int64_t kr = key_of(row, gy, ylo, yhi, 1.0, 0, 1, mode, fb, getN);
    return signed_range(kl, kh, kr, neg, gy, yd, fb);
  }
  // FP8: q judged with the scale s in use: q ∈ [RN8sat(|y|(1 − eps32 − 2u)/s − η/s), ...];
  // 2u: the division by s (or a reciprocal and a product).
  const std::int64_t b = j / p.group_width;
  if (!sc.valid[b]) return of_kind(Kind::any);  // the scale itself fails
  const double s = sc.used[b];
  const double e = p.eps32 + 2 * num::kU;
  const std::int64_t kl = key_of(row, gy, ylo, yhi, row.lower(e), -eta, s, mode, fb, getN);
  const std::int64_t kh = key_of(row, gy, ylo, yhi, row.upper(e), eta, s, mode, fb, getN);
  std::int64_t kr;
  double exact_q = yd / s;
  const ExactScale& es = sc.exact[b];
  if (o.q_against_exact_scale && p.dynamic && es.amax_branch) {
    // y_j / s_exact = max · |x_j w_j| / |x* w*|: a ratio of dyadics, r cancels.
    const std::int64_t js = es.jstar;
    const double Pj = std::fabs(static_cast<double>(xj) * p.w[j]);
    const double Ps = std::fabs(static_cast<double>(row.xs[js]) * p.w[js]);
    const double v = p.fp8_max * Pj / Ps;
    const double rel = 2 * p.w_rel + 3 * num::kU53;
    Dyadic xwj = Dyadic(static_cast<double>(xj)) * row.exact_weight(j);
    Dyadic xws = Dyadic(static_cast<double>(row.xs[js])) * row.exact_weight(js);
    if (xwj.sign() < 0) xwj = -xwj;
    if (xws.sign() < 0) xws = -xws;
    const Dyadic num_ = Dyadic(p.fp8_max) * xwj;
    kr = decide(gy, dn(v * (1 - rel)), up(v * (1 + rel)), mode, fb,
                [&](double mid) { return num::compare(num_, Dyadic(mid) * xws); });
    exact_q = v;
  } else {
    const double sq = (o.q_against_exact_scale && p.dynamic) ? static_cast<double>(p.floor32) : s;
    kr = key_of(row, gy, ylo, yhi, 1.0, 0, sq, mode, fb, getN);
    exact_q = yd / sq;
  }
  return signed_range(kl, kh, kr, neg, gy, exact_q, fb);
}

}  // namespace

void evaluate_row(const Plan& p, std::int64_t ri, const RowOptions& o, Sink& sink) {
  Row row;
  row.p = &p;
  row.index = ri;
  load_row(p, ri, o.mode, sink, row);
  classify_row(p, o.mode, row);
  // rstd is judged before the FP8 scales may move the row out of the domain: r itself is unaffected.
  if (o.want_rstd) judge_rstd(p, ri, o.mode, row, sink);
  const RowScales sc = judge_scales(p, ri, o, row, sink);
  if (!o.want_y) return;
  const std::int64_t D = p.c->dim;
  thread_local std::vector<KeyAcceptance> ys;
  thread_local std::vector<char> pending;
  ys.resize(static_cast<std::size_t>(D));
  pending.assign(static_cast<std::size_t>(D), 1);
  if (row.domain == Row::Domain::normal && !p.llama && !p.quant && o.mode == Evaluation::fast)
    y_fast(p, row, ys.data(), pending.data());
  for (std::int64_t j = 0; j < D; ++j)
    if (pending[static_cast<std::size_t>(j)]) ys[j] = y_element(p, o, row, sc, j);
  sink.y_row(ri, ys.data());
}

}  // namespace fwd
}  // namespace oracle
