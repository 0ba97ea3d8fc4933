// fwd.warp_row: D <= 1024, a sub-warp of 1-32 lanes per row (fwd_regs_kernel with LANES > 0), the
// row in registers, 16-byte loads; the rows of a block (256 threads, fewer for few rows) side by
// side.
#pragma once

#include "forward_variant.h"

namespace rmsnorm::cuda::fwd {

inline constexpr std::int64_t kWarpRowMaxDim = 1024;  // 32 lanes × 4 chunks × 8
inline constexpr int kHalfWarp = kWarp / 2;            // D = 128: 16 lanes × 1 chunk × 8

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

// Threads per block: kSubWarpBlock, halved (down to one warp) while the rows fill fewer blocks
// than the device has SMs, so that a few hundred rows still reach every SM (docs/launch-forms.md).
inline int warp_row_threads(std::int64_t rows, int lanes) {
  const std::int64_t sms = sm_count();
  int threads = kSubWarpBlock;
  while (threads > kWarp && (rows * lanes + threads - 1) / threads < sms) threads /= 2;
  return threads;
}

// fwd.warp_row's kernel for its configuration (lanes a row, chunks a lane): one of warp_row_config's.
template <typename T, typename G, bool kQ, bool kA, Mutant M, bool kEarlyW>
void launch_warp_row(const RegsConfig& c, const Params& p, int threads, std::int64_t rpb, cudaStream_t s) {
  auto form = [&](auto lanes, auto iters) {
    constexpr int L = decltype(lanes)::value, I = decltype(iters)::value;
    if (c.lanes == L && c.iters == I) launch_regs<T, G, kQ, kA, L, I, M, kEarlyW>(p, threads, rpb, s);
  };
  using std::integral_constant;
  form(integral_constant<int, 1>{}, integral_constant<int, 1>{});
  form(integral_constant<int, 2>{}, integral_constant<int, 1>{});
  form(integral_constant<int, 4>{}, integral_constant<int, 1>{});
  form(integral_constant<int, 8>{}, integral_constant<int, 1>{});
  form(integral_constant<int, 16>{}, integral_constant<int, 1>{});
  form(integral_constant<int, 32>{}, integral_constant<int, 1>{});
  form(integral_constant<int, 32>{}, integral_constant<int, 2>{});
  form(integral_constant<int, 32>{}, integral_constant<int, 4>{});
}

struct fwd_warp_row {
  static constexpr const char* kName = "fwd.warp_row";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 100;
  static constexpr const char* kDescription =
      "D <= 1024: a sub-warp of 1-32 lanes per row, row in registers, 16-byte loads";
  static constexpr std::uint32_t kOps = kAllOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = kWarpRowMaxDim, kF32DimMax = 0;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M8_stride_ignored, Mutant::M9_tail_overread,
                             Mutant::M13_fp8_via_bf16, Mutant::M19_misaligned_as_aligned>;

  static AccumShape shape(std::int64_t dim) {
    const RegsConfig c = warp_row_config(dim);
    AccumShape s;
    s.per_thread = chunked_per_thread(dim, c.lanes);
    s.tree_depth = ceil_log2(c.lanes);
    return s;
  }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    if (a.dim > kWarpRowMaxDim)
      return Status::fail(Status::Code::unsupported, who + ": D > " + std::to_string(kWarpRowMaxDim));
    return Status::success();
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    const RegsConfig c = warp_row_config(a.dim);
    return run_variant<M, fwd_warp_row>(
        a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status&) {
          using T = typename decltype(tt)::type;
          using G = typename decltype(gt)::type;
          constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
          const int threads = warp_row_threads(p.rows, c.lanes);
          const std::int64_t rpb = threads / c.lanes;
          // Few rows: the weights loaded with x (few_rows_form, as fwd.block_row's few-row form).
          if constexpr (M == Mutant::none && sizeof(T) == 2) {
            if (few_rows_form(p.rows, a.dim)) {
              // D = 1024 (a warp of 4 whole chunks a lane) and D = 128 (half a warp of one chunk a
              // lane): the same form without the row-end tests (fwd_regs_few_exact_kernel), the same
              // bits.
              if (exact_row(a.dim, kWarp, 4)) {
                launch_kernel(fwd_regs_few_exact_kernel<T, G, kQ, kA, kWarp, 4>, grid_for((p.rows + rpb - 1) / rpb),
                              threads, 0, s, p);
                return;
              }
              if (exact_row(a.dim, kHalfWarp, 1)) {
                launch_kernel(fwd_regs_few_exact_kernel<T, G, kQ, kA, kHalfWarp, 1>,
                              grid_for((p.rows + rpb - 1) / rpb), threads, 0, s, p);
                return;
              }
              return launch_warp_row<T, G, kQ, kA, M, true>(c, p, threads, rpb, s);
            }
          }
          // The 16-bit FP8 forward of D = 513-1024 with per-block scales: the lean-y kernel (y not
          // held, 64 registers; with the fused add it spills 8-24 bytes at 64 and keeps the held-y
          // kernel). Per token the lean-y kernel takes its amax from the row-sum pass (fused_amax),
          // whose last bit may differ from the few-row form's max over the formed y: a row would
          // quantize differently alone and in a batch. Static scales keep the held-y kernel too
          // (not measured in the lean-y one).
          if constexpr (M == Mutant::none && sizeof(T) == 2 && kQ && !kA) {
            if (c.lanes == kWarp && c.iters == 4 && static_cast<Quant>(p.quant) == Quant::per_block) {
              const std::int64_t blocks = (p.rows + rpb - 1) / rpb;
              if (exact_row(a.dim, kWarp, 4))  // whole chunks only: no row-end tests, the same bits
                launch_kernel(fwd_regs_lean_y_exact_kernel<T, G, 4, kWarp>, grid_for(blocks), threads, 0, s, p);
              else
                launch_kernel(fwd_regs_lean_y_kernel<T, G, kA, 4, kWarp>, grid_for(blocks), threads, 0, s, p);
              return;
            }
          }
          // D = 1024 (a warp of 4 whole chunks a lane), every 16-bit op the held-y kernel serves:
          // the kernel without the row-end tests (fwd_regs_exact_kernel), the same bits.
          if constexpr (M == Mutant::none && sizeof(T) == 2) {
            if (c.lanes == kWarp && c.iters == 4 && exact_row(a.dim, kWarp, 4)) {
              const std::int64_t blocks = (p.rows + rpb - 1) / rpb;
              launch_kernel(fwd_regs_exact_kernel<T, G, kWarp, 4, kQ, kA>, grid_for(blocks), threads, 0, s, p);
              return;
            }
            // D = 128 (16 lanes of one whole chunk): the same kernel at half a warp a row.
            if (c.lanes == kHalfWarp && c.iters == 1 && exact_row(a.dim, kHalfWarp, 1)) {
              const std::int64_t blocks = (p.rows + rpb - 1) / rpb;
              launch_kernel(fwd_regs_exact_kernel<T, G, kHalfWarp, 1, kQ, kA>, grid_for(blocks), threads, 0, s, p);
              return;
            }
          }
          launch_warp_row<T, G, kQ, kA, M, false>(c, p, threads, rpb, s);
        });
  }
};

}  // namespace rmsnorm::cuda::fwd
