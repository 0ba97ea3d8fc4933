// Invalid cases get a clear error, never a crash: validate() names the problem and every check
// returns pass = false with Verdict::error set.
#include <cmath>
#include <limits>
#include <string>

#include "harness/catch.h"
#include "oracle/oracle.h"
#include "oracle_test_cases.h"

using namespace oracle;
using rmsnorm::Convention;
using rmsnorm::DType;
using rmsnorm::Quant;

namespace {
bool mentions(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

void require_rejected(const ForwardCase& c, const char* what) {
  const std::string e = validate(c);
  CAPTURE(e, what);
  REQUIRE(mentions(e, what));
  const Verdict v = check_forward(c, ForwardResult{}, AccumShape{});
  REQUIRE_FALSE(v.pass);
  REQUIRE(mentions(v.error, what));
  REQUIRE(forward_acceptance(c, AccumShape{}).error == e);
  REQUIRE(forward_rounded(c).empty());
}
void require_rejected(const BackwardCase& c, const char* what) {
  const std::string e = validate(c);
  CAPTURE(e, what);
  REQUIRE(mentions(e, what));
  const Verdict v = check_backward(c, BackwardResult{}, AccumShape{}, AccumShape{});
  REQUIRE_FALSE(v.pass);
  REQUIRE(mentions(v.error, what));
  REQUIRE_FALSE(check_gradient_central(c).pass);
}
}  // namespace

TEST_CASE("forward: D = 0, bad eps, mismatched sizes and illegal types are clear errors", "[oracle][bad_input]") {
  const ForwardCase good = oracle_test::forward_case(1, 2, 8, DType::bf16, DType::bf16);
  REQUIRE(validate(good).empty());
  ForwardCase c = good;
  c.dim = 0;
  c.x.clear();
  c.g.clear();
  require_rejected(c, "dim must be >= 1");
  c = good; c.eps = -1e-6f; require_rejected(c, "eps must be >= 0");
  c = good; c.eps = std::numeric_limits<float>::quiet_NaN(); require_rejected(c, "eps is NaN");
  c = good; c.eps = std::numeric_limits<float>::infinity(); require_rejected(c, "eps must be finite");
  c = good; c.rows = -1; require_rejected(c, "rows must be >= 0");
  c = good; c.x.pop_back(); require_rejected(c, "x has 15 values");
  c = good; c.g.push_back(1.0f); require_rejected(c, "g has 9 values");
  c = good; c.o.assign(3, 0.0f); require_rejected(c, "o has 3 values");
  c = good; c.x[0] = 1.0f + 1.0f / 1024; require_rejected(c, "not representable");
  c = good; c.y_type = DType::e4m3; require_rejected(c, "y type must be");
  c = good; c.quant = Quant::dynamic_token; require_rejected(c, "e4m3 or e5m2");
  c = good; c.g_type = DType::f16; require_rejected(c, "g type must be");
  c = good; c.x_type = DType::e4m3; require_rejected(c, "x type must be");
  c = good; c.convention = Convention::llama; c.y_type = DType::f32; require_rejected(c, "llama");
  c = good; c.quant = Quant::static_scale; c.y_type = DType::e4m3; c.static_scale = 0.0f;
  require_rejected(c, "static scale");
}

TEST_CASE("forward: a result of the wrong size is a clear error", "[oracle][bad_input]") {
  const ForwardCase c = oracle_test::forward_case(2, 2, 8, DType::bf16, DType::bf16);
  ForwardResult r = oracle_test::rounded_result(c);
  r.y.pop_back();
  Verdict v = check_forward(c, r, AccumShape{});
  CHECK_FALSE(v.pass);
  CHECK(mentions(v.error, "y has 15 values"));
  r = oracle_test::rounded_result(c);
  r.rstd.push_back(1.0f);
  v = check_forward(c, r, AccumShape{});
  CHECK_FALSE(v.pass);
  CHECK(mentions(v.error, "rstd has 3 values"));
}

TEST_CASE("backward: D = 0, bad eps, mismatched sizes are clear errors", "[oracle][bad_input]") {
  const BackwardCase good = oracle_test::backward_case(3, 2, 8, DType::bf16, DType::bf16);
  REQUIRE(validate(good).empty());
  BackwardCase c = good;
  c.dim = 0;
  c.x.clear();
  c.dy.clear();
  c.g.clear();
  require_rejected(c, "dim must be >= 1");
  c = good; c.eps = -1.0f; require_rejected(c, "eps must be >= 0");
  c = good; c.eps = std::numeric_limits<float>::quiet_NaN(); require_rejected(c, "eps is NaN");
  c = good; c.dy.pop_back(); require_rejected(c, "dy has 15 values");
  c = good; c.rstd.push_back(1.0f); require_rejected(c, "rstd has 3 values");
  c = good; c.dresidual.assign(5, 0.0f); require_rejected(c, "dresidual has 5 values");
  c = good; c.dg_type = DType::f16; require_rejected(c, "dg type must be");
  const Verdict v = check_backward(good, BackwardResult{}, AccumShape{}, AccumShape{});
  CHECK_FALSE(v.pass);
  CHECK(mentions(v.error, "dx has 0 values"));
}
