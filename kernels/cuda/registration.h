// Internal: the registration of the CUDA families.
#pragma once

#include <vector>

#include "rmsnorm/variant.h"

namespace rmsnorm::cuda {

// A registered variant and its place in dispatch order (a forward variant's kRank: lower first).
struct Ranked {
  int rank = 0;
  Variant variant;
};

void register_forward_variants(std::vector<Variant>& out);   // register.cu: every variants/fwd_*.cuh
void register_backward_variants(std::vector<Variant>& out);  // backward.cu

}  // namespace rmsnorm::cuda
