// Internal: one registration function per family of mutants.
#pragma once

#include <vector>

#include "rmsnorm/variant.h"

namespace rmsnorm {
void register_host_mutants(std::vector<Variant>& out);  // host_mutants.cpp
namespace cuda {
void register_cuda_mutants(std::vector<Variant>& out);  // variant_mutants.cu: every variants/*.cuh
}  // namespace cuda
}  // namespace rmsnorm
