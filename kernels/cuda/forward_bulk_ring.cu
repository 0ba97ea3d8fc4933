// Instantiation unit of the forward launcher run_bulk_ring (the product), with its kernel: the
// only unit that sees forward_ring_kernel.cuh.
#include "forward_instances.h"
#include "forward_ring_kernel.cuh"

namespace rmsnorm::cuda::fwd {

// fwd.bulk_ring (forward_ring.cuh): one 1024-thread block per SM on a persistent grid, each
// streaming its rows into a ring of shared-memory slots by bulk copies.
template <Mutant M>
Status run_bulk_ring(const ForwardArgs& a) {
  static_assert(M == Mutant::none, "fwd.bulk_ring carries no mutants");
  return run_path<M>(Path::bulk_ring, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    // The plain forward of held rows (16-bit, no FP8 output) with 16-bit weights asks for the
    // weights staged (H200, bf16, D = 40960-65536, R = 4096-32768: 0.75-0.81 of the copy staged,
    // 0.66-0.77 not). The fused add does not: beside the weights its x and o rings get 3 slots each
    // at D = 65536 (11 and 3 without), and it runs 0.87 staged against 0.88-0.90.
    constexpr bool kHeldForm = sizeof(T) == 2 && !kQ;
    constexpr std::int64_t kStageW = kHeldForm && !kA && sizeof(G) == 2 ? static_cast<std::int64_t>(sizeof(Chunk<G>)) : 0;
    const RingSmem m = bulk_ring_smem(a.dim, static_cast<std::int64_t>(sizeof(Chunk<T>)), kA, smem_cache_budget(1), kStageW);
    auto kernel = fwd_ring_kernel<T, G, kQ, kA, false, false>;
    if constexpr (kHeldForm) {
      if (m.ring.pieces <= kRingHeldPieces) kernel = fwd_ring_kernel<T, G, kQ, kA, true, false>;
      if constexpr (kStageW > 0) {
        if (m.ring.weights) kernel = fwd_ring_kernel<T, G, kQ, kA, true, true>;
      }
    }
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(m.bytes));
    std::int64_t grid = 0;
    if (e == cudaSuccess) e = persistent_grid(kernel, kRingThreads, m.bytes, a.rows, grid);
    if (e != cudaSuccess) {
      result = Status::fail(Status::Code::launch_failed, std::string("fwd.bulk_ring: launch shape: ") + cudaGetErrorString(e));
      return;
    }
    kernel<<<grid_for(grid), kRingThreads, m.bytes, s>>>(p, m.ring);
  });
}

}  // namespace rmsnorm::cuda::fwd

template rmsnorm::Status rmsnorm::cuda::fwd::run_bulk_ring<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
