// The public API as a caller uses it (this file is also the README's example): describe the
// tensors, let the dispatcher pick a variant, run it, read the status. Runs on the host variant so
// that CI exercises it; the same calls with Memory::device and device pointers run the CUDA
// variants (kernels/tests/test_gpu_*.cpp).
#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/catch.h"
#include "rmsnorm/types.h"
#include "rmsnorm/variant.h"

namespace {

using rmsnorm::DType;
using rmsnorm::Memory;
using rmsnorm::Status;

}  // namespace

TEST_CASE("a caller picks a variant, runs the forward and the backward, and reads statuses", "[api]") {
  const std::int64_t R = 3, D = 5, stride = 8;  // rows 8 elements apart: strided views are first-class
  std::vector<float> x(R * stride, 0.0f), y(R * stride, 0.0f), g(D), rstd(R);
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t j = 0; j < D; ++j) x[r * stride + j] = 0.25f * static_cast<float>((r + 1) * (j - 2));
  for (std::int64_t j = 0; j < D; ++j) g[j] = 1.0f + 0.125f * static_cast<float>(j);

  // --- forward: y = rmsnorm(x) · g, r kept for the backward ---
  rmsnorm::ForwardArgs f;
  f.rows = R;
  f.dim = D;
  f.x = {x.data(), DType::f32, stride};
  f.y = {y.data(), DType::f32, stride};
  f.g = g.data();
  f.g_type = DType::f32;
  f.rstd = rstd.data();
  f.eps = 1e-6f;
  const rmsnorm::Variant* fwd = rmsnorm::pick_forward(f, Memory::host);
  REQUIRE(fwd != nullptr);
  const Status fs = fwd->run_forward(f);
  REQUIRE(fs.ok());
  for (std::int64_t r = 0; r < R; ++r) {
    double ss = 0;
    for (std::int64_t j = 0; j < D; ++j) ss += static_cast<double>(x[r * stride + j]) * x[r * stride + j];
    const double rr = 1.0 / std::sqrt(ss / D + 1e-6);
    CHECK(std::fabs(rstd[r] - rr) <= 1e-6 * rr);
    for (std::int64_t j = 0; j < D; ++j) {
      const double want = x[r * stride + j] * rr * g[j];
      CHECK(std::fabs(y[r * stride + j] - want) <= 1e-6 * std::fabs(want) + 1e-30);
    }
    CHECK(y[r * stride + D] == 0.0f);  // the gap between rows is never written
  }

  // --- bad arguments: a status with a reason, nothing written, nothing aborts ---
  rmsnorm::ForwardArgs bad = f;
  bad.dim = 0;
  CHECK(rmsnorm::pick_forward(bad, Memory::host) == nullptr);
  const Status bs = fwd->run_forward(bad);
  CHECK(bs.code == Status::Code::invalid_argument);
  CHECK_FALSE(bs.reason.empty());

  // --- backward: size the dg workspace first, then pick ---
  std::vector<float> dy(R * stride, 0.0f), dx(R * stride, 0.0f), dg(D, -1.0f);
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t j = 0; j < D; ++j) dy[r * stride + j] = (j % 2 ? -0.5f : 1.0f) * static_cast<float>(r + 1);
  std::vector<unsigned char> workspace(rmsnorm::backward_workspace_bytes(R, D, Memory::host));
  rmsnorm::BackwardArgs b;
  b.rows = R;
  b.dim = D;
  b.x = f.x;
  b.dy = {dy.data(), DType::f32, stride};
  b.dx = {dx.data(), DType::f32, stride};
  b.g = g.data();
  b.g_type = DType::f32;
  b.rstd = rstd.data();
  b.dg = dg.data();
  b.dg_type = DType::f32;
  b.workspace = workspace.empty() ? nullptr : workspace.data();
  b.workspace_bytes = workspace.size();
  const rmsnorm::Variant* bwd = rmsnorm::pick_backward(b, Memory::host);
  REQUIRE(bwd != nullptr);
  REQUIRE(bwd->run_backward(b).ok());
  // dg_j = Σ_rows dy_j · x_j · r; dx = r(ĝ − x̂·mean(ĝ ⊙ x̂)) with ĝ = dy ⊙ g, x̂ = x·r.
  for (std::int64_t j = 0; j < D; ++j) {
    double want = 0;
    for (std::int64_t r = 0; r < R; ++r) want += static_cast<double>(dy[r * stride + j]) * x[r * stride + j] * rstd[r];
    CHECK(std::fabs(dg[j] - want) <= 1e-5 * (std::fabs(want) + 1.0));
  }
  for (std::int64_t r = 0; r < R; ++r) {
    double c = 0;
    for (std::int64_t j = 0; j < D; ++j)
      c += static_cast<double>(dy[r * stride + j]) * g[j] * x[r * stride + j] * rstd[r];
    c /= static_cast<double>(D);
    for (std::int64_t j = 0; j < D; ++j) {
      const double xh = static_cast<double>(x[r * stride + j]) * rstd[r];
      const double want = rstd[r] * (static_cast<double>(dy[r * stride + j]) * g[j] - xh * c);
      CHECK(std::fabs(dx[r * stride + j] - want) <= 1e-5 * (std::fabs(want) + 1.0));
    }
  }
}

