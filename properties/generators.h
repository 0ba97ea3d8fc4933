// Generators of cases and of the values in them, valid by construction and reproducible from a
// 64-bit seed alone (no RapidCheck here: the command line and the fuzzers use the same code).
//
// Two layers:
//  - value regimes: a row of D values of one regime (normal, tiny, constant, outliers, ±300 and
//    near-65504, ±0, subnormals, huge, NaN/Inf, mixed per row), built from bit patterns and
//    weighted choices, rounded once to the tensor's type. Row i of a tensor depends only on
//    (seed, tensor, i): dropping rows or moving a row leaves the others' values unchanged.
//  - case drawing: shape, types, convention, eps, layout, regimes and seed, drawn through a
//    Chooser. RngChooser draws from a seed; the property suite's RapidCheck chooser draws the
//    same choices through RapidCheck so that each one shrinks (towards the first, simplest,
//    alternative and the lower end of ranges).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/case_file.h"
#include "rmsnorm/types.h"
#include "rmsnorm/variant.h"

namespace generators {

using rmsnorm::Convention;
using rmsnorm::DType;
using rmsnorm::Op;
using rmsnorm::Quant;

// xoshiro256** seeded through splitmix64: small, fast, the same on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  std::uint64_t below(std::uint64_t n);          // uniform in [0, n), n >= 1
  std::int64_t between(std::int64_t lo, std::int64_t hi);  // uniform in [lo, hi]
  double uniform();                              // [0, 1)
  double normal();                               // N(0, 1)
  bool chance(unsigned num, unsigned den);       // probability num/den

 private:
  std::uint64_t s_[4];
};

// Seed of row `index` of stream `stream` under case seed `seed` (a splitmix64 mix).
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index);

enum class Regime : std::uint8_t {
  // Row regimes (x, o, dy, dresidual).
  normal,     // N(0,1)·2^e, e in [-3, 3]
  tiny,       // |x| ~ 1e-4: mean(x²) ~ 1e-8, eps-dominated for eps >= 1e-6
  constant,   // every element the same non-zero value
  outliers,   // normal with a few elements 2^8..2^12 larger (capped at the type's max)
  large,      // ±300, ±256, ±65504, 65472, 32768...: fp16 squares overflow, fp32 ones do not
  zeros,      // ±0 (only when eps > 0: with eps = 0 a zero row is NaN by the exact maths)
  subnormal,  // subnormals of the type mixed with normal values (whole rows of them when safe)
  huge,       // the largest magnitudes whose Σx² still fits fp32 (fp16: as `large`)
  special,    // normal rows, some with NaN/±Inf inserted
  mixed,      // each row picks one finite regime
  // Weight regimes (g).
  ones,
  random,       // uniform in [-2, 2]
  per_channel,  // distinct positive values per column (dg sums must keep columns apart)
  with_zeros,   // random with about a quarter exact zeros
};
const char* to_string(Regime r);
bool parse(const std::string& s, Regime& out);
bool is_row_regime(Regime r);
bool is_weight_regime(Regime r);

// One row of `dim` values of regime r, each exactly representable in t.
std::vector<float> gen_row_values(Regime r, std::int64_t dim, DType t, float eps, Rng& rng);
// A weight vector of `dim` values, representable in t.
std::vector<float> gen_weight(Regime r, std::int64_t dim, DType t, Rng& rng);
// rows×dim values, row i from its own seed mix_seed(seed, stream, i).
std::vector<float> gen_matrix(Regime r, std::int64_t rows, std::int64_t dim, DType t, float eps,
                              std::uint64_t seed, std::uint64_t stream);

// The name of the only generator so far (the regimes above).
inline constexpr const char* kRegimeGenerator = "regimes";

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
  // The variant under test (target_max_dim > 0): a third of the draws take a width inside its
  // declared range and, for a variant of aligned rows only, 16-byte aligned rows — so that a
  // variant of a narrow range (bwd.cluster_rows.vec8: D > 16384) meets more than a stray case.
  std::int64_t target_min_dim = 0, target_max_dim = 0;          // 16-bit rows
  std::int64_t target_f32_min_dim = 0, target_f32_max_dim = 0;  // fp32 rows
  bool target_aligned = false;
  bool target_packed = false;  // aimed draws have no row pads (a variant of packed rows only)
  bool target_always = false;  // every draw aims (a property of very few cases: P18)

  // Aim at variant v: its declared D ranges and layout (Variant::min_dim_for(), aligned_rows,
  // packed_rows).
  void aim_at(const rmsnorm::Variant& v) {
    target_min_dim = v.min_dim;
    target_max_dim = v.max_dim;
    target_f32_min_dim = v.min_dim_for(rmsnorm::DType::f32);
    target_f32_max_dim = v.max_dim_for(rmsnorm::DType::f32);
    target_aligned = v.aligned_rows;
    target_packed = v.packed_rows;
  }
};

// Draw one case (generator "regimes" + a seed). Valid by construction: the variant is "*".
harness::Case draw_case(Chooser& ch, const Domain& d);

// One-word classes for coverage reports.
std::string dim_class(std::int64_t dim);
std::string rows_class(std::int64_t rows);
std::string layout_class(const harness::Layout& l);

}  // namespace generators
