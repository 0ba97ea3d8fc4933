// Host-side invariants of the CUDA variants' launch configurations, for every D they take and
// every element size (no GPU needed: the configuration is a function of D and the type).
// A violation here is a launch that would fail or a row that would not be covered on the GPU.
// Plain main (exit 0 / 1, one line per violation): the kernel headers are compiled by nvcc.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backward_cluster.cuh"
#include "backward_packed.cuh"
#include "backward_staged.cuh"
#include "variants/fwd_block_row.cuh"
#include "variants/fwd_bulk_ring.cuh"
#include "variants/fwd_element_row.cuh"
#include "variants/fwd_large_d.cuh"
#include "variants/fwd_packed_rows.cuh"
#include "variants/fwd_shifted_row.cuh"
#include "variants/fwd_warp_row.cuh"

namespace {

// H100 / H200: 227 KB of opt-in shared memory per block, 228 KB per SM, 1 KB reserved per block.
constexpr std::size_t kOptinPerBlock = 227 * 1024;
constexpr std::size_t kPerSM = 228 * 1024;
constexpr std::size_t kReservedPerBlock = 1024;
constexpr std::size_t kStaticSmem = 2 * 32 * sizeof(float) + 2 * 8 * sizeof(float);
constexpr std::size_t kStreamsStaticSmem = 2 * rmsnorm::cuda::bwd::kStagedMaxStreams * 32 * sizeof(float);
constexpr std::size_t kPackedStaticSmem = 2 * rmsnorm::cuda::kPackedMaxGroups * rmsnorm::cuda::kPackedRowsPerGroup * 32 * sizeof(float);

int failures = 0;
void fail(const std::string& what) {
  if (++failures <= 20) std::printf("FAIL %s\n", what.c_str());
}

// The packed tiles' column layout (packed_first_col / packed_cols, the kernels' own functions):
// a group's threads own every column of the row once, and the declared row shape bounds the
// longest chain (a thread's columns) and the butterfly over the group's warps.
void check_packed_layout(const std::string& at, std::int64_t d, const rmsnorm::cuda::PackedConfig& c) {
  std::vector<int> owners(static_cast<std::size_t>(d), 0);
  int longest = 0;
  for (int gt = 0; gt < c.threads; ++gt) {
    const int c0 = rmsnorm::cuda::packed_first_col(gt, c.per_thread);
    const int n = rmsnorm::cuda::packed_cols(c0, static_cast<int>(d), c.per_thread);
    longest = std::max(longest, n);
    for (int m = 0; m < n; ++m) ++owners[static_cast<std::size_t>(c0 + 32 * m)];
  }
  if (std::any_of(owners.begin(), owners.end(), [](int k) { return k != 1; })) fail(at + ": columns not owned once each");
  const rmsnorm::AccumShape s = rmsnorm::cuda::packed_row_shape(d);
  if (s.per_thread < longest || s.tree_depth < 5 + rmsnorm::cuda::ceil_log2(c.threads / 32))
    fail(at + ": declared row shape too small (" + std::to_string(s.per_thread) + " terms, " + std::to_string(longest) + " chained)");
}

using namespace rmsnorm::cuda;
using namespace rmsnorm::cuda::bwd;
using rmsnorm::cuda::kChunk;
namespace fwd = rmsnorm::cuda::fwd;

// bwd.staged_rows: whole warps within kStagedMaxThreads cover the row in 1, 2 or (16-bit rows) 4
// chunks a thread, the declared chain covers a thread's chunks, and 2 to kStagedMaxStages stages
// fit the opt-in shared memory.
long check_backward_staged(std::size_t elem) {
  long checked = 0;
  const std::int64_t staged_max = elem == 2 ? kStagedMaxDim16 : kStagedMaxDim32;
  for (std::int64_t d = kStagedMinDim; d <= staged_max; ++d) {
    const StagedConfig c = staged_config(d);
    const std::string at = "staged D=" + std::to_string(d) + " elem=" + std::to_string(elem);
    if (c.threads % 32 != 0 || c.threads < 32 || c.threads > kStagedMaxThreads) fail(at + ": threads " + std::to_string(c.threads));
    if (c.chunks != 1 && c.chunks != 2 && !(c.chunks == 4 && elem == 2)) fail(at + ": chunks " + std::to_string(c.chunks));
    if (std::int64_t{c.threads} * c.chunks * kChunk < d) fail(at + ": the row is not covered");
    const rmsnorm::AccumShape s = staged_row_shape(d);
    if (s.per_thread < std::min<std::int64_t>(std::int64_t{c.chunks} * kChunk, d)) fail(at + ": declared chain too short");
    for (const bool residual : {false, true}) {
      const int stages = staged_stages(c, elem, residual);
      const std::size_t smem = stages * staged_stage_bytes(c, elem, residual);
      if (stages < 2 || stages > kStagedMaxStages) fail(at + ": stages " + std::to_string(stages));
      if (smem + kStaticSmem > kOptinPerBlock) fail(at + ": " + std::to_string(smem) + " bytes of shared memory");
      // The dg partial passes through the stages (write_dg_partial's kShared form).
      if (smem < dg_combine_bytes(1, d)) fail(at + ": the stages do not hold the dg partial");
      // Two blocks per SM where the registers allow them (K <= 2) and the stages fit.
      if (c.chunks <= 2 && stages > 2 && 2 * (smem + kStaticSmem + kReservedPerBlock) > kPerSM)
        fail(at + ": more stages than two blocks per SM can hold");
      ++checked;
    }
  }
  return checked;
}

// bwd.staged_streams: one block per SM of ROWS streams.
long check_backward_streams(std::size_t elem) {
  long checked = 0;
  for (std::int64_t d = kStagedMinDim; d <= kStreamsMaxDim; ++d) {
    const StreamsConfig c = streams_config(d);
    const std::string at = "streams D=" + std::to_string(d) + " elem=" + std::to_string(elem);
    if (c.threads % 32 != 0 || c.threads > 256 || (c.rows != 2 && c.rows != 3 && c.rows != 6) ||
        c.block() > (c.chunks == 4 ? kStreamsWideThreads : kStreamsMaxThreads) || (c.rows == 2) != (c.chunks == 4))
      fail(at + ": " + std::to_string(c.rows) + " streams of " + std::to_string(c.threads));
    if (std::int64_t{c.threads} * c.chunks * kChunk < d) fail(at + ": the row is not covered");
    if (streams_row_shape(d).per_thread < std::min<std::int64_t>(std::int64_t{c.chunks} * kChunk, d)) fail(at + ": declared chain too short");
    for (const bool residual : {false, true}) {
      if (!streams_fits(d, elem, residual)) {
        if (elem == 2 || d <= (residual ? kStreamsMaxDim32Add : kStreamsMaxDim32)) fail(at + ": declines rows it should take");
        continue;
      }
      // launch_streams has K = 4 instances for 16-bit rows only: an accepted fp32 row of K = 4
      // would launch nothing (a fuzz finding:
      // corpora/regressions/backward_streams_f32_wide_no_launch.case).
      if (c.chunks == 4 && elem != 2) fail(at + ": accepted, but no kernel instance takes it");
      const int stages = streams_stages(c, elem, residual);
      const std::size_t smem = streams_smem(c, d, elem, residual);
      if (stages < 2 || stages > kStagedMaxStages) fail(at + ": stages " + std::to_string(stages));
      if (smem < static_cast<std::size_t>(stages) * staged_stage_bytes(streams_block(c), elem, residual) ||
          smem < dg_combine_bytes(c.rows, d))
        fail(at + ": shared memory does not hold the stages and the streams' dg partials");
      if (smem + kStreamsStaticSmem > kOptinPerBlock) fail(at + ": " + std::to_string(smem) + " bytes of shared memory");
      ++checked;
    }
  }
  return checked;
}

// bwd.cluster_rows: in both cluster shapes (the wide one where cluster_wide() takes it) the block
// within the shape's bounds holds its slice, and the CTAs' slices cover the row.
long check_backward_cluster(std::size_t elem) {
  long checked = 0;
  const std::int64_t cluster_min = elem == 2 ? kClusterMinDim16 : kClusterMinDim32;
  for (std::int64_t d = cluster_min; d <= kClusterMaxDim; ++d)
    for (const bool residual : {false, true}) {
      const rmsnorm::DType row_type = elem == 2 ? rmsnorm::DType::bf16 : rmsnorm::DType::f32;
      const bool wide = cluster_wide(row_type, d, residual);
      const std::string at = "cluster D=" + std::to_string(d) + " elem=" + std::to_string(elem) + (wide ? " (wide)" : "");
      const ClusterShape cs = cluster_shape_for(row_type, wide);
      const std::int64_t slice = cluster_slice_chunks(d, cs);
      const int threads = cluster_threads(d, cs);
      if (threads % 32 != 0 || threads > cs.max_threads || std::int64_t{threads} * cs.slots < slice)
        fail(at + ": threads " + std::to_string(threads));
      if (slice * cs.ctas * kChunk < d) fail(at + ": the row is not covered");
      // A thread chains at most slots x 8 elements; the declared chain covers it, and the
      // declared tree covers the block's warps and the cluster's CTAs.
      const rmsnorm::AccumShape s = cluster_row_shape(d);
      if (s.per_thread < std::min<std::int64_t>(std::int64_t{cs.slots} * kChunk, d)) fail(at + ": declared chain too short");
      if (s.tree_depth < 5 + rmsnorm::cuda::ceil_log2(threads / 32) + rmsnorm::cuda::ceil_log2(cs.ctas))
        fail(at + ": declared tree too shallow");
      ++checked;
    }
  return checked;
}

// bwd.staged_cluster: bwd.cluster_rows' slices with stages. The instance's launch bounds
// hold the block, the slices cover the row, two stages or more fit the shared memory a CTA
// has at its occupancy (two CTAs per SM for 16-bit rows), and the declared shape covers the
// chain and the trees.
long check_backward_staged_cluster(std::size_t elem) {
  long checked = 0;
  for (std::int64_t d = kStagedClusterMinDim; d <= kClusterMaxDim; ++d)
    for (const bool residual : {false, true}) {
      const rmsnorm::DType row_type = elem == 2 ? rmsnorm::DType::bf16 : rmsnorm::DType::f32;
      const StagedClusterConfig c = staged_cluster_config(row_type, d, residual);
      const std::string at = "staged cluster D=" + std::to_string(d) + " elem=" + std::to_string(elem) + (residual ? " add" : "");
      const int limit = c.shape.max_threads, per_sm = c.shape.min_blocks;  // the kernel's launch bounds
      if (c.threads % 32 != 0 || c.threads > limit || std::int64_t{c.threads} * c.shape.slots < c.slice)
        fail(at + ": threads " + std::to_string(c.threads));
      if (c.slice * c.shape.ctas * kChunk < d || c.slice > (std::int64_t{1} << 13)) fail(at + ": the row is not covered");
      if (c.stages < 2 || c.stages > kStagedMaxStages ||
          c.smem < static_cast<std::size_t>(c.stages) * staged_stage_bytes({c.threads, c.shape.slots}, elem, residual))
        fail(at + ": stages " + std::to_string(c.stages));
      // A CTA's dg partial (its slice's columns) passes through its stages (write_dg_partial).
      if (c.smem < dg_combine_bytes(1, c.slice * kChunk)) fail(at + ": the stages do not hold the slice's dg partial");
      if (c.smem + kStaticSmem > kOptinPerBlock || per_sm * (c.smem + kStaticSmem + kReservedPerBlock) > kPerSM)
        fail(at + ": " + std::to_string(c.smem) + " bytes of shared memory at " + std::to_string(per_sm) + " CTAs per SM");
      const rmsnorm::AccumShape s = cluster_row_shape(d);
      if (s.per_thread < std::min<std::int64_t>(std::int64_t{c.shape.slots} * kChunk, d)) fail(at + ": declared chain too short");
      if (s.tree_depth < 5 + rmsnorm::cuda::ceil_log2(c.threads / 32) + rmsnorm::cuda::ceil_log2(c.shape.ctas))
        fail(at + ": declared tree too shallow");
      ++checked;
    }
  return checked;
}

// bwd.packed_rows: G threads a row (a multiple of 32) x M columns cover D; the block is GR
// groups within the instance's launch bounds; GR and RG are what the declared dg chain
// counts; every width it declares fits 3 stages or more (only fp32 rows with the fused add
// may be declined), at every cap a launch may put on them (few tiles a program), and the
// shared memory holds the stages and the groups' dg sums.
long check_backward_packed(std::size_t elem) {
  long checked = 0;
  const std::int64_t packed_max = elem == 2 ? kPackedMaxDim16 : kPackedMaxDim32;
  for (std::int64_t d = 1; d <= packed_max; ++d) {
    const PackedConfig c = packed_config(d, elem);
    const std::string at = "packed D=" + std::to_string(d) + " elem=" + std::to_string(elem);
    const bool wide = c.per_thread > kPackedPerThread;
    const int bound = wide ? kPackedWideMaxThreads : kPackedMaxThreads;
    if (c.threads % 32 != 0 || c.threads < 32 || c.groups < 1 || c.groups > kPackedMaxGroups || c.block() > bound)
      fail(at + ": " + std::to_string(c.groups) + " groups of " + std::to_string(c.threads) + " threads");
    if (c.per_thread != kPackedPerThread && !(c.per_thread == kPackedPerThreadWide && elem == 2))
      fail(at + ": no instance of " + std::to_string(c.per_thread) + " columns a thread");
    if (c.per_group != 1 && !(c.per_group == kPackedRowsPerGroup && !wide))
      fail(at + ": no instance of " + std::to_string(c.per_group) + " rows a group");
    if (c.threads != packed_config(d, 2).threads || c.per_thread != packed_config(d, 2).per_thread)
      fail(at + ": G or M depends on the element size (the declared row shape takes the 16-bit ones)");
    if (std::int64_t{c.threads} * c.per_thread < d) fail(at + ": the row is not covered");
    check_packed_layout(at, d, c);
    for (const bool residual : {false, true}) {
      if (!packed_fits(d, elem, residual)) {
        fail(at + ": declines rows it should take");
        continue;
      }
      for (const std::int64_t tiles : {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{5}, std::int64_t{1000}}) {
        const int stages = packed_stages(c, d, elem, residual, tiles);
        const std::size_t smem = packed_smem(c, d, elem, residual, stages);
        if (stages < kPackedMinStages || stages > rmsnorm::cuda::kMaxCopyStages) fail(at + ": stages " + std::to_string(stages));
        if (smem < static_cast<std::size_t>(stages) * packed_stage_bytes(c, d, elem, residual) ||
            smem < static_cast<std::size_t>(c.groups) * d * sizeof(float))
          fail(at + ": shared memory does not hold the stages and the dg sums");
        if (smem + kPackedStaticSmem > kOptinPerBlock) fail(at + ": " + std::to_string(smem) + " bytes of shared memory");
        ++checked;
      }
    }
  }
  return checked;
}

// The dg chain bwd.packed_rows declares counts every group count and rows per group
// packed_config() uses (GR in 1-8, RG - 1 at most kPackedRowsPerGroup - 1).
void check_backward_packed_dg_chain() {
  for (std::int64_t d = 1; d <= rmsnorm::cuda::bwd::kPackedMaxDim16; ++d) {
    const PackedConfig c = packed_config(d, 2);
    if (c.groups < 1 || c.groups > 8 || c.per_group < 1 || c.per_group > kPackedRowsPerGroup)
      fail("packed D=" + std::to_string(d) + ": " + std::to_string(c.groups) + " groups of " + std::to_string(c.per_group) +
           " rows, outside the declared dg chain");
  }
}

// fwd.packed_rows: the same tile shapes for x (and o); every width it declares, every type,
// fits 3 stages or more at every cap a launch may put on them, within the opt-in shared memory.
long check_forward_packed() {
  long checked = 0;
  for (const std::size_t elem : {std::size_t{2}, std::size_t{4}})
    for (std::int64_t d = 1; d <= kPackedMaxDim; ++d) {
      const PackedConfig c = rmsnorm::cuda::fwd::packed_fwd_config(d, elem);
      const std::string at = "fwd packed D=" + std::to_string(d) + " elem=" + std::to_string(elem);
      const bool wide = c.per_thread > kPackedPerThread;
      if (c.threads % 32 != 0 || c.groups < 1 || c.groups > kPackedMaxGroups ||
          c.block() > (wide ? kPackedWideMaxThreads : kPackedMaxThreads) || std::int64_t{c.threads} * c.per_thread < d)
        fail(at + ": " + std::to_string(c.groups) + " groups of " + std::to_string(c.threads) + " threads");
      if (c.per_group != 1 && !(c.per_group == kPackedRowsPerGroup && !wide)) fail(at + ": no instance of its rows a group");
      check_packed_layout(at, d, c);
      // FP8 per block of 128: a tile's (row, group) maxima fit the kernel's table, so can_implement
      // never declines a width it declares.
      // Its scale pass gives each entry one thread: the entries never outnumber the block.
      if (rmsnorm::cuda::fwd::packed_quant_entries(d, elem) > rmsnorm::cuda::fwd::kPackedMaxQuantEntries ||
          rmsnorm::cuda::fwd::packed_quant_entries(d, elem) > c.block())
        fail(at + ": " + std::to_string(rmsnorm::cuda::fwd::packed_quant_entries(d, elem)) + " FP8 group maxima a tile");
      for (const bool add : {false, true})
        for (const std::int64_t tiles : {std::int64_t{0}, std::int64_t{1}, std::int64_t{3}, std::int64_t{1000}}) {
          const int stages = rmsnorm::cuda::fwd::packed_fwd_stages(d, elem, add, tiles);
          const std::size_t smem = static_cast<std::size_t>(stages) * rmsnorm::cuda::fwd::packed_fwd_stage_bytes(c, d, elem, add);
          if (stages < kPackedMinStages || stages > kMaxCopyStages) fail(at + ": stages " + std::to_string(stages));
          // The static arrays of the FP8 instance: the sums' two buffers and the amax buffer of
          // kPackedMaxGroups x RG x 32 floats, the group maxima and their reciprocals.
          const std::size_t static_bytes = 3 * kPackedMaxGroups * kPackedRowsPerGroup * 32 * sizeof(float) +
                                            2 * rmsnorm::cuda::fwd::kPackedMaxQuantEntries * sizeof(float);
          if (smem + static_bytes > kOptinPerBlock)
            fail(at + ": " + std::to_string(smem) + " bytes of shared memory");
          // Two blocks an SM (D <= 2560, M = 8): both fit its shared memory and, at the 96
          // registers a thread the 640-thread launch bounds allow, its register file.
          if (c.per_sm < 1 || c.per_sm > 2 || (c.per_sm == 2 && wide) ||
              c.per_sm * (smem + static_bytes + kReservedPerBlock) > kPerSM || c.per_sm * c.block() * 96 > 65536)
            fail(at + ": " + std::to_string(c.per_sm) + " blocks of " + std::to_string(c.block()) + " threads and " +
                 std::to_string(smem) + " bytes an SM");
          ++checked;
        }
    }
  return checked;
}

// fwd.block_row.staged: where two stages fit, every register occupancy gets 2..8 stages within
// the per-block opt-in limit and the SM (static shared memory and the runtime's reserve too).
void check_forward_block_row_staged(std::int64_t d, const std::string& at) {
  for (const std::size_t elem : {std::size_t{2}, std::size_t{4}})
    for (const bool add : {false, true}) {
      if (!fwd::staged_fits(d, elem, add)) {
        if (elem == 2 || !add || d <= 10240) fail("staged_rows " + at + ": declines a row it should take");
        continue;
      }
      const std::size_t stage = fwd::staged_stage_bytes(d, elem, add);
      if (stage < static_cast<std::size_t>(d) * elem) fail("staged_rows " + at + ": a stage does not hold the row");
      for (int reg_blocks = 1; reg_blocks <= 32; ++reg_blocks) {
        const fwd::StagedLaunch l = fwd::staged_launch_shape(reg_blocks, stage);
        const std::string where = "staged_rows " + at + " elem=" + std::to_string(elem) + " add=" + std::to_string(add) +
                                  " reg_blocks=" + std::to_string(reg_blocks);
        if (l.stages < 2 || l.stages > rmsnorm::cuda::kMaxCopyStages) fail(where + ": stages " + std::to_string(l.stages));
        if (l.blocks_per_sm < 1 || l.blocks_per_sm > reg_blocks) fail(where + ": blocks " + std::to_string(l.blocks_per_sm));
        if (l.smem != static_cast<std::size_t>(l.stages) * stage || l.smem + kStaticSmem > kOptinPerBlock ||
            static_cast<std::size_t>(l.blocks_per_sm) * (l.smem + kStaticSmem + kReservedPerBlock) > kPerSM)
          fail(where + ": shared memory " + std::to_string(l.smem));
      }
    }
}

// Forward: the register paths cover the row with their lanes × chunks, within their block
// sizes (FP8 forms at most 256 threads up to D = 8192), and declare a chain no longer than a
// thread's chunks and no shorter than its share of the row.
long check_forward_registers() {
  long checked = 0;
  auto check_chunked = [&](const std::string& at, std::int64_t d, int lanes, int iters, auto shape_of) {
    if (std::int64_t{lanes} * iters * kChunk < d) fail(at + ": the row is not covered");
    const rmsnorm::AccumShape s = shape_of(d);
    if (s.per_thread > std::int64_t{iters} * kChunk || s.per_thread * lanes < d) fail(at + ": declared chain " + std::to_string(s.per_thread));
  };
  for (std::int64_t d = 1; d <= 16384; ++d) {
    const std::string at = "D=" + std::to_string(d);
    if (d <= 1024) {
      const fwd::RegsConfig w = fwd::warp_row_config(d);
      if (w.lanes < 1 || w.lanes > 32 || (w.lanes & (w.lanes - 1)) != 0 || w.iters > fwd::kBlockRowIters) fail("warp_row " + at);
      check_chunked("warp_row " + at, d, w.lanes, w.iters, fwd::fwd_warp_row::shape);
    }
    const fwd::RegsConfig b = fwd::block_row_config(d);
    if (b.lanes % 32 != 0 || b.lanes > 512 || (d <= 8192 && b.lanes > 256)) fail("block_row " + at + ": lanes " + std::to_string(b.lanes));
    check_chunked("block_row " + at, d, b.lanes, b.iters, fwd::fwd_block_row::shape);
    // FP8 outputs of 16-bit rows: past 8192 (and only there) the launcher takes the lean-y kernel
    // (lanes over the 256-thread FP8 blocks), whose launch bounds are kLeanYThreads.
    if ((d > fwd::kBlockRowHeldYMaxDim) != (b.lanes > 256) || b.lanes > fwd::kLeanYThreads)
      fail("block_row lean-y " + at + ": lanes " + std::to_string(b.lanes));
    if (d <= fwd::kElementRowMaxDim) {
      const int e = fwd::element_threads(d);
      if (e % 32 != 0 || e > fwd::kElementMaxThreads || std::int64_t{e} * fwd::kElementSlots < d) fail("element_row " + at);
      if (fwd::fwd_element_row::shape(d).per_thread * e < d) fail("element_row " + at + ": declared chain");
    }
    check_forward_block_row_staged(d, at);
    ++checked;
  }
  return checked;
}

// fwd.large_d (one block per SM) and fwd.large_d.pair (two): the h cache and the FP8 y stash
// stay within the block's budget, so every block count the launch asks for fits the SM; the
// stash is taken only with the whole row's h cached and its planes (2 float4 a chunk) inside the
// launch's bytes, and whenever it fits; and it fits where docs/launch-forms.md says it does (the
// kStash row: 16-bit D <= 16384 on the pair, <= 32768 on large_d; fp32 to 12288 / 24576).
long check_forward_large_d() {
  long checked = 0;
  for (const int blocks : {1, fwd::kSmemPairBlocksPerSM}) {
    const std::int64_t budget = fwd::smem_cache_budget_of(kOptinPerBlock, kPerSM, blocks);
    for (const std::int64_t chunk_bytes : {std::int64_t{16}, std::int64_t{32}}) {
      for (std::int64_t d = 1; d <= 70000; ++d) {
        const std::int64_t n = (d + kChunk - 1) / kChunk;
        for (const bool wanted : {false, true}) {
          const fwd::LargeDSmem m = fwd::large_d_smem(n, chunk_bytes, budget, wanted);
          const std::string at = "large_d blocks=" + std::to_string(blocks) + " chunk=" + std::to_string(chunk_bytes) +
                                 " D=" + std::to_string(d) + " stash_wanted=" + std::to_string(wanted);
          const std::int64_t with_stash = n * (chunk_bytes + fwd::kStashBytesPerChunk);
          if (m.cache_chunks != std::min<std::int64_t>(n, budget / chunk_bytes)) fail(at + ": cache chunks");
          if (static_cast<std::int64_t>(m.bytes) > budget || m.bytes + 2 * 32 * sizeof(float) > kOptinPerBlock ||
              static_cast<std::size_t>(blocks) * (m.bytes + 2 * 32 * sizeof(float) + kReservedPerBlock) > kPerSM)
            fail(at + ": shared memory " + std::to_string(m.bytes));
          if (m.stash && (!wanted || m.cache_chunks != n || static_cast<std::int64_t>(m.bytes) != with_stash))
            fail(at + ": a stash without the whole row or its room");
          if (!m.stash && wanted && m.cache_chunks == n && with_stash <= budget) fail(at + ": a stash that fits, not taken");
          if (!m.stash && static_cast<std::int64_t>(m.bytes) != m.cache_chunks * chunk_bytes) fail(at + ": cache bytes");
          ++checked;
        }
      }
      const std::int64_t claimed = chunk_bytes == 16 ? (blocks == 1 ? 32768 : 16384) : (blocks == 1 ? 24576 : 12288);
      if (!fwd::large_d_smem(claimed / kChunk, chunk_bytes, budget, true).stash)
        fail("large_d blocks=" + std::to_string(blocks) + " chunk=" + std::to_string(chunk_bytes) + ": no stash at D = " +
             std::to_string(claimed));
    }
  }
  return checked;
}

// fwd.bulk_ring: a whole row in the x ring (pieces <= x slots, every chunk in one of its pieces),
// the fused add with at least one o slot, the ring within the budget and the slot cap, the
// static shared memory (the slots' mbarriers) beside it within the block's opt-in limit; and the
// declared widths (kRingMaxDim16 / kRingMaxDim32, the fused add one slot less) fit; and the
// geometry with the weights staged (below).
long check_forward_bulk_ring() {
  long checked = 0;
  const std::int64_t budget = fwd::smem_cache_budget_of(kOptinPerBlock, kPerSM, 1);
  for (const std::int64_t chunk_bytes : {std::int64_t{16}, std::int64_t{32}}) {
    const std::int64_t declared = chunk_bytes == 16 ? fwd::kRingMaxDim16 : fwd::kRingMaxDim32;
    // The fused add's: one slot less (fp32: the variant's kF32AddDimMax, what draws aim at).
    const std::int64_t declared_add =
        chunk_bytes == 16 ? fwd::kRingMaxDim16 - fwd::kRingSlotChunks * kChunk : fwd::fwd_bulk_ring::kF32AddDimMax;
    for (std::int64_t d = 1; d <= 120000; ++d) {
      for (const bool add : {false, true}) {
        const fwd::RingSmem m = fwd::bulk_ring_smem(d, chunk_bytes, add, budget);
        const std::string at = "bulk_ring chunk=" + std::to_string(chunk_bytes) + " D=" + std::to_string(d) +
                               " add=" + std::to_string(add);
        const std::int64_t slot = std::int64_t{fwd::kRingSlotChunks} * chunk_bytes;
        const std::int64_t n = (d + kChunk - 1) / kChunk;
        const fwd::Ring& r = m.ring;
        const bool should_fit = d <= (add ? declared_add : declared);
        if (r.pieces == 0) {
          if (should_fit) fail(at + ": a declared width does not fit");
          ++checked;
          continue;
        }
        if (std::int64_t{r.pieces} * fwd::kRingSlotChunks < n || std::int64_t{r.pieces - 1} * fwd::kRingSlotChunks >= n)
          fail(at + ": pieces " + std::to_string(r.pieces));
        if (r.x_slots < r.pieces) fail(at + ": the row exceeds the x ring");
        if ((r.o_slots >= 1) != add) fail(at + ": o slots " + std::to_string(r.o_slots));
        if (r.x_slots + r.o_slots > fwd::kRingMaxSlots) fail(at + ": more slots than mbarriers");
        if (r.weights) fail(at + ": weights staged unasked");
        if (static_cast<std::int64_t>(m.bytes) != (r.x_slots + r.o_slots) * slot || static_cast<std::int64_t>(m.bytes) > budget ||
            m.bytes + fwd::kRingStaticSmem > kOptinPerBlock || m.bytes + fwd::kRingStaticSmem + kReservedPerBlock > kPerSM)
          fail(at + ": shared memory " + std::to_string(m.bytes));
        ++checked;
        // Staged weights (the plain forward of 16-bit rows held, 16-bit weights): the weights
        // of P pieces in front of at least kRingStagedMinSlots x slots, all within the same
        // limits; the fused add never, and where they do not fit (or the row is not held) the
        // geometry above, unchanged.
        if (chunk_bytes != 16) continue;
        const fwd::RingSmem w = fwd::bulk_ring_smem(d, chunk_bytes, add, budget, 16);
        const fwd::Ring& q = w.ring;
        if (!q.weights) {
          if (q.pieces != r.pieces || q.x_slots != r.x_slots || q.o_slots != r.o_slots || w.bytes != m.bytes)
            fail(at + ": weights not staged, yet another geometry");
          if (!add && r.pieces <= fwd::kRingHeldPieces && budget - r.pieces * slot >= fwd::kRingStagedMinSlots * slot)
            fail(at + ": staged weights that fit, not taken");
        } else {
          if (add || q.pieces != r.pieces || q.pieces > fwd::kRingHeldPieces) fail(at + ": weights staged where not asked");
          if (q.x_slots < fwd::kRingStagedMinSlots || q.o_slots != 0)
            fail(at + ": staged ring x " + std::to_string(q.x_slots) + " o " + std::to_string(q.o_slots));
          if (q.x_slots > fwd::kRingMaxSlots) fail(at + ": staged: more slots than mbarriers");
          const std::int64_t bytes = std::int64_t{q.pieces} * slot + std::int64_t{q.x_slots} * slot;
          if (static_cast<std::int64_t>(w.bytes) != bytes || bytes > budget || w.bytes + fwd::kRingStaticSmem > kOptinPerBlock ||
              w.bytes + fwd::kRingStaticSmem + kReservedPerBlock > kPerSM)
            fail(at + ": staged shared memory " + std::to_string(w.bytes));
        }
        ++checked;
      }
    }
  }
  return checked;
}

// fwd.shifted_row: every D it takes; the groups of `lanes` threads (whole warps, at most the
// block) hold every chunk a row can span at any lead, the table fits without opting in past
// 48 KB, and the declared chain is the longest one counted element by element (column e of a
// row is summed in column chunk e / 8 on thread chunk % lanes, at every lead).
long check_forward_shifted_row() {
  long checked = 0;
  for (std::int64_t d = 1; d <= fwd::kShiftedMaxDim; ++d) {
    const fwd::ShiftedConfig c = fwd::shifted_config(d);
    const std::string at = "fwd shifted D=" + std::to_string(d);
    if (c.lanes % 32 != 0 || c.lanes < 32 || c.block() > fwd::kShiftedBlockThreads || c.groups < 1 ||
        (c.iters != 4 && c.iters != 5))
      fail(at + ": lanes " + std::to_string(c.lanes) + " groups " + std::to_string(c.groups) + " iters " + std::to_string(c.iters));
    if (std::int64_t{c.lanes} * c.iters < fwd::shifted_chunks(d) || fwd::shifted_chunks(d) < (d + 7 + kChunk - 1) / kChunk)
      fail(at + ": " + std::to_string(c.lanes) + " x " + std::to_string(c.iters) + " chunks do not cover a row at lead 7");
    if (fwd::shifted_table_bytes(d, 4) > 48 * 1024) fail(at + ": table of " + std::to_string(fwd::shifted_table_bytes(d, 4)) + " bytes");
    if (d % 97 == 1 || d > fwd::kShiftedMaxDim - 16) {  // the count is O(D): a sample of widths
      std::int64_t longest = 0;
      std::vector<std::int64_t> per_thread(static_cast<std::size_t>(c.lanes), 0);
      for (std::int64_t e = 0; e < d; ++e) ++per_thread[static_cast<std::size_t>(e / kChunk % c.lanes)];
      for (const std::int64_t n : per_thread) longest = std::max(longest, n);
      const rmsnorm::AccumShape s = fwd::fwd_shifted_row::shape(d);
      if (s.per_thread != longest || s.tree_depth != 5 + rmsnorm::cuda::ceil_log2(c.lanes / 32))
        fail(at + ": declared chain " + std::to_string(s.per_thread) + " against " + std::to_string(longest));
    }
    ++checked;
  }
  return checked;
}

// The leads' period in rows: 16 bytes over gcd(16, the stride's bytes mod 16).
void check_forward_shifted_period() {
  struct Period {
    std::int64_t stride;
    std::size_t elem;
    int period;
  };
  for (const Period k : {Period{1025, 2, 8}, Period{1026, 2, 4}, Period{1028, 2, 2}, Period{1032, 2, 1}, Period{1025, 4, 4},
                         Period{1026, 4, 2}, Period{1028, 4, 1}, Period{7, 2, 8}, Period{0, 2, 1}})
    if (fwd::shifted_period(k.stride, k.elem) != k.period)
      fail("fwd shifted period of stride " + std::to_string(k.stride) + " x " + std::to_string(k.elem) + " bytes: " +
           std::to_string(fwd::shifted_period(k.stride, k.elem)) + ", not " + std::to_string(k.period));
}

}  // namespace

