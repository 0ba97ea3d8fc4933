// Exact dyadic arithmetic for the multiprecision path (the last step of Ziv's strategy).
#include <cinttypes>
#include <cstdio>

#include "oracle/numeric.h"

namespace oracle {
namespace num {

std::int64_t rn_key_slow(double v, const Grid& g) {
  const std::uint32_t bits = rmsnorm::encode(std::fabs(v), g.type, g.overflow);
  std::int64_t mag = bits & g.mag_mask;
  if (mag > g.max_mag) mag = g.max_mag + 1;
  return clamp_overflow(std::signbit(v) ? -mag : mag, g);
}

double to_double(const Dyadic& a) {
  if (a.m == 0) return 0.0;
  // Keep the top 64 bits of the mantissa (the truncation is far below double precision for
  // printing purposes) and scale.
  const BigInt mag = boost::multiprecision::abs(a.m);
  const int nbits = static_cast<int>(boost::multiprecision::msb(mag)) + 1;
  const int drop = nbits > 64 ? nbits - 64 : 0;
  const BigInt top = mag >> drop;
  const double v = std::ldexp(static_cast<double>(static_cast<std::uint64_t>(top)), a.e + drop);
  return a.m.sign() < 0 ? -v : v;
}

// sqrt(N/Q)·A is non-negative, so the sign is decided by T's sign when T ≤ 0 and otherwise by
// squaring both sides: sqrt(N/Q)·A ⋛ T  ⟺  N·A² ⋛ T²·Q (Q > 0, both sides ≥ 0).
int compare_sqrt_ratio(const Dyadic& N, const Dyadic& Q, const Dyadic& A, const Dyadic& T) {
  const bool lhs_zero = N.sign() == 0 || A.sign() == 0;
  if (T.sign() < 0) return 1;
  if (T.sign() == 0) return lhs_zero ? 0 : 1;
  if (lhs_zero) return -1;
  return compare(N * A * A, T * T * Q);
}

std::string describe_bits(std::uint32_t bits, DType t) {
  char buf[96];
  const int digits = t == DType::f32 ? 8 : (rmsnorm::size_of(t) == 2 ? 4 : 2);
  std::snprintf(buf, sizeof buf, "0x%0*" PRIx32 " (%.9g)", digits, bits, rmsnorm::decode(bits, t));
  return buf;
}

}  // namespace num
}  // namespace oracle
