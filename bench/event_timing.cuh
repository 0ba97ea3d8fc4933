// rmsnorm-bench's timing: a checked CUDA call, and the median time of one call with CUDA events
// behind a stream-holding kernel (the method of docs/performance.md).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define BENCH_CUDA(call)                                                                         \
  do {                                                                                           \
    const cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(2);                                                                              \
    }                                                                                            \
  } while (0)

namespace {

// Keeps the stream busy for `ns` nanoseconds of GPU time while the host queues the timed
// launches behind it: every timed interval then starts when the previous one ends, so it holds
// the GPU's work only, not the host's launch latency (a few µs: ~10 % of a 2^25-element forward).
__global__ void hold_stream_kernel(unsigned long long ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

// Median time of one call in µs. Each timed call is bracketed by its own pair of events, all of
// them queued behind hold_stream_kernel (long enough for the host to queue every call), then
// read after one synchronization. With `graph`, a call is one replay of a CUDA graph of
// `per_graph` launches, reported per launch.
template <typename F>
double time_us(F&& launch, int sets, int iters, bool graph, cudaStream_t s) {
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(iters));
  for (cudaEvent_t& e : ev) BENCH_CUDA(cudaEventCreate(&e));
  const int per_graph = graph ? std::max(32, sets) : 1;  // every buffer set appears in the graph
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  if (graph) {
    BENCH_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < per_graph; ++i) launch(i % sets);
    BENCH_CUDA(cudaStreamEndCapture(s, &g));
    BENCH_CUDA(cudaGraphInstantiate(&ge, g, 0));
    for (int w = 0; w < 3; ++w) BENCH_CUDA(cudaGraphLaunch(ge, s));
  } else {
    for (int w = 0; w < std::max(3, sets); ++w) launch(w % sets);
  }
  BENCH_CUDA(cudaStreamSynchronize(s));
  // 50 µs of queueing time per timed call is far more than a launch costs the host.
  hold_stream_kernel<<<1, 1, 0, s>>>(50000ull * static_cast<unsigned long long>(iters) + 200000ull);
  BENCH_CUDA(cudaGetLastError());
  for (int it = 0; it < iters; ++it) {
    BENCH_CUDA(cudaEventRecord(ev[2 * it], s));
    if (graph) {
      BENCH_CUDA(cudaGraphLaunch(ge, s));
    } else {
      launch(it % sets);
    }
    BENCH_CUDA(cudaEventRecord(ev[2 * it + 1], s));
  }
  BENCH_CUDA(cudaStreamSynchronize(s));
  std::vector<float> ms;
  for (int it = 0; it < iters; ++it) {
    float t = 0;
    BENCH_CUDA(cudaEventElapsedTime(&t, ev[2 * it], ev[2 * it + 1]));
    ms.push_back(t / static_cast<float>(per_graph));
  }
  if (graph) {
    BENCH_CUDA(cudaGraphExecDestroy(ge));
    BENCH_CUDA(cudaGraphDestroy(g));
  }
  for (cudaEvent_t e : ev) BENCH_CUDA(cudaEventDestroy(e));
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return 1000.0 * ms[ms.size() / 2];
}

}  // namespace
