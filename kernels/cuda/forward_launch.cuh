// Host side of the forward family: thread-mapping configurations (functions of D only), declared
// accumulation shapes, capability checks and the launchers. Included by the forward_*.cu files;
// each of them instantiates the launchers it needs (split so the build runs in parallel).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "forward_kernels.cuh"
#include "forward_cluster.cuh"
#include "forward_packed.cuh"
#include "forward_ring.cuh"
#include "forward_shifted.cuh"

namespace rmsnorm::cuda::fwd {

enum class Path : std::uint8_t { warp_row, block_row, large_d, element_row, scalar, staged_rows, realigned_row, large_d_pair, packed_rows, cluster_row, bulk_ring, shifted_row };

inline constexpr std::int64_t kWarpRowMaxDim = 1024;   // 32 lanes × 4 chunks × 8
inline constexpr int kBlockRowIters = 4;                // chunks per thread in block_row
// fwd.block_row's FP8 forms of 16-bit rows (the product) past the 256-thread FP8 blocks' 8192:
// fwd_regs_lean_y_kernel, up to 512 threads a row (4 chunks each), y not held.
inline constexpr std::int64_t kBlockRowHeldYMaxDim = std::int64_t{kBlockRowMaxThreads<float, true>} * kBlockRowIters * kChunk;
inline constexpr std::int64_t kBlockRowLeanYMaxDim16 = std::int64_t{kLeanYThreads} * kBlockRowIters * kChunk;
static_assert(kBlockRowHeldYMaxDim == 8192 && kBlockRowLeanYMaxDim16 == 16384, "FP8 rows: 256 / 512 threads of 4 chunks");

inline constexpr std::int64_t kMaxGridBlocks = 0x7fffffff;  // gridDim.x

inline std::int64_t chunks_of(std::int64_t dim) { return (dim + kChunk - 1) / kChunk; }
inline std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// How a row maps onto threads: `lanes` threads, chunk c on thread c % lanes.
struct RegsConfig {
  int lanes = 0;  // threads per row
  int iters = 0;  // chunks per thread (compile-time in the kernel)
};

inline RegsConfig warp_row_config(std::int64_t dim) {
  const std::int64_t n = chunks_of(dim);
  if (n <= 32) {
    int lanes = 1;
    while (lanes < n) lanes *= 2;
    return {lanes, 1};
  }
  if (n <= 64) return {32, 2};
  return {32, 4};
}

// block_row: 4 chunks per thread, threads a multiple of 32. `rows` only matters for mutant M16.
inline RegsConfig block_row_config(std::int64_t dim, std::int64_t rows = 0, Mutant m = Mutant::none,
                                   int max_threads = 1024) {
  const std::int64_t n = chunks_of(dim);
  std::int64_t threads = round_up((n + kBlockRowIters - 1) / kBlockRowIters, kWarp);
  if (m == Mutant::M16_order_depends_on_rows && rows <= 64)
    threads = std::min<std::int64_t>(threads * 2, max_threads);  // "more threads for few rows"
  return {static_cast<int>(threads), kBlockRowIters};
}

// element_row: at most 16 elements per thread, threads a multiple of 32.
inline int element_threads(std::int64_t dim) {
  return static_cast<int>(std::clamp<std::int64_t>(round_up((dim + kElementSlots - 1) / kElementSlots, kWarp), kWarp,
                                                   kElementMaxThreads));
}
inline constexpr std::int64_t kElementRowMaxDim = std::int64_t{kElementSlots} * kElementMaxThreads;

inline int scalar_threads(std::int64_t dim) {
  return static_cast<int>(std::clamp<std::int64_t>(round_up((dim + 7) / 8, kWarp), kWarp, kScalarMaxThreads));
}

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

inline AccumShape shape_of(Path path, std::int64_t dim) {
  AccumShape s;
  switch (path) {
    case Path::warp_row: {
      const RegsConfig c = warp_row_config(dim);
      s.per_thread = chunked_per_thread(dim, c.lanes);
      s.tree_depth = ceil_log2(c.lanes);
      break;
    }
    case Path::block_row:
    case Path::staged_rows: {  // the same mapping and order (the stages change only when rows arrive)
      const RegsConfig c = block_row_config(dim);
      s.per_thread = chunked_per_thread(dim, c.lanes);
      s.tree_depth = 5 + ceil_log2(c.lanes / kWarp);
      break;
    }
    case Path::large_d:
      s.per_thread = chunked_per_thread(dim, kSmemThreads);
      s.tree_depth = 5 + ceil_log2(kSmemThreads / kWarp);
      break;
    case Path::bulk_ring:  // fwd.large_d's mapping and order (only the row's way into shared memory differs)
      s.per_thread = chunked_per_thread(dim, kRingThreads);
      s.tree_depth = 5 + ceil_log2(kRingThreads / kWarp);
      break;
    case Path::large_d_pair:
      s.per_thread = chunked_per_thread(dim, kSmemPairThreads);
      s.tree_depth = 5 + ceil_log2(kSmemPairThreads / kWarp);
      break;
    case Path::element_row:
    case Path::realigned_row: {  // the same mapping and order (only the row's trips to memory differ)
      const int b = element_threads(dim);
      s.per_thread = (dim + b - 1) / b;
      s.tree_depth = 5 + ceil_log2(b / kWarp);
      break;
    }
    case Path::packed_rows:
      s = packed_row_shape(dim);
      break;
    case Path::cluster_row:
      s = fwd_cluster_row_shape(dim);
      break;
    case Path::shifted_row: {  // Σh² over column chunks, chunk c on thread c % lanes (forward_shifted.cuh)
      const ShiftedConfig c = shifted_config(dim);
      s.per_thread = chunked_per_thread(dim, c.lanes);
      s.tree_depth = 5 + ceil_log2(c.lanes / kWarp);
      break;
    }
    case Path::scalar: {
      const int b = scalar_threads(dim);
      s.per_thread = (dim + b - 1) / b;
      s.tree_depth = 5 + ceil_log2(b / kWarp);
      break;
    }
  }
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

inline const char* path_name(Path p) {
  switch (p) {
    case Path::warp_row: return "warp_row";
    case Path::block_row: return "block_row";
    case Path::staged_rows: return "staged_rows";
    case Path::large_d: return "large_d";
    case Path::element_row: return "element_row";
    case Path::realigned_row: return "realigned_row";
    case Path::large_d_pair: return "large_d_pair";
    case Path::packed_rows: return "packed_rows";
    case Path::cluster_row: return "cluster_row";
    case Path::bulk_ring: return "bulk_ring";
    case Path::shifted_row: return "shifted_row";
    default: return "scalar";
  }
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

// A path whose every op has FP8 outputs (fwd.staged_rows) carries its mutants' bugs there.
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
// The ops a path implements (before its mutant's restriction).
inline constexpr std::uint32_t path_ops(Path path) {
  constexpr std::uint32_t fwd = 1u << static_cast<int>(Op::forward), add = 1u << static_cast<int>(Op::add_forward);
  constexpr std::uint32_t quant = (1u << static_cast<int>(Op::forward_quant)) | (1u << static_cast<int>(Op::add_forward_quant));
  if (path == Path::staged_rows) return quant;  // FP8 outputs only (can_implement says why)
  if (path == Path::shifted_row || path == Path::bulk_ring) return fwd | add;
  return fwd | add | quant;
}

inline DType effective_g_type(const ForwardArgs& a) {
  return a.convention == Convention::no_weight ? a.x.type : a.g_type;
}

// fwd.staged_rows: the block_row kernel with a persistent grid and each block's next rows staged
// in shared memory (fwd_regs_kernel, kStaged). Blocks per SM come from the kernel's registers
// (the occupancy calculator, without dynamic shared memory); an SM's stage budget is split among
// them, at most kStageBytesPerSM so that about 96 KB of the SM's 256 KB stay L1 for the weights
// (re-read every row: 32 KB for a bf16 row of 16384). The split: the most blocks that still get 3
// stages each (two rows ahead), else the most that get 2, never fewer than two blocks while two
// fit (a lone block per SM idles at every barrier). Stages: 2..kMaxCopyStages.
inline constexpr std::int64_t kStageBytesPerSM = 160 * 1024;
inline constexpr std::int64_t kStagedMinDim = 4097;  // FP8 outputs only, to the FP8 block_row limit (8192)
struct StagedLaunch {
  int blocks_per_sm = 0;
  int stages = 0;
  std::size_t smem = 0;
};
// One stage: x (and o) of one row, as the block's threads hold them (block_row_config(D)).
inline std::size_t staged_stage_bytes(std::int64_t dim, std::size_t elem_bytes, bool add) {
  const RegsConfig c = block_row_config(dim);
  return static_cast<std::size_t>(add ? 2 : 1) * static_cast<std::size_t>(c.iters) * static_cast<std::size_t>(c.lanes) *
         kChunk * elem_bytes;
}
// Two stages must fit the budget: not so for fp32 rows with the fused add beyond D = 10240.
inline bool staged_fits(std::int64_t dim, std::size_t elem_bytes, bool add) {
  return 2 * static_cast<std::int64_t>(staged_stage_bytes(dim, elem_bytes, add)) <= kStageBytesPerSM;
}
inline StagedLaunch staged_launch_shape(int reg_blocks_per_sm, std::size_t stage_bytes) {
  const std::int64_t slots = kStageBytesPerSM / static_cast<std::int64_t>(stage_bytes);
  auto shape = [&](int b) {
    StagedLaunch l;
    l.blocks_per_sm = b;
    l.stages = static_cast<int>(std::clamp<std::int64_t>(slots / b, 2, kMaxCopyStages));
    l.smem = static_cast<std::size_t>(l.stages) * stage_bytes;
    return l;
  };
  const int most = std::max(reg_blocks_per_sm, 1);
  for (int b = most; b >= 2; --b)
    if (slots / b >= 3) return shape(b);
  for (int b = most; b >= 2; --b)
    if (slots / b >= 2) return shape(b);
  return shape(1);
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

// The capability check of a path (after the contract's validate()).
template <Mutant M>
Status can_implement(Path path, const ForwardArgs& a) {
  Status v = validate(a);
  if (!v.ok()) return v;
  const std::int64_t D = a.dim;
  const std::string who = std::string("fwd.") + path_name(path);
  if (D > kMaxDim)
    return Status::fail(Status::Code::unsupported, who + ": D = " + std::to_string(D) +
                                                       " exceeds 2^24 (the fp32 division by D would round D)");
  if constexpr (M != Mutant::none) {
    if (size_of(a.x.type) != 2 || effective_g_type(a) != a.x.type)
      return Status::fail(Status::Code::unsupported, "mutants carry only 16-bit rows with same-type weights");
    const std::uint32_t carried = path == Path::staged_rows ? ops_mask<M, true>() : ops_mask<M>();
    if (!((carried >> static_cast<int>(op_of(a))) & 1u))
      return Status::fail(Status::Code::unsupported, "this mutant carries other ops only");
  }
  if (a.rows == 0) return Status::success();  // a no-op is implementable by every path
  if (path == Path::warp_row && D > kWarpRowMaxDim)
    return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kWarpRowMaxDim));
  if (path == Path::block_row || path == Path::staged_rows) {
    const bool quant = a.quant != Quant::none;
    const std::int64_t max_threads = quant ? kBlockRowMaxThreads<float, true> : kBlockRowMaxThreads<float, false>;
    const bool lean_y = path == Path::block_row && quant && size_of(a.x.type) == 2 && M == Mutant::none;
    const std::int64_t max_dim = lean_y ? kBlockRowLeanYMaxDim16 : max_threads * kBlockRowIters * kChunk;
    if (D > max_dim)
      return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(max_dim) + " for " +
                                                         to_string(a.x.type) + (quant ? " with FP8 outputs" : "") +
                                                         " (the row must fit in registers)");
    // The lean-y kernel runs one row per block (no row loop): a grid's 2^31 - 1 blocks bound R.
    if (lean_y && D > kBlockRowHeldYMaxDim && a.rows > kMaxGridBlocks)
      return Status::fail(Status::Code::unsupported, who + ": FP8 rows past 8192 run a block per row, R <= 2^31 - 1");
  }
  // fwd.staged_rows implements only FP8 outputs of 4096 < D <= 8192, whose 256-thread FP8 blocks
  // fit two per SM by registers; elsewhere fwd.block_row is faster (measured on the H200: 0.91-0.99
  // of the copy against 0.80-0.89).
  if (path == Path::staged_rows && (a.quant == Quant::none || D <= kStagedMinDim - 1))
    return Status::fail(Status::Code::unsupported, who + ": FP8 outputs with " + std::to_string(kStagedMinDim) +
                                                       " <= D only (fwd.block_row is faster elsewhere)");
  if (path == Path::staged_rows && a.rows > 0 && !staged_fits(D, size_of(a.x.type), a.o.data != nullptr))
    return Status::fail(Status::Code::unsupported, who + ": two stages of this row (" + to_string(a.x.type) +
                                                       (a.o.data ? ", fused add" : "") + ") exceed the shared-memory budget");
  if (path == Path::packed_rows) {
    // Any alignment, but packed rows: a tile of consecutive rows is one span of each tensor.
    if (D > kPackedMaxDim) return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kPackedMaxDim));
    if (a.quant == Quant::per_block && packed_quant_entries(D, size_of(a.x.type)) > kPackedMaxQuantEntries)
      return Status::fail(Status::Code::unsupported, who + ": a tile's FP8 groups exceed " + std::to_string(kPackedMaxQuantEntries));
    const bool packed = a.rows <= 1 || (a.x.stride == D && a.y.stride == D && (a.o.data == nullptr || a.o.stride == D));
    if (!packed) return Status::fail(Status::Code::unsupported, who + ": rows are not packed (a row stride differs from D)");
    if (packed_fwd_stages(D, size_of(a.x.type), a.o.data != nullptr) < kPackedMinStages)
      return Status::fail(Status::Code::unsupported, who + ": fewer than 3 stages of this tile fit shared memory");
    return Status::success();
  }
  if (path == Path::shifted_row) {
    // Any alignment, but one frame: every row of x, y (and o) at the same offset from a 16-byte
    // boundary (equal base offsets, and row strides of equal residue when R > 1).
    if (a.quant != Quant::none)
      return Status::fail(Status::Code::unsupported, who + ": no FP8 outputs (their rows do not share x's frame)");
    if (D > kShiftedMaxDim) return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kShiftedMaxDim));
    const std::size_t es = size_of(a.x.type);
    auto frame_of = [&](const Tensor& v) {
      const std::uint64_t base = reinterpret_cast<std::uintptr_t>(v.data) % kVecBytes;
      const std::uint64_t step = a.rows > 1 ? static_cast<std::uint64_t>(v.stride) * es % kVecBytes : 0;
      return base * kVecBytes + step;
    };
    if (frame_of(a.y) != frame_of(a.x) || (a.o.data != nullptr && frame_of(a.o) != frame_of(a.x)))
      return Status::fail(Status::Code::misaligned, who + ": the rows of x, y" + (a.o.data ? ", o" : "") +
                                                        " do not share one 16-byte frame (base offsets or row strides mod 16 differ)");
    return Status::success();
  }
  if (path == Path::cluster_row) {
    if (D > kFwdClusterMaxDim)
      return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kFwdClusterMaxDim) +
                                                         " (8 CTAs x their threads x their chunks x 8)");
    const Status c = cluster_launch_status();
    if (!c.ok()) return Status::fail(c.code, who + ": " + c.reason);
  }
  if (path == Path::bulk_ring) {
    if (a.quant != Quant::none)
      return Status::fail(Status::Code::unsupported, who + ": no FP8 outputs (fwd.large_d runs them)");
    const Status c = bulk_copy_status();
    if (!c.ok()) return Status::fail(c.code, who + ": " + c.reason);
    const bool add = a.o.data != nullptr;
    if (bulk_ring_smem(D, kChunk * static_cast<std::int64_t>(size_of(a.x.type)), add, smem_cache_budget(1)).ring.pieces == 0)
      return Status::fail(Status::Code::unsupported,
                          who + ": a row of D = " + std::to_string(D) + " (" + to_string(a.x.type) + (add ? ", fused add" : "") +
                              ") takes more 1024-chunk slots than this device's shared memory holds" +
                              (add ? " beside one slot of o" : ""));
  }
  const bool element_path = path == Path::element_row || path == Path::realigned_row;
  if (element_path && D > kElementRowMaxDim)
    return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kElementRowMaxDim) +
                                                       " (16 elements per thread, 512 threads)");
  if (element_path && a.rows > std::int64_t{0x7fffffff})
    return Status::fail(Status::Code::unsupported, who + ": R >= 2^31 (one block per row)");
  if (path == Path::scalar || element_path) return Status::success();  // any alignment
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

