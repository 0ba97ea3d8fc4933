// Correct-by-construction results pass, and results one grid step outside the accepted range
// fail: the oracle's acceptance sets are neither empty nor loose at their ends.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "harness/catch.h"
#include "oracle/oracle.h"
#include "oracle_test_cases.h"

using namespace oracle;
using oracle_test::backward_case;
using oracle_test::forward_case;
using oracle_test::next_down;
using oracle_test::next_up;
using oracle_test::rounded_result;
using rmsnorm::Convention;
using rmsnorm::DType;
using rmsnorm::Quant;

namespace {
std::uint32_t fbits(float f) { std::uint32_t b; std::memcpy(&b, &f, 4); return b; }
float bitsf(std::uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
const AccumShape kShape{16, 8};
}  // namespace

TEST_CASE("correctly rounded outputs pass and are counted as correctly rounded", "[oracle][acceptance]") {
  const DType types[] = {DType::bf16, DType::f16, DType::f32};
  const Convention convs[] = {Convention::standard, Convention::gemma, Convention::no_weight, Convention::llama};
  const std::int64_t dims[] = {1, 7, 33, 1025};
  std::uint64_t seed = 1;
  for (DType t : types)
    for (Convention cv : convs)
      for (std::int64_t D : dims) {
        const ForwardCase c = forward_case(seed++, 6, D, t, t == DType::f32 ? DType::f32 : t, cv);
        const Verdict v = check_forward(c, rounded_result(c), kShape);
        CAPTURE(rmsnorm::to_string(t), rmsnorm::to_string(cv), D, v.first_failure, v.error);
        REQUIRE(v.pass);
        CHECK(v.profile.failures == 0);
        CHECK(v.profile.correctly_rounded == v.profile.elements);
        CHECK(v.profile.elements == 6 * D + 6);  // y and rstd
        CHECK(v.profile.max_ulp <= 0.5);
        CHECK(v.profile.max_err_over_bound <= 1.0);
        std::int64_t rounded_bin = 0, ulp_half = 0;  // every element in the distributions' first bins
        for (int k = 0; k < oracle::Profile::kTypes; ++k) {
          rounded_bin += v.profile.bound_hist[k][0];
          ulp_half += v.profile.ulp_hist[k][0];
        }
        CHECK(rounded_bin == v.profile.elements);
        CHECK(ulp_half == v.profile.elements);
      }
}

TEST_CASE("the ends of every accepted range pass and one step beyond fails", "[oracle][acceptance]") {
  for (Convention cv : {Convention::standard, Convention::llama, Convention::gemma}) {
    const ForwardCase c = forward_case(77, 4, 37, DType::bf16, DType::bf16, cv);
    const ForwardAcceptance acc = forward_acceptance(c, kShape);
    REQUIRE(acc.error.empty());
    const ForwardResult good = rounded_result(c);
    for (std::size_t k = 0; k < acc.y.size(); k += 5) {
      const Acceptance& a = acc.y[k];
      if (a.kind != Acceptance::Kind::range) continue;
      ForwardResult r = good;
      r.y[k] = a.hi;
      CHECK(check_forward(c, r, kShape).pass);
      r.y[k] = a.lo;
      CHECK(check_forward(c, r, kShape).pass);
      r.y[k] = next_up(a.hi, DType::bf16);
      Verdict v = check_forward(c, r, kShape);
      CHECK_FALSE(v.pass);
      const std::string where = "y[" + std::to_string(k / 37) + "," + std::to_string(k % 37) + "]";
      CHECK(v.first_failure.rfind(where, 0) == 0);
      CHECK(v.profile.failures == 1);
      CHECK(v.profile.max_err_over_bound > 1.0);
      r.y[k] = next_down(a.lo, DType::bf16);
      CHECK_FALSE(check_forward(c, r, kShape).pass);
    }
  }
}

TEST_CASE("the accepted range is within one ulp of the exact value at bf16", "[oracle][acceptance]") {
  const ForwardCase c = forward_case(5, 8, 4096, DType::bf16, DType::bf16);
  const ForwardAcceptance acc = forward_acceptance(c, AccumShape{16, 8});
  for (const Acceptance& a : acc.y) {
    REQUIRE(a.kind == Acceptance::Kind::range);
    // Keys: magnitude bits signed by the sign bit order bf16 values.
    auto key = [](std::uint32_t b) { return (b & 0x8000u) ? -static_cast<int>(b & 0x7fffu) : static_cast<int>(b); };
    REQUIRE(key(a.lo) <= key(a.rounded));
    REQUIRE(key(a.rounded) <= key(a.hi));
    REQUIRE(key(a.hi) - key(a.lo) <= 1);  // RN(y) and at most one neighbour
    REQUIRE(std::fabs(rmsnorm::decode(a.rounded, DType::bf16) - a.exact) <= std::ldexp(1.0, std::ilogb(a.exact) - 8));
  }
}

TEST_CASE("rstd: RN32 passes, one fp32 step outside the bound fails", "[oracle][acceptance]") {
  const ForwardCase c = forward_case(9, 3, 100, DType::f32, DType::f32);
  const ForwardAcceptance acc = forward_acceptance(c, kShape);
  ForwardResult r = rounded_result(c);
  REQUIRE(check_forward(c, r, kShape).pass);
  r.rstd[1] = bitsf(next_up(acc.rstd[1].hi, DType::f32));
  const Verdict v = check_forward(c, r, kShape);
  CHECK_FALSE(v.pass);
  CHECK(v.first_failure.rfind("rstd[1,0]", 0) == 0);
}

TEST_CASE("zero outputs carry the exact sign", "[oracle][acceptance]") {
  ForwardCase c = forward_case(3, 1, 4, DType::bf16, DType::bf16);
  c.x[1] = -0.0f;
  c.g[1] = 2.0f;
  c.x[2] = 0.0f;
  c.g[2] = -1.0f;
  ForwardResult r = rounded_result(c);
  CHECK(r.y[1] == 0x8000u);
  CHECK(r.y[2] == 0x8000u);
  REQUIRE(check_forward(c, r, kShape).pass);
  r.y[1] = 0x0000u;
  CHECK_FALSE(check_forward(c, r, kShape).pass);
}

TEST_CASE("fused add: the residual must be RN_x(h + o) bitwise, y is rmsnorm of it", "[oracle][acceptance]") {
  ForwardCase c = forward_case(11, 5, 129, DType::bf16, DType::bf16);
  std::mt19937_64 rng(12);
  c.o = oracle_test::random_values(rng, DType::bf16, c.rows * c.dim, 0.01);
  ForwardResult r = rounded_result(c);
  for (std::size_t k = 0; k < r.h.size(); ++k)
    REQUIRE(r.h[k] == rmsnorm::encode(static_cast<double>(c.x[k]) + c.o[k], DType::bf16));
  REQUIRE(check_forward(c, r, kShape).pass);
  // Equal to add-then-norm done separately.
  ForwardCase separate = c;
  separate.o.clear();
  for (std::size_t k = 0; k < r.h.size(); ++k) separate.x[k] = static_cast<float>(rmsnorm::decode(r.h[k], DType::bf16));
  CHECK(forward_rounded(separate) == r.y);
  ForwardResult bad = r;
  bad.h[70] ^= 1u;
  const Verdict v = check_forward(c, bad, kShape);
  CHECK_FALSE(v.pass);
  CHECK(v.first_failure.rfind("h[0,70]", 0) == 0);
}

TEST_CASE("FP8 static, per token and per block: exact answers pass, bad scales fail", "[oracle][acceptance][fp8]") {
  for (DType q : {DType::e4m3, DType::e5m2})
    for (Quant mode : {Quant::static_scale, Quant::dynamic_token, Quant::per_block}) {
      ForwardCase c = forward_case(21, 4, 300, DType::bf16, DType::bf16);  // 3 groups, last has 44
      c.y_type = q;
      c.quant = mode;
      c.static_scale = static_cast<float>(1.0 / rmsnorm::Fp8Quant::max(q));  // |y| > 1 saturates
      for (std::int64_t j = 0; j < c.dim; ++j) c.x[2 * c.dim + j] = 0.0f;  // an all-zero row
      const ForwardResult r = rounded_result(c);
      const Verdict v = check_forward(c, r, kShape);
      CAPTURE(rmsnorm::to_string(q), rmsnorm::to_string(mode), v.first_failure, v.error);
      REQUIRE(v.pass);
      const double fmax = rmsnorm::Fp8Quant::max(q);
      if (mode == Quant::static_scale) {
        // y/s reaches well above the FP8 maximum: saturated, never NaN or inf.
        bool saturated = false;
        for (std::uint32_t b : r.y) saturated |= std::fabs(rmsnorm::decode(b, q)) == fmax;
        CHECK(saturated);
        continue;
      }
      const std::int64_t groups = mode == Quant::per_block ? 3 : 1;
      REQUIRE(static_cast<std::int64_t>(r.scale.size()) == 4 * groups);
      // The zero row has the floor scale and q = 0.
      CHECK(r.scale[2 * groups] == rmsnorm::Fp8Quant::scale_floor(q));
      for (std::int64_t j = 0; j < c.dim; ++j) CHECK(rmsnorm::decode(r.y[2 * c.dim + j], q) == 0.0);
      // Each group's amax maps to ±max.
      bool hit_max = false;
      for (std::int64_t j = 0; j < c.dim; ++j) hit_max |= std::fabs(rmsnorm::decode(r.y[j], q)) == fmax;
      CHECK(hit_max);
      ForwardResult bad = r;
      bad.scale[0] *= 1.01f;
      CHECK_FALSE(check_forward(c, bad, kShape).pass);
      bad = r;
      bad.scale[1] = std::numeric_limits<float>::quiet_NaN();
      const Verdict vn = check_forward(c, bad, kShape);
      CHECK_FALSE(vn.pass);
      CHECK(vn.first_failure.find("scale[") == 0);
    }
}

TEST_CASE("eps = 0 and an all-zero row: only NaN is accepted, rstd is +inf", "[oracle][acceptance]") {
  ForwardCase c = forward_case(31, 2, 8, DType::bf16, DType::bf16, Convention::standard, 0.0f);
  for (int j = 0; j < 8; ++j) c.x[j] = 0.0f;
  ForwardResult r = rounded_result(c);
  CHECK(std::isinf(r.rstd[0]));
  for (int j = 0; j < 8; ++j) CHECK(std::isnan(rmsnorm::decode(r.y[j], DType::bf16)));
  REQUIRE(check_forward(c, r, kShape).pass);
  r.y[3] = 0;
  const Verdict v = check_forward(c, r, kShape);
  CHECK_FALSE(v.pass);
  CHECK(v.first_failure.find("only NaN") != std::string::npos);
}

TEST_CASE("a NaN input row accepts anything; the other rows are still judged", "[oracle][acceptance]") {
  ForwardCase c = forward_case(41, 3, 16, DType::f16, DType::f16);
  c.x[1 * 16 + 5] = std::numeric_limits<float>::quiet_NaN();
  ForwardResult r = rounded_result(c);
  for (int j = 0; j < 16; ++j) r.y[16 + j] = 0x1234;  // garbage in the NaN row
  r.rstd[1] = 7.0f;
  const Verdict v = check_forward(c, r, kShape);
  CHECK(v.pass);
  CHECK(v.profile.elements == 2 * 16 + 2);
  r.y[2 * 16 + 3] = next_up(r.y[2 * 16 + 3], DType::f16);
  r.y[2 * 16 + 3] = next_up(r.y[2 * 16 + 3], DType::f16);
  CHECK_FALSE(check_forward(c, r, kShape).pass);
}

TEST_CASE("backward: correctly rounded dx and dg pass; one step beyond the bound fails", "[oracle][acceptance][backward]") {
  for (Convention cv : {Convention::standard, Convention::gemma, Convention::no_weight})
    for (std::int64_t D : {1, 7, 1025}) {
      BackwardCase c = backward_case(51 + D, 5, D, DType::bf16, DType::bf16, cv);
      const BackwardResult r = backward_rounded(c);
      const Verdict v = check_backward(c, r, kShape, AccumShape{1, 5});
      CAPTURE(rmsnorm::to_string(cv), D, v.first_failure, v.error);
      REQUIRE(v.pass);
      CHECK(v.profile.correctly_rounded == v.profile.elements);
      const BackwardAcceptance acc = backward_acceptance(c, kShape, AccumShape{1, 5});
      BackwardResult bad = r;
      bad.dx[D / 2] = next_up(acc.dx[D / 2].hi, DType::bf16);
      CHECK_FALSE(check_backward(c, bad, kShape, AccumShape{1, 5}).pass);
      if (!r.dg.empty()) {
        bad = r;
        bad.dg[0] = fbits(bitsf(acc.dg[0].lo) == 0 ? -1e-30f : bitsf(next_down(acc.dg[0].lo, DType::f32)));
        CHECK_FALSE(check_backward(c, bad, kShape, AccumShape{1, 5}).pass);
      }
    }
}

TEST_CASE("backward: a sum instead of the mean in c is caught", "[oracle][acceptance][backward]") {
  BackwardCase c = backward_case(61, 3, 64, DType::f32, DType::f32);
  BackwardResult wrong;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    double T = 0;
    const double rs = c.rstd[r];
    for (std::int64_t j = 0; j < c.dim; ++j) T += c.dy[r * 64 + j] * c.g[j] * c.x[r * 64 + j] * rs;
    for (std::int64_t i = 0; i < c.dim; ++i)
      wrong.dx.push_back(rmsnorm::encode(rs * (c.dy[r * 64 + i] * c.g[i] - c.x[r * 64 + i] * rs * T), DType::f32));
  }
  const Verdict v = check_backward(c, wrong, kShape, AccumShape{1, 2});
  CHECK_FALSE(v.pass);
  CHECK(v.first_failure.rfind("dx[0,", 0) == 0);
}

