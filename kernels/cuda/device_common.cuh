// Device helpers shared by the CUDA forward and backward families.
//
// Everything here is deliberately generic CUDA: thread/block indices, warp shuffles, shared
// memory, barriers and plain or 16-byte vector loads. No clusters, TMA or other Hopper-only
// features, so a later host emulation of these kernels can reuse the same code.
//
// Conventions
// - Storage types are float, __half and __nv_bfloat16; arithmetic is always fp32.
// - A "chunk" is kChunk = 8 consecutive elements of one row. For 16-bit types a chunk is one
//   16-byte vector, for fp32 two. Every vector path works in chunks, so the number of elements a
//   thread sums sequentially depends only on D and the thread mapping, never on the dtype (the
//   declared accumulation shape of a variant is a function of D alone).
// - Conversions to storage round to nearest even, once.
// - Row offsets are int64 products (row · stride); see row_offset().
// - Reductions are deterministic: a fixed xor butterfly inside a warp, then one partial per warp
//   through shared memory and the same butterfly across the partials. The order depends only on
//   the block shape, never on R, on the row index or on timing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "rmsnorm/types.h"
#include "rmsnorm/variant.h"

namespace rmsnorm::cuda {

inline constexpr int kWarp = 32;
inline constexpr int kChunk = 8;          // elements per vector chunk
inline constexpr int kVecBytes = 16;      // bytes per vector access
inline constexpr unsigned kFullMask = 0xffffffffu;

// ---------------------------------------------------------------------------------------------
// Storage types and dtype dispatch
// ---------------------------------------------------------------------------------------------

template <typename T>
struct StorageTraits;
template <>
struct StorageTraits<float> { static constexpr DType dtype = DType::f32; };
template <>
struct StorageTraits<__half> { static constexpr DType dtype = DType::f16; };
template <>
struct StorageTraits<__nv_bfloat16> { static constexpr DType dtype = DType::bf16; };

template <typename T>
inline constexpr bool is_16bit_v = sizeof(T) == 2;

// A type carried through a generic lambda by dispatch_activation().
template <typename T>
struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) for the storage type of an activation dtype (f32/f16/bf16).
// Returns false (and does not call f) for any other dtype.
template <typename F>
inline bool dispatch_activation(DType t, F&& f) {
  switch (t) {
    case DType::f32: std::forward<F>(f)(TypeTag<float>{}); return true;
    case DType::f16: std::forward<F>(f)(TypeTag<__half>{}); return true;
    case DType::bf16: std::forward<F>(f)(TypeTag<__nv_bfloat16>{}); return true;
    default: return false;
  }
}

// Calls f(TypeTag<T>{}, TypeTag<G>{}) for x type T and weight type G, where G is T or float
// (the contract's only weight types). False for any other combination.
template <typename F>
inline bool dispatch_activation_weight(DType x, DType g, F&& f) {
  bool done = false;
  dispatch_activation(x, [&](auto tt) {
    using T = typename decltype(tt)::type;
    if (g == StorageTraits<T>::dtype) {
      f(tt, TypeTag<T>{});
      done = true;
    } else if (g == DType::f32) {
      f(tt, TypeTag<float>{});
      done = true;
    }
  });
  return done;
}

// ---------------------------------------------------------------------------------------------
// Scalar conversions (exact widening, RN-even narrowing)
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// v rounded once to T and widened back: the value RN_T(v) as fp32 (exact for every T here).
template <typename T>
__device__ __forceinline__ float round_through(float v) { return to_float(from_float<T>(v)); }

