#include "rmsnorm/mutants.h"

#include <utility>
#include <vector>

#include "mutant_registration.h"

namespace rmsnorm {

Status register_mutants() {
  static const Status once = [] {
    std::vector<Variant> all;
#if RMSNORM_HAVE_CUDA
    cuda::register_cuda_mutants(all);
#endif
    register_host_mutants(all);
    return add_mutant_variants(std::move(all));
  }();
  return once;
}

}  // namespace rmsnorm
