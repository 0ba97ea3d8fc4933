// The backward: dx per element within a magnitude-weighted bound, dg per column.
//
// Exact values (r = the GIVEN fp32 rstd, treated as exact; ĝ_j = dy_j w_j; T = Σ_j ĝ_j x_j):
//   c = (1/D) Σ ĝ_j x̂_j = (r/D)·T,   dx_i = r ĝ_i − r³ x_i T / D (+ dres_i),
// so D·dx_i = D r ĝ_i − r³ x_i T (+ D dres_i) is an exact dyadic: comparisons of dx_i ± B against
// a grid midpoint are exact sign tests. dg_i = Σ_rows dy_i x_i r is a dyadic sum.
//
// Kernel bound (fp32, fl(a∘b) = (a∘b)(1+δ), |δ| ≤ u, sums of shape (k, d)):
//   ĝ_i: u; x̂_i: u; ĝ_j x̂_j: 3u; Σ over the row: (k+d)u more on Σ|ĝ x̂|; /D: u; x̂_i·c: 2u;
//   the subtraction ĝ_i − x̂_i c: u on both parts; the final ·r: u on both parts. Hence
//   |dx̂_i − dx_i| ≤ u·[3·r|ĝ_i| + (k+d+8)·(r/D)|x̂_i|·Σ_j|ĝ_j x̂_j|]·factor
//   (+ u(|dx_i| + |dres_i|) for the add of dresidual), factor = 1/(1 − (k+d+16)u) the
//   second-order factor. Underflow: each fp32 product may lose 2^-150 absolutely; propagated
//   through the chain above (·r at the end, x̂_i·c in the middle) this is at most
//   2^-149·r·(2 + |c| + |x̂_i|·(2 + (1/D)Σ_j(|ĝ_j| + |x̂_j|))), plus η = 2^-148 for the output.
//   dg: x̂ = fl(x r), fl(dy·x̂), then a sum of shape (k_r, d_r): (k_r + d_r + 2)u·Σ|dy x̂|·factor,
//   with 2^-148 + 2^-149·Σ_rows(1 + |dy|) for underflow.
//
// FP64 enclosure of dx_i (standard weights: ĝ exact; gemma: 1 + g and ĝ two roundings):
//   T_d errs by ≤ (D + 2 [+2])·2^-53·Σ|ĝ_j x_j|, c_d by (r/D) of that plus 2 roundings, the
//   products and subtraction by a few more:
//   |dx_d − dx| ≤ 2^-53·[5 r|ĝ_i| + (D + 10)·r|x̂_i|·(r/D)Σ|ĝ_j x_j| + 2|dx_d| + 2|dres_i|]·1.01.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "oracle/judge.h"
#include "oracle/numeric.h"

