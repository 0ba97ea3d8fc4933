// `examples`: the seed lecture's worked examples, recomputed by the oracle (FP64 with rigorous
// enclosures) and printed next to the lecture's numbers.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "case_runner.h"
#include "command_line.h"
#include "commands.h"

namespace cert {

namespace {

struct Example {
  const char* title;
  harness::Case c;
  std::vector<double> y, r, dx, dg;  // the seed's numbers
  double tol;                         // the seed's printed precision
};

harness::Case make(rmsnorm::Op op, std::int64_t rows, std::int64_t dim, std::vector<float> x, std::vector<float> g, float eps,
                   rmsnorm::DType t = rmsnorm::DType::f32) {
  harness::Case c;
  c.op = op;
  c.rows = rows;
  c.dim = dim;
  c.x_type = c.g_type = c.y_type = t;
  c.g_type = rmsnorm::DType::f32;
  c.eps = eps;
  c.x = std::move(x);
  c.g = std::move(g);
  return c;
}

std::string list(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.7g", i ? ", " : "", v[i]);
    s += buf;
  }
  return s + "]";
}

bool compare(const char* what, const std::vector<double>& got, const std::vector<double>& seed, double tol) {
  if (seed.empty()) return true;
  bool ok = got.size() == seed.size();
  for (std::size_t i = 0; ok && i < seed.size(); ++i) ok = std::fabs(got[i] - seed[i]) <= tol * std::max(1.0, std::fabs(seed[i]));
  std::printf("  %-3s oracle %-52s seed %-44s %s\n", what, list(got).c_str(), list(seed).c_str(), ok ? "agree" : "DISAGREE");
  return ok;
}

}  // namespace

int run_examples(const Args& args) {
  CommandLine cl("examples", "examples", "The seed's worked examples: y, r, dx, dg from the oracle next to the lecture's numbers.");
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  using rmsnorm::Op;
  std::vector<Example> ex;
  ex.push_back({"x = [1,2,3,4], g = 1, eps = 0 (forward)", make(Op::forward, 1, 4, {1, 2, 3, 4}, {1, 1, 1, 1}, 0),
                {0.3651, 0.7303, 1.0954, 1.4606}, {0.365148}, {}, {}, 1e-4});
  {
    harness::Case c = make(Op::backward, 1, 2, {1, 2}, {1, 2}, 0);
    c.dy = {3, -1};
    ex.push_back({"x = [1,2], g = [1,2], dy = [3,-1], eps = 0 (forward and backward)", c, {0.632456, 2.529822}, {0.632456},
                  {2.023858, -1.011929}, {1.897367, -1.264911}, 1e-6});
  }
  ex.push_back({"x = [1e-4, 1e-4], eps = 1e-5: eps dominates", make(Op::forward, 1, 2, {1e-4f, 1e-4f}, {1, 1}, 1e-5f),
                {0.031607, 0.031607}, {}, {}, {}, 1e-6});
  ex.push_back({"x = [1e-3, 1e-3], eps = 1e-5: ten times the input", make(Op::forward, 1, 2, {1e-3f, 1e-3f}, {1, 1}, 1e-5f),
                {0.301511, 0.301511}, {}, {}, {}, 1e-6});
  ex.push_back({"padding exercise: D = 5 ones, eps = 0 (dividing by BLOCK = 8 would give 1.264911)",
                make(Op::forward, 1, 5, {1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, 0), {1, 1, 1, 1, 1}, {1}, {}, {}, 1e-9});
  {
    harness::Case c = make(Op::backward, 1, 2, {0, 0}, {1, 2}, 1e-5f);
    c.dy = {3, -1};
    // dx = dy ⊙ g / sqrt(eps) for a zero row: not zero.
    const double s = 1.0 / std::sqrt(static_cast<double>(1e-5f));
    ex.push_back({"zero row, eps = 1e-5: y = 0 but dx = dy*g/sqrt(eps)", c, {}, {}, {3 * s, -2 * s}, {0, 0}, 1e-6});
  }
  bool all_ok = true;
  for (Example& e : ex) {
    std::printf("%s\n", e.title);
    const rmsnorm::Variant* reference = rmsnorm::find_variant("host.reference");
    harness::Case fwd = e.c;
    if (!fwd.is_forward()) {
      fwd.op = Op::forward;
      fwd.dy.clear();
    }
    oracle::ForwardCase f;
    if (!harness::forward_case(fwd, f, error)) {
      std::printf("  invalid example: %s\n", error.c_str());
      all_ok = false;
      continue;
    }
    std::vector<double> r;
    for (const auto& enc : oracle::row_rstd(f)) r.push_back(enc.mid());
    all_ok &= compare("y", oracle::forward_values(f), e.y, e.tol);
    all_ok &= compare("r", r, e.r, e.tol);
    if (!e.c.is_forward()) {
      harness::Case b = e.c;
      if (!fill_backward_rstd(b, error)) {
        std::printf("  invalid example: %s\n", error.c_str());
        all_ok = false;
        continue;
      }
      oracle::BackwardCase bc;
      if (!harness::backward_case(b, bc, error)) {
        std::printf("  invalid example: %s\n", error.c_str());
        all_ok = false;
        continue;
      }
      const oracle::BackwardValues v = oracle::backward_values(bc);
      all_ok &= compare("dx", v.dx, e.dx, e.tol);
      all_ok &= compare("dg", v.dg, e.dg, e.tol);
      double x_dot_dx = 0;
      for (std::size_t i = 0; i < v.dx.size(); ++i) x_dot_dx += static_cast<double>(bc.x[i]) * v.dx[i];
      std::printf("  x·dx = %.3g (the eps = 0 scale invariance makes it 0)\n", x_dot_dx);
    }
    if (reference) {
      const CaseRun run = run_case(e.c, *reference);
      std::printf("  host.reference on this case: %s%s\n", to_string(run.verdict), run.reason.empty() ? "" : (": " + run.reason).c_str());
      all_ok &= run.verdict == RunVerdict::pass;
    }
  }
  std::printf("examples: %s\n", all_ok ? "the oracle agrees with every number of the seed" : "DISAGREEMENT (see above)");
  return all_ok ? kExitOk : kExitFailed;
}

}  // namespace cert