// ---------------------------------------------------------------------------------------------
// Regressions (corpora/regressions/forward_*.case).
// ---------------------------------------------------------------------------------------------
namespace {
float subnormal_value(std::mt19937_64& rng) {  // k·2^-149, 0 ≤ |k| < 2^23, sign at random
  const double k = static_cast<double>(rng() % (1u << 23));
  return static_cast<float>((rng() % 2 ? -k : k) * 0x1p-149);
}
void require_same_acceptance(const std::vector<Acceptance>& a, const std::vector<Acceptance>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    CAPTURE(k);
    REQUIRE(a[k].kind == b[k].kind);
    if (a[k].kind == Acceptance::Kind::any) continue;
    REQUIRE(a[k].rounded == b[k].rounded);
    REQUIRE(a[k].lo == b[k].lo);
    REQUIRE(a[k].hi == b[k].hi);
  }
}
}  // namespace

TEST_CASE("rows of subnormal x take the exact path without a negative shift", "[oracle][acceptance][regression]") {
  // Was std::terminate: Boost's "Can not shift by a negative value" thrown inside the OpenMP
  // region. The exact Σx² put x = m·2^e on the exponent 2^-298 assuming e ≥ -149, but frexp
  // normalizes a subnormal to e down to -172 (the regimes generator's x.regime=subnormal, f32,
  // D = 65537, eps = 1e-5, g.regime=with_zeros).
  std::mt19937_64 rng(0x132a8964a0528c6aull);
  for (std::int64_t D : {65537, 1025}) {
    ForwardCase c;
    c.rows = 1;
    c.dim = D;
    c.x_type = c.g_type = c.y_type = DType::f32;
    c.eps = 0x1.4f8b58p-17f;
    for (std::int64_t j = 0; j < D; ++j) c.x.push_back(subnormal_value(rng));
    for (std::int64_t j = 0; j < D; ++j) c.g.push_back(j % 4 == 0 ? 0.0f : oracle_test::random_value(rng, DType::f32));
    CAPTURE(D);
    const Verdict v = check_forward(c, rounded_result(c), kShape);
    CAPTURE(v.error, v.first_failure);
    REQUIRE(v.error.empty());
    REQUIRE(v.pass);
    if (D > 2000) continue;
    // exact_only always builds the exact sum of squares (the path that threw).
    const ForwardAcceptance fast = forward_acceptance(c, kShape, Evaluation::fast);
    const ForwardAcceptance exact = forward_acceptance(c, kShape, Evaluation::exact_only);
    REQUIRE(exact.error.empty());
    require_same_acceptance(fast.y, exact.y);
    require_same_acceptance(fast.rstd, exact.rstd);
  }
}