namespace oracle {

using judge::KeyAcceptance;
using Kind = Acceptance::Kind;
using num::Dyadic;
using num::Grid;
using num::dn;
using num::up;

namespace {

constexpr double kFltMax = 3.4028234663852886e38;

bool is_storage_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
bool representable(const std::vector<float>& v, DType t) {
  for (float f : v)
    if (!num::representable(f, t)) return false;
  return true;
}

struct Plan {
  const BackwardCase* c = nullptr;
  Grid gx, gdg;
  bool add = false, no_weight = false, gemma = false;
  std::vector<double> w;
  double kd_row = 0, factor_row = 1, kd_dg = 0, factor_dg = 1;
};

double factor_of(AccumShape s) {
  return 1.0 / (1.0 - (static_cast<double>(s.per_thread) + s.tree_depth + 16.0) * num::kU);
}

std::string make_plan(const BackwardCase& c, AccumShape row_shape, AccumShape dg_shape, Plan& p) {
  if (c.dim < 1) return "invalid case: dim must be >= 1 (got " + std::to_string(c.dim) + ")";
  if (c.rows < 0) return "invalid case: rows must be >= 0 (got " + std::to_string(c.rows) + ")";
  if (c.rows > std::numeric_limits<std::int64_t>::max() / c.dim) return "invalid case: rows*dim overflows";
  if (std::isnan(c.eps)) return "invalid case: eps is NaN";
  if (c.eps < 0) return "invalid case: eps must be >= 0 (got " + std::to_string(c.eps) + ")";
  if (std::isinf(c.eps)) return "invalid case: eps must be finite";
  if (!is_storage_float(c.x_type))
    return std::string("invalid case: x type must be f32, f16 or bf16 (got ") + rmsnorm::to_string(c.x_type) + ")";
  const bool no_weight = c.convention == Convention::no_weight;
  if (!no_weight && c.g_type != c.x_type && c.g_type != DType::f32)
    return std::string("invalid case: g type must be the x type or f32 (got ") + rmsnorm::to_string(c.g_type) + ")";
  if (c.dg_type != DType::f32 && c.dg_type != c.g_type)
    return std::string("invalid case: dg type must be f32 or the g type (got ") + rmsnorm::to_string(c.dg_type) + ")";
  const std::int64_t n = c.rows * c.dim;
  if (static_cast<std::int64_t>(c.x.size()) != n)
    return "invalid case: x has " + std::to_string(c.x.size()) + " values, rows*dim = " + std::to_string(n);
  if (static_cast<std::int64_t>(c.dy.size()) != n)
    return "invalid case: dy has " + std::to_string(c.dy.size()) + " values, rows*dim = " + std::to_string(n);
  if (static_cast<std::int64_t>(c.rstd.size()) != c.rows)
    return "invalid case: rstd has " + std::to_string(c.rstd.size()) + " values, rows = " + std::to_string(c.rows);
  if (!c.dresidual.empty() && static_cast<std::int64_t>(c.dresidual.size()) != n)
    return "invalid case: dresidual has " + std::to_string(c.dresidual.size()) + " values, rows*dim = " + std::to_string(n);
  if (no_weight) {
    if (!c.g.empty() && static_cast<std::int64_t>(c.g.size()) != c.dim)
      return "invalid case: g has " + std::to_string(c.g.size()) + " values, dim = " + std::to_string(c.dim);
  } else if (static_cast<std::int64_t>(c.g.size()) != c.dim) {
    return "invalid case: g has " + std::to_string(c.g.size()) + " values, dim = " + std::to_string(c.dim);
  }
  if (!representable(c.x, c.x_type)) return "invalid case: some x value is not representable in the x type";
  if (!representable(c.dy, c.x_type)) return "invalid case: some dy value is not representable in the x type";
  if (!representable(c.dresidual, c.x_type)) return "invalid case: some dresidual value is not representable in the x type";
  if (!no_weight && !representable(c.g, c.g_type)) return "invalid case: some g value is not representable in the g type";
  p.c = &c;
  p.add = !c.dresidual.empty();
  p.no_weight = no_weight;
  p.gemma = c.convention == Convention::gemma;
  p.gx = num::grid_of(c.x_type, rmsnorm::Overflow::ieee);
  p.gdg = num::grid_of(c.dg_type, rmsnorm::Overflow::ieee);
  p.w.assign(static_cast<std::size_t>(c.dim), 1.0);
  if (!no_weight)
    for (std::int64_t j = 0; j < c.dim; ++j) p.w[j] = p.gemma ? 1.0 + static_cast<double>(c.g[j]) : c.g[j];
  p.kd_row = static_cast<double>(row_shape.per_thread) + row_shape.tree_depth;
  p.factor_row = factor_of(row_shape);
  p.kd_dg = static_cast<double>(dg_shape.per_thread) + dg_shape.tree_depth;
  p.factor_dg = factor_of(dg_shape);
  return "";
}

Dyadic exact_weight(const Plan& p, std::int64_t j) {
  if (p.no_weight) return Dyadic(1.0);
  if (p.gemma) return Dyadic(1.0) + Dyadic(static_cast<double>(p.c->g[j]));
  return Dyadic(static_cast<double>(p.c->g[j]));
}

template <typename Cmp>
std::int64_t decide(const Grid& g, double lo, double hi, Evaluation mode, bool& fallback, Cmp&& cmp) {
  const std::int64_t klo = num::rn_key(lo, g);
  if (mode == Evaluation::fast && num::rn_key(hi, g) == klo) return klo;
  fallback = true;
  return num::rn_walk(g, klo, cmp);
}

KeyAcceptance any_acceptance(double exact) {
  KeyAcceptance a;
  a.kind = Kind::any;
  a.exact = exact;
  return a;
}

// dx of one row: emit(col, acceptance).
template <typename Emit>
void dx_row(const Plan& p, std::int64_t ri, Evaluation mode, Emit&& emit) {
  const BackwardCase& c = *p.c;
  const std::int64_t D = c.dim, base = ri * D;
  const double r = c.rstd[static_cast<std::size_t>(ri)];
  const double Dd = static_cast<double>(D);
  bool special = !(std::isfinite(r) && r > 0);
  double G = 0, A = 0, SG = 0, SX = 0, maxg = 0;
  for (std::int64_t j = 0; j < D && !special; ++j) {
    const double x = c.x[base + j], dy = c.dy[base + j];
    if (!std::isfinite(x) || !std::isfinite(dy) || (p.add && !std::isfinite(c.dresidual[base + j]))) special = true;
    const double gh = dy * p.w[j];
    G += gh * x;
    A += std::fabs(gh * x);
    SG += std::fabs(gh);
    SX += std::fabs(x * r);
    maxg = std::max(maxg, std::fabs(gh));
  }
  const double c_abs = r * A / Dd;  // (1/D)Σ|ĝ_j x̂_j|
  // fp32 intermediates of the kernel must stay finite: outside that, any output.
  if (!special && (maxg > kFltMax || r * maxg > kFltMax || r * A > kFltMax || r * SX * c_abs > kFltMax)) special = true;
  if (special) {
    for (std::int64_t i = 0; i < D; ++i) emit(i, any_acceptance(std::numeric_limits<double>::quiet_NaN()));
    return;
  }
  const double cd = r * G / Dd;
  // Exact state, built on the first straddle.
  bool ready = false;
  Dyadic T, R, R3, DD;
  auto ensure = [&] {
    if (ready) return;
    T = Dyadic();
    for (std::int64_t j = 0; j < D; ++j)
      T = T + Dyadic(static_cast<double>(c.dy[base + j])) * exact_weight(p, j) * Dyadic(static_cast<double>(c.x[base + j]));
    R = Dyadic(r);
    R3 = R * R * R;
    DD = Dyadic(Dd);
    ready = true;
  };
  const double u = num::kU;
  for (std::int64_t i = 0; i < D; ++i) {
    const double x = c.x[base + i];
    const double gh = c.dy[base + i] * p.w[i];
    const double xh = x * r;
    const double dres = p.add ? static_cast<double>(c.dresidual[base + i]) : 0.0;
    const double dxd = (r * gh - r * (xh * cd)) + dres;
    const double errd =
        num::kU53 * (5 * r * std::fabs(gh) + (Dd + 10) * r * std::fabs(xh) * c_abs + 2 * std::fabs(dxd) + 2 * std::fabs(dres)) * 1.01 +
        0x1p-1000;
    const double eta = num::kEta + 0x1p-149 * r * (2 + std::fabs(cd) + std::fabs(xh) * (2 + (SG + SX) / Dd));
    double B = u * (3 * r * std::fabs(gh) + (p.kd_row + 8) * r * std::fabs(xh) * c_abs) * p.factor_row;
    if (p.add) B += u * (std::fabs(dxd) + errd + std::fabs(dres)) * p.factor_row;
    B = up(up(B) + eta);
    bool fb = false;
    auto key_for = [&](double offset) {  // RN_x(dx + offset)
      const double lo = dn(dn(dxd - errd) + offset), hi = up(up(dxd + errd) + offset);
      auto cmp = [&](double mid) {
        ensure();
        const Dyadic dy_w = Dyadic(static_cast<double>(c.dy[base + i])) * exact_weight(p, i);
        // D·(dx_i + offset − mid) = D r ĝ_i − r³ x_i T + D (dres_i + offset − mid)
        const Dyadic v = DD * R * dy_w - R3 * Dyadic(x) * T + DD * (Dyadic(dres) + Dyadic(offset) - Dyadic(mid));
        return v.sign();
      };
      return decide(p.gx, lo, hi, mode, fb, cmp);
    };
    KeyAcceptance a;
    a.kind = Kind::range;
    a.lo = key_for(-B);
    a.hi = key_for(B);
    const std::int64_t kr = key_for(0);
    a.rounded = num::bits_of_key(kr, p.gx, dxd < 0);
    a.exact = dxd;
    a.fallback = fb;
    emit(i, a);
  }
}

// dg of one column.
KeyAcceptance dg_column(const Plan& p, std::int64_t i, Evaluation mode) {
  const BackwardCase& c = *p.c;
  const std::int64_t D = c.dim;
  double G = 0, A = 0, SDY = 0;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const double rs = c.rstd[static_cast<std::size_t>(r)];
    const double dy = c.dy[r * D + i], x = c.x[r * D + i];
    if (!(std::isfinite(rs) && rs > 0) || !std::isfinite(dy) || !std::isfinite(x)) return any_acceptance(std::numeric_limits<double>::quiet_NaN());
    const double t = dy * x * rs;
    G += t;
    A += std::fabs(t);
    SDY += std::fabs(dy);
  }
  if (A > kFltMax) return any_acceptance(G);
  const double R = static_cast<double>(c.rows);
  const double errd = (R + 2) * num::kU53 * A * 1.01 + 0x1p-1000;
  const double eta = num::kEta + 0x1p-149 * (R + SDY);
  const double B = up(up((p.kd_dg + 2) * num::kU * A * p.factor_dg) + eta);
  bool fb = false;
  bool ready = false;
  Dyadic ex;
  auto key_for = [&](double offset) {
    const double lo = dn(dn(G - errd) + offset), hi = up(up(G + errd) + offset);
    auto cmp = [&](double mid) {
      if (!ready) {
        for (std::int64_t r = 0; r < c.rows; ++r)
          ex = ex + Dyadic(static_cast<double>(c.dy[r * D + i])) * Dyadic(static_cast<double>(c.x[r * D + i])) *
                        Dyadic(static_cast<double>(c.rstd[static_cast<std::size_t>(r)]));
        ready = true;
      }
      return num::compare(ex + Dyadic(offset), Dyadic(mid));
    };
    return decide(p.gdg, lo, hi, mode, fb, cmp);
  };
  KeyAcceptance a;
  a.kind = Kind::range;
  a.lo = key_for(-B);
  a.hi = key_for(B);
  a.rounded = num::bits_of_key(key_for(0), p.gdg, G < 0);
  a.exact = G;
  a.fallback = fb;
  return a;
}

// Runs dx over rows and dg over columns in parallel; emit_dx(thread, row, col, a),
// emit_dg(thread, col, a).
template <typename EmitDx, typename EmitDg>
void run_backward(const Plan& p, Evaluation mode, bool want_dg, EmitDx&& emit_dx, EmitDg&& emit_dg) {
  const BackwardCase& c = *p.c;
#pragma omp parallel if (c.rows * c.dim >= (1 << 14))
  {
    const int t = omp_get_thread_num();
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t r = 0; r < c.rows; ++r)
      dx_row(p, r, mode, [&](std::int64_t col, const KeyAcceptance& a) { emit_dx(t, r, col, a); });
    if (want_dg) {
#pragma omp for schedule(dynamic, 16)
      for (std::int64_t i = 0; i < c.dim; ++i) emit_dg(t, i, dg_column(p, i, mode));
    }
  }
}

}  // namespace

