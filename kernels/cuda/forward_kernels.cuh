// The forward family's kernels (plain, fused add, fused FP8 quantization, both fusions).
//
// Maths (docs/contract.md#semantics), per row:
//   h = x, or h = RN_x(x + o) written back to x (fused add);
//   Σ = Σ_j h_j² in fp32;  r = rsqrtf(Σ / D + eps)  (a true division by D, one rounding);
//   y_j = RN_out(h_j · r · w_j), w_j = g_j (standard), 1 + g_j (gemma), none (no_weight), or the
//   llama double rounding RN(RN(h·r)·g);  FP8: q_j = RN_fp8_sat(y_j / s) from the fp32 y.
//
// Three kernels, each a template over the storage types, the two fusions and a Mutant switch:
// - fwd_regs_kernel: the row held in registers. LANES > 0 gives a sub-warp of LANES threads per
//   row (warp_row, D ≤ 1024); LANES == 0 gives one block per row with blockDim.x threads
//   (block_row). ITERS chunks per thread, compile-time so the arrays stay in registers. x is read
//   once; all loads of a thread are issued before the first use.
// - fwd_smem_kernel: 1024 threads per row; the row is cached in dynamic shared memory as far as it
//   fits, the rest re-read from global memory (L2) in the second pass. Any D up to 2^24.
// - fwd_element_kernel: the row in registers, 16 elements per thread with coalesced element
//   accesses, any alignment (odd D, odd strides, misaligned bases), D ≤ 8192. x read once.
// - fwd_scalar_kernel: element-wise loads, any alignment; two passes over global memory.
// Thread mapping is a function of D only (never of R, of the dtype or of the row index), so the
// reduction order — and every output bit — of a row is the same whatever else is in the batch.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "async_copy.cuh"
#include "device_common.cuh"
#include "rmsnorm/formats.h"
#include "rmsnorm/validate.h"

namespace rmsnorm::cuda::fwd {

// Plain-data kernel arguments, built once by the launcher from ForwardArgs.
struct Params {
  const void* x = nullptr;  // input rows (the residual h under fused add)
  void* x_out = nullptr;    // fused add: where RN(x + o) is written back (= x)
  const void* o = nullptr;
  void* y = nullptr;
  const void* g = nullptr;
  float* rstd = nullptr;
  float* scale = nullptr;
  std::int64_t rows = 0, dim = 0;
  std::int64_t x_stride = 0, o_stride = 0, y_stride = 0;
  std::int64_t groups = 0;  // ceil(D / kQuantGroup)
  float eps = 0;
  float fp8_max = 0;        // traits_of(y type).max_finite
  float scale_floor = 0;    // Fp8Quant::scale_floor(y type)
  int convention = 0;       // Convention
  int quant = 0;            // Quant
  int fp8_fmt = 0;          // __nv_fp8_interpretation_t
};

// A device feature the Hopper-only variants need (an attribute at least `least`), cached per
// device in the caller's `cached` (0 unknown, 1 yes, 2 no): no_device without a device (a CPU-only
// machine: the check is not judged there), unsupported with the reason `missing` without it.
inline constexpr int kFeatureCacheDevices = 64;
inline Status device_feature_status(int (&cached)[kFeatureCacheDevices], cudaDeviceAttr attr, int least,
                                    const char* what, const char* missing) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::fail(Status::Code::no_device, std::string("no CUDA device to ") + what);
  }
  int& c = cached[dev >= 0 && dev < kFeatureCacheDevices ? dev : 0];
  if (c == 0) {
    int value = 0;
    c = cudaDeviceGetAttribute(&value, attr, dev) == cudaSuccess && value >= least ? 1 : 2;
    (void)cudaGetLastError();
  }
  if (c == 2) return Status::fail(Status::Code::unsupported, missing);
  return Status::success();
}

inline constexpr int kGroupChunks = static_cast<int>(kQuantGroup) / kChunk;  // 16 chunks per FP8 group
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;  // D exact in fp32: the division by D is one rounding

// ---------------------------------------------------------------------------------------------
// Per-element pieces, each with its mutant switch
// ---------------------------------------------------------------------------------------------

template <Mutant M>
__device__ __forceinline__ std::int64_t row_off(std::int64_t row, std::int64_t stride, std::int64_t dim,
                                                unsigned elem_bytes) {
  const std::int64_t s = (M == Mutant::M8_stride_ignored) ? dim : stride;
  return row_offset<M == Mutant::M11_offsets_32bit>(row, s, elem_bytes);
}

// Sequential fp32 sum of squares of one thread's elements.
template <typename T, Mutant M>
struct SumSquares {
  float acc = 0.0f;
  __device__ __forceinline__ void add(float v) {
    if constexpr (M == Mutant::M7_square_before_upcast) {
      acc += round_through<T>(v * v);  // the square rounded to the 16-bit type first
    } else if constexpr (M == Mutant::M3_low_precision_sum) {
      acc = round_through<T>(fmaf(v, v, acc));  // the running sum held in the 16-bit type
    } else {
      acc = fmaf(v, v, acc);
    }
  }
};

// r from the row's Σx². `padded` is the vector-rounded width (used only by mutant M1).
template <Mutant M>
__device__ __forceinline__ float rstd_of(float sum, std::int64_t dim, std::int64_t padded, float eps) {
  const float width = static_cast<float>(M == Mutant::M1_padded_divisor ? padded : dim);
  const float mean = __fdiv_rn(sum, width);
  if constexpr (M == Mutant::M2_eps_outside_root) {
    return rsqrtf(mean) + eps;
  } else {
    return rsqrtf(mean + eps);
  }
}

// The weight a convention multiplies by, from the stored g: standard and llama g, gemma
// RN32(1 + g) (one fp32 rounding, as the contract's fp32 pipeline does), no weight 1 (exact:
// (h·r)·1 = h·r bitwise, NaN and signed zeros included). Formed once per loaded weight, so the
// per-element work below is the same two multiplies for every convention but llama.
__device__ __forceinline__ float effective_weight(float g, int convention) {
  return convention == static_cast<int>(Convention::gemma) ? 1.0f + g : g;
}

// y = (h·r)·w in fp32, w the effective weight; llama rounds h·r and the product to T (the
// Hugging Face double rounding). M15: the llama rounding where one rounding is the contract.
template <typename T, Mutant M>
__device__ __forceinline__ float y_of(float h, float r, float w, int convention) {
  if (convention == static_cast<int>(Convention::llama)) return round_through<T>(round_through<T>(h * r) * w);
  if constexpr (M == Mutant::M15_llama_double_round) {
    if (convention == static_cast<int>(Convention::standard)) return round_through<T>(round_through<T>(h * r) * w);
  }
  return (h * r) * w;
}

// FP8 scale from an amax: s = max(amax / fp8_max, floor), NaN-propagating.
template <Mutant M>
__device__ __forceinline__ float scale_of(float amax, const Params& p) {
  const float s = __fdiv_rn(amax, p.fp8_max);
  if constexpr (M == Mutant::M12_scale_no_floor) {
    return s;
  } else {
    return nan_max(s, p.scale_floor);
  }
}

// The dynamic per-token amax from the fused max (fwd_regs_body's kLeanY, fwd_smem_kernel's
// kFusedAmax): hw_max = max_j |RN(h_j·w_j)| over the row, reduced beside Σh² by block_sum_max, and
// amax = RN(r · hw_max). Where hw_max is a normal fp32 number every rounding in it is relative:
// RN(h·w) and RN(·r) are the two roundings of y's RN(RN(h·r)·w), and RN is monotone, so the max of
// the rounded products is the rounded max; amax is then within the oracle's eps32 of the exact
// r·max|h·w|, as the max of the ŷ_j is (oracle/src/forward_row.cpp, the scale's bound). Below
// 2^-126 (a subnormal product: an absolute error r·2^-150 the oracle's model does not budget; zero
// rows) the max is taken over the ŷ_j themselves (y_bits(): this thread's max |ŷ| bits), as the
// other forms do, behind a second barrier. A NaN or Inf product makes amax NaN / Inf as a NaN / Inf
// ŷ_j would (such a row's outputs are unconstrained). Block-uniform: hw_max is the block's value.
template <bool kBarrier, typename YBits>
__device__ __forceinline__ float fused_amax(float hw_max, float r, float* max_partials, YBits&& y_bits) {
  if (hw_max >= 0x1p-126f || hw_max != hw_max) return __fmul_rn(hw_max, r);
  const unsigned bits = y_bits();
  __syncthreads();  // max_partials were read by block_sum_max
  return block_max<kBarrier>(__uint_as_float(bits), max_partials);
}

