// Placeholder until the backward family lands.
#include "registration.h"

namespace rmsnorm::cuda {
void register_backward_variants(std::vector<Variant>&) {}
}  // namespace rmsnorm::cuda