// A store of one element to a global address held as an integer. A thread that writes elements
// G apart steps that integer by G·size (one IMAD.WIDE per element); through a C++ pointer nvcc
// re-forms base + index·size for every element instead (four to five instructions in the SASS
// of the packed kernels). Volatile with a memory clobber, like the cp.async copies: ordered
// against them and against every other access, as a plain store would be.
__device__ __forceinline__ void store_global_at(std::uint64_t addr, float v) {
  asm volatile("st.global.f32 [%0], %1;" ::"l"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ void store_global_at(std::uint64_t addr, __half v) {
  asm volatile("st.global.b16 [%0], %1;" ::"l"(addr), "h"(__half_as_ushort(v)) : "memory");
}
__device__ __forceinline__ void store_global_at(std::uint64_t addr, __nv_bfloat16 v) {
  asm volatile("st.global.b16 [%0], %1;" ::"l"(addr), "h"(__bfloat16_as_ushort(v)) : "memory");
}
__device__ __forceinline__ void store_global_at(std::uint64_t addr, unsigned char v) {  // an FP8 code
  asm volatile("st.global.u8 [%0], %1;" ::"l"(addr), "r"(static_cast<unsigned>(v)) : "memory");
}
template <typename T>
__device__ __forceinline__ std::uint64_t global_address(T* p) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}
// The same for loads of one element from shared memory at a 32-bit shared-window address
// (shared_address below), stepped by the caller. Volatile with a memory clobber: nvcc may not
// move it across the barrier that publishes the stage it reads, nor past the element stores
// that fill a tile's edges (a non-volatile asm is a pure function to it).
template <typename T>
__device__ __forceinline__ T load_shared_at(std::uint32_t addr);
template <>
__device__ __forceinline__ float load_shared_at<float>(std::uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
template <>
__device__ __forceinline__ __half load_shared_at<__half>(std::uint32_t addr) {
  unsigned short b;
  asm volatile("ld.shared.b16 %0, [%1];" : "=h"(b) : "r"(addr) : "memory");
  return __ushort_as_half(b);
}
template <>
__device__ __forceinline__ __nv_bfloat16 load_shared_at<__nv_bfloat16>(std::uint32_t addr) {
  unsigned short b;
  asm volatile("ld.shared.b16 %0, [%1];" : "=h"(b) : "r"(addr) : "memory");
  return __ushort_as_bfloat16(b);
}
// Predicated forms (fwd.packed_rows' columns past a row's end): the access happens when `on`,
// else the load gives +0 and the store does nothing. One PTX predicate, where a C++ `if` around
// the access makes nvcc branch around every element (BSSY / BRA / BSYNC and register moves in
// the SASS of the fused add + FP8 instance).
template <typename T>
__device__ __forceinline__ T load_shared_if(bool on, std::uint32_t addr);
template <>
__device__ __forceinline__ float load_shared_if<float>(bool on, std::uint32_t addr) {
  float v;
  asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; mov.b32 %0, 0; @q ld.shared.f32 %0, [%1]; }"
               : "=f"(v) : "r"(addr), "r"(static_cast<int>(on)) : "memory");
  return v;
}
__device__ __forceinline__ unsigned short load_shared_b16_if(bool on, std::uint32_t addr) {
  unsigned short b;
  asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; mov.b16 %0, 0; @q ld.shared.b16 %0, [%1]; }"
               : "=h"(b) : "r"(addr), "r"(static_cast<int>(on)) : "memory");
  return b;
}
template <>
__device__ __forceinline__ __half load_shared_if<__half>(bool on, std::uint32_t addr) {
  return __ushort_as_half(load_shared_b16_if(on, addr));
}
template <>
__device__ __forceinline__ __nv_bfloat16 load_shared_if<__nv_bfloat16>(bool on, std::uint32_t addr) {
  return __ushort_as_bfloat16(load_shared_b16_if(on, addr));
}
__device__ __forceinline__ void store_global_if(bool on, std::uint64_t addr, float v) {
  asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global.f32 [%0], %1; }" ::"l"(addr), "f"(v),
               "r"(static_cast<int>(on)) : "memory");
}
__device__ __forceinline__ void store_global_b16_if(bool on, std::uint64_t addr, unsigned short b) {
  asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global.b16 [%0], %1; }" ::"l"(addr), "h"(b),
               "r"(static_cast<int>(on)) : "memory");
}
__device__ __forceinline__ void store_global_if(bool on, std::uint64_t addr, __half v) {
  store_global_b16_if(on, addr, __half_as_ushort(v));
}
__device__ __forceinline__ void store_global_if(bool on, std::uint64_t addr, __nv_bfloat16 v) {
  store_global_b16_if(on, addr, __bfloat16_as_ushort(v));
}
__device__ __forceinline__ void store_global_if(bool on, std::uint64_t addr, unsigned char v) {  // an FP8 code
  asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global.u8 [%0], %1; }" ::"l"(addr),
               "r"(static_cast<unsigned>(v)), "r"(static_cast<int>(on)) : "memory");
}
template <typename T>
__device__ __forceinline__ std::uint32_t shared_address(const T* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Scalar element access through 64-bit element offsets.
template <typename T>
__device__ __forceinline__ float load_scalar(const T* p, std::int64_t i) { return to_float(p[i]); }
template <typename T>
__device__ __forceinline__ void store_scalar(T* p, std::int64_t i, float v) { p[i] = from_float<T>(v); }

// ---------------------------------------------------------------------------------------------
// 64-bit row offsets and alignment
// ---------------------------------------------------------------------------------------------

// Element offset of a row start. Always 64-bit: R·stride may exceed 2^31 elements
// (docs/contract.md#arguments). kOffsets32 is mutant M11: the byte offset computed in 32-bit
// unsigned arithmetic, wrapping modulo 2^32 bytes (rows past 4 GiB alias earlier rows instead of
// faulting).
template <bool kOffsets32 = false>
__host__ __device__ __forceinline__ std::int64_t row_offset(std::int64_t row, std::int64_t stride,
                                                            unsigned elem_bytes = 1) {
  if constexpr (kOffsets32) {
    const std::uint32_t bytes = static_cast<std::uint32_t>(row) * static_cast<std::uint32_t>(stride) * elem_bytes;
    return static_cast<std::int64_t>(bytes / elem_bytes);
  } else {
    return row * stride;
  }
}

template <typename T>
__host__ __device__ __forceinline__ T* row_ptr(T* base, std::int64_t row, std::int64_t stride) {
  return base + row_offset(row, stride);
}

__host__ __device__ __forceinline__ bool ptr_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// How a row is split over a thread-block cluster (fwd.cluster_row, bwd.cluster_rows; each family
// names its shapes by row type): each CTA owns a column slice of every row.
struct ClusterShape {
  int ctas;         // CTAs per cluster (one column slice each)
  int slots;        // chunks per thread
  int max_threads;  // threads per CTA at D = 65536
  int min_blocks;   // CTAs per SM the launch bounds ask for (registers ≤ 65536 / (max_threads · min_blocks))
};

// The SM count of the current device (host); 0 when no device answers (the error is cleared).
inline int sm_count() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}

