// The forward mutants' registration: each (mutant, path) pair of forward_mutant_instances.h.
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
#define RMSNORM_FWD_PATH_run_warp_row Path::warp_row
#define RMSNORM_FWD_PATH_run_block_row Path::block_row
#define RMSNORM_FWD_PATH_run_staged_rows Path::staged_rows
#define RMSNORM_FWD_PATH_run_large_d Path::large_d
#define RMSNORM_FWD_PATH_run_large_d_pair Path::large_d_pair
#define RMSNORM_FWD_PATH_run_element_row Path::element_row
#define RMSNORM_FWD_PATH_run_realigned_row Path::realigned_row
#define RMSNORM_FWD_PATH_run_packed_rows Path::packed_rows
#define RMSNORM_FWD_PATH_run_cluster_row Path::cluster_row
#define RMSNORM_FWD_PATH_run_bulk_ring Path::bulk_ring
#define RMSNORM_FWD_PATH_run_shifted_row Path::shifted_row
#define RMSNORM_FWD_PATH_run_scalar Path::scalar
#define RMSNORM_FWD_REGISTER_MUTANT(fn, m) add<Mutant::m, RMSNORM_FWD_PATH_##fn>(out);
  RMSNORM_FWD_MUTANT_INSTANCES(RMSNORM_FWD_REGISTER_MUTANT)
#undef RMSNORM_FWD_REGISTER_MUTANT
}

}  // namespace rmsnorm::cuda
