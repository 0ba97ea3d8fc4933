// Names of the enums: what reports print and what case files and the command line parse.
#include <string>

#include "rmsnorm/types.h"
#include "rmsnorm/variant.h"

namespace rmsnorm {
namespace {
template <typename E, std::size_t N>
bool parse_by_name(const std::string& s, E& out, const E (&all)[N]) {
  for (E e : all)
    if (s == to_string(e)) { out = e; return true; }
  return false;
}
}  // namespace

const char* to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::e4m3: return "e4m3";
    case DType::e5m2: return "e5m2";
  }
  return "?";
}
const char* to_string(Convention c) {
  switch (c) {
    case Convention::standard: return "standard";
    case Convention::llama: return "llama";
    case Convention::gemma: return "gemma";
    case Convention::no_weight: return "no_weight";
  }
  return "?";
}
const char* to_string(Quant q) {
  switch (q) {
    case Quant::none: return "none";
    case Quant::static_scale: return "static";
    case Quant::dynamic_token: return "dynamic_token";
    case Quant::per_block: return "per_block";
  }
  return "?";
}
const char* to_string(Op op) {
  switch (op) {
    case Op::forward: return "forward";
    case Op::add_forward: return "add_forward";
    case Op::forward_quant: return "forward_quant";
    case Op::add_forward_quant: return "add_forward_quant";
    case Op::backward: return "backward";
    case Op::add_backward: return "add_backward";
  }
  return "?";
}
const char* to_string(Status::Code c) {
  switch (c) {
    case Status::Code::ok: return "ok";
    case Status::Code::invalid_argument: return "invalid_argument";
    case Status::Code::unsupported: return "unsupported";
    case Status::Code::misaligned: return "misaligned";
    case Status::Code::bad_overlap: return "bad_overlap";
    case Status::Code::workspace_too_small: return "workspace_too_small";
    case Status::Code::no_device: return "no_device";
    case Status::Code::launch_failed: return "launch_failed";
  }
  return "?";
}

bool parse(const std::string& s, DType& out) {
  static const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::e4m3, DType::e5m2};
  return parse_by_name(s, out, all);
}
bool parse(const std::string& s, Convention& out) {
  static const Convention all[] = {Convention::standard, Convention::llama, Convention::gemma, Convention::no_weight};
  return parse_by_name(s, out, all);
}
bool parse(const std::string& s, Quant& out) {
  static const Quant all[] = {Quant::none, Quant::static_scale, Quant::dynamic_token, Quant::per_block};
  return parse_by_name(s, out, all);
}
bool parse(const std::string& s, Op& out) {
  static const Op all[] = {Op::forward, Op::add_forward, Op::forward_quant, Op::add_forward_quant, Op::backward,
                           Op::add_backward};
  return parse_by_name(s, out, all);
}

namespace {
struct MutantInfo {
  const char* name;
  const char* what;
};
constexpr MutantInfo kMutants[kMutantCount] = {
    {"none", "the product"},
    {"M1_padded_divisor", "mean divides by the padded width"},
    {"M2_eps_outside_root", "eps added outside the square root: rsqrt(m) + eps"},
    {"M3_low_precision_sum", "sum of squares accumulated in the 16-bit input type"},
    {"M4_bwd_sum_not_mean", "backward: c = sum(g dy x r) instead of the mean"},
    {"M5_bwd_no_reduction", "backward: dx = r g dy, the reduction term dropped"},
    {"M6_zero_row_shortcut", "backward: a zero row short-cuts to dx = 0"},
    {"M7_square_before_upcast", "x squared in f16 before widening (300^2 = inf)"},
    {"M8_stride_ignored", "row stride taken as D"},
    {"M9_tail_overread", "vector tail reads past the end of the row, then masks"},
    {"M10_dg_float_atomics", "dg accumulated by float atomics (order-dependent)"},
    {"M11_offsets_32bit", "row offsets computed in 32-bit arithmetic"},
    {"M12_scale_no_floor", "dynamic FP8 scale without its floor (0/0 on a zero row)"},
    {"M13_fp8_via_bf16", "FP8 quantized from a bf16-rounded y"},
    {"M14_fp8_no_saturation", "FP8 conversion without saturation (NaN above max)"},
    {"M15_llama_double_round", "two roundings RN(RN(x r) g) where one is the contract"},
    {"M16_order_depends_on_rows", "reduction order depends on R"},
    {"M17_add_unrounded_sum", "fused add normalizes the unrounded h + o"},
    {"M18_missing_barrier", "a barrier of the block reduction removed"},
    {"M19_misaligned_as_aligned", "misaligned pointer taken down the aligned vector path"},
    {"M20_weight_by_row", "g indexed by row instead of column"},
};
}  // namespace

const char* to_string(Mutant m) { return kMutants[static_cast<int>(m)].name; }
const char* mutant_description(Mutant m) { return kMutants[static_cast<int>(m)].what; }

}  // namespace rmsnorm