// Host: every row start of a [*, D] view with this element stride is `bytes`-aligned.
inline bool view_aligned(const void* base, std::int64_t stride, std::size_t elem, std::size_t bytes) {
  return ptr_aligned(base, bytes) && (static_cast<std::uint64_t>(stride) * elem) % bytes == 0;
}

// ---------------------------------------------------------------------------------------------
// Chunks: 8 elements, loaded and stored with 16-byte vector accesses
// ---------------------------------------------------------------------------------------------

// Raw storage of one chunk of T: 16 bytes for 16-bit types, 32 for fp32.
template <typename T>
struct Chunk {
  static constexpr int kWords = static_cast<int>(sizeof(T)) * kChunk / kVecBytes;  // uint4 count
  uint4 w[kWords];
};

// Load a full chunk. p must be 16-byte aligned (checked by the launcher, never assumed).
// Plain coherent loads: the same kernel may write these addresses afterwards (in place).
template <typename T>
__device__ __forceinline__ Chunk<T> load_chunk(const T* p) {
  Chunk<T> c;
  const uint4* v = reinterpret_cast<const uint4*>(p);
#pragma unroll
  for (int k = 0; k < Chunk<T>::kWords; ++k) c.w[k] = v[k];
  return c;
}

// Read-only path (weights): the buffer is never written during the kernel.
template <typename T>
__device__ __forceinline__ Chunk<T> load_chunk_ro(const T* p) {
  Chunk<T> c;
  const uint4* v = reinterpret_cast<const uint4*>(p);
#pragma unroll
  for (int k = 0; k < Chunk<T>::kWords; ++k) c.w[k] = __ldg(v + k);
  return c;
}

