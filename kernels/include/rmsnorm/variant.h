// The registry of variants: every implementation (host reference, CUDA kernels, and the
// mutants of both) is registered once under a stable dotted name with its capabilities, its
// declared accumulation shape (the oracle's error bound uses it) and can_implement().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "rmsnorm/types.h"

namespace rmsnorm {

// Where a variant's buffers live.
enum class Memory : std::uint8_t { host, device };

// The bug catalog (docs/mutants.md). A mutant is the production code with one switch flipped: every
// variant template takes a Mutant parameter and `Mutant::none` is the product. Mutants are
// registered under the reserved prefix "mutant." and are never chosen by the dispatcher. They are
// compiled into the verification tools' library (rmsnorm/mutants.h), never into librmsnorm.
enum class Mutant : std::uint8_t {
  none = 0,
  M1_padded_divisor,        // mean divides by the padded width
  M2_eps_outside_root,      // rsqrt(m) + eps  instead of rsqrt(m + eps)
  M3_low_precision_sum,     // sum of squares accumulated in bf16/f16
  M4_bwd_sum_not_mean,      // backward c uses the sum, not the mean
  M5_bwd_no_reduction,      // backward drops the reduction term
  M6_zero_row_shortcut,     // zero rows short-cut to dx = 0
  M7_square_before_upcast,  // square in f16 before widening (300² = inf)
  M8_stride_ignored,        // row stride taken as D
  M9_tail_overread,         // vector tail reads past the row and masks
  M10_dg_float_atomics,     // dg by float atomics (order-dependent)
  M11_offsets_32bit,        // row offsets in 32-bit arithmetic
  M12_scale_no_floor,       // dynamic FP8 scale without its floor (0/0 on zero rows)
  M13_fp8_via_bf16,         // FP8 quantized from a bf16-rounded y
  M14_fp8_no_saturation,    // FP8 conversion without saturation (NaN above max)
  M15_llama_double_round,   // RN(RN(x·r)·g) where one rounding is the contract
  M16_order_depends_on_rows,// reduction order depends on R
  M17_add_unrounded_sum,    // fused add normalizes the unrounded h + o
  M18_missing_barrier,      // missing barrier in the block reduction
  M19_misaligned_as_aligned,// misaligned pointer treated as aligned
  M20_weight_by_row,        // g indexed by row instead of column
};
inline constexpr int kMutantCount = 21;  // including none
const char* to_string(Mutant m);        // "M1_padded_divisor"
const char* mutant_description(Mutant m);

struct Variant {
  std::string name;         // stable dotted name: fwd.<kernel>[.<form>], bwd.<kernel>, host.reference
  std::string description;  // one line: what the variant is for
  Memory memory = Memory::host;
  Mutant mutant = Mutant::none;
  std::uint32_t ops = 0;    // bit (1 << int(Op)) for every op it supports
  // Entry points. Built-in variants set plain functions; a plugin's adapter binds its table.
  // Forward ops (forward, add_forward, forward_quant, add_forward_quant).
  std::function<Status(const ForwardArgs&)> can_implement_forward;
  std::function<Status(const ForwardArgs&)> run_forward;
  // Backward ops.
  std::function<Status(const BackwardArgs&)> can_implement_backward;
  std::function<Status(const BackwardArgs&)> run_backward;
  std::function<std::size_t(std::int64_t rows, std::int64_t dim)> workspace_bytes;
  // Row reduction shape for a given D (forward Σx², backward Σ ĝ·x̂); empty: not declared, and
  // the judge assumes the worst the contract allows (judged_row_shape()).
  std::function<AccumShape(std::int64_t dim)> row_shape;
  // dg column reduction shape for a given R (backward only); empty: not declared.
  std::function<AccumShape(std::int64_t rows)> dg_shape;
  // Declared D range and layout: what the variant is built for, and what the property
  // generators aim a share of their draws at. min_dim/max_dim hold for 16-bit rows and, unless
  // f32_min_dim/f32_max_dim (> 0) say otherwise, for fp32 rows (bwd.staged_rows stops at 8192
  // for fp32, bwd.cluster_rows starts at 8193). The widest over outputs (an FP8 output may
  // narrow it); can_implement() decides every case. f32_add_max_dim (> 0) narrows fp32 rows
  // further for the ops with a residual (the fused add, forward or backward: one more row tensor
  // to stage; bwd.staged_streams stops at 2040 there).
  std::int64_t min_dim = 1, max_dim = std::int64_t{1} << 24;
  std::int64_t f32_min_dim = 0, f32_max_dim = 0, f32_add_max_dim = 0;
  bool aligned_rows = false;  // takes 16-byte aligned rows (and g) only
  bool packed_rows = false;   // takes packed rows only (every row stride = D), any alignment
  // Takes rows of any alignment, but x, y (and o) in one 16-byte frame: equal base offsets and
  // row strides of equal residue, both modulo 16 bytes (fwd.shifted_row: its vectors start at
  // the same column in every tensor of a row).
  bool shared_frame = false;
  // FP8 outputs of 16-bit rows only (fwd.shifted_row: an fp32 row's lead has no 8-byte frame in
  // its codes); the other ops take every type it claims.
  bool quant_16bit_rows = false;
  bool same_type_weights = false;  // g has x's type only (the mutants carry no other)
  bool dg_weight_type = false;     // dg in g's type only (a plugin's RMSNORM_OPS_DG_WEIGHT_TYPE)
  // What the variant claims, as bit sets (1 << DType / Convention / Quant); 0: not declared, and
  // can_implement() alone decides. Plugins declare them; certificates list what was claimed.
  std::uint32_t dtypes = 0, conventions = 0, quant_modes = 0;
  // False: the forward ops do not write rstd (a plugin's RMSNORM_OPS_NO_RSTD); the harness
  // judges y, h and scale alone and never looks at the rstd buffer.
  bool writes_rstd = true;
  // Loaded from a plugin library (`origin` is its path): never dispatched, certified like any other.
  bool external = false;
  std::string origin;
  // Registered by the process hosting it (the Python bridge: rmsnorm/cert.h), so no child process
  // can load it: every certification step runs in this process, and `origin` is the command
  // that registers it again (a repro line is `<origin> --line '...'`).
  bool in_process = false;