// q = RN_fp8_sat(y · (1/s)): the reciprocal is formed once per scale, so each element costs one
// multiply instead of an IEEE division. Two fp32 roundings (1/s, then the product) instead of
// one: the oracle's FP8 bound budgets 2u for exactly this (oracle/src/forward_row.cpp).
template <Mutant M>
__device__ __forceinline__ unsigned char quantize(float y, float inv_s, int fmt, float fp8_max) {
  if constexpr (M == Mutant::M13_fp8_via_bf16) y = round_through<__nv_bfloat16>(y);
  const float v = y * inv_s;
  if constexpr (M == Mutant::M14_fp8_no_saturation) {
    // The bug: no saturation, so whatever lies beyond the largest finite value becomes NaN
    // (written without the software NOSAT conversion, which spills in these kernels).
    if (!(fabsf(v) <= fp8_max)) return static_cast<unsigned char>(kFp8NaN);
  }
  (void)fp8_max;
  return fp8_from_float(v, static_cast<__nv_fp8_interpretation_t>(fmt), /*saturate=*/true);
}

// The same for the 8 values of a chunk, two per conversion instruction; the 8 bytes packed for
// one 8-byte store (element j in byte j).
template <Mutant M>
__device__ __forceinline__ uint2 quantize8(const float (&y)[kChunk], float inv_s, int fmt, float fp8_max) {
  unsigned pair[kChunk / 2];
#pragma unroll
  for (int k = 0; k < kChunk / 2; ++k) {
    float a = y[2 * k], b = y[2 * k + 1];
    if constexpr (M == Mutant::M13_fp8_via_bf16) {
      a = round_through<__nv_bfloat16>(a);
      b = round_through<__nv_bfloat16>(b);
    }
    a *= inv_s;
    b *= inv_s;
    pair[k] = fp8x2_from_float(a, b, static_cast<__nv_fp8_interpretation_t>(fmt));
    if constexpr (M == Mutant::M14_fp8_no_saturation) {
      if (!(fabsf(a) <= fp8_max)) pair[k] = (pair[k] & 0xff00u) | kFp8NaN;
      if (!(fabsf(b) <= fp8_max)) pair[k] = (pair[k] & 0x00ffu) | (kFp8NaN << 8);
    }
  }
  (void)fp8_max;
  return make_uint2(pair[0] | (pair[1] << 16), pair[2] | (pair[3] << 16));
}

// max |y_j| over the valid elements of chunk c, as bits: for |y| (sign cleared) the unsigned
// order of the bit patterns is the float order, and every NaN pattern lies above +inf, so one
// integer max per element is a NaN-propagating maximum.
__device__ __forceinline__ unsigned abs_bits(float v) { return __float_as_uint(v) & 0x7fffffffu; }
__device__ __forceinline__ unsigned chunk_amax_bits(const float (&y)[kChunk], std::int64_t c, std::int64_t full,
                                                    int n_tail) {
  unsigned m = 0;
  if (c < full) {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) m = max(m, abs_bits(y[j]));
  } else if (c == full) {
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (j < n_tail) m = max(m, abs_bits(y[j]));
  }
  return m;
}

// The row's FP8 scale: the given one (static), or from the row's amax (dynamic per token:
// amax_of() forms it and reduces it over the row's threads; the thread told `writer` stores the
// scale), or 0 (per block: each group has its own). Shared by fwd.cluster_row and fwd.bulk_ring.
template <Mutant M, typename AmaxOf>
__device__ __forceinline__ float row_fp8_scale(const Params& p, std::int64_t row, bool writer, AmaxOf&& amax_of) {
  const Quant mode = static_cast<Quant>(p.quant);
  if (mode == Quant::static_scale) return *p.scale;
  if (mode != Quant::dynamic_token) return 0.0f;
  const float s = scale_of<M>(amax_of(), p);
  if (writer) p.scale[row] = s;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Chunk access with tails
// ---------------------------------------------------------------------------------------------

// Chunk c of a row: vector load when it lies wholly inside the row, element loads for the
// partial last chunk (only its n_tail valid elements are read), zero beyond the row.
// kOnce: the kernel reads this row exactly once (streaming load).
// M9: the partial chunk is read with a full vector load (past the row end) and masked by
// multiplying the lanes beyond D by 0 — a NaN in the bytes after the row leaks through.
template <typename T, Mutant M, bool kOnce = false>
__device__ __forceinline__ Chunk<T> load_row_chunk(const T* row, std::int64_t c, std::int64_t full, int n_tail) {
  if (c < full) return kOnce ? load_chunk_once(row + c * kChunk) : load_chunk(row + c * kChunk);
  if (c == full && n_tail > 0) {
    if constexpr (M == Mutant::M9_tail_overread) {
      const Chunk<T> raw = load_chunk(row + c * kChunk);
      float f[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) f[j] = chunk_get(raw, j) * (j < n_tail ? 1.0f : 0.0f);
      return pack<T>(f);
    } else {
      return load_chunk_partial(row + c * kChunk, n_tail);
    }
  }
  return zero_chunk<T>();
}

// The fused add's h = RN_T(x + o) of a chunk: one fp32 add and one rounding to T per element
// (every forward kernel with the fused add forms its residual so).
template <typename T>
__device__ __forceinline__ Chunk<T> add_rounded(const Chunk<T>& x, const Chunk<T>& o) {
  float a[kChunk], b[kChunk];
  unpack(x, a);
  unpack(o, b);
#pragma unroll
  for (int j = 0; j < kChunk; ++j) a[j] = a[j] + b[j];
  return pack<T>(a);
}

// The stored weights of chunk c (zero beyond the row; nothing read without a weight).
template <typename G>
__device__ __forceinline__ Chunk<G> weight_chunk(const Params& p, std::int64_t c, std::int64_t full, int n_tail) {
  if (p.convention == static_cast<int>(Convention::no_weight)) return zero_chunk<G>();
  const G* g = static_cast<const G*>(p.g);
  if (c < full) return load_chunk_ro(g + c * kChunk);
  if (c == full && n_tail > 0) return load_chunk_partial(g + c * kChunk, n_tail);
  return zero_chunk<G>();
}
// Those weights as the fp32 factors the convention multiplies by, one add per element and no
// branch: w = g + a, a = 1 for gemma (RN32(1 + g), the contract's rounding), a = -0 for standard
// and llama (x + (-0) = x exactly for every x, -0 included; a NaN weight stays NaN, and y = (h·r)·w
// is NaN either way), and for no weight a = 1 on the zeros weight_chunk gives (0 + 1 = 1 exactly).
// A branch on the convention costs eight registers set to 1 per chunk before the test (SASS);
// without it add + FP8 at R = 64 runs 4-6 % faster on the H200, every other shape within 3 %.
__device__ __forceinline__ float weight_offset(int convention) {
  return (convention == static_cast<int>(Convention::gemma) || convention == static_cast<int>(Convention::no_weight))
             ? 1.0f
             : -0.0f;
}
template <typename G>
__device__ __forceinline__ void weights_of(const Chunk<G>& gc, int convention, float (&w)[kChunk]) {
  unpack(gc, w);
  const float a = weight_offset(convention);
#pragma unroll
  for (int j = 0; j < kChunk; ++j) w[j] = w[j] + a;
}

// Weights of chunk c as fp32. M20: the row index picks one weight for the whole row.
template <typename G, Mutant M>
__device__ __forceinline__ void load_weights(const Params& p, std::int64_t row, std::int64_t c, std::int64_t full,
                                             int n_tail, float (&w)[kChunk]) {
  if constexpr (M == Mutant::M20_weight_by_row) {
    if (p.convention != static_cast<int>(Convention::no_weight)) {
      const G* g = static_cast<const G*>(p.g);
      const float v = effective_weight(to_float(g[static_cast<unsigned>(row) % static_cast<unsigned>(p.dim)]), p.convention);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) w[j] = v;
      return;
    }
  }
  (void)row;
  weights_of(weight_chunk<G>(p, c, full, n_tail), p.convention, w);
}

