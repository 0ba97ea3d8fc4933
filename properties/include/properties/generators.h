// Generators of cases, valid by construction and reproducible from a 64-bit seed alone (no
// RapidCheck here: the command line and the fuzzers use the same code). The values in a case come
// from the regimes of harness/values.h.
//
//  - case drawing: shape, types, convention, eps, layout, regimes and seed, drawn through a
//    Chooser. RngChooser draws from a seed; the property suite's RapidCheck chooser draws the
//    same choices through RapidCheck so that each one shrinks (towards the first, simplest,
//    alternative and the lower end of ranges).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/case_file.h"
#include "harness/values.h"
#include "rmsnorm/types.h"
#include "rmsnorm/variant.h"

namespace generators {

// ---------------------------------------------------------------------------------------------
// Drawing cases
// ---------------------------------------------------------------------------------------------

// A source of choices. Implementations: RngChooser (seeded), and the RapidCheck one in
// properties/rc_support.h (each choice shrinks towards index 0 / the low end).
class Chooser {
 public:
  virtual ~Chooser() = default;
  // An index in [0, weights.size()) with probability weights[i] / sum; weights[0] simplest.
  virtual std::size_t pick(const std::vector<unsigned>& weights) = 0;
  // An integer uniformly in [lo, hi] (inclusive), lo simplest.
  virtual std::int64_t between(std::int64_t lo, std::int64_t hi) = 0;
  // A 64-bit seed for the values.
  virtual std::uint64_t seed() = 0;
};

class RngChooser : public Chooser {
 public:
  explicit RngChooser(std::uint64_t seed) : rng_(seed) {}
  std::size_t pick(const std::vector<unsigned>& weights) override;
  std::int64_t between(std::int64_t lo, std::int64_t hi) override;
  std::uint64_t seed() override { return rng_.next(); }

 private:
  Rng rng_;
};

// Uniform choice among items (the first is the simplest).
template <typename T>
const T& choose(Chooser& ch, const std::vector<T>& items) {
  return items[ch.pick(std::vector<unsigned>(items.size(), 1u))];
}

// What a property wants drawn. Every list is in "simplest first" order.
struct Domain {
  std::vector<Op> ops = {Op::forward};
  std::vector<DType> x_types = {DType::bf16, DType::f16, DType::f32};
  bool g_f32 = true;  // g may be f32 when x is 16-bit
  std::vector<Convention> conventions = {Convention::standard, Convention::llama, Convention::gemma,
                                         Convention::no_weight};
  std::vector<Quant> quants = {Quant::dynamic_token, Quant::per_block, Quant::static_scale};
  std::vector<DType> fp8_types = {DType::e4m3, DType::e5m2};
  std::vector<Regime> x_regimes = {Regime::normal, Regime::mixed,    Regime::tiny,      Regime::constant,
                                   Regime::outliers, Regime::large,  Regime::subnormal, Regime::huge,
                                   Regime::zeros};
  std::vector<Regime> g_regimes = {Regime::random, Regime::ones, Regime::per_channel, Regime::with_zeros};
  std::vector<Regime> dy_regimes = {Regime::normal, Regime::ones, Regime::outliers};
  std::vector<float> eps_values = {1e-6f, 1e-5f, 0.0f, 0.1f, 1000.0f};
  enum class Dims { any, tails8, tails128, small } dims = Dims::any;
  std::int64_t min_rows = 0, max_rows = 300;
  std::int64_t min_dim = 1, max_dim = 65537;
  std::int64_t max_elements = std::int64_t{1} << 17;  // rows·dim cap (time budget)
  bool layouts = true;        // pads and misaligned offsets may be drawn
  bool force_layout = false;  // every case has pads and misaligned offsets
  bool in_place = true;       // y may alias x (dx may alias dy)
  // The variant under test (target_max_dim > 0): draws take a width inside its declared range
  // and, for a variant of aligned rows only, 16-byte aligned rows; for a variant of packed rows
  // only, no row pads. Only a third of the draws aim unless target_always is set (certify's
  // generated cases and every property's draws for a variant: a draw outside what the variant
  // can implement is declined and checks nothing); the fuzz loop aims a third of the time.
  std::int64_t target_min_dim = 0, target_max_dim = 0;          // 16-bit rows
  std::int64_t target_f32_min_dim = 0, target_f32_max_dim = 0;  // fp32 rows
  std::int64_t target_f32_add_max_dim = 0;                     // fp32 rows of the fused add
  bool target_aligned = false;
  bool target_packed = false;
  bool target_shared_frame = false;  // y (and o) laid out as x: same pads and offsets
  bool target_quant_16bit_rows = false;  // FP8 outputs of 16-bit rows only (Variant::quant_16bit_rows)
  bool target_dg_weight_type = false;  // dg in g's type only (Variant::dg_weight_type)
  bool target_always = false;

  // Aim at variant v: its declared D ranges and layout (Variant::min_dim_for(), aligned_rows,
  // packed_rows, shared_frame), its weight types (same_type_weights), and only the input types, conventions and FP8 modes it claims (plugins declare
  // them; 0 claims all), dropping the ops that no claimed FP8 mode or convention can reach.
  // Returns "" when draws can land inside what v implements, else why none can (the domain's
  // types, conventions, FP8 modes or widths and v's claims do not meet; the domain is then left
  // as it was): a property whose domain misses the variant's claims is not applicable to it.
  std::string aim_at(const rmsnorm::Variant& v);
};

// A width for a case of `op` with rows of type x_type, near `dim`: inside [d.min_dim, d.max_dim]
// and the target's range for that type, a multiple of the 16-byte vector for an aligned target
// when the domain draws no pads (8 elements, 16 with FP8 outputs: every row tensor, the FP8 one
// included, keeps 16-byte rows; with pads, any width: align_rows pads the strides), and congruent to `dim` modulo `step` where the range allows (P9 keeps its residue mod 128).
std::int64_t aim_dim(const Domain& d, Op op, DType x_type, std::int64_t dim, std::int64_t step = 1);

// Pads every row tensor of the case up to a stride of whole 16-byte vectors, offsets none: the
// rows of any width, its tail included, then start 16-byte aligned (an aligned target's draws).
void align_rows(harness::Case& c);

// Draw one case (generator "regimes" + a seed). Valid by construction: the variant is "*".
harness::Case draw_case(Chooser& ch, const Domain& d);

// One-word classes for coverage reports.
std::string dim_class(std::int64_t dim);
std::string rows_class(std::int64_t rows);
std::string layout_class(const harness::Layout& l);

}  // namespace generators
