#include "harness/values.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "rmsnorm/formats.h"

namespace generators {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Round once to t; the regimes never ask for a value beyond t's range.
float in_type(double v, DType t) { return static_cast<float>(rmsnorm::round_to(v, t)); }

double type_max(DType t) { return rmsnorm::traits_of(t).max_finite; }

// A random subnormal of t (non-zero): m · 2^(emin - mantissa), m in [1, 2^mantissa).
double random_subnormal(DType t, Rng& rng) {
  const rmsnorm::FormatTraits& f = rmsnorm::traits_of(t);
  const std::uint64_t m = 1 + rng.below((std::uint64_t{1} << f.mantissa_bits) - 1);
  const double v = std::ldexp(static_cast<double>(m), f.emin() - f.mantissa_bits);
  return rng.chance(1, 2) ? -v : v;
}

double normal_value(Rng& rng) {
  const int e = static_cast<int>(rng.between(-3, 3));
  double v = rng.normal() * std::ldexp(1.0, e);
  if (std::fabs(v) < 1e-3) v = v < 0 ? -1e-3 : 1e-3;  // stay away from the type's tiny end
  return v;
}

// Regimes a mixed row may pick, first the commonest.
Regime mixed_row_regime(Rng& rng, float eps) {
  static const Regime kFinite[] = {Regime::normal, Regime::tiny,  Regime::constant, Regime::outliers,
                                   Regime::large,  Regime::zeros, Regime::subnormal, Regime::huge};
  static const unsigned kWeights[] = {6, 2, 1, 2, 1, 1, 1, 1};
  for (;;) {
    std::uint64_t total = 0;
    for (unsigned w : kWeights) total += w;
    std::uint64_t r = rng.below(total);
    std::size_t i = 0;
    while (r >= kWeights[i]) r -= kWeights[i++];
    if (kFinite[i] == Regime::zeros && eps == 0.0f) continue;
    return kFinite[i];
  }
}

}  // namespace

Rng::Rng(std::uint64_t seed) {
  std::uint64_t st = seed;
  for (auto& s : s_) s = splitmix64(st);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::uint64_t Rng::below(std::uint64_t n) {
  if (n <= 1) return 0;
  // Rejection keeps it exactly uniform.
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  std::uint64_t v;
  do v = next();
  while (v >= limit);
  return v % n;
}

std::int64_t Rng::between(std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

bool Rng::chance(unsigned num, unsigned den) { return below(den) < num; }

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  std::uint64_t st = seed ^ (stream * 0xd1b54a32d192ed03ull);
  std::uint64_t a = splitmix64(st);
  st = a ^ (index * 0x8cb92ba72f3d8dd7ull);
  return splitmix64(st);
}

namespace {
constexpr const char* kRegimeNames[] = {"normal", "tiny",  "constant", "outliers", "large",
                                        "zeros",  "subnormal", "huge", "special",  "mixed",
                                        "ones",   "random", "per_channel", "with_zeros"};
constexpr int kRegimeCount = static_cast<int>(sizeof kRegimeNames / sizeof kRegimeNames[0]);
}  // namespace

const char* to_string(Regime r) {
  const int i = static_cast<int>(r);
  return i < kRegimeCount ? kRegimeNames[i] : "?";
}

bool parse(const std::string& s, Regime& out) {
  for (int i = 0; i < kRegimeCount; ++i)
    if (s == kRegimeNames[i]) {
      out = static_cast<Regime>(i);
      return true;
    }
  return false;
}

bool is_row_regime(Regime r) { return static_cast<int>(r) <= static_cast<int>(Regime::mixed); }
bool is_weight_regime(Regime r) { return static_cast<int>(r) >= static_cast<int>(Regime::ones); }

std::vector<float> gen_row_values(Regime r, std::int64_t dim, DType t, float eps, Rng& rng) {
  std::vector<float> row(static_cast<std::size_t>(dim));
  const double tmax = type_max(t);
  if (r == Regime::mixed) r = mixed_row_regime(rng, eps);
  if (r == Regime::zeros && eps == 0.0f) r = Regime::tiny;  // never NaN rows by accident
  switch (r) {
    case Regime::tiny:
      for (auto& v : row) v = in_type((rng.chance(1, 2) ? -1.0 : 1.0) * 1e-4 * (0.5 + 1.5 * rng.uniform()), t);
      break;
    case Regime::constant: {
      static const double kValues[] = {1.0, -3.5, 1e-3, 300.0, 0.1, -1.0};
      const double c = kValues[rng.below(6)];
      for (auto& v : row) v = in_type(c, t);
      break;
    }
    case Regime::outliers: {
      for (auto& v : row) v = in_type(normal_value(rng), t);
      const std::int64_t n = 1 + rng.between(0, std::min<std::int64_t>(2, dim - 1));
      for (std::int64_t k = 0; k < n; ++k) {
        const std::size_t j = static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(dim)));
        const double big = std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.between(8, 12)));
        row[j] = in_type(std::min(big, tmax) * (rng.chance(1, 2) ? -1.0 : 1.0), t);
      }
      break;
    }
    case Regime::large: {
      // Values whose squares overflow fp16 (300² = 90000 > 65504) but not fp32.
      static const double kValues[] = {300.0, 256.0, 65504.0, 65472.0, 32768.0, 1000.0, 4096.0, 300.5};
      for (auto& v : row) {
        double m = kValues[rng.below(8)];
        if (rng.chance(1, 4)) m = 100.0 + rng.uniform() * 65000.0;
        v = in_type(std::min(m, tmax) * (rng.chance(1, 2) ? -1.0 : 1.0), t);
      }
      break;
    }
    case Regime::zeros:
      for (auto& v : row) v = rng.chance(1, 2) ? -0.0f : 0.0f;
      break;
    case Regime::subnormal: {
      // A row of only subnormals has Σx² far below fp32's normals unless the type is fp16:
      // with eps = 0 that row's exact r overflows fp32, outside the guaranteed domain.
      const bool whole_row = (eps > 0.0f || t == DType::f16) && rng.chance(1, 4);
      for (auto& v : row) v = (whole_row || rng.chance(1, 2)) ? in_type(random_subnormal(t, rng), t) : in_type(normal_value(rng), t);
      if (!whole_row && eps == 0.0f && t != DType::f16) row[0] = in_type(normal_value(rng), t);
      break;
    }
    case Regime::huge: {
      if (t == DType::f16) return gen_row_values(Regime::large, dim, t, eps, rng);
      // D·x² <= 2^125 keeps Σx² and every partial sum finite in fp32.
      const int log2d = static_cast<int>(std::ceil(std::log2(static_cast<double>(dim))));
      const int emax = (125 - log2d) / 2 - 1;
      for (auto& v : row) {
        const int e = static_cast<int>(rng.between(emax - 8, emax));
        v = in_type(std::ldexp(1.0 + rng.uniform(), e) * (rng.chance(1, 2) ? -1.0 : 1.0), t);
      }
      break;
    }
    case Regime::special: {
      for (auto& v : row) v = in_type(normal_value(rng), t);
      if (rng.chance(1, 2)) {
        const std::int64_t n = 1 + rng.between(0, std::min<std::int64_t>(1, dim - 1));
        for (std::int64_t k = 0; k < n; ++k) {
          const std::size_t j = static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(dim)));
          const std::uint64_t kind = rng.below(3);
          row[j] = kind == 0 ? std::numeric_limits<float>::quiet_NaN()
                   : kind == 1 ? std::numeric_limits<float>::infinity()
                               : -std::numeric_limits<float>::infinity();
        }
      }
      break;
    }
    case Regime::ones:
      for (auto& v : row) v = 1.0f;
      break;
    case Regime::normal:
    default:
      for (auto& v : row) v = in_type(normal_value(rng), t);
      break;
  }
  return row;
}

