// The forward mutants' registration: each (mutant, path) pair of forward_mutant_instances.h, on
// the product path where its bug is natural.
#include <string>

#include "forward_mutant_instances.h"
#include "forward_variant.h"
#include "mutant_registration.h"

namespace rmsnorm::cuda {
namespace {

template <Mutant M, Path P>
void add(std::vector<Variant>& out) {
  out.push_back(make<M, P>(std::string(kMutantPrefix) + path_variant_name(P) + "." + to_string(M),
                           path_variant_name(P) + " with " + mutant_description(M)));
}

}  // namespace

void register_forward_mutants(std::vector<Variant>& out) {
#define RMSNORM_FWD_PATH_run_block_row Path::block_row
#define RMSNORM_FWD_PATH_run_large_d Path::large_d
#define RMSNORM_FWD_PATH_run_warp_row Path::warp_row
#define RMSNORM_FWD_REGISTER_MUTANT(fn, m) add<Mutant::m, RMSNORM_FWD_PATH_##fn>(out);
  RMSNORM_FWD_MUTANT_INSTANCES_A(RMSNORM_FWD_REGISTER_MUTANT)
  RMSNORM_FWD_MUTANT_INSTANCES_B(RMSNORM_FWD_REGISTER_MUTANT)
#undef RMSNORM_FWD_REGISTER_MUTANT
}

}  // namespace rmsnorm::cuda