// Rows a kernel reads exactly once: ld.global.cs (streaming, evict first) so they do not push
// the weights and the partial sums out of the caches. Still coherent (not the .nc path): in
// place, the same kernel writes these addresses afterwards.
template <typename T>
__device__ __forceinline__ Chunk<T> load_chunk_once(const T* p) {
  Chunk<T> c;
  const uint4* v = reinterpret_cast<const uint4*>(p);
#pragma unroll
  for (int k = 0; k < Chunk<T>::kWords; ++k) c.w[k] = __ldcs(v + k);
  return c;
}

// Outputs nobody in this kernel reads again: st.global.cs (streaming).
template <typename T>
__device__ __forceinline__ void store_chunk_once(T* p, const Chunk<T>& c) {
  uint4* v = reinterpret_cast<uint4*>(p);
#pragma unroll
  for (int k = 0; k < Chunk<T>::kWords; ++k) __stcs(v + k, c.w[k]);
}

template <typename T>
__device__ __forceinline__ void store_chunk(T* p, const Chunk<T>& c) {
  uint4* v = reinterpret_cast<uint4*>(p);
#pragma unroll
  for (int k = 0; k < Chunk<T>::kWords; ++k) v[k] = c.w[k];
}

// L2 prefetch (prefetch.global.L2 of the 128-byte line holding p): a hint, no register, no value
// changes. A persistent program asks for a row it will read later while it works on the current
// one, so that row's loads find it in L2 instead of waiting on DRAM (bwd.cluster_rows: one
// 1024-thread CTA per SM, a row per cluster barrier; H200, D = 65536: 0.56 of the copy with the
// prefetch against 0.47 without). Only addresses inside the tensors are named.
inline constexpr int kL2Line = 128;
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
// The device's global clock in nanoseconds (the same on every SM; coarse, but it never runs back).
__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// The lines of a row [row, row + bytes) a block will read next: thread t of n asks for lines
// t, t + n, ... (fwd.large_d and fwd.element_row.realigned on their persistent grids).
__device__ __forceinline__ void prefetch_row_l2(const void* row, std::int64_t bytes, int t, int n) {
  const char* base = static_cast<const char*>(row);
  for (std::int64_t off = static_cast<std::int64_t>(t) * kL2Line; off < bytes; off += static_cast<std::int64_t>(n) * kL2Line)
    prefetch_l2(base + off);
}

// Programmatic dependent launch (sm_90; elsewhere these compile to nothing). A kernel that calls
// allow_dependent_launch() lets the next kernel of its stream, launched with the programmatic
// stream serialization attribute, be scheduled once every block of this one has called it; that
// kernel's wait_prerequisite_grids() then returns only when this grid has completed and its
// memory operations are visible. So the next launch (the backward's dg column sum after stage 1,
// or the next call's kernel) overlaps this one's tail instead of following it, and the result is
// the same: the wait is a full dependency.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_prerequisite_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// The first statement of every kernel of the library: nothing before it touches global memory,
// so a kernel launched early (launch_kernel) reads and writes nothing until the grid ahead of it
// has completed; then the next launch may overlap this one in turn.
__device__ __forceinline__ void begin_dependent_grid() {
  wait_prerequisite_grids();
  allow_dependent_launch();
}

// A launch switch of the environment: on unless `name` is set to "0".
inline bool env_switch_on(const char* name) {
  const char* e = std::getenv(name);
  return e == nullptr || std::strcmp(e, "0") != 0;
}

// Whether launch_kernel asks for programmatic dependent launch: yes unless the environment has
// RMSNORM_PDL=0 (read once). Off, every launch is plainly stream-ordered; the bits are the same
// either way, only when a kernel may start changes.
inline bool pdl_launches() {
  static const bool on = env_switch_on("RMSNORM_PDL");
  return on;
}

// Every launch of the library: `cfg` (its attributes kept) plus the programmatic stream
// serialization attribute, so that in a stream or a captured graph of back-to-back calls a
// kernel's launch and block set-up overlap the tail of the kernel before it (which must have
// called allow_dependent_launch, as every kernel here does in begin_dependent_grid). The runtime's
// verdict is also left for launch_status().
template <typename... Params, typename... Args>
cudaError_t launch_kernel_ex(cudaLaunchConfig_t cfg, void (*kernel)(Params...), Args&&... args) {
  constexpr unsigned kMaxAttrs = 8;
  if (cfg.numAttrs >= kMaxAttrs) return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);  // as given
  cudaLaunchAttribute attrs[kMaxAttrs] = {};
  unsigned n = 0;
  for (; n < cfg.numAttrs; ++n) attrs[n] = cfg.attrs[n];
  if (pdl_launches()) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t s,
                          Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  return launch_kernel_ex(cfg, kernel, std::forward<Args>(args)...);
}