  std::int64_t min_dim_for(DType x) const { return x == DType::f32 && f32_min_dim > 0 ? f32_min_dim : min_dim; }
  // `add`: for an op with a residual (add_forward, add_forward_quant, add_backward).
  std::int64_t max_dim_for(DType x, bool add = false) const {
    if (x != DType::f32) return max_dim;
    if (add && f32_add_max_dim > 0) return f32_add_max_dim;
    return f32_max_dim > 0 ? f32_max_dim : max_dim;
  }
  bool declares(std::int64_t dim, DType x, bool add = false) const {
    return dim >= min_dim_for(x) && dim <= max_dim_for(x, add);
  }

  // Older names this variant answers to (find_variant, match_variants, case files), so that case
  // lines and commands written before a rename still reach it.
  std::vector<std::string> aliases;

  bool answers_to(const std::string& n) const {
    if (n == name) return true;
    for (const std::string& a : aliases)
      if (a == n) return true;
    return false;
  }
  bool supports(Op op) const { return (ops >> static_cast<int>(op)) & 1u; }
  bool is_mutant() const { return mutant != Mutant::none; }
};

// All variants of this build (host ones always; CUDA ones when compiled in), then the external
// ones and the mutants added before the first call, products first.
const std::vector<Variant>& registry();
// Adds variants from outside this build (plugins), each named kExternalPrefix + "...". Only
// before registry() is first used: the registry never moves once built, so the pointers it hands
// out stay valid. Fails on another prefix or a name already taken.
inline constexpr std::string_view kExternalPrefix = "plugin.";
Status add_external_variants(std::vector<Variant> variants);
// Adds mutants (Variant::mutant set), each named kMutantPrefix + "...", on the same terms.
inline constexpr std::string_view kMutantPrefix = "mutant.";
Status add_mutant_variants(std::vector<Variant> variants);

// The limits a declared accumulation shape must respect for a reduction of n terms: at least one
// and at most n terms per participant, a tree at most 64 deep (docs/contract.md#accumulation-shape).
inline constexpr std::int32_t kMaxTreeDepth = 64;
// The shape the judge uses for a variant's row reduction at `dim` and its dg column sum over
// `rows`: the declared one when it is within the limits, a sequential sum of all terms when none
// is declared. A declared shape outside the limits is refused: the Status says why.
Status judged_row_shape(const Variant& v, std::int64_t dim, AccumShape& out);
Status judged_dg_shape(const Variant& v, std::int64_t rows, AccumShape& out);
const Variant* find_variant(const std::string& name);
// Variants whose name matches a glob pattern ('*' and '?'; several globs separated by commas
// match a name any of them matches; "all" = every non-mutant). A glob without wildcards matches an
// alias too (Variant::aliases).
std::vector<const Variant*> match_variants(const std::string& pattern);
// Whether v's name matches `pattern` as match_variants() matches it (an alias for a glob without
// wildcards).
bool variant_matches(const std::string& pattern, const Variant& v);
bool glob_match(const std::string& pattern, const std::string& name);

// Device availability: ok when a CUDA device can run kernels, else the reason.
Status device_status();

// The default dispatcher: the first product variant (registry order, best first) of memory
// `where` whose can_implement() accepts the arguments and whose dispatch rules (rmsnorm/dispatch.h) take
// them; null when none does (the arguments break
// the contract, or no variant of `where` can do them). For the backward, the arguments must
// carry the dg workspace: size it first with backward_workspace_bytes().
const Variant* pick_forward(const ForwardArgs& a, Memory where);
const Variant* pick_backward(const BackwardArgs& a, Memory where);

// The largest dg workspace any product backward variant of memory `where` asks for R rows of
// D columns: allocate this much, then pick_backward() can choose among all of them. 0 when none
// needs one (or R = 0).
std::size_t backward_workspace_bytes(std::int64_t rows, std::int64_t dim, Memory where);

// Registration hooks, one per family; registry() calls each once.
void register_host_variants(std::vector<Variant>& out);
void register_cuda_variants(std::vector<Variant>& out);

}  // namespace rmsnorm
