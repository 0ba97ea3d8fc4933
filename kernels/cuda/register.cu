// The CUDA families register here, best first within each op (registration order is the
// dispatcher's preference): the forward variants of variants/ in the order of their kRank, then
// the backward family.
#include <algorithm>
#include <utility>

#include "registration.h"

namespace rmsnorm::cuda {

// One per struct fwd_* of variants/, defined in its generated unit (cmake/Variants.cmake).
#define RMSNORM_VARIANT(V) Ranked product_##V();
#include "variant_list.inc"
#undef RMSNORM_VARIANT

void register_forward_variants(std::vector<Variant>& out) {
  std::vector<Ranked> all;
#define RMSNORM_VARIANT(V) all.push_back(product_##V());
#include "variant_list.inc"
#undef RMSNORM_VARIANT
  std::stable_sort(all.begin(), all.end(), [](const Ranked& a, const Ranked& b) { return a.rank < b.rank; });
  for (Ranked& r : all) out.push_back(std::move(r.variant));
}

}  // namespace rmsnorm::cuda

namespace rmsnorm {
void register_cuda_variants(std::vector<Variant>& out) {
  cuda::register_forward_variants(out);
  cuda::register_backward_variants(out);
}
}  // namespace rmsnorm
