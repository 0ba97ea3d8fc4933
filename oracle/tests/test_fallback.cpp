// Ziv's strategy: the FP64 fast path agrees 100% with an evaluation where every rounding
// decision is an exact rational comparison (Evaluation::exact_only), on random small cases and
// on cases built to sit exactly on rounding midpoints, where the fallback must be taken.
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "harness/catch.h"
#include "oracle/oracle.h"
#include "oracle_test_cases.h"
#include "rmsnorm/formats.h"

using namespace oracle;
using rmsnorm::Convention;
using rmsnorm::DType;
using rmsnorm::Quant;

namespace {

// Values that make exact ties likely: small integers times powers of two, with zeros and signs.
float tie_prone_value(std::mt19937_64& rng, DType t) {
  std::uniform_int_distribution<int> m(-9, 9), e(-3, 3);
  return static_cast<float>(rmsnorm::round_to(std::ldexp(m(rng), e(rng)), t));
}

void require_same(const std::vector<Acceptance>& a, const std::vector<Acceptance>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    CAPTURE(k, a[k].lo, b[k].lo, a[k].hi, b[k].hi, a[k].rounded, b[k].rounded);
    REQUIRE(a[k].kind == b[k].kind);
    if (a[k].kind == Acceptance::Kind::any) continue;
    REQUIRE(a[k].rounded == b[k].rounded);
    if (a[k].kind != Acceptance::Kind::range) continue;
    REQUIRE(a[k].lo == b[k].lo);
    REQUIRE(a[k].hi == b[k].hi);
  }
}

const AccumShape kShape{4, 3};

}  // namespace

TEST_CASE("fast path equals pure multiprecision on random small forward cases", "[oracle][fallback]") {
  std::mt19937_64 rng(0xfa11bac);
  const DType types[] = {DType::bf16, DType::f16, DType::f32};
  const Convention convs[] = {Convention::standard, Convention::llama, Convention::gemma, Convention::no_weight};
  std::int64_t compared = 0;
  for (int trial = 0; trial < 48; ++trial) {
    const DType t = types[trial % 3];
    const Convention cv = convs[(trial / 3) % 4];
    const std::int64_t D = 1 + trial % 8;
    ForwardCase c = oracle_test::forward_case(1000 + trial, 12, D, t, t, cv, trial % 5 == 0 ? 0.0f : 1e-3f);
    if (trial % 2) {
      for (auto& v : c.x) v = tie_prone_value(rng, t);
      for (auto& v : c.g) v = tie_prone_value(rng, t);
    }
    if (trial % 7 == 3) c.o = oracle_test::random_values(rng, t, c.rows * D, 0.5);
    const ForwardAcceptance fast = forward_acceptance(c, kShape, Evaluation::fast);
    const ForwardAcceptance exact = forward_acceptance(c, kShape, Evaluation::exact_only);
    CAPTURE(trial, rmsnorm::to_string(t), rmsnorm::to_string(cv), D);
    REQUIRE(fast.error.empty());
    require_same(fast.y, exact.y);
    require_same(fast.rstd, exact.rstd);
    REQUIRE(fast.h == exact.h);
    REQUIRE(forward_rounded(c, Evaluation::fast) == forward_rounded(c, Evaluation::exact_only));
    REQUIRE(exact.fallbacks >= static_cast<std::int64_t>(exact.y.size()) / 2);  // exact_only decides all
    compared += static_cast<std::int64_t>(fast.y.size());
  }
  CHECK(compared > 1000);
}

TEST_CASE("fast path equals pure multiprecision for FP8 outputs and scales", "[oracle][fallback][fp8]") {
  std::mt19937_64 rng(0xf8);
  for (Quant mode : {Quant::static_scale, Quant::dynamic_token, Quant::per_block})
    for (DType q : {DType::e4m3, DType::e5m2}) {
      ForwardCase c = oracle_test::forward_case(77, 6, 200, DType::bf16, DType::bf16);
      for (std::size_t k = 0; k < c.x.size(); k += 3) c.x[k] = tie_prone_value(rng, DType::bf16);
      c.y_type = q;
      c.quant = mode;
      c.static_scale = 0.03125f;
      const ForwardAcceptance fast = forward_acceptance(c, kShape, Evaluation::fast);
      const ForwardAcceptance exact = forward_acceptance(c, kShape, Evaluation::exact_only);
      REQUIRE(fast.error.empty());
      require_same(fast.y, exact.y);
      require_same(fast.scale, exact.scale);
      REQUIRE(forward_rounded(c, Evaluation::fast) == forward_rounded(c, Evaluation::exact_only));
    }
}

