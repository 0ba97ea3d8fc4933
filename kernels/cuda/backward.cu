// The CUDA backward family (SPEC §3 "Backward"): products. Kernels in backward_kernels.cuh, host
// side in backward_launch.cuh, the mutants of the first product in backward_mutants.cu.
//
//   bwd.staged_rows.vec8      P = 2·SMs programs, aligned rows of 512 < D ≤ 16384 (fp32 ≤ 8192):
//                             the next rows copied into shared-memory stages by cp.async while
//                             the current one is reduced and written (backward_staged.cuh).
//   bwd.cluster_rows.vec8     aligned rows of 16384 < D ≤ 65536 (fp32: 8192 < D): one row over an
//                             8-CTA thread-block cluster, each CTA a column slice in registers,
//                             the row sum exchanged through distributed shared memory
//                             (backward_cluster.cuh).
//   bwd.persistent_rows.vec8  P = 2·SMs persistent programs; a row stays in registers between its
//                             reduction and its dx pass (D ≤ 8192; a warp per row up to D = 512),
//                             larger D falls back to the re-reading kernel. 16-byte accesses
//                             when every view is aligned, element accesses otherwise.
//   bwd.reread_rows.vec8      the re-reading kernel for every D: one block per row at a time, x
//                             and dy read twice (the second time mostly from L2), dg partials
//                             accumulated in the workspace. Any D up to 2^24.
// Both: dg in two deterministic stages, workspace = min(P, R)·D fp32 (Variant::workspace_bytes).
#include "backward_cluster.cuh"
#include "backward_staged.cuh"
#include "registration.h"

namespace rmsnorm::cuda {
namespace bwd {

// Registers the product variants; the mutants live in backward_mutants.cu.
void register_backward_mutants(std::vector<Variant>& out);

namespace {

constexpr std::uint32_t kBackwardOps = (1u << static_cast<int>(Op::backward)) | (1u << static_cast<int>(Op::add_backward));

Status staged_run(const BackwardArgs& a) {
  Status s = staged_can_implement(a);
  if (!s.ok()) return s;
  if (a.rows == 0) return empty_batch(a);
  return staged_launch(a);
}
AccumShape staged_dg_shape(std::int64_t rows) { return dg_shape_of(rows, /*fused=*/false); }

Status cluster_run(const BackwardArgs& a) {
  Status s = cluster_can_implement(a);
  if (!s.ok()) return s;
  if (a.rows == 0) return empty_batch(a);
  return cluster_launch(a);
}

Status persistent_can(const BackwardArgs& a) { return can_implement(a, /*mutant=*/false); }
Status persistent_run(const BackwardArgs& a) {
  Status s = persistent_can(a);
  if (!s.ok()) return s;
  if (a.rows == 0) return empty_batch(a);
  return launch<Mutant::none>(a, true);
}
AccumShape persistent_row_shape(std::int64_t dim) { return row_shape_for(dim, true); }
AccumShape persistent_dg_shape(std::int64_t rows) { return dg_shape_of(rows, /*fused=*/true); }

Status reread_can(const BackwardArgs& a) { return can_implement(a, /*mutant=*/false); }
Status reread_run(const BackwardArgs& a) {
  Status s = reread_can(a);
  if (!s.ok()) return s;
  if (a.rows == 0) return empty_batch(a);
  return launch<Mutant::none>(a, false);
}
AccumShape reread_row_shape(std::int64_t dim) { return row_shape_of(reread_config(), dim); }
AccumShape reread_dg_shape(std::int64_t rows) { return dg_shape_of(rows, /*fused=*/false); }

}  // namespace
}  // namespace bwd

void register_backward_variants(std::vector<Variant>& out) {
  Variant v;
  v.memory = Memory::device;
  v.ops = bwd::kBackwardOps;
  v.workspace_bytes = bwd::workspace_bytes;

  v.name = "bwd.staged_rows.vec8";
  v.description = "persistent programs, next rows staged in shared memory by cp.async (aligned, 512<D<=16384)";
  v.can_implement_backward = bwd::staged_can_implement;
  v.run_backward = bwd::staged_run;
  v.row_shape = bwd::staged_row_shape;
  v.dg_shape = bwd::staged_dg_shape;
  out.push_back(v);

  v.name = "bwd.cluster_rows.vec8";
  v.description = "one row over an 8-CTA cluster, slices in registers, row sum through DSMEM (aligned, 16384<D<=65536)";
  v.can_implement_backward = bwd::cluster_can_implement;
  v.run_backward = bwd::cluster_run;
  v.row_shape = bwd::cluster_row_shape;
  v.dg_shape = bwd::cluster_dg_shape;
  out.push_back(v);

  v.name = "bwd.persistent_rows.vec8";
  v.description = "persistent programs, row in registers (D<=8192, 16-bit to 16384; warp per row to 512), two-stage dg";
  v.can_implement_backward = bwd::persistent_can;
  v.run_backward = bwd::persistent_run;
  v.row_shape = bwd::persistent_row_shape;
  v.dg_shape = bwd::persistent_dg_shape;
  out.push_back(v);

  v.name = "bwd.reread_rows.vec8";
  v.description = "one block per row, x and dy read twice, any D, two-stage dg";
  v.can_implement_backward = bwd::reread_can;
  v.run_backward = bwd::reread_run;
  v.row_shape = bwd::reread_row_shape;
  v.dg_shape = bwd::reread_dg_shape;
  out.push_back(v);

  bwd::register_backward_mutants(out);
}

}  // namespace rmsnorm::cuda
