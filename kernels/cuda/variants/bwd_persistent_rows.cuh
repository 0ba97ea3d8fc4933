// bwd.persistent_rows: P = 2·SMs persistent programs; a row stays in registers between its reduction
// and its dx pass (D <= 8192, 16-bit rows to 16384; a warp per row up to D = 512), larger D falls
// back to the re-reading kernel. 16-byte accesses when every view is aligned, element accesses
// otherwise (backward_kernels.cuh, backward_launch.cuh: shared with bwd.reread_rows).
#pragma once

#include "backward_launch.cuh"
#include "backward_variant.h"

namespace rmsnorm::cuda::bwd {

struct bwd_persistent_rows {
  static constexpr const char* kName = "bwd.persistent_rows";
  static constexpr const char* kAlias = "bwd.persistent_rows.vec8";
  static constexpr int kRank = 2600;
  static constexpr const char* kDescription =
      "persistent programs, row in registers (D<=8192, 16-bit to 16384; warp per row to 512), two-stage dg";
  static constexpr std::int64_t kDimMin = 1, kDimMax = kMaxDim;
  static constexpr std::int64_t kF32DimMin = 0, kF32DimMax = 0, kF32AddDimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::any;
  using Mutants = MutantList<Mutant::M4_bwd_sum_not_mean, Mutant::M5_bwd_no_reduction, Mutant::M6_zero_row_shortcut,
                             Mutant::M8_stride_ignored, Mutant::M10_dg_float_atomics, Mutant::M11_offsets_32bit,
                             Mutant::M16_order_depends_on_rows, Mutant::M20_weight_by_row>;

  static AccumShape row_shape(std::int64_t dim) { return row_shape_for(dim, true); }
  static AccumShape dg_shape(std::int64_t rows) { return dg_shape_of(rows, {kMultiRowsWide, kMultiRows}); }
  static Status can(const BackwardArgs& a) { return can_implement(a, /*mutant=*/false); }
  // The mutants run the register-resident, aligned path only (D <= 8192), where their switches
  // sit, on every type pair.
  static Status mutant_can(const BackwardArgs& a) { return can_implement(a, /*mutant=*/true); }
  static void narrow_mutant(Variant& v) {
    v.max_dim = kMaxFusedDim;
    v.aligned_rows = true;
  }
  template <Mutant M>
  static Status launch(const BackwardArgs& a) {
    return bwd::launch<M>(a, /*allow_fused=*/true);
  }
};

}  // namespace rmsnorm::cuda::bwd
