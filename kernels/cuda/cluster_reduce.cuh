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

// This CTA's partial into slot [rank] of every CTA of the cluster (threads t < N write one each).
template <int N>
__device__ __forceinline__ void cluster_put(cooperative_groups::cluster_group& cluster, float* slots, int rank, int t,
                                            float block_partial) {
  if (t < N) *cluster.map_shared_rank(&slots[rank], t) = block_partial;  // into CTA t
}

// Every thread of every CTA calls it with its CTA's partial (the same value in all its threads);
// returns the cluster's sum. `slots` is this CTA's array of N floats for this row's parity.
template <int N>
__device__ __forceinline__ float cluster_sum(cooperative_groups::cluster_group& cluster, float* slots, int rank,
                                             int t, float block_partial) {
  cluster_put<N>(cluster, slots, rank, t, block_partial);
  cluster.sync();  // release our slot writes, acquire everyone's
  return cluster_tree_sum<N>(slots);
}

// The cluster barrier in two halves (sm_90 barrier.cluster): arrive releases this thread's
// earlier writes (the slot writes) and reads; wait returns once every thread of every CTA has
// arrived, and acquires their writes. Between them a CTA may do other work (bwd.staged_cluster
// reduces its next row there). Every thread calls both, alternately, the same number of times.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

}  // namespace rmsnorm::cuda