TEST_CASE("fast path equals pure multiprecision on random small backward cases", "[oracle][fallback][backward]") {
  std::mt19937_64 rng(0xbac);
  for (int trial = 0; trial < 24; ++trial) {
    const DType t = trial % 2 ? DType::bf16 : DType::f16;
    const Convention cv = trial % 3 == 0 ? Convention::gemma : Convention::standard;
    BackwardCase c = oracle_test::backward_case(500 + trial, 6, 1 + trial % 6, t, t, cv);
    if (trial % 2) {
      for (auto& v : c.dy) v = tie_prone_value(rng, t);
      for (auto& v : c.rstd) v = std::ldexp(1.0f, static_cast<int>(rng() % 3) - 1);  // exact powers of two
    }
    if (trial % 4 == 1) c.dresidual = oracle_test::random_values(rng, t, c.rows * c.dim);
    const BackwardAcceptance fast = backward_acceptance(c, kShape, AccumShape{1, 3}, Evaluation::fast);
    const BackwardAcceptance exact = backward_acceptance(c, kShape, AccumShape{1, 3}, Evaluation::exact_only);
    REQUIRE(fast.error.empty());
    require_same(fast.dx, exact.dx);
    require_same(fast.dg, exact.dg);
  }
}

TEST_CASE("rows whose outputs sit exactly on rounding midpoints take the fallback and tie to even", "[oracle][fallback]") {
  // x = [7, 1 × 15]: Σx² = 64 = 16·4, so r = 1/2 exactly and y_0 = 7·g_0/2. For odd g_0 with
  // 7·g_0 a 9-bit (bf16) or 12-bit (f16) odd number, y_0 is exactly a midpoint of the grid.
  struct Grid { DType t; int g_lo, g_hi; };
  for (const Grid& gr : {Grid{DType::bf16, 37, 73}, Grid{DType::f16, 293, 585}}) {
    ForwardCase c;
    c.x_type = c.g_type = c.y_type = gr.t;
    c.rows = 1;
    c.dim = 16;
    c.eps = 0.0f;
    c.g.assign(16, 1.0f);
    c.x.assign(16, 1.0f);
    c.x[0] = 7.0f;
    std::int64_t total_fallbacks = 0;
    for (int g0 = gr.g_lo; g0 <= gr.g_hi; g0 += 2) {
      c.g[0] = static_cast<float>(g0);
      std::int64_t fb_fast = 0, fb_exact = 0;
      const std::vector<std::uint32_t> fast = forward_rounded(c, Evaluation::fast, &fb_fast);
      const std::vector<std::uint32_t> exact = forward_rounded(c, Evaluation::exact_only, &fb_exact);
      REQUIRE(fast == exact);
      REQUIRE(fb_fast >= c.rows);  // every y_0 straddles in FP64
      total_fallbacks += fb_fast;
      // Ties to even.
      const double mid = 7.0 * g0 / 2.0;
      const double got = rmsnorm::decode(fast[0], gr.t);
      CHECK(std::fabs(got - mid) == std::fabs(rmsnorm::round_to(mid, gr.t) - mid));
      CHECK(got == rmsnorm::round_to(mid, gr.t));
      // A kernel writing the correctly rounded answer passes, with the fallback counted.
      ForwardResult r;
      r.y = fast;
      r.rstd = rstd_rounded(c);
      const Verdict v = check_forward(c, r, kShape);
      REQUIRE(v.pass);
      CHECK(v.profile.fallbacks >= c.rows);
      CHECK(v.profile.correctly_rounded == v.profile.elements);
    }
    CHECK(total_fallbacks > 0);
  }
}

