// Internal: one registration function per CUDA op family (each in its own .cu file).
#pragma once

#include <vector>

#include "rmsnorm/variant.h"

namespace rmsnorm::cuda {
void register_forward_variants(std::vector<Variant>& out);   // forward.cu
void register_backward_variants(std::vector<Variant>& out);  // backward.cu
}  // namespace rmsnorm::cuda
