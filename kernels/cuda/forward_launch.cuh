// The frame every CUDA forward variant (kernels/cuda/variants/fwd_*.cuh) shares: the kernel
// parameters, the instantiations a mutant carries, the checks every variant makes before its own,
// the launch frame (run_variant) and the registry's Variant that a variant's struct becomes
// (make_forward). What one variant alone uses lives in its own file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "forward_kernels.cuh"
#include "registration.h"

namespace rmsnorm::cuda::fwd {

inline constexpr std::int64_t kMaxGridBlocks = 0x7fffffff;  // gridDim.x

inline std::int64_t chunks_of(std::int64_t dim) { return (dim + kChunk - 1) / kChunk; }
inline std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// How a row maps onto threads: `lanes` threads, chunk c on thread c % lanes.
struct RegsConfig {
  int lanes = 0;  // threads per row
  int iters = 0;  // chunks per thread (compile-time in the kernel)
};

// Max elements one thread sums sequentially when chunk c goes to thread c % lanes (at most
// `iters` chunks each, the last chunk holding dim % 8 elements when it is partial).
inline std::int64_t chunked_per_thread(std::int64_t dim, std::int64_t lanes) {
  const std::int64_t n = chunks_of(dim);
  std::int64_t best = 0;
  for (std::int64_t t = 0; t < std::min<std::int64_t>(lanes, n); ++t) {
    const std::int64_t count = (n - 1 - t) / lanes + 1;  // chunks t, t+lanes, ... < n
    const std::int64_t last = t + (count - 1) * lanes;
    const std::int64_t elems = count * kChunk - ((last == n - 1 && dim % kChunk) ? kChunk - dim % kChunk : 0);
    best = std::max(best, elems);
  }
  return best;
}

// The shape of a row sum over a block of `threads` threads whose partials meet in the block tree
// (block_sum: a warp's 5 levels, then one per doubling of the warps): chunk c on thread
// c % threads (chunked), or element j on thread j % threads (strided).
inline AccumShape chunked_block_shape(std::int64_t dim, std::int64_t threads) {
  AccumShape s;
  s.per_thread = chunked_per_thread(dim, threads);
  s.tree_depth = 5 + ceil_log2(threads / kWarp);
  return s;
}
inline AccumShape strided_block_shape(std::int64_t dim, std::int64_t threads) {
  AccumShape s;
  s.per_thread = (dim + threads - 1) / threads;
  s.tree_depth = 5 + ceil_log2(threads / kWarp);
  return s;
}

inline Params make_params(const ForwardArgs& a) {
  Params p;
  p.x = a.x.data;
  p.x_out = a.x.data;
  p.o = a.o.data;
  p.y = a.y.data;
  p.g = a.g;
  p.rstd = a.rstd;
  p.scale = a.scale;
  p.rows = a.rows;
  p.dim = a.dim;
  p.x_stride = a.x.stride;
  p.o_stride = a.o.stride;
  p.y_stride = a.y.stride;
  p.groups = quant_groups(a.dim);
  p.eps = a.eps;
  if (is_fp8(a.y.type)) {
    p.fp8_max = static_cast<float>(traits_of(a.y.type).max_finite);
    p.scale_floor = Fp8Quant::scale_floor(a.y.type);
    p.fp8_fmt = static_cast<int>(fp8_interp(a.y.type));
  }
  p.convention = static_cast<int>(a.convention);
  p.quant = static_cast<int>(a.quant);
  return p;
}

// Which (type, weight type, quant, add) instantiations a mutant carries: the product has them
// all; mutants only the same-type weights, and only the ops where their bug lives.
template <Mutant M>
inline constexpr bool mutant_needs_quant = M == Mutant::M12_scale_no_floor || M == Mutant::M13_fp8_via_bf16 ||
                                           M == Mutant::M14_fp8_no_saturation;
template <Mutant M>
inline constexpr bool mutant_needs_add = M == Mutant::M17_add_unrounded_sum;
// Mutants of the row statistics and the weight show on the plain ops; they do not carry the FP8
// instantiations (fewer kernels to compile, and no register budget to share with the FP8 path).
template <Mutant M>
inline constexpr bool mutant_carries_quant = M == Mutant::none || mutant_needs_quant<M>;

// A variant whose every op has FP8 outputs (fwd.block_row.staged) carries its mutants' bugs there.
template <Mutant M, bool kQuantPath = false>
inline constexpr bool carries_quant = mutant_carries_quant<M> || kQuantPath;
// A mutant carries 16-bit rows with weights of the same type only (fewer kernels to compile).
template <Mutant M, typename T, typename G>
inline constexpr bool carries_types = M == Mutant::none || (std::is_same_v<T, G> && sizeof(T) == 2);

template <Mutant M, bool kQuantPath = false>
inline std::uint32_t ops_mask() {
  auto bit = [](Op o) { return 1u << static_cast<int>(o); };
  if constexpr (mutant_needs_quant<M>) return bit(Op::forward_quant) | bit(Op::add_forward_quant);
  if constexpr (mutant_needs_add<M>) return bit(Op::add_forward) | (kQuantPath ? bit(Op::add_forward_quant) : 0u);
  if constexpr (!carries_quant<M, kQuantPath>) return bit(Op::forward) | bit(Op::add_forward);
  return bit(Op::forward) | bit(Op::add_forward) | bit(Op::forward_quant) | bit(Op::add_forward_quant);
}

// The ops a variant implements (its kOps), before its mutant's restriction.
inline constexpr std::uint32_t kPlainOps = (1u << static_cast<int>(Op::forward)) | (1u << static_cast<int>(Op::add_forward));
inline constexpr std::uint32_t kQuantOps =
    (1u << static_cast<int>(Op::forward_quant)) | (1u << static_cast<int>(Op::add_forward_quant));
inline constexpr std::uint32_t kAllOps = kPlainOps | kQuantOps;

inline DType effective_g_type(const ForwardArgs& a) {
  return a.convention == Convention::no_weight ? a.x.type : a.g_type;
}

// Shared-memory budget of a large-D block on the current device: the opt-in maximum per block,
// or with `blocks_per_sm` blocks per SM their share of the SM's shared memory, less the kernel's
// static shared memory and the 1 KB the runtime reserves per block. Rows longer than the cache
// re-read their tail from global memory (L2).
inline std::int64_t smem_cache_budget_of(std::int64_t optin, std::int64_t per_sm, int blocks_per_sm) {
  const std::int64_t share = std::min<std::int64_t>(optin, per_sm / blocks_per_sm);
  return std::max<std::int64_t>(0, share - 2 * kWarp * 4 - 1024);
}
inline std::int64_t smem_cache_budget(int blocks_per_sm = 1) {
  int dev = 0, optin = 0, per_sm = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess) return 0;
  return smem_cache_budget_of(optin, per_sm, blocks_per_sm);
}