// ------------------------------------------------------------------------------------------
// Launchers, one per path. Each: can_implement (nothing launches on invalid input), R = 0 is a
// no-op, then the launch and the runtime's verdict.
// ------------------------------------------------------------------------------------------

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
template <Mutant M, bool kQuantPath = false, typename Launch>
Status run_path(Path path, const ForwardArgs& a, Launch&& launch) {
  Status st = can_implement<M>(path, a);
  if (!st.ok() || a.rows == 0) return st;
  const Params p = make_params(a);
  cudaStream_t s = as_stream(a.stream);
  Status result = Status::success();
  dispatch<M, kQuantPath>(a, [&](auto tt, auto gt, auto q, auto ad) { launch(tt, gt, q, ad, p, s, result); });
  if (!result.ok()) return result;
  const std::string who = std::string("fwd.") + path_name(path);
  return launch_status(who.c_str());
}

template <typename T, typename G, bool kQ, bool kA, int LANES, int ITERS, Mutant M, bool kEarlyW = false>
void launch_regs(const Params& p, int threads, std::int64_t rows_per_block, cudaStream_t s) {
  const std::int64_t blocks = (p.rows + rows_per_block - 1) / rows_per_block;
  fwd_regs_kernel<T, G, kQ, kA, LANES, ITERS, M, false, kEarlyW><<<grid_for(blocks), threads, 0, s>>>(p);
}

