// Which orderings does compute-sanitizer racecheck accept between generic shared-memory reads and
// a bulk copy (cp.async.bulk, the async proxy) into the same buffer? One block of 64 threads
// (two warps); warp 0 reads a 4 KB buffer, warp 1's lane 0 refills it, then everyone reads it.
// Usage: race_probe MODE. Modes:
//   0 bar:    reads; __syncthreads; refill; wait full; reads           (control: ordered)
//   1 mbar:   reads; each warp arrives (release) on `empty`; warp 1 lane 0 waits on it, refills
//   2 none:   reads by warp 0; warp 1 refills at once                    (control: a real race)
//   3 count:  reads; each warp's lane 0 adds to a shared count (relaxed); the second refills
//   4 mbar+count: mode 3 with the arrive on `empty` and the wait (the ring's protocol, session 16)
//   6 mode 1 with a proxy fence (fence.proxy.async) by the refilling thread after its wait
//   7 mode 1 with a proxy fence by every reader before its warp arrives
//   8 mode 4 with the proxy fence after the wait (the ring's protocol, session 16, final)
//   9 every thread arrives on `empty` (64 arrivals), thread 32 waits and refills
//  10 mode 9 with the proxy fence after the wait
//  11 each warp's lane 0 arrives with a count of 32 after __syncwarp (64 a phase)
//   5 bar, old refill: mode 0 with arrive.expect_tx before the copy (main's order)
// Every refill: expect_tx; copy; arrive (release) on `full`; readers wait `full` parity 1.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__device__ __forceinline__ unsigned sa(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void init(std::uint64_t* b, unsigned n) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sa(b)), "r"(n) : "memory"); }
__device__ __forceinline__ void arrive(std::uint64_t* b) { asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(sa(b)) : "memory"); }
__device__ __forceinline__ void wait(std::uint64_t* b, unsigned par) {
  unsigned done = 0;
  do { asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(sa(b)), "r"(par) : "memory"); } while (!done);
}
__device__ __forceinline__ void refill(void* dst, const void* src, unsigned bytes, std::uint64_t* full) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(sa(full)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(full)) : "memory");
  arrive(full);
}
__device__ __forceinline__ void refill_old(void* dst, const void* src, unsigned bytes, std::uint64_t* full) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(full)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(full)) : "memory");
}
__global__ void probe(const uint4* g, uint4* out, int mode) {
  __shared__ alignas(128) uint4 buf[256];
  __shared__ std::uint64_t full, empty;
  __shared__ unsigned count;
  const int t = threadIdx.x, lane = t % 32;
  if (t == 0) { init(&full, 1); init(&empty, mode >= 9 ? 64 : 2); count = 0; asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); refill(buf, g, 4096, &full); }
  __syncthreads();
  wait(&full, 0);
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int i = t; i < 256; i += 64) { uint4 v = buf[i]; acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w; }
  if (mode == 5) {
    __syncthreads();
    if (t == 32) refill_old(buf, g + 256, 4096, &full);
  } else if (mode == 0) {
    __syncthreads();
    if (t == 32) refill(buf, g + 256, 4096, &full);
  } else if (mode == 1) {
    __syncwarp();
    if (lane == 0) arrive(&empty);
    if (t == 32) { wait(&empty, 0); refill(buf, g + 256, 4096, &full); }
  } else if (mode == 6 || mode == 7) {
    __syncwarp();
    if (mode == 7) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncwarp();
    if (lane == 0) arrive(&empty);
    if (t == 32) {
      wait(&empty, 0);
      if (mode == 6) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      refill(buf, g + 256, 4096, &full);
    }
  } else if (mode == 8) {
    __syncwarp();
    if (lane == 0) {
      arrive(&empty);
      if (atomicAdd(&count, 1u) == 1u) { wait(&empty, 0); asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); refill(buf, g + 256, 4096, &full); }
    }
  } else if (mode == 9 || mode == 10) {
    arrive(&empty);  // every thread (empty counts 64 arrivals in these modes)
    if (t == 32) {
      wait(&empty, 0);
      if (mode == 10) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      refill(buf, g + 256, 4096, &full);
    }
  } else if (mode == 11) {
    __syncwarp();
    if (lane == 0) asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], 32;" ::"r"(sa(&empty)) : "memory");
    if (t == 32) { wait(&empty, 0); refill(buf, g + 256, 4096, &full); }
  } else if (mode == 2) {
    if (t == 32) refill(buf, g + 256, 4096, &full);
  } else {
    __syncwarp();
    if (lane == 0) {
      if (mode == 4) arrive(&empty);
      if (atomicAdd(&count, 1u) == 1u) { if (mode == 4) wait(&empty, 0); refill(buf, g + 256, 4096, &full); }
    }
  }
  wait(&full, 1);
  for (int i = t; i < 256; i += 64) { uint4 v = buf[i]; acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w; }
  out[t] = acc;
}
int main(int argc, char** argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 0;
  uint4 *g, *out;
  cudaMalloc(&g, 512 * sizeof(uint4)); cudaMalloc(&out, 64 * sizeof(uint4));
  cudaMemset(g, 1, 512 * sizeof(uint4));
  probe<<<1, 64>>>(g, out, mode);
  cudaError_t e = cudaDeviceSynchronize();
  printf("mode %d: %s\n", mode, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