TEST_CASE("a backward dx exactly on a bf16 midpoint takes the fallback", "[oracle][fallback][backward]") {
  // x = [1,1,1,1], g = 1, r = 1 (exact), dy = [256, 2, 0, 0]: c = 258/4 = 64.5 and
  // dx_0 = 256 − 64.5 = 191.5, the midpoint of 191 and 192 (ties to even: 192).
  BackwardCase c;
  c.rows = 1;
  c.dim = 4;
  c.x_type = c.g_type = DType::bf16;
  c.dg_type = DType::f32;
  c.eps = 0;
  c.x = {1, 1, 1, 1};
  c.g = {1, 1, 1, 1};
  c.dy = {256, 2, 0, 0};
  c.rstd = {1.0f};
  std::int64_t fb = 0;
  const BackwardResult r = backward_rounded(c, Evaluation::fast, &fb);
  CHECK(fb > 0);
  CHECK(rmsnorm::decode(r.dx[0], DType::bf16) == 192.0);
  CHECK(rmsnorm::decode(r.dx[1], DType::bf16) == -62.5);
  const BackwardResult e = backward_rounded(c, Evaluation::exact_only);
  CHECK(r.dx == e.dx);
  CHECK(r.dg == e.dg);
}

// ---------------------------------------------------------------------------------------------
// Regressions of the multiprecision path (corpora/regressions/backward_*.case).
// ---------------------------------------------------------------------------------------------
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Rows of one repeated value each (its sign flipped at random places): with dy = 1 every dx_i
// is r·(w_i − r²·x_i·T/D), a deep cancellation — an exact zero where r is exact (x = ±2^k).
BackwardCase constant_rows(std::int64_t rows, std::int64_t dim, DType t, Convention cv) {
  const float values[] = {2.0f, 0.5f, 3.0f, 300.0f, 1e-3f, -7.0f, 0.25f, 1.5f};
  BackwardCase c;
  c.rows = rows;
  c.dim = dim;
  c.x_type = c.g_type = t;
  c.dg_type = DType::f32;
  c.convention = cv;
  c.eps = 0;
  std::mt19937_64 rng(0xc0de);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < dim; ++j) {
      const float v = static_cast<float>(rmsnorm::round_to(values[r % 8], t));
      c.x.push_back(rng() % 4 == 0 ? -v : v);
    }
  c.dy.assign(static_cast<std::size_t>(rows * dim), 1.0f);
  if (cv != Convention::no_weight)
    for (std::int64_t j = 0; j < dim; ++j) c.g.push_back(j % 5 == 0 ? 0.0f : 1.0f);
  ForwardCase f;
  f.rows = rows;
  f.dim = dim;
  f.x_type = f.g_type = f.y_type = t;
  f.convention = cv;
  f.eps = 0;
  f.x = c.x;
  f.g = c.g;
  c.rstd = rstd_rounded(f);
  return c;
}

}  // namespace

TEST_CASE("an exact zero dx with a tiny nonzero FP64 enclosure is decided at once", "[oracle][fallback][backward]") {
  // Guards a hang: x = [2, -0.5], g = 3, dy = 1, D = 1 gives r = 1/|x| exactly and dx = r g (1 − r²x²)
  // = 0 exactly; with the FP64 enclosure [−1e-16, 1e-16] a key-by-key rounding walk would step
  // across the ~10^9 fp32 keys between 1e-16 and 0 one comparison at a time.
  BackwardCase c;
  c.rows = 2;
  c.dim = 1;
  c.x_type = c.g_type = DType::f32;
  c.dg_type = DType::f32;
  c.eps = 0;
  c.x = {2.0f, -0.5f};
  c.g = {3.0f};
  c.dy = {1.0f, 1.0f};
  c.rstd = {0.5f, 2.0f};
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t fb = 0;
  const BackwardResult r = backward_rounded(c, Evaluation::fast, &fb);
  REQUIRE(r.dx.size() == 2);
  CHECK(r.dx[0] == 0u);  // +0: an exact zero rounds to +0
  CHECK(r.dx[1] == 0u);
  CHECK(fb > 0);
  CHECK(backward_rounded(c, Evaluation::exact_only).dx == r.dx);
  const Verdict v = check_backward(c, r, kShape, AccumShape{1, 3});
  CHECK(v.pass);
  CHECK(seconds_since(t0) < 5.0);
}

