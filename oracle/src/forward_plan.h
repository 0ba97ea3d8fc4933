// Internal to the oracle: the per-case constants and the per-row evaluation of the forward
// family (y, llama's t, rstd, FP8 scales and q, the fused-add residual). The row routine hands
// every output element's acceptance set to a Sink, so the same code checks a kernel's output,
// produces acceptance sets and produces correctly rounded answers.
#pragma once

#include <cstdint>
#include <vector>

#include "oracle/judge.h"
#include "oracle/numeric.h"
#include "oracle/oracle.h"

namespace oracle {
namespace fwd {

struct Plan {
  const ForwardCase* c = nullptr;
  num::Grid gy, gx, g32;  // output grid (FP8 saturating), input grid (llama t, residual), fp32
  bool fused = false, quant = false, dynamic = false, llama = false, gemma = false, no_weight = false;
  double eps32 = 0, eps_t = 0, eps_r = 0;  // kernel-model relative bounds for the shape
  double fp8_max = 0;
  float floor32 = 0;
  std::int64_t groups = 0, group_width = 0;  // scales per row and columns per scale
  std::vector<double> w;                     // the weight in FP64 (gemma: fl(1 + g))
  double w_rel = 0;                          // relative FP64 error of |x|·|w| (0, or 2u53 for gemma)
  double max_abs_w = 0;                      // over the finite weights
  bool weights_finite = true;                // no inf or NaN weight
};

// Build the plan; "" or the reason the case is invalid.
std::string make_plan(const ForwardCase& c, AccumShape shape, Plan& p);

// What the row routine reports. `s_used` is the scale q was judged with.
struct Sink {
  virtual ~Sink() = default;
  virtual void residual(std::int64_t row, std::int64_t col, std::uint32_t bits) = 0;
  // The whole row of y (or q) at once: a[0 .. dim).
  virtual void y_row(std::int64_t row, const judge::KeyAcceptance* a) = 0;
  virtual void rstd(std::int64_t row, const judge::KeyAcceptance& a, double lo, double hi) = 0;
  virtual void scale(std::int64_t row, std::int64_t group, const judge::KeyAcceptance& a) = 0;
};

struct RowOptions {
  Evaluation mode = Evaluation::fast;
  const std::vector<float>* kernel_scale = nullptr;  // judge q with these scales
  bool q_against_exact_scale = false;  // `rounded` of q = RN8(y / s_exact) (forward_rounded)
  bool want_y = true, want_rstd = true, want_scale = true;
};

void evaluate_row(const Plan& p, std::int64_t row, const RowOptions& o, Sink& sink);

}  // namespace fwd
}  // namespace oracle
