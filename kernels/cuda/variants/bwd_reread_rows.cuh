// bwd.reread_rows: the re-reading kernel for every D: one block per row at a time, x and dy read
// twice (the second time mostly from L2), dg partials accumulated in the workspace. Any D up to
// 2^24 (backward_kernels.cuh, backward_launch.cuh: shared with bwd.persistent_rows).
#pragma once

#include "backward_launch.cuh"
#include "backward_variant.h"

namespace rmsnorm::cuda::bwd {

struct bwd_reread_rows : BackwardMutantForm<bwd_reread_rows> {
  static constexpr const char* kName = "bwd.reread_rows";
  static constexpr const char* kAlias = "bwd.reread_rows.vec8";
  static constexpr int kRank = 2700;
  static constexpr const char* kDescription = "one block per row, x and dy read twice, any D, two-stage dg";
  static constexpr std::int64_t kDimMin = 1, kDimMax = kMaxDim;
  static constexpr std::int64_t kF32DimMin = 0, kF32DimMax = 0, kF32AddDimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::any;
  using Mutants = MutantList<Mutant::M4_bwd_sum_not_mean, Mutant::M5_bwd_no_reduction, Mutant::M8_stride_ignored,
                             Mutant::M20_weight_by_row>;

  static AccumShape row_shape(std::int64_t dim) { return row_shape_of(reread_config(), dim); }
  static AccumShape dg_shape(std::int64_t rows) { return dg_shape_of(rows, {}); }
  static Status can(const BackwardArgs& a) { return can_implement(a, /*mutant=*/false); }
  template <Mutant M>
  static Status launch(const BackwardArgs& a) {
    if constexpr (M == Mutant::none) {
      return bwd::launch<M>(a, /*allow_fused=*/false);
    } else {
      return reread_rows_launch<M>(a);
    }
  }
};

}  // namespace rmsnorm::cuda::bwd