std::vector<float> gen_weight(Regime r, std::int64_t dim, DType t, Rng& rng) {
  std::vector<float> g(static_cast<std::size_t>(dim));
  for (std::int64_t j = 0; j < dim; ++j) {
    double v;
    switch (r) {
      case Regime::ones: v = 1.0; break;
      case Regime::per_channel: v = 0.25 + static_cast<double>(j % 61) / 16.0 + rng.uniform() / 64.0; break;
      case Regime::with_zeros: v = rng.chance(1, 4) ? 0.0 : -2.0 + 4.0 * rng.uniform(); break;
      case Regime::random:
      default: v = -2.0 + 4.0 * rng.uniform(); break;
    }
    g[static_cast<std::size_t>(j)] = in_type(v, t);
  }
  return g;
}

std::vector<float> gen_matrix(Regime r, std::int64_t rows, std::int64_t dim, DType t, float eps, std::uint64_t seed,
                              std::uint64_t stream) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(rows * dim));
  for (std::int64_t i = 0; i < rows; ++i) {
    Rng rng(mix_seed(seed, stream, static_cast<std::uint64_t>(i)));
    const std::vector<float> row = gen_row_values(r, dim, t, eps, rng);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

}  // namespace generators

// The case file's hook: materialize a generator + seed case through the regimes.
namespace harness {

bool generate_values(const Case& c, CaseValues& out, std::string& error) {
  using generators::Regime;
  if (c.generator != generators::kRegimeGenerator) {
    error = "unknown generator '" + c.generator + "' (known: regimes)";
    return false;
  }
  Regime xr, orr, gr, dyr;
  if (!generators::parse(c.x_regime, xr) || !generators::is_row_regime(xr)) {
    error = "unknown x.regime '" + c.x_regime + "'";
    return false;
  }
  if (!generators::parse(c.o_regime, orr) || !generators::is_row_regime(orr)) {
    error = "unknown o.regime '" + c.o_regime + "'";
    return false;
  }
  if (!generators::parse(c.g_regime, gr) || !generators::is_weight_regime(gr)) {
    error = "unknown g.regime '" + c.g_regime + "'";
    return false;
  }
  if (!generators::parse(c.dy_regime, dyr) || (!generators::is_row_regime(dyr) && dyr != Regime::ones)) {
    error = "unknown dy.regime '" + c.dy_regime + "'";
    return false;
  }
  // Streams: 1 x, 2 o, 3 g, 4 dy, 5 dresidual.
  out.x = generators::gen_matrix(xr, c.rows, c.dim, c.x_type, c.eps, c.seed, 1);
  if (c.has_add() && c.is_forward()) out.o = generators::gen_matrix(orr, c.rows, c.dim, c.x_type, c.eps, c.seed, 2);
  generators::Rng grng(generators::mix_seed(c.seed, 3, 0));
  out.g = generators::gen_weight(gr, c.dim, c.g_type, grng);
  if (!c.is_forward()) {
    out.dy = generators::gen_matrix(dyr, c.rows, c.dim, c.x_type, 1.0f, c.seed, 4);
    if (c.op == rmsnorm::Op::add_backward)
      out.dresidual = generators::gen_matrix(Regime::normal, c.rows, c.dim, c.x_type, 1.0f, c.seed, 5);
  }
  out.rstd = c.rstd;
  error.clear();
  return true;
}

}  // namespace harness
