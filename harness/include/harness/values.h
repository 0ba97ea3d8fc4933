// The value regimes of generated cases: a row of D values of one regime (normal, tiny, constant,
// outliers, ±300 and near-65504, ±0, subnormals, huge, NaN/Inf, mixed per row), built from bit
// patterns and weighted choices, rounded once to the tensor's type, reproducible from a 64-bit
// seed alone. Row i of a tensor depends only on (seed, tensor, i): dropping rows or moving a row
// leaves the others' values unchanged. The case format materializes `generator = regimes`
// through them (generate_values); the property generators (properties/) draw cases on top.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/case_file.h"
#include "rmsnorm/types.h"

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

}  // namespace generators