// Store chunk c of y (storage type T, or FP8 bytes). kOnce: nothing in this kernel reads it again.
template <typename T, bool kOnce = false>
__device__ __forceinline__ void store_row_chunk(T* row, std::int64_t c, std::int64_t full, int n_tail, const Chunk<T>& v) {
  if (c < full) {
    if constexpr (kOnce) store_chunk_once(row + c * kChunk, v); else store_chunk(row + c * kChunk, v);
  }
  else if (c == full && n_tail > 0) store_chunk_partial(row + c * kChunk, v, n_tail);
}
__device__ __forceinline__ void store_fp8_chunk(unsigned char* row, std::int64_t c, std::int64_t full, int n_tail,
                                                const uint2& q) {
  if (c < full) {
    __stcs(reinterpret_cast<uint2*>(row + c * kChunk), q);
  } else if (c == full && n_tail > 0) {
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (j < n_tail) row[c * kChunk + j] = static_cast<unsigned char>(((j < 4 ? q.x : q.y) >> (8 * (j & 3))) & 0xffu);
  }
}


// FP8 output of chunk c of a row (y as fp32): quantized with the row's reciprocal scale `inv_row`,
// or per block of 128 with its group's. A group's 16 chunks sit on kWidth consecutive lanes of
// one step, every lane of the warp calls this (the butterfly sees full warps; `mine` says whether
// the chunk is this thread's to store), and the group's scale is written by its first lane.
// Shared by fwd.block_row, fwd.large_d and fwd.cluster_row. Index: the chunk index's type
// (the cluster keeps 32-bit column indices).
template <Mutant M, int kWidth, typename Index>
__device__ __forceinline__ void store_fp8_output(const Params& p, unsigned char* qr, std::int64_t row, Index c, bool mine,
                                                 int t, const float (&y)[kChunk], float inv_row, Quant mode,
                                                 std::int64_t full, int n_tail) {
  float inv_s = inv_row;
  if (mode == Quant::per_block) {
    float amax = mine ? __uint_as_float(chunk_amax_bits(y, c, full, n_tail)) : 0.0f;
    amax = warp_max<kWidth>(amax);
    const float s = scale_of<M>(amax, p);
    inv_s = __fdiv_rn(1.0f, s);
    if (mine && t % kWidth == 0) p.scale[row * p.groups + c / kGroupChunks] = s;
  }
  if (mine) store_fp8_chunk(qr, c, full, n_tail, quantize8<M>(y, inv_s, p.fp8_fmt, p.fp8_max));
}

// ---------------------------------------------------------------------------------------------
// Row held in registers
// ---------------------------------------------------------------------------------------------

// Threads per block of the sub-warp form, and the register budget of the block form.
inline constexpr int kSubWarpBlock = 256;
// 512 threads leave 128 registers per thread: room for x and o of 4 chunks (fp32: 64 registers)
// plus the weights and the FP8 path without spilling.
// The FP8 forms also carry the scale paths (amax butterflies, a reciprocal per scale): at 512
// threads (128 registers) the f16 instances spill, so they run 256 threads (D <= 8192 here;
// larger rows go to fwd.large_d).
template <typename T, bool kQuant = false>
inline constexpr int kBlockRowMaxThreads = kQuant ? 256 : 512;

template <int LANES, typename T, bool kQuant>
inline constexpr int regs_block_threads = LANES > 0 ? kSubWarpBlock : kBlockRowMaxThreads<T, kQuant>;
// Register budget per thread, stated to ptxas as minimum resident blocks per SM: left to its
// heuristics ptxas caps some instances (the FP8 forms, which hold y as 8 fp32 per chunk; fp32
// rows; mutants of the fused add) below what they need and spills. 128 registers for those, 64
// for the 16-bit product forms with or without the fused add (they use about 50-64: more
// blocks per SM, more loads in flight).
//
// fwd.block_row's 16-bit FP8 forms of the product (the L2-prefetch kernel's with 16-bit weights)
// are held to 80 (three 256-thread blocks): left at 128 ptxas took 86-96, so five 128-thread
// blocks fit an SM at D = 4096 (20 warps); at 80 six fit (24 warps). At 80 none of them spills
// (ptxas -v, CUDA 13.0); at 64 every one does (24-40 bytes). Kept at 128 (kCapOk false):
// fwd.staged_rows' FP8 forms (20-28 bytes of spills at 80) and the prefetch kernel with fp32
// weights (8 bytes). The FP8 forward is latency-bound at 128 registers (ncu: 4.7 warps per
// scheduler, 40 % of cycles with no eligible warp); at 80 the FP8 forward runs 5-9 % faster on the
// H200 (bf16 and fp16, D = 1024-5120), the fused add + FP8 4-7 %, nothing slower.
template <int LANES, typename T, bool kQuant, Mutant M, bool kEarlyW, bool kCapOk>
inline constexpr bool regs_fp8_capped = LANES == 0 && kQuant && sizeof(T) == 2 && M == Mutant::none && !kEarlyW && kCapOk;
template <int LANES, typename T, bool kQuant, bool kAdd, Mutant M, bool kEarlyW, bool kCapOk>
inline constexpr int regs_min_blocks =
    65536 / (regs_block_threads<LANES, T, kQuant> *
             (regs_fp8_capped<LANES, T, kQuant, M, kEarlyW, kCapOk>                              ? 80
              : (kQuant || sizeof(T) == 4 || (kAdd && M != Mutant::none) || kEarlyW) ? 128
                                                                                   : 64));

// LANES > 0: groups of LANES consecutive lanes of a warp own one row each (kSubWarpBlock / LANES
// rows per block). LANES == 0: the whole block owns one row.
// Chunk c of the row belongs to thread c % lanes, as its (c / lanes)-th chunk: every step of the
// loop is a contiguous, coalesced run of 16-byte accesses.
//
// kStaged (fwd.staged_rows, block form, product only): the grid is persistent (a few blocks per
// SM, rows blockIdx.x + k·gridDim.x) and each thread copies its own chunks of the block's next
// stages − 1 rows into shared-memory stages with cp.async (async_copy.cuh), so a block has rows
// in flight while it reduces, scales and stores the current one (with one row per block and its
// loads issued at the top, a block's loads are idle through its reduction(s) and stores). Same
// thread mapping, same order, same arithmetic as the register form: every output bit equals
// fwd.block_row's.
//
// kEarlyW (fwd.block_row for few rows, product only): the row's weights are loaded with its x,
// before the reduction, instead of after it: with few rows the blocks wait on memory, and weight
// loads after the row sum would be a second round trip (the same values, the same bits).
//
// kAhead (fwd.block_row where it measures faster, fwd_regs_ahead_kernel): a block per row asks
// L2 for the row `ahead` rows on, `ahead` = the blocks that fit on the device at once: the block
// that takes this slot one wave later finds its row there, and DRAM keeps working through this
// block's reduction and stores. It slows some forms (the fused add by 4-15 % on the H200), so it
// is a kernel of its own, launched where it is faster (run_block_row): a kernel argument on every
// instance would move their registers too.
//
// kLeanY (fwd.block_row's FP8 forms of 16-bit rows past 8192, fwd_regs_lean_y_kernel): y is not
// held through the scale (the row's 4 chunks of fp32 y would take 32 registers a thread, past the
// 64 that two 512-thread blocks per SM allow). With a dynamic per-token scale the row-sum pass
// reads the weights too and the amax comes from fused_amax, so y is formed once, in the quantizing
// pass (the weights read a second time, from L1); only its fallback (hw_max below 2^-126) forms y
// for the amax and again to quantize (the same operations on the same operands: the same bits).
template <typename T, typename G, bool kQuant, bool kAdd, int LANES, int ITERS, Mutant M, bool kStaged, bool kEarlyW,
          bool kAhead, bool kLeanY = false>
