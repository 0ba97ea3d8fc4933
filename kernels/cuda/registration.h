// Internal: what the CUDA variants' registration shares (kernels/cuda/variants/, forward_variant.h,
// backward_variant.h, register.cu).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
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

// The product of variant V and its mutants, as both families register them: `make(m, name,
// description)` builds the Variant of mutant m (Mutant::none: the product) as a
// std::integral_constant<Mutant, m>. A mutant is named kMutantPrefix + V's name + "." + its
// name, and aliased after V's alias the same way; `describe(m)` gives its description.
template <typename V, typename Make>
Ranked ranked_product(Make&& make) {
  Ranked r{V::kRank, make(std::integral_constant<Mutant, Mutant::none>{}, V::kName, V::kDescription)};
  if (V::kAlias != nullptr) r.variant.aliases.push_back(V::kAlias);
  return r;
}
template <typename V, Mutant... Ms, typename Make, typename Describe>
void ranked_mutants(std::vector<Ranked>& out, MutantList<Ms...>, Make&& make, Describe&& describe) {
  const std::string prefix(kMutantPrefix);
  auto one = [&](auto m) {
    Variant v = make(m, prefix + V::kName + "." + to_string(m.value), describe(m.value));
    if (V::kAlias != nullptr) v.aliases.push_back(prefix + V::kAlias + "." + to_string(m.value));
    out.push_back(Ranked{V::kRank, std::move(v)});
  };
  (one(std::integral_constant<Mutant, Ms>{}), ...);
}

void register_variants(std::vector<Variant>& out);  // register.cu: every struct of variants/, by kRank

}  // namespace rmsnorm::cuda
