// The oracle's analytic gradient against central differences of its own forward
// (docs/contract.md#acceptance, docs/properties.md#p3).
//
// L = Σ_rows Σ_j dy_j · w_j x_j r(x),  r(x) = (Σ x²/D + eps)^(-1/2), recomputed from x (not the
// given rstd). Perturbing x_i by ±h only changes S = Σx² and W = Σ dy_j w_j x_j of its row, so
//   L_row(x ± h e_i) = (W ± dy_i w_i h) / sqrt((S − x_i² + (x_i ± h)²)/D + eps),
// and [L(x+h e_i) − L(x−h e_i)]/(2h) has truncation error O(h²·L''') — relative ~1e-12 for
// h = 1e-6·max(|x_i|, rms). In FP64 the two L values carry rounding errors of about
// (D+10)·2^-53·|L| each; when that, divided by 2h, is not negligible against the tolerance, the
// difference is recomputed in 50-digit binary floating point (cpp_bin_float_50), where it is.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <boost/multiprecision/cpp_bin_float.hpp>

#include "oracle/judge.h"
#include "oracle/oracle.h"

namespace oracle {

namespace {

using Big = boost::multiprecision::cpp_bin_float_50;
constexpr double kTolerance = 1e-6;  // max |analytic − central| / magnitude scale

double weight(const BackwardCase& c, std::int64_t j) {
  if (c.convention == Convention::no_weight) return 1.0;
  if (c.convention == Convention::gemma) return 1.0 + static_cast<double>(c.g[j]);
  return c.g[j];
}

struct RowSums {
  double S = 0, W = 0, A = 0;  // Σx², Σ dy w x, Σ|dy w x|
  Big Sb = 0, Wb = 0;
};

RowSums row_sums(const BackwardCase& c, std::int64_t r) {
  RowSums s;
  const std::int64_t D = c.dim;
  for (std::int64_t j = 0; j < D; ++j) {
    const double x = c.x[r * D + j], t = c.dy[r * D + j] * weight(c, j);
    s.S += x * x;
    s.W += t * x;
    s.A += std::fabs(t * x);
    s.Sb += Big(x) * Big(x);
    s.Wb += Big(c.dy[r * D + j]) * Big(weight(c, j)) * Big(x);
  }
  return s;
}

std::string line(const char* name, std::int64_t r, std::int64_t i, double a, double cd, double rel) {
  char buf[200];
  if (r >= 0)
    std::snprintf(buf, sizeof buf, "%s[%lld,%lld]: analytic %.17g central %.17g rel %.3g > %.0e", name,
                  static_cast<long long>(r), static_cast<long long>(i), a, cd, rel, kTolerance);
  else
    std::snprintf(buf, sizeof buf, "%s[%lld]: analytic %.17g central %.17g rel %.3g > %.0e", name,
                  static_cast<long long>(i), a, cd, rel, kTolerance);
  return buf;
}

}  // namespace

GradientCheck check_gradient_central(const BackwardCase& c0, const BackwardValues& analytic) {
  GradientCheck g;
  BackwardCase c = c0;
  if (c.rstd.empty()) c.rstd.assign(static_cast<std::size_t>(std::max<std::int64_t>(c.rows, 0)), 1.0f);
  const std::string err = validate(c);
  const std::int64_t R = c.rows, D = c.dim;
  const bool want_dg = c.convention != Convention::no_weight;
  if (!err.empty() || static_cast<std::int64_t>(analytic.dx.size()) != R * D ||
      (want_dg && static_cast<std::int64_t>(analytic.dg.size()) != D)) {
    g.pass = false;
    g.first_failure = err.empty() ? "analytic gradient has the wrong size" : err;
    return g;
  }
  const double Dd = static_cast<double>(D), eps = c.eps;
  // Exceptions (Boost.Multiprecision) never leave an OpenMP region: the earliest is reported.
  const int nt = std::max(1, omp_get_max_threads());
  std::vector<judge::RowError> errors(static_cast<std::size_t>(nt));
  auto guarded = [&](std::int64_t position, const char* what, auto&& body) {
    try {
      body();
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(omp_get_thread_num())].keep(position, what + std::to_string(position) + ": " + e.what());
    } catch (...) {
      errors[static_cast<std::size_t>(omp_get_thread_num())].keep(position, what + std::to_string(position) + ": unknown exception");
    }
  };
  std::vector<RowSums> sums(static_cast<std::size_t>(R));
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (std::int64_t r = 0; r < R; ++r) guarded(r, "gradient row sums ", [&] { sums[r] = row_sums(c, r); });