__device__ __forceinline__ void fwd_regs_body(const Params& p, std::int64_t ahead) {
  static_assert(!kLeanY || (kQuant && LANES == 0 && !kStaged && !kEarlyW && M == Mutant::none), "lean y: the block form's FP8 product");
  static_assert(!kAhead || (LANES == 0 && !kStaged && !kEarlyW && M == Mutant::none), "the block form of the product");
  static_assert(!kEarlyW || (M == Mutant::none && !kStaged), "early weights: the product's register form");
  static_assert(LANES == 0 || (LANES <= kWarp && (LANES & (LANES - 1)) == 0), "sub-warp lanes");
  constexpr bool kBlock = LANES == 0;
  static_assert(!kStaged || kBlock, "staged rows: the block form");
  constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  constexpr int kTensors = kAdd ? 2 : 1;  // staged: x (and o)
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  extern __shared__ __align__(16) unsigned char stage_mem[];  // kStaged: [stages][kTensors][ITERS][threads]

  const int lanes = kBlock ? static_cast<int>(blockDim.x) : LANES;
  const int t = kBlock ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % LANES;
  const std::int64_t rows_per_block = kBlock ? 1 : kSubWarpBlock / LANES;
  const std::int64_t sub = kBlock ? 0 : static_cast<int>(threadIdx.x) / LANES;

  using Index = std::conditional_t<kLeanY, int, std::int64_t>;  // kLeanY: D <= 16384
  const std::int64_t D = p.dim;
  const Index full = static_cast<Index>(D / kChunk);
  const int n_tail = static_cast<int>(D % kChunk);
  const Index nchunks = full + (n_tail > 0 ? 1 : 0);

  // kStaged: slot of tensor q, chunk i of this thread in stage s; one commit group per row
  // (empty past the block's last row, so the group count stays uniform).
  auto stage_slot = [&](int s, int q, int i) {
    return reinterpret_cast<Chunk<T>*>(stage_mem) + ((s * kTensors + q) * ITERS + i) * lanes + t;
  };
  const std::int64_t row_step = static_cast<std::int64_t>(gridDim.x) * rows_per_block;
  auto issue = [&](std::int64_t row, int s) {
    if (row < p.rows) {
      const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
      const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        if (c < nchunks) {
          stage_chunk(stage_slot(s, 0, i), xr, c, D);
          if constexpr (kAdd) stage_chunk(stage_slot(s, 1, i), orow, c, D);
        }
      }
    }
    commit_copies();
  };
  // kStaged: the stage count is the launch's dynamic shared memory over one stage's bytes (a
  // kernel argument for it cost the element-row kernel registers: Params is shared).
  int stages = 0;
  if constexpr (kStaged) {
    unsigned dyn = 0;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    stages = static_cast<int>(dyn / (static_cast<unsigned>(kTensors * ITERS * lanes) * sizeof(Chunk<T>)));
  }
  int cur = 0;  // kStaged: the stage of the current row
  if constexpr (kStaged) {
    for (int s = 0; s < stages - 1; ++s) issue(static_cast<std::int64_t>(blockIdx.x) + s * row_step, s);
  }

  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * rows_per_block; first < p.rows;
       first += row_step) {
    const std::int64_t row = first + sub;
    const bool active = row < p.rows;  // sub-warp groups past R still join the shuffles
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));

    // 1. Issue every load of the row before using any of it (kStaged: the row stages − 1
    // ahead is issued, this one's own copies awaited and read back from its stage).
    Chunk<T> h[ITERS];
    Chunk<T> ov[ITERS];
    if constexpr (kStaged) {
      issue(first + (stages - 1) * row_step, cur == 0 ? stages - 1 : cur - 1);
      wait_copies(stages - 1);
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const bool in_row = static_cast<std::int64_t>(i) * lanes + t < nchunks;
        h[i] = in_row ? *stage_slot(cur, 0, i) : zero_chunk<T>();
        if constexpr (kAdd) ov[i] = in_row ? *stage_slot(cur, 1, i) : zero_chunk<T>();
      }
      cur = cur + 1 == stages ? 0 : cur + 1;
    } else {
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        h[i] = active ? load_row_chunk<T, M, true>(xr, c, full, n_tail) : zero_chunk<T>();
      }
    }
    if constexpr (kAhead) {
      if (ahead > 0 && row + ahead < p.rows) {
        const std::int64_t next = row + ahead;
        const std::int64_t bytes = D * static_cast<std::int64_t>(sizeof(T));
        prefetch_row_l2(static_cast<const T*>(p.x) + row_off<M>(next, p.x_stride, D, sizeof(T)), bytes, t, lanes);
        if constexpr (kAdd)
          prefetch_row_l2(static_cast<const T*>(p.o) + row_off<M>(next, p.o_stride, D, sizeof(T)), bytes, t, lanes);
      }
    }
    // kEarlyW: the weights of this thread's chunks, issued with the row's loads.
    [[maybe_unused]] Chunk<G> wc[kEarlyW ? ITERS : 1];
    if constexpr (kEarlyW) {
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        wc[i] = active ? weight_chunk<G>(p, c, full, n_tail) : zero_chunk<G>();
      }
    }
    if constexpr (kAdd) {
      if constexpr (!kStaged) {
        const T* orow = static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T));
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
          const Index c = static_cast<Index>(i) * lanes + t;
          ov[i] = active ? load_row_chunk<T, M, true>(orow, c, full, n_tail) : zero_chunk<T>();
        }
      }
      // 2. Fused add: h = RN_x(x + o), written back to the residual stream. (M17 keeps x and o
      // apart and normalizes the unrounded fp32 sum; the written residual is still rounded.)
      T* xw = static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T));
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        const Chunk<T> rounded = add_rounded(h[i], ov[i]);
        if (active) store_row_chunk<T, true>(xw, c, full, n_tail, rounded);
        if constexpr (M != Mutant::M17_add_unrounded_sum) h[i] = rounded;
      }
    }
    // Element j of chunk i of h as fp32 (M17: the unrounded x + o).
    auto hval = [&](int i, int j) -> float {
      if constexpr (kAdd && M == Mutant::M17_add_unrounded_sum) {
        return chunk_get(h[i], j) + chunk_get(ov[i], j);
      } else {
        return chunk_get(h[i], j);
      }
    };

    // kLeanY: h made opaque (no instruction) before each later pass over it; otherwise ptxas keeps
    // the fp32 halves it unpacked for an earlier pass alive and spills at 64 registers (CUDA 13).
    [[maybe_unused]] auto opaque_h = [&] {
#pragma unroll
      for (int i = 0; i < ITERS; ++i)
#pragma unroll
        for (int k = 0; k < Chunk<T>::kWords; ++k)
          asm volatile("" : "+r"(h[i].w[k].x), "+r"(h[i].w[k].y), "+r"(h[i].w[k].z), "+r"(h[i].w[k].w));
    };

    // 3. Σh²: sequential per thread (chunk order, element order), then the fixed tree.
    SumSquares<T, M> ss;
    // kLeanY with a dynamic per-token scale: also max_j |h_j·w_j| (its bits' max) in the same pass,
    // a chunk at a time (each chunk's fp32 h used by both and let go), reduced beside Σh²; the
    // sum's order is the same either way.
    [[maybe_unused]] float hw_max = 0.0f;
    [[maybe_unused]] unsigned hw_bits = 0;
    const bool hw_pass = kLeanY && static_cast<Quant>(p.quant) == Quant::dynamic_token;
    if (hw_pass) {
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        float w[kChunk], hw[kChunk];
        if (active && c < nchunks) {
          load_weights<G, M>(p, row, c, full, n_tail, w);
        } else {
#pragma unroll
          for (int j = 0; j < kChunk; ++j) w[j] = 0.0f;
        }
#pragma unroll
        for (int j = 0; j < kChunk; ++j) {
          const float v = hval(i, j);
          ss.add(v);
          hw[j] = __fmul_rn(v, w[j]);
        }
        if (active) hw_bits = max(hw_bits, chunk_amax_bits(hw, c, full, n_tail));
      }
    } else {
#pragma unroll
      for (int i = 0; i < ITERS; ++i)
#pragma unroll
        for (int j = 0; j < kChunk; ++j) ss.add(hval(i, j));
    }
    float total;
    if constexpr (kLeanY) {
      if (hw_pass) {
        total = ss.acc;
        hw_max = __uint_as_float(hw_bits);
        block_sum_max<kBarrier>(total, hw_max, sum_partials, max_partials);
      } else {
        total = block_sum<kBarrier>(ss.acc, sum_partials);
      }
    } else if constexpr (kBlock) {
      total = block_sum<kBarrier>(ss.acc, sum_partials);
    } else {
      total = warp_sum<LANES>(ss.acc);
    }
    const float r = rstd_of<M>(total, D, nchunks * kChunk, p.eps);
    if (active && t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    // 4. Outputs.
    auto y_chunk = [&](int i, std::int64_t c, float (&y)[kChunk]) {
      float w[kChunk];
      if constexpr (kEarlyW) {
        weights_of(wc[i], p.convention, w);
      } else {
        load_weights<G, M>(p, row, c, full, n_tail, w);
      }
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = y_of<T, M>(hval(i, j), r, w[j], p.convention);
    };
    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        if (!active || c >= nchunks) continue;
        float y[kChunk];
        y_chunk(i, c, y);
        store_row_chunk<T, true>(yr, c, full, n_tail, pack<T>(y));
      }
    } else if constexpr (kLeanY) {
      // FP8, y not held (kLeanY above): formed in the quantizing pass (and in fused_amax's fallback).
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      float s_row = 0.0f;
      if (mode == Quant::static_scale) {
        s_row = *p.scale;
      } else if (mode == Quant::dynamic_token) {
        // amax from hw_max, the row-sum pass's fused max (fused_amax says why it is within bound).
        const float amax = fused_amax<kBarrier>(hw_max, r, max_partials, [&] {
          unsigned bits = 0;
          opaque_h();
#pragma unroll
          for (int i = 0; i < ITERS; ++i) {
            const Index c = static_cast<Index>(i) * lanes + t;
            if (active && c < nchunks) {
              float y[kChunk];
              y_chunk(i, c, y);
              bits = max(bits, chunk_amax_bits(y, c, full, n_tail));
            }
          }
          return bits;
        });
        s_row = scale_of<M>(amax, p);
        if (active && t == 0) p.scale[row] = s_row;
      }
      const float inv_row = __fdiv_rn(1.0f, s_row);
      opaque_h();
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        const bool mine = active && c < nchunks;
        float y[kChunk];
        if (mine) {
          y_chunk(i, c, y);
        } else {
#pragma unroll
          for (int j = 0; j < kChunk; ++j) y[j] = 0.0f;
        }
        store_fp8_output<M, kGroupChunks>(p, qr, row, c, mine, t, y, inv_row, mode, full, n_tail);
      }
    } else {
      // FP8: y is formed once, kept in registers for the scale and the quantization.
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      float y[ITERS][kChunk];
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        if (active && c < nchunks) {
          y_chunk(i, c, y[i]);
        } else {
#pragma unroll
          for (int j = 0; j < kChunk; ++j) y[i][j] = 0.0f;
        }
      }
      float s_row = 0.0f;
      if (mode == Quant::static_scale) {
        s_row = *p.scale;
      } else if (mode == Quant::dynamic_token) {
        unsigned bits = 0;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
          const Index c = static_cast<Index>(i) * lanes + t;
          if (active) bits = max(bits, chunk_amax_bits(y[i], c, full, n_tail));
        }
        float amax = __uint_as_float(bits);
        if constexpr (kBlock) {
          amax = block_max<kBarrier>(amax, max_partials);
        } else {
          amax = warp_max<LANES>(amax);
        }
        s_row = scale_of<M>(amax, p);
        if (active && t == 0) p.scale[row] = s_row;
      }
      const float inv_row = __fdiv_rn(1.0f, s_row);  // static / dynamic: one reciprocal per row
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        const bool mine = active && c < nchunks;
        // The 16 chunks of a group sit on 16 consecutive lanes of one step (lanes is a multiple
        // of 16, or the whole row is one group): a 16-lane butterfly gives the group's amax.
        constexpr int kWidth = (LANES > 0 && LANES < kGroupChunks) ? LANES : kGroupChunks;
        store_fp8_output<M, kWidth>(p, qr, row, c, mine, t, y[i], inv_row, mode, full, n_tail);
      }
    }
    // kLeanY: one row per block (the launch has a block per row): no second pass of the loop,
    // so nothing is held across rows.
    if constexpr (kLeanY) break;
    if constexpr (kBlock) __syncthreads();  // the partials are reused by the next row
  }
  if constexpr (kStaged) wait_copies(0);  // no copy may outlive the block (the trailing groups are empty)
}

