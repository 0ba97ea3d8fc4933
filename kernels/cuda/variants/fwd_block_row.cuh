// fwd.block_row: D <= 16384, a block of up to 512 threads per row (fwd_regs_kernel with LANES = 0),
// the row in registers, 16-byte loads (FP8 outputs of 16-bit rows past 8192 in the lean-y kernel,
// y not held), and its launch form fwd.block_row.staged: the same kernel with a persistent grid
// and each block's next rows staged in shared memory (cp.async), FP8 outputs of 4096 < D <= 8192
// only; the same bits.
#pragma once

#include "forward_variant.h"

namespace rmsnorm::cuda::fwd {

inline constexpr int kBlockRowIters = 4;  // chunks per thread in block_row
// fwd.block_row's FP8 forms of 16-bit rows (the product) past the 256-thread FP8 blocks' 8192:
// fwd_regs_lean_y_kernel, up to 512 threads a row (4 chunks each), y not held.
inline constexpr std::int64_t kBlockRowHeldYMaxDim =
    std::int64_t{kBlockRowMaxThreads<float, true>} * kBlockRowIters * kChunk;
inline constexpr std::int64_t kBlockRowLeanYMaxDim16 = std::int64_t{kLeanYThreads} * kBlockRowIters * kChunk;
static_assert(kBlockRowHeldYMaxDim == 8192 && kBlockRowLeanYMaxDim16 == 16384,
              "FP8 rows: 256 / 512 threads of 4 chunks");

// block_row: 4 chunks per thread, threads a multiple of 32. `rows` only matters for mutant M16.
inline RegsConfig block_row_config(std::int64_t dim, std::int64_t rows = 0, Mutant m = Mutant::none,
                                   int max_threads = 1024) {
  const std::int64_t n = chunks_of(dim);
  std::int64_t threads = round_up((n + kBlockRowIters - 1) / kBlockRowIters, kWarp);
  if (m == Mutant::M16_order_depends_on_rows && rows <= 64)
    threads = std::min<std::int64_t>(threads * 2, max_threads);  // "more threads for few rows"
  return {static_cast<int>(threads), kBlockRowIters};
}

// fwd.block_row.staged: the block_row kernel with a persistent grid and each block's next rows staged
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

// fwd.block_row's FP8 outputs with per-block scales of 16-bit rows of D <= 8192 take the lean-y
// kernel from this many rows, ahead of the few-row form (docs/launch-forms.md); per token the
// held-y kernel stays.
inline constexpr std::int64_t kLeanYPerBlockMinRows = kEarlyWeightsMaxRows + 1;
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

// fwd.block_row and its staged form share the refusals (the register-held row) and the shape.
template <bool kStaged, Mutant M>
Status block_row_refuse(const ForwardArgs& a, const std::string& who) {
  const std::int64_t D = a.dim;
  const bool quant = a.quant != Quant::none;
  const std::int64_t max_threads = quant ? kBlockRowMaxThreads<float, true> : kBlockRowMaxThreads<float, false>;
  const bool lean_y = !kStaged && quant && size_of(a.x.type) == 2 && M == Mutant::none;
  const std::int64_t max_dim = lean_y ? kBlockRowLeanYMaxDim16 : max_threads * kBlockRowIters * kChunk;
  if (D > max_dim)
    return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(max_dim) + " for " +
                                                       to_string(a.x.type) + (quant ? " with FP8 outputs" : "") +
                                                       " (the row must fit in registers)");
  // The lean-y kernel runs one row per block (no row loop): a grid's 2^31 - 1 blocks bound R.
  if (lean_y && D > kBlockRowHeldYMaxDim && a.rows > kMaxGridBlocks)
    return Status::fail(Status::Code::unsupported, who + ": FP8 rows past 8192 run a block per row, R <= 2^31 - 1");
  if constexpr (kStaged) {
    // fwd.block_row.staged implements only FP8 outputs of 4096 < D <= 8192, whose 256-thread FP8 blocks
    // fit two per SM by registers; elsewhere fwd.block_row is faster (measured on the H200: 0.91-0.99
    // of the copy against 0.80-0.89).
    if (a.quant == Quant::none || D <= kStagedMinDim - 1)
      return Status::fail(Status::Code::unsupported, who + ": FP8 outputs with " + std::to_string(kStagedMinDim) +
                                                         " <= D only (fwd.block_row is faster elsewhere)");
    if (a.rows > 0 && !staged_fits(D, size_of(a.x.type), a.o.data != nullptr))
      return Status::fail(Status::Code::unsupported, who + ": two stages of this row (" + to_string(a.x.type) +
                                                         (a.o.data ? ", fused add" : "") +
                                                         ") exceed the shared-memory budget");
  }
  return Status::success();
}
inline AccumShape block_row_shape(std::int64_t dim) {
  // The same mapping and order in both forms (the stages change only when rows arrive).
  const RegsConfig c = block_row_config(dim);
  return chunked_block_shape(dim, c.lanes);
}