// Few rows (one block each, well under a wave): fwd.block_row loads each row's weights with its
// x (fwd_regs_kernel, kEarlyW), the same arithmetic and bits: a row's latency is the cost here
// (H200: R = 1-64 take 2.6-4.6 µs against 0.8 µs for an empty kernel in the same CUDA graph).
inline constexpr std::int64_t kEarlyWeightsMaxRows = 128;
// fwd.block_row's L2 prefetch one wave ahead (run_block_row): the 16-bit plain forward of rows
// over this width (512 threads at D = 16384; at D <= 8192 it measured within 3 % or slower), and
// the 16-bit fused add + FP8 from this many rows (faster at 32768, slower at 4096).
inline constexpr std::int64_t kBlockRowAheadMinDim16 = 8192;
inline constexpr std::int64_t kBlockRowAheadMinRowsAddQuant16 = 16384;

// The blocks of `kernel` (`threads` each, no dynamic shared memory) that fit on the current
// device at once, asked of the occupancy calculator once per device and block size (kSlots + 1
// sizes of a whole number of warps).
template <int kSlots>
struct WaveCache {
  std::int64_t wave[64][kSlots + 1] = {};
  template <typename Kernel>
  cudaError_t get(Kernel kernel, int threads, std::int64_t& out) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    const int slot = threads / kWarp;
    const bool cached = e == cudaSuccess && dev >= 0 && dev < 64 && slot <= kSlots;
    out = cached ? wave[dev][slot] : 0;
    if (e == cudaSuccess && out == 0) {
      e = persistent_grid(kernel, threads, 0, std::int64_t{1} << 40, out);
      if (e == cudaSuccess && cached) wave[dev][slot] = out;
    }
    return e;
  }
};

