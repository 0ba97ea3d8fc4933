// bwd.staged_cluster: aligned rows of 512 < D <= 65536: bwd.cluster_rows' slices (backward_cluster.cuh,
// shared with it), each CTA's next rows staged in its shared memory by cp.async
// (backward_staged_cluster_kernel).
#pragma once

#include "backward_cluster.cuh"
#include "backward_variant.h"

namespace rmsnorm::cuda::bwd {

struct bwd_staged_cluster : BackwardMutantForm<bwd_staged_cluster> {
  static constexpr const char* kName = "bwd.staged_cluster";
  static constexpr const char* kAlias = "bwd.staged_cluster.vec8";
  static constexpr int kRank = 2200;
  static constexpr const char* kDescription =
      "one row over an 8-CTA cluster, each CTA a column slice with the next rows staged in its shared memory by "
      "cp.async, row sum through DSMEM (aligned, 512<D<=65536)";
  static constexpr std::int64_t kDimMin = kStagedClusterMinDim, kDimMax = kClusterMaxDim;
  static constexpr std::int64_t kF32DimMin = kStagedClusterMinDim, kF32DimMax = kClusterMaxDim, kF32AddDimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M4_bwd_sum_not_mean, Mutant::M5_bwd_no_reduction, Mutant::M8_stride_ignored>;

  static AccumShape row_shape(std::int64_t dim) { return cluster_row_shape(dim); }
  static AccumShape dg_shape(std::int64_t rows) { return staged_cluster_dg_shape(rows); }
  static Status can(const BackwardArgs& a) { return staged_cluster_can_implement(a); }
  template <Mutant M>
  static Status launch(const BackwardArgs& a) {
    return staged_cluster_launch<M>(a);
  }
};

}  // namespace rmsnorm::cuda::bwd
