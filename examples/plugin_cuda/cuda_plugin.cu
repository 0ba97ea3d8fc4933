// Device kernels through the plugin ABI, one source for three libraries:
//   librmsnorm_cuda_example_plugin.so (table "cuda_example")
//     correct            one block per row, a 256-thread tree reduction, f32/f16/bf16, forward and fused add
//     first_4096         the same, but rows past the first 4096 are never written (a grid capped at 4096)
//   librmsnorm_cuda_untrusted_plugin.so (table "cuda_untrusted", RMSNORM_EXAMPLE_UNTRUSTED): one
//     trick each to pass tests without being right (docs/certifying-your-kernel.md); all must FAIL
//   librmsnorm_cuda_faulty_plugin.so (table "cuda_faulty", RMSNORM_EXAMPLE_FAULTY): a kernel that
//     writes through a null pointer and leaves the context broken; certify reports the crash
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "rmsnorm/plugin.h"

namespace {

constexpr int kThreads = 256;
constexpr int kTreeDepth = 8;  // log2(kThreads)

__device__ float load(const void* p, int t, long long i) {
  if (t == RMSNORM_F16) return __half2float(static_cast<const __half*>(p)[i]);
  if (t == RMSNORM_BF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
__device__ void store(void* p, int t, long long i, float v) {
  if (t == RMSNORM_F16) static_cast<__half*>(p)[i] = __float2half_rn(v);
  else if (t == RMSNORM_BF16) static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  else static_cast<float*>(p)[i] = v;
}
__device__ float round_to(float v, int t) {
  if (t == RMSNORM_F16) return __half2float(__float2half_rn(v));
  if (t == RMSNORM_BF16) return __bfloat162float(__float2bfloat16_rn(v));
  return v;
}

struct Tricks {
  long long cols = -1;          // columns written per row (all when < 0)
  int atomic_sum = 0;           // the row sum by float atomics: the order varies run to run
  int write_past_end = 0;       // one element past the last row of y
  int write_input = 0;          // x·r left in x
  int null_write = 0;           // a write through a null pointer
};

// Each row: thread k sums elements k, k + 256, ... in sequence; the partials meet in a tree.
__global__ void rmsnorm_rows(rmsnorm_forward_args a, Tricks t) {
  __shared__ float partial[kThreads];
  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const long long xo = r * a.x.stride, oo = r * a.o.stride, yo = r * a.y.stride;
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < a.dim; j += kThreads) {
      float v = load(a.x.data, a.x.dtype, xo + j);
      if (a.o.data) {
        v = round_to(v + load(a.o.data, a.o.dtype, oo + j), a.x.dtype);
        store(a.x.data, a.x.dtype, xo + j, v);
      }
      acc += v * v;
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    if (t.atomic_sum) {
      if (threadIdx.x == 0) partial[0] = 0.0f;
      __syncthreads();
      atomicAdd(&partial[0], acc);
      __syncthreads();
    } else {
      for (int w = kThreads / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
        __syncthreads();
      }
    }
    if (t.null_write && r > 0 && threadIdx.x == 0) *static_cast<volatile float*>(nullptr) = 1.0f;
    const float rs = 1.0f / sqrtf(partial[0] / static_cast<float>(a.dim) + a.eps);
    __syncthreads();
    if (threadIdx.x == 0 && a.rstd) a.rstd[r] = rs;
    const long long cols = t.cols >= 0 && t.cols < a.dim ? t.cols : a.dim;
    for (long long j = threadIdx.x; j < cols; j += kThreads) {
      const float v = load(a.x.data, a.x.dtype, xo + j);  // the new residual under the fused add
      const float w = a.convention == RMSNORM_NO_WEIGHT ? 1.0f : load(a.g, a.g_dtype, j);
      float y;
      switch (a.convention) {
        case RMSNORM_LLAMA: y = round_to(round_to(v * rs, a.x.dtype) * w, a.x.dtype); break;
        case RMSNORM_GEMMA: y = v * rs * (1.0f + w); break;
        case RMSNORM_NO_WEIGHT: y = v * rs; break;
        default: y = v * rs * w;
      }
      store(a.y.data, a.y.dtype, yo + j, y);
    }
    __syncthreads();
    if (t.write_input && !a.o.data && a.x.data != a.y.data)
      for (long long j = threadIdx.x; j < a.dim; j += kThreads)
        store(a.x.data, a.x.dtype, xo + j, load(a.x.data, a.x.dtype, xo + j) * rs);
    if (t.write_past_end && r == a.rows - 1 && threadIdx.x == 0) store(a.y.data, a.y.dtype, yo + a.dim, 0.0f);
  }
}

int32_t launch(const rmsnorm_forward_args* a, char* message, size_t size, long long max_blocks, Tricks t = {}) {
  if (a->quant != RMSNORM_QUANT_NONE) {
    std::snprintf(message, size, "no FP8 output");
    return RMSNORM_STATUS_UNSUPPORTED;
  }
  if (a->rows == 0) return RMSNORM_STATUS_OK;  // the contract's no-op; a grid of 0 blocks is an error
  const long long blocks = a->rows < max_blocks ? a->rows : max_blocks;
  rmsnorm_rows<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(a->stream)>>>(*a, t);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    std::snprintf(message, size, "launch: %s", cudaGetErrorString(e));
    return RMSNORM_STATUS_LAUNCH_FAILED;
  }
  return RMSNORM_STATUS_OK;
}

// In-place under the fused add: y may alias o, which the second pass no longer reads.
int32_t correct(const rmsnorm_forward_args* a, char* m, size_t n) { return launch(a, m, n, 65535); }
// Only the first 4096 rows reach the kernel: a grid sized for the rows a test usually has.
int32_t first_4096(const rmsnorm_forward_args* a, char* m, size_t n) {
  rmsnorm_forward_args head = *a;
  if (head.rows > 4096) head.rows = 4096;
  return launch(&head, m, n, 4096);
}

int32_t tree_shape(int64_t n, int64_t* per_thread, int32_t* depth) {
  *per_thread = n < 1 ? 1 : (n + kThreads - 1) / kThreads;
  *depth = kTreeDepth;
  return 0;
}

constexpr uint32_t kOps = (1u << RMSNORM_OP_FORWARD) | (1u << RMSNORM_OP_ADD_FORWARD);
constexpr uint32_t kTypes = (1u << RMSNORM_F32) | (1u << RMSNORM_F16) | (1u << RMSNORM_BF16);

constexpr rmsnorm_plugin_kernel kernel(const char* name, const char* what, rmsnorm_forward_fn fn) {
  return {name, what, kOps, RMSNORM_MEMORY_DEVICE, kTypes, 0, 0, 0, 0, 0, 0, tree_shape, nullptr, fn, nullptr, nullptr};
}

#if defined(RMSNORM_EXAMPLE_UNTRUSTED)
int32_t writes_nothing(const rmsnorm_forward_args*, char*, size_t) { return RMSNORM_STATUS_OK; }
// Right only at R a power of two and D a multiple of 128: elsewhere the largest such block.
int32_t common_sizes_only(const rmsnorm_forward_args* a, char* m, size_t n) {
  rmsnorm_forward_args head = *a;
  long long rows = 1;
  while (rows * 2 <= a->rows) rows *= 2;
  head.rows = a->rows == 0 ? 0 : rows;
  Tricks t;
  t.cols = a->dim >= 128 ? a->dim / 128 * 128 : a->dim;
  return launch(&head, m, n, 65535, t);
}
// Hands back the last outputs when the shape repeats (a device-to-device copy).
struct {
  long long rows = -1, dim = -1, stride = -1;
  int dtype = -1, convention = -1;
  void* y = nullptr;
  float* rstd = nullptr;
} shape_cache;
int32_t caches_by_shape(const rmsnorm_forward_args* a, char* m, size_t n) {
  const size_t elem = a->y.dtype == RMSNORM_F32 ? 4 : 2;
  const size_t bytes = a->rows ? static_cast<size_t>((a->rows - 1) * a->y.stride + a->dim) * elem : 0;
  const cudaStream_t s = static_cast<cudaStream_t>(a->stream);
  const size_t rbytes = static_cast<size_t>(a->rows) * sizeof(float);
  if (shape_cache.y && !a->o.data && shape_cache.rows == a->rows && shape_cache.dim == a->dim &&
      shape_cache.stride == a->y.stride && shape_cache.dtype == a->y.dtype && shape_cache.convention == a->convention) {
    cudaMemcpyAsync(a->y.data, shape_cache.y, bytes, cudaMemcpyDeviceToDevice, s);
    if (a->rstd) cudaMemcpyAsync(a->rstd, shape_cache.rstd, rbytes, cudaMemcpyDeviceToDevice, s);
    return RMSNORM_STATUS_OK;
  }
  const int32_t st = launch(a, m, n, 65535);
  if (st != RMSNORM_STATUS_OK || a->o.data || bytes == 0 || !a->rstd) return st;
  cudaFree(shape_cache.y);
  cudaFree(shape_cache.rstd);
  shape_cache.y = nullptr;
  shape_cache.rstd = nullptr;
  if (cudaMalloc(&shape_cache.y, bytes) != cudaSuccess || cudaMalloc(&shape_cache.rstd, rbytes) != cudaSuccess) {
    shape_cache.y = nullptr;
    return st;
  }
  cudaMemcpyAsync(shape_cache.y, a->y.data, bytes, cudaMemcpyDeviceToDevice, s);
  cudaMemcpyAsync(shape_cache.rstd, a->rstd, rbytes, cudaMemcpyDeviceToDevice, s);
  shape_cache.rows = a->rows;
  shape_cache.dim = a->dim;
  shape_cache.stride = a->y.stride;
  shape_cache.dtype = a->y.dtype;
  shape_cache.convention = a->convention;
  return st;
}
int32_t writes_outside(const rmsnorm_forward_args* a, char* m, size_t n) {
  Tricks t;
  t.write_past_end = 1;
  return launch(a, m, n, 65535, t);
}
int32_t writes_inputs(const rmsnorm_forward_args* a, char* m, size_t n) {
  Tricks t;
  t.write_input = 1;
  return launch(a, m, n, 65535, t);
}
int32_t nondeterministic(const rmsnorm_forward_args* a, char* m, size_t n) {
  Tricks t;
  t.atomic_sum = 1;
  return launch(a, m, n, 65535, t);
}
const rmsnorm_plugin_kernel kKernels[] = {
    kernel("writes_nothing", "returns success, writes nothing", writes_nothing),
    kernel("common_sizes_only", "right only at R a power of two and D a multiple of 128", common_sizes_only),
    kernel("caches_by_shape", "hands back the last outputs when the shape repeats", caches_by_shape),
    kernel("writes_outside", "writes one element past the last row of y", writes_outside),
    kernel("writes_inputs", "leaves x*r in its input x", writes_inputs),
    kernel("nondeterministic", "the row sum by float atomics", nondeterministic),
};
const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "cuda_untrusted", 6, kKernels};
#elif defined(RMSNORM_EXAMPLE_FAULTY)
int32_t null_write(const rmsnorm_forward_args* a, char* m, size_t n) {
  Tricks t;
  t.null_write = 1;
  return launch(a, m, n, 65535, t);
}
const rmsnorm_plugin_kernel kKernels[] = {kernel("null_write", "writes through a null pointer past row 0", null_write)};
const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "cuda_faulty", 1, kKernels};
#else
const rmsnorm_plugin_kernel kKernels[] = {
    kernel("correct", "one block per row, 256-thread tree", correct),
    kernel("first_4096", "as correct, but rows past the first 4096 are never written", first_4096),
};
const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "cuda_example", 2, kKernels};
#endif

}  // namespace

extern "C" RMSNORM_PLUGIN_EXPORT const rmsnorm_plugin* rmsnorm_plugin_v1(void) { return &kPlugin; }
