// Backward mutants, unit B (backward_mutants.cu registers them all): bwd.staged_rows,
// bwd.staged_cluster and bwd.cluster_rows, bf16 rows and weights only.
//   M4 cmean_of, M5 chunk_dx, M8 row_start (the rows' loads or copies and dx stores);
//   bwd.cluster_rows, which loads the weights per row: M20 too (owned_chunk_weights).
#include "backward_cluster.cuh"
#include "backward_mutants.h"

namespace rmsnorm::cuda::bwd {

void register_backward_mutants_b(std::vector<Variant>& out) {
  constexpr const char* kStaged = "bwd.staged_rows";
  add_backward_mutant(out, kStaged, Mutant::M4_bwd_sum_not_mean, staged_launch<Mutant::M4_bwd_sum_not_mean>);
  add_backward_mutant(out, kStaged, Mutant::M5_bwd_no_reduction, staged_launch<Mutant::M5_bwd_no_reduction>);
  add_backward_mutant(out, kStaged, Mutant::M8_stride_ignored, staged_launch<Mutant::M8_stride_ignored>);
  constexpr const char* kStagedCluster = "bwd.staged_cluster";
  add_backward_mutant(out, kStagedCluster, Mutant::M4_bwd_sum_not_mean, staged_cluster_launch<Mutant::M4_bwd_sum_not_mean>);
  add_backward_mutant(out, kStagedCluster, Mutant::M5_bwd_no_reduction, staged_cluster_launch<Mutant::M5_bwd_no_reduction>);
  add_backward_mutant(out, kStagedCluster, Mutant::M8_stride_ignored, staged_cluster_launch<Mutant::M8_stride_ignored>);
  constexpr const char* kCluster = "bwd.cluster_rows";
  add_backward_mutant(out, kCluster, Mutant::M4_bwd_sum_not_mean, cluster_launch<Mutant::M4_bwd_sum_not_mean>);
  add_backward_mutant(out, kCluster, Mutant::M5_bwd_no_reduction, cluster_launch<Mutant::M5_bwd_no_reduction>);
  add_backward_mutant(out, kCluster, Mutant::M8_stride_ignored, cluster_launch<Mutant::M8_stride_ignored>);
  add_backward_mutant(out, kCluster, Mutant::M20_weight_by_row, cluster_launch<Mutant::M20_weight_by_row>);
}

}  // namespace rmsnorm::cuda::bwd