std::string validate(const BackwardCase& c) {
  Plan p;
  return make_plan(c, AccumShape{}, AccumShape{}, p);
}

Verdict check_backward(const BackwardCase& c, const BackwardResult& got, AccumShape row_shape,
                       AccumShape dg_shape) {
  Verdict v;
  Plan p;
  v.error = make_plan(c, row_shape, dg_shape, p);
  const std::int64_t n = c.rows * c.dim;
  if (v.error.empty()) {
    if (static_cast<std::int64_t>(got.dx.size()) != n)
      v.error = "invalid result: dx has " + std::to_string(got.dx.size()) + " values, rows*dim = " + std::to_string(n);
    else if (!got.dg.empty() && p.no_weight)
      v.error = "invalid result: dg given for the no_weight convention (there is no weight)";
    else if (!got.dg.empty() && static_cast<std::int64_t>(got.dg.size()) != c.dim)
      v.error = "invalid result: dg has " + std::to_string(got.dg.size()) + " values, dim = " + std::to_string(c.dim);
  }
  if (!v.error.empty()) { v.pass = false; return v; }
  const int nt = std::max(1, omp_get_max_threads());
  std::vector<judge::Tally> tallies(static_cast<std::size_t>(nt));
  run_backward(
      p, Evaluation::fast, !got.dg.empty(),
      [&](int t, std::int64_t r, std::int64_t col, const KeyAcceptance& a) {
        judge::judge(a, got.dx[static_cast<std::size_t>(r * c.dim + col)], p.gx, "dx", 0, r, col, tallies[t]);
      },
      [&](int t, std::int64_t col, const KeyAcceptance& a) {
        judge::judge(a, got.dg[static_cast<std::size_t>(col)], p.gdg, "dg", 1, -1, col, tallies[t]);
      });
  judge::Tally all;
  for (const auto& t : tallies) all.merge(t);
  v.profile = all.profile;
  v.pass = all.profile.failures == 0;
  v.first_failure = all.first.line;
  return v;
}

