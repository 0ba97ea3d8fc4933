// The Variant a backward variant's struct becomes (make_backward), and what the generated units of
// cmake/Variants.cmake expand to for a struct named bwd_*: RMSNORM_BACKWARD_PRODUCT(V) in
// librmsnorm, RMSNORM_BACKWARD_MUTANTS(V) in librmsnorm_mutants.
//
// A backward variant (kernels/cuda/variants/bwd_*.cuh) is a struct with kName, kAlias, kRank,
// kDescription, kDimMin, kDimMax, kF32DimMin, kF32DimMax, kF32AddDimMax (0: as the wider one),
// kLayout, Mutants, row_shape(D), dg_shape(R), can(a) (validate() and its own limits) and
// launch<M>(a) (stage 1 and stage 2). Deriving from BackwardMutantForm gives the mutants' usual
// form; a variant whose mutants run another path declares its own mutant_can and narrow_mutant.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "backward_launch.cuh"
#include "registration.h"

namespace rmsnorm::cuda::bwd {

inline constexpr std::uint32_t kBackwardOps =
    (1u << static_cast<int>(Op::backward)) | (1u << static_cast<int>(Op::add_backward));

// The mutants' usual form: the product's checks on bf16 rows with bf16 weights (run_stages
// instantiates no other pair for a mutant), every case of the product otherwise.
template <typename V>
struct BackwardMutantForm {
  static Status mutant_can(const BackwardArgs& a) {
    const Status s = V::can(a);
    if (!s.ok()) return s;
    return mutant_types_ok(a) ? Status::success() : mutant_types_status();
  }
  static void narrow_mutant(Variant& v) {
    v.dtypes = 1u << static_cast<int>(DType::bf16);
    v.same_type_weights = true;
  }
};

// Every run(): its capability check first (nothing launches on invalid input), R = 0 writes
// dg = 0 when asked, then stage 1 and stage 2.
template <Status (*Can)(const BackwardArgs&), Status (*Launch)(const BackwardArgs&)>
Status run_checked(const BackwardArgs& a) {
  Status s = Can(a);
  if (!s.ok()) return s;
  if (a.rows == 0) return empty_batch(a);
  return Launch(a);
}

template <Mutant M, typename V>
Variant make_backward(std::string name, std::string description) {
  Variant v;
  v.name = std::move(name);
  v.description = std::move(description);
  v.memory = Memory::device;
  v.mutant = M;
  v.ops = kBackwardOps;
  v.workspace_bytes = workspace_bytes;
  v.min_dim = V::kDimMin;
  v.max_dim = V::kDimMax;
  v.f32_min_dim = V::kF32DimMin;
  v.f32_max_dim = V::kF32DimMax;
  v.f32_add_max_dim = V::kF32AddDimMax;
  v.aligned_rows = V::kLayout == RowLayout::aligned;
  v.packed_rows = V::kLayout == RowLayout::packed;
  v.row_shape = V::row_shape;
  v.dg_shape = V::dg_shape;
  if constexpr (M == Mutant::none) {
    v.can_implement_backward = V::can;
    v.run_backward = run_checked<V::can, V::template launch<Mutant::none>>;
  } else {
    v.can_implement_backward = V::mutant_can;
    v.run_backward = run_checked<V::mutant_can, V::template launch<M>>;
    V::narrow_mutant(v);
  }
  return v;
}

// V as registered: the product, and its Mutants named after it.
template <typename V>
Ranked make_product() {
  return ranked_product<V>([](auto m, std::string name, std::string description) {
    return make_backward<decltype(m)::value, V>(std::move(name), std::move(description));
  });
}
template <typename V>
void add_mutants(std::vector<Ranked>& out) {
  ranked_mutants<V>(
      out, typename V::Mutants{},
      [](auto m, std::string name, std::string description) {
        return make_backward<decltype(m)::value, V>(std::move(name), std::move(description));
      },
      [](Mutant m) { return std::string(mutant_description(m)); });
}

}  // namespace rmsnorm::cuda::bwd

#define RMSNORM_BACKWARD_PRODUCT(V)                                   \
  namespace rmsnorm::cuda {                                           \
  Ranked product_##V() { return bwd::make_product<bwd::V>(); }        \
  }
#define RMSNORM_BACKWARD_MUTANTS(V)                                                             \
  namespace rmsnorm::cuda {                                                                     \
  void mutants_##V(std::vector<Ranked>& out) { bwd::add_mutants<bwd::V>(out); }                  \
  }
