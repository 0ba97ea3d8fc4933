// The forward family's kernels (plain, fused add, fused FP8 quantization, both fusions).
//
// Maths (docs/contract.md#semantics), per row:
//   h = x, or h = RN_x(x + o) written back to x (fused add);
//   Σ = Σ_j h_j² in fp32;  r = rsqrtf(Σ / D + eps)  (a true division by D, one rounding);
//   y_j = RN_out(h_j · r · w_j), w_j = g_j (standard), 1 + g_j (gemma), none (no_weight), or the
//   llama double rounding RN(RN(h·r)·g);  FP8: q_j = RN_fp8_sat(y_j / s) from the fp32 y.
//
// What the forward variants (variants/fwd_*.cuh) share: the kernel parameters, the row
// statistics, the weights and the FP8 outputs as device functions, and the register-held row
// kernel of two variants, fwd_regs_kernel (and its prefetching, staggered and lean-y forms): the
// row held in registers, ITERS chunks per thread, compile-time so the arrays stay in registers; x
// is read once and all loads of a thread are issued before the first use. LANES > 0 gives a
// sub-warp of LANES threads per row (fwd.warp_row, D ≤ 1024); LANES == 0 one block per row with
// blockDim.x threads (fwd.block_row). Each template is over the storage types, the two fusions
// and a Mutant switch.
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