struct fwd_block_row_staged {
  static constexpr const char* kName = "fwd.block_row.staged";
  static constexpr const char* kAlias = "fwd.staged_rows";
  static constexpr int kRank = 200;
  static constexpr const char* kDescription =
      "FP8 outputs, 4096 < D <= 8192: fwd.block_row on a persistent grid, the next rows staged in shared memory "
      "(cp.async)";
  static constexpr std::uint32_t kOps = kQuantOps;
  static constexpr bool kQuantPath = true;
  static constexpr std::int64_t kDimMin = kStagedMinDim, kDimMax = 8192, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M8_stride_ignored, Mutant::M13_fp8_via_bf16,
                             Mutant::M18_missing_barrier, Mutant::M19_misaligned_as_aligned>;

  static AccumShape shape(std::int64_t dim) { return block_row_shape(dim); }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    return block_row_refuse<true, M>(a, who);
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return run_variant<M, fwd_block_row_staged>(
        a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
          using T = typename decltype(tt)::type;
          using G = typename decltype(gt)::type;
          constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
          const int sms = sm_count();
          if (sms <= 0) {
            result =
                Status::fail(Status::Code::no_device, "fwd.block_row.staged: no CUDA device answered for the SM count");
          } else if constexpr (!kQ) {
            result = Status::fail(Status::Code::unsupported, "fwd.block_row.staged: FP8 outputs only");
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
              result = Status::fail(Status::Code::launch_failed,
                                    std::string("fwd.block_row.staged: ") + cudaGetErrorString(e));
              return;
            }
            // The kernel reads its stage count back from the dynamic shared memory size.
            const std::int64_t grid = std::min<std::int64_t>(a.rows, static_cast<std::int64_t>(l.blocks_per_sm) * sms);
            launch_kernel(kernel, grid_for(grid), c.lanes, l.smem, s, p);
          }
        });
  }
};

struct fwd_block_row {
  static constexpr const char* kName = "fwd.block_row";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 300;
  static constexpr const char* kDescription =
      "D <= 16384 (FP8 outputs: 16-bit rows to 16384, fp32 to 8192): a block per row, row in registers, 16-byte loads";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = 16384, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M2_eps_outside_root, Mutant::M3_low_precision_sum,
                             Mutant::M7_square_before_upcast, Mutant::M8_stride_ignored, Mutant::M12_scale_no_floor,
                             Mutant::M13_fp8_via_bf16, Mutant::M14_fp8_no_saturation, Mutant::M15_llama_double_round,
                             Mutant::M16_order_depends_on_rows, Mutant::M17_add_unrounded_sum,
                             Mutant::M18_missing_barrier, Mutant::M19_misaligned_as_aligned, Mutant::M20_weight_by_row>;

