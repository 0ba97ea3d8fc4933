// fwd.warp_row: D <= 1024, a sub-warp of 1-32 lanes per row (fwd_regs_kernel with LANES > 0), the
// row in registers, 16-byte loads; the rows of a 256-thread block side by side.
#pragma once

#include "forward_variant.h"

namespace rmsnorm::cuda::fwd {

inline constexpr std::int64_t kWarpRowMaxDim = 1024;  // 32 lanes × 4 chunks × 8

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
          const std::int64_t rpb = kSubWarpBlock / c.lanes;
          switch (c.lanes * 8 + c.iters) {
            case 1 * 8 + 1:
              launch_regs<T, G, kQ, kA, 1, 1, M>(p, kSubWarpBlock, rpb, s);
              break;
            case 2 * 8 + 1:
              launch_regs<T, G, kQ, kA, 2, 1, M>(p, kSubWarpBlock, rpb, s);
              break;
            case 4 * 8 + 1:
              launch_regs<T, G, kQ, kA, 4, 1, M>(p, kSubWarpBlock, rpb, s);
              break;
            case 8 * 8 + 1:
              launch_regs<T, G, kQ, kA, 8, 1, M>(p, kSubWarpBlock, rpb, s);
              break;
            case 16 * 8 + 1:
              launch_regs<T, G, kQ, kA, 16, 1, M>(p, kSubWarpBlock, rpb, s);
              break;
            case 32 * 8 + 1:
              launch_regs<T, G, kQ, kA, 32, 1, M>(p, kSubWarpBlock, rpb, s);
              break;
            case 32 * 8 + 2:
              launch_regs<T, G, kQ, kA, 32, 2, M>(p, kSubWarpBlock, rpb, s);
              break;
            default:
              launch_regs<T, G, kQ, kA, 32, 4, M>(p, kSubWarpBlock, rpb, s);
              break;
          }
        });
  }
};

}  // namespace rmsnorm::cuda::fwd