TEST_CASE("rows whose dx all cancel cost O(D) multiprecision work per row, not per element", "[oracle][fallback][backward]") {
  // Was a hang / tens of seconds: constant rows (the regimes generator's x.regime=constant with
  // g.regime=with_zeros, dy.regime=ones) straddle in FP64 for every element; each element redid
  // the exact walk from a far hint, and R = 6, D = 2047 timed out. Now the row's exact sums are
  // built once and the elements decided by error-free FP64 (or one exact dyadic each).
  for (DType t : {DType::f32, DType::bf16})
    for (Convention cv : {Convention::no_weight, Convention::standard, Convention::gemma}) {
      CAPTURE(rmsnorm::to_string(t), rmsnorm::to_string(cv));
      const BackwardCase c = constant_rows(16, 4096, t, cv);
      const auto t0 = std::chrono::steady_clock::now();
      std::int64_t fb = 0;
      const BackwardResult r = backward_rounded(c, Evaluation::fast, &fb);
      const Verdict v = check_backward(c, r, kShape, AccumShape{1, 4});
      const double took = seconds_since(t0);
      CAPTURE(took, fb, v.first_failure, v.error);
      REQUIRE(v.pass);
      CHECK(v.profile.correctly_rounded == v.profile.elements);
      CHECK(took < 10.0);  // ~0.1 s; a key-by-key walk takes minutes
      // The tiers agree with the pure multiprecision evaluation, exact zeros included.
      const BackwardCase small = constant_rows(8, 129, t, cv);
      const BackwardAcceptance fast = backward_acceptance(small, kShape, AccumShape{1, 4}, Evaluation::fast);
      const BackwardAcceptance exact = backward_acceptance(small, kShape, AccumShape{1, 4}, Evaluation::exact_only);
      REQUIRE(fast.error.empty());
      require_same(fast.dx, exact.dx);
      require_same(fast.dg, exact.dg);
    }
}

TEST_CASE("eps-dominated llama backward rows (P5) are cheap", "[oracle][fallback][backward]") {
  // Was tens of seconds: op=backward rows=2 dim=4096 bf16 llama eps=0.1 x tiny, g = dy = 1.
  std::mt19937_64 rng(5);
  BackwardCase c;
  c.rows = 2;
  c.dim = 4096;
  c.x_type = c.g_type = DType::bf16;
  c.dg_type = DType::f32;
  c.convention = Convention::llama;
  c.eps = 0.1f;
  c.x = oracle_test::random_values(rng, DType::bf16, c.rows * c.dim, 1e-4);
  c.g.assign(4096, 1.0f);
  c.dy.assign(static_cast<std::size_t>(c.rows * c.dim), 1.0f);
  ForwardCase f;
  f.rows = c.rows;
  f.dim = c.dim;
  f.x_type = f.g_type = f.y_type = DType::bf16;
  f.convention = Convention::llama;
  f.eps = c.eps;
  f.x = c.x;
  f.g = c.g;
  c.rstd = rstd_rounded(f);
  const auto t0 = std::chrono::steady_clock::now();
  const Verdict v = check_backward(c, backward_rounded(c), kShape, AccumShape{1, 1});
  CHECK(v.pass);
  CHECK(seconds_since(t0) < 5.0);
}

