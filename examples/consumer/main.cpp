// Normalizes two rows with the dispatcher's host variant and checks them against the formula.
#include <cmath>
#include <cstdio>
#include <vector>

#include "rmsnorm/variant.h"

int main() {
  const std::int64_t R = 2, D = 4;
  std::vector<float> x = {1, 2, 3, 4, -1, 0, 0, 1}, g = {1, 1, 2, 0.5f}, y(R * D), rstd(R);
  rmsnorm::ForwardArgs f;
  f.rows = R;
  f.dim = D;
  f.x = {x.data(), rmsnorm::DType::f32, D};
  f.y = {y.data(), rmsnorm::DType::f32, D};
  f.g = g.data();
  f.g_type = rmsnorm::DType::f32;
  f.rstd = rstd.data();
  f.eps = 1e-6f;
  const rmsnorm::Variant* v = rmsnorm::pick_forward(f, rmsnorm::Memory::host);
  if (v == nullptr) {
    std::fprintf(stderr, "no host variant takes the arguments\n");
    return 1;
  }
  const rmsnorm::Status s = v->run_forward(f);
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", v->name.c_str(), s.reason.c_str());
    return 1;
  }
  for (std::int64_t r = 0; r < R; ++r) {
    double ms = 0;
    for (std::int64_t d = 0; d < D; ++d) ms += double(x[r * D + d]) * x[r * D + d];
    const double inv = 1.0 / std::sqrt(ms / D + 1e-6);
    for (std::int64_t d = 0; d < D; ++d) {
      const double want = x[r * D + d] * inv * g[d];
      if (std::fabs(y[r * D + d] - want) > 1e-6 * (1 + std::fabs(want))) {
        std::fprintf(stderr, "row %lld col %lld: %g, expected %g\n", static_cast<long long>(r), static_cast<long long>(d),
                     static_cast<double>(y[r * D + d]), want);
        return 1;
      }
    }
  }
  std::printf("%s: 2 rows normalized as expected\n", v->name.c_str());
  return 0;
}