// fwd_regs_stagger_kernel's delay between an SM's first-wave blocks: the time the device needs to
// read and write one row per SM, at kStaggerBytesPerNs (the H200's device copy: 4.2-4.3 TB/s).
// A row of the fused add + FP8 moves 7 D bytes, so its slot is 1.75x the plain forward's. Plain
// forward rows over kStaggerMaxRowBytes keep fwd_regs_kernel (16 KB rows measured 0.993-0.998x of
// it from 8192 rows on the H200); the fused add + FP8 from 16384 rows takes the prefetch kernel.
inline constexpr std::int64_t kStaggerBytesPerNs = 4300;
inline constexpr std::int64_t kStaggerMinDim = 2048;
inline constexpr std::int64_t kStaggerMaxRowBytes = 10 * 1024;
inline constexpr std::int64_t kStaggerMinWaves = 4;
// `row_bytes`: what one row moves (read and written: 4 D for the plain 16-bit forward).
inline unsigned stagger_slot_ns(int sms, std::int64_t row_bytes) {
  return static_cast<unsigned>(row_bytes * sms / kStaggerBytesPerNs);
}

template <Mutant M>
Status run_warp_row(const ForwardArgs& a) {
  const RegsConfig c = warp_row_config(a.dim);
  return run_path<M>(Path::warp_row, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status&) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    const std::int64_t rpb = kSubWarpBlock / c.lanes;
    switch (c.lanes * 8 + c.iters) {
      case 1 * 8 + 1: launch_regs<T, G, kQ, kA, 1, 1, M>(p, kSubWarpBlock, rpb, s); break;
      case 2 * 8 + 1: launch_regs<T, G, kQ, kA, 2, 1, M>(p, kSubWarpBlock, rpb, s); break;
      case 4 * 8 + 1: launch_regs<T, G, kQ, kA, 4, 1, M>(p, kSubWarpBlock, rpb, s); break;
      case 8 * 8 + 1: launch_regs<T, G, kQ, kA, 8, 1, M>(p, kSubWarpBlock, rpb, s); break;
      case 16 * 8 + 1: launch_regs<T, G, kQ, kA, 16, 1, M>(p, kSubWarpBlock, rpb, s); break;
      case 32 * 8 + 1: launch_regs<T, G, kQ, kA, 32, 1, M>(p, kSubWarpBlock, rpb, s); break;
      case 32 * 8 + 2: launch_regs<T, G, kQ, kA, 32, 2, M>(p, kSubWarpBlock, rpb, s); break;
      default: launch_regs<T, G, kQ, kA, 32, 4, M>(p, kSubWarpBlock, rpb, s); break;
    }
  });
}

