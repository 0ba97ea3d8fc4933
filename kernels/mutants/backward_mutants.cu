// The bug catalog (docs/mutants.md) on the backward products: each mutant is its product's code
// with one template switch flipped (Mutant M of the kernels and launchers), registered with the
// product's declared D range, layout, accumulation shapes and workspace, read from the product's
// own registration (register_backward_variants), and named mutant.<product>.<M>.
//
// bwd.persistent_rows (this file): every type pair, the 16-byte aligned register-resident
// path only (D ≤ 8192), which is where its switches sit.
//   M4  c = Σ ĝ x̂ (the sum, not the mean)        M5  dx = r ĝ (reduction term dropped)
//   M6  rows with x = 0 short-cut to dx = 0        M8  every row stride taken as D
//   M10 dg by float atomicAdd, row by row         M11 row offsets in 32-bit arithmetic
//   M16 the row sum's order flips with R's parity  M20 g[row mod D] broadcast over the row
// The other products (backward_mutants_a.cu, _b.cu, _c.cu): bf16 rows with bf16 weights only
// (run_stages instantiates no other pair), every case of the product otherwise. Their switches sit
// in helpers every backward kernel calls: M4 in cmean_of, M5 in dx_of (chunk_dx), M8 in
// row_start, M20 in element_weight (chunk_weights).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "backward_launch.cuh"
#include "backward_mutants.h"
#include "mutant_registration.h"
#include "registration.h"

namespace rmsnorm::cuda::bwd {

namespace {

const Variant& product_variant(const char* name) {
  static const std::vector<Variant> products = [] {
    std::vector<Variant> v;
    register_backward_variants(v);
    return v;
  }();
  for (const Variant& v : products)
    if (v.name == name) return v;
  std::fprintf(stderr, "backward mutants: no product variant %s\n", name);
  std::abort();
}

// bwd.persistent_rows's: the register-resident, aligned path (can_implement's `mutant`).
Status persistent_mutant_can(const BackwardArgs& a) { return can_implement(a, /*mutant=*/true); }
template <Mutant M>
Status persistent_mutant_launch(const BackwardArgs& a) {
  return launch<M>(a, true);
}
template <Mutant M>
void add_persistent_mutant(std::vector<Variant>& out) {
  Variant& v = add_backward_mutant(out, "bwd.persistent_rows", M, persistent_mutant_launch<M>, persistent_mutant_can);
  v.max_dim = kMaxFusedDim;  // the mutants run the register-resident, aligned path only
  v.aligned_rows = true;
}

}  // namespace

Variant& add_backward_mutant(std::vector<Variant>& out, const char* product, Mutant m, BackwardFn launch, BackwardFn can) {
  Variant v = product_variant(product);
  v.name = std::string(kMutantPrefix) + v.name + "." + to_string(m);
  for (std::string& alias : v.aliases) alias = std::string(kMutantPrefix) + alias + "." + to_string(m);
  v.description = mutant_description(m);
  v.mutant = m;
  std::function<Status(const BackwardArgs&)> check = can;
  if (can == nullptr) {
    v.dtypes = 1u << static_cast<int>(DType::bf16);
    v.same_type_weights = true;
    check = [product_can = v.can_implement_backward](const BackwardArgs& a) {
      Status s = product_can(a);
      if (!s.ok()) return s;
      return mutant_types_ok(a) ? Status::success() : mutant_types_status();
    };
  }
  v.can_implement_backward = check;
  // As the products' run(): can_implement() first, R = 0 writes dg = 0 when asked, then the stages.
  v.run_backward = [check, launch](const BackwardArgs& a) {
    Status s = check(a);
    if (!s.ok()) return s;
    if (a.rows == 0) return empty_batch(a);
    return launch(a);
  };
  out.push_back(std::move(v));
  return out.back();
}

void register_backward_mutants(std::vector<Variant>& out) {
  add_persistent_mutant<Mutant::M4_bwd_sum_not_mean>(out);
  add_persistent_mutant<Mutant::M5_bwd_no_reduction>(out);
  add_persistent_mutant<Mutant::M6_zero_row_shortcut>(out);
  add_persistent_mutant<Mutant::M8_stride_ignored>(out);
  add_persistent_mutant<Mutant::M10_dg_float_atomics>(out);
  add_persistent_mutant<Mutant::M11_offsets_32bit>(out);
  add_persistent_mutant<Mutant::M16_order_depends_on_rows>(out);
  add_persistent_mutant<Mutant::M20_weight_by_row>(out);
  register_backward_mutants_a(out);
  register_backward_mutants_b(out);
  register_backward_mutants_c(out);
}

}  // namespace rmsnorm::cuda::bwd
