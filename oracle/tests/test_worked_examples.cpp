// The seed document's worked examples, pinned.
#include <cmath>
#include <vector>

#include "harness/catch.h"
#include "oracle/oracle.h"
#include "rmsnorm/formats.h"

using namespace oracle;
using rmsnorm::Convention;
using rmsnorm::DType;

namespace {
ForwardCase f32_case(std::vector<float> x, std::vector<float> g, float eps) {
  ForwardCase c;
  c.rows = 1;
  c.dim = static_cast<std::int64_t>(x.size());
  c.x_type = c.g_type = c.y_type = DType::f32;
  c.eps = eps;
  c.x = std::move(x);
  c.g = std::move(g);
  return c;
}
BackwardCase f32_backward(const ForwardCase& f, std::vector<float> dy) {
  BackwardCase b;
  b.rows = f.rows;
  b.dim = f.dim;
  b.x_type = b.g_type = b.dg_type = DType::f32;
  b.eps = f.eps;
  b.x = f.x;
  b.g = f.g;
  b.dy = std::move(dy);
  b.rstd = rstd_rounded(f);
  return b;
}
}  // namespace

TEST_CASE("[1,2,3,4], eps = 0: r = 1/sqrt(7.5), y = x r", "[oracle][seed]") {
  const ForwardCase c = f32_case({1, 2, 3, 4}, {1, 1, 1, 1}, 0.0f);
  const std::vector<float> r = rstd_rounded(c);
  REQUIRE(r.size() == 1);
  CHECK(std::fabs(r[0] - 0.365148) < 5e-7);
  CHECK(r[0] == static_cast<float>(1.0 / std::sqrt(7.5)));  // RN32 of the exact r
  const std::vector<double> y = forward_values(c);
  const double expect[] = {0.3651, 0.7303, 1.0954, 1.4606};
  for (int j = 0; j < 4; ++j) {
    CHECK(std::fabs(y[j] - expect[j]) < 5e-5);
    CHECK(std::fabs(y[j] - (j + 1) / std::sqrt(7.5)) < 1e-15);
  }
  const Enclosure e = row_rstd(c)[0];
  CHECK(e.lo <= 1.0 / std::sqrt(7.5));
  CHECK(e.hi >= 1.0 / std::sqrt(7.5));
  CHECK(e.hi - e.lo < 1e-14);
}

TEST_CASE("x = [1,2], g = [1,2], dy = [3,-1], eps = 0: y, dx, dg and x·dx = 0", "[oracle][seed]") {
  const ForwardCase f = f32_case({1, 2}, {1, 2}, 0.0f);
  const std::vector<double> y = forward_values(f);
  CHECK(std::fabs(y[0] - 0.632456) < 1e-6);
  CHECK(std::fabs(y[1] - 2.529822) < 1e-6);
  const BackwardCase b = f32_backward(f, {3, -1});
  const BackwardValues v = backward_values(b);
  CHECK(std::fabs(v.dx[0] - 2.023858) < 1e-6);
  CHECK(std::fabs(v.dx[1] - -1.011929) < 1e-6);
  CHECK(std::fabs(v.dg[0] - 1.897367) < 1e-6);
  CHECK(std::fabs(v.dg[1] - -1.264911) < 1e-6);
  // x·dx = eps·r³·Σ g dy x = 0 for eps = 0, up to the fp32 rounding of the given r.
  const double xdx = 1 * v.dx[0] + 2 * v.dx[1];
  CHECK(std::fabs(xdx) < 1e-6 * (std::fabs(v.dx[0]) + 2 * std::fabs(v.dx[1])));
  // With the exact r the analytic gradient agrees with central differences.
  CHECK(check_gradient_central(b).pass);
  // And the correctly rounded backward passes its own check.
  CHECK(check_backward(b, backward_rounded(b), AccumShape{1, 1}, AccumShape{1, 0}).pass);
}

