// The bug catalog (docs/mutants.md) on the backward product bwd.persistent_rows.vec8: the same
// kernels with one template switch flipped. Each runs only the 16-byte aligned, register-resident
// path (D ≤ 8192), which is where its switch sits.
//   M4  c = Σ ĝ x̂ (the sum, not the mean)        M5  dx = r ĝ (reduction term dropped)
//   M6  rows with x = 0 short-cut to dx = 0        M8  every row stride taken as D
//   M10 dg by float atomicAdd, row by row         M11 row offsets in 32-bit arithmetic
//   M16 the row sum's order flips with R's parity  M20 g[row mod D] broadcast over the row
#include <string>

#include "backward_launch.cuh"
#include "mutant_registration.h"

namespace rmsnorm::cuda::bwd {
namespace {

template <Mutant M>
Status mutant_can(const BackwardArgs& a) {
  return can_implement(a, /*mutant=*/true);
}
template <Mutant M>
Status mutant_run(const BackwardArgs& a) {
  Status s = mutant_can<M>(a);
  if (!s.ok()) return s;
  if (a.rows == 0) return empty_batch(a);
  return launch<M>(a, true);
}
AccumShape mutant_row_shape(std::int64_t dim) { return row_shape_for(dim, true); }
AccumShape mutant_dg_shape(std::int64_t rows) { return dg_shape_of(rows, {kMultiRowsWide, kMultiRows}); }

template <Mutant M>
void add_mutant(std::vector<Variant>& out) {
  Variant v;
  v.name = std::string(kMutantPrefix) + "bwd.persistent_rows.vec8." + to_string(M);
  v.max_dim = kMaxFusedDim;  // the mutants run the register-resident, aligned path only
  v.aligned_rows = true;
  v.description = mutant_description(M);
  v.memory = Memory::device;
  v.mutant = M;
  v.ops = (1u << static_cast<int>(Op::backward)) | (1u << static_cast<int>(Op::add_backward));
  v.can_implement_backward = mutant_can<M>;
  v.run_backward = mutant_run<M>;
  v.workspace_bytes = workspace_bytes;
  v.row_shape = mutant_row_shape;
  v.dg_shape = mutant_dg_shape;
  out.push_back(v);
}

}  // namespace

void register_backward_mutants(std::vector<Variant>& out) {
  add_mutant<Mutant::M4_bwd_sum_not_mean>(out);
  add_mutant<Mutant::M5_bwd_no_reduction>(out);
  add_mutant<Mutant::M6_zero_row_shortcut>(out);
  add_mutant<Mutant::M8_stride_ignored>(out);
  add_mutant<Mutant::M10_dg_float_atomics>(out);
  add_mutant<Mutant::M11_offsets_32bit>(out);
  add_mutant<Mutant::M16_order_depends_on_rows>(out);
  add_mutant<Mutant::M20_weight_by_row>(out);
}

}  // namespace rmsnorm::cuda::bwd
