// The CUDA families register here, best first within each op (registration order is the
// dispatcher's preference).
#include "registration.h"

namespace rmsnorm {
void register_cuda_variants(std::vector<Variant>& out) {
  cuda::register_forward_variants(out);
  cuda::register_backward_variants(out);
}
}  // namespace rmsnorm
