// bwd.staged_rows: P = 2·SMs programs, aligned rows of 512 < D <= 16384 (fp32 <= 8192): the next rows
// copied into shared-memory stages by cp.async while the current one is reduced and written
// (backward_staged.cuh, shared with bwd.staged_streams).
#pragma once

#include "backward_staged.cuh"
#include "backward_variant.h"

namespace rmsnorm::cuda::bwd {

struct bwd_staged_rows : BackwardMutantForm<bwd_staged_rows> {
  static constexpr const char* kName = "bwd.staged_rows";
  static constexpr const char* kAlias = "bwd.staged_rows.vec8";
  static constexpr int kRank = 2300;
  static constexpr const char* kDescription =
      "persistent programs, next rows staged in shared memory by cp.async (aligned, 512<D<=16384)";
  static constexpr std::int64_t kDimMin = kStagedMinDim, kDimMax = kStagedMaxDim16;
  static constexpr std::int64_t kF32DimMin = kStagedMinDim, kF32DimMax = kStagedMaxDim32, kF32AddDimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M4_bwd_sum_not_mean, Mutant::M5_bwd_no_reduction, Mutant::M8_stride_ignored>;

  static AccumShape row_shape(std::int64_t dim) { return staged_row_shape(dim); }
  static AccumShape dg_shape(std::int64_t rows) { return staged_dg_shape(rows); }
  static Status can(const BackwardArgs& a) { return staged_can_implement(a); }
  template <Mutant M>
  static Status launch(const BackwardArgs& a) {
    return staged_launch<M>(a);
  }
};

}  // namespace rmsnorm::cuda::bwd