template <typename T, typename G, bool kQuant, bool kAdd, int LANES, int ITERS, Mutant M, bool kStaged = false,
          bool kEarlyW = false>
__global__ void __launch_bounds__(regs_block_threads<LANES, T, kQuant>, (regs_min_blocks<LANES, T, kQuant, kAdd, M, kEarlyW, !kStaged>)) fwd_regs_kernel(Params p) {
  fwd_regs_body<T, G, kQuant, kAdd, LANES, ITERS, M, kStaged, kEarlyW, false>(p, 0);
}
template <typename T, typename G, bool kQuant, bool kAdd, int ITERS>
__global__ void __launch_bounds__(regs_block_threads<0, T, kQuant>, (regs_min_blocks<0, T, kQuant, kAdd, Mutant::none, false, sizeof(G) == 2>)) fwd_regs_ahead_kernel(Params p, std::int64_t ahead) {
  fwd_regs_body<T, G, kQuant, kAdd, 0, ITERS, Mutant::none, false, false, true>(p, ahead);
}
// fwd.block_row's plain 16-bit forward and its fused add + FP8 over many waves of rows
// (run_block_row says where):
// the first wave staggered. Block b of the first wave (b < wave) starts its loads (b / sms) ·
// slot_ns late, so an SM's first-wave blocks ask DRAM for their rows one after another. Started
// together (fwd_regs_kernel), every block of the first wave has its whole row in flight at once,
// DRAM interleaves them, every row arrives at about the same time, and the whole first wave sums,
// scales and stores with no load in flight; its blocks end within half a microsecond of each
// other and the next waves start in step (H200, per-block timestamps at 4096 x 8192: no row
// finishes in the first 4.4-5.7 us, and the kernel takes the copy's time per row plus a fixed
// 7.3 us against the copy's 3.7). slot_ns is the time the device takes to move one row per SM.
// Only the start differs: the same body, the same bits (one row's output does not depend on R).
template <typename T, typename G, bool kQuant, bool kAdd, int ITERS>
__global__ void __launch_bounds__(regs_block_threads<0, T, kQuant>, (regs_min_blocks<0, T, kQuant, kAdd, Mutant::none, false, true>))
    fwd_regs_stagger_kernel(Params p, std::int64_t wave, unsigned sms, unsigned slot_ns) {
  if (blockIdx.x < wave) {
    const unsigned long long wait = static_cast<unsigned long long>(blockIdx.x / sms) * slot_ns;
    const unsigned long long t0 = global_timer_ns();
    while (global_timer_ns() - t0 < wait) {
    }
  }
  fwd_regs_body<T, G, kQuant, kAdd, 0, ITERS, Mutant::none, false, false, false>(p, 0);
}
// fwd.block_row's FP8 forms of 16-bit rows of 8192 < D <= 16384 (kBlockRowLeanYMaxDim16): up to
// 512 threads a row, y not held (kLeanY), held to 64 registers so that two blocks share an SM
// (one row's loads run beside the other's reductions and stores).
inline constexpr int kLeanYThreads = 512;
inline constexpr int kLeanYMinBlocks = 2;
template <typename T, typename G, bool kAdd, int ITERS>
__global__ void __launch_bounds__(kLeanYThreads, kLeanYMinBlocks) fwd_regs_lean_y_kernel(Params p) {
  static_assert(sizeof(T) == 2, "16-bit rows");
  fwd_regs_body<T, G, true, kAdd, 0, ITERS, Mutant::none, false, false, false, true>(p, 0);
}

// ---------------------------------------------------------------------------------------------
// Large D: shared-memory row cache (then global re-read beyond its capacity)
// ---------------------------------------------------------------------------------------------