  // dx: row by row.
  std::vector<double> rel_dx(static_cast<std::size_t>(R * D), 0.0), central_dx(static_cast<std::size_t>(R * D), 0.0);
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (std::int64_t r = 0; r < R; ++r) guarded(R + r, "gradient dx row ", [&] {
    const RowSums& s = sums[r];
    const double m = s.S / Dd + eps;
    if (!(m > 0) || !std::isfinite(m)) return;  // eps = 0 zero row: no gradient (NaN)
    const double rr = 1.0 / std::sqrt(m), rms = std::sqrt(m);
    const double c_abs = rr * rr * s.A / Dd;  // (1/D)Σ|ĝ x̂|
    for (std::int64_t i = 0; i < D; ++i) {
      const double x = c.x[r * D + i], gw = c.dy[r * D + i] * weight(c, i);
      const double h = 1e-6 * std::max(std::fabs(x), rms);
      const double mag = rr * std::fabs(gw) + rr * std::fabs(x * rr) * c_abs + 1e-300;
      auto L = [&](double xi) {
        const double S = s.S - x * x + xi * xi, W = s.W - gw * x + gw * xi;
        return W / std::sqrt(S / Dd + eps);
      };
      const double Lp = L(x + h), Lm = L(x - h);
      double cd = (Lp - Lm) / (2 * h);
      const double rounding = (Dd + 10) * 0x1p-53 * (std::fabs(Lp) + std::fabs(Lm) + rr * s.A) / (2 * h);
      if (rounding > 1e-3 * kTolerance * mag) {
        auto Lb = [&](const Big& xi) {
          const Big S = s.Sb - Big(x) * Big(x) + xi * xi, W = s.Wb - Big(gw) * Big(x) + Big(gw) * xi;
          return W / sqrt(S / Big(Dd) + Big(eps));
        };
        const Big hb(h);
        cd = static_cast<double>((Lb(Big(x) + hb) - Lb(Big(x) - hb)) / (2 * hb));
      }
      central_dx[r * D + i] = cd;
      rel_dx[r * D + i] = std::fabs(analytic.dx[r * D + i] - cd) / mag;
    }
  });
  // dg: L is linear in each g_i; the central difference perturbs g_i in every row at once.
  std::vector<double> rel_dg(static_cast<std::size_t>(want_dg ? D : 0), 0.0), central_dg(rel_dg.size(), 0.0);
  if (want_dg) {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 16)
    for (std::int64_t i = 0; i < D; ++i) guarded(2 * R + i, "gradient dg column ", [&] {
      const double h = 1e-6 * std::max(std::fabs(static_cast<double>(c.g[i])), 1.0);
      double Lp = 0, Lm = 0, mag = 1e-300, sumabs = 0;
      for (std::int64_t r = 0; r < R; ++r) {
        const RowSums& s = sums[r];
        const double m = s.S / Dd + eps;
        if (!(m > 0) || !std::isfinite(m)) continue;
        const double rr = 1.0 / std::sqrt(m);
        const double t = c.dy[r * D + i] * c.x[r * D + i];
        Lp += rr * (s.W + h * t);
        Lm += rr * (s.W - h * t);
        mag += std::fabs(rr * t);
        sumabs += rr * s.A;
      }
      double cd = (Lp - Lm) / (2 * h);
      const double rounding = (static_cast<double>(R) + Dd + 10) * 0x1p-53 * (sumabs + std::fabs(Lp) + std::fabs(Lm)) / (2 * h);
      if (rounding > 1e-3 * kTolerance * mag) {
        Big P = 0, M = 0;
        const Big hb(h);
        for (std::int64_t r = 0; r < R; ++r) {
          const RowSums& s = sums[r];
          const Big m = s.Sb / Big(Dd) + Big(eps);
          if (!(m > 0)) continue;
          const Big rr = 1 / sqrt(m);
          const Big t = Big(c.dy[r * D + i]) * Big(c.x[r * D + i]);
          P += rr * (s.Wb + hb * t);
          M += rr * (s.Wb - hb * t);
        }
        cd = static_cast<double>((P - M) / (2 * hb));
      }
      central_dg[i] = cd;
      rel_dg[i] = std::fabs(analytic.dg[i] - cd) / mag;
    });
  }
  judge::RowError first;
  for (const auto& e : errors) first.merge(e);
  if (!first.message().empty()) {
    g.pass = false;
    g.first_failure = first.message();
    return g;
  }
  for (std::int64_t k = 0; k < R * D; ++k) {
    if (rel_dx[k] > g.max_rel_dx) g.max_rel_dx = rel_dx[k];
    if (!(rel_dx[k] <= kTolerance) && g.pass) {
      g.pass = false;
      g.first_failure = line("dx", k / D, k % D, analytic.dx[k], central_dx[k], rel_dx[k]);
    }
  }
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(rel_dg.size()); ++i) {
    if (rel_dg[i] > g.max_rel_dg) g.max_rel_dg = rel_dg[i];
    if (!(rel_dg[i] <= kTolerance) && g.pass) {
      g.pass = false;
      g.first_failure = line("dg", -1, i, analytic.dg[i], central_dg[i], rel_dg[i]);
    }
  }
  return g;
}

// The analytic gradient with r recomputed from x: dx_i = r ĝ_i − r³ x_i (Σ_j ĝ_j x_j)/D,
// dg_i = Σ_rows dy_i x_i r (FP64).
GradientCheck check_gradient_central(const BackwardCase& c) {
  BackwardValues a;
  const std::int64_t R = c.rows, D = c.dim;
  if (R < 0 || D < 1 || static_cast<std::int64_t>(c.x.size()) != R * D || static_cast<std::int64_t>(c.dy.size()) != R * D)
    return check_gradient_central(c, a);  // reports the invalid case
  a.dx.assign(static_cast<std::size_t>(R * D), 0.0);
  const bool want_dg = c.convention != Convention::no_weight;
  if (want_dg) a.dg.assign(static_cast<std::size_t>(D), 0.0);
  if (want_dg && static_cast<std::int64_t>(c.g.size()) != D) return check_gradient_central(c, a);
  for (std::int64_t r = 0; r < R; ++r) {
    double S = 0, T = 0;
    for (std::int64_t j = 0; j < D; ++j) {
      const double x = c.x[r * D + j];
      S += x * x;
      T += c.dy[r * D + j] * weight(c, j) * x;
    }
    const double rr = 1.0 / std::sqrt(S / static_cast<double>(D) + c.eps);
    for (std::int64_t i = 0; i < D; ++i) {
      const double x = c.x[r * D + i];
      a.dx[r * D + i] = rr * c.dy[r * D + i] * weight(c, i) - rr * rr * rr * x * T / static_cast<double>(D);
      if (want_dg) a.dg[i] += c.dy[r * D + i] * x * rr;
    }
  }
  return check_gradient_central(c, a);
}

}  // namespace oracle
