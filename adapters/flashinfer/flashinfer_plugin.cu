// FlashInfer's RMSNorm kernels behind the plugin ABI (include/rmsnorm/plugin.h), so that
//   rmsnorm-cert certify --plugin libflashinfer_norm_plugin.so 'plugin.flashinfer.*'
// judges them like any in-tree variant. Table "flashinfer", two kernels:
//   rmsnorm        flashinfer::norm::RMSNorm (forward) and FusedAddRMSNorm (add_forward), standard
//   gemma_rmsnorm  flashinfer::norm::GemmaRMSNorm and GemmaFusedAddRMSNorm, y = x·r·(1+g)
// f16 and bf16 rows (FlashInfer's own binding, csrc/norm.cu, dispatches these two only), g of x's
// type, 16-byte aligned rows and weight, no rstd (RMSNORM_OPS_NO_RSTD), no FP8 output.
//
// This file is the adapter only: FlashInfer's headers are not part of this repository and are
// never committed. Build (adapters/flashinfer/CMakeLists.txt) with the folder that holds
// flashinfer/norm.cuh, e.g. the headers copied out of the flashinfer-python wheel
// (flashinfer/data/include) into .deps/flashinfer/include:
//   cmake -B build -DFLASHINFER_INCLUDE_DIR=$PWD/.deps/flashinfer/include && cmake --build build
// or by hand:
//   nvcc -std=c++17 -O3 -DNDEBUG -use_fast_math -DENABLE_BF16 -DENABLE_FP8 --expt-relaxed-constexpr
//        -arch=sm_90 -shared -Xcompiler=-fPIC,-fvisibility=hidden -Iinclude -isystem .deps/flashinfer/include
//        adapters/flashinfer/flashinfer_plugin.cu -o libflashinfer_norm_plugin.so      (one line)
// (-use_fast_math, ENABLE_BF16 and ENABLE_FP8 are the flags FlashInfer's JIT builds its norm
// module with: flashinfer/jit/core.py and jit/norm.py; the certificate then judges what it ships.)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <flashinfer/norm.cuh>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rmsnorm/plugin.h"

// Flags of the ABI (plugin.h); defined here too for a header that predates them.
#ifndef RMSNORM_OPS_NO_RSTD
#define RMSNORM_OPS_NO_RSTD (1u << 31)
#endif
#ifndef RMSNORM_OPS_SAME_TYPE_WEIGHTS
#define RMSNORM_OPS_SAME_TYPE_WEIGHTS (1u << 30)
#endif

