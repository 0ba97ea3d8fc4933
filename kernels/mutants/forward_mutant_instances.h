// The forward mutants' launcher instantiations (split over two units so the build parallelizes):
// every file that uses them sees these extern declarations and instantiates nothing itself.
#pragma once

#include "forward_instances.h"

// Mutants (docs/mutants.md), each on the product path where its bug is natural.
#define RMSNORM_FWD_MUTANT_INSTANCES_A(X) \
  X(run_block_row, M1_padded_divisor)     \
  X(run_block_row, M2_eps_outside_root)   \
  X(run_block_row, M3_low_precision_sum)  \
  X(run_block_row, M7_square_before_upcast) \
  X(run_block_row, M8_stride_ignored)     \
  X(run_warp_row, M9_tail_overread)       \
  X(run_large_d, M11_offsets_32bit)       \
  X(run_block_row, M12_scale_no_floor)

#define RMSNORM_FWD_MUTANT_INSTANCES_B(X)      \
  X(run_block_row, M13_fp8_via_bf16)           \
  X(run_block_row, M14_fp8_no_saturation)      \
  X(run_block_row, M15_llama_double_round)     \
  X(run_block_row, M16_order_depends_on_rows)  \
  X(run_block_row, M17_add_unrounded_sum)      \
  X(run_block_row, M18_missing_barrier)        \
  X(run_block_row, M19_misaligned_as_aligned)  \
  X(run_block_row, M20_weight_by_row)

RMSNORM_FWD_MUTANT_INSTANCES_A(RMSNORM_FWD_EXTERN)
RMSNORM_FWD_MUTANT_INSTANCES_B(RMSNORM_FWD_EXTERN)
