// Seeded case builders shared by the oracle tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "oracle/oracle.h"
#include "rmsnorm/formats.h"

namespace oracle_test {

using rmsnorm::DType;

// A value of type t: normal-ish magnitudes around `scale` with random sign, rounded once to t.
inline float random_value(std::mt19937_64& rng, DType t, double scale = 1.0) {
  std::normal_distribution<double> n(0.0, scale);
  return static_cast<float>(rmsnorm::round_to(n(rng), t));
}

inline std::vector<float> random_values(std::mt19937_64& rng, DType t, std::int64_t n, double scale = 1.0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& f : v) f = random_value(rng, t, scale);
  return v;
}

inline oracle::ForwardCase forward_case(std::uint64_t seed, std::int64_t rows, std::int64_t dim, DType x,
                                        DType g, rmsnorm::Convention conv = rmsnorm::Convention::standard,
                                        float eps = 1e-6f) {
  std::mt19937_64 rng(seed);
  oracle::ForwardCase c;
  c.rows = rows;
  c.dim = dim;
  c.x_type = x;
  c.g_type = g;
  c.y_type = x;
  c.convention = conv;
  c.eps = eps;
  c.x = random_values(rng, x, rows * dim);
  if (conv != rmsnorm::Convention::no_weight) c.g = random_values(rng, g, dim, conv == rmsnorm::Convention::gemma ? 0.3 : 1.0);
  return c;
}

inline oracle::BackwardCase backward_case(std::uint64_t seed, std::int64_t rows, std::int64_t dim, DType x, DType g,
                                          rmsnorm::Convention conv = rmsnorm::Convention::standard, float eps = 1e-5f) {
  std::mt19937_64 rng(seed);
  oracle::BackwardCase c;
  c.rows = rows;
  c.dim = dim;
  c.x_type = x;
  c.g_type = g;
  c.dg_type = DType::f32;
  c.convention = conv;
  c.eps = eps;
  c.x = random_values(rng, x, rows * dim);
  c.dy = random_values(rng, x, rows * dim);
  if (conv != rmsnorm::Convention::no_weight) c.g = random_values(rng, g, dim);
  // The rstd a forward hands the backward: RN32 of the exact r.
  oracle::ForwardCase f;
  f.rows = rows;
  f.dim = dim;
  f.x_type = x;
  f.g_type = g;
  f.y_type = x;
  f.convention = conv;
  f.eps = eps;
  f.x = c.x;
  f.g = c.g;
  c.rstd = oracle::rstd_rounded(f);
  return c;
}

// The bits of the correctly rounded forward output, with rstd and scales: a correct-by-
// construction result.
inline oracle::ForwardResult rounded_result(const oracle::ForwardCase& c) {
  oracle::ForwardResult r;
  r.y = oracle::forward_rounded(c);
  r.rstd = oracle::rstd_rounded(c);
  if (!c.o.empty()) r.h = oracle::residual_rounded(c);
  if (c.quant == rmsnorm::Quant::dynamic_token || c.quant == rmsnorm::Quant::per_block) r.scale = oracle::scales_rounded(c);
  return r;
}

// Bits of the value one grid step beyond `bits` (magnitude + 1 in the direction of its sign,
// or toward +/- for zero).
inline std::uint32_t next_up(std::uint32_t bits, DType t) {
  const auto& f = rmsnorm::traits_of(t);
  const std::uint32_t sign = 1u << (f.total_bits - 1);
  if (bits == sign) return 1u;  // -0 → smallest positive
  return (bits & sign) ? bits - 1 : bits + 1;
}
inline std::uint32_t next_down(std::uint32_t bits, DType t) {
  const auto& f = rmsnorm::traits_of(t);
  const std::uint32_t sign = 1u << (f.total_bits - 1);
  if (bits == 0 || bits == sign) return sign | 1u;
  return (bits & sign) ? bits + 1 : bits - 1;
}

}  // namespace oracle_test
