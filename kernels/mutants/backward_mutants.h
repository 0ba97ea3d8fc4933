// Internal to the backward mutants: the registration helper (backward_mutants.cu) and the units
// that instantiate each product's mutants (backward_mutants_a.cu, _b.cu, _c.cu).
#pragma once

#include <vector>

#include "rmsnorm/variant.h"

namespace rmsnorm::cuda::bwd {

using BackwardFn = Status (*)(const BackwardArgs&);
// Adds the mutant m of product variant `product`, stage 1 by `launch`. `can`: its own
// can_implement(); null: the product's, restricted to bf16 rows with bf16 weights (the variant
// declares so). Returns the registered variant, for a narrower declaration.
Variant& add_backward_mutant(std::vector<Variant>& out, const char* product, Mutant m, BackwardFn launch,
                             BackwardFn can = nullptr);
void register_backward_mutants_a(std::vector<Variant>& out);  // backward_mutants_a.cu
void register_backward_mutants_b(std::vector<Variant>& out);  // backward_mutants_b.cu
void register_backward_mutants_c(std::vector<Variant>& out);  // backward_mutants_c.cu

}  // namespace rmsnorm::cuda::bwd