TEST_CASE("rows whose fp32 squares underflow are judged unless the kernel's mean may round to 0",
          "[oracle][acceptance][regression]") {
  // Was: every row with mean square + eps < 2^-140 accepted any output. The underflow of the
  // kernel's Σx²/D is at most 2^-149 absolutely; only where that can make it 0 is the bound void.
  ForwardCase c;
  c.rows = 4;
  c.dim = 4;
  c.x_type = c.g_type = c.y_type = DType::f32;
  c.convention = Convention::no_weight;
  c.eps = 0;
  const float a = 0x1p-72f, b = 0x1p-74f, z = 0x1p-75f;
  c.x = {a, -1.5f * a, 0.75f * a, 1.25f * a,  // μ ≈ 2^-143.6: underflow term ≈ 2^-5.4 (additive)
         b, b, -b, b,                         // μ = 2^-148: the fp32 mean may lose half (factors)
         z, -z, z, z,                         // x² = 2^-150 rounds to 0 in fp32: r̂ may be inf
         1, 2, 3, 4};
  const ForwardAcceptance acc = forward_acceptance(c, kShape);
  REQUIRE(acc.error.empty());
  using Kind = Acceptance::Kind;
  for (std::int64_t r : {0, 1, 3}) {
    CAPTURE(r);
    CHECK(acc.rstd[r].kind == Kind::range);
    for (int j = 0; j < 4; ++j) CHECK(acc.y[r * 4 + j].kind == Kind::range);
  }
  CHECK(acc.rstd[2].kind == Kind::any);
  const ForwardResult good = rounded_result(c);
  REQUIRE(check_forward(c, good, kShape).pass);
  ForwardResult bad = good;
  bad.rstd[0] *= 1.1f;  // beyond (1 + eps_r)(1 + 2^-5.4)
  CHECK_FALSE(check_forward(c, bad, kShape).pass);
  bad = good;
  bad.y[2] = fbits(bitsf(good.y[2]) * 1.25f);
  CHECK_FALSE(check_forward(c, bad, kShape).pass);
  bad = good;
  bad.rstd[1] *= 2.0f;  // beyond (1 − 1/2)^(-1/2) = 1.41
  CHECK_FALSE(check_forward(c, bad, kShape).pass);
  bad = good;
  bad.rstd[2] = std::numeric_limits<float>::infinity();  // r̂ = inf is what fp32 may give there
  CHECK(check_forward(c, bad, kShape).pass);
  const ForwardAcceptance exact = forward_acceptance(c, kShape, Evaluation::exact_only);
  require_same_acceptance(acc.y, exact.y);
  require_same_acceptance(acc.rstd, exact.rstd);

  // eps ≥ 2^-100 dominates whatever the squares do: rows of subnormal x are judged tightly.
  std::mt19937_64 rng(3);
  c.eps = 0x1p-100f;
  for (float& v : c.x) v = subnormal_value(rng);
  const ForwardResult tiny = rounded_result(c);
  REQUIRE(check_forward(c, tiny, kShape).pass);
  bad = tiny;
  bad.rstd[1] *= 1.0f + 0x1p-10f;
  CHECK_FALSE(check_forward(c, bad, kShape).pass);

  // An all-zero row with eps = 2^-149 has no underflow at all: m̂ = eps exactly.
  c.eps = 0x1p-149f;
  for (float& v : c.x) v = 0;
  const ForwardAcceptance zero = forward_acceptance(c, kShape);
  REQUIRE(zero.rstd[0].kind == Kind::range);
  CHECK(zero.rstd[0].hi - zero.rstd[0].lo < 64);  // a few dozen fp32 ulps (eps_r), not a wide band
}

