// Placeholder until the forward family lands.
#include "registration.h"

namespace rmsnorm::cuda {
void register_forward_variants(std::vector<Variant>&) {}
}  // namespace rmsnorm::cuda
