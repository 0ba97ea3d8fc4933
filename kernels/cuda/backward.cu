// The CUDA backward family (docs/contract.md#semantics, the backward): products. Kernels in
// backward_kernels.cuh, host side in backward_launch.cuh; every variant's mutants (the same
// launchers with a Mutant other than none) are in the verification tools' library
// (kernels/mutants). Where several implement the arguments, the dispatch table
// (kernels/common/dispatch_table.cpp) decides.
//
//   bwd.staged_streams   P = SMs programs of 2-6 row streams each, aligned rows of
//                             512 < D ≤ 8192 (fp32 ≤ 4096). Two kernels with the same arithmetic: backward_streams_lean_kernel for 16-bit
//                             rows except the plain backward of > 8192 rows wider than 1024
//                             (streams_lean_preferred), backward_staged_kernel otherwise.
//   bwd.staged_cluster   aligned rows of 512 < D ≤ 65536: bwd.cluster_rows' slices, each
//                             CTA's next rows staged in its shared memory by cp.async
//                             (backward_staged_cluster_kernel, backward_cluster.cuh).
//   bwd.staged_rows      P = 2·SMs programs, aligned rows of 512 < D ≤ 16384 (fp32 ≤ 8192):
//                             the next rows copied into shared-memory stages by cp.async while
//                             the current one is reduced and written (backward_staged.cuh).
//   bwd.cluster_rows     aligned rows of 16384 < D ≤ 65536 (fp32: 8192 < D): one row over an
//                             8-CTA thread-block cluster (4 for the 16-bit fused add over 49152),
//                             each CTA a column slice in registers,
//                             the row sum exchanged through distributed shared memory
//                             (backward_cluster.cuh).
//   bwd.packed_rows      packed rows (stride = D) of any alignment, D ≤ 8192 (fp32 ≤ 4096):
//                             a tile of consecutive rows copied as one span of 16-byte cp.async
//                             vectors into shared memory, dx back the same way
//                             (backward_packed.cuh).
//   bwd.persistent_rows  P = 2·SMs persistent programs; a row stays in registers between its
//                             reduction and its dx pass (D ≤ 8192, 16-bit rows to 16384; a warp
//                             per row up to D = 512), larger D falls back to the re-reading kernel. 16-byte accesses
//                             when every view is aligned, element accesses otherwise.
//   bwd.reread_rows      the re-reading kernel for every D: one block per row at a time, x
//                             and dy read twice (the second time mostly from L2), dg partials
//                             accumulated in the workspace. Any D up to 2^24.
// All: dg in two deterministic stages, workspace = min(P, R)·D fp32 (Variant::workspace_bytes).
#include "backward_cluster.cuh"
#include "backward_packed.cuh"
#include "backward_staged.cuh"
#include "registration.h"

