// The error profile, per-element judging and failure lines.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "oracle/judge.h"

namespace oracle {

static_assert(static_cast<int>(rmsnorm::DType::e5m2) + 1 == Profile::kTypes, "one distribution per output type");

void Profile::merge(const Profile& o) {
  elements += o.elements;
  correctly_rounded += o.correctly_rounded;
  failures += o.failures;
  fallbacks += o.fallbacks;
  max_ulp = std::max(max_ulp, o.max_ulp);
  max_err_over_bound = std::max(max_err_over_bound, o.max_err_over_bound);
  for (int t = 0; t < kTypes; ++t) {
    for (int b = 0; b < kUlpBins; ++b) ulp_hist[t][b] += o.ulp_hist[t][b];
    for (int b = 0; b < kBoundBins; ++b) bound_hist[t][b] += o.bound_hist[t][b];
  }
}

double err_over_bound(const Acceptance& a, std::uint32_t got, DType t) {
  using Kind = Acceptance::Kind;
  switch (a.kind) {
    case Kind::any: return 0;
    case Kind::nan_only: return std::isnan(rmsnorm::decode(got, t)) ? 0 : std::numeric_limits<double>::infinity();
    case Kind::exact_bits:
      return got == a.rounded || (std::isnan(rmsnorm::decode(got, t)) && std::isnan(rmsnorm::decode(a.rounded, t)))
                 ? 0
                 : std::numeric_limits<double>::infinity();
    case Kind::range: break;
  }
  const double v = rmsnorm::decode(got, t), lo = rmsnorm::decode(a.lo, t), hi = rmsnorm::decode(a.hi, t);
  if (std::isnan(v)) return std::numeric_limits<double>::infinity();
  const double d = v - a.exact;
  return err_over_bound(d, d >= 0 ? hi - a.exact : a.exact - lo, lo <= v && v <= hi);
}

int Profile::ulp_bin(double ulps) {
  if (!(ulps > 0.5)) return 0;
  if (!std::isfinite(ulps)) return kUlpBins - 1;
  const int b = static_cast<int>(std::ceil(std::log2(ulps))) + 1;  // (2^(b-2), 2^(b-1)]
  return std::clamp(b, 1, kUlpBins - 1);
}

int Profile::bound_bin(double r) {
  if (r > 1) return kBoundBins - 1;
  if (!(r > 0)) return 1;
  return 1 + std::min(kBoundBins - 3, static_cast<int>(r * 10));
}

namespace judge {

Acceptance to_public(const KeyAcceptance& a, const num::Grid& g) {
  Acceptance p;
  p.kind = a.kind;
  // A zero lower end is written -0 and a zero upper end +0: both zeros are accepted.
  p.lo = num::bits_of_key(a.lo, g, /*negative_zero=*/true);
  p.hi = num::bits_of_key(a.hi, g, /*negative_zero=*/false);
  p.rounded = a.rounded;
  p.exact = a.exact;
  p.fallback = a.fallback;
  return p;
}

bool FailureSlot::before(const FailureSlot& o) const {
  if (empty()) return false;
  if (o.empty()) return true;
  if (row != o.row) return row < o.row;
  if (tensor != o.tensor) return tensor < o.tensor;
  return col < o.col;
}

void Tally::merge(const Tally& o) {
  profile.merge(o.profile);
  if (o.first.before(first)) first = o.first;
}

namespace {
std::string where(const char* name, std::int64_t row, std::int64_t col) {
  char buf[96];
  if (row >= 0)
    std::snprintf(buf, sizeof buf, "%s[%lld,%lld]", name, static_cast<long long>(row), static_cast<long long>(col));
  else
    std::snprintf(buf, sizeof buf, "%s[%lld]", name, static_cast<long long>(col));
  return buf;
}

void keep_first(Tally& t, int tensor_order, std::int64_t row, std::int64_t col, std::string line) {
  FailureSlot s;
  s.row = row < 0 ? std::numeric_limits<std::int64_t>::max() : row;  // 1-D tensors after rows
  s.tensor = tensor_order;
  s.col = col;
  s.line = std::move(line);
  if (s.before(t.first)) t.first = std::move(s);
}
}  // namespace

void fail_line(Tally& t, int tensor_order, std::int64_t row, std::int64_t col, std::string line) {
  ++t.profile.failures;
  keep_first(t, tensor_order, row, col, std::move(line));
}

void record_failure(const KeyAcceptance& a, std::uint32_t got, const num::Grid& g, const char* name,
                    int tensor_order, std::int64_t row, std::int64_t col, Tally& t) {
  using Kind = Acceptance::Kind;
  ++t.profile.failures;
  if (a.kind == Kind::nan_only) {
    keep_first(t, tensor_order, row, col,
               where(name, row, col) + ": got " + num::describe_bits(got, g.type) +
                   " accept only NaN (exact result is NaN: eps = 0 and an all-zero row)");
  } else if (a.kind == Kind::exact_bits) {
    keep_first(t, tensor_order, row, col,
               where(name, row, col) + ": got " + num::describe_bits(got, g.type) + " accept exactly " +
                   num::describe_bits(a.rounded, g.type));
  } else {
    char ex[48];
    std::snprintf(ex, sizeof ex, "%.17g", a.exact);
    keep_first(t, tensor_order, row, col,
               where(name, row, col) + ": got " + num::describe_bits(got, g.type) + " accept [" +
                   num::describe_bits(num::bits_of_key(a.lo, g, true), g.type) + ", " +
                   num::describe_bits(num::bits_of_key(a.hi, g), g.type) + "] exact " + ex +
                   " (RN " + num::describe_bits(a.rounded, g.type) + ")");
  }
}

}  // namespace judge

// eps32 and friends (docs/contract.md#forward-bound). Derivation, with u = 2^-24 and every fp32
// operation fl(a∘b) = (a∘b)(1+δ), |δ| ≤ u:
//  * Σx² with k sequential adds per thread and a tree of depth d: each square is rounded once and
//    every partial sum passes through at most k + d − 1 further additions of non-negative terms,
//    so the computed sum is S(1+θ), |θ| ≤ (k+d)u (to first order; squares included).
//  * /D and +eps (eps ≥ 0, so no cancellation): one rounding each → m̂ = m(1+θ'), |θ'| ≤ (k+d+2)u.
//  * r = m̂^(-1/2): the relative error halves → (k+d+2)u/2; rsqrtf adds ≤ 2 ulp ≤ 4u.
//    So r̂ = r(1+ρ), |ρ| ≤ ((k+d)/2 + 5)u  (the rstd bound).
//  * y = x·r·g: two more roundings → ((k+d)/2 + 7)u (eps32); llama's t = x·r: one → +6;
//    gemma's 1 + g in fp32 is one more rounding → +8.
// The products of up to n = k+d+16 factors (1+δ_i) and the square root's expansion are bounded
// rigorously by the first-order sum times 1/(1 − n·u) (for n·u < 1): the "second-order factor".
namespace {
double second_order_factor(AccumShape s) {
  const double n = static_cast<double>(s.per_thread) + static_cast<double>(s.tree_depth) + 16.0;
  return 1.0 / (1.0 - n * num::kU);
}
double half_kd(AccumShape s) {
  return (static_cast<double>(s.per_thread) + static_cast<double>(s.tree_depth)) / 2.0;
}
}  // namespace

double forward_relative_bound(AccumShape shape, Convention conv) {
  double units = half_kd(shape) + 7.0;
  if (conv == Convention::llama) units = half_kd(shape) + 6.0;  // t = RN_in(x·r) before its rounding
  if (conv == Convention::gemma) units += 1.0;
  return units * num::kU * second_order_factor(shape);
}

double rstd_relative_bound(AccumShape shape) {
  return (half_kd(shape) + 5.0) * num::kU * second_order_factor(shape);
}

}  // namespace oracle