template <typename T>
__device__ __forceinline__ Chunk<T> zero_chunk() {
  Chunk<T> c;
#pragma unroll
  for (int k = 0; k < Chunk<T>::kWords; ++k) c.w[k] = make_uint4(0u, 0u, 0u, 0u);
  return c;
}

// Element j (0..7) of a chunk as fp32.
template <typename T>
__device__ __forceinline__ float chunk_get(const Chunk<T>& c, int j) {
  if constexpr (std::is_same_v<T, float>) {
    const uint4& w = c.w[j >> 2];
    const unsigned u = (j & 3) == 0 ? w.x : (j & 3) == 1 ? w.y : (j & 3) == 2 ? w.z : w.w;
    return __uint_as_float(u);
  } else {
    const uint4& w = c.w[0];
    const unsigned u = (j >> 1) == 0 ? w.x : (j >> 1) == 1 ? w.y : (j >> 1) == 2 ? w.z : w.w;
    const unsigned short bits = static_cast<unsigned short>((j & 1) ? (u >> 16) : (u & 0xffffu));
    if constexpr (std::is_same_v<T, __half>) {
      return __half2float(__ushort_as_half(bits));
    } else {
      return __uint_as_float(static_cast<unsigned>(bits) << 16);  // bf16 widens by a shift
    }
  }
}

// All 8 elements as fp32 (j is a compile-time index after unrolling, so this stays in registers).
template <typename T>
__device__ __forceinline__ void unpack(const Chunk<T>& c, float (&f)[kChunk]) {
#pragma unroll
  for (int j = 0; j < kChunk; ++j) f[j] = chunk_get(c, j);
}

// Two fp32 values rounded to a 16-bit T (each once, RN-even), `lo` in the low half: one paired
// conversion instruction (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32), bitwise the two scalar ones.
template <typename T>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&v);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&v);
  }
}

// Round 8 fp32 values to T (each once, RN-even) into a chunk.
template <typename T>
__device__ __forceinline__ Chunk<T> pack(const float (&f)[kChunk]) {
  Chunk<T> c;
  if constexpr (std::is_same_v<T, float>) {
    c.w[0] = make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
    c.w[1] = make_uint4(__float_as_uint(f[4]), __float_as_uint(f[5]), __float_as_uint(f[6]), __float_as_uint(f[7]));
  } else {
    unsigned u[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) u[k] = pack2<T>(f[2 * k], f[2 * k + 1]);
    c.w[0] = make_uint4(u[0], u[1], u[2], u[3]);
  }
  return c;
}

// Partial chunk: elements [0, n) read one by one (0 < n < 8), the rest are zero. Never touches
// memory past element n-1.
template <typename T>
__device__ __forceinline__ Chunk<T> load_chunk_partial(const T* p, int n) {
  float f[kChunk];
#pragma unroll
  for (int j = 0; j < kChunk; ++j) f[j] = j < n ? to_float(p[j]) : 0.0f;
  return pack<T>(f);  // exact: each value is already a T
}

template <typename T>
__device__ __forceinline__ void store_chunk_partial(T* p, const Chunk<T>& c, int n) {
#pragma unroll
  for (int j = 0; j < kChunk; ++j)
    if (j < n) p[j] = from_float<T>(chunk_get(c, j));  // exact re-encoding of a stored T
}

// ---------------------------------------------------------------------------------------------
// FP8 (E4M3 "fn", E5M2) through cuda_fp8.h
// ---------------------------------------------------------------------------------------------

// Runtime format selector for kernels that handle both FP8 formats with one instantiation.
__host__ __device__ __forceinline__ __nv_fp8_interpretation_t fp8_interp(DType t) {
  return t == DType::e5m2 ? __NV_E5M2 : __NV_E4M3;
}