TEST_CASE("fast path equals pure multiprecision on adversarial backward rows", "[oracle][fallback][backward]") {
  // Exact zeros, constant rows, tiny and subnormal values, powers-of-two rstd, dresidual:
  // every tier of the backward decision against exact_only.
  std::mt19937_64 rng(0xad5e);
  const DType types[] = {DType::f32, DType::bf16, DType::f16};
  const Convention convs[] = {Convention::standard, Convention::gemma, Convention::no_weight};
  for (int trial = 0; trial < 300; ++trial) {
    const DType t = types[trial % 3];
    const Convention cv = convs[(trial / 3) % 3];
    BackwardCase c = oracle_test::backward_case(9000 + trial, 1 + trial % 5, 1 + (trial * 7) % 300, t, t, cv,
                                                trial % 2 ? 0.0f : 1e-5f);
    const int regime = trial % 5;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const float v = tie_prone_value(rng, t);
      for (std::int64_t j = 0; j < c.dim; ++j) {
        float& x = c.x[r * c.dim + j];
        if (regime == 1) x = rng() % 4 ? v : -v;                                                 // constant
        if (regime == 2) x = static_cast<float>(rmsnorm::round_to(std::ldexp(x, -60 - int(rng() % 80)), t));  // tiny
        if (regime == 3 && rng() % 2) x = 0;                                                      // zeros
      }
    }
    if (regime == 4) for (auto& v : c.dy) v = tie_prone_value(rng, t);
    if (trial % 3 == 0) for (auto& r : c.rstd) r = std::ldexp(1.0f, static_cast<int>(rng() % 5) - 2);
    for (auto& r : c.rstd) if (!std::isfinite(r)) r = 1.0f;
    if (trial % 4 == 1) c.dresidual = oracle_test::random_values(rng, t, c.rows * c.dim);
    CAPTURE(trial, rmsnorm::to_string(t), rmsnorm::to_string(cv), c.rows, c.dim, regime);
    const BackwardAcceptance fast = backward_acceptance(c, kShape, AccumShape{1, 3}, Evaluation::fast);
    const BackwardAcceptance exact = backward_acceptance(c, kShape, AccumShape{1, 3}, Evaluation::exact_only);
    REQUIRE(fast.error.empty());
    require_same(fast.dx, exact.dx);
    require_same(fast.dg, exact.dg);
  }
}