namespace {

// FlashInfer's enable_pdl, as this project launches its own kernels (docs/launch-forms.md,
// programmatic dependent launch): on unless RMSNORM_PDL=0, so that a benchmark of both sides
// compares them in the same launch mode.
bool pdl_launches() {
  static const bool on = [] {
    const char* e = std::getenv("RMSNORM_PDL");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }();
  return on;
}

// FlashInfer's launch geometry (norm.cuh, RMSNorm / FusedAddRMSNorm and their Gemma forms):
//   vec_size   = gcd(16 / sizeof(T), d) = gcd(8, d) for f16/bf16   elements per vector load
//   block_size = min(1024, d / vec_size); num_warps = ceil(block_size / 32); threads = 32·num_warps
// Its vector loads take vec_size·2 = gcd(16, 2d) bytes, so 16-byte rows and weight serve every D.
constexpr uint32_t kAlignment = 16;
constexpr int64_t kMaxDimForward = int64_t{1} << 24;  // the contract's D limit; the plain kernel has none
// The fused add keeps the fp32 row in dynamic shared memory: (ceil(num_warps/4)·4 + d)·4 bytes.
// At d ≥ 8192 num_warps is 32, so sm_90's 227 KiB opt-in (232448 B) holds d ≤ 232448/4 − 32.
// One table entry carries both ops, so this bounds the declared range of each kernel. A device with
// less shared memory declines the wider rows at run time (UNSUPPORTED, with the reason).
constexpr int64_t kMaxDimFusedSm90 = 232448 / 4 - 32;  // 58080

struct Geometry {
  uint32_t vec, num_warps, threads;
};
constexpr uint32_t gcd8(int64_t d) { return d % 8 == 0 ? 8 : d % 4 == 0 ? 4 : d % 2 == 0 ? 2 : 1; }
Geometry geometry(int64_t d) {
  Geometry g{};
  g.vec = gcd8(d);
  const int64_t block = d / g.vec < 1024 ? d / g.vec : 1024;
  g.num_warps = static_cast<uint32_t>((block + 31) / 32);
  g.threads = 32 * g.num_warps;
  return g;
}
size_t fused_smem_bytes(int64_t d) {
  const Geometry g = geometry(d);
  return (static_cast<size_t>((g.num_warps + 3) / 4) * 4 + static_cast<size_t>(d)) * sizeof(float);
}

// The row sum of squares (norm.cuh RMSNormKernel lines 76-117, FusedAddRMSNormKernel 438-493):
// thread t adds, into one fp32 sum_sq, VEC_SIZE squares per round for rounds = ceil(d/(vec·threads))
// rounds, in sequence: k = rounds·vec terms. Then a 5-step xor-shuffle butterfly within each warp
// (depth 5 for lane 0), lane 0 of each warp parks its sum in shared memory, and warp 0 runs the same
// butterfly over num_warps partials padded with exact zeros, so only ceil(log2(num_warps)) levels
// round. d = 5 + ceil(log2(num_warps)): 5 (one warp) to 10 (32 warps). Padded lanes add exact zeros.
int32_t row_shape(int64_t n, int64_t* per_thread, int32_t* tree_depth) {
  if (n < 1) n = 1;
  const Geometry g = geometry(n);
  const int64_t span = static_cast<int64_t>(g.vec) * g.threads;
  const int64_t rounds = (n + span - 1) / span;
  int32_t cross = 0;
  while ((1u << cross) < g.num_warps) ++cross;
  *per_thread = rounds * g.vec;
  *tree_depth = 5 + cross;
  return 0;
}

int32_t fail(char* message, size_t size, int32_t status, const char* what) {
  if (message && size) std::snprintf(message, size, "%s", what);
  return status;
}

int32_t cuda_failed(char* message, size_t size, const char* where, cudaError_t e) {
  if (message && size) std::snprintf(message, size, "%s: %s", where, cudaGetErrorString(e));
  return RMSNORM_STATUS_LAUNCH_FAILED;
}

bool aligned(const void* p, int64_t stride) {
  return reinterpret_cast<uintptr_t>(p) % kAlignment == 0 && (static_cast<uint64_t>(stride) * 2) % kAlignment == 0;
}

// FlashInfer indexes rows with uint32 arithmetic (bx * stride + column, norm.cuh lines 86, 134,
// 451-452): a launch may only reach element (rows − 1)·stride + d − 1 < 2^32 of each tensor. Longer
// tensors go in several launches, each from its own base pointer; rows are independent.
int64_t rows_per_launch(int64_t dim, int64_t stride) {
  const int64_t room = (int64_t{1} << 32) - dim;  // (rows − 1)·stride ≤ room
  const int64_t rows = room / stride + 1;
  return rows < 0x7fffffff ? rows : 0x7fffffff;  // gridDim.x
}
uint32_t stride32(int64_t stride) { return stride <= 0xffffffffLL ? static_cast<uint32_t>(stride) : 0u; }

// o into y, row by row (both strides), on the caller's stream.
cudaError_t copy_rows(void* y, int64_t y_stride, const void* o, int64_t o_stride, int64_t rows, int64_t dim,
                      cudaStream_t s) {
  const size_t width = static_cast<size_t>(dim) * 2, dp = static_cast<size_t>(y_stride) * 2,
               sp = static_cast<size_t>(o_stride) * 2;
  constexpr size_t kMaxPitch = 0x7fffffff;  // cudaDevAttrMaxPitch on current devices
  if (dp <= kMaxPitch && sp <= kMaxPitch)
    return cudaMemcpy2DAsync(y, dp, o, sp, width, static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, s);
  for (int64_t r = 0; r < rows; ++r) {
    const cudaError_t e = cudaMemcpyAsync(static_cast<char*>(y) + r * dp, static_cast<const char*>(o) + r * sp,
                                          width, cudaMemcpyDeviceToDevice, s);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

template <typename T, bool kGemma>
int32_t run(const rmsnorm_forward_args* a, char* message, size_t size) {
  const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
  T* const g = static_cast<T*>(const_cast<void*>(a->g));  // FlashInfer takes T*; it never writes it
  const uint32_t d = static_cast<uint32_t>(a->dim);
  const int64_t xs = a->x.stride, ys = a->y.stride;
  const bool add = a->o.data != nullptr;
  const char* who;
  if (add) {
    // Ours: x is the residual stream (h ← RN(x + o)), o the sub-layer output, y the output (y == o
    // or apart). FlashInfer's FusedAddRMSNorm(input, residual): residual += input, input ← norm.
    // So input = y holding o, residual = x.
    if (a->y.data != a->o.data) {
      const cudaError_t e = copy_rows(a->y.data, ys, a->o.data, a->o.stride, a->rows, a->dim, stream);
      if (e != cudaSuccess) return cuda_failed(message, size, "copying o into y", e);
    }
    who = kGemma ? "flashinfer::norm::GemmaFusedAddRMSNorm" : "flashinfer::norm::FusedAddRMSNorm";
  } else {
    // y may be x exactly: each thread re-reads in the second pass only the elements it then writes,
    // after the block's barrier ends the first pass (norm.cuh lines 103-136).
    who = kGemma ? "flashinfer::norm::GemmaRMSNorm" : "flashinfer::norm::RMSNorm";
  }
  const int64_t step_x = rows_per_launch(a->dim, xs), step_y = rows_per_launch(a->dim, ys);
  const int64_t step = step_x < step_y ? step_x : step_y;
  for (int64_t r0 = 0; r0 < a->rows; r0 += step) {
    const uint32_t rows = static_cast<uint32_t>(a->rows - r0 < step ? a->rows - r0 : step);
    T* const x = static_cast<T*>(a->x.data) + r0 * xs;
    T* const y = static_cast<T*>(a->y.data) + r0 * ys;
    // With one row per launch the stride is never used (row 0 only), so a stride past uint32 is moot.
    const uint32_t sx = rows > 1 ? stride32(xs) : d, sy = rows > 1 ? stride32(ys) : d;
    cudaError_t e;
    const bool pdl = pdl_launches();
    if (add)
      e = kGemma ? flashinfer::norm::GemmaFusedAddRMSNorm<T>(y, x, g, rows, d, sy, sx, a->eps, pdl, stream)
                 : flashinfer::norm::FusedAddRMSNorm<T>(y, x, g, rows, d, sy, sx, a->eps, pdl, stream);
    else
      e = kGemma ? flashinfer::norm::GemmaRMSNorm<T>(x, g, y, rows, d, sx, sy, a->eps, pdl, stream)
                 : flashinfer::norm::RMSNorm<T>(x, g, y, rows, d, sx, sy, a->eps, pdl, stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return cuda_failed(message, size, who, e);
    }
    e = cudaGetLastError();
    if (e != cudaSuccess) return cuda_failed(message, size, who, e);
  }
  return RMSNORM_STATUS_OK;
}

template <bool kGemma>
int32_t forward(const rmsnorm_forward_args* a, char* message, size_t size) {
  if (!a) return fail(message, size, RMSNORM_STATUS_INVALID_ARGUMENT, "null arguments");
  if (a->quant != RMSNORM_QUANT_NONE)
    return fail(message, size, RMSNORM_STATUS_UNSUPPORTED, "no FP8 output through this adapter");
  const int32_t want = kGemma ? RMSNORM_GEMMA : RMSNORM_STANDARD;
  if (a->convention != want)
    return fail(message, size, RMSNORM_STATUS_UNSUPPORTED,
                kGemma ? "gemma_rmsnorm computes the gemma convention only" : "rmsnorm computes the standard convention only");
  if (a->rows < 0 || a->dim < 1) return fail(message, size, RMSNORM_STATUS_INVALID_ARGUMENT, "R < 0 or D < 1");
  if (!(a->eps >= 0.0f) || !std::isfinite(a->eps))
    return fail(message, size, RMSNORM_STATUS_INVALID_ARGUMENT, "eps must be finite and >= 0");
  if (a->rows == 0) return RMSNORM_STATUS_OK;
  const bool add = a->o.data != nullptr;
  const int32_t t = a->x.dtype;
  if (t != RMSNORM_F16 && t != RMSNORM_BF16)
    return fail(message, size, RMSNORM_STATUS_UNSUPPORTED, "FlashInfer's RMSNorm takes f16 and bf16 rows only");
  if (a->y.dtype != t || (add && a->o.dtype != t))
    return fail(message, size, RMSNORM_STATUS_INVALID_ARGUMENT, "y and o must have x's type");
  if (a->g_dtype != t)
    return fail(message, size, RMSNORM_STATUS_UNSUPPORTED, "FlashInfer takes the weight in x's type only (no fp32 g)");
  if (!a->x.data || !a->y.data || !a->g)
    return fail(message, size, RMSNORM_STATUS_INVALID_ARGUMENT, "null x, y or g");
  if (a->x.stride < a->dim || a->y.stride < a->dim || (add && a->o.stride < a->dim))
    return fail(message, size, RMSNORM_STATUS_INVALID_ARGUMENT, "a row stride below D");
  if (a->dim > (add ? kMaxDimFusedSm90 : kMaxDimForward))
    return fail(message, size, RMSNORM_STATUS_UNSUPPORTED,
                add ? "the fused add takes D <= 58080 (its fp32 row in shared memory)" : "D > 2^24");
  if (add) {
    int device = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (e != cudaSuccess) return cuda_failed(message, size, "querying shared memory per block", e);
    if (fused_smem_bytes(a->dim) > static_cast<size_t>(optin)) {
      if (message && size)
        std::snprintf(message, size, "the fused add needs %zu bytes of shared memory at D = %lld; this device has %d",
                      fused_smem_bytes(a->dim), static_cast<long long>(a->dim), optin);
      return RMSNORM_STATUS_UNSUPPORTED;
    }
  }
  if (!aligned(a->x.data, a->x.stride) || !aligned(a->y.data, a->y.stride) || (add && !aligned(a->o.data, a->o.stride)) ||
      reinterpret_cast<uintptr_t>(a->g) % kAlignment != 0)
    return fail(message, size, RMSNORM_STATUS_MISALIGNED, "FlashInfer's vector loads need 16-byte aligned rows and weight");
  // The exact aliases the contract allows; anything else overlapping is the harness's to refuse.
  if (!add && a->y.data == a->x.data && a->y.stride != a->x.stride)
    return fail(message, size, RMSNORM_STATUS_BAD_OVERLAP, "y aliases x with another stride");
  if (add && a->y.data == a->o.data && a->y.stride != a->o.stride)
    return fail(message, size, RMSNORM_STATUS_BAD_OVERLAP, "y aliases o with another stride");
  // rstd stays untouched: FlashInfer keeps no r (the table says RMSNORM_OPS_NO_RSTD).
  return t == RMSNORM_F16 ? run<half, kGemma>(a, message, size) : run<nv_bfloat16, kGemma>(a, message, size);
}

constexpr uint32_t kOps = (1u << RMSNORM_OP_FORWARD) | (1u << RMSNORM_OP_ADD_FORWARD) | RMSNORM_OPS_NO_RSTD |
                          RMSNORM_OPS_SAME_TYPE_WEIGHTS;
constexpr uint32_t kTypes = (1u << RMSNORM_F16) | (1u << RMSNORM_BF16);

const rmsnorm_plugin_kernel kKernels[] = {
    {"rmsnorm", "FlashInfer norm::RMSNorm / FusedAddRMSNorm: one block per row, vectors of gcd(8, D), warp shuffles",
     kOps, RMSNORM_MEMORY_DEVICE, kTypes, 1u << RMSNORM_STANDARD, 1u << RMSNORM_QUANT_NONE, 1, kMaxDimFusedSm90,
     kAlignment, 0, row_shape, nullptr, forward<false>, nullptr, nullptr},
    {"gemma_rmsnorm", "FlashInfer norm::GemmaRMSNorm / GemmaFusedAddRMSNorm: y = x*r*(1+g), as rmsnorm otherwise",
     kOps, RMSNORM_MEMORY_DEVICE, kTypes, 1u << RMSNORM_GEMMA, 1u << RMSNORM_QUANT_NONE, 1, kMaxDimFusedSm90,
     kAlignment, 0, row_shape, nullptr, forward<true>, nullptr, nullptr},
};
const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "flashinfer", 2, kKernels};

}  // namespace

extern "C" RMSNORM_PLUGIN_EXPORT const rmsnorm_plugin* rmsnorm_plugin_v1(void) { return &kPlugin; }
