// The CUDA variants' mutants: each variant's Mutants (variants/*.cuh), built in its generated unit
// (cmake/Variants.cmake), in the order of the variants' kRank.
#include <algorithm>
#include <utility>

#include "mutant_registration.h"
#include "registration.h"

namespace rmsnorm::cuda {

#define RMSNORM_VARIANT(V) void mutants_##V(std::vector<Ranked>& out);
#include "variant_list.inc"
#undef RMSNORM_VARIANT

void register_cuda_mutants(std::vector<Variant>& out) {
  std::vector<Ranked> all;
#define RMSNORM_VARIANT(V) mutants_##V(all);
#include "variant_list.inc"
#undef RMSNORM_VARIANT
  std::stable_sort(all.begin(), all.end(), [](const Ranked& a, const Ranked& b) { return a.rank < b.rank; });
  for (Ranked& r : all) out.push_back(std::move(r.variant));
}

}  // namespace rmsnorm::cuda
