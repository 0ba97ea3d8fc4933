// The forward mutants' launcher instantiations (split over four units so the build parallelizes):
// every file that uses them sees these extern declarations and instantiates nothing itself.
// Each product path carries the bugs of docs/mutants.md whose switch sits in code it runs: its
// row reduction (M1, M2, M3), its tail (M9), its row offsets (M8, M11), its barriers (M18), its
// alignment path (M19, aligned paths), its weights and fused add (M17, M20) and its FP8 outputs
// (M12-M14), where it has them.
#pragma once

#include "forward_instances.h"

#define RMSNORM_FWD_MUTANT_INSTANCES_A(X)   \
  X(run_block_row, M1_padded_divisor)       \
  X(run_block_row, M2_eps_outside_root)     \
  X(run_block_row, M3_low_precision_sum)    \
  X(run_block_row, M7_square_before_upcast) \
  X(run_block_row, M8_stride_ignored)       \
  X(run_block_row, M12_scale_no_floor)      \
  X(run_block_row, M13_fp8_via_bf16)        \
  X(run_block_row, M14_fp8_no_saturation)   \
  X(run_block_row, M15_llama_double_round)  \
  X(run_block_row, M16_order_depends_on_rows) \
  X(run_block_row, M17_add_unrounded_sum)   \
  X(run_block_row, M18_missing_barrier)     \
  X(run_block_row, M19_misaligned_as_aligned) \
  X(run_block_row, M20_weight_by_row)

#define RMSNORM_FWD_MUTANT_INSTANCES_B(X)   \
  X(run_warp_row, M1_padded_divisor)        \
  X(run_warp_row, M8_stride_ignored)        \
  X(run_warp_row, M9_tail_overread)         \
  X(run_warp_row, M13_fp8_via_bf16)         \
  X(run_warp_row, M19_misaligned_as_aligned) \
  X(run_staged_rows, M1_padded_divisor)     \
  X(run_staged_rows, M8_stride_ignored)     \
  X(run_staged_rows, M13_fp8_via_bf16)      \
  X(run_staged_rows, M18_missing_barrier)   \
  X(run_staged_rows, M19_misaligned_as_aligned) \
  X(run_shifted_row, M2_eps_outside_root)   \
  X(run_shifted_row, M8_stride_ignored)     \
  X(run_shifted_row, M15_llama_double_round)

#define RMSNORM_FWD_MUTANT_INSTANCES_C(X)   \
  X(run_large_d, M1_padded_divisor)         \
  X(run_large_d, M8_stride_ignored)         \
  X(run_large_d, M9_tail_overread)          \
  X(run_large_d, M11_offsets_32bit)         \
  X(run_large_d, M13_fp8_via_bf16)          \
  X(run_large_d, M18_missing_barrier)       \
  X(run_large_d, M19_misaligned_as_aligned) \
  X(run_large_d_pair, M1_padded_divisor)    \
  X(run_large_d_pair, M8_stride_ignored)    \
  X(run_large_d_pair, M9_tail_overread)     \
  X(run_large_d_pair, M18_missing_barrier)  \
  X(run_cluster_row, M1_padded_divisor)     \
  X(run_cluster_row, M3_low_precision_sum)  \
  X(run_cluster_row, M8_stride_ignored)     \
  X(run_cluster_row, M9_tail_overread)      \
  X(run_cluster_row, M13_fp8_via_bf16)      \
  X(run_cluster_row, M19_misaligned_as_aligned)

#define RMSNORM_FWD_MUTANT_INSTANCES_D(X)   \
  X(run_element_row, M1_padded_divisor)     \
  X(run_element_row, M3_low_precision_sum)  \
  X(run_element_row, M8_stride_ignored)     \
  X(run_element_row, M13_fp8_via_bf16)      \
  X(run_element_row, M17_add_unrounded_sum) \
  X(run_element_row, M18_missing_barrier)   \
  X(run_element_row, M20_weight_by_row)     \
  X(run_realigned_row, M1_padded_divisor)   \
  X(run_realigned_row, M3_low_precision_sum) \
  X(run_realigned_row, M8_stride_ignored)   \
  X(run_realigned_row, M13_fp8_via_bf16)    \
  X(run_realigned_row, M18_missing_barrier) \
  X(run_scalar, M1_padded_divisor)          \
  X(run_scalar, M3_low_precision_sum)       \
  X(run_scalar, M8_stride_ignored)          \
  X(run_scalar, M13_fp8_via_bf16)           \
  X(run_scalar, M18_missing_barrier)        \
  X(run_scalar, M20_weight_by_row)          \
  X(run_packed_rows, M2_eps_outside_root)   \
  X(run_packed_rows, M3_low_precision_sum)  \
  X(run_packed_rows, M12_scale_no_floor)    \
  X(run_packed_rows, M13_fp8_via_bf16)

// fwd.bulk_ring's launcher is defined in forward_ring_kernel.cuh (only its units include it).
#define RMSNORM_FWD_MUTANT_INSTANCES_RING(X) \
  X(run_bulk_ring, M1_padded_divisor)        \
  X(run_bulk_ring, M3_low_precision_sum)     \
  X(run_bulk_ring, M9_tail_overread)         \
  X(run_bulk_ring, M18_missing_barrier)      \
  X(run_bulk_ring, M19_misaligned_as_aligned)

#define RMSNORM_FWD_MUTANT_INSTANCES(X) \
  RMSNORM_FWD_MUTANT_INSTANCES_A(X)     \
  RMSNORM_FWD_MUTANT_INSTANCES_B(X)     \
  RMSNORM_FWD_MUTANT_INSTANCES_C(X)     \
  RMSNORM_FWD_MUTANT_INSTANCES_D(X)     \
  RMSNORM_FWD_MUTANT_INSTANCES_RING(X)

RMSNORM_FWD_MUTANT_INSTANCES(RMSNORM_FWD_EXTERN)
