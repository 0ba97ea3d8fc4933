// The Variant a forward variant's struct becomes (make_forward), and what the generated units of
// kernels/CMakeLists.txt expand to: RMSNORM_FORWARD_PRODUCT(V) in librmsnorm, registering the
// product, and RMSNORM_FORWARD_MUTANTS(V) in librmsnorm_mutants, registering each of V::Mutants.
// A variant's file never names either: the build generates both units for every struct named
// fwd_* in kernels/cuda/variants/.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "forward_launch.cuh"
#include "registration.h"

namespace rmsnorm::cuda::fwd {

// V::kF32AddDimMax, where V declares it: the widest fp32 row of its fused add, where that is
// narrower than kF32DimMax (fwd.bulk_ring: its o ring takes a slot of the row's); 0 otherwise.
template <typename V, typename = void>
struct f32_add_max_dim_of : std::integral_constant<std::int64_t, 0> {};
template <typename V>
struct f32_add_max_dim_of<V, std::void_t<decltype(V::kF32AddDimMax)>>
    : std::integral_constant<std::int64_t, V::kF32AddDimMax> {};
template <typename V, typename = void>
struct quant_16bit_rows_of : std::false_type {};
template <typename V>
struct quant_16bit_rows_of<V, std::void_t<decltype(V::kQuant16BitRows)>> : std::bool_constant<V::kQuant16BitRows> {};

// Only the (mutant, variant) pair named here is referenced, so only its launcher is instantiated,
// in the unit that names it.
template <Mutant M, typename V>
Variant make_forward(std::string name, std::string description) {
  Variant v;
  v.name = std::move(name);
  v.description = std::move(description);
  v.memory = Memory::device;
  v.mutant = M;
  v.ops = ops_mask<M, V::kQuantPath>() & V::kOps;
  v.row_shape = V::shape;
  v.can_implement_forward = can_implement<M, V>;
  v.run_forward = V::template run<M>;
  // Declared ranges (the widest over types; FP8 and fp32 rows may narrow them).
  v.min_dim = V::kDimMin;
  v.max_dim = V::kDimMax;
  v.f32_max_dim = V::kF32DimMax;
  v.f32_add_max_dim = f32_add_max_dim_of<V>::value;
  // M19 takes misaligned rows down the vector path: it claims any alignment, so draws reach it.
  v.aligned_rows = V::kLayout == RowLayout::aligned && M != Mutant::M19_misaligned_as_aligned;
  v.shared_frame = V::kLayout == RowLayout::shared_frame;
  v.packed_rows = V::kLayout == RowLayout::packed;
  v.quant_16bit_rows = quant_16bit_rows_of<V>::value;
  if constexpr (M != Mutant::none) {  // carries_types: 16-bit rows, same-type weights
    v.same_type_weights = true;
    v.dtypes = (1u << static_cast<int>(DType::bf16)) | (1u << static_cast<int>(DType::f16));
  }
  return v;
}

// V as registered: the product, and its Mutants named after it.
template <typename V>
Ranked make_product() {
  return ranked_product<V>([](auto m, std::string name, std::string description) {
    return make_forward<decltype(m)::value, V>(std::move(name), std::move(description));
  });
}
template <typename V>
void add_mutants(std::vector<Ranked>& out) {
  ranked_mutants<V>(
      out, typename V::Mutants{},
      [](auto m, std::string name, std::string description) {
        return make_forward<decltype(m)::value, V>(std::move(name), std::move(description));
      },
      [](Mutant m) { return std::string(V::kName) + " with " + mutant_description(m); });
}

}  // namespace rmsnorm::cuda::fwd

#define RMSNORM_FORWARD_PRODUCT(V)                                        \
  namespace rmsnorm::cuda {                                               \
  Ranked product_##V() { return fwd::make_product<fwd::V>(); }          \
  }
#define RMSNORM_FORWARD_MUTANTS(V)                                             \
  namespace rmsnorm::cuda {                                                    \
  void mutants_##V(std::vector<Ranked>& out) {                                 \
    fwd::add_mutants<fwd::V>(out);                                             \
  }                                                                            \
  }