BackwardAcceptance backward_acceptance(const BackwardCase& c, AccumShape row_shape, AccumShape dg_shape,
                                       Evaluation mode) {
  BackwardAcceptance out;
  Plan p;
  out.error = make_plan(c, row_shape, dg_shape, p);
  if (!out.error.empty()) return out;
  out.dx.resize(static_cast<std::size_t>(c.rows * c.dim));
  if (!p.no_weight) out.dg.resize(static_cast<std::size_t>(c.dim));
  const int nt = std::max(1, omp_get_max_threads());
  std::vector<std::int64_t> fb(static_cast<std::size_t>(nt), 0);
  run_backward(
      p, mode, !p.no_weight,
      [&](int t, std::int64_t r, std::int64_t col, const KeyAcceptance& a) {
        if (a.fallback) ++fb[t];
        out.dx[static_cast<std::size_t>(r * c.dim + col)] = judge::to_public(a, p.gx);
      },
      [&](int t, std::int64_t col, const KeyAcceptance& a) {
        if (a.fallback) ++fb[t];
        out.dg[static_cast<std::size_t>(col)] = judge::to_public(a, p.gdg);
      });
  for (auto f : fb) out.fallbacks += f;
  return out;
}

BackwardResult backward_rounded(const BackwardCase& c, Evaluation mode, std::int64_t* fallbacks) {
  const BackwardAcceptance a = backward_acceptance(c, AccumShape{}, AccumShape{}, mode);
  BackwardResult out;
  if (fallbacks) *fallbacks = a.fallbacks;
  if (!a.error.empty()) return out;
  const std::uint32_t nanx = rmsnorm::traits_of(c.x_type).nan_bits;
  const std::uint32_t nang = rmsnorm::traits_of(c.dg_type).nan_bits;
  for (const Acceptance& e : a.dx) out.dx.push_back(e.kind == Kind::any ? nanx : e.rounded);
  for (const Acceptance& e : a.dg) out.dg.push_back(e.kind == Kind::any ? nang : e.rounded);
  return out;
}

BackwardValues backward_values(const BackwardCase& c) {
  const BackwardAcceptance a = backward_acceptance(c, AccumShape{}, AccumShape{}, Evaluation::fast);
  BackwardValues v;
  for (const Acceptance& e : a.dx) v.dx.push_back(e.exact);
  for (const Acceptance& e : a.dg) v.dg.push_back(e.exact);
  return v;
}

}  // namespace oracle