namespace rmsnorm::cuda {
namespace bwd {

namespace {

constexpr std::uint32_t kBackwardOps = (1u << static_cast<int>(Op::backward)) | (1u << static_cast<int>(Op::add_backward));

// Every product's run(): its can_implement() first (nothing launches on invalid input), R = 0
// writes dg = 0 when asked, then its stage 1 and stage 2.
template <Status (*Can)(const BackwardArgs&), Status (*Launch)(const BackwardArgs&)>
Status run_checked(const BackwardArgs& a) {
  Status s = Can(a);
  if (!s.ok()) return s;
  if (a.rows == 0) return empty_batch(a);
  return Launch(a);
}

Status product_can(const BackwardArgs& a) { return can_implement(a, /*mutant=*/false); }
Status persistent_launch(const BackwardArgs& a) { return launch<Mutant::none>(a, true); }
Status reread_launch(const BackwardArgs& a) { return launch<Mutant::none>(a, false); }
AccumShape persistent_row_shape(std::int64_t dim) { return row_shape_for(dim, true); }
AccumShape persistent_dg_shape(std::int64_t rows) { return dg_shape_of(rows, {kMultiRowsWide, kMultiRows}); }
AccumShape reread_row_shape(std::int64_t dim) { return row_shape_of(reread_config(), dim); }
AccumShape single_stream_dg_shape(std::int64_t rows) { return dg_shape_of(rows, {}); }
AccumShape streams_dg_shape(std::int64_t rows) { return dg_shape_of(rows, {2, 3, 6}, /*programs_per_sm=*/1); }

}  // namespace
}  // namespace bwd

void register_backward_variants(std::vector<Variant>& out) {
  auto add = [&](const char* name, const char* description, Status (*can)(const BackwardArgs&),
                 Status (*run)(const BackwardArgs&), AccumShape (*row_shape)(std::int64_t),
                 AccumShape (*dg_shape)(std::int64_t), std::int64_t min_dim, std::int64_t max_dim, bool aligned,
                 std::int64_t f32_min_dim = 0, std::int64_t f32_max_dim = 0) {
    Variant v;
    v.min_dim = min_dim;
    v.max_dim = max_dim;
    v.f32_min_dim = f32_min_dim;
    v.f32_max_dim = f32_max_dim;
    v.aligned_rows = aligned;
    v.memory = Memory::device;
    v.ops = bwd::kBackwardOps;
    v.workspace_bytes = bwd::workspace_bytes;
    v.name = name;
    v.aliases = {std::string(name) + ".vec8"};  // the family's names before they lost the suffix
    v.description = description;
    v.can_implement_backward = can;
    v.run_backward = run;
    v.row_shape = row_shape;
    v.dg_shape = dg_shape;
    out.push_back(v);
  };
  using namespace bwd;
  // The dispatcher considers them in this order; the dispatch table (dispatch_table.cpp) says
  // which it takes where. The first it takes that can implement the arguments runs.
  add("bwd.staged_streams",
      "one program per SM, 3-6 row streams each, next rows staged by cp.async, 2-4 chunks per thread from D = 2048, lean addressing for 16-bit rows but the plain backward of > 8192 rows wider than 1024 (aligned, 512<D<=8192, fp32 to 4096, to 2040 with the fused add)",
      streams_can_implement, run_checked<streams_can_implement, streams_launch<Mutant::none>>, streams_row_shape, streams_dg_shape,
      kStagedMinDim, kStreamsMaxDim, true, kStagedMinDim, kStreamsMaxDim32);
  out.back().f32_add_max_dim = kStreamsMaxDim32Add;
  add("bwd.staged_cluster",
      "one row over an 8-CTA cluster, each CTA a column slice with the next rows staged in its shared memory by cp.async, row sum through DSMEM (aligned, 512<D<=65536)",
      staged_cluster_can_implement, run_checked<staged_cluster_can_implement, staged_cluster_launch<Mutant::none>>, cluster_row_shape,
      staged_cluster_dg_shape, kStagedClusterMinDim, kClusterMaxDim, true, kStagedClusterMinDim, kClusterMaxDim);
  add("bwd.staged_rows",
      "persistent programs, next rows staged in shared memory by cp.async (aligned, 512<D<=16384)",
      staged_can_implement, run_checked<staged_can_implement, staged_launch<Mutant::none>>, staged_row_shape, staged_dg_shape,
      kStagedMinDim, kStagedMaxDim16, true, kStagedMinDim, kStagedMaxDim32);
  add("bwd.cluster_rows",
      "one row over an 8-CTA cluster (4 for the 16-bit fused add over 49152), slices in registers, row sum through DSMEM (aligned, 16384<D<=65536; fp32 from 8193)",
      cluster_can_implement, run_checked<cluster_can_implement, cluster_launch<Mutant::none>>, cluster_row_shape, cluster_dg_shape,
      kClusterMinDim16, kClusterMaxDim, true, kClusterMinDim32, kClusterMaxDim);
  add("bwd.packed_rows",
      "one program per SM, tiles of packed rows copied as 16-byte vectors into shared-memory stages, two rows per group of threads, any alignment (stride = D, D<=8192, fp32 to 4096)",
      packed_can_implement, run_checked<packed_can_implement, packed_launch<Mutant::none>>, packed_row_shape, packed_dg_shape, 1,
      kPackedMaxDim16, false, 1, kPackedMaxDim32);
  out.back().packed_rows = true;
  add("bwd.persistent_rows",
      "persistent programs, row in registers (D<=8192, 16-bit to 16384; warp per row to 512), two-stage dg",
      product_can, run_checked<product_can, persistent_launch>, persistent_row_shape, persistent_dg_shape, 1, kMaxDim,
      false);
  add("bwd.reread_rows", "one block per row, x and dy read twice, any D, two-stage dg", product_can,
      run_checked<product_can, reread_launch>, reread_row_shape, single_stream_dg_shape, 1, kMaxDim, false);
}

}  // namespace rmsnorm::cuda
