// The CUDA variants register here: every struct of variants/ (forward and backward), in the order
// of their kRank, which is the dispatcher's preference within each op.
#include <algorithm>
#include <utility>

#include "registration.h"

namespace rmsnorm::cuda {

// One per struct fwd_* / bwd_* of variants/, defined in its generated unit (cmake/Variants.cmake).
#define RMSNORM_VARIANT(V) Ranked product_##V();
#include "variant_list.inc"
#undef RMSNORM_VARIANT

void register_variants(std::vector<Variant>& out) {
  std::vector<Ranked> all;
#define RMSNORM_VARIANT(V) all.push_back(product_##V());
#include "variant_list.inc"
#undef RMSNORM_VARIANT
  std::stable_sort(all.begin(), all.end(), [](const Ranked& a, const Ranked& b) { return a.rank < b.rank; });
  for (Ranked& r : all) out.push_back(std::move(r.variant));
}

}  // namespace rmsnorm::cuda

namespace rmsnorm {
void register_cuda_variants(std::vector<Variant>& out) { cuda::register_variants(out); }
}  // namespace rmsnorm
