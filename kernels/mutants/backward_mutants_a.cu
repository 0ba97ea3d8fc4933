// Backward mutants, unit A (backward_mutants.cu registers them all): bwd.staged_streams, both
// of its kernels (backward_streams_lean_kernel and backward_staged_kernel with row streams), bf16
// rows and weights only.
//   M4 cmean_of, M5 chunk_dx, M8 row_start (the rows' copies and dx stores).
#include "backward_mutants.h"
#include "backward_staged.cuh"

namespace rmsnorm::cuda::bwd {

void register_backward_mutants_a(std::vector<Variant>& out) {
  constexpr const char* kStreams = "bwd.staged_streams";
  add_backward_mutant(out, kStreams, Mutant::M4_bwd_sum_not_mean, streams_launch<Mutant::M4_bwd_sum_not_mean>);
  add_backward_mutant(out, kStreams, Mutant::M5_bwd_no_reduction, streams_launch<Mutant::M5_bwd_no_reduction>);
  add_backward_mutant(out, kStreams, Mutant::M8_stride_ignored, streams_launch<Mutant::M8_stride_ignored>);
}

}  // namespace rmsnorm::cuda::bwd
