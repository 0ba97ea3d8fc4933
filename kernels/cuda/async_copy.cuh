// Asynchronous global → shared copies (cp.async, sm_80 and later), shared by the staged variants
// (bwd.staged_rows, bwd.cluster_rows, fwd.block_row.staged), and the bulk copies of fwd.bulk_ring
// (sm_90). Kept out of device_common.cuh, whose helpers stay plain CUDA (a host emulation of the
// generic kernels reuses them).
//
// The staging discipline of every user: thread t copies its own chunks of the rows ahead into its
// own shared-memory slots and is the only thread that reads them back, after wait_copies() has
// retired its own copy groups; so the stages need no barrier, and a slot is refilled only by the
// thread that read it (its ordinary shared loads precede the refill in program order).
#pragma once

#include <cstdint>

#include "device_common.cuh"

namespace rmsnorm::cuda {

// 16-byte asynchronous copy global → shared; `src_bytes` < 16 copies that many and zero-fills
// the rest (0: nothing is read, the slot becomes zeros). src 16-byte aligned.
__device__ __forceinline__ void copy16_async(void* dst, const void* src, int src_bytes) {
  const auto d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}
// The same at a 32-bit shared-window address and a 64-bit global one, both held as integers (a
// loop that steps them pays one add each, not the re-formed pointer arithmetic).
__device__ __forceinline__ void copy16_async_at(std::uint32_t dst, std::uint64_t src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void copy4_async(void* dst, const void* src) {
  const auto d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Wait until at most `pending` of this thread's copy groups are still in flight (an immediate
// in PTX: the run-time stage count picks the case).
__device__ __forceinline__ void wait_copies(int pending) {
  switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
  }
}
inline constexpr int kMaxCopyStages = 8;  // wait_copies() covers up to 7 groups pending

// Chunk c of a row (elements [8c, 8c + 8) ∩ [0, D)) into a shared slot, zeros past D.
template <typename T>
__device__ __forceinline__ void stage_chunk(Chunk<T>* slot, const T* row, std::int64_t c, std::int64_t dim) {
  const std::int64_t left = dim - c * kChunk;
  const int valid = left <= 0 ? 0 : (left >= kChunk ? kChunk : static_cast<int>(left));
  const int valid_bytes = valid * static_cast<int>(sizeof(T));
  const unsigned char* src = reinterpret_cast<const unsigned char*>(row + (valid > 0 ? c * kChunk : 0));
#pragma unroll
  for (int w = 0; w < Chunk<T>::kWords; ++w) {
    const int rest = valid_bytes - 16 * w;
    const int part = rest <= 0 ? 0 : (rest >= 16 ? 16 : rest);
    copy16_async(&slot->w[w], part > 0 ? src + 16 * w : src, part);
  }
}

// ---------------------------------------------------------------------------------------------
// Bulk copies (sm_90, the TMA engine): one thread moves a contiguous span global -> shared, and
// its completion is counted in bytes on an mbarrier that the consumers wait on (fwd.bulk_ring).
// ---------------------------------------------------------------------------------------------

// One arrival completes a phase (the producer's), with the bytes its copy announces.
__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
}
// After the barriers' initialization, before a bulk copy may signal them (then a __syncthreads()).
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Orders generic-proxy accesses of shared memory before the async proxy's next accesses there:
// fwd.bulk_ring's writers of a slot (the fused add's h, a partial chunk) pass it before they let
// the slot go, and the thread that refills a slot passes it after its wait for the readers.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// One arrival on `bar`, with release semantics (CTA scope): this thread's earlier accesses of
// shared memory are ordered before whatever follows a wait that sees the phase complete.
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
}
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global `src` to shared `dst`;
// the phase of `bar` completes when they have landed. bytes == 0: the phase completes at once.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
  const std::uint32_t b = shared_address(bar);
  if (bytes == 0) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(b) : "memory");
    return;
  }
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   shared_address(dst)),
               "l"(src), "r"(bytes), "r"(b)
               : "memory");
}
// Wait until the phase of `bar` with this parity has completed (its bytes are visible).
__device__ __forceinline__ void mbarrier_wait(std::uint64_t* bar, unsigned parity) {
  const std::uint32_t b = shared_address(bar);
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(b), "r"(parity)
        : "memory");
  } while (!done);
}

}  // namespace rmsnorm::cuda