  static AccumShape shape(std::int64_t dim) { return block_row_shape(dim); }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    return block_row_refuse<false, M>(a, who);
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return run_variant<M, fwd_block_row>(a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s,
                                                Status& result) {
      using T = typename decltype(tt)::type;
      using G = typename decltype(gt)::type;
      constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
      const RegsConfig c = block_row_config(a.dim, a.rows, M, kBlockRowMaxThreads<T, kQ>);
      // The lean-y kernel (y not held: 64 registers against the held-y kernel's 80, so a third
      // more rows in flight): 16-bit FP8 rows past the 256-thread blocks, and per-block scales
      // past the few-row form (kLeanYPerBlockMinRows), not past the grid's 2^31 - 1 blocks.
      if constexpr (M == Mutant::none && sizeof(T) == 2 && kQ) {
        if (c.lanes > kBlockRowMaxThreads<T, kQ> ||
            (a.quant == Quant::per_block && a.rows >= kLeanYPerBlockMinRows && a.rows <= kMaxGridBlocks)) {
          // Rows of exactly lanes · 4 whole chunks without the fused add: the same kernel without the
          // row-end tests (fwd_regs_lean_y_exact_kernel), the same bits.
          if (!kA && exact_row(a.dim, c.lanes, kBlockRowIters))
            launch_kernel(fwd_regs_lean_y_exact_kernel<T, G, kBlockRowIters>, grid_for(a.rows), c.lanes, 0, s, p);
          else
            launch_kernel(fwd_regs_lean_y_kernel<T, G, kA, kBlockRowIters>, grid_for(a.rows), c.lanes, 0, s, p);
          return;
        }
      }
      if constexpr (M == Mutant::none && sizeof(T) == 2) {  // fp32 FP8 rows: no registers to spare
        if (few_rows_form(a.rows, a.dim)) {
          // Rows of exactly lanes · 4 whole chunks (D a multiple of 1024): the same form without the
          // row-end tests (fwd_regs_few_exact_kernel), the same bits.
          if (exact_row(a.dim, c.lanes, kBlockRowIters)) {
            launch_kernel(fwd_regs_few_exact_kernel<T, G, kQ, kA, 0, kBlockRowIters>, grid_for(a.rows), c.lanes, 0, s,
                          p);
            return;
          }
          return launch_regs<T, G, kQ, kA, 0, kBlockRowIters, M, true>(p, c.lanes, 1, s);
        }
      }
      // The L2 prefetch one wave ahead (fwd_regs_ahead_kernel) where it measures faster on the H200:
      // the 16-bit plain forward of rows over 8192, the fp32 FP8 forward, and the 16-bit FP8 forward
      // behind the fused add from 16384 rows. Elsewhere it is slower (the fused add alone by 4-15 %).
      // The wave is the blocks of that kernel that fit on the device at once (cached per device and
      // block size); with no more rows than a wave there is nothing to prefetch for. The fp32 FP8
      // forward keeps fwd_regs_kernel up to kEarlyWeightsMaxRows rows, where no row is ahead. The
      // bits are the same either way (one body), so a row's output does not depend on R.
      constexpr bool kAheadForm = M == Mutant::none && ((sizeof(T) == 2 && !kQ && !kA) ||
                                                        (sizeof(T) == 4 && kQ && !kA) || (sizeof(T) == 2 && kQ && kA));
      if constexpr (kAheadForm) {
        const bool ahead_here = sizeof(T) == 4 ? a.rows > kEarlyWeightsMaxRows
                                : kQ           ? a.rows >= kBlockRowAheadMinRowsAddQuant16
                                               : a.dim > kBlockRowAheadMinDim16;
        if (ahead_here) {
          auto kernel = fwd_regs_ahead_kernel<T, G, kQ, kA, kBlockRowIters>;
          static WaveCache<kBlockRowMaxThreads<T, kQ> / kWarp> waves;
          std::int64_t wave = 0;
          if (const cudaError_t e = waves.get(kernel, c.lanes, wave); e != cudaSuccess) {
            result = Status::fail(Status::Code::launch_failed,
                                  std::string("fwd.block_row: launch shape: ") + cudaGetErrorString(e));
            return;
          }
          launch_kernel(kernel, grid_for(a.rows), c.lanes, 0, s, p, wave < a.rows ? wave : 0);
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
            result = Status::fail(Status::Code::launch_failed,
                                  std::string("fwd.block_row: launch shape: ") +
                                      (e != cudaSuccess ? cudaGetErrorString(e) : "no SM count"));
            return;
          }
          if (a.rows >= kStaggerMinWaves * wave) {
            const std::int64_t row_bytes =
                a.dim * static_cast<std::int64_t>((kA ? 3 : 1) * sizeof(T) + (kQ ? 1 : sizeof(T)));
            const unsigned slot = stagger_slot_ns(sms, row_bytes);
            // Rows of exactly lanes · 4 whole chunks: the same kernel without the row-end tests
            // (its wave is the general kernel's: the same launch bounds).
            if (exact_row(a.dim, c.lanes, kBlockRowIters))
              launch_kernel(fwd_regs_stagger_kernel<T, G, kQ, kA, kBlockRowIters, true>, grid_for(a.rows), c.lanes, 0,
                            s, p, wave, static_cast<unsigned>(sms), slot);
            else
              launch_kernel(kernel, grid_for(a.rows), c.lanes, 0, s, p, wave, static_cast<unsigned>(sms), slot);
            return;
          }
        }
      }
      // The 16-bit fused add of rows of at most 256 threads: the 48-register kernel.
      if constexpr (M == Mutant::none && sizeof(T) == 2 && kA && !kQ) {
        if (c.lanes <= kAddNarrowThreads) {
          launch_kernel(fwd_regs_add_narrow_kernel<T, G, kBlockRowIters>, grid_for(a.rows), c.lanes, 0, s, p);
          return;
        }
      }
      // The 16-bit FP8 forward and the plain forward of rows of exactly lanes · 4 whole chunks (D a
      // multiple of 1024): the kernel without the row-end tests (fwd_regs_exact_kernel), the same
      // bits.
      if constexpr (M == Mutant::none && sizeof(T) == 2 && !kA) {
        if (exact_row(a.dim, c.lanes, kBlockRowIters)) {
          launch_kernel(fwd_regs_exact_kernel<T, G, 0, kBlockRowIters, kQ>, grid_for(a.rows), c.lanes, 0, s, p);
          return;
        }
      }
      launch_regs<T, G, kQ, kA, 0, kBlockRowIters, M>(p, c.lanes, 1, s);
    });
  }
};

}  // namespace rmsnorm::cuda::fwd