// A forward variant is a struct (kernels/cuda/variants/fwd_*.cuh) with:
//   kName, kAlias (an older name, or nullptr), kRank (its place in dispatch order: lower first),
//   kDescription, kOps (of kAllOps), kQuantPath (every op has FP8 outputs: its mutants carry their
//   bugs there), kDimMin, kDimMax, kF32DimMax (0: as kDimMax), optionally kF32AddDimMax (the fused add's
//   narrower fp32 limit), kLayout, Mutants (a MutantList),
//   shape(D) (its row reduction's AccumShape), refuse<M>(a, who) (its own refusals, after the
//   checks every variant makes; RowLayout::aligned adds the alignment check after them) and
//   run<M>(a) (its launcher, on run_variant).
// The capability check of variant V: the contract's validate(), what the mutant carries, R = 0
// (a no-op every variant implements), V's own refusals, then, for aligned rows, the alignment.
template <Mutant M, typename V>
Status can_implement(const ForwardArgs& a) {
  Status v = validate(a);
  if (!v.ok()) return v;
  const std::int64_t D = a.dim;
  const std::string who = V::kName;
  if (D > kMaxDim)
    return Status::fail(Status::Code::unsupported, who + ": D = " + std::to_string(D) +
                                                       " exceeds 2^24 (the fp32 division by D would round D)");
  if constexpr (M != Mutant::none) {
    if (size_of(a.x.type) != 2 || effective_g_type(a) != a.x.type)
      return Status::fail(Status::Code::unsupported, "mutants carry only 16-bit rows with same-type weights");
    if (!((ops_mask<M, V::kQuantPath>() >> static_cast<int>(op_of(a))) & 1u))
      return Status::fail(Status::Code::unsupported, "this mutant carries other ops only");
  }
  if (a.rows == 0) return Status::success();  // a no-op is implementable by every variant
  v = V::template refuse<M>(a, who);
  if (!v.ok() || V::kLayout != RowLayout::aligned) return v;
  // Vector paths: every row start of every vector-accessed tensor must be aligned. Checked,
  // never assumed (M19 skips the check and sends misaligned data down the vector path).
  if constexpr (M != Mutant::M19_misaligned_as_aligned) {
    auto misaligned = [&](const char* name) {
      return Status::fail(Status::Code::misaligned, who + ": " + name +
                                                        " rows are not 16-byte aligned (base pointer or row stride)");
    };
    if (!view_aligned(a.x.data, a.x.stride, size_of(a.x.type), kVecBytes)) return misaligned("x");
    if (a.o.data && !view_aligned(a.o.data, a.o.stride, size_of(a.o.type), kVecBytes)) return misaligned("o");
    const std::size_t y_align = is_fp8(a.y.type) ? kChunk : kVecBytes;  // FP8: 8-byte stores
    if (!view_aligned(a.y.data, a.y.stride, size_of(a.y.type), y_align))
      return Status::fail(Status::Code::misaligned, who + ": y rows are not " + std::to_string(y_align) + "-byte aligned");
    if (a.convention != Convention::no_weight && !ptr_aligned(a.g, kVecBytes)) return misaligned("g");
  }
  return Status::success();
}

