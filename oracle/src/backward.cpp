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
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "oracle/judge.h"
#include "oracle/numeric.h"

namespace oracle {

using judge::KeyAcceptance;
using judge::kFltMax;
using Kind = Acceptance::Kind;
using num::Dyadic;
using num::Grid;
using num::dn;
using num::up;

namespace {


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
  const std::string shared = judge::validate_shape_and_types(c.rows, c.dim, c.eps, c.x_type, c.g_type, c.convention);
  if (!shared.empty()) return shared;
  const bool no_weight = c.convention == Convention::no_weight;
  if (c.dg_type != DType::f32 && c.dg_type != c.g_type)
    return std::string("invalid case: dg type must be f32 or the g type (got ") + rmsnorm::to_string(c.dg_type) + ")";
  const std::int64_t n = c.rows * c.dim;
  const std::string counts = judge::first_error(
      {judge::count_error("x", c.x.size(), n, "rows*dim"), judge::count_error("dy", c.dy.size(), n, "rows*dim"),
       judge::count_error("rstd", c.rstd.size(), c.rows, "rows"),
       judge::count_error("dresidual", c.dresidual.size(), n, "rows*dim", true),
       judge::count_error("g", c.g.size(), c.dim, "dim", no_weight)});
  if (!counts.empty()) return counts;
  if (!num::representable(c.x, c.x_type)) return "invalid case: some x value is not representable in the x type";
  if (!num::representable(c.dy, c.x_type)) return "invalid case: some dy value is not representable in the x type";
  if (!num::representable(c.dresidual, c.x_type)) return "invalid case: some dresidual value is not representable in the x type";
  if (!no_weight && !num::representable(c.g, c.g_type)) return "invalid case: some g value is not representable in the g type";
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

// ---------------------------------------------------------------------------------------------
// Deciding dx (and dg): three tiers of Ziv's strategy. Each tier gives an enclosure
// dx ∈ [v − E, v + E]; the keys RN_x(dx − B), RN_x(dx + B) and RN_x(dx) are taken from it when
// both ends of each shifted enclosure round alike (and, for a zero, when the sign is known).
//  1. FP64 from the row's FP64 sums: E grows like D·r|x̂_i|·(1/D)Σ|ĝ x̂|·2^-53, so a row whose dx
//     cancel deeply (a constant row: r ĝ_i ≈ r³ x_i T/D) straddles there for every element.
//  2. Once per row, on the first straddle: the exact T = Σ ĝ_j x_j (BigInt, O(D)) and
//     C = r³T/D as a double-double Ch + Cl. Per element, dx_i = r ĝ_i − x_i C + dres_i by
//     error-free products and sums in FP64: E ≈ 2^-52|dx| + 2^-99|x_i C| — it decides unless dx
//     is an exact zero, within ~2^-50 of a rounding boundary or cancels below ~2^-47 relative.
//  3. Per element: D·dx_i = D r ĝ_i − K x_i + D dres_i (K = r³T) as one exact dyadic, O(1)
//     BigInt operations; its nearest double decides or hints the exact rounding search, whose
//     comparisons are sign(D·dx_i + D·(offset − mid)).
// So the multiprecision work of a row is O(D) once plus O(1) per element that reaches tier 3,
// never O(D) per element.
// ---------------------------------------------------------------------------------------------

struct Keys {
  std::int64_t lo = 0, hi = 0, rounded = 0;  // RN(v − B), RN(v + B), RN(v)
  bool negative = false;                     // sign of the exact value (a rounded zero's sign)
};

// The keys from v ∈ [c − E, c + E], or false when FP64 cannot decide them.
bool keys_from_enclosure(const Grid& g, double c, double E, double B, Keys& k) {
  const double lo = dn(c - E), hi = up(c + E);
  auto key = [&](double offset, std::int64_t& out) {
    out = num::rn_key(offset == 0 ? lo : dn(lo + offset), g);
    return num::rn_key(offset == 0 ? hi : up(hi + offset), g) == out;
  };
  if (!key(0, k.rounded) || !key(-B, k.lo) || !key(B, k.hi)) return false;
  if (lo > 0 || (c == 0 && E == 0)) k.negative = false;  // an exact zero rounds to +0
  else if (hi < 0) k.negative = true;
  else return false;  // rounds to zero, sign open
  return true;
}

// The exact search for the keys of a value V/Dsc known exactly through cmp_at(offset, mid) =
// sign(V/Dsc + offset − mid), hinted by the enclosure [c − E, c + E].
template <typename CmpAt>
Keys keys_by_search(const Grid& g, double c, double E, double B, int exact_sign, CmpAt&& cmp_at) {
  Keys k;
  auto key = [&](double offset) {
    const double lo = dn(dn(c - E) + offset);
    return num::rn_walk(g, num::rn_key(lo, g), [&](double mid) { return cmp_at(offset, mid); });
  };
  k.rounded = key(0);
  k.lo = key(-B);
  k.hi = key(B);
  k.negative = exact_sign < 0;
  return k;
}

inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}
inline void two_prod(double a, double b, double& p, double& e) {
  p = a * b;
  e = std::fma(a, b, -p);  // exact: no product here underflows below 2^-447 or overflows
}

// m·2^e with the trailing zero bits of m moved into e (smaller operands for what follows).
Dyadic normalized(Dyadic v) {
  if (v.m == 0) return Dyadic();
  const unsigned tz = boost::multiprecision::lsb(boost::multiprecision::abs(v.m));
  v.m >>= tz;
  v.e += static_cast<int>(tz);
  return v;
}

// Tier 2 and 3 state of one row.
struct RowExact {
  Dyadic DD, DR, K;       // D, D·r and K = r³·T with T = Σ_j ĝ_j x_j (exact)
  double Ch = 0, Cl = 0;  // C = K/D = Ch + Cl + ζ, |ζ| ≤ 2^-103·|C|
};

RowExact row_exact(const Plan& p, std::int64_t base, double r) {
  const BackwardCase& c = *p.c;
  // T on the fixed exponent 2^-447: dy, x and w = g or 1 + g are multiples of 2^-149.
  num::BigInt acc = 0;
  for (std::int64_t j = 0; j < c.dim; ++j) {
    const float dy = c.dy[base + j], x = c.x[base + j];
    if (dy == 0 || x == 0) continue;
    std::int64_t mdy = 0, mx = 0;
    int edy = 0, ex = 0;
    num::float_parts(dy, mdy, edy);
    num::float_parts(x, mx, ex);
    num::BigInt term = num::BigInt(mdy * mx);  // < 2^48
    int e = edy + ex;
    if (!p.no_weight) {
      std::int64_t mg = 0;
      int eg = 0;
      num::float_parts(c.g[j], mg, eg);
      if (!p.gemma) {
        term *= mg;
        e += eg;
      } else if (mg != 0) {  // 1 + g = (2^-eg + mg)·2^eg, or (1 + mg·2^eg)·2^0 for eg ≥ 0
        if (eg < 0) {
          term *= (num::BigInt(1) << -eg) + mg;
          e += eg;
        } else {
          term *= num::BigInt(1) + (num::BigInt(mg) << eg);
        }
      }
    }
    if (term != 0) acc += term << (e + 447);
  }
  RowExact ex;
  const Dyadic R = normalized(Dyadic(r));
  ex.DD = normalized(Dyadic(static_cast<double>(c.dim)));
  ex.DR = ex.DD * R;
  ex.K = normalized(R * R * R * normalized(Dyadic(acc, -447)));
  if (ex.K.m != 0) {
    // Q = floor(|K|·2^s / D)·2^(e−s) with ≥ 126 bits: |K/D − Q| < 2^-125|Q|; Ch = nearest
    // double of Q (to_double: ≤ 2^-52 relative), Cl of the rest: |Q − Ch − Cl| ≤ 2^-104|Q|.
    const num::BigInt mag = boost::multiprecision::abs(ex.K.m);
    const int bits = static_cast<int>(boost::multiprecision::msb(mag)) + 1;
    const int s = std::max(0, 190 - bits);
    num::BigInt q = (mag << s) / num::BigInt(c.dim);
    if (ex.K.m.sign() < 0) q = -q;
    const Dyadic Q(std::move(q), ex.K.e - s);
    ex.Ch = num::to_double(Q);
    ex.Cl = num::to_double(Q - Dyadic(ex.Ch));
  }
  return ex;
}

// Tier 2: dx_i = r ĝ_i − x_i (Ch + Cl) + dres_i. r·dy is exact (24 × 24 bits); the products
// with w (g, or the exact two-sum of 1 + g) and with Ch are split exactly by two_prod, the big
// parts subtracted by two_sum; the small parts (each ≤ 2^-52 of a big one, or dres) are summed
// naively (≤ 7 terms: error ≤ 6·2^-53·Σ|t|), and the final sum rounds once (≤ 2^-53|v|).
// x_i Cl rounds once (≤ 2^-105|x_i C|) and ζ costs ≤ 2^-103|x_i C|; underflow of the smallest
// parts costs ≤ a few 2^-1074 times |x_i| + 1. E below covers each with a factor 2 to spare.
void tier2(const Plan& p, const RowExact& ex, double r, float dy, float g, float x, double dres, double& v,
           double& E) {
  double t[7];
  int n = 0;
  const double pr = r * static_cast<double>(dy);
  double ah = pr;
  if (!p.no_weight && !p.gemma) {
    two_prod(pr, g, ah, t[n++]);
  } else if (p.gemma) {
    double wh = 0, wl = 0, q = 0;
    two_sum(1.0, g, wh, wl);
    two_prod(pr, wh, ah, t[n++]);
    two_prod(pr, wl, q, t[n++]);
    t[n++] = q;
  }
  double bh = 0, sh = 0;
  two_prod(x, ex.Ch, bh, t[n]);
  t[n] = -t[n];
  ++n;
  t[n++] = -(x * ex.Cl);
  two_sum(ah, -bh, sh, t[n++]);
  t[n++] = dres;
  double tail = 0, tail_abs = 0;
  for (int k = 0; k < n; ++k) {
    tail += t[k];
    tail_abs += std::fabs(t[k]);
  }
  v = sh + tail;
  const double ax = std::fabs(static_cast<double>(x));
  E = up(up(0x1p-52 * std::fabs(v) + 0x1p-49 * tail_abs + 0x1p-99 * std::fabs(bh)) + (ax + 1) * 0x1p-1000);
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
    // A non-finite weight reaches every element of the row through T (and 0·inf is NaN).
    if (!std::isfinite(x) || !std::isfinite(dy) || !std::isfinite(p.w[j]) ||
        (p.add && !std::isfinite(c.dresidual[base + j])))
      special = true;
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
  RowExact ex;  // tiers 2 and 3, built on the first element tier 1 cannot decide
  bool ex_ready = false;
  const double u = num::kU;
  for (std::int64_t i = 0; i < D; ++i) {
    const float xf = c.x[base + i], dyf = c.dy[base + i];
    const double x = xf;
    const double gh = dyf * p.w[i];
    const double xh = x * r;
    const double dres = p.add ? static_cast<double>(c.dresidual[base + i]) : 0.0;
    const double dxd = (r * gh - r * (xh * cd)) + dres;
    // Exactly dres when ĝ_i = 0 and x_i·T = 0 (A = 0 means every product ĝ_j x_j is exactly 0:
    // none of them underflows in FP64).
    const bool exact_d = gh == 0 && (x == 0 || A == 0);
    const double errd =
        exact_d ? 0.0
                : num::kU53 * (5 * r * std::fabs(gh) + (Dd + 10) * r * std::fabs(xh) * c_abs + 2 * std::fabs(dxd) +
                               2 * std::fabs(dres)) * 1.01 + 0x1p-1000;
    const double eta = num::kEta + 0x1p-149 * r * (2 + std::fabs(cd) + std::fabs(xh) * (2 + (SG + SX) / Dd));
    double B = u * (3 * r * std::fabs(gh) + (p.kd_row + 8) * r * std::fabs(xh) * c_abs) * p.factor_row;
    if (p.add) B += u * (std::fabs(dxd) + errd + std::fabs(dres)) * p.factor_row;
    B = up(up(B) + eta);
    Keys k;
    double best = dxd;  // the most accurate approximation of dx at hand (reports)
    bool fb = false;
    if (mode != Evaluation::fast || !keys_from_enclosure(p.gx, dxd, errd, B, k)) {
      fb = true;
      if (!ex_ready) {
        ex = row_exact(p, base, r);
        ex_ready = true;
      }
      bool done = false;
      if (mode == Evaluation::fast) {
        double v = 0, E = 0;
        tier2(p, ex, r, dyf, p.no_weight ? 1.0f : c.g[i], xf, dres, v, E);
        best = v;
        done = keys_from_enclosure(p.gx, v, E, B, k);
      }
      if (!done) {
        // Tier 3: V = D·dx_i exactly.
        const Dyadic V = ex.DR * (Dyadic(static_cast<double>(dyf)) * exact_weight(p, i)) - ex.K * Dyadic(x) +
                         ex.DD * Dyadic(dres);
        const double vd = V.sign() == 0 ? 0.0 : num::to_double(V) / Dd;
        const double E = V.sign() == 0 ? 0.0 : up(0x1p-50 * std::fabs(vd)) + 0x1p-1000;
        best = vd;
        if (mode != Evaluation::fast || !keys_from_enclosure(p.gx, vd, E, B, k))
          k = keys_by_search(p.gx, vd, E, B, V.sign(), [&](double offset, double mid) {
            // D·(dx_i + offset − mid)
            return (V + ex.DD * (Dyadic(offset) - Dyadic(mid))).sign();
          });
      }
    }
    KeyAcceptance a;
    a.kind = Kind::range;
    a.lo = k.lo;
    a.hi = k.hi;
    a.rounded = num::bits_of_key(k.rounded, p.gx, k.negative);
    a.exact = best;
    a.fallback = fb;
    emit(i, a);
  }
}

// dg of one column: tier 1 from the FP64 sum, then (once per column, O(R)) the exact sum.
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
  // A = 0: every term is exactly 0 (no FP64 product of fp32 values underflows), so is G.
  const double errd = A == 0 ? 0.0 : (R + 2) * num::kU53 * A * 1.01 + 0x1p-1000;
  const double eta = num::kEta + 0x1p-149 * (R + SDY);
  const double B = up(up((p.kd_dg + 2) * num::kU * A * p.factor_dg) + eta);
  Keys k;
  double best = G;
  bool fb = false;
  if (mode != Evaluation::fast || !keys_from_enclosure(p.gdg, G, errd, B, k)) {
    fb = true;
    Dyadic ex;
    for (std::int64_t r = 0; r < c.rows; ++r)
      ex = ex + Dyadic(static_cast<double>(c.dy[r * D + i])) * Dyadic(static_cast<double>(c.x[r * D + i])) *
                    Dyadic(static_cast<double>(c.rstd[static_cast<std::size_t>(r)]));
    const double gd = ex.sign() == 0 ? 0.0 : num::to_double(ex);
    const double E = ex.sign() == 0 ? 0.0 : up(0x1p-51 * std::fabs(gd)) + 0x1p-1000;
    best = gd;
    if (mode != Evaluation::fast || !keys_from_enclosure(p.gdg, gd, E, B, k))
      k = keys_by_search(p.gdg, gd, E, B, ex.sign(), [&](double offset, double mid) {
        return num::compare(ex + Dyadic(offset), Dyadic(mid));
      });
  }
  KeyAcceptance a;
  a.kind = Kind::range;
  a.lo = k.lo;
  a.hi = k.hi;
  a.rounded = num::bits_of_key(k.rounded, p.gdg, k.negative);
  a.exact = best;
  a.fallback = fb;
  return a;
}

