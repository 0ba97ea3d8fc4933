// Registers host.reference (reference_impl.h). Its mutants belong to the verification tools'
// library (kernels/mutants).
#include "reference_impl.h"

namespace rmsnorm {

void register_host_variants(std::vector<Variant>& out) {
  out.push_back(host_reference::make<Mutant::none>(
      "host.reference", "plain C++ reference of the whole contract, fp32, warp-shaped reduction"));
}

}  // namespace rmsnorm