// q = RN_fp8(v), saturating to ±max (and ±inf → ±max) unless `saturate` is false
// (then out-of-range → NaN for E4M3, ±inf for E5M2). NaN → NaN.
// The NaN both FP8 formats share (S.1111.111 in E4M3fn; a NaN of E5M2 too), sign clear.
inline constexpr unsigned kFp8NaN = 0x7fu;

__device__ __forceinline__ unsigned char fp8_from_float(float v, __nv_fp8_interpretation_t fmt, bool saturate) {
  return static_cast<unsigned char>(__nv_cvt_float_to_fp8(v, saturate ? __NV_SATFINITE : __NV_NOSAT, fmt));
}

// Two FP8 values in one conversion (cvt.rn.satfinite.{e4m3,e5m2}x2.f32 on sm_89+): `lo` in the
// low byte. Saturating; NaN → NaN. Bitwise the scalar conversion of each.
__device__ __forceinline__ unsigned fp8x2_from_float(float lo, float hi, __nv_fp8_interpretation_t fmt) {
  return static_cast<unsigned>(__nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, fmt));
}

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------

// max that propagates NaN (fmaxf would drop it): a NaN anywhere in the set gives NaN.
// Commutative on non-NaN inputs, so every lane of a butterfly ends with the same value.
__device__ __forceinline__ float nan_max(float a, float b) { return (a > b || a != a) ? a : b; }

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return nan_max(a, b); }
};