// The dynamic per-token amax from the fused max (fwd_regs_body's lean_y form, fwd_smem_kernel's
// kFusedAmax): hw_max = max_j |RN(h_j·w_j)| over the row, reduced beside Σh² by block_sum_max, and
// amax = RN(r · hw_max). Where hw_max is a normal fp32 number every rounding in it is relative:
// RN(h·w) and RN(·r) are the two roundings of y's RN(RN(h·r)·w), and RN is monotone, so the max of
// the rounded products is the rounded max; amax is then within the oracle's eps32 of the exact
// r·max|h·w|, as the max of the ŷ_j is (oracle/src/forward_row.cpp, the scale's bound). Below
// 2^-126 (a subnormal product: an absolute error r·2^-150 the oracle's model does not budget; zero
// rows) the max is taken over the ŷ_j themselves (y_bits(): this thread's max |ŷ| bits), as the
// other forms do, behind a second barrier. A NaN or Inf product makes amax NaN / Inf as a NaN / Inf
// ŷ_j would (such a row's outputs are unconstrained). Block-uniform: hw_max is the block's value.
// kLanes > 0: a row of kLanes lanes (a whole warp: the branch is uniform across it), reduced by a
// butterfly over its lanes, no barrier.
template <bool kBarrier, int kLanes = 0, typename YBits>
__device__ __forceinline__ float fused_amax(float hw_max, float r, float* max_partials, YBits&& y_bits) {
  static_assert(kLanes == 0 || kLanes == kWarp, "a block's row or a warp's");
  if (hw_max >= 0x1p-126f || hw_max != hw_max) return __fmul_rn(hw_max, r);
  const unsigned bits = y_bits();
  if constexpr (kLanes > 0) {
    return warp_max<kLanes>(__uint_as_float(bits));
  } else {
    __syncthreads();  // max_partials were read by block_sum_max
    return block_max<kBarrier>(__uint_as_float(bits), max_partials);
  }
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

// max(a, b) propagating a NaN (PTX max.NaN: one FMNMX). chunk_amax: max |y_j| over a whole
// chunk as a float, a tree of 7 of them with the absolute values folded into their operands,
// where chunk_amax_bits takes a LOP3 an element and half a VIMNMX3. The same value for every
// input without a NaN (|y| >= +0: no signed zero is compared); a NaN in the chunk gives a NaN
// (the canonical one, where the bit max keeps the largest NaN pattern): the scale, and the row's
// outputs, are NaN either way.
__device__ __forceinline__ float fmax_nan(float a, float b) {
  float m;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(m) : "f"(a), "f"(b));
  return m;
}
struct FMaxNanOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmax_nan(a, b); }
};
__device__ __forceinline__ float chunk_amax(const float (&y)[kChunk]) {
  float m[kChunk / 2];
#pragma unroll
  for (int k = 0; k < kChunk / 2; ++k) m[k] = fmax_nan(fabsf(y[2 * k]), fabsf(y[2 * k + 1]));
  return fmax_nan(fmax_nan(m[0], m[1]), fmax_nan(m[2], m[3]));
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
// kWhole: chunk c is whole (the exact rows): its amax by chunk_amax, the group's by max.NaN.
template <Mutant M, int kWidth, typename Index, bool kWhole = false>
__device__ __forceinline__ void store_fp8_output(const Params& p, unsigned char* qr, std::int64_t row, Index c, bool mine,
                                                 int t, const float (&y)[kChunk], float inv_row, Quant mode,
                                                 std::int64_t full, int n_tail) {
  float inv_s = inv_row;
  if (mode == Quant::per_block) {
    float amax;
    if constexpr (kWhole) {
      amax = mine ? chunk_amax(y) : 0.0f;
      amax = warp_allreduce<kWidth>(amax, FMaxNanOp{});
    } else {
      amax = mine ? __uint_as_float(chunk_amax_bits(y, c, full, n_tail)) : 0.0f;
      amax = warp_max<kWidth>(amax);
    }
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
// for the other 16-bit forms of the fused add (they use about 50-64: more blocks per SM, more
// loads in flight), less for the 16-bit product forms below.
//
// fwd.block_row's 16-bit FP8 forms of the product (the L2-prefetch kernel's with 16-bit weights)
// are held to 80 (three 256-thread blocks): left at 128 ptxas took 86-96, so five 128-thread
// blocks fit an SM at D = 4096 (20 warps); at 80 six fit (24 warps). At 80 none of them spills
// (ptxas -v, CUDA 13.0); at 64 every one does (24-40 bytes). Kept at 128 (kCapOk false):
// fwd.block_row.staged' FP8 forms (20-28 bytes of spills at 80) and the prefetch kernel with fp32
// weights (8 bytes). The FP8 forward is latency-bound at 128 registers (ncu: 4.7 warps per
// scheduler, 40 % of cycles with no eligible warp); at 80 the FP8 forward runs 5-9 % faster on the
// H200 (bf16 and fp16, D = 1024-5120), the fused add + FP8 4-7 %, nothing slower.
// fwd.warp_row's 16-bit FP8 forms likewise, by chunks a thread: 4 (D = 513-1024, the forms
// that hold y: left to ptxas 88-96, two 256-thread blocks an SM) to 80, three blocks; 2 to 64
// and 1 to 48 (four and five blocks, what ptxas took at 128). None spills there.
template <typename T, bool kQuant, Mutant M, bool kEarlyW, bool kCapOk>
inline constexpr bool regs_fp8_capped = kQuant && sizeof(T) == 2 && M == Mutant::none && !kEarlyW && kCapOk;
// The plain 16-bit forward of the product (fwd.block_row's kernels and fwd.warp_row's, not the
// few-row form) is held to 40 registers, for more rows an SM with the same chunks in flight per
// thread: 3 blocks of 512 threads an SM or 6 of 256, against 2 and 4 at 64. None spills at 40
// (ptxas -v, CUDA 13.0, 32-bit chunk indices); the block forms spill 4-40 bytes at 32.
template <typename T, bool kQuant, bool kAdd, Mutant M, bool kEarlyW>
inline constexpr bool regs_plain_lean = !kQuant && !kAdd && sizeof(T) == 2 && M == Mutant::none && !kEarlyW;
template <int LANES, int ITERS, typename T, bool kQuant, bool kAdd, Mutant M, bool kEarlyW, bool kCapOk>
inline constexpr int regs_budget =
    regs_plain_lean<T, kQuant, kAdd, M, kEarlyW>                        ? 40
    : regs_fp8_capped<T, kQuant, M, kEarlyW, kCapOk>                    ? (LANES == 0 || ITERS == 4 ? 80 : ITERS == 2 ? 64 : 48)
    : (kQuant || sizeof(T) == 4 || (kAdd && M != Mutant::none) || kEarlyW) ? 128
                                                                         : 64;
template <int LANES, int ITERS, typename T, bool kQuant, bool kAdd, Mutant M, bool kEarlyW, bool kCapOk>
inline constexpr int regs_min_blocks =
    65536 / (regs_block_threads<LANES, T, kQuant> * regs_budget<LANES, ITERS, T, kQuant, kAdd, M, kEarlyW, kCapOk>);

// The register-row kernels: a row, or LANES-lane groups of rows, held in registers.
// LANES > 0: groups of LANES consecutive lanes of a warp own one row each (blockDim.x / LANES
// rows per block; blockDim.x a multiple of 32, at most kSubWarpBlock). LANES == 0: the whole block
// owns one row.
// Chunk c of the row belongs to thread c % lanes, as its (c / lanes)-th chunk: every step of the
// loop is a contiguous, coalesced run of 16-byte accesses.
//
// How the kernel walks its rows (RowsForm); all but plain are forms of the block form, and all but
// plain and staged are the product's alone (no mutant switch):
//
// staged (fwd.block_row.staged): the grid is persistent (a few blocks per SM, rows blockIdx.x +
// k·gridDim.x) and each thread copies its own chunks of the block's next stages − 1 rows into
// shared-memory stages with cp.async (async_copy.cuh), so a block has rows in flight while it
// reduces, scales and stores the current one (with one row per block and its loads issued at the
// top, a block's loads are idle through its reduction(s) and stores). Same thread mapping, same
// order, same arithmetic as the register form: every output bit equals fwd.block_row's.
//
// early_weights (fwd.block_row for few rows): the row's weights are loaded with its x, before the
// reduction, instead of after it: with few rows the blocks wait on memory, and weight loads after
// the row sum would be a second round trip (the same values, the same bits).
//
// ahead (fwd.block_row where it measures faster, fwd_regs_ahead_kernel): a block per row asks
// L2 for the row `ahead` rows on, `ahead` = the blocks that fit on the device at once: the block
// that takes this slot one wave later finds its row there, and DRAM keeps working through this
// block's reduction and stores. It slows some forms (the fused add by 4-15 % on the H200), so it
// is a kernel of its own, launched where it is faster (run_block_row): a kernel argument on every
// instance would move their registers too.
//
// lean_y (fwd.block_row's FP8 forms of 16-bit rows past 8192, and its per-block scales of narrower
// rows past the few-row form, fwd_regs_lean_y_kernel): y is not held through the scale (the row's 4
// chunks of fp32 y would take 32 registers a thread, past the 64 that two 512-thread blocks per SM
// allow; at D <= 8192 the held-y kernel's 80 registers fit a quarter fewer rows an SM). With a
// dynamic per-token scale the row-sum pass reads the weights too and the amax comes from fused_amax, so y is formed once, in the quantizing
// pass (the weights read a second time, from L1); only its fallback (hw_max below 2^-126) forms y
// for the amax and again to quantize (the same operations on the same operands: the same bits).
enum class RowsForm { plain, staged, early_weights, ahead, lean_y };

// Every compile-time choice of a register-row kernel: the storage types, the two fusions, the
// lanes per row (0: the block), the chunks per thread, the mutant switch and the form.
template <typename T_, typename G_, bool kQuant_, bool kAdd_, int LANES_, int ITERS_, Mutant M_, RowsForm kForm,
          bool kExact_ = false>
struct RegsRow {
  using T = T_;
  using G = G_;
  static constexpr bool kQuant = kQuant_;
  static constexpr bool kAdd = kAdd_;
  static constexpr int LANES = LANES_;
  static constexpr int ITERS = ITERS_;
  static constexpr Mutant M = M_;
  static constexpr bool kBlock = LANES == 0;
  static constexpr bool kStaged = kForm == RowsForm::staged;
  static constexpr bool kEarlyW = kForm == RowsForm::early_weights;
  static constexpr bool kAhead = kForm == RowsForm::ahead;
  static constexpr bool kLeanY = kForm == RowsForm::lean_y;
  // kExact: D = lanes · ITERS · 8 (the launch checks it): every chunk of every thread is a whole
  // chunk of the row, so no chunk index is compared with the row's end.
  static constexpr bool kExact = kExact_;
  static constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  static constexpr int kTensors = kAdd ? 2 : 1;                  // staged: x (and o)
  // Chunk indices (a row held in registers has D <= 16384): 32-bit where that saves registers (the
  // plain forward, the block form's fused add, lean y); 64-bit in the sub-warp fused add and the
  // held-y FP8 forms, which take more with 32.
  // The held-y exact rows: unsigned (c < D / 8 <= 1024; the group index c / 16 a shift).
  using Index = std::conditional_t<kExact && !kLeanY, unsigned,
                                   std::conditional_t<kLeanY || (!kQuant && (!kAdd || LANES == 0)), int, std::int64_t>>;
  static_assert(!kLeanY || (kQuant && (kBlock || LANES == kWarp) && M == Mutant::none),
                "lean y: the FP8 product of the block form or of a warp a row");
  static_assert(!kAhead || (kBlock && M == Mutant::none), "the block form of the product");
  static_assert(!kEarlyW || M == Mutant::none, "early weights: the product's register form");
  static_assert(!kStaged || kBlock, "staged rows: the block form");
  static_assert(!kExact ||
                    ((kBlock || LANES == kWarp || (LANES == kWarp / 2 && ITERS == 1)) &&
                     (kForm == RowsForm::plain || kForm == RowsForm::lean_y || kForm == RowsForm::early_weights) &&
                     M == Mutant::none),
                "exact rows: the product's block form, a warp a row, or half a warp of one chunk each");
  static_assert(LANES == 0 || (LANES <= kWarp && (LANES & (LANES - 1)) == 0), "sub-warp lanes");
};

template <class R>
__device__ __forceinline__ void fwd_regs_body(const Params& p, std::int64_t ahead) {
  using T = typename R::T;
  using G = typename R::G;
  constexpr bool kQuant = R::kQuant, kAdd = R::kAdd, kBlock = R::kBlock, kBarrier = R::kBarrier;
  constexpr bool kStaged = R::kStaged, kEarlyW = R::kEarlyW, kAhead = R::kAhead, kLeanY = R::kLeanY;
  constexpr bool kExact = R::kExact;
  constexpr int LANES = R::LANES, ITERS = R::ITERS, kTensors = R::kTensors;
  constexpr Mutant M = R::M;
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  extern __shared__ __align__(16) unsigned char stage_mem[];  // kStaged: [stages][kTensors][ITERS][threads]

  const int lanes = kBlock ? static_cast<int>(blockDim.x) : LANES;
  const int t = kBlock ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % LANES;
  const std::int64_t rows_per_block = kBlock ? 1 : static_cast<int>(blockDim.x) / LANES;
  const std::int64_t sub = kBlock ? 0 : static_cast<int>(threadIdx.x) / LANES;

  using Index = typename R::Index;
  const std::int64_t D = p.dim;
  const Index full = static_cast<Index>(D / kChunk);
  const int n_tail = kExact ? 0 : static_cast<int>(D % kChunk);
  const Index nchunks = full + (n_tail > 0 ? 1 : 0);
  // kExact: chunk c is always in the row (kExact || c < nchunks), and the chunk helpers are told
  // that the row's whole chunks end past c (kExact ? c + 1 : full), so their tail paths fold away.

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
        if (kExact || c < nchunks) {
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
        h[i] = active ? load_row_chunk<T, M, true>(xr, c, kExact ? c + 1 : full, n_tail) : zero_chunk<T>();
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
        wc[i] = active ? weight_chunk<G>(p, c, kExact ? c + 1 : full, n_tail) : zero_chunk<G>();
      }
    }
    if constexpr (kAdd) {
      if constexpr (!kStaged) {
        const T* orow = static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T));
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
          const Index c = static_cast<Index>(i) * lanes + t;
          ov[i] = active ? load_row_chunk<T, M, true>(orow, c, kExact ? c + 1 : full, n_tail) : zero_chunk<T>();
        }
      }
      // 2. Fused add: h = RN_x(x + o), written back to the residual stream. (M17 keeps x and o
      // apart and normalizes the unrounded fp32 sum; the written residual is still rounded.)
      T* xw = static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T));
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        const Chunk<T> rounded = add_rounded(h[i], ov[i]);
        if (active) store_row_chunk<T, true>(xw, c, kExact ? c + 1 : full, n_tail, rounded);
        if constexpr (M != Mutant::M17_add_unrounded_sum) h[i] = rounded;
      }
    }
    // kExact with y held (and a warp a row's forward and fused add): h unpacked to fp32 once, in
    // the Σh² pass, and held there (made opaque, so not unpacked again from the 16-bit chunks)
    // until y takes its registers. Not the block form's forward and fused add: their 40 and 48
    // registers do not hold it.
    constexpr bool kHoldH = kExact && !kLeanY && (kQuant || !kBlock);
    [[maybe_unused]] float hf[kHoldH ? ITERS : 1][kChunk] = {};
    // Element j of chunk i of h as fp32 (M17: the unrounded x + o).
    auto hval = [&](int i, int j) -> float {
      if constexpr (kHoldH) {
        return hf[i][j];
      } else if constexpr (kAdd && M == Mutant::M17_add_unrounded_sum) {
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
    [[maybe_unused]] float hw_m = 0.0f;  // kExact: the same max as a float (chunk_amax)
    const bool hw_pass = kLeanY && static_cast<Quant>(p.quant) == Quant::dynamic_token;
    if (hw_pass) {
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        float w[kChunk], hw[kChunk];
        if (active && (kExact || c < nchunks)) {
          load_weights<G, M>(p, row, c, kExact ? c + 1 : full, n_tail, w);
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
        if constexpr (kExact) {
          hw_m = i == 0 ? chunk_amax(hw) : fmax_nan(hw_m, chunk_amax(hw));
        } else {
          if (active) hw_bits = max(hw_bits, chunk_amax_bits(hw, c, full, n_tail));
        }
      }
    } else if constexpr (kHoldH) {
#pragma unroll
      for (int i = 0; i < ITERS; ++i)
#pragma unroll
        for (int j = 0; j < kChunk; ++j) {
          hf[i][j] = chunk_get(h[i], j);
          ss.add(hf[i][j]);
          asm volatile("" : "+f"(hf[i][j]));
        }
    } else {
#pragma unroll
      for (int i = 0; i < ITERS; ++i)
#pragma unroll
        for (int j = 0; j < kChunk; ++j) ss.add(hval(i, j));
    }
    float total;
    if constexpr (kLeanY && kBlock) {
      if (hw_pass) {
        total = ss.acc;
        hw_max = kExact ? (active ? hw_m : 0.0f) : __uint_as_float(hw_bits);
        block_sum_max<kBarrier>(total, hw_max, sum_partials, max_partials);
      } else {
        total = block_sum<kBarrier>(ss.acc, sum_partials);
      }
    } else if constexpr (kLeanY) {  // a warp a row: the sum in warp_sum's order, as the held-y form's
      total = warp_sum<LANES>(ss.acc);
      if (hw_pass) hw_max = warp_max<LANES>(kExact ? (active ? hw_m : 0.0f) : __uint_as_float(hw_bits));
    } else if constexpr (kBlock) {
      total = block_sum<kBarrier>(ss.acc, sum_partials);
    } else {
      total = warp_sum<LANES>(ss.acc);
    }
    const float r = rstd_of<M>(total, D, nchunks * kChunk, p.eps);
    if (active && t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    // 4. Outputs.
    auto y_chunk = [&](int i, std::int64_t c, float (&y)[kChunk]) {
      if constexpr (kExact) {
        // The weights' convention tested once a chunk, not an add an element: weights_of's offset
        // is -0 for standard and llama (w = g exactly), 1 for gemma and for no weight (g = 0).
        float g[kChunk];
        if constexpr (kEarlyW) {
          unpack(wc[i], g);
        } else {
          unpack(weight_chunk<G>(p, c, c + 1, 0), g);
        }
        if (p.convention == static_cast<int>(Convention::standard)) {
#pragma unroll
          for (int j = 0; j < kChunk; ++j) y[j] = (hval(i, j) * r) * g[j];
        } else if (p.convention == static_cast<int>(Convention::llama)) {
#pragma unroll
          for (int j = 0; j < kChunk; ++j) y[j] = round_through<T>(round_through<T>(hval(i, j) * r) * g[j]);
        } else {
#pragma unroll
          for (int j = 0; j < kChunk; ++j) y[j] = (hval(i, j) * r) * (g[j] + 1.0f);
        }
        return;
      }
      float w[kChunk];
      if constexpr (kEarlyW) {
        weights_of(wc[i], p.convention, w);
      } else {
        load_weights<G, M>(p, row, c, kExact ? c + 1 : full, n_tail, w);
      }
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = y_of<T, M>(hval(i, j), r, w[j], p.convention);
    };
    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        if (!active || (!kExact && c >= nchunks)) continue;
        float y[kChunk];
        y_chunk(i, c, y);
        store_row_chunk<T, true>(yr, c, kExact ? c + 1 : full, n_tail, pack<T>(y));
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
        const float amax = fused_amax<kBarrier, kBlock ? 0 : LANES>(hw_max, r, max_partials, [&] {
          unsigned bits = 0;
          opaque_h();
#pragma unroll
          for (int i = 0; i < ITERS; ++i) {
            const Index c = static_cast<Index>(i) * lanes + t;
            if (active && (kExact || c < nchunks)) {
              float y[kChunk];
              y_chunk(i, c, y);
              bits = max(bits, chunk_amax_bits(y, c, kExact ? c + 1 : full, n_tail));
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
        const bool mine = active && (kExact || c < nchunks);
        float y[kChunk];
        if (mine) {
          y_chunk(i, c, y);
        } else {
#pragma unroll
          for (int j = 0; j < kChunk; ++j) y[j] = 0.0f;
        }
        store_fp8_output<M, kGroupChunks, Index, kExact>(p, qr, row, c, mine, t, y, inv_row, mode, full, n_tail);
      }
    } else {
      // FP8: y is formed once, kept in registers for the scale and the quantization.
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      float y[ITERS][kChunk];
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const Index c = static_cast<Index>(i) * lanes + t;
        if (active && (kExact || c < nchunks)) {
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
        [[maybe_unused]] float m = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
          const Index c = static_cast<Index>(i) * lanes + t;
          if constexpr (kExact) {
            m = i == 0 ? chunk_amax(y[0]) : fmax_nan(m, chunk_amax(y[i]));
          } else {
            if (active) bits = max(bits, chunk_amax_bits(y[i], c, full, n_tail));
          }
        }
        float amax = kExact ? (active ? m : 0.0f) : __uint_as_float(bits);
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
        const bool mine = active && (kExact || c < nchunks);
        // The 16 chunks of a group sit on 16 consecutive lanes of one step (lanes is a multiple
        // of 16, or the whole row is one group): a 16-lane butterfly gives the group's amax.
        constexpr int kWidth = (LANES > 0 && LANES < kGroupChunks) ? LANES : kGroupChunks;
        store_fp8_output<M, kWidth, Index, kExact>(p, qr, row, c, mine, t, y[i], inv_row, mode, full, n_tail);
      }
    }
    // kLeanY in the block form: one row per block (the launch has a block per row): no second pass
    // of the loop, so nothing is held across rows.
    if constexpr (kLeanY && kBlock) break;
    if constexpr (kBlock) __syncthreads();  // the partials are reused by the next row
  }
  if constexpr (kStaged) wait_copies(0);  // no copy may outlive the block (the trailing groups are empty)
}

template <typename T, typename G, bool kQuant, bool kAdd, int LANES, int ITERS, Mutant M, bool kStaged = false,
          bool kEarlyW = false>
__global__ void __launch_bounds__(regs_block_threads<LANES, T, kQuant>, (regs_min_blocks<LANES, ITERS, T, kQuant, kAdd, M, kEarlyW, !kStaged>)) fwd_regs_kernel(Params p) {
  begin_dependent_grid();
  fwd_regs_body<RegsRow<T, G, kQuant, kAdd, LANES, ITERS, M,
                        kStaged ? RowsForm::staged : kEarlyW ? RowsForm::early_weights : RowsForm::plain>>(p, 0);
}
// Rows of D = lanes · ITERS · 8, fwd.block_row's (LANES = 0) and fwd.warp_row's (a warp a row, or
// half a warp of one chunk at D = 128): the plain kernel's body and bits without the row-end tests
// (kExact). The 16-bit FP8 forward (held y) and the forward; on fwd.warp_row also the fused add and
// the fused add + FP8.
// fwd.warp_row without FP8 outputs holds h in fp32 (kHoldH) and takes 64 registers: at the plain
// forward's 40 (regs_plain_lean) ptxas spills 32 bytes (a warp a row, fp16 rows, CUDA 13.0). The
// block form keeps the general kernel's budget.
template <int LANES, int ITERS, typename T, bool kQuant, bool kAdd>
inline constexpr int regs_exact_min_blocks =
    kQuant || LANES == 0 ? regs_min_blocks<LANES, ITERS, T, kQuant, kAdd, Mutant::none, false, true>
                         : 65536 / (regs_block_threads<LANES, T, kQuant> * 64);
template <typename T, typename G, int LANES, int ITERS, bool kQuant = true, bool kAdd = false>
__global__ void __launch_bounds__(regs_block_threads<LANES, T, kQuant>, (regs_exact_min_blocks<LANES, ITERS, T, kQuant, kAdd>))
    fwd_regs_exact_kernel(Params p) {
  begin_dependent_grid();
  fwd_regs_body<RegsRow<T, G, kQuant, kAdd, LANES, ITERS, Mutant::none, RowsForm::plain, true>>(p, 0);
}
template <typename T, typename G, bool kQuant, bool kAdd, int ITERS>
__global__ void __launch_bounds__(regs_block_threads<0, T, kQuant>, (regs_min_blocks<0, ITERS, T, kQuant, kAdd, Mutant::none, false, sizeof(G) == 2>)) fwd_regs_ahead_kernel(Params p, std::int64_t ahead) {
  begin_dependent_grid();
  fwd_regs_body<RegsRow<T, G, kQuant, kAdd, 0, ITERS, Mutant::none, RowsForm::ahead>>(p, ahead);
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
// kExact: rows of D = lanes · ITERS · 8, the body without the row-end tests (the same bits).
template <typename T, typename G, bool kQuant, bool kAdd, int ITERS, bool kExact = false>
__global__ void __launch_bounds__(regs_block_threads<0, T, kQuant>, (regs_min_blocks<0, ITERS, T, kQuant, kAdd, Mutant::none, false, true>))
    fwd_regs_stagger_kernel(Params p, std::int64_t wave, unsigned sms, unsigned slot_ns) {
  begin_dependent_grid();
  if (blockIdx.x < wave) {
    const unsigned long long wait = static_cast<unsigned long long>(blockIdx.x / sms) * slot_ns;
    const unsigned long long t0 = global_timer_ns();
    while (global_timer_ns() - t0 < wait) {
    }
  }
  fwd_regs_body<RegsRow<T, G, kQuant, kAdd, 0, ITERS, Mutant::none, RowsForm::plain, kExact>>(p, 0);
}
// fwd.block_row's 16-bit fused add of rows of D <= 8192 (256 threads or fewer): the plain body
// held to 48 registers (__maxnreg__): five blocks of 256 threads an SM (ten of 128) against four
// (eight) at 64. None spills at 48 so stated (ptxas -v, CUDA 13.0, 32-bit chunk indices); stated
// as a 256-thread launch bound of five blocks it spills 4-60 bytes, with 64-bit indices 24-40.
// The same body: the same bits. (Without the row-end tests, kExact, the fp16 rows spill 16 bytes
// at 48.)
inline constexpr int kAddNarrowThreads = 256;
template <typename T, typename G, int ITERS>
__global__ void __maxnreg__(48) fwd_regs_add_narrow_kernel(Params p) {
  begin_dependent_grid();
  static_assert(sizeof(T) == 2, "16-bit rows");
  fwd_regs_body<RegsRow<T, G, false, true, 0, ITERS, Mutant::none, RowsForm::plain>>(p, 0);
}
// fwd.block_row's FP8 forms of 16-bit rows of 8192 < D <= 16384 (kBlockRowLeanYMaxDim16), and its
// per-block scales of narrower rows (kLeanYPerBlockMinRows): up to 512 threads a row, y not held
// (the lean_y form), held to 64 registers so that two blocks share an SM (one row's loads run
// beside the other's reductions and stores).
// LANES == 32 (fwd.warp_row's FP8 forward of D = 513-1024 with per-block scales, no fused add): a
// warp a row, 256-thread blocks held to 64 registers (four an SM) where the held-y kernel takes 80.
inline constexpr int kLeanYThreads = 512;
inline constexpr int kLeanYMinBlocks = 2;
inline constexpr int kLeanYWarpMinBlocks = 4;
template <typename T, typename G, bool kAdd, int ITERS, int LANES = 0>
__global__ void __launch_bounds__(LANES > 0 ? kSubWarpBlock : kLeanYThreads,
                                  LANES > 0 ? kLeanYWarpMinBlocks : kLeanYMinBlocks) fwd_regs_lean_y_kernel(Params p) {
  begin_dependent_grid();
  static_assert(sizeof(T) == 2, "16-bit rows");
  fwd_regs_body<RegsRow<T, G, true, kAdd, LANES, ITERS, Mutant::none, RowsForm::lean_y>>(p, 0);
}
// The few-row form (early weights) of rows of D = lanes · ITERS · 8, fwd.block_row's (LANES = 0) and
// fwd.warp_row's (a warp a row), every op of 16-bit rows: its body and bits without the row-end
// tests (kExact). With a block per row and few rows, a row's latency is the cost, and each step of
// a thread's serial work (its loads, Σh², its stores) is on that path.
template <typename T, typename G, bool kQuant, bool kAdd, int LANES, int ITERS>
__global__ void __launch_bounds__(regs_block_threads<LANES, T, kQuant>,
                                  (regs_min_blocks<LANES, ITERS, T, kQuant, kAdd, Mutant::none, true, true>))
    fwd_regs_few_exact_kernel(Params p) {
  begin_dependent_grid();
  fwd_regs_body<RegsRow<T, G, kQuant, kAdd, LANES, ITERS, Mutant::none, RowsForm::early_weights, true>>(p, 0);
}
// The lean-y FP8 forward (no fused add) of rows of D = lanes · ITERS · 8: its body and bits without
// the row-end tests (kExact).
template <typename T, typename G, int ITERS, int LANES = 0>
__global__ void __launch_bounds__(LANES > 0 ? kSubWarpBlock : kLeanYThreads,
                                  LANES > 0 ? kLeanYWarpMinBlocks : kLeanYMinBlocks)
    fwd_regs_lean_y_exact_kernel(Params p) {
  begin_dependent_grid();
  static_assert(sizeof(T) == 2, "16-bit rows");
  fwd_regs_body<RegsRow<T, G, true, false, LANES, ITERS, Mutant::none, RowsForm::lean_y, true>>(p, 0);
}

}  // namespace rmsnorm::cuda::fwd