template <Mutant M>
Status run_block_row(const ForwardArgs& a) {
  return run_path<M>(Path::block_row, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    const RegsConfig c = block_row_config(a.dim, a.rows, M, kBlockRowMaxThreads<T, kQ>);
    if constexpr (M == Mutant::none && sizeof(T) == 2 && kQ) {  // FP8 rows past the 256-thread blocks
      if (c.lanes > kBlockRowMaxThreads<T, kQ>) {
        fwd_regs_lean_y_kernel<T, G, kA, kBlockRowIters><<<grid_for(a.rows), c.lanes, 0, s>>>(p);
        return;
      }
    }
    if constexpr (M == Mutant::none && sizeof(T) == 2) {  // fp32 FP8 rows: no registers to spare
      if (a.rows <= kEarlyWeightsMaxRows) return launch_regs<T, G, kQ, kA, 0, kBlockRowIters, M, true>(p, c.lanes, 1, s);
    }
    // The L2 prefetch one wave ahead (fwd_regs_ahead_kernel) where it measures faster on the H200:
    // the 16-bit plain forward of rows over 8192, the fp32 FP8 forward, and the 16-bit FP8 forward
    // behind the fused add from 16384 rows. Elsewhere it is slower (the fused add alone by 4-15 %).
    // The wave is the blocks of that kernel that fit on the device at once (cached per device and
    // block size); with no more rows than a wave there is nothing to prefetch for. The fp32 FP8
    // forward keeps fwd_regs_kernel up to kEarlyWeightsMaxRows rows, where no row is ahead. The
    // bits are the same either way (one body), so a row's output does not depend on R.
    constexpr bool kAheadForm = M == Mutant::none && ((sizeof(T) == 2 && !kQ && !kA) || (sizeof(T) == 4 && kQ && !kA) ||
                                                      (sizeof(T) == 2 && kQ && kA));
    if constexpr (kAheadForm) {
      const bool ahead_here = sizeof(T) == 4  ? a.rows > kEarlyWeightsMaxRows
                              : kQ            ? a.rows >= kBlockRowAheadMinRowsAddQuant16
                                              : a.dim > kBlockRowAheadMinDim16;
      if (ahead_here) {
        auto kernel = fwd_regs_ahead_kernel<T, G, kQ, kA, kBlockRowIters>;
        static WaveCache<kBlockRowMaxThreads<T, kQ> / kWarp> waves;
        std::int64_t wave = 0;
        if (const cudaError_t e = waves.get(kernel, c.lanes, wave); e != cudaSuccess) {
          result = Status::fail(Status::Code::launch_failed, std::string("fwd.block_row: launch shape: ") + cudaGetErrorString(e));
          return;
        }
        kernel<<<grid_for(a.rows), c.lanes, 0, s>>>(p, wave < a.rows ? wave : 0);
        return;
      }
    }
    // The plain 16-bit forward of kStaggerMinDim <= D, rows of at most kStaggerMaxRowBytes, and the
    // 16-bit fused add + FP8 of kStaggerMinDim <= D (to 8192 here), over kStaggerMinWaves waves of
    // rows or more: the first wave staggered (fwd_regs_stagger_kernel). Not the fused add alone nor
    // FP8 alone (measured 0.996-1.000x and 0.985-0.996x of the unstaggered kernel on the H200).
    if constexpr (M == Mutant::none && sizeof(T) == 2 && kQ == kA) {
      if (a.dim >= kStaggerMinDim && (kQ || a.dim * static_cast<std::int64_t>(sizeof(T)) <= kStaggerMaxRowBytes)) {
        auto kernel = fwd_regs_stagger_kernel<T, G, kQ, kA, kBlockRowIters>;
        static WaveCache<kBlockRowMaxThreads<T, kQ> / kWarp> waves;
        std::int64_t wave = 0;
        int sms = 0;
        cudaError_t e = waves.get(kernel, c.lanes, wave);
        if (e == cudaSuccess) sms = sm_count();
        if (e != cudaSuccess || sms <= 0) {
          result = Status::fail(Status::Code::launch_failed, std::string("fwd.block_row: launch shape: ") +
                                                                 (e != cudaSuccess ? cudaGetErrorString(e) : "no SM count"));
          return;
        }
        if (a.rows >= kStaggerMinWaves * wave) {
          const std::int64_t row_bytes = a.dim * static_cast<std::int64_t>((kA ? 3 : 1) * sizeof(T) + (kQ ? 1 : sizeof(T)));
          const unsigned slot = stagger_slot_ns(sms, row_bytes);
          kernel<<<grid_for(a.rows), c.lanes, 0, s>>>(p, wave, static_cast<unsigned>(sms), slot);
          return;
        }
      }
    }
    launch_regs<T, G, kQ, kA, 0, kBlockRowIters, M>(p, c.lanes, 1, s);
  });
}