TEST_CASE("a non-finite weight puts only what it reaches outside the domain", "[oracle][acceptance][regression]") {
  // Was: g = inf gave y_j the acceptance [-0, +0] (the exact value through Dyadic(inf) = 0) and
  // NaN weights garbage; the kernel's x·r·inf is ±inf (or NaN for x = 0).
  ForwardCase c = forward_case(17, 2, 8, DType::f16, DType::f16);
  c.g[1] = std::numeric_limits<float>::infinity();
  c.g[2] = std::numeric_limits<float>::quiet_NaN();
  const ForwardAcceptance acc = forward_acceptance(c, kShape);
  REQUIRE(acc.error.empty());
  for (std::int64_t r = 0; r < 2; ++r) {
    CHECK(acc.y[r * 8 + 1].kind == Acceptance::Kind::any);
    CHECK(acc.y[r * 8 + 2].kind == Acceptance::Kind::any);
    CHECK(acc.y[r * 8 + 0].kind == Acceptance::Kind::range);
    CHECK(acc.rstd[r].kind == Acceptance::Kind::range);
  }
  ForwardResult r = rounded_result(c);
  r.y[1] = 0x7c00;  // +inf
  REQUIRE(check_forward(c, r, kShape).pass);
  r.y[0] = next_up(next_up(r.y[0], DType::f16), DType::f16);
  CHECK_FALSE(check_forward(c, r, kShape).pass);
  // Backward: the weight enters T, so the whole row's dx is out of the domain.
  BackwardCase b = backward_case(18, 2, 8, DType::f16, DType::f16);
  b.g[3] = std::numeric_limits<float>::infinity();
  const BackwardAcceptance bacc = backward_acceptance(b, kShape, AccumShape{1, 1});
  REQUIRE(bacc.error.empty());
  for (const Acceptance& a : bacc.dx) CHECK(a.kind == Acceptance::Kind::any);
}

