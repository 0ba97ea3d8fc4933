// The oracle's analytic gradient against central differences of its own forward (P3), and a
// deliberately wrong analytic gradient that the check must reject.
#include <cmath>

#include "harness/catch.h"
#include "oracle/oracle.h"
#include "oracle_test_cases.h"

using namespace oracle;
using rmsnorm::Convention;
using rmsnorm::DType;

namespace {

// The analytic gradient in FP64, correct (none) or with one deliberate mistake: the sum in place
// of the mean in c (M4), no reduction term (M5), or dg doubled.
enum class Wrong { none, sum_not_mean, no_reduction, dg_doubled };
BackwardValues wrong_gradient(const BackwardCase& c, Wrong how) {
  BackwardValues v;
  const std::int64_t D = c.dim;
  v.dg.assign(static_cast<std::size_t>(D), 0.0);
  for (std::int64_t r = 0; r < c.rows; ++r) {
    double S = 0, T = 0;
    for (std::int64_t j = 0; j < D; ++j) {
      S += static_cast<double>(c.x[r * D + j]) * c.x[r * D + j];
      T += static_cast<double>(c.dy[r * D + j]) * c.g[j] * c.x[r * D + j];
    }
    const double rr = 1.0 / std::sqrt(S / static_cast<double>(D) + c.eps);
    const double mean_or_sum = how == Wrong::sum_not_mean ? T : (how == Wrong::no_reduction ? 0.0 : T / D);
    for (std::int64_t i = 0; i < D; ++i) {
      const double x = c.x[r * D + i];
      v.dx.push_back(rr * c.dy[r * D + i] * c.g[i] - rr * rr * rr * x * mean_or_sum);
      v.dg[i] += (how == Wrong::dg_doubled ? 2.0 : 1.0) * c.dy[r * D + i] * x * rr;
    }
  }
  return v;
}

}  // namespace

TEST_CASE("analytic dx and dg agree with central differences, D = 1, 2, 7, 1025", "[oracle][gradient]") {
  for (std::int64_t D : {1, 2, 7, 1025})
    for (Convention cv : {Convention::standard, Convention::gemma, Convention::no_weight})
      for (float eps : {1e-5f, 0.0f}) {
        const BackwardCase c = oracle_test::backward_case(900 + D, 3, D, DType::f32, DType::f32, cv, eps);
        const GradientCheck g = check_gradient_central(c);
        CAPTURE(D, rmsnorm::to_string(cv), eps, g.first_failure, g.max_rel_dx, g.max_rel_dg);
        CHECK(g.pass);
        CHECK(g.max_rel_dx < 1e-6);
        CHECK(g.max_rel_dg < 1e-6);
      }
}

TEST_CASE("eps-dominated rows and zero rows: the gradient still matches", "[oracle][gradient]") {
  BackwardCase c = oracle_test::backward_case(31, 2, 7, DType::f32, DType::f32, Convention::standard, 1e-5f);
  for (std::int64_t j = 0; j < 7; ++j) {
    c.x[j] = 1e-4f * static_cast<float>(j % 3);  // tiny row
    c.x[7 + j] = 0.0f;                             // zero row: dx = dy ⊙ g / sqrt(eps)
  }
  const GradientCheck g = check_gradient_central(c);
  CAPTURE(g.first_failure);
  CHECK(g.pass);
}

TEST_CASE("a wrong analytic gradient is rejected", "[oracle][gradient]") {
  for (std::int64_t D : {2, 7, 1025}) {
    const BackwardCase c = oracle_test::backward_case(77 + D, 2, D, DType::f32, DType::f32);
    for (Wrong how : {Wrong::sum_not_mean, Wrong::no_reduction}) {
      const GradientCheck g = check_gradient_central(c, wrong_gradient(c, how));
      CAPTURE(D, g.max_rel_dx);
      CHECK_FALSE(g.pass);
      CHECK(g.first_failure.rfind("dx[", 0) == 0);
      CHECK(g.max_rel_dx > 1e-3);
    }
    // The hand-written correct gradient passes; the same with dg doubled does not.
    CHECK(check_gradient_central(c, wrong_gradient(c, Wrong::none)).pass);
    const BackwardValues v = wrong_gradient(c, Wrong::dg_doubled);
    const GradientCheck bad = check_gradient_central(c, v);
    CHECK_FALSE(bad.pass);
    CHECK(bad.first_failure.rfind("dg[", 0) == 0);
  }
}
