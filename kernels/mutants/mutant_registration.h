// Internal: one registration function per family of mutants.
#pragma once

#include <vector>

#include "rmsnorm/variant.h"

namespace rmsnorm {
void register_host_mutants(std::vector<Variant>& out);  // host_mutants.cpp
namespace cuda {
void register_forward_mutants(std::vector<Variant>& out);  // forward_mutants.cu
namespace bwd {
void register_backward_mutants(std::vector<Variant>& out);  // backward_mutants.cu
}  // namespace bwd
}  // namespace cuda
}  // namespace rmsnorm
