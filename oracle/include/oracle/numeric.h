// The oracle's number machinery: output grids as ordered integer keys, a fast exact rounding of
// doubles onto those grids, outward-rounded steps for FP64 enclosures, exact dyadic arithmetic
// (Boost.Multiprecision cpp_int) and the exact rounding walk that decides a value whose FP64
// enclosure straddles a rounding boundary.
//
// Keys. Every format here is sign-magnitude, so the magnitude bits order the non-negative values;
// key = +mag for positive values and -mag for negative ones orders all non-NaN values (±0 share
// key 0). The key max_mag + 1 stands for "beyond the largest finite value" (±inf for IEEE
// overflow, a virtual grid point max + ulp(max) for the rounding walk).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports cpp_int's inline limb storage as "maybe uninitialized" wherever a temporary is
// inlined into our code: a known false positive of that warning with Boost.Multiprecision.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/multiprecision/cpp_int.hpp>

#include "rmsnorm/formats.h"
#include "rmsnorm/types.h"

namespace oracle {
namespace num {

using rmsnorm::DType;
using rmsnorm::Overflow;
using BigInt = boost::multiprecision::cpp_int;

inline constexpr double kU = 0x1p-24;    // fp32 unit roundoff
inline constexpr double kU53 = 0x1p-53;  // FP64 unit roundoff
inline constexpr double kEta = 0x1p-148; // absolute slack for fp32 underflow of intermediates

#if defined(__GNUC__)
#define ORACLE_INLINE_EARLY inline __attribute__((always_inline))
#else
#define ORACLE_INLINE_EARLY inline
#endif

inline std::uint64_t bits64(double v) { std::uint64_t b; std::memcpy(&b, &v, 8); return b; }
inline double from_bits64(std::uint64_t b) { double v; std::memcpy(&v, &b, 8); return v; }

// Outward steps for FP64 enclosures: dn(v) < v < up(v) for every finite non-zero v that is not
// an FP64 subnormal (enclosed values here are ≥ 2^-500 in magnitude, or exactly zero). v·2^-52 is
// at least one ulp of v, so v ± |v|·2^-52 rounds (to nearest) at least one ulp away from v: one
// step after a round-to-nearest operation turns its result into a rigorous bound of the exact
// result. A zero stays zero: in this range an FP64 sum or product is zero only when exact.
ORACLE_INLINE_EARLY double up(double v) { return v + std::fabs(v) * 0x1p-52; }
ORACLE_INLINE_EARLY double dn(double v) { return v - std::fabs(v) * 0x1p-52; }

// An output grid: a storage format with its overflow rule.
struct Grid {
  DType type = DType::f32;
  Overflow overflow = Overflow::ieee;
  int mbits = 23, bias = 127, emin = -126, emax = 127;
  std::int64_t max_mag = 0x7f7fffff;  // magnitude bits of the largest finite value
  std::uint32_t sign_bit = 0x80000000u, mag_mask = 0x7fffffffu;
  bool has_inf = true;
  double max_value = 0, virtual_next = 0;  // max finite, and max + ulp(max)
};

inline Grid grid_of(DType t, Overflow ov) {
  const rmsnorm::FormatTraits& f = rmsnorm::traits_of(t);
  Grid g;
  g.type = t;
  g.overflow = (t == DType::e4m3 && ov == Overflow::ieee) ? Overflow::nan : ov;
  g.mbits = f.mantissa_bits;
  g.bias = f.bias;
  g.emin = 1 - f.bias;
  g.sign_bit = 1u << (f.total_bits - 1);
  g.mag_mask = g.sign_bit - 1u;
  g.has_inf = f.has_inf;
  g.max_mag = static_cast<std::int64_t>(rmsnorm::encode(f.max_finite, t) & g.mag_mask);
  g.max_value = f.max_finite;
  int e2 = 0;
  (void)std::frexp(f.max_finite, &e2);
  g.emax = e2 - 1;
  g.virtual_next = f.max_finite + std::ldexp(1.0, g.emax - f.mantissa_bits);
  return g;
}

inline std::int64_t clamp_overflow(std::int64_t key, const Grid& g) {
  const std::int64_t top = g.max_mag + 1;
  if (key > g.max_mag) return g.overflow == Overflow::saturate ? g.max_mag : top;
  if (key < -g.max_mag) return g.overflow == Overflow::saturate ? -g.max_mag : -top;
  return key;
}

inline bool bits_are_nan(std::uint32_t bits, const Grid& g) {
  const std::int64_t mag = bits & g.mag_mask;
  return g.has_inf ? mag > g.max_mag + 1 : mag > g.max_mag;
}
inline std::int64_t key_of_bits(std::uint32_t bits, const Grid& g) {
  const std::int64_t mag = bits & g.mag_mask;
  return (bits & g.sign_bit) ? -mag : mag;
}
// Bits of a key; a zero key takes the sign `negative_zero`. The overflow key of E4M3 (no inf)
// is its NaN pattern.
inline std::uint32_t bits_of_key(std::int64_t key, const Grid& g, bool negative_zero = false) {
  const std::uint32_t mag = static_cast<std::uint32_t>(key < 0 ? -key : key);
  const bool neg = key < 0 || (key == 0 && negative_zero);
  return (neg ? g.sign_bit : 0u) | mag;
}
// The value of a bit pattern of grid g (fp32 and bf16 by bit moves, the rest by decode()).
inline double value_of_bits(std::uint32_t bits, const Grid& g) {
  if (g.type == DType::f32 || g.type == DType::bf16) {
    const std::uint32_t b = g.type == DType::bf16 ? bits << 16 : bits;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  return rmsnorm::decode(bits, g.type);
}
// The value of a key: ±inf (or NaN for E4M3) at the overflow key.
inline double value_of_key(std::int64_t key, const Grid& g) { return value_of_bits(bits_of_key(key, g), g); }

// Whether a float is exactly a value of type t (NaN counts as representable).
inline bool representable(float v, DType t) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  const std::uint32_t a = b & 0x7fffffffu;
  switch (t) {
    case DType::f32: return true;
    case DType::bf16: return a > 0x7f800000u || (b & 0xffffu) == 0;
    case DType::f16: {
      if (a > 0x7f800000u || a == 0x7f800000u || a == 0) return true;
      const double m = std::fabs(static_cast<double>(v));
      if (m > 65504.0) return false;
      if (m >= 0x1p-14) return (a & 0x1fffu) == 0;      // 10 of the 23 fraction bits
      const double scaled = m * 0x1p24;                  // subnormal: a multiple of 2^-24
      return scaled == std::floor(scaled);
    }
    default: return rmsnorm::round_to(v, t) == static_cast<double>(v);
  }
}

// Every value of a tensor is a value of type t.
inline bool representable(const std::vector<float>& v, DType t) {
  for (float f : v)
    if (!representable(f, t)) return false;
  return true;
}
// The grid point of a key for the rounding walk: the overflow key is max + ulp(max).
inline double walk_value(std::int64_t key, const Grid& g) {
  const std::int64_t mag = key < 0 ? -key : key;
  const double v = mag > g.max_mag ? g.virtual_next : rmsnorm::decode(static_cast<std::uint32_t>(mag), g.type);
  return key < 0 ? -v : v;
}
// Exact midpoint of keys k and k+1 (both grid values have at most 25 significant bits).
inline double midpoint(std::int64_t k, const Grid& g) {
  return 0.5 * walk_value(k, g) + 0.5 * walk_value(k + 1, g);
}
inline bool key_is_even(std::int64_t k) { return ((k < 0 ? -k : k) & 1) == 0; }

// RN onto the grid of a finite double, exactly (one rounding, ties to even), as a key. The
// normal range of the target is done with integer arithmetic on the double's bits (the carry of
// the rounding increment propagates into the exponent field, which is the correct result,
// including the step to the overflow key); everything else goes through rmsnorm::encode.
std::int64_t rn_key_slow(double v, const Grid& g);  // outside the target's normal range

#if defined(__GNUC__)
#define ORACLE_INLINE inline __attribute__((always_inline))
#else
#define ORACLE_INLINE inline
#endif

ORACLE_INLINE std::int64_t rn_key(double v, const Grid& g) {
  const std::uint64_t b = bits64(v);
  const std::uint64_t a = b & 0x7fffffffffffffffull;
  const int e = static_cast<int>(a >> 52) - 1023;
  if (e < g.emin || e > g.emax) return rn_key_slow(v, g);
  const int sh = 52 - g.mbits;
  const std::uint64_t lsb = (a >> sh) & 1u;
  const std::uint64_t r = (a + ((1ull << (sh - 1)) - 1u) + lsb) >> sh;
  std::int64_t mag = static_cast<std::int64_t>(r) - (static_cast<std::int64_t>(1023 - g.bias) << g.mbits);
  if (mag > g.max_mag) mag = g.overflow == Overflow::saturate ? g.max_mag : g.max_mag + 1;
  return (b >> 63) ? -mag : mag;
}

// ---------------------------------------------------------------------------------------------
// Exact dyadic numbers m·2^e (every float, double, product and sum of them is one).
// ---------------------------------------------------------------------------------------------
struct Dyadic {
  BigInt m = 0;
  int e = 0;
  Dyadic() = default;
  Dyadic(BigInt mant, int exp) : m(std::move(mant)), e(exp) {}
  explicit Dyadic(double v) {  // exact for every finite double
    if (v == 0 || !std::isfinite(v)) return;
    int ex = 0;
    const double fr = std::frexp(v, &ex);  // v = fr·2^ex, |fr| in [0.5, 1)
    m = static_cast<std::int64_t>(std::ldexp(fr, 53));
    e = ex - 53;
  }
  int sign() const { return m.sign(); }
};

// A finite float as m·2^e with |m| < 2^24 and e ≥ -149 (its IEEE integer significand): every
// float is a multiple of 2^-149, so sums of products of k floats sit exactly on the fixed
// exponent -149·k. (frexp alone would give e down to -172 for subnormals.)
inline void float_parts(float v, std::int64_t& m, int& e) {
  if (v == 0) { m = 0; e = -149; return; }
  int ex = 0;
  (void)std::frexp(v, &ex);  // v = fr·2^ex, |fr| in [0.5, 1)
  e = ex - 24 < -149 ? -149 : ex - 24;
  m = static_cast<std::int64_t>(std::ldexp(static_cast<double>(v), -e));  // exact integer
}

inline Dyadic operator*(const Dyadic& a, const Dyadic& b) { return Dyadic(a.m * b.m, a.e + b.e); }
inline Dyadic operator+(const Dyadic& a, const Dyadic& b) {
  if (a.m == 0) return b;
  if (b.m == 0) return a;
  if (a.e >= b.e) return Dyadic((a.m << (a.e - b.e)) + b.m, b.e);
  return Dyadic(a.m + (b.m << (b.e - a.e)), a.e);
}
inline Dyadic operator-(const Dyadic& a) { return Dyadic(-a.m, a.e); }
inline Dyadic operator-(const Dyadic& a, const Dyadic& b) { return a + (-b); }
inline int compare(const Dyadic& a, const Dyadic& b) { return (a - b).sign(); }
// Nearest double (for printing only).
double to_double(const Dyadic& a);

// sign( sqrt(N/Q)·A − T ) exactly, for N ≥ 0, Q > 0, A ≥ 0 (an algebraic magnitude scaled and
// shifted: every forward quantity is of this form).
int compare_sqrt_ratio(const Dyadic& N, const Dyadic& Q, const Dyadic& A, const Dyadic& T);

// The exact rounding search: RN onto grid g (before the overflow rule) of a value V known only
// through cmp(m) = sign(V − m) for grid midpoints m.
// With up(k) = "V lies above midpoint(k), or on it with k + 1 even", up is true below the answer
// and false from it on, so the answer is the least k in [−top, top] with k == top or !up(k).
// A gallop from `hint` (steps 1, 2, 4, ...) brackets it and a bisection finds it: one or two
// comparisons when the hint is right, O(log distance) when it is far — e.g. an exact zero
// whose FP64 approximation is 1e-17 lies ~10^9 f32 keys away from its hint.
template <typename Cmp>
std::int64_t rn_walk(const Grid& g, std::int64_t hint, Cmp&& cmp) {
  const std::int64_t top = g.max_mag + 1;
  auto up = [&](std::int64_t k) {  // only for k < top
    const int s = cmp(midpoint(k, g));
    return s > 0 || (s == 0 && key_is_even(k + 1));
  };
  const std::int64_t k0 = hint < -top ? -top : (hint > top ? top : hint);
  std::int64_t lo, hi;  // invariant: up(lo) (or lo below the range), and hi == top or !up(hi)
  if (k0 < top && up(k0)) {
    lo = k0;
    for (std::int64_t step = 1;; step *= 2) {
      hi = lo + step >= top ? top : lo + step;
      if (hi == top || !up(hi)) break;
      lo = hi;
    }
  } else {
    hi = k0;
    for (std::int64_t step = 1;; step *= 2) {
      if (hi == -top) return clamp_overflow(-top, g);
      lo = hi - step <= -top ? -top : hi - step;
      if (up(lo)) break;
      hi = lo;
      if (lo == -top) return clamp_overflow(-top, g);
    }
  }
  while (hi - lo > 1) {  // answer in (lo, hi]
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (up(mid)) lo = mid; else hi = mid;
  }
  return clamp_overflow(hi, g);
}

// "0x3f80 (1)" for reports.
std::string describe_bits(std::uint32_t bits, DType t);

}  // namespace num
}  // namespace oracle