// Runs dx over rows and dg over columns in parallel; emit_dx(thread, row, col, a),
// emit_dg(thread, col, a). An exception from one row or column (it must never leave the
// OpenMP region: that terminates the process) is kept, the earliest by position, in `error`.
template <typename EmitDx, typename EmitDg>
void run_backward(const Plan& p, Evaluation mode, bool want_dg, EmitDx&& emit_dx, EmitDg&& emit_dg,
                  std::string& error) {
  const BackwardCase& c = *p.c;
  const int nt = std::max(1, omp_get_max_threads());
  std::vector<judge::RowError> errors(static_cast<std::size_t>(nt));
#pragma omp parallel num_threads(nt) if (c.rows * c.dim >= (1 << 14))
  {
    const int t = omp_get_thread_num();
    judge::RowError& err = errors[static_cast<std::size_t>(t)];
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t r = 0; r < c.rows; ++r) {
      try {
        dx_row(p, r, mode, [&](std::int64_t col, const KeyAcceptance& a) { emit_dx(t, r, col, a); });
      } catch (const std::exception& e) {
        err.keep(r, "dx of row " + std::to_string(r) + ": " + e.what());
      } catch (...) {
        err.keep(r, "dx of row " + std::to_string(r) + ": unknown exception");
      }
    }
    if (want_dg) {
#pragma omp for schedule(dynamic, 16)
      for (std::int64_t i = 0; i < c.dim; ++i) {
        try {
          emit_dg(t, i, dg_column(p, i, mode));
        } catch (const std::exception& e) {
          err.keep(c.rows + i, "dg[" + std::to_string(i) + "]: " + e.what());
        } catch (...) {
          err.keep(c.rows + i, "dg[" + std::to_string(i) + "]: unknown exception");
        }
      }
    }
  }
  judge::RowError first;
  for (const auto& e : errors) first.merge(e);
  error = first.message();
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
      },
      v.error);
  if (!v.error.empty()) { v.pass = false; return v; }
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
      },
      out.error);
  if (!out.error.empty()) { out.dx.clear(); out.dg.clear(); return out; }
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