inline constexpr int kSmemThreads = 1024;
// fwd.large_d_pair: 512-thread blocks, two per SM, each with half the SM's shared memory for its
// row cache: one row's loads overlap the other row's reduction, FP8 scale and stores (with 1024
// threads one block fills the SM and its phases run back to back: FP8 at D = 16384 0.32 of the
// copy on the H200; this form measures 0.46-0.47 there).
inline constexpr int kSmemPairThreads = 512;
inline constexpr int kSmemPairBlocksPerSM = 2;
// Chunks in flight per thread and tensor in the loading pass: 64 registers per thread at 1024
// threads leave room for 64 bytes of one tensor in flight, 32 bytes each of two.
template <typename T, bool kAdd>
inline constexpr int kSmemUnroll = sizeof(T) == 2 ? (kAdd ? 2 : 4) : (kAdd ? 1 : 2);

template <typename T, typename G, bool kQuant, bool kAdd, Mutant M, int THREADS = kSmemThreads, bool kStash = false>
__global__ void __launch_bounds__(THREADS, THREADS == kSmemThreads ? 1 : kSmemPairBlocksPerSM)
    fwd_smem_kernel(Params p, std::int64_t cache_chunks) {
  static_assert(THREADS == kSmemThreads || THREADS == kSmemPairThreads, "large-D block shapes");
  static_assert(!kStash || (kQuant && M == Mutant::none), "the y stash: FP8 outputs of the product");
  constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  extern __shared__ uint4 smem_cache[];
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  Chunk<T>* cache = reinterpret_cast<Chunk<T>*>(smem_cache);

  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t D = p.dim;
  const std::int64_t full = D / kChunk;
  const int n_tail = static_cast<int>(D % kChunk);
  const std::int64_t nchunks = full + (n_tail > 0 ? 1 : 0);
  constexpr std::int64_t B = THREADS;

  // kStash (FP8 with a dynamic per-token scale, the product; launched where the row's h and its y
  // as fp32 both fit the block's shared memory): the amax pass parks each chunk's y there, and the
  // quantizing pass reads it back instead of computing it a second time (a second weight load,
  // unpacking and 16 multiplies per chunk). Two planes of float4 after the cache (elements 0-3,
  // 4-7 of chunk c at lo[c], hi[c]): a warp's accesses are 512 contiguous bytes each. The thread
  // that writes chunk c reads it back (the same c = t + k·B), so no barrier; the bits are those of
  // the recomputation, y being formed by the same code. A kernel of its own: a run-time switch in
  // the one kernel slows the 16-bit FP8 forward 4-5 % where no stash fits. Where it is launched
  // (16-bit D <= 16384 on fwd.large_d_pair, <= 32768 on fwd.large_d; fp32 <= 12288 / 24576) it
  // measures FP8 5-11 % and add + FP8 3-10 % faster on the H200, nothing slower.
  [[maybe_unused]] float4* const stash_lo = reinterpret_cast<float4*>(cache + nchunks);
  [[maybe_unused]] float4* const stash_hi = stash_lo + nchunks;
  // kFusedAmax (the product's FP8 forms without the stash: rows the stash does not fit): with a
  // dynamic per-token scale the loading pass also takes max_j |RN(h_j·w_j)| (the weights loaded
  // with the row), reduced beside Σh² behind one barrier, and amax = RN(r · that max): y is formed
  // once, in the quantizing pass, instead of once more for the amax (an extra pass over the cache
  // and the row's weights, and a second barrier). The derivation (the same two roundings as y's,
  // within the oracle's eps32) and the fallback below 2^-126 are fused_amax's. Not for
  // fp32 weights beside 16-bit rows: those forms spilled 4 bytes at 64 registers (CUDA 13).
  constexpr bool kFusedAmax = kQuant && !kStash && M == Mutant::none && !(sizeof(T) == 2 && sizeof(G) == 4);
  const bool fused = kFusedAmax && static_cast<Quant>(p.quant) == Quant::dynamic_token;

  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;
    T* xw = kAdd ? static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T)) : nullptr;

    // Pass 1: read the row (kSmemUnroll<T, kAdd> chunks in flight per thread), fused add, cache, Σh².
    // Thread t owns chunks t, t + B, t + 2B, ... in this order: per_thread = 8·ceil(nchunks/B).
    SumSquares<T, M> ss;
    [[maybe_unused]] unsigned hw_bits = 0;  // kFusedAmax: max |RN(h·w)| bits of this thread's chunks
    for (std::int64_t base = t; base < nchunks; base += B * kSmemUnroll<T, kAdd>) {
      Chunk<T> h[kSmemUnroll<T, kAdd>];
      Chunk<T> ov[kSmemUnroll<T, kAdd>];
#pragma unroll
      for (int u = 0; u < kSmemUnroll<T, kAdd>; ++u) h[u] = load_row_chunk<T, M>(xr, base + u * B, full, n_tail);
      if constexpr (kAdd) {
#pragma unroll
        for (int u = 0; u < kSmemUnroll<T, kAdd>; ++u) ov[u] = load_row_chunk<T, M>(orow, base + u * B, full, n_tail);
      }
#pragma unroll
      for (int u = 0; u < kSmemUnroll<T, kAdd>; ++u) {
        const std::int64_t c = base + u * B;
        if (c >= nchunks) break;
        float a[kChunk];
        unpack(h[u], a);
        if constexpr (kAdd) {
          const Chunk<T> rounded = add_rounded(h[u], ov[u]);
          store_row_chunk(xw, c, full, n_tail, rounded);
          h[u] = rounded;
          unpack(h[u], a);
        }
        if (c < cache_chunks) cache[c] = h[u];
#pragma unroll
        for (int j = 0; j < kChunk; ++j) ss.add(a[j]);
        if constexpr (kFusedAmax) {
          if (fused) {
            float w[kChunk], hw[kChunk];
            load_weights<G, M>(p, row, c, full, n_tail, w);
#pragma unroll
            for (int j = 0; j < kChunk; ++j) hw[j] = __fmul_rn(a[j], w[j]);
            hw_bits = max(hw_bits, chunk_amax_bits(hw, c, full, n_tail));
          }
        }
      }
    }
    // fwd.large_d's grid is persistent (as many blocks as fit at once): the head of the block's
    // next row goes to L2 now, its loads overlapping this row's reduction and stores. Only the
    // head, the bytes of pass 1's first step (64 KB of x; 32 KB each of x and o): that is what
    // the next row waits on first, and whole rows (128 KB per SM at D = 65536, 17 MB on the
    // device) are evicted before use, doubling the DRAM reads (H200, the plain forward at
    // D = 65536: 0.63 of the copy with whole rows prefetched against 0.82 without).
    if constexpr (THREADS == kSmemThreads) {
      if (row + gridDim.x < p.rows) {
        const std::int64_t next = row + gridDim.x;
        constexpr std::int64_t kHead = std::int64_t{kSmemUnroll<T, kAdd>} * THREADS * kVecBytes;
        const std::int64_t head = std::min<std::int64_t>(D * static_cast<std::int64_t>(sizeof(T)), kHead);
        prefetch_row_l2(static_cast<const T*>(p.x) + row_off<M>(next, p.x_stride, D, sizeof(T)), head, t, THREADS);
        if constexpr (kAdd)
          prefetch_row_l2(static_cast<const T*>(p.o) + row_off<M>(next, p.o_stride, D, sizeof(T)), head, t, THREADS);
      }
    }
    // The reduction's barrier also publishes the cache.
    float total = ss.acc;
    [[maybe_unused]] float hw_max = 0.0f;
    if (fused) {
      hw_max = __uint_as_float(hw_bits);
      block_sum_max<kBarrier>(total, hw_max, sum_partials, max_partials);
    } else {
      total = block_sum<kBarrier>(ss.acc, sum_partials);
    }
    const float r = rstd_of<M>(total, D, nchunks * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    // h of chunk c: from the cache, or re-read (this thread wrote it itself under fused add).
    auto h_chunk = [&](std::int64_t c) -> Chunk<T> {
      if (c < cache_chunks) return cache[c];
      if constexpr (kAdd) return load_row_chunk<T, Mutant::none>(xw, c, full, n_tail);
      return load_row_chunk<T, M>(xr, c, full, n_tail);
    };
    auto y_chunk = [&](std::int64_t c, float (&y)[kChunk]) {
      float w[kChunk];
      load_weights<G, M>(p, row, c, full, n_tail, w);
      const Chunk<T> hc = h_chunk(c);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = y_of<T, M>(chunk_get(hc, j), r, w[j], p.convention);
    };

    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
      for (std::int64_t c = t; c < nchunks; c += B) {
        float y[kChunk];
        y_chunk(c, y);
        store_row_chunk(yr, c, full, n_tail, pack<T>(y));
      }
    } else {
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      // (fwd.large_d keeps the scale's prologue written out: through row_fp8_scale the compiler
      // schedules the y stash's instances differently, and those ran on the H200 as they are.)
      float s_row = 0.0f;
      if (mode == Quant::static_scale) {
        s_row = *p.scale;
      } else if (mode == Quant::dynamic_token) {
        // fused_amax written out (through it the compiler schedules every FP8 instance of this
        // kernel differently, those with the stash too; these ran on the H200 as they are).
        float amax;
        if (fused && (hw_max >= 0x1p-126f || hw_max != hw_max)) {
          amax = __fmul_rn(hw_max, r);  // kFusedAmax above
        } else {
          unsigned bits = 0;
          for (std::int64_t c = t; c < nchunks; c += B) {
            float y[kChunk];
            y_chunk(c, y);
            bits = max(bits, chunk_amax_bits(y, c, full, n_tail));
            if constexpr (kStash) {
              stash_lo[c] = make_float4(y[0], y[1], y[2], y[3]);
              stash_hi[c] = make_float4(y[4], y[5], y[6], y[7]);
            }
          }
          if (fused) __syncthreads();  // max_partials were read by block_sum_max
          amax = block_max<kBarrier>(__uint_as_float(bits), max_partials);
        }
        s_row = scale_of<M>(amax, p);
        if (t == 0) p.scale[row] = s_row;
      }
      const float inv_row = __fdiv_rn(1.0f, s_row);  // static / dynamic: one reciprocal per row
      // Every thread runs the same number of steps, so the group butterflies see full warps.
      const std::int64_t steps = (nchunks + B - 1) / B;
      for (std::int64_t k = 0; k < steps; ++k) {
        const std::int64_t c = k * B + t;
        const bool mine = c < nchunks;
        float y[kChunk];
        if (mine) {
          if constexpr (kStash) {
            if (mode == Quant::dynamic_token) {
              const float4 lo = stash_lo[c], hi = stash_hi[c];
              y[0] = lo.x, y[1] = lo.y, y[2] = lo.z, y[3] = lo.w;
              y[4] = hi.x, y[5] = hi.y, y[6] = hi.z, y[7] = hi.w;
            } else {
              y_chunk(c, y);
            }
          } else {
            y_chunk(c, y);
          }
        }
        store_fp8_output<M, kGroupChunks>(p, qr, row, c, mine, t, y, inv_row, mode, full, n_tail);
      }
    }
    __syncthreads();  // the cache and the partials are reused by the next row
  }
}

