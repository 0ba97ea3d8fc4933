// bwd.packed_rows: packed rows (stride = D) of any alignment, D <= 8192 (fp32 <= 4096): a tile of
// consecutive rows copied as one span of 16-byte cp.async vectors into shared memory, dx back the
// same way (backward_packed.cuh).
#pragma once

#include "backward_packed.cuh"
#include "backward_variant.h"

namespace rmsnorm::cuda::bwd {

struct bwd_packed_rows : BackwardMutantForm<bwd_packed_rows> {
  static constexpr const char* kName = "bwd.packed_rows";
  static constexpr const char* kAlias = "bwd.packed_rows.vec8";
  static constexpr int kRank = 2500;
  static constexpr const char* kDescription =
      "one program per SM, tiles of packed rows copied as 16-byte vectors into shared-memory stages, two rows per "
      "group of threads, any alignment (stride = D, D<=8192, fp32 to 4096)";
  static constexpr std::int64_t kDimMin = 1, kDimMax = kPackedMaxDim16;
  static constexpr std::int64_t kF32DimMin = 1, kF32DimMax = kPackedMaxDim32, kF32AddDimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::packed;
  using Mutants = MutantList<Mutant::M4_bwd_sum_not_mean, Mutant::M5_bwd_no_reduction, Mutant::M20_weight_by_row>;

  static AccumShape row_shape(std::int64_t dim) { return packed_row_shape(dim); }
  static AccumShape dg_shape(std::int64_t rows) { return packed_dg_shape(rows); }
  static Status can(const BackwardArgs& a) { return packed_can_implement(a); }
  template <Mutant M>
  static Status launch(const BackwardArgs& a) {
    return packed_launch<M>(a);
  }
};

}  // namespace rmsnorm::cuda::bwd