TEST_CASE("a row whose mean square + eps overflows fp32 is outside the domain", "[oracle][acceptance][regression]") {
  // corpora/regressions/forward_mean_plus_eps_overflows.case (found by the libFuzzer target):
  // Σx² = 3.2e38 is finite but Σx²/D + eps = 4.9e38 is +inf in fp32, so a kernel's r is 0 and
  // y = 0; the oracle judged y against the exact 5.6e-41.
  ForwardCase c;
  c.rows = 3;
  c.dim = 1;
  c.x_type = c.g_type = c.y_type = DType::f32;
  c.eps = 0x1.00c8c2p+127f;
  c.x = {0x1.f100fep+63f, 0x1p-126f, 0.0f};
  c.g = {0x1.80fep-134f};
  const ForwardAcceptance acc = forward_acceptance(c, kShape);
  REQUIRE(acc.error.empty());
  CHECK(acc.y[0].kind == Acceptance::Kind::any);
  CHECK(acc.rstd[0].kind == Acceptance::Kind::any);
  CHECK(acc.rstd[1].kind == Acceptance::Kind::range);  // m̂ = eps + tiny: finite, judged
  CHECK(acc.rstd[2].kind == Acceptance::Kind::range);  // m̂ = eps exactly
  ForwardResult r = rounded_result(c);
  r.y[0] = 0;
  r.rstd[0] = 0;
  CHECK(check_forward(c, r, kShape).pass);
  c.eps = std::numeric_limits<float>::max();  // a zero row: m̂ = eps = FLT_MAX exactly, finite
  c.x = {0.0f, 0.0f, 0.0f};
  CHECK(forward_acceptance(c, kShape).rstd[0].kind == Acceptance::Kind::range);
}

