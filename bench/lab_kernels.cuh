// rmsnorm-bench --lab: the lecture's two baselines for the forward y = x·r·g, bf16 x, g and y,
// r = 1/sqrt(mean(x²) + eps) in fp32.
//
// eager: Hugging Face LlamaRMSNorm as PyTorch runs it, one kernel per operation, each result in
// global memory. Bytes per element (bf16 2, fp32 4; per-row values not counted):
//   x32  = float(x)         R2 W4      sq   = x32²        R4 W4      var = mean(sq)  R4
//   var += eps, r = rsqrt(var): per row                               xn  = x32·r     R4 W4
//   xn16 = bf16(xn)         R4 W2      y    = g·xn16      R2 W2      36 bytes in 8 launches
// fused: one block of 256 threads per row, the sum of squares in fp32 (warp shuffles, then
// shared memory), y = bf16(x·r·g): x read once and y written once from DRAM, 4 bytes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace lab {

inline constexpr int kThreads = 256;

// A grid for `n` elements, one per thread; the kernels stride over whatever it does not cover.
inline unsigned grid_for(std::int64_t n) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, std::int64_t{1} << 30));
}

__device__ inline std::int64_t first_index() {
  return blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

__global__ void to_float_kernel(const __nv_bfloat16* x, float* x32, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) x32[i] = __bfloat162float(x[i]);
}

__global__ void square_kernel(const float* x32, float* sq, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) sq[i] = x32[i] * x32[i];
}

// The sum of the block's `v`, in every thread. `partial` holds one float per warp.
__device__ inline float block_sum(float v, float* partial) {
  for (int off = 16; off >= 1; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < kThreads / 32 ? partial[lane] : 0.0f;
  for (int off = 16; off >= 1; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// One block per row.
__global__ void __launch_bounds__(kThreads) row_mean_kernel(const float* sq, float* var, std::int64_t dim) {
  __shared__ float partial[kThreads / 32];
  const float* row = sq + blockIdx.x * dim;
  float s = 0.0f;
  for (std::int64_t c = threadIdx.x; c < dim; c += kThreads) s += row[c];
  s = block_sum(s, partial);
  if (threadIdx.x == 0) var[blockIdx.x] = s / static_cast<float>(dim);
}

__global__ void add_eps_kernel(float* var, std::int64_t rows, float eps) {
  for (std::int64_t i = first_index(); i < rows; i += grid_stride()) var[i] += eps;
}

__global__ void rsqrt_kernel(const float* var, float* r, std::int64_t rows) {
  for (std::int64_t i = first_index(); i < rows; i += grid_stride()) r[i] = rsqrtf(var[i]);
}

// r broadcast along the row: blockIdx.y strides over the rows, so no element needs a division.
__global__ void scale_rows_kernel(const float* x32, const float* r, float* xn, std::int64_t rows, std::int64_t dim) {
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y)
    for (std::int64_t c = first_index(); c < dim; c += grid_stride()) xn[row * dim + c] = x32[row * dim + c] * r[row];
}

__global__ void to_bf16_kernel(const float* xn, __nv_bfloat16* xn16, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) xn16[i] = __float2bfloat16_rn(xn[i]);
}

// bf16 · bf16 as PyTorch computes it: the product in fp32, rounded once to bf16.
__global__ void weight_kernel(const __nv_bfloat16* g, const __nv_bfloat16* xn16, __nv_bfloat16* y, std::int64_t rows,
                              std::int64_t dim) {
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y)
    for (std::int64_t c = first_index(); c < dim; c += grid_stride())
      y[row * dim + c] = __float2bfloat16_rn(__bfloat162float(g[c]) * __bfloat162float(xn16[row * dim + c]));
}

// The eager chain's intermediates: [R, D] fp32 x32, sq, xn and bf16 xn16; [R] var and r.
struct EagerScratch {
  float *x32, *sq, *xn, *var, *r;
  __nv_bfloat16* xn16;
};

inline void eager_forward(const __nv_bfloat16* x, const __nv_bfloat16* g, __nv_bfloat16* y, std::int64_t rows,
                          std::int64_t dim, float eps, const EagerScratch& s, cudaStream_t st) {
  const std::int64_t n = rows * dim;
  const dim3 per_row(grid_for(dim), static_cast<unsigned>(std::min<std::int64_t>(rows, 65535)));
  to_float_kernel<<<grid_for(n), kThreads, 0, st>>>(x, s.x32, n);
  square_kernel<<<grid_for(n), kThreads, 0, st>>>(s.x32, s.sq, n);
  row_mean_kernel<<<static_cast<unsigned>(rows), kThreads, 0, st>>>(s.sq, s.var, dim);
  add_eps_kernel<<<grid_for(rows), kThreads, 0, st>>>(s.var, rows, eps);
  rsqrt_kernel<<<grid_for(rows), kThreads, 0, st>>>(s.var, s.r, rows);
  scale_rows_kernel<<<per_row, kThreads, 0, st>>>(s.x32, s.r, s.xn, rows, dim);
  to_bf16_kernel<<<grid_for(n), kThreads, 0, st>>>(s.xn, s.xn16, n);
  weight_kernel<<<per_row, kThreads, 0, st>>>(g, s.xn16, y, rows, dim);
}

// The second pass reads the row again, from L1 or L2: while the rows of the resident blocks
// (2·D bytes each) fit in the L2, DRAM sees x once.
__global__ void __launch_bounds__(kThreads)
    fused_kernel(const __nv_bfloat16* x, const __nv_bfloat16* g, __nv_bfloat16* y, std::int64_t dim, float eps) {
  __shared__ float partial[kThreads / 32];
  const __nv_bfloat16* xr = x + blockIdx.x * dim;
  __nv_bfloat16* yr = y + blockIdx.x * dim;
  float s = 0.0f;
  for (std::int64_t c = threadIdx.x; c < dim; c += kThreads) {
    const float v = __bfloat162float(xr[c]);
    s += v * v;
  }
  const float r = rsqrtf(block_sum(s, partial) / static_cast<float>(dim) + eps);
  for (std::int64_t c = threadIdx.x; c < dim; c += kThreads)
    yr[c] = __float2bfloat16_rn(__bfloat162float(xr[c]) * r * __bfloat162float(g[c]));
}

inline void fused_forward(const __nv_bfloat16* x, const __nv_bfloat16* g, __nv_bfloat16* y, std::int64_t rows,
                          std::int64_t dim, float eps, cudaStream_t st) {
  fused_kernel<<<static_cast<unsigned>(rows), kThreads, 0, st>>>(x, g, y, dim, eps);
}

}  // namespace lab
