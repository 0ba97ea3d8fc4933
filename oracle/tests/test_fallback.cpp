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