// ---------------------------------------------------------------------------------------------
// Values a hair off a rounding midpoint, whose FP64 evaluation lands on the other side of it by
// far more than the hair: the backward's correctly rounded dx and dg are the exact value's
// neighbour, and the FP64 value's neighbour is accepted but not counted as correctly rounded.
//
// The mechanism (the oracle's FP64 sums, T for dx and the column sum for dg, run left to right):
// an exact partial sum s, U its FP64 ulp, then the three terms σ·5U/8, −σ·3U/8, −σ·(U/4 + h).
// The partial sums s + σ·5U/8, s + σ·5U/8 and s + σ·(3U/4 − h) each round to s + σU, so FP64
// ends at s + σU while the exact sum is s − σh (h < U/4).
// ---------------------------------------------------------------------------------------------
namespace {

int precision(DType t) { return rmsnorm::traits_of(t).mantissa_bits + 1; }

// Near 1 a p-bit grid (bf16 8, f16 11, f32 24) holds 1 (even), 1 + 2^(1−p) (odd), 1 + 2^(2−p)
// (even); its midpoint m = 1 + c·2^-p (c = 1 or 3) has the neighbours 1 + (c ∓ 1)·2^-p.
struct Hair {
  int c;     // m = 1 + c·2^-p
  int side;  // the exact value is m + side·h; the FP64 value is m − side·U
};
// With c = 1 ties-to-even would pick the lower neighbour, with c = 3 the upper one.
const Hair kHairs[] = {{1, -1}, {1, +1}, {3, -1}, {3, +1}};

double mid_of(const Hair& h, DType t) { return 1 + h.c * std::ldexp(1.0, -precision(t)); }
// RN of m + side·h, and RN of m − side·U (h and U far below the spacing 2^(1−p)).
double exact_side(const Hair& h, DType t) { return 1 + (h.c + h.side) * std::ldexp(1.0, -precision(t)); }
double fp64_side(const Hair& h, DType t) { return 1 + (h.c - h.side) * std::ldexp(1.0, -precision(t)); }

constexpr int kBig = 20;  // the large terms are 2^20

// Two sizes of hair, as h = U·2^-k: k = 4 leaves the hair far above the ~2^-52 relative error of
// the oracle's double-double tier for dx; k = 24 puts it below, so the exact dyadic search decides.
// (U/4 + h has at most 23 significant bits: an f32.)
const int kHairShifts[] = {4, 24};

// dx: one row per hair; D = 8, r = 1, g (f32) = [2^K, 7·2^K, 1, 2^-p, 5U/8, 3U/8, U/4 + h, 1],
// x = [8, 1, 1, 1, 1, 1, 1, 1], dy = [1, −1, −1, −c, σ, −σ, −σ, 0], σ = side, U = 2^(K−53).
// Exactly: T = Σ_j dy_j g_j x_j = 8·2^K − 7·2^K − 1 − c·2^-p − σh = 2^K − m − σh, and
// dx_0 = r·ĝ_0 − r³·x_0·T/D = 2^K − T = m + σh. In FP64 the partial sum after j = 3 is
// s = 2^K − m exactly, in [2^(K−1), 2^K) so its ulp is U; T rounds to s + σU, and every later
// step (/8, ·8, ·1, 2^K − ·) is exact: FP64 dx_0 = m − σU.
BackwardCase dx_hair_case(DType t, int k) {
  const float U = std::ldexp(1.0f, kBig - 53), h = std::ldexp(U, -k);
  BackwardCase c;
  c.rows = 4;
  c.dim = 8;
  c.x_type = t;
  c.g_type = c.dg_type = DType::f32;
  c.eps = 0;
  c.g = {std::ldexp(1.0f, kBig), 7 * std::ldexp(1.0f, kBig), 1.0f, std::ldexp(1.0f, -precision(t)),
         0.625f * U, 0.375f * U, 0.25f * U + h, 1.0f};
  c.rstd.assign(4, 1.0f);
  for (const Hair& hr : kHairs) {
    const float s = static_cast<float>(hr.side);
    c.x.insert(c.x.end(), {8, 1, 1, 1, 1, 1, 1, 1});
    c.dy.insert(c.dy.end(), {1, -1, -1, static_cast<float>(-hr.c), s, -s, -s, 0});
  }
  return c;
}

// dg: one column per hair; R = 7, x = 1, g = 0 (every dx is then exactly 0),
// rstd = [2^K, 1, 2^-p, 5U/8, 3U/8, U/4 + h, 2^K], dy down column j = [1, 1, c, σ, −σ, −σ, −1],
// σ = −side, U = 2^(K−52). Exactly: dg_j = Σ_rows dy·x·r = 2^K + m − σh − 2^K = m + side·h. In
// FP64 the partial sum after row 2 is s = 2^K + m exactly, in [2^K, 2^(K+1)) so its ulp is U; it
// rounds to s + σU, and subtracting 2^K is exact: FP64 dg_j = m − side·U.
BackwardCase dg_hair_case(DType t, int k) {
  const float U = std::ldexp(1.0f, kBig - 52), h = std::ldexp(U, -k);
  BackwardCase c;
  c.rows = 7;
  c.dim = 4;
  c.x_type = c.g_type = c.dg_type = t;
  c.eps = 0;
  c.g.assign(4, 0.0f);
  c.x.assign(28, 1.0f);
  c.rstd = {std::ldexp(1.0f, kBig), 1.0f, std::ldexp(1.0f, -precision(t)), 0.625f * U, 0.375f * U,
            0.25f * U + h, std::ldexp(1.0f, kBig)};
  c.dy.resize(28);
  for (std::size_t j = 0; j < 4; ++j) {
    const float s = static_cast<float>(-kHairs[j].side);
    const float col[7] = {1, 1, static_cast<float>(kHairs[j].c), s, -s, -s, -1};
    for (std::size_t r = 0; r < 7; ++r) c.dy[r * 4 + j] = col[r];
  }
  return c;
}

// One hair element: the FP64 value `naive` sits U below (or above) the midpoint and rounds to the
// wrong neighbour; the oracle's answer `got` is the exact side, decided by the fallback, and both
// neighbours are inside the acceptance interval (the kernel bound exceeds U).
void check_hair_element(const Acceptance& a, std::uint32_t got, const Hair& h, DType t, double naive, double U) {
  REQUIRE(naive == mid_of(h, t) - h.side * U);
  REQUIRE(rmsnorm::round_to(naive, t) == fp64_side(h, t));
  CHECK(rmsnorm::decode(got, t) == exact_side(h, t));
  CHECK(a.rounded == got);
  CHECK(a.fallback);
  CHECK(rmsnorm::decode(a.lo, t) <= std::min(exact_side(h, t), fp64_side(h, t)));
  CHECK(rmsnorm::decode(a.hi, t) >= std::max(exact_side(h, t), fp64_side(h, t)));
}

// The judge counts the oracle's answer as correctly rounded everywhere, and the FP64 one (accepted)
// as correctly rounded everywhere but at the four hair elements.
void check_hair_verdicts(const BackwardCase& c, const BackwardResult& got, const BackwardResult& fp64) {
  const Verdict v = check_backward(c, got, kShape, AccumShape{1, 3});
  REQUIRE(v.pass);
  CHECK(v.profile.correctly_rounded == v.profile.elements);
  CHECK(v.profile.fallbacks >= 4);
  const Verdict vn = check_backward(c, fp64, kShape, AccumShape{1, 3});
  REQUIRE(vn.pass);
  CHECK(vn.profile.correctly_rounded == v.profile.elements - 4);
}

}  // namespace

