// A row's sum over a Hopper thread-block cluster (sm_90), shared by the cluster variants
// (fwd.cluster_row, bwd.cluster_rows, bwd.staged_cluster). Kept out of device_common.cuh, whose
// helpers stay plain CUDA (a host emulation of the generic kernels reuses them).
//
// Each CTA owns a column slice of the row and has reduced it to one partial (its block sum). The
// partial goes into slot [rank] of EVERY CTA of the cluster (distributed shared memory), one
// cluster barrier releases those writes and acquires everyone's, and every CTA adds the N
// partials in the same fixed tree: all agree bitwise on the row's sum, whatever the timing.
// Double-buffered slots (the caller alternates `slots` between two arrays, parity per row): a
// slot of one parity is rewritten two rows later, after the next row's cluster barrier, which no
// CTA passes before every CTA has read this row's slots.
#pragma once

#include <cooperative_groups.h>

namespace rmsnorm::cuda {

// The fixed tree over a cluster's N = 4 or 8 partials (declared depth ceil_log2(N)).
template <int N>
__device__ __forceinline__ float cluster_tree_sum(const float* v) {
  static_assert(N == 4 || N == 8, "4 or 8 partials");
  if constexpr (N == 4) {
    return (v[0] + v[1]) + (v[2] + v[3]);
  } else {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
  }
}

// Every thread of every CTA calls it with its CTA's partial (the same value in all its threads);
// returns the cluster's sum. `slots` is this CTA's array of N floats for this row's parity.
template <int N>
__device__ __forceinline__ float cluster_sum(cooperative_groups::cluster_group& cluster, float* slots, int rank,
                                             int t, float block_partial) {
  if (t < N) *cluster.map_shared_rank(&slots[rank], t) = block_partial;  // into CTA t
  cluster.sync();  // release our slot writes, acquire everyone's
  return cluster_tree_sum<N>(slots);
}

}  // namespace rmsnorm::cuda
