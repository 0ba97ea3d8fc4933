// Backward mutants, unit C (backward_mutants.cu registers them all): bwd.packed_rows and
// bwd.reread_rows, bf16 rows and weights only.
//   bwd.packed_rows: M4 cmean_of, M5 dx_of, M20 element_weight (M8 would be equivalent: its rows
//   are packed, every stride D).
//   bwd.reread_rows (aligned and element paths): M4 cmean_of, M5 dx_of, M8 row_start,
//   M20 chunk_weights.
#include "backward_mutants.h"
#include "backward_packed.cuh"

namespace rmsnorm::cuda::bwd {

void register_backward_mutants_c(std::vector<Variant>& out) {
  constexpr const char* kPacked = "bwd.packed_rows";
  add_backward_mutant(out, kPacked, Mutant::M4_bwd_sum_not_mean, packed_launch<Mutant::M4_bwd_sum_not_mean>);
  add_backward_mutant(out, kPacked, Mutant::M5_bwd_no_reduction, packed_launch<Mutant::M5_bwd_no_reduction>);
  add_backward_mutant(out, kPacked, Mutant::M20_weight_by_row, packed_launch<Mutant::M20_weight_by_row>);
  constexpr const char* kReread = "bwd.reread_rows";
  add_backward_mutant(out, kReread, Mutant::M4_bwd_sum_not_mean, reread_rows_launch<Mutant::M4_bwd_sum_not_mean>);
  add_backward_mutant(out, kReread, Mutant::M5_bwd_no_reduction, reread_rows_launch<Mutant::M5_bwd_no_reduction>);
  add_backward_mutant(out, kReread, Mutant::M8_stride_ignored, reread_rows_launch<Mutant::M8_stride_ignored>);
  add_backward_mutant(out, kReread, Mutant::M20_weight_by_row, reread_rows_launch<Mutant::M20_weight_by_row>);
}

}  // namespace rmsnorm::cuda::bwd