TEST_CASE("eps placement: [1e-4, 1e-4], eps = 1e-5 gives 0.031607, ten times the input 0.301511", "[oracle][seed]") {
  const std::vector<double> small = forward_values(f32_case({1e-4f, 1e-4f}, {1, 1}, 1e-5f));
  CHECK(std::fabs(small[0] - 0.031607) < 1e-6);
  CHECK(std::fabs(small[1] - 0.031607) < 1e-6);
  const std::vector<double> big = forward_values(f32_case({1e-3f, 1e-3f}, {1, 1}, 1e-5f));
  CHECK(std::fabs(big[0] - 0.301511) < 1e-6);
  CHECK(std::fabs(big[1] - 0.301511) < 1e-6);
}

TEST_CASE("zero row: y = 0 and dx = dy ⊙ g / sqrt(eps), not zero", "[oracle][seed]") {
  const float eps = 1e-5f;
  const ForwardCase f = f32_case({0, 0, 0}, {1.5f, -2, 0.25f}, eps);
  const std::vector<std::uint32_t> y = forward_rounded(f);
  for (std::uint32_t b : y) CHECK((b & 0x7fffffffu) == 0u);
  const BackwardCase b = f32_backward(f, {1, 2, -4});
  const BackwardValues v = backward_values(b);
  const double inv_sqrt_eps = 1.0 / std::sqrt(static_cast<double>(eps));
  for (int i = 0; i < 3; ++i) {
    const double want = b.dy[i] * b.g[i] * inv_sqrt_eps;
    CHECK(std::fabs(v.dx[i] - want) < 1e-6 * std::fabs(want));
    CHECK(v.dx[i] != 0.0);
  }
  CHECK(check_gradient_central(b).pass);
}

TEST_CASE("padding: D = 5 ones divided by 8 inflates every output by 26.49%", "[oracle][seed]") {
  const ForwardCase c = f32_case({1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, 0.0f);
  const std::vector<double> y = forward_values(c);
  for (double v : y) CHECK(v == 1.0);
  const double wrong = std::sqrt(8.0 / 5.0);  // r with the padded divisor
  CHECK(std::fabs(wrong - 1.264911) < 1e-6);
  CHECK(std::fabs((wrong - 1.0) * 100 - 26.49) < 0.01);
  ForwardResult bad;
  bad.y.assign(5, rmsnorm::encode(wrong, DType::f32));
  const Verdict v = check_forward(c, bad, AccumShape{8, 3});
  CHECK_FALSE(v.pass);
  CHECK(v.profile.failures == 5);
}

TEST_CASE("4096 ones summed in bf16 stall at 256; fp32 reaches 4096", "[oracle][seed]") {
  double bf16_sum = 0, f32_sum = 0;
  for (int i = 0; i < 4096; ++i) {
    bf16_sum = rmsnorm::round_to(bf16_sum + 1.0, DType::bf16);
    f32_sum = rmsnorm::round_to(f32_sum + 1.0, DType::f32);
  }
  CHECK(bf16_sum == 256.0);
  CHECK(f32_sum == 4096.0);
  // 256 + 1 = 257 is the midpoint of 256 and 258: ties to even gives 256.
  CHECK(rmsnorm::round_to(257.0, DType::bf16) == 256.0);
}

TEST_CASE("300 squared overflows fp16, so squares must be taken in fp32", "[oracle][seed]") {
  CHECK(std::isinf(rmsnorm::round_to(300.0 * 300.0, DType::f16)));
  CHECK(rmsnorm::round_to(300.0 * 300.0, DType::f32) == 90000.0);
  ForwardCase c;
  c.rows = 1;
  c.dim = 4;
  c.x_type = c.g_type = c.y_type = DType::f16;
  c.eps = 1e-6f;
  c.x = {300, -300, 65504, 1};
  c.g = {1, 1, 1, 1};
  const std::vector<std::uint32_t> y = forward_rounded(c);
  for (std::uint32_t b : y) CHECK(std::isfinite(rmsnorm::decode(b, DType::f16)));
}