TEST_CASE("a variant pattern is one glob or several separated by commas", "[api]") {
  CHECK(rmsnorm::glob_match("fwd.*", "fwd.block_row"));
  CHECK(rmsnorm::glob_match("fwd.?lock_row", "fwd.block_row"));
  CHECK_FALSE(rmsnorm::glob_match("bwd.*", "fwd.block_row"));
  CHECK(rmsnorm::glob_match("fwd.cluster_row,fwd.large_d*", "fwd.large_d.pair"));
  CHECK(rmsnorm::glob_match("fwd.cluster_row,fwd.large_d*", "fwd.cluster_row"));
  CHECK_FALSE(rmsnorm::glob_match("fwd.cluster_row,fwd.large_d*", "fwd.block_row"));
  CHECK_FALSE(rmsnorm::glob_match("fwd.block_row,", "fwd.warp_row"));  // an empty glob matches nothing
  CHECK(rmsnorm::glob_match(",host.*", "host.reference"));
  const auto both = rmsnorm::match_variants("host.reference,host.*");
  CHECK(both.size() == rmsnorm::match_variants("host.*").size());  // a variant listed once
}

// No variant chooses its own tolerance: every declared accumulation shape, at every width of its
// declared range and every row count, keeps to the judge's limits (1 <= terms per thread <= n,
// 0 <= depth <= 64), and an undeclared one is judged as a sequential sum.
TEST_CASE("every variant's declared accumulation shapes keep to the judge's limits", "[api]") {
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 1; d <= 64; ++d) dims.push_back(d);
  for (std::int64_t p = 128; p <= (std::int64_t{1} << 24); p *= 2) dims.insert(dims.end(), {p - 1, p, p + 1, p + p / 2});
  int checked = 0;
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    for (std::int64_t d : dims) {
      if (!v.declares(d, DType::bf16) && !v.declares(d, DType::f32)) continue;
      rmsnorm::AccumShape s;
      const Status st = rmsnorm::judged_row_shape(v, d, s);
      INFO(v.name << " D = " << d << ": " << st.reason);
      CHECK(st.ok());
      ++checked;
    }
    if (v.supports(rmsnorm::Op::backward))
      for (std::int64_t r : {0, 1, 2, 7, 37, 512, 4096, 65536, 1 << 20}) {
        rmsnorm::AccumShape s;
        const Status st = rmsnorm::judged_dg_shape(v, r, s);
        INFO(v.name << " R = " << r << ": " << st.reason);
        CHECK(st.ok());
      }
  }
  CHECK(checked > 0);
  rmsnorm::Variant undeclared;
  rmsnorm::AccumShape s;
  REQUIRE(rmsnorm::judged_row_shape(undeclared, 4096, s).ok());
  CHECK((s.per_thread == 4096 && s.tree_depth == 0));
  undeclared.row_shape = [](std::int64_t d) { return rmsnorm::AccumShape{2 * d, 0}; };
  CHECK_FALSE(rmsnorm::judged_row_shape(undeclared, 4096, s).ok());
  undeclared.row_shape = [](std::int64_t) { return rmsnorm::AccumShape{1, 65}; };
  CHECK_FALSE(rmsnorm::judged_row_shape(undeclared, 4096, s).ok());
}