// Calls f(TypeTag<T>, TypeTag<G>, bool_constant<kQuant>, bool_constant<kAdd>) for the
// instantiation the arguments need, if the mutant carries it. False when it does not.
template <Mutant M, bool kQuantPath = false, typename F>
bool dispatch(const ForwardArgs& a, F&& f) {
  const bool quant = a.quant != Quant::none;
  const bool add = a.o.data != nullptr;
  bool launched = false;
  dispatch_activation_weight(a.x.type, effective_g_type(a), [&](auto tt, auto gt) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    if constexpr (carries_types<M, T, G>) {
      auto go = [&](auto q, auto ad) {
        constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
        constexpr bool kCarried = (!mutant_needs_quant<M> || kQ) && (!mutant_needs_add<M> || kA) &&
                                  (carries_quant<M, kQuantPath> || !kQ);
        if constexpr (kCarried) {
          f(tt, gt, q, ad);
          launched = true;
        }
      };
      using TrueT = std::true_type;
      using FalseT = std::false_type;
      if (quant) {
        if (add) go(TrueT{}, TrueT{}); else go(TrueT{}, FalseT{});
      } else {
        if (add) go(FalseT{}, TrueT{}); else go(FalseT{}, FalseT{});
      }
    }
  });
  return launched;
}

inline unsigned grid_for(std::int64_t blocks) {
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, kMaxGridBlocks));
}

// A persistent grid for `kernel`: as many blocks as fit on the device at once (its registers,
// `smem` bytes of dynamic shared memory, `threads` threads each), at most R; each block walks
// rows blockIdx.x + k·grid.
template <typename Kernel>
cudaError_t persistent_grid(Kernel kernel, int threads, std::size_t smem, std::int64_t rows, std::int64_t& grid) {
  int per_sm = 0, dev = 0, sms = 0;
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
  if (e == cudaSuccess) e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess && per_sm < 1) e = cudaErrorInvalidConfiguration;  // no block fits an SM
  grid = std::min<std::int64_t>(rows, static_cast<std::int64_t>(per_sm) * sms);
  return e;
}

// The frame every forward launcher shares: can_implement (nothing launches on invalid input),
// R = 0 a no-op, the kernel parameters and the stream, the instantiation the arguments need
// (dispatch), then the runtime's verdict. `launch(tt, gt, q, ad, p, s, result)` launches, or sets
// `result` to a failure of its own set-up (occupancy, shared-memory opt-in) and launches nothing.
template <Mutant M, typename V, typename Launch>
Status run_variant(const ForwardArgs& a, Launch&& launch) {
  Status st = can_implement<M, V>(a);
  if (!st.ok() || a.rows == 0) return st;
  const Params p = make_params(a);
  cudaStream_t s = as_stream(a.stream);
  Status result = Status::success();
  dispatch<M, V::kQuantPath>(a, [&](auto tt, auto gt, auto q, auto ad) { launch(tt, gt, q, ad, p, s, result); });
  if (!result.ok()) return result;
  return launch_status(V::kName);
}

// Whether a launcher takes an exact-row kernel (no row-end tests) where the row is a whole number
// of its threads' chunks: yes unless the environment has RMSNORM_EXACT_ROWS=0, which runs the
// general kernels instead, with the same bits (test_gpu_forward compares the two). Read at every
// launch, so a test can switch it; a getenv costs nothing beside a launch.
inline bool exact_rows() { return env_switch_on("RMSNORM_EXACT_ROWS"); }
// A row of exactly `lanes` · `iters` whole chunks, where exact-row kernels are on.
inline bool exact_row(std::int64_t dim, std::int64_t lanes, std::int64_t iters) {
  return dim == lanes * iters * kChunk && exact_rows();
}

// Few rows (well under a wave): fwd.block_row and fwd.warp_row load each row's weights with its x
// (fwd_regs_kernel, kEarlyW), the same arithmetic and bits: a row's latency is the cost here
// (docs/launch-forms.md). That form serves every op to kFewRowsMaxRows rows of fewer than
// kFewRowsMaxElems elements in all; past either the many-row forms lead. kEarlyWeightsMaxRows
// bounds the other few-row choices (fwd.element_row's FP8 forward, the per-block lean-y kernel).
inline constexpr std::int64_t kEarlyWeightsMaxRows = 128;
inline constexpr std::int64_t kFewRowsMaxRows = 512;
inline constexpr std::int64_t kFewRowsMaxElems = std::int64_t{1} << 22;
inline bool few_rows_form(std::int64_t rows, std::int64_t dim) {
  return rows <= kEarlyWeightsMaxRows || (rows <= kFewRowsMaxRows && rows * dim < kFewRowsMaxElems);
}

template <typename T, typename G, bool kQ, bool kA, int LANES, int ITERS, Mutant M, bool kEarlyW = false>
void launch_regs(const Params& p, int threads, std::int64_t rows_per_block, cudaStream_t s) {
  const std::int64_t blocks = (p.rows + rows_per_block - 1) / rows_per_block;
  launch_kernel(fwd_regs_kernel<T, G, kQ, kA, LANES, ITERS, M, false, kEarlyW>, grid_for(blocks), threads, 0, s, p);
}

}  // namespace rmsnorm::cuda::fwd
