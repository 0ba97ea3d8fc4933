// Internal: what the CUDA variants' registration shares (kernels/cuda/variants/, forward_variant.h,
// backward_variant.h, register.cu).
#pragma once

#include <cstdint>
#include <vector>

#include "rmsnorm/variant.h"

namespace rmsnorm::cuda {

// A registered variant and its place in dispatch order (a variant's kRank: lower first).
struct Ranked {
  int rank = 0;
  Variant variant;
};

// The rows a variant takes (Variant::aligned_rows, packed_rows, shared_frame). `aligned`: every row
// start of every vector-accessed tensor on a 16-byte boundary.
enum class RowLayout : std::uint8_t { any, aligned, shared_frame, packed };

// The mutants of the catalog (docs/mutants.md) a variant carries: the switches that sit in code
// it runs.
template <Mutant... Ms>
struct MutantList {};

void register_variants(std::vector<Variant>& out);  // register.cu: every struct of variants/, by kRank

}  // namespace rmsnorm::cuda