template <Mutant M>
Status run_staged_rows(const ForwardArgs& a) {
  return run_path<M, true>(Path::staged_rows, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    const int sms = sm_count();
    if (sms <= 0) {
      result = Status::fail(Status::Code::no_device, "fwd.staged_rows: no CUDA device answered for the SM count");
    } else if constexpr (!kQ) {
      result = Status::fail(Status::Code::unsupported, "fwd.staged_rows: FP8 outputs only");
    } else {
    const RegsConfig c = block_row_config(a.dim, a.rows, M, kBlockRowMaxThreads<T, kQ>);
    auto kernel = fwd_regs_kernel<T, G, kQ, kA, 0, kBlockRowIters, M, true>;
    int reg_blocks = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&reg_blocks, kernel, c.lanes, 0);
    const std::size_t stage_bytes = staged_stage_bytes(a.dim, sizeof(T), kA);
    const StagedLaunch l = staged_launch_shape(reg_blocks, stage_bytes);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(l.smem));
    if (e != cudaSuccess) {
      result = Status::fail(Status::Code::launch_failed, std::string("fwd.staged_rows: ") + cudaGetErrorString(e));
      return;
    }
    // The kernel reads its stage count back from the dynamic shared memory size.
    const std::int64_t grid = std::min<std::int64_t>(a.rows, static_cast<std::int64_t>(l.blocks_per_sm) * sms);
    kernel<<<grid_for(grid), c.lanes, l.smem, s>>>(p);
    }
  });
}

// A large-D block's dynamic shared memory for a row of n chunks of chunk_bytes within `budget`:
// the h cache (as many chunks as fit; the rest re-read), and for FP8 with a dynamic per-token
// scale (stash_wanted), where the whole row's h and its y as fp32 (two float4 a chunk) both fit,
// the y stash after the cache (fwd_smem_kernel's kStash). A pure function of its arguments, so
// test_launch_configs checks it for every D without a GPU.
struct LargeDSmem {
  std::int64_t cache_chunks = 0;
  std::size_t bytes = 0;
  bool stash = false;
};
inline constexpr std::int64_t kStashBytesPerChunk = 2 * 16;
static_assert(kStashBytesPerChunk == 2 * sizeof(float4), "the stash holds a chunk's y as two float4");
inline LargeDSmem large_d_smem(std::int64_t n, std::int64_t chunk_bytes, std::int64_t budget, bool stash_wanted) {
  LargeDSmem m;
  m.cache_chunks = std::min<std::int64_t>(n, budget / chunk_bytes);
  m.bytes = static_cast<std::size_t>(m.cache_chunks * chunk_bytes);
  const std::int64_t with_stash = n * (chunk_bytes + kStashBytesPerChunk);
  if (stash_wanted && m.cache_chunks == n && with_stash <= budget) {
    m.bytes = static_cast<std::size_t>(with_stash);
    m.stash = true;
  }
  return m;
}

// Where fwd.large_d runs on its persistent grid with the next row's head prefetched: everywhere
// but the plain forward of rows over 64 KB, which keeps a block per row (measured on the H200,
// bf16, D = 65536: 0.79-0.82 of the copy a block per row against 0.69-0.70 persistent).
inline constexpr std::int64_t kLargeDPlainPersistentMaxRowBytes = 64 * 1024;
inline bool large_d_persistent(const ForwardArgs& a) {
  const bool plain = a.quant == Quant::none && a.o.data == nullptr;
  return !plain || a.dim * static_cast<std::int64_t>(size_of(a.x.type)) <= kLargeDPlainPersistentMaxRowBytes;
}

// fwd.large_d (1024 threads, one block per SM) and fwd.large_d_pair (512 threads, two).
template <Mutant M, int THREADS>
Status launch_large_d(const ForwardArgs& a, Path path) {
  return run_path<M>(path, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    const std::string who = std::string("fwd.") + path_name(path);
    const std::int64_t budget = smem_cache_budget(THREADS == kSmemThreads ? 1 : kSmemPairBlocksPerSM);
    // FP8 with a dynamic per-token scale where the row's h and its y as fp32 both fit: the kernel
    // with the y stash (y formed once instead of twice), with room for it.
    const LargeDSmem m = large_d_smem(chunks_of(a.dim), static_cast<std::int64_t>(sizeof(Chunk<T>)), budget,
                                      kQ && M == Mutant::none && a.quant == Quant::dynamic_token);
    const std::int64_t cache_chunks = m.cache_chunks;
    const std::size_t bytes = m.bytes;
    auto kernel = fwd_smem_kernel<T, G, kQ, kA, M, THREADS>;
    if constexpr (kQ && M == Mutant::none) {
      if (m.stash) kernel = fwd_smem_kernel<T, G, kQ, kA, M, THREADS, true>;
    }
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    // fwd.large_d: a persistent grid, each block prefetching the head of its next row (the
    // kernel's loop), except the plain forward of rows over 64 KB, which keeps a block per row.
    // fwd.large_d_pair: a block per row (its two blocks per SM overlap already).
    std::int64_t grid = a.rows;
    if constexpr (THREADS == kSmemThreads) {
      if (e == cudaSuccess && large_d_persistent(a)) e = persistent_grid(kernel, THREADS, bytes, a.rows, grid);
    }
    if (e != cudaSuccess) {
      result = Status::fail(Status::Code::launch_failed, who + ": launch shape: " + cudaGetErrorString(e));
      return;
    }
    kernel<<<grid_for(grid), THREADS, bytes, s>>>(p, cache_chunks);
  });
}

