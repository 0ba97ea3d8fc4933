// host.reference's mutants: every switch of the catalog that has a host analogue.
#include <string>

#include "mutant_registration.h"
#include "reference_impl.h"

namespace rmsnorm {
namespace {
template <Mutant M>
void add(std::vector<Variant>& out) {
  out.push_back(host_reference::make<M>(std::string(kMutantPrefix) + "host.reference." + to_string(M), mutant_description(M)));
}
}  // namespace

void register_host_mutants(std::vector<Variant>& out) {
  add<Mutant::M1_padded_divisor>(out);
  add<Mutant::M2_eps_outside_root>(out);
  add<Mutant::M3_low_precision_sum>(out);
  add<Mutant::M4_bwd_sum_not_mean>(out);
  add<Mutant::M5_bwd_no_reduction>(out);
  add<Mutant::M6_zero_row_shortcut>(out);
  add<Mutant::M7_square_before_upcast>(out);
  add<Mutant::M8_stride_ignored>(out);
  add<Mutant::M9_tail_overread>(out);
  add<Mutant::M10_dg_float_atomics>(out);
  // M11 (32-bit offsets) needs R·stride >= 2^31 elements: a device-only mutant (P18 on the GPU).
  add<Mutant::M12_scale_no_floor>(out);
  add<Mutant::M13_fp8_via_bf16>(out);
  add<Mutant::M14_fp8_no_saturation>(out);
  add<Mutant::M15_llama_double_round>(out);
  add<Mutant::M16_order_depends_on_rows>(out);
  add<Mutant::M17_add_unrounded_sum>(out);
  // M18 (missing barrier) and M19 (misaligned pointer on the vector path) have no host analogue:
  // the host has neither barriers nor an alignment-dependent path. Device-only mutants.
  add<Mutant::M20_weight_by_row>(out);
}

}  // namespace rmsnorm