// The certificate's distributions (docs/certificates.md#distributions): the bins' edges.
TEST_CASE("profile distributions bin ulps by powers of two and err/bound by tenths", "[oracle]") {
  using oracle::Profile;
  CHECK(Profile::ulp_bin(0) == 0);
  CHECK(Profile::ulp_bin(0.5) == 0);
  CHECK(Profile::ulp_bin(0.51) == 1);
  CHECK(Profile::ulp_bin(1) == 1);
  CHECK(Profile::ulp_bin(1.01) == 2);
  CHECK(Profile::ulp_bin(2) == 2);
  CHECK(Profile::ulp_bin(1024) == 11);
  CHECK(Profile::ulp_bin(0x1p25) == 26);
  CHECK(Profile::ulp_bin(0x1p25 * 1.5) == Profile::kUlpBins - 1);
  CHECK(Profile::ulp_bin(std::numeric_limits<double>::infinity()) == Profile::kUlpBins - 1);
  CHECK(Profile::bound_bin(0) == 1);
  CHECK(Profile::bound_bin(0.05) == 1);
  CHECK(Profile::bound_bin(0.1) == 2);
  CHECK(Profile::bound_bin(0.95) == 10);
  CHECK(Profile::bound_bin(1.0) == 10);
  CHECK(Profile::bound_bin(1.0 + 1e-12) == Profile::kBoundBins - 1);
  Profile a, b;
  a.ulp_hist[2][3] = 5;
  b.ulp_hist[2][3] = 2;
  b.bound_hist[0][11] = 1;
  a.merge(b);
  CHECK(a.ulp_hist[2][3] == 7);
  CHECK(a.bound_hist[0][11] == 1);
}