template <Mutant M>
Status run_large_d(const ForwardArgs& a) {
  return launch_large_d<M, kSmemThreads>(a, Path::large_d);
}

template <Mutant M>
Status run_large_d_pair(const ForwardArgs& a) {
  return launch_large_d<M, kSmemPairThreads>(a, Path::large_d_pair);
}

// fwd.bulk_ring's launcher, defined beside its kernel in forward_bulk_ring.cu (its only
// instantiation).
template <Mutant M>
Status run_bulk_ring(const ForwardArgs& a);

template <Mutant M>
Status run_element_row(const ForwardArgs& a) {
  return run_path<M>(Path::element_row, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status&) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    fwd_element_kernel<T, G, kQ, kA, M><<<grid_for(a.rows), element_threads(a.dim), 0, s>>>(p);
  });
}

// fwd.realigned_row: fwd.element_row's kernel with the row moved through shared memory in
// 16-byte vectors (kRealign); two row buffers of dynamic shared memory (fp32 rows of 8192 with
// the fused add: 64 KB, beyond the default 48 KB: opted in).
template <Mutant M>
Status run_realigned_row(const ForwardArgs& a) {
  return run_path<M>(Path::realigned_row, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    const std::size_t bytes = 2 * static_cast<std::size_t>(realign_buffer_bytes(a.dim, sizeof(T)));
    // The plain forward runs on a persistent grid with its weights held in registers; the fused
    // add and FP8 forms keep a block per row: held weights cost them occupancy (87-111
    // registers) and the persistent form runs 4-51 % slower there (H200, bf16, D = 1025-8191,
    // R = 32768), where the plain forward runs 7-17 % faster.
    constexpr bool kPersist = !kQ && !kA;
    auto kernel = fwd_element_kernel<T, G, kQ, kA, M, true, kPersist>;
    const int threads = element_threads(a.dim);
    cudaError_t e = cudaSuccess;
    if (bytes > 48 * 1024) e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    std::int64_t grid = a.rows;
    if constexpr (kPersist) {
      if (e == cudaSuccess) e = persistent_grid(kernel, threads, bytes, a.rows, grid);
    }
    if (e != cudaSuccess) {
      result = Status::fail(Status::Code::launch_failed, std::string("fwd.realigned_row: launch shape: ") + cudaGetErrorString(e));
      return;
    }
    kernel<<<grid_for(grid), threads, bytes, s>>>(p);
  });
}

// fwd.packed_rows (forward_packed.cuh): one program per SM, two where the tile plan holds as many
// threads that way (D <= 2560; at most the tiles), the stages capped at a program's tiles.
// Dispatched for the fused add, the fused add + FP8, the FP8 forward per block and the plain
// forward of packed rows where it measured faster: its rows in the dispatch table.
template <Mutant M>
Status run_packed_rows(const ForwardArgs& a) {
  return run_path<M>(Path::packed_rows, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    const int sms = sm_count();
    if (sms <= 0) {
      result = Status::fail(Status::Code::no_device, "fwd.packed_rows: no CUDA device answered for the SM count");
    } else {
      const PackedConfig c = packed_fwd_config(a.dim, sizeof(T));
      const std::int64_t tiles = (a.rows + c.tile_rows() - 1) / c.tile_rows();
      const std::int64_t grid = std::min<std::int64_t>(std::int64_t{c.per_sm} * sms, tiles);
      const int stages = packed_fwd_stages(a.dim, sizeof(T), kA, (tiles + grid - 1) / grid);
      const std::size_t smem = static_cast<std::size_t>(stages) * packed_fwd_stage_bytes(c, a.dim, sizeof(T), kA);
      auto go = [&](auto kernel) {
        cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        // Two blocks an SM need the largest shared-memory carveout.
        if (e == cudaSuccess && c.per_sm > 1)
          e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
        if (e != cudaSuccess) {
          result = Status::fail(Status::Code::launch_failed, std::string("fwd.packed_rows: shared memory: ") + cudaGetErrorString(e));
          return;
        }
        kernel<<<grid_for(grid), c.block(), smem, s>>>(p, c.threads, c.groups, stages);
      };
      if (c.per_thread == kPackedPerThreadWide) {
        go(fwd_packed_kernel<T, G, kPackedPerThreadWide, 1, kA, kQ, M>);
      } else if (c.per_group == kPackedRowsPerGroup) {
        go(fwd_packed_kernel<T, G, kPackedPerThread, kPackedRowsPerGroup, kA, kQ, M>);
      } else {
        go(fwd_packed_kernel<T, G, kPackedPerThread, 1, kA, kQ, M>);
      }
    }
  });
}