// Xor butterfly over aligned groups of kWidth lanes (power of two ≤ 32). All 32 lanes of the
// warp must call it. Every lane of a group ends with the bitwise same value (the two partners of
// each step add the same pair, and fp32 addition is commutative). Depth: log2(kWidth) adds.
template <int kWidth, typename Op>
__device__ __forceinline__ float warp_allreduce(float v, Op op) {
  static_assert(kWidth >= 1 && kWidth <= kWarp && (kWidth & (kWidth - 1)) == 0, "width: power of 2 <= 32");
#pragma unroll
  for (int off = kWidth / 2; off >= 1; off /= 2) v = op(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}
template <int kWidth = kWarp>
__device__ __forceinline__ float warp_sum(float v) { return warp_allreduce<kWidth>(v, SumOp{}); }
template <int kWidth = kWarp>
__device__ __forceinline__ float warp_max(float v) { return warp_allreduce<kWidth>(v, MaxOp{}); }

// Number of butterfly levels needed across `warps` per-warp partials: ceil(log2(warps)).
__host__ __device__ constexpr int ceil_log2(std::int64_t n) {
  int k = 0;
  while ((std::int64_t{1} << k) < n) ++k;
  return k;
}

// The declared accumulation shape of a row over a cluster of shape cs at `threads` threads a CTA
// (fwd.cluster_row, bwd.cluster_rows, bwd.staged_cluster): a thread chains at most slots x 8
// elements (at most D), then the block's butterfly and the fixed tree across the CTAs.
inline AccumShape cluster_row_accum(ClusterShape cs, int threads, std::int64_t dim) {
  AccumShape s;
  s.per_thread = std::min<std::int64_t>(std::int64_t{cs.slots} * kChunk, dim);
  s.tree_depth = 5 + ceil_log2(threads / kWarp) + ceil_log2(cs.ctas);
  return s;
}
// The wider of two declared shapes (a variant whose launches may take either).
inline AccumShape widest(AccumShape a, AccumShape b) {
  AccumShape s;
  s.per_thread = std::max(a.per_thread, b.per_thread);
  s.tree_depth = std::max(a.tree_depth, b.tree_depth);
  return s;
}

// The second level of a block or group all-reduce: every warp butterflies the nwarps partials.
template <typename Op>
__device__ __forceinline__ float partials_allreduce(const float* partials, int lane, int nwarps, Op op, float identity) {
  float p = lane < nwarps ? partials[lane] : identity;
#pragma unroll
  for (int off = kWarp / 2; off >= 1; off /= 2) {
    const float q = __shfl_xor_sync(kFullMask, p, off);
    // Partners at distance >= nwarps hold only identities: skipping them keeps the chain at
    // ceil_log2(nwarps) real adds (and avoids -0 + 0 sign changes).
    if (off < nwarps) p = op(p, q);
  }
  // Lanes below the next power of two of nwarps hold the total; lane 0 hands it to all.
  return __shfl_sync(kFullMask, p, 0);
}
// Block-wide all-reduce over blockDim.x threads (a multiple of 32, at most 1024). Every thread
// must call it; every thread gets the bitwise same result. `partials` is shared memory of at
// least 32 floats, used only by this call: a caller that reuses it for another reduction must
// separate the two calls with __syncthreads() (or use a different buffer).
// Order: the warp butterfly (5 levels), then lanes < nwarps of every warp load the partials
// (the rest load the identity) and butterfly again over ceil_log2(nwarps) levels only. Declared depth:
// 5 + ceil_log2(blockDim.x / 32). kBarrier = false is mutant M18 (the barrier between the
// partials' writes and their reads removed).
template <bool kBarrier = true, typename Op>
__device__ __forceinline__ float block_allreduce(float v, float* partials, Op op, float identity) {
  const int lane = static_cast<int>(threadIdx.x) & (kWarp - 1);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int nwarps = static_cast<int>(blockDim.x) / kWarp;
  v = warp_allreduce<kWarp>(v, op);
  if (lane == 0) partials[warp] = v;
  if constexpr (kBarrier) __syncthreads();
  return partials_allreduce(partials, lane, nwarps, op, identity);
}
// Sums over groups of `nthreads` consecutive threads of a block (whole warps; `gt` the thread's
// index in its group), all groups at once: every thread of the block calls it, each group's warps
// leave their partials in the group's own buffer, one __syncthreads(), each group butterflies its
// own partials. Per group the order of block_sum over a block of nthreads threads (declared depth
// 5 + ceil_log2(nthreads / 32)). A block-wide barrier rather than a named one per group: the
// groups stay in step, and compute-sanitizer's racecheck follows block-wide barriers.
__device__ __forceinline__ float groups_sum(float v, float* group_partials, int gt, int nthreads) {
  const int lane = gt & (kWarp - 1);
  v = warp_allreduce<kWarp>(v, SumOp{});
  if (lane == 0) group_partials[gt / kWarp] = v;
  __syncthreads();
  return partials_allreduce(group_partials, lane, nthreads / kWarp, SumOp{}, 0.0f);
}
// N sums per group at once behind the one barrier (bwd.packed_rows: a group's N rows of a
// tile): sum k in the same order as groups_sum, its partials at group_partials[k·32 + warp].
// groups_allreduce_n: the same for any Op (fwd.packed_rows' per-token FP8 amax: MaxOp).
template <int N, typename Op>
__device__ __forceinline__ void groups_allreduce_n(float (&v)[N], float* group_partials, int gt, int nthreads, Op op,
                                                   float identity) {
  const int lane = gt & (kWarp - 1);
#pragma unroll
  for (int k = 0; k < N; ++k) v[k] = warp_allreduce<kWarp>(v[k], op);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < N; ++k) group_partials[k * kWarp + gt / kWarp] = v[k];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < N; ++k) v[k] = partials_allreduce(group_partials + k * kWarp, lane, nthreads / kWarp, op, identity);
}
template <int N>
__device__ __forceinline__ void groups_sum_n(float (&v)[N], float* group_partials, int gt, int nthreads) {
  groups_allreduce_n<N>(v, group_partials, gt, nthreads, SumOp{}, 0.0f);
}
template <bool kBarrier = true>
__device__ __forceinline__ float block_sum(float v, float* partials) {
  return block_allreduce<kBarrier>(v, partials, SumOp{}, 0.0f);
}
template <bool kBarrier = true>
__device__ __forceinline__ float block_max(float v, float* partials) {
  return block_allreduce<kBarrier>(v, partials, MaxOp{}, 0.0f);
}
// A block's sum and max behind one barrier: the sum in block_sum's order (the same bits), the
// max as block_max's. Each into its own partials.
template <bool kBarrier = true>
__device__ __forceinline__ void block_sum_max(float& sum, float& mx, float* sum_partials, float* max_partials) {
  const int lane = static_cast<int>(threadIdx.x) & (kWarp - 1);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int nwarps = static_cast<int>(blockDim.x) / kWarp;
  sum = warp_allreduce<kWarp>(sum, SumOp{});
  mx = warp_allreduce<kWarp>(mx, MaxOp{});
  if (lane == 0) {
    sum_partials[warp] = sum;
    max_partials[warp] = mx;
  }
  if constexpr (kBarrier) __syncthreads();
  sum = partials_allreduce(sum_partials, lane, nwarps, SumOp{}, 0.0f);
  mx = partials_allreduce(max_partials, lane, nwarps, MaxOp{}, 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Realigned spans: rows that do not start on a 16-byte boundary, moved as 16-byte vectors
// ---------------------------------------------------------------------------------------------

// Realigned row I/O (fwd.element_row.realigned, bwd.packed_rows). A row, or a span of consecutive
// packed rows, that does not start on a 16-byte boundary (odd D, odd strides, offset bases) moves
// between global and shared memory as 16-byte vectors: the elements before its first 16-byte
// boundary and after its last one element by element, the rest as aligned vectors — never a
// byte outside it. In the shared buffer element j sits at lead + j, lead = (start address mod
// 16) / element size, so the vectors are aligned there too. A buffer holds D elements of `elem`
// bytes (or fewer bytes: FP8 output) and its lead.
__host__ __device__ constexpr std::int64_t realign_buffer_bytes(std::int64_t dim, std::size_t elem) {
  return (dim * static_cast<std::int64_t>(elem) + 16 + 15) / 16 * 16;
}
template <typename E>
__device__ __forceinline__ int realign_lead(const E* row) {
  return static_cast<int>((reinterpret_cast<std::uintptr_t>(row) & 15u) / sizeof(E));
}
// The aligned middle of a row of D elements: head elements before it, nvec vectors in it.
template <typename E>
__device__ __forceinline__ void realign_span(int lead, int D, int& head, int& nvec) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(E));
  head = lead == 0 ? 0 : min(D, kPer - lead);
  nvec = (D - head) / kPer;
}
// Bit patterns are copied as they are (integer types of the element's size): NaN payloads too.
template <typename E>
using RawOf = std::conditional_t<sizeof(E) == 1, unsigned char, std::conditional_t<sizeof(E) == 2, unsigned short, unsigned>>;
// Moves a row of D elements between global memory and a shared buffer by the block's B
// threads: kLoad row → buffer (buf[lead + j] = row[j]), else buffer → row; returns lead. The
// caller synchronizes between writing a buffer and reading it.
template <bool kLoad, typename E>
__device__ __forceinline__ int realign_copy(E* buf, E* row, int D, int t, int B) {
  using R = RawOf<E>;
  constexpr int kPer = 16 / static_cast<int>(sizeof(E));
  const int lead = realign_lead(row);
  int head = 0, nvec = 0;
  realign_span<E>(lead, D, head, nvec);
  uint4* rv = reinterpret_cast<uint4*>(row + head);
  uint4* bv = reinterpret_cast<uint4*>(buf + lead + head);
  for (int v = t; v < nvec; v += B) {
    if constexpr (kLoad) bv[v] = __ldcs(rv + v);  // each row is read once
    else __stcs(rv + v, bv[v]);
  }
  R* r = reinterpret_cast<R*>(row);
  R* b = reinterpret_cast<R*>(buf + lead);
  auto move = [&](int j) {
    if constexpr (kLoad) b[j] = r[j];
    else r[j] = b[j];
  };
  for (int j = t; j < head; j += B) move(j);
  for (int j = head + nvec * kPer + t; j < D; j += B) move(j);
  return lead;
}
template <typename E>
__device__ __forceinline__ int realign_load(E* buf, const E* row, int D, int t, int B) {
  return realign_copy<true>(buf, const_cast<E*>(row), D, t, B);  // the row is only read
}
template <typename E>
__device__ __forceinline__ void realign_store(E* row, const E* buf, int D, int t, int B) {
  realign_copy<false>(const_cast<E*>(buf), row, D, t, B);  // the buffer is only read
}

// ---------------------------------------------------------------------------------------------
// Launch helpers
// ---------------------------------------------------------------------------------------------

// Launch status: ok, or launch_failed with the runtime's message.
inline Status launch_status(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status::fail(Status::Code::launch_failed, std::string(what) + ": " + cudaGetErrorString(e));
  return Status::success();
}

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace rmsnorm::cuda
