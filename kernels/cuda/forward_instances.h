// The forward launchers' instantiations, one translation unit each (so the build parallelizes):
// every file that uses them sees these extern declarations and instantiates nothing itself.
#pragma once

#include "forward_launch.cuh"

#define RMSNORM_FWD_PRODUCT_INSTANCES(X) \
  X(run_warp_row, none)                  \
  X(run_block_row, none)                 \
  X(run_staged_rows, none)               \
  X(run_large_d, none)                   \
  X(run_large_d_pair, none)              \
  X(run_element_row, none)               \
  X(run_realigned_row, none)             \
  X(run_packed_rows, none)               \
  X(run_cluster_row, none)               \
  X(run_bulk_ring, none)                 \
  X(run_shifted_row, none)               \
  X(run_scalar, none)

#define RMSNORM_FWD_EXTERN(fn, m) \
  extern template rmsnorm::Status rmsnorm::cuda::fwd::fn<rmsnorm::Mutant::m>(const rmsnorm::ForwardArgs&);
#define RMSNORM_FWD_DEFINE(fn, m) \
  template rmsnorm::Status rmsnorm::cuda::fwd::fn<rmsnorm::Mutant::m>(const rmsnorm::ForwardArgs&);

RMSNORM_FWD_PRODUCT_INSTANCES(RMSNORM_FWD_EXTERN)