// ---------------------------------------------------------------------------------------------
// Element row: any alignment, the row in registers
// ---------------------------------------------------------------------------------------------

inline constexpr int kElementSlots = 16;          // elements per thread
inline constexpr int kElementMaxThreads = 512;    // so D <= 8192 (128 registers: no spill)
inline constexpr int kElementMaxGroups = kElementSlots * kElementMaxThreads / static_cast<int>(kQuantGroup);

// Thread t owns elements t, t + B, ..., t + 15·B of the row (B = blockDim.x, a function of D
// only): every load or store instruction of a warp touches 32 consecutive elements, coalesced
// whatever the alignment of the row start, and the reduction order depends on D alone, so rows
// of odd width (every row start at a different alignment) are batch-invariant. x (and o) are
// read once; all of a thread's loads are issued before the first use.
// Per-block FP8: the group maxima meet in shared memory through integer atomicMax on |y|'s bit
// patterns — a maximum is order-independent and exact, so this stays deterministic.
//
// kRealign (fwd.realigned_row): the same mapping, order and arithmetic — the same bits — but
// the row moves between global and shared memory in 16-byte vectors (realign_load/store below):
// x (and o) are copied into shared memory first, each thread reads its elements from there, and
// y (and the fused add's residual) is written to shared memory and stored from there. An
// element access moves 2 bytes of a 16-bit row per thread and instruction; a vector 16.
template <typename T, typename G, bool kQuant, bool kAdd, Mutant M, bool kRealign = false, bool kPersistent = false>
__global__ void __launch_bounds__(kElementMaxThreads) fwd_element_kernel(Params p) {
  constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  constexpr int K = kElementSlots;
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  __shared__ unsigned group_bits[kQuant ? kElementMaxGroups : 1];
  __shared__ float group_inv[kQuant ? kElementMaxGroups : 1];
  // Column indices in 32 bits (D <= 8192); row offsets stay 64-bit (row_off).
  const int t = static_cast<int>(threadIdx.x);
  const int B = static_cast<int>(blockDim.x);
  const int D = static_cast<int>(p.dim);
  const G* g = static_cast<const G*>(p.g);
  const bool weighted = p.convention != static_cast<int>(Convention::no_weight);

  // One block per row (the launcher checks R < 2^31): nothing is carried from row to row, so
  // no per-slot address arithmetic is hoisted out of a row loop and held in registers.
  // kPersistent (fwd.realigned_row): a grid of a few blocks per SM walks the rows blockIdx.x +
  // k·gridDim.x with the row's weights held in registers from the start (16 fp32 per thread):
  // a row of the one-block-per-row form pays a global load, a conversion and the convention per
  // element for its weights, and a block launch (ncu: 60 instructions per element at D = 1025,
  // 0.45 of the copy). Same mapping, order and arithmetic: the same bits.
  static_assert(!kPersistent || kRealign, "persistent rows: the realigned form only");
  [[maybe_unused]] float w_held[kPersistent ? K : 1];
  if constexpr (kPersistent) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = t + k * B;
      w_held[k] = (weighted && j < D) ? effective_weight(to_float(g[j]), p.convention) : 1.0f;
    }
  }
  auto row_body = [&](const std::int64_t row) {
    // kRealign: two row buffers of realign_buffer_bytes(D, sizeof(T)) in dynamic shared memory
    // (x, then the residual or y; o, then y under the fused add).
    extern __shared__ __align__(16) unsigned char realign_mem[];
    T* const buf_a = reinterpret_cast<T*>(realign_mem);
    T* const buf_b = reinterpret_cast<T*>(realign_mem + realign_buffer_bytes(D, sizeof(T)));
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    [[maybe_unused]] const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;
    [[maybe_unused]] int lead_x = 0, lead_o = 0;
    if constexpr (kRealign) {
      lead_x = realign_load(buf_a, xr, D, t, B);
      if constexpr (kAdd) lead_o = realign_load(buf_b, orow, D, t, B);
      if constexpr (kPersistent) {  // the block's next row into L2, behind this row's loads
        if (row + gridDim.x < p.rows) {
          const std::int64_t next = row + gridDim.x;
          prefetch_row_l2(static_cast<const T*>(p.x) + row_off<M>(next, p.x_stride, D, sizeof(T)), D * sizeof(T), t, B);
          if constexpr (kAdd)
            prefetch_row_l2(static_cast<const T*>(p.o) + row_off<M>(next, p.o_stride, D, sizeof(T)), D * sizeof(T), t, B);
        }
      }
      __syncthreads();
    }
    float h[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = t + k * B;
      if constexpr (kRealign) {
        h[k] = j < D ? to_float(buf_a[lead_x + j]) : 0.0f;
      } else {
        h[k] = j < D ? load_scalar(xr, j) : 0.0f;
      }
    }
    [[maybe_unused]] float hn[K];  // M17: the unrounded x + o that the mutant normalizes
    if constexpr (kAdd) {
      T* xw = static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T));
      float o[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int j = t + k * B;
        if constexpr (kRealign) {
          o[k] = j < D ? to_float(buf_b[lead_o + j]) : 0.0f;
        } else {
          o[k] = j < D ? load_scalar(orow, j) : 0.0f;
        }
      }
      [[maybe_unused]] int lead_w = 0;
      if constexpr (kRealign) {
        __syncthreads();  // every x and o read from the buffers: buf_a takes the residual
        lead_w = realign_lead(xw);
      }
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int j = t + k * B;
        hn[k] = h[k] + o[k];
        h[k] = round_through<T>(hn[k]);
        if constexpr (kRealign) {
          if (j < D) buf_a[lead_w + j] = from_float<T>(h[k]);
        } else {
          if (j < D) store_scalar(xw, j, h[k]);
        }
        if constexpr (M == Mutant::M17_add_unrounded_sum) h[k] = hn[k];
      }
      if constexpr (kRealign) {
        __syncthreads();
        realign_store(xw, buf_a, D, t, B);
      }
    }
    // kRealign: the buffer y goes through (x's buffer, or o's under the fused add: x's holds the
    // residual being stored). Without the fused add every thread has read its x from buf_a
    // before block_sum's barrier below, so y may overwrite it after.
    [[maybe_unused]] T* const buf_y = kAdd ? buf_b : buf_a;
    // Σh²: the slots in order (zeros past D add exact zeros), then the block tree.
    SumSquares<T, M> ss;