TEST_CASE("a backward dx a hair off a midpoint rounds to the exact side, FP64 lands on the other", "[oracle][fallback][backward]") {
  for (DType t : {DType::bf16, DType::f16, DType::f32})
    for (int k : kHairShifts) {
      CAPTURE(rmsnorm::to_string(t), k);
      const BackwardCase c = dx_hair_case(t, k);
      REQUIRE(validate(c).empty());
      const double U = std::ldexp(1.0, kBig - 53);
      std::int64_t fb = 0;
      const BackwardResult got = backward_rounded(c, Evaluation::fast, &fb);
      const BackwardAcceptance acc = backward_acceptance(c, kShape, AccumShape{1, 3}, Evaluation::fast);
      REQUIRE(acc.error.empty());
      BackwardResult fp64 = got;  // dx_0 of every row rounded from its FP64 value
      for (std::size_t row = 0; row < 4; ++row) {
        const Hair& h = kHairs[row];
        CAPTURE(row, h.c, h.side);
        const std::size_t i0 = row * 8;
        // The FP64 evaluation (r = 1): dx_0 = ĝ_0 − x_0·(T/D).
        double T = 0;
        for (std::size_t j = 0; j < 8; ++j) T += static_cast<double>(c.dy[i0 + j]) * c.g[j] * c.x[i0 + j];
        const double naive = c.dy[i0] * static_cast<double>(c.g[0]) - c.x[i0] * (T / 8);
        check_hair_element(acc.dx[i0], got.dx[i0], h, t, naive, U);
        fp64.dx[i0] = rmsnorm::encode(naive, t);
      }
      CHECK(fb >= 4);
      CHECK(backward_rounded(c, Evaluation::exact_only).dx == got.dx);
      check_hair_verdicts(c, got, fp64);
    }
}

TEST_CASE("a backward dg a hair off a midpoint rounds to the exact side, FP64 lands on the other", "[oracle][fallback][backward]") {
  for (DType t : {DType::bf16, DType::f16, DType::f32})
    for (int k : kHairShifts) {
      CAPTURE(rmsnorm::to_string(t), k);
      const BackwardCase c = dg_hair_case(t, k);
      REQUIRE(validate(c).empty());
      const double U = std::ldexp(1.0, kBig - 52);
      std::int64_t fb = 0;
      const BackwardResult got = backward_rounded(c, Evaluation::fast, &fb);
      const BackwardAcceptance acc = backward_acceptance(c, kShape, AccumShape{1, 3}, Evaluation::fast);
      REQUIRE(acc.error.empty());
      REQUIRE(got.dg.size() == 4);
      BackwardResult fp64 = got;  // every dg rounded from its FP64 value
      for (std::size_t j = 0; j < 4; ++j) {
        const Hair& h = kHairs[j];
        CAPTURE(j, h.c, h.side);
        double s = 0;  // the FP64 evaluation
        for (std::size_t r = 0; r < 7; ++r) s += static_cast<double>(c.dy[r * 4 + j]) * c.x[r * 4 + j] * c.rstd[r];
        check_hair_element(acc.dg[j], got.dg[j], h, t, s, U);
        fp64.dg[j] = rmsnorm::encode(s, t);
      }
      CHECK(fb >= 4);
      CHECK(backward_rounded(c, Evaluation::exact_only).dg == got.dg);
      check_hair_verdicts(c, got, fp64);
    }
}
