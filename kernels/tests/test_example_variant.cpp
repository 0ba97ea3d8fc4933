// docs/adding-a-variant.md's example variant, built from the doc's text alone through the units
// the build generates for every file of kernels/cuda/variants/ (cmake/Variants.cmake): adding a
// variant is adding its file. Checks the Variant the registry would hold and its mutants (host:
// nothing launches), and with a device runs it on generated cases and judges them.
#include <string>
#include <vector>

#include "harness/case_file.h"
#include "harness/catch.h"
#include "harness/probe_args.h"
#include "harness/run.h"
#include "registration.h"

namespace rmsnorm::cuda {
#define RMSNORM_VARIANT(V)   \
  Ranked product_##V();      \
  void mutants_##V(std::vector<Ranked>& out);
#include "variant_list.inc"
#undef RMSNORM_VARIANT
}  // namespace rmsnorm::cuda

namespace {

std::vector<rmsnorm::cuda::Ranked> products() {
  std::vector<rmsnorm::cuda::Ranked> out;
#define RMSNORM_VARIANT(V) out.push_back(rmsnorm::cuda::product_##V());
#include "variant_list.inc"
#undef RMSNORM_VARIANT
  return out;
}

}  // namespace

TEST_CASE("the doc's example variant is registered from its file alone") {
  const std::vector<rmsnorm::cuda::Ranked> all = products();
  REQUIRE(all.size() == 1);
  const rmsnorm::Variant& v = all[0].variant;
  CHECK(v.name == "fwd.example_rows");
  CHECK(all[0].rank == 1150);
  CHECK(v.ops == (1u << static_cast<int>(rmsnorm::Op::forward)));
  CHECK(!v.aligned_rows);
  CHECK(v.row_shape(4096).per_thread == 16);
  CHECK(v.row_shape(4096).tree_depth == 8);

  rmsnorm::ForwardArgs a = harness::probe_forward(rmsnorm::DType::bf16, 64, 1025);
  CHECK(v.can_implement_forward(a).ok());
  a = harness::probe_forward(rmsnorm::DType::bf16, 64, 1025, /*fp8=*/false, /*add=*/true);
  CHECK(v.can_implement_forward(a).code == rmsnorm::Status::Code::unsupported);
  CHECK(v.can_implement_forward(a).reason.find("fwd.example_rows") != std::string::npos);

  std::vector<rmsnorm::cuda::Ranked> mutants;
#define RMSNORM_VARIANT(V) rmsnorm::cuda::mutants_##V(mutants);
#include "variant_list.inc"
#undef RMSNORM_VARIANT
  REQUIRE(mutants.size() == 2);
  CHECK(mutants[0].variant.name == "mutant.fwd.example_rows.M3_low_precision_sum");
  CHECK(mutants[1].variant.name == "mutant.fwd.example_rows.M8_stride_ignored");
}

TEST_CASE("the doc's example variant passes its cases on the GPU", "[gpu]") {
  const rmsnorm::Variant v = products().at(0).variant;
  for (const char* line : {"op=forward;rows=7;dim=1025;x_type=bf16;g_type=bf16;y_type=bf16;convention=standard;"
                           "eps=1e-6;generator=regimes;seed=1;x.regime=normal;g.regime=random",
                           "op=forward;rows=3;dim=4096;x_type=f32;g_type=f32;y_type=f32;convention=gemma;"
                           "eps=1e-5;generator=regimes;seed=2;x.regime=normal;g.regime=random"}) {
    INFO(line);
    harness::Case c;
    std::string error;
    REQUIRE(harness::parse_case(line, c, error));
    oracle::ForwardCase f;
    REQUIRE(harness::forward_case(c, f, error));
    const harness::Outcome o = harness::run_forward(v, f, harness::Layout{});
    INFO(o.summary());
    CHECK(o.pass());
  }
}