#pragma unroll
    for (int k = 0; k < K; ++k) ss.add(h[k]);
    const float total = block_sum<kBarrier>(ss.acc, sum_partials);
    const float r = rstd_of<M>(total, D, ((D + kChunk - 1) / kChunk) * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    float y[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = t + k * B;
      float w = 1.0f;
      if constexpr (kPersistent) {
        w = w_held[k];
      } else if (weighted && j < D) {
        w = effective_weight(
            to_float(g[M == Mutant::M20_weight_by_row ? static_cast<int>(static_cast<unsigned>(row) % static_cast<unsigned>(D)) : j]),
            p.convention);
      }
      y[k] = y_of<T, M>(h[k], r, w, p.convention);
    }

    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
      if constexpr (kRealign) {
        const int lead_y = realign_lead(yr);
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int j = t + k * B;
          if (j < D) buf_y[lead_y + j] = from_float<T>(y[k]);
        }
        __syncthreads();
        realign_store(yr, buf_y, D, t, B);
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int j = t + k * B;
          if (j < D) store_scalar(yr, j, y[k]);
        }
      }
    } else {
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      float inv_row = 0.0f;
      if (mode == Quant::per_block) {
        for (int gi = t; gi < static_cast<int>(p.groups); gi += B) group_bits[gi] = 0u;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int j = t + k * B;
          if (j < D) atomicMax(&group_bits[j / static_cast<int>(kQuantGroup)], abs_bits(y[k]));
        }
        __syncthreads();
        for (int gi = t; gi < static_cast<int>(p.groups); gi += B) {
          const float s = scale_of<M>(__uint_as_float(group_bits[gi]), p);
          p.scale[row * p.groups + gi] = s;
          group_inv[gi] = __fdiv_rn(1.0f, s);
        }
        __syncthreads();
      } else {
        float s_row = 0.0f;
        if (mode == Quant::static_scale) {
          s_row = *p.scale;
        } else {
          unsigned bits = 0;
#pragma unroll
          for (int k = 0; k < K; ++k)
            if (t + k * B < D) bits = max(bits, abs_bits(y[k]));
          s_row = scale_of<M>(block_max<kBarrier>(__uint_as_float(bits), max_partials), p);
          if (t == 0) p.scale[row] = s_row;
        }
        inv_row = __fdiv_rn(1.0f, s_row);
      }
      [[maybe_unused]] unsigned char* const buf_q = reinterpret_cast<unsigned char*>(buf_y);
      [[maybe_unused]] const int lead_q = kRealign ? realign_lead(qr) : 0;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int j = t + k * B;
        if (j < D) {
          const float inv_s = mode == Quant::per_block ? group_inv[j / static_cast<int>(kQuantGroup)] : inv_row;
          if constexpr (kRealign) {
            buf_q[lead_q + j] = quantize<M>(y[k], inv_s, p.fp8_fmt, p.fp8_max);
          } else {
            qr[j] = quantize<M>(y[k], inv_s, p.fp8_fmt, p.fp8_max);
          }
        }
      }
      if constexpr (kRealign) {
        __syncthreads();
        realign_store(qr, buf_q, D, t, B);
      }
    }
  };
  if constexpr (kPersistent) {
    for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
      row_body(row);
      // The next row's copies overwrite the buffers this row's stores read, and its reductions
      // reuse the partials.
      __syncthreads();
    }
  } else {
    row_body(blockIdx.x);
  }
}

// ---------------------------------------------------------------------------------------------
// Scalar: any alignment
// ---------------------------------------------------------------------------------------------

inline constexpr int kScalarMaxThreads = 512;  // 128 registers: the FP8 + fused add forms need more than 64

// Thread t owns elements t, t + B, t + 2B, ... (B = blockDim.x) in every pass, so under fused
// add and in place each thread re-reads only what it wrote itself; the per-block FP8 pass
// reads other threads' h after a barrier.
template <typename T, typename G, bool kQuant, bool kAdd, Mutant M>
__global__ void __launch_bounds__(kScalarMaxThreads) fwd_scalar_kernel(Params p) {
  constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  const std::int64_t t = threadIdx.x;
  const std::int64_t B = blockDim.x;
  const std::int64_t D = p.dim;
  const G* g = static_cast<const G*>(p.g);
  const bool weighted = p.convention != static_cast<int>(Convention::no_weight);

  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    // Under fused add h lives in x_out after pass 1.
    const T* hr = kAdd ? static_cast<const T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T)) : xr;
    const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;

    SumSquares<T, M> ss;
    for (std::int64_t j = t; j < D; j += B) {
      float v = load_scalar(xr, j);
      if constexpr (kAdd) {
        const float sum = v + load_scalar(orow, j);
        v = round_through<T>(sum);
        store_scalar(static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T)), j, v);
      }
      ss.add(v);
    }
    const float total = block_sum<kBarrier>(ss.acc, sum_partials);
    const float r = rstd_of<M>(total, D, ((D + kChunk - 1) / kChunk) * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    auto h_at = [&](std::int64_t j) -> float { return load_scalar(hr, j); };
    auto y_at = [&](std::int64_t j) -> float {
      float w = 1.0f;
      if (weighted)
        w = effective_weight((M == Mutant::M20_weight_by_row) ? to_float(g[static_cast<unsigned>(row) % static_cast<unsigned>(D)])
                                                                : to_float(g[j]),
                             p.convention);
      return y_of<T, M>(h_at(j), r, w, p.convention);
    };

    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
      for (std::int64_t j = t; j < D; j += B) store_scalar(yr, j, y_at(j));
    } else {
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      float s_row = 0.0f;
      if (mode == Quant::static_scale) {
        s_row = *p.scale;
      } else if (mode == Quant::dynamic_token) {
        float amax = 0.0f;
        for (std::int64_t j = t; j < D; j += B) amax = nan_max(amax, fabsf(y_at(j)));
        amax = block_max<kBarrier>(amax, max_partials);
        s_row = scale_of<M>(amax, p);
        if (t == 0) p.scale[row] = s_row;
      } else if (mode == Quant::per_block) {
        // One thread per group: its amax sequentially, then the scale to global memory.
        float* srow = p.scale + row * p.groups;
        for (std::int64_t gi = t; gi < p.groups; gi += B) {
          float amax = 0.0f;
          const std::int64_t end = (gi + 1) * kQuantGroup < D ? (gi + 1) * kQuantGroup : D;
          for (std::int64_t j = gi * kQuantGroup; j < end; ++j) amax = nan_max(amax, fabsf(y_at(j)));
          srow[gi] = scale_of<M>(amax, p);
        }
        __syncthreads();  // the scales are read by other threads below
      }
      for (std::int64_t j = t; j < D; j += B) {
        const float s = mode == Quant::per_block ? p.scale[row * p.groups + j / kQuantGroup] : s_row;
        qr[j] = quantize<M>(y_at(j), __fdiv_rn(1.0f, s), p.fp8_fmt, p.fp8_max);
      }
    }
    __syncthreads();  // partials and (per-block) scales are reused by the next row
  }
}

}  // namespace rmsnorm::cuda::fwd