// Forward: the few-row form (weights loaded with x) of fwd.block_row and fwd.warp_row serves up to
// 128 rows at any width, and to 512 rows of fewer than 2^22 elements (docs/launch-forms.md): the
// rule at its edges.
long check_forward_few_rows() {
  struct Edge {
    std::int64_t rows, dim;
    bool few;
  };
  const Edge edges[] = {{1, 65536, true},   {128, 1 << 20, true},  {129, 16384, true}, {256, 16383, true},
                        {256, 16384, false}, {384, 8192, true},     {512, 8191, true},  {512, 8192, false},
                        {513, 128, false},   {129, 32768, false}};
  long checked = 0;
  for (const Edge& e : edges) {
    if (fwd::few_rows_form(e.rows, e.dim) != e.few)
      fail("few_rows_form(" + std::to_string(e.rows) + ", " + std::to_string(e.dim) + ") is not " + (e.few ? "true" : "false"));
    ++checked;
  }
  return checked;
}

int main() {
  long checked = 0;
  for (const std::size_t elem : {std::size_t{2}, std::size_t{4}}) {
    checked += check_backward_staged(elem);
    checked += check_backward_streams(elem);
    checked += check_backward_cluster(elem);
    checked += check_backward_staged_cluster(elem);
    checked += check_backward_packed(elem);
  }
  check_backward_packed_dg_chain();
  checked += check_forward_packed();
  checked += check_forward_registers();
  checked += check_forward_few_rows();
  checked += check_forward_large_d();
  checked += check_forward_bulk_ring();
  checked += check_forward_shifted_row();
  check_forward_shifted_period();
  std::printf("%s: %ld configurations checked, %d violations\n", failures ? "FAIL" : "ok", checked, failures);
  return failures ? 1 : 0;
}
