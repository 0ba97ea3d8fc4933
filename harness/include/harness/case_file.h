// A case: one run of one op on one shape, small enough to read, diff and paste
// (docs/case-format.md).
//
// Text form, one `key = value` per line, `#` starts a comment, blank lines ignored:
//
//   op = forward                  # forward add_forward forward_quant add_forward_quant
//                                 # backward add_backward
//   variant = host.*              # glob over registered names ("*" = every product variant)
//   rows = 2                      # R >= 0
//   dim = 7                       # D >= 1
//   x_type = bf16                 # x, o, dy, dx, dresidual: f32 f16 bf16
//   g_type = f32                  # x_type or f32
//   y_type = bf16                 # x_type, or e4m3/e5m2 with quant
//   dg_type = f32                 # f32 or g_type
//   convention = standard         # standard llama gemma no_weight
//   quant = none                  # none static dynamic_token per_block
//   eps = 0x1.0c6f7ap-20          # hex float ("%a") keeps the bits; decimal is accepted
//   static_scale = 0x1p+0
//   layout = x_pad=3 y_offset=2   # harness::Layout::to_string syntax; absent = dense, aligned
//   generator = regimes           # values from a generator and its 64-bit seed ...
//   seed = 0x9e3779b97f4a7c15
//   x.regime = mixed              # per-tensor value regime (see properties/generators.h)
//   x = 0x1p+0 0x1p+1             # ... or explicit values, row-major, rounded once to the
//   g = 1 2                       #     tensor's type (hex floats where bits matter)
//   o = ...   dy = ...   dresidual = ...   rstd = ...
//   expect.y = 0.632456 2.529822  # worked-example answers (decimal), compared with the exact
//   expect.tol = 1e-6             # value and with the variant's output within this tolerance
//   property = P4                 # which property's check replays this case ("" = acceptance)
//   property.k = 3                # that property's parameters
//   note = free text
//
// The same keys joined by ';' on a single line (`one_line`) form the failure line every test
// prints; parse_case accepts both forms, so a failure line pastes into a file or a command line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/run.h"
#include "oracle/oracle.h"
#include "rmsnorm/types.h"

namespace harness {

struct Case {
  rmsnorm::Op op = rmsnorm::Op::forward;
  std::string variant = "*";
  std::int64_t rows = 1, dim = 1;
  rmsnorm::DType x_type = rmsnorm::DType::bf16;
  rmsnorm::DType g_type = rmsnorm::DType::bf16;
  rmsnorm::DType y_type = rmsnorm::DType::bf16;
  rmsnorm::DType dg_type = rmsnorm::DType::f32;
  rmsnorm::Convention convention = rmsnorm::Convention::standard;
  rmsnorm::Quant quant = rmsnorm::Quant::none;
  float eps = 1e-6f;
  float static_scale = 1.0f;
  Layout layout;

  // Values, either from a generator (name + seed + per-tensor regimes) ...
  std::string generator;  // "" = explicit values below
  std::uint64_t seed = 0;
  std::string x_regime = "normal", o_regime = "normal", g_regime = "random", dy_regime = "normal";
  // ... or explicit, dense row-major ([rows*dim], g [dim], rstd [rows]).
  std::vector<float> x, o, g, dy, dresidual, rstd;

  // Expected answers of a worked example (decimal; empty = none).
  std::vector<double> expect_y, expect_dx, expect_dg, expect_rstd;
  double expect_tol = 1e-6;  // |got − want| <= tol·max(1, |want|) (absolute below 1, relative above)

  std::string property;                           // "" = oracle acceptance
  std::map<std::string, std::string> property_params;  // "property.<key> = value"
  std::string note;

  bool is_forward() const {
    return op != rmsnorm::Op::backward && op != rmsnorm::Op::add_backward;
  }
  bool has_add() const { return rmsnorm::has_residual(op); }
  bool has_quant() const { return op == rmsnorm::Op::forward_quant || op == rmsnorm::Op::add_forward_quant; }
  bool has_expectations() const {
    return !expect_y.empty() || !expect_dx.empty() || !expect_dg.empty() || !expect_rstd.empty();
  }
};

// Parse the text form (lines or one `;`-joined line) into `out`, starting from defaults.
// On failure returns false and sets `error` to "line N: why" ("entry N" in a one-line text);
// never throws, whatever the input.
bool parse_case(const std::string& text, Case& out, std::string& error);

// The text form: every key, values as hex floats, a trailing newline. parse_case(format_case(c))
// yields c again (bit for bit on every float).
std::string format_case(const Case& c);

// The same on one line: `key=value;key=value;...` (explicit values comma-separated).
std::string one_line(const Case& c);

// Written to stderr, before the case's one-line form, when a plugin kernel is about to run a case:
// when the process dies, the last such line names the case that killed it.
inline constexpr const char* kCaseMarker = "rmsnorm-cert case: ";

// Dense inputs of a case: explicit values rounded once to their types, or the generator's.
struct CaseValues {
  std::vector<float> x, o, g, dy, dresidual, rstd;
};
bool materialize(const Case& c, CaseValues& out, std::string& error);

// The oracle's view of a case (values materialized, sizes and types checked). A backward case
// gets the case's own rstd when it has one, else RN32 of the exact r (oracle::rstd_rounded).
bool forward_case(const Case& c, oracle::ForwardCase& out, std::string& error);
// The forward case's shape, types, convention, FP8 mode, eps and static scale, without values
// (what forward_case() fills in before them; enough for harness::forward_args()).
oracle::ForwardCase forward_shape(const Case& c);
bool backward_case(const Case& c, oracle::BackwardCase& out, std::string& error);

// Fills `out` from c.generator, c.seed and the regimes (harness/values.h); false + reason for
// an unknown generator or regime.
bool generate_values(const Case& c, CaseValues& out, std::string& error);

// Hex float text of a float ("%a"; "nan", "inf", "-inf"), and its parser (hex or decimal).
std::string hex_float(double v);
bool parse_float(const std::string& s, double& out);
// `d` (parse_float of `text`) adjusted so that rounding it to any type of at most 24 bits gives
// the rounding of the exact decimal `text` itself: a case's values are rounded once, from their
// text, to their tensor's type (docs/case-format.md).
double parse_decimal_once(const std::string& text, double d);

}  // namespace harness
