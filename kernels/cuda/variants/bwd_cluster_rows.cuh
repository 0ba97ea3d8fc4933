// bwd.cluster_rows: aligned rows of 16384 < D <= 65536 (fp32: 8192 < D): one row over an 8-CTA
// thread-block cluster (4 for the 16-bit fused add over 49152), each CTA a column slice in
// registers, the row sum exchanged through distributed shared memory (backward_cluster.cuh, shared
// with bwd.staged_cluster).
#pragma once

#include "backward_cluster.cuh"
#include "backward_variant.h"

namespace rmsnorm::cuda::bwd {

struct bwd_cluster_rows : BackwardMutantForm<bwd_cluster_rows> {
  static constexpr const char* kName = "bwd.cluster_rows";
  static constexpr const char* kAlias = "bwd.cluster_rows.vec8";
  static constexpr int kRank = 2400;
  static constexpr const char* kDescription =
      "one row over an 8-CTA cluster (4 for the 16-bit fused add over 49152), slices in registers, row sum through "
      "DSMEM (aligned, 16384<D<=65536; fp32 from 8193)";
  static constexpr std::int64_t kDimMin = kClusterMinDim16, kDimMax = kClusterMaxDim;
  static constexpr std::int64_t kF32DimMin = kClusterMinDim32, kF32DimMax = kClusterMaxDim, kF32AddDimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M4_bwd_sum_not_mean, Mutant::M5_bwd_no_reduction, Mutant::M8_stride_ignored,
                             Mutant::M20_weight_by_row>;

  static AccumShape row_shape(std::int64_t dim) { return cluster_row_shape(dim); }
  static AccumShape dg_shape(std::int64_t rows) { return cluster_dg_shape(rows); }
  static Status can(const BackwardArgs& a) { return cluster_can_implement(a); }
  template <Mutant M>
  static Status launch(const BackwardArgs& a) {
    return cluster_launch<M>(a);
  }
};

}  // namespace rmsnorm::cuda::bwd
