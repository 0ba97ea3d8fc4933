// Judging one output element against its Acceptance, and keeping the error profile and the
// first failure of a slice of rows (one per OpenMP thread, merged in a fixed order).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "oracle/numeric.h"
#include "oracle/oracle.h"

namespace oracle {
namespace judge {

// The largest finite fp32, from the format traits: the domain limit of every fp32 intermediate.
inline constexpr double kFltMax = rmsnorm::kF32.max_finite;

// Key-form acceptance used inside the oracle (Acceptance holds bits; keys order values).
struct KeyAcceptance {
  Acceptance::Kind kind = Acceptance::Kind::range;
  std::int64_t lo = 0, hi = 0;  // accepted keys, lo <= hi
  std::uint32_t rounded = 0;    // bits of RN(exact)
  double exact = 0;             // FP64 approximation of the exact value
  bool fallback = false;
};

Acceptance to_public(const KeyAcceptance& a, const num::Grid& g);

// Where a failure sits: (row, tensor order within the row, column) orders failures so that the
// reported one does not depend on the thread schedule.
struct FailureSlot {
  std::int64_t row = -1;
  int tensor = 0;
  std::int64_t col = 0;
  std::string line;
  bool empty() const { return row < 0; }
  bool before(const FailureSlot& o) const;
};

struct Tally {
  Profile profile;
  FailureSlot first;
  void merge(const Tally& o);
};

// An exception caught inside an OpenMP region (one escaping the region calls std::terminate),
// kept as text; of several, the one at the smallest position wins, so the message does not
// depend on the schedule. The check then fails with Verdict::error = message().
struct RowError {
  std::int64_t position = -1;
  std::string text;
  void keep(std::int64_t pos, std::string what) {
    if (position >= 0 && pos >= position) return;
    position = pos;
    text = std::move(what);
  }
  void merge(const RowError& o) {
    if (o.position >= 0) keep(o.position, o.text);
  }
  std::string message() const { return position < 0 ? std::string() : "oracle internal error: " + text; }
};

// Out of line: count a failure and keep its line if it is the earliest.
void record_failure(const KeyAcceptance& a, std::uint32_t got, const num::Grid& g, const char* name,
                    int tensor_order, std::int64_t row, std::int64_t col, Tally& t);

// Record a failure that is not about one element's value (e.g. an invalid kernel scale).
void fail_line(Tally& t, int tensor_order, std::int64_t row, std::int64_t col, std::string line);

// ulp of grid g at the value v (the spacing of the grid around v; subnormal spacing below).
inline double ulp_at(double v, const num::Grid& g) {
  // The exponent field of the double (v is never an FP64 subnormal here: |v| ≥ 2^-434 or 0).
  const int biased = static_cast<int>((num::bits64(v) >> 52) & 0x7ffu);
  if (biased == 0x7ff) return std::numeric_limits<double>::infinity();
  int e = biased == 0 ? g.emin : biased - 1023;
  if (e < g.emin) e = g.emin;
  return num::from_bits64(static_cast<std::uint64_t>(e - g.mbits + 1023) << 52);
}

// Judge `got` (bits of grid g); update the tally; on failure keep the earliest failure line.
// `name` is the tensor ("y", "rstd", "h", "scale", "dx", "dg"), `row < 0` prints a 1-D index.
// Profile: max_ulp = |got − exact|/ulp(exact); max_err_over_bound = |got − exact| over the
// distance from exact to the accepted end on got's side (≤ 1 exactly when accepted).
inline bool judge(const KeyAcceptance& a, std::uint32_t got, const num::Grid& g, const char* name,
                  int tensor_order, std::int64_t row, std::int64_t col, Tally& t) {
  using Kind = Acceptance::Kind;
  if (a.kind == Kind::any) return true;  // outside the guaranteed domain: not an element checked
  Profile& p = t.profile;
  ++p.elements;
  if (a.fallback) ++p.fallbacks;
  const bool got_nan = num::bits_are_nan(got, g);
  bool pass = false;
  if (a.kind == Kind::range) {
    if (!got_nan) {
      const std::int64_t k = num::key_of_bits(got, g);
      pass = a.lo <= k && k <= a.hi;
      if (got == a.rounded) ++p.correctly_rounded;
      const double v = num::value_of_bits(got, g);
      const double d = v - a.exact;
      // An accepted overflow (got = ±inf, exact beyond the largest finite value) has no finite
      // distance in ulps of exact: count grid steps from the correctly rounded value instead.
      const double ulps = std::isfinite(v) ? std::fabs(d) / ulp_at(a.exact, g)
                                           : std::fabs(static_cast<double>(k - num::key_of_bits(a.rounded, g)));
      if (ulps > p.max_ulp) p.max_ulp = ulps;
      const int type = static_cast<int>(g.type);
      const double allowed = d >= 0 ? num::value_of_key(a.hi, g) - a.exact : a.exact - num::value_of_key(a.lo, g);
      const double ratio = err_over_bound(d, allowed, pass);
      if (ratio > p.max_err_over_bound) p.max_err_over_bound = ratio;
      if (type < Profile::kTypes) {
        ++p.ulp_hist[type][Profile::ulp_bin(ulps)];
        ++p.bound_hist[type][got == a.rounded ? 0 : Profile::bound_bin(ratio)];
      }
    }
  } else {
    pass = a.kind == Kind::nan_only ? got_nan
                                    : (got == a.rounded) || (got_nan && num::bits_are_nan(a.rounded, g));
    if (pass) ++p.correctly_rounded;
  }
  if (!pass) record_failure(a, got, g, name, tensor_order, row, col, t);
  return pass;
}

// The checks every case shares (forward and backward): shape, eps, activation and weight
// types. "" when valid, else the reason.
inline std::string validate_shape_and_types(std::int64_t rows, std::int64_t dim, float eps, DType x_type,
                                            DType g_type, Convention convention) {
  if (dim < 1) return "invalid case: dim must be >= 1 (got " + std::to_string(dim) + ")";
  if (rows < 0) return "invalid case: rows must be >= 0 (got " + std::to_string(rows) + ")";
  if (rows > std::numeric_limits<std::int64_t>::max() / dim) return "invalid case: rows*dim overflows";
  if (std::isnan(eps)) return "invalid case: eps is NaN";
  if (eps < 0) return "invalid case: eps must be >= 0 (got " + std::to_string(eps) + ")";
  if (std::isinf(eps)) return "invalid case: eps must be finite";
  const bool activation = x_type == DType::f32 || x_type == DType::f16 || x_type == DType::bf16;
  if (!activation)
    return std::string("invalid case: x type must be f32, f16 or bf16 (got ") + rmsnorm::to_string(x_type) + ")";
  if (convention != Convention::no_weight && g_type != x_type && g_type != DType::f32)
    return std::string("invalid case: g type must be the x type or f32 (got ") + rmsnorm::to_string(g_type) + ")";
  return "";
}

// A tensor's value count against what the shape asks: "" when they agree (or, with
// `may_be_empty`, when the tensor is absent), else "invalid case: x has 5 values, rows*dim = 6".
inline std::string count_error(const char* name, std::size_t got, std::int64_t want, const char* want_name,
                               bool may_be_empty = false) {
  if (static_cast<std::int64_t>(got) == want || (may_be_empty && got == 0)) return "";
  return std::string("invalid case: ") + name + " has " + std::to_string(got) + " values, " + want_name + " = " +
         std::to_string(want);
}

// The first non-empty reason of a list of checks, or "".
inline std::string first_error(std::initializer_list<std::string> reasons) {
  for (const std::string& r : reasons)
    if (!r.empty()) return r;
  return "";
}

}  // namespace judge
}  // namespace oracle