// fwd.shifted_row's limits: a warp's rows follow one another (load, sum, store), so its loads wait
// idle through the row's work; the column-chunk order (the shuffles and the switch over the lead,
// which make a row's bits independent of its position) costs 12-15 % at 32768 x 1025, and a second
// register set for the next row's loads costs more than it gains (128 registers a thread halve the
// warps an SM holds).
// fwd.shifted_row (forward_shifted.cuh): a persistent grid of shifted_config(D) blocks, a whole
// number of residue classes of the rows' lead period; the weights at a block's lead as dynamic
// shared memory.
template <Mutant M>
Status run_shifted_row(const ForwardArgs& a) {
  return run_path<M>(Path::shifted_row, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    if constexpr (!kQ) {  // can_implement declines FP8 outputs
      const ShiftedConfig c = shifted_config(a.dim);
      const std::size_t smem = shifted_table_bytes(a.dim, sizeof(G));
      const int period = a.rows > 1 ? shifted_period(a.x.stride, sizeof(T)) : 1;
      auto go = [&](auto kernel) {
        cudaError_t e = cudaSuccess;
        if (smem > 48 * 1024) e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        // As many blocks as fit at once, a whole number of residue classes, none without a row.
        const std::int64_t per_class = ((a.rows + period - 1) / period + c.groups - 1) / c.groups;
        std::int64_t grid = 0;
        if (e == cudaSuccess) e = persistent_grid(kernel, c.block(), smem, per_class * period, grid);
        if (e != cudaSuccess) {
          result = Status::fail(Status::Code::launch_failed, std::string("fwd.shifted_row: launch shape: ") + cudaGetErrorString(e));
          return;
        }
        grid = std::max<std::int64_t>(grid / period, 1) * period;
        kernel<<<grid_for(grid), c.block(), smem, s>>>(p, c.lanes, period);
      };
      if (c.iters == 5) go(fwd_shifted_kernel<T, G, kA, 5, M>); else go(fwd_shifted_kernel<T, G, kA, 4, M>);
    }
  });
}

template <Mutant M>
Status run_scalar(const ForwardArgs& a) {
  return run_path<M>(Path::scalar, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status&) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    fwd_scalar_kernel<T, G, kQ, kA, M><<<grid_for(a.rows), scalar_threads(a.dim), 0, s>>>(p);
  });
}

// fwd.cluster_row (forward_cluster.cuh): the co-resident clusters of the instantiation at the
// block size launched (cudaOccupancyMaxActiveClusters, cached per device and block size), at
// most R; each cluster walks rows cluster + k·clusters.
template <typename Kernel>
std::int64_t fwd_cluster_programs(Kernel kernel, int threads, int max_threads) {
  constexpr int kSizes = 1024 / kWarp;
  static std::int64_t cached[64][kSizes + 1] = {};
  int dev = 0;
  if (threads <= 0 || threads > max_threads || cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const int slot = threads / kWarp;
  if (dev >= 0 && dev < 64 && cached[dev][slot] > 0) return cached[dev][slot];
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kFwdClusterCtas, 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64) cached[dev][slot] = n;
  return n;
}

template <Mutant M>
Status run_cluster_row(const ForwardArgs& a) {
  return run_path<M>(Path::cluster_row, a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
    constexpr ClusterShape cs = fwd_cluster_shape_of<T>;
    const int threads = fwd_cluster_threads(a.dim, cs);
    auto kernel = fwd_cluster_kernel<T, G, kQ, kA, M>;
    const std::int64_t clusters = std::min(fwd_cluster_programs(kernel, threads, cs.max_threads), a.rows);
    if (clusters <= 0) {
      result = Status::fail(Status::Code::launch_failed, "fwd.cluster_row: no 8-CTA cluster of " +
                                                             std::to_string(threads) + " threads fits this device");
      return;
    }
    kernel<<<grid_for(clusters * cs.ctas), threads, 0, s>>>(p, fwd_cluster_slice(a.dim, cs));
  });
}

// Function-pointer adapters for the registry (one set per path and mutant).
template <Mutant M> Status can_warp_row(const ForwardArgs& a) { return can_implement<M>(Path::warp_row, a); }
template <Mutant M> Status can_block_row(const ForwardArgs& a) { return can_implement<M>(Path::block_row, a); }
template <Mutant M> Status can_staged_rows(const ForwardArgs& a) { return can_implement<M>(Path::staged_rows, a); }
template <Mutant M> Status can_large_d(const ForwardArgs& a) { return can_implement<M>(Path::large_d, a); }
template <Mutant M> Status can_large_d_pair(const ForwardArgs& a) { return can_implement<M>(Path::large_d_pair, a); }
template <Mutant M> Status can_bulk_ring(const ForwardArgs& a) { return can_implement<M>(Path::bulk_ring, a); }
template <Mutant M> Status can_element_row(const ForwardArgs& a) { return can_implement<M>(Path::element_row, a); }
template <Mutant M> Status can_realigned_row(const ForwardArgs& a) { return can_implement<M>(Path::realigned_row, a); }
template <Mutant M> Status can_scalar(const ForwardArgs& a) { return can_implement<M>(Path::scalar, a); }
template <Mutant M> Status can_packed_rows(const ForwardArgs& a) { return can_implement<M>(Path::packed_rows, a); }
template <Mutant M> Status can_cluster_row(const ForwardArgs& a) { return can_implement<M>(Path::cluster_row, a); }
template <Mutant M> Status can_shifted_row(const ForwardArgs& a) { return can_implement<M>(Path::shifted_row, a); }

}  // namespace rmsnorm::cuda::fwd
