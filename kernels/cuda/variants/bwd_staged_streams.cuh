// bwd.staged_streams: P = SMs programs of 2-6 row streams each, aligned rows of 512 < D <= 8192
// (fp32 <= 4096). Two kernels with the same arithmetic (backward_staged.cuh, shared with
// bwd.staged_rows): backward_streams_lean_kernel for 16-bit rows except the plain backward of
// > 8192 rows wider than 1024, backward_staged_kernel otherwise.
#pragma once

#include "backward_staged.cuh"
#include "backward_variant.h"

namespace rmsnorm::cuda::bwd {

struct bwd_staged_streams : BackwardMutantForm<bwd_staged_streams> {
  static constexpr const char* kName = "bwd.staged_streams";
  static constexpr const char* kAlias = "bwd.staged_streams.vec8";
  static constexpr int kRank = 2100;
  static constexpr const char* kDescription =
      "one program per SM, 3-6 row streams each, next rows staged by cp.async, 2-4 chunks per thread from D = 2048, "
      "lean addressing for 16-bit rows but the plain backward of > 8192 rows wider than 1024 (aligned, 512<D<=8192, "
      "fp32 to 4096, to 2040 with the fused add)";
  static constexpr std::int64_t kDimMin = kStagedMinDim, kDimMax = kStreamsMaxDim;
  static constexpr std::int64_t kF32DimMin = kStagedMinDim, kF32DimMax = kStreamsMaxDim32,
                                kF32AddDimMax = kStreamsMaxDim32Add;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M4_bwd_sum_not_mean, Mutant::M5_bwd_no_reduction, Mutant::M8_stride_ignored>;

  static AccumShape row_shape(std::int64_t dim) { return streams_row_shape(dim); }
  static AccumShape dg_shape(std::int64_t rows) { return dg_shape_of(rows, {2, 3, 6}, /*programs_per_sm=*/1); }
  static Status can(const BackwardArgs& a) { return streams_can_implement(a); }
  template <Mutant M>
  static Status launch(const BackwardArgs& a) {
    return streams_launch<M>(a);
  }
};

}  // namespace rmsnorm::cuda::bwd
