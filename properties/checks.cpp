#include "properties/checks.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "harness/run.h"
#include "oracle/oracle.h"
#include "rmsnorm/formats.h"
#include "rmsnorm/validate.h"

namespace properties {
namespace {

using generators::Chooser;
using generators::Domain;
using generators::Regime;
using harness::Case;
using rmsnorm::Convention;
using rmsnorm::DType;
using rmsnorm::Op;
using rmsnorm::Quant;
using rmsnorm::Status;
using rmsnorm::Variant;
using Kind = CheckResult::Kind;

const char* const kP18PackedRows =
    "packed rows only: P18's rows are 2^31 elements apart (strided); 64-bit offsets of packed rows are "
    "test_gpu_backward's R*D > 2^31 test";

CheckResult pass() { return {}; }
CheckResult fail(std::string why) { return {Kind::fail, std::move(why)}; }
CheckResult not_applicable(std::string why) { return {Kind::not_applicable, std::move(why)}; }

std::string fmt(const char* f, double a) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

std::int64_t param(const Case& c, const char* key, std::int64_t fallback) {
  const auto it = c.property_params.find(key);
  if (it == c.property_params.end()) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 0);
  return (end && *end == '\0') ? v : fallback;
}

std::uint32_t float_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Bitwise equality of two outputs, NaNs of the same pattern included.
std::string compare_bits(const char* what, const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
                         std::int64_t dim) {
  if (a.size() != b.size())
    return std::string(what) + ": sizes differ (" + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + ")";
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s[%lld,%lld]: 0x%x vs 0x%x", what, static_cast<long long>(i / dim),
                    static_cast<long long>(i % dim), a[i], b[i]);
      return buf;
    }
  return "";
}

std::string compare_floats(const char* what, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<std::uint32_t> ba(a.size()), bb(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ba[i] = float_bits(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) bb[i] = float_bits(b[i]);
  return compare_bits(what, ba, bb, 1);
}

// Spacing of t's representable numbers at |v| (its ulp there).
double ulp_of(double v, DType t) {
  const rmsnorm::FormatTraits& f = rmsnorm::traits_of(t);
  int e = f.emin();
  if (v != 0 && std::isfinite(v)) {
    int e2 = 0;
    (void)std::frexp(std::fabs(v), &e2);
    e = std::max(e2 - 1, f.emin());
  }
  return std::ldexp(1.0, e - f.mantissa_bits);
}

// Worked-example tolerance: absolute up to 1, relative above (the seed prints 6 decimals of
// values like 316.22777, and a backward is handed RN32(r), 2^-24 away from the exact r).
bool near(double got, double want, double tol) {
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

bool layout_misaligned(const Case& c) {
  const harness::Layout& l = c.layout;
  // Layout offsets count elements (harness::Layout): a base is 16-byte aligned when offset·size is.
  auto bytes = [](std::int64_t n, DType t) { return n * static_cast<std::int64_t>(rmsnorm::size_of(t)); };
  auto bad = [&](std::int64_t offset, std::int64_t dim, std::int64_t pad, DType t) {
    return bytes(offset, t) % 16 != 0 || bytes(dim + pad, t) % 16 != 0;
  };
  if (c.is_forward()) {
    return bad(l.x_offset, c.dim, l.x_pad, c.x_type) || bad(l.y_offset, c.dim, l.y_pad, c.y_type) ||
           (c.has_add() && bad(l.o_offset, c.dim, l.o_pad, c.x_type)) || bytes(l.g_offset, c.g_type) % 16 != 0 ||
           (c.dim * static_cast<std::int64_t>(rmsnorm::size_of(c.g_type))) % 16 != 0;
  }
  return bad(l.x_offset, c.dim, l.x_pad, c.x_type) || bad(l.dy_offset, c.dim, l.dy_pad, c.x_type) ||
         bad(l.dx_offset, c.dim, l.dx_pad, c.x_type) ||
         (c.op == Op::add_backward && bad(l.dres_offset, c.dim, l.dres_pad, c.x_type)) ||
         bytes(l.g_offset, c.g_type) % 16 != 0;
}

// The production case every variant must accept for an op it claims: bf16 activations, standard
// convention, D = 4096, dense aligned buffers, eps > 0, no quantization (or E4M3 dynamic).
bool is_canonical(const Case& c) {
  const harness::Layout dense;
  return c.x_type == DType::bf16 && c.convention == Convention::standard && c.dim == 4096 && c.eps > 0.0f &&
         c.layout.to_string() == dense.to_string() &&
         (!c.has_quant() || (c.quant == Quant::dynamic_token && c.y_type == DType::e4m3));
}

// A variant said no. Legitimate only as a capability limit with a reason; never for the host
// products (the reference implements the whole contract) and never for the canonical case.
CheckResult judge_rejection(const Status& s, const Case& c, const Variant& v) {
  const std::string what = std::string(rmsnorm::to_string(s.code)) + " (" + s.reason + ")";
  if (s.reason.empty()) return fail("rejected without a reason: " + what);
  switch (s.code) {
    case Status::Code::invalid_argument:
    case Status::Code::bad_overlap:
      return fail("rejected a valid case as invalid: " + what);
    case Status::Code::launch_failed:
      return fail("launch failed: " + what);
    case Status::Code::no_device:
      return {Kind::not_applicable, "no device: " + s.reason};
    case Status::Code::misaligned:
      if (!layout_misaligned(c)) return fail("rejected an aligned case as misaligned: " + what);
      break;
    default:
      break;
  }
  // The in-tree host variants implement the whole contract; a host plugin declines what lies
  // outside its claims like any other variant.
  if (v.memory == rmsnorm::Memory::host && !v.external)
    return fail("a host variant must implement every valid case, it said " + what);
  // The canonical case may be declined only as a capability limit of the variant's D range
  // (`unsupported`, e.g. fwd.warp_row stops at D = 1024); the canonical test then checks that
  // the variant passes the largest canonical D it takes.
  if (is_canonical(c) && s.code != Status::Code::unsupported)
    return fail("rejected the canonical bf16 D=4096 case of an op it claims: " + what);
  return {Kind::rejected, what};
}

// The rstd a backward is handed: RN32 of the exact r (the harness does the same when empty).
void fill_rstd(oracle::BackwardCase& b) {
  if (b.rstd.empty() && b.rows > 0) b.rstd = oracle::rstd_rounded(oracle::forward_of(b));
}

double weight_at(const oracle::BackwardCase& b, std::int64_t j) {
  switch (b.convention) {
    case Convention::no_weight: return 1.0;
    case Convention::gemma: return 1.0 + b.g[static_cast<std::size_t>(j)];
    default: return b.g[static_cast<std::size_t>(j)];
  }
}

// ---------------------------------------------------------------------------------------------
// Running and judging
// ---------------------------------------------------------------------------------------------

CheckResult judge(const harness::Outcome& o, const Case& c, const Variant& v) {
  if (!o.status.ok()) return judge_rejection(o.status, c, v);
  if (!o.guard_violation.empty()) return fail("guard band: " + o.guard_violation);
  if (!o.verdict.error.empty()) return fail("oracle: invalid case: " + o.verdict.error);
  if (!o.verdict.pass) return fail("outside acceptance: " + o.verdict.first_failure);
  return pass();
}

template <typename Raw>
bool raw_ok(const Raw& r, const Case& c, const Variant& v, CheckResult& out) {
  if (!r.status.ok()) {
    out = judge_rejection(r.status, c, v);
    return false;
  }
  if (!r.guard_violation.empty()) {
    out = fail("guard band: " + r.guard_violation);
    return false;
  }
  return true;
}

// One run of a case on `v` for the checks that look past the acceptance sets: the oracle's view
// of the case and the variant's raw outputs. False (with `out` set to the verdict) when the
// launch was declined or a guard band was written.
struct ForwardRun {
  oracle::ForwardCase fc;
  harness::RawForward raw;
};
struct BackwardRun {
  oracle::BackwardCase bc;
  harness::RawBackward raw;
};
bool run_case(const Case& c, const Variant& v, ForwardRun& run, CheckResult& out) {
  std::string err;
  if (!harness::forward_case(c, run.fc, err)) {
    out = fail("bad case: " + err);
    return false;
  }
  run.raw = harness::execute_forward(v, run.fc, c.layout);
  return raw_ok(run.raw, c, v, out);
}
bool run_case(const Case& c, const Variant& v, BackwardRun& run, CheckResult& out) {
  std::string err;
  if (!harness::backward_case(c, run.bc, err)) {
    out = fail("bad case: " + err);
    return false;
  }
  fill_rstd(run.bc);
  run.raw = harness::execute_backward(v, run.bc, c.layout);
  return raw_ok(run.raw, c, v, out);
}

// Worked-example expectations: the oracle's exact values and the variant's outputs both within
// expect_tol of the expected decimals (the variant also within one ulp of its output type).
CheckResult check_expectations_forward(const Case& c, const oracle::ForwardCase& fc, const Variant* v) {
  if (c.expect_y.empty() && c.expect_rstd.empty()) return pass();
  const std::vector<double> exact = oracle::forward_values(fc);
  for (std::size_t i = 0; i < c.expect_y.size(); ++i)
    if (!near(exact[i], c.expect_y[i], c.expect_tol))
      return fail("oracle y[" + std::to_string(i) + "] = " + fmt("%.9g", exact[i]) + " but the case expects " +
                  fmt("%.9g", c.expect_y[i]));
  const std::vector<oracle::Enclosure> r = oracle::row_rstd(fc);
  for (std::size_t i = 0; i < c.expect_rstd.size(); ++i)
    if (!near(r[i].mid(), c.expect_rstd[i], c.expect_tol))
      return fail("oracle rstd[" + std::to_string(i) + "] = " + fmt("%.9g", r[i].mid()) + " but the case expects " +
                  fmt("%.9g", c.expect_rstd[i]));
  if (!v) return pass();
  const harness::RawForward raw = harness::execute_forward(*v, fc, c.layout);
  CheckResult res;
  if (!raw_ok(raw, c, *v, res)) return res;
  for (std::size_t i = 0; i < c.expect_y.size() && i < raw.result.y.size(); ++i) {
    const double got = rmsnorm::decode(raw.result.y[i], fc.y_type);
    if (!near(got, c.expect_y[i], c.expect_tol) && !(std::fabs(got - c.expect_y[i]) <= ulp_of(c.expect_y[i], fc.y_type)))
      return fail("y[" + std::to_string(i) + "] = " + fmt("%.9g", got) + ", expected " + fmt("%.9g", c.expect_y[i]));
  }
  for (std::size_t i = 0; i < c.expect_rstd.size() && i < raw.result.rstd.size(); ++i)
    if (!near(raw.result.rstd[i], c.expect_rstd[i], c.expect_tol) && !(std::fabs(raw.result.rstd[i] - c.expect_rstd[i]) <= ulp_of(c.expect_rstd[i], DType::f32)))
      return fail("rstd[" + std::to_string(i) + "] = " + fmt("%.9g", raw.result.rstd[i]) + ", expected " +
                  fmt("%.9g", c.expect_rstd[i]));
  return pass();
}

CheckResult check_expectations_backward(const Case& c, oracle::BackwardCase bc, const Variant* v) {
  if (c.expect_dx.empty() && c.expect_dg.empty() && c.expect_rstd.empty()) return pass();
  fill_rstd(bc);
  // The seed's worked answers are of the exact function, so compare with the exact r.
  oracle::BackwardCase exact_case = bc;
  const std::vector<oracle::Enclosure> r = oracle::row_rstd(oracle::forward_of(bc));
  for (std::size_t i = 0; i < c.expect_rstd.size(); ++i)
    if (!near(r[i].mid(), c.expect_rstd[i], c.expect_tol))
      return fail("oracle rstd[" + std::to_string(i) + "] = " + fmt("%.9g", r[i].mid()) + ", expected " +
                  fmt("%.9g", c.expect_rstd[i]));
  const oracle::BackwardValues ex = oracle::backward_values(exact_case);
  for (std::size_t i = 0; i < c.expect_dx.size(); ++i)
    if (!near(ex.dx[i], c.expect_dx[i], c.expect_tol))
      return fail("oracle dx[" + std::to_string(i) + "] = " + fmt("%.9g", ex.dx[i]) + ", expected " +
                  fmt("%.9g", c.expect_dx[i]));
  for (std::size_t i = 0; i < c.expect_dg.size() && i < ex.dg.size(); ++i)
    if (!near(ex.dg[i], c.expect_dg[i], c.expect_tol))
      return fail("oracle dg[" + std::to_string(i) + "] = " + fmt("%.9g", ex.dg[i]) + ", expected " +
                  fmt("%.9g", c.expect_dg[i]));
  if (!v) return pass();
  const harness::RawBackward raw = harness::execute_backward(*v, bc, c.layout);
  CheckResult res;
  if (!raw_ok(raw, c, *v, res)) return res;
  for (std::size_t i = 0; i < c.expect_dx.size() && i < raw.result.dx.size(); ++i) {
    const double got = rmsnorm::decode(raw.result.dx[i], bc.x_type);
    if (!near(got, c.expect_dx[i], c.expect_tol) && !(std::fabs(got - c.expect_dx[i]) <= ulp_of(c.expect_dx[i], bc.x_type)))
      return fail("dx[" + std::to_string(i) + "] = " + fmt("%.9g", got) + ", expected " + fmt("%.9g", c.expect_dx[i]));
  }
  for (std::size_t i = 0; i < c.expect_dg.size() && i < raw.result.dg.size(); ++i) {
    const double got = rmsnorm::decode(raw.result.dg[i], bc.dg_type);
    if (!near(got, c.expect_dg[i], c.expect_tol) && !(std::fabs(got - c.expect_dg[i]) <= ulp_of(c.expect_dg[i], bc.dg_type)))
      return fail("dg[" + std::to_string(i) + "] = " + fmt("%.9g", got) + ", expected " + fmt("%.9g", c.expect_dg[i]));
  }
  return pass();
}

// P1, P2, P5, P8, P9, P12, P15, P18 and case-file replay: the oracle's acceptance.
CheckResult check_acceptance(const Case& c, const Variant& v) {
  std::string err;
  if (c.is_forward()) {
    oracle::ForwardCase fc;
    if (!harness::forward_case(c, fc, err)) return fail("bad case: " + err);
    CheckResult r = judge(harness::run_forward(v, fc, c.layout), c, v);
    if (r.kind != Kind::pass) return r;
    return check_expectations_forward(c, fc, &v);
  }
  oracle::BackwardCase bc;
  if (!harness::backward_case(c, bc, err)) return fail("bad case: " + err);
  CheckResult r = judge(harness::run_backward(v, bc, c.layout), c, v);
  if (r.kind != Kind::pass) return r;
  return check_expectations_backward(c, bc, &v);
}

// ---------------------------------------------------------------------------------------------
// P20: each call computes from its own inputs
// ---------------------------------------------------------------------------------------------
// A kernel that keeps results between calls (keyed by shape, by pointer, by a hash of part of
// the input) passes every property that runs one case per shape. Here the case runs, then at
// once a second case of the same shape, types and layout with other values (another generator
// seed, or another eps for explicit values), which the harness lays out the same way, so on the
// same allocations as a rule: the second must be judged on its own inputs.
CheckResult check_fresh_inputs(const Case& c, const Variant& v) {
  const CheckResult first = check_acceptance(c, v);
  if (first.kind != Kind::pass) return first;
  Case next = c;
  if (!c.generator.empty()) {
    next.seed = c.seed ^ 0x9e3779b97f4a7c15ull;
  } else {
    next.eps = c.eps * 4.0f + 0.25f;
    next.expect_y.clear();
    next.expect_rstd.clear();
    next.expect_dx.clear();
    next.expect_dg.clear();
  }
  CheckResult second = check_acceptance(next, v);
  if (second.kind == Kind::fail) {
    char what[64];
    if (c.generator.empty()) std::snprintf(what, sizeof what, "eps %g", static_cast<double>(next.eps));
    else std::snprintf(what, sizeof what, "seed 0x%016llx", static_cast<unsigned long long>(next.seed));
    second.message = std::string("the second of two cases of the same shape and layout (") + what +
                     ") was not computed from its own inputs: " + second.message;
  }
  return second;
}

// ---------------------------------------------------------------------------------------------
// P4: K(2^k x, 4^k eps) == K(x, eps), bitwise
// ---------------------------------------------------------------------------------------------
// Every step of the forward is equivariant under an exact power-of-two scaling: the squares and
// their sum scale by 4^k, so do the mean and m + 4^k eps; rsqrt of 4^k·a is 2^-k·rsqrt(a); and
// x·r is unchanged — as long as nothing leaves the normal range. Elements whose scaled value is
// not exact in the type (or whose squares would be subnormal) are set to zero in both runs.
CheckResult check_scale_invariance(const Case& c, const Variant& v) {
  int k = static_cast<int>(param(c, "k", 1));
  std::string err;
  oracle::ForwardCase drawn;
  if (!harness::forward_case(c, drawn, err)) return fail("bad case: " + err);
  oracle::ForwardCase base, scaled;
  // The pair of runs for a scaling by 2^k; "" when both stay in range, else why not.
  auto prepare = [&](int kk) -> std::string {
    const double eps_scaled = std::ldexp(static_cast<double>(c.eps), 2 * kk);
    if (static_cast<double>(static_cast<float>(eps_scaled)) != eps_scaled ||
        (eps_scaled != 0 && eps_scaled < std::numeric_limits<float>::min()))
      return "4^k·eps is not an exact normal float";
    const double lo = std::max(std::ldexp(1.0, -60), rmsnorm::traits_of(c.x_type).min_normal());
    const double hi = std::ldexp(1.0, 60);
    auto exact_scalable = [&](float x) {
      const double ax = std::fabs(static_cast<double>(x)), as = std::ldexp(ax, kk);
      return std::isfinite(ax) && ax >= lo && ax <= hi && as >= lo && as <= hi &&
             rmsnorm::round_to(as, c.x_type) == as;
    };
    base = drawn;
    for (float& x : base.x)
      if (x != 0.0f && !exact_scalable(x)) x = std::copysign(0.0f, x);
    scaled = base;
    for (float& x : scaled.x) x = static_cast<float>(std::ldexp(static_cast<double>(x), kk));
    scaled.eps = static_cast<float>(eps_scaled);
    // The fp32 sum of squares (and the mean + eps) of both runs must stay finite: a row whose
    // scaled Σx² reaches 2^127 overflows in the kernel and the equivariance has nothing to say.
    for (const oracle::ForwardCase* fc : {&base, &scaled})
      for (std::int64_t r = 0; r < fc->rows; ++r) {
        double sum = 0;
        for (std::int64_t j = 0; j < fc->dim; ++j) {
          const double x = fc->x[static_cast<std::size_t>(r * fc->dim + j)];
          sum += x * x;
        }
        if (!(sum < std::ldexp(1.0, 126)) || !(sum / static_cast<double>(fc->dim) + fc->eps < std::ldexp(1.0, 126)))
          return "the scaled row's sum of squares would overflow fp32";
      }
    return "";
  };
  // A scaling that leaves the range (the sum of squares of a large row times 4^8 overflows) is
  // checked the other way, by 2^-k: the property holds for every k, and the case still checks it.
  std::string why = prepare(k);
  if (!why.empty() && prepare(-k).empty()) {
    k = -k;
    why.clear();
  }
  if (!why.empty()) return not_applicable(why);
  const harness::RawForward a = harness::execute_forward(v, base, c.layout);
  CheckResult res;
  if (!raw_ok(a, c, v, res)) return res;
  const harness::RawForward b = harness::execute_forward(v, scaled, c.layout);
  if (!b.status.ok()) return fail("accepted (x, eps) but rejected (2^k x, 4^k eps): " + b.status.reason);
  if (!b.guard_violation.empty()) return fail("guard band: " + b.guard_violation);
  std::string diff = compare_bits("y(x) vs y(2^k x)", a.result.y, b.result.y, c.dim);
  if (!diff.empty()) return fail(diff);
  if (a.result.rstd.size() == b.result.rstd.size())
    for (std::size_t i = 0; i < a.result.rstd.size(); ++i) {
      const float want = static_cast<float>(std::ldexp(static_cast<double>(a.result.rstd[i]), -k));
      if (float_bits(want) != float_bits(b.result.rstd[i]) && !(std::isnan(want) && std::isnan(b.result.rstd[i])))
        return fail("rstd[" + std::to_string(i) + "]: r(2^k x) = " + fmt("%a", b.result.rstd[i]) + " but 2^-k r(x) = " +
                    fmt("%a", want));
    }
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P6: zero rows — y = 0, dx = dy ⊙ w / sqrt(eps), never NaN for eps > 0
// ---------------------------------------------------------------------------------------------
CheckResult check_zero_rows(const Case& c, const Variant& v) {
  CheckResult r = check_acceptance(c, v);
  if (r.kind != Kind::pass) return r;
  if (c.is_forward()) {
    ForwardRun run;
    if (!run_case(c, v, run, r)) return r;
    const oracle::ForwardCase& fc = run.fc;
    const harness::RawForward& raw = run.raw;
    for (std::int64_t i = 0; i < c.rows; ++i) {
      bool zero_row = true;
      for (std::int64_t j = 0; j < c.dim; ++j) {
        const std::size_t e = static_cast<std::size_t>(i * c.dim + j);
        const float h = c.has_add() ? static_cast<float>(rmsnorm::round_to(static_cast<double>(fc.x[e]) + fc.o[e], c.x_type)) : fc.x[e];
        zero_row = zero_row && h == 0.0f;
      }
      if (!zero_row) continue;
      for (std::int64_t j = 0; j < c.dim; ++j) {
        const double y = rmsnorm::decode(raw.result.y[static_cast<std::size_t>(i * c.dim + j)], c.y_type);
        if (y != 0.0) return fail("zero row " + std::to_string(i) + ": y[" + std::to_string(j) + "] = " + fmt("%g", y));
      }
      if (!raw.result.rstd.empty() && !std::isfinite(raw.result.rstd[static_cast<std::size_t>(i)]))
        return fail("zero row " + std::to_string(i) + ": rstd is not finite with eps > 0");
    }
    return pass();
  }
  BackwardRun run;
  if (!run_case(c, v, run, r)) return r;
  const oracle::BackwardCase& bc = run.bc;
  const harness::RawBackward& raw = run.raw;
  for (std::int64_t i = 0; i < c.rows; ++i) {
    bool zero_row = true;
    for (std::int64_t j = 0; j < c.dim; ++j) zero_row = zero_row && bc.x[static_cast<std::size_t>(i * c.dim + j)] == 0.0f;
    if (!zero_row) continue;
    const double rr = 1.0 / std::sqrt(static_cast<double>(c.eps));  // exact r of a zero row
    for (std::int64_t j = 0; j < c.dim; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * c.dim + j);
      const double got = rmsnorm::decode(raw.result.dx[e], c.x_type);
      double want = rr * bc.dy[e] * weight_at(bc, j);
      if (!bc.dresidual.empty()) want += bc.dresidual[e];
      if (std::isnan(got)) return fail("zero row " + std::to_string(i) + ": dx[" + std::to_string(j) + "] is NaN");
      if (rmsnorm::round_to(want, c.x_type) != 0.0 && got == 0.0)
        return fail("zero row " + std::to_string(i) + ": dx[" + std::to_string(j) + "] = 0 but dy·g/sqrt(eps) = " +
                    fmt("%.6g", want));
    }
  }
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P7: FP16 ±300 .. 65504 stays finite (squares in fp32)
// ---------------------------------------------------------------------------------------------
CheckResult check_fp16_finite(const Case& c, const Variant& v) {
  CheckResult r = check_acceptance(c, v);
  if (r.kind != Kind::pass) return r;
  if (c.is_forward()) {
    ForwardRun run;
    if (!run_case(c, v, run, r)) return r;
    const harness::RawForward& raw = run.raw;
    for (std::size_t e = 0; e < raw.result.y.size(); ++e)
      if (!std::isfinite(rmsnorm::decode(raw.result.y[e], c.y_type)))
        return fail("y[" + std::to_string(e / c.dim) + "," + std::to_string(e % c.dim) + "] is not finite");
    for (float s : raw.result.rstd)
      if (!std::isfinite(s) || s == 0.0f) return fail("rstd not finite or zero: " + fmt("%a", s));
    return pass();
  }
  BackwardRun run;
  if (!run_case(c, v, run, r)) return r;
  const harness::RawBackward& raw = run.raw;
  for (std::size_t e = 0; e < raw.result.dx.size(); ++e)
    if (!std::isfinite(rmsnorm::decode(raw.result.dx[e], c.x_type)))
      return fail("dx[" + std::to_string(e / c.dim) + "," + std::to_string(e % c.dim) + "] is not finite");
  for (std::size_t j = 0; j < raw.result.dg.size(); ++j)
    if (!std::isfinite(rmsnorm::decode(raw.result.dg[j], c.dg_type))) return fail("dg[" + std::to_string(j) + "] is not finite");
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P10: Σ_j x_j dx_j = r·S·(1 − r²·m), S = Σ ĝ x, m = Σx²/D  (= eps·r³·S for the exact r)
// ---------------------------------------------------------------------------------------------
// With the fp32 r the backward is handed, the identity keeps the factor (1 − r²m) instead of
// r²·eps (they differ by the rounding of r). Tolerance: each dx_j may deviate from the exact
// r(ĝ_j − x̂_j c) by one ulp of its type plus the docs/contract.md#backward-bound accumulation bound
// 8u(|r ĝ_j| + (r³/D)|x_j|(k+d)Σ|ĝx|); weighted by |x_j| and summed.
CheckResult check_backward_identity(const Case& c, const Variant& v) {
  BackwardRun run;
  CheckResult res;
  if (!run_case(c, v, run, res)) return res;
  const oracle::BackwardCase& bc = run.bc;
  const harness::RawBackward& raw = run.raw;
  rmsnorm::AccumShape shape;
  if (const rmsnorm::Status refused = rmsnorm::judged_row_shape(v, c.dim, shape); !refused.ok()) {
    res.kind = CheckResult::Kind::fail;
    res.message = refused.reason;
    return res;
  }
  const double kd = static_cast<double>(shape.per_thread + shape.tree_depth);
  const double u = 0x1p-24;
  for (std::int64_t i = 0; i < c.rows; ++i) {
    const double r = bc.rstd[static_cast<std::size_t>(i)];
    double s = 0, s_abs = 0, sum_sq = 0, lhs = 0, lhs_abs = 0;
    for (std::int64_t j = 0; j < c.dim; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * c.dim + j);
      const double gh = bc.dy[e] * weight_at(bc, j), x = bc.x[e];
      s += gh * x;
      s_abs += std::fabs(gh * x);
      sum_sq += x * x;
    }
    const double m = sum_sq / static_cast<double>(c.dim);
    // A row whose exact dx overflows its type (fp16: r·dy·g beyond 65504) has no identity to check.
    bool overflows = false;
    for (std::int64_t j = 0; j < c.dim; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * c.dim + j);
      const double exact = r * (bc.dy[e] * weight_at(bc, j) - bc.x[e] * r * r * s / static_cast<double>(c.dim));
      overflows = overflows || !std::isfinite(rmsnorm::round_to(exact, c.x_type));
    }
    if (overflows) continue;
    double tol = 0;
    for (std::int64_t j = 0; j < c.dim; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * c.dim + j);
      const double x = bc.x[e], gh = bc.dy[e] * weight_at(bc, j);
      double dx = rmsnorm::decode(raw.result.dx[e], c.x_type);
      if (!bc.dresidual.empty()) dx -= bc.dresidual[e];  // the identity is about rmsnorm's part
      lhs += x * dx;
      lhs_abs += std::fabs(x * dx);
      const double exact = r * (gh - x * r * r * s / static_cast<double>(c.dim));
      const double bound = ulp_of(exact, c.x_type) +
                           8 * u * (std::fabs(r * gh) + r * r * r / static_cast<double>(c.dim) * std::fabs(x) * kd * s_abs);
      tol += std::fabs(x) * (bound + (bc.dresidual.empty() ? 0.0 : ulp_of(dx, c.x_type)));
    }
    const double rhs = r * s * (1.0 - r * r * m);
    tol += 1e-12 * (lhs_abs + r * s_abs * (1.0 + r * r * m));  // FP64 evaluation of both sides
    if (!std::isfinite(lhs) || !(std::fabs(lhs - rhs) <= tol))
      return fail("row " + std::to_string(i) + ": x·dx = " + fmt("%.9g", lhs) + " but r·S·(1 − r²m) = " +
                  fmt("%.9g", rhs) + " (tolerance " + fmt("%.3g", tol) + ")");
  }
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P11: determinism (repeat runs bitwise) and batch invariance (a row alone = inside a batch)
// ---------------------------------------------------------------------------------------------
template <typename T>
std::vector<T> slice(const std::vector<T>& v, std::int64_t begin, std::int64_t count) {
  if (v.empty()) return {};
  return std::vector<T>(v.begin() + begin, v.begin() + begin + count);
}

std::vector<std::int64_t> probe_rows(std::int64_t rows) {
  std::vector<std::int64_t> out;
  for (std::int64_t r : {std::int64_t{0}, rows / 2, rows - 1})
    if (r >= 0 && r < rows && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

// The rows of a [rows, dim] tensor repeated cyclically to `to` rows (empty stays empty).
template <typename T>
std::vector<T> repeat_rows(const std::vector<T>& v, std::int64_t dim, std::int64_t to) {
  if (v.empty()) return v;
  const std::int64_t rows = static_cast<std::int64_t>(v.size()) / dim;
  std::vector<T> out(static_cast<std::size_t>(to * dim));
  for (std::int64_t r = 0; r < to; ++r)
    std::copy_n(v.begin() + (r % rows) * dim, dim, out.begin() + r * dim);
  return out;
}

// A second batch for batch invariance: even and larger than 64 rows, so a reduction order that
// depends on R (parity, or "small R" tuning) shows between it and the row alone (R = 1).
std::int64_t wide_batch_rows(std::int64_t rows) { return 2 * std::max<std::int64_t>(rows, 49); }

CheckResult check_determinism(const Case& c, const Variant& v) {
  std::string err, diff;
  CheckResult res;
  if (c.is_forward()) {
    oracle::ForwardCase fc;
    if (!harness::forward_case(c, fc, err)) return fail("bad case: " + err);
    const harness::RawForward a = harness::execute_forward(v, fc, c.layout);
    if (!raw_ok(a, c, v, res)) return res;
    const harness::RawForward b = harness::execute_forward(v, fc, c.layout);
    if (!raw_ok(b, c, v, res)) return res;
    if (!(diff = compare_bits("y, run 1 vs run 2", a.result.y, b.result.y, c.dim)).empty()) return fail(diff);
    if (!(diff = compare_floats("rstd, run 1 vs run 2", a.result.rstd, b.result.rstd)).empty()) return fail(diff);
    if (!(diff = compare_bits("h, run 1 vs run 2", a.result.h, b.result.h, c.dim)).empty()) return fail(diff);
    if (!(diff = compare_floats("scale, run 1 vs run 2", a.result.scale, b.result.scale)).empty()) return fail(diff);
    const std::int64_t groups = c.quant == Quant::per_block ? rmsnorm::quant_groups(c.dim) : 1;
    for (std::int64_t i : probe_rows(c.rows)) {
      oracle::ForwardCase one = fc;
      one.rows = 1;
      one.x = slice(fc.x, i * c.dim, c.dim);
      one.o = slice(fc.o, i * c.dim, c.dim);
      const harness::RawForward alone = harness::execute_forward(v, one, c.layout);
      if (!raw_ok(alone, c, v, res)) return res;
      const std::string row = " (row " + std::to_string(i) + " alone vs in the batch of " + std::to_string(c.rows) + ")";
      if (!(diff = compare_bits("y", alone.result.y, slice(a.result.y, i * c.dim, c.dim), c.dim)).empty()) return fail(diff + row);
      if (!(diff = compare_floats("rstd", alone.result.rstd, slice(a.result.rstd, i, 1))).empty()) return fail(diff + row);
      if (!(diff = compare_bits("h", alone.result.h, slice(a.result.h, i * c.dim, c.dim), c.dim)).empty()) return fail(diff + row);
      if (c.quant == Quant::dynamic_token || c.quant == Quant::per_block)
        if (!(diff = compare_floats("scale", alone.result.scale, slice(a.result.scale, i * groups, groups))).empty())
          return fail(diff + row);
    }
    oracle::ForwardCase wide = fc;
    wide.rows = wide_batch_rows(c.rows);
    wide.x = repeat_rows(fc.x, c.dim, wide.rows);
    wide.o = repeat_rows(fc.o, c.dim, wide.rows);
    const harness::RawForward w = harness::execute_forward(v, wide, c.layout);
    if (!raw_ok(w, c, v, res)) return res;
    for (std::int64_t i : probe_rows(c.rows)) {
      const std::string row = " (row " + std::to_string(i) + " in the batch of " + std::to_string(c.rows) +
                              " vs in the batch of " + std::to_string(wide.rows) + ")";
      if (!(diff = compare_bits("y", slice(w.result.y, i * c.dim, c.dim), slice(a.result.y, i * c.dim, c.dim), c.dim)).empty())
        return fail(diff + row);
      if (!(diff = compare_floats("rstd", slice(w.result.rstd, i, 1), slice(a.result.rstd, i, 1))).empty())
        return fail(diff + row);
    }
    return pass();
  }
  oracle::BackwardCase bc;
  if (!harness::backward_case(c, bc, err)) return fail("bad case: " + err);
  fill_rstd(bc);
  const harness::RawBackward a = harness::execute_backward(v, bc, c.layout);
  if (!raw_ok(a, c, v, res)) return res;
  const harness::RawBackward b = harness::execute_backward(v, bc, c.layout);
  if (!raw_ok(b, c, v, res)) return res;
  if (!(diff = compare_bits("dx, run 1 vs run 2", a.result.dx, b.result.dx, c.dim)).empty()) return fail(diff);
  if (!(diff = compare_bits("dg, run 1 vs run 2", a.result.dg, b.result.dg, c.dim)).empty()) return fail(diff);
  for (std::int64_t i : probe_rows(c.rows)) {
    oracle::BackwardCase one = bc;
    one.rows = 1;
    one.x = slice(bc.x, i * c.dim, c.dim);
    one.dy = slice(bc.dy, i * c.dim, c.dim);
    one.dresidual = slice(bc.dresidual, i * c.dim, c.dim);
    one.rstd = slice(bc.rstd, i, 1);
    const harness::RawBackward alone = harness::execute_backward(v, one, c.layout);
    if (!raw_ok(alone, c, v, res)) return res;
    const std::string row = " (row " + std::to_string(i) + " alone vs in the batch of " + std::to_string(c.rows) + ")";
    if (!(diff = compare_bits("dx", alone.result.dx, slice(a.result.dx, i * c.dim, c.dim), c.dim)).empty()) return fail(diff + row);
  }
  oracle::BackwardCase wide = bc;
  wide.rows = wide_batch_rows(c.rows);
  wide.x = repeat_rows(bc.x, c.dim, wide.rows);
  wide.dy = repeat_rows(bc.dy, c.dim, wide.rows);
  wide.dresidual = repeat_rows(bc.dresidual, c.dim, wide.rows);
  wide.rstd = repeat_rows(bc.rstd, 1, wide.rows);
  const harness::RawBackward w = harness::execute_backward(v, wide, c.layout);
  if (!raw_ok(w, c, v, res)) return res;
  for (std::int64_t i : probe_rows(c.rows)) {
    const std::string row = " (row " + std::to_string(i) + " in the batch of " + std::to_string(c.rows) +
                            " vs in the batch of " + std::to_string(wide.rows) + ")";
    if (!(diff = compare_bits("dx", slice(w.result.dx, i * c.dim, c.dim), slice(a.result.dx, i * c.dim, c.dim), c.dim)).empty())
      return fail(diff + row);
  }
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P13: fused add equals add then norm; the residual is written as RN_x(h + o)
// ---------------------------------------------------------------------------------------------
CheckResult check_fused_add(const Case& c, const Variant& v) {
  if (c.op != Op::add_forward && c.op != Op::add_forward_quant) return check_acceptance(c, v);
  CheckResult r = check_acceptance(c, v);
  if (r.kind != Kind::pass) return r;
  std::string diff;
  ForwardRun run;
  if (!run_case(c, v, run, r)) return r;
  const oracle::ForwardCase& fc = run.fc;
  const harness::RawForward& fused = run.raw;
  if (!(diff = compare_bits("residual h vs RN(h + o)", fused.result.h, oracle::residual_rounded(fc), c.dim)).empty())
    return fail(diff);
  const Op plain = c.op == Op::add_forward ? Op::forward : Op::forward_quant;
  if (!v.supports(plain)) return pass();
  oracle::ForwardCase separate = fc;
  separate.o.clear();
  for (std::size_t e = 0; e < separate.x.size(); ++e)
    separate.x[e] = static_cast<float>(rmsnorm::decode(fused.result.h[e], c.x_type));
  harness::Layout layout = c.layout;
  layout.in_place = false;
  layout.o_pad = layout.o_offset = 0;
  const harness::RawForward norm = harness::execute_forward(v, separate, layout);
  if (!norm.status.ok()) return pass();  // the plain path may have other limits: oracle-checked above
  if (!norm.guard_violation.empty()) return fail("guard band (plain forward): " + norm.guard_violation);
  if (!(diff = compare_bits("y fused vs y of norm(RN(h + o))", fused.result.y, norm.result.y, c.dim)).empty()) return fail(diff);
  if (!(diff = compare_floats("rstd fused vs separate", fused.result.rstd, norm.result.rstd)).empty()) return fail(diff);
  if (!(diff = compare_floats("scale fused vs separate", fused.result.scale, norm.result.scale)).empty()) return fail(diff);
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P14: FP8 — saturation, zero rows, per-block groups, finite scales
// ---------------------------------------------------------------------------------------------
CheckResult check_fp8(const Case& c, const Variant& v) {
  CheckResult r = check_acceptance(c, v);
  if (r.kind != Kind::pass || !c.has_quant()) return r;
  ForwardRun run;
  if (!run_case(c, v, run, r)) return r;
  const oracle::ForwardCase& fc = run.fc;
  const harness::RawForward& raw = run.raw;
  // Saturation makes every q finite on rows inside the guaranteed domain: rows whose input (or,
  // under fused add, whose rounded residual h + o) holds a NaN or an infinity are exempt.
  auto row_in_domain = [&](std::int64_t r) {
    for (std::int64_t j = 0; j < c.dim; ++j) {
      const std::size_t i = static_cast<std::size_t>(r * c.dim + j);
      double h = fc.x[i];
      if (!fc.o.empty()) h = rmsnorm::round_to(h + static_cast<double>(fc.o[i]), c.x_type);
      if (!std::isfinite(h)) return false;
    }
    return true;
  };
  for (std::size_t e = 0; e < raw.result.y.size(); ++e) {
    const std::int64_t row = static_cast<std::int64_t>(e) / c.dim;
    if (!std::isfinite(rmsnorm::decode(raw.result.y[e], c.y_type)) && row_in_domain(row)) {
      char bits[16];
      std::snprintf(bits, sizeof bits, "0x%02x", static_cast<unsigned>(raw.result.y[e]));
      return fail("q[" + std::to_string(row) + "," + std::to_string(static_cast<std::int64_t>(e) % c.dim) + "] = " +
                  bits + " is not finite (saturation is the contract)");
    }
  }
  // Scales: one per row (dynamic) or per row and group (per block); rows outside the domain exempt
  // as above (an infinite h gives Σh² = inf, r = 0 and y = inf·0 = NaN, hence a NaN amax).
  const std::size_t per_row = c.rows > 0 ? raw.result.scale.size() / static_cast<std::size_t>(c.rows) : 1;
  for (std::size_t i = 0; i < raw.result.scale.size(); ++i)
    if ((!std::isfinite(raw.result.scale[i]) || !(raw.result.scale[i] > 0.0f)) &&
        row_in_domain(static_cast<std::int64_t>(i / std::max<std::size_t>(per_row, 1))))
      return fail("scale[" + std::to_string(i) + "] = " + fmt("%g", raw.result.scale[i]) + " is not finite and positive");
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P16: NaN/Inf reach only their own row
// ---------------------------------------------------------------------------------------------
CheckResult check_confinement(const Case& c, const Variant& v) {
  std::string err, diff;
  CheckResult res;
  auto row_special = [&](const std::vector<float>& a, std::int64_t i) {
    for (std::int64_t j = 0; j < c.dim && !a.empty(); ++j)
      if (!std::isfinite(a[static_cast<std::size_t>(i * c.dim + j)])) return true;
    return false;
  };
  auto clean_rows = [&](std::vector<float>& a, const std::vector<bool>& special) {
    for (std::int64_t i = 0; i < c.rows && !a.empty(); ++i)
      if (special[static_cast<std::size_t>(i)])
        for (std::int64_t j = 0; j < c.dim; ++j) a[static_cast<std::size_t>(i * c.dim + j)] = 1.0f;
  };
  std::vector<bool> special(static_cast<std::size_t>(c.rows));
  if (c.is_forward()) {
    oracle::ForwardCase fc;
    if (!harness::forward_case(c, fc, err)) return fail("bad case: " + err);
    for (std::int64_t i = 0; i < c.rows; ++i) special[static_cast<std::size_t>(i)] = row_special(fc.x, i) || row_special(fc.o, i);
    const harness::RawForward dirty = harness::execute_forward(v, fc, c.layout);
    if (!raw_ok(dirty, c, v, res)) return res;
    oracle::ForwardCase clean = fc;
    clean_rows(clean.x, special);
    clean_rows(clean.o, special);
    const harness::RawForward ref = harness::execute_forward(v, clean, c.layout);
    if (!raw_ok(ref, c, v, res)) return res;
    const std::int64_t groups = c.quant == Quant::per_block ? rmsnorm::quant_groups(c.dim) : 1;
    for (std::int64_t i = 0; i < c.rows; ++i) {
      if (special[static_cast<std::size_t>(i)]) continue;
      const std::string row = " (row " + std::to_string(i) + " is finite; another row holds NaN/Inf)";
      if (!(diff = compare_bits("y", slice(dirty.result.y, i * c.dim, c.dim), slice(ref.result.y, i * c.dim, c.dim), c.dim)).empty())
        return fail(diff + row);
      if (!(diff = compare_floats("rstd", slice(dirty.result.rstd, i, 1), slice(ref.result.rstd, i, 1))).empty()) return fail(diff + row);
      if (!(diff = compare_bits("h", slice(dirty.result.h, i * c.dim, c.dim), slice(ref.result.h, i * c.dim, c.dim), c.dim)).empty())
        return fail(diff + row);
      if (c.quant == Quant::dynamic_token || c.quant == Quant::per_block)
        if (!(diff = compare_floats("scale", slice(dirty.result.scale, i * groups, groups), slice(ref.result.scale, i * groups, groups))).empty())
          return fail(diff + row);
    }
    return pass();
  }
  oracle::BackwardCase bc;
  if (!harness::backward_case(c, bc, err)) return fail("bad case: " + err);
  for (std::int64_t i = 0; i < c.rows; ++i) special[static_cast<std::size_t>(i)] = row_special(bc.x, i) || row_special(bc.dy, i);
  oracle::BackwardCase clean = bc;
  clean_rows(clean.x, special);
  clean_rows(clean.dy, special);
  fill_rstd(clean);
  // The same r for the finite rows in both runs; NaN where the row holds NaN/Inf.
  bc.rstd = clean.rstd;
  for (std::int64_t i = 0; i < c.rows; ++i)
    if (special[static_cast<std::size_t>(i)]) bc.rstd[static_cast<std::size_t>(i)] = std::numeric_limits<float>::quiet_NaN();
  const harness::RawBackward dirty = harness::execute_backward(v, bc, c.layout);
  if (!raw_ok(dirty, c, v, res)) return res;
  const harness::RawBackward ref = harness::execute_backward(v, clean, c.layout);
  if (!raw_ok(ref, c, v, res)) return res;
  for (std::int64_t i = 0; i < c.rows; ++i) {
    if (special[static_cast<std::size_t>(i)]) continue;
    if (!(diff = compare_bits("dx", slice(dirty.result.dx, i * c.dim, c.dim), slice(ref.result.dx, i * c.dim, c.dim), c.dim)).empty())
      return fail(diff + " (row " + std::to_string(i) + " is finite; another row holds NaN/Inf)");
  }
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P17: invalid arguments return the right status and touch nothing
// ---------------------------------------------------------------------------------------------
struct Buffers {
  std::vector<unsigned char> x, o, y, g, dy, dx, dres, dg;
  std::vector<float> rstd, scale;
  std::vector<unsigned char> workspace;
  bool operator==(const Buffers& b) const {
    return x == b.x && o == b.o && y == b.y && g == b.g && dy == b.dy && dx == b.dx && dres == b.dres && dg == b.dg &&
           std::memcmp(rstd.data(), b.rstd.data(), rstd.size() * 4) == 0 &&
           std::memcmp(scale.data(), b.scale.data(), scale.size() * 4) == 0;
  }
};

enum Violation : int {
  v_dim0, v_stride, v_eps_negative, v_eps_nan, v_eps_inf, v_rows_negative, v_null_x, v_null_g, v_bad_g_type,
  v_x_fp8, v_overlap, v_out_type, v_null_out, v_null_aux, v_kinds
};
const char* kViolationNames[v_kinds] = {"D = 0", "stride < D", "eps < 0", "eps NaN", "eps inf", "R < 0", "x null",
                                        "g null", "g of a third type", "x in fp8", "output overlaps x",
                                        "output type mismatch", "output null", "scale/rstd null"};

CheckResult check_invalid_arguments(const Case& c, const Variant& v) {
  const int which = static_cast<int>(param(c, "violation", 0)) % v_kinds;
  // An output one element into x overlaps it only where x's row holds two elements or more.
  const std::int64_t rows = std::max<std::int64_t>(c.rows, 1), dim = which == v_overlap ? std::max<std::int64_t>(c.dim, 2) : c.dim;
  const std::int64_t stride = dim + 1;
  const std::size_t xs = rmsnorm::size_of(c.x_type);
  const std::size_t span = static_cast<std::size_t>(rows * stride + 16) * 4;
  Buffers buf;
  for (auto* b : {&buf.x, &buf.o, &buf.y, &buf.g, &buf.dy, &buf.dx, &buf.dres, &buf.dg}) b->assign(span, 0x3c);
  buf.rstd.assign(static_cast<std::size_t>(rows) + 4, 0.5f);
  buf.scale.assign(static_cast<std::size_t>(rows * rmsnorm::quant_groups(dim)) + 4, 0.25f);
  buf.workspace.assign(1 << 16, 0);
  const Buffers before = buf;
  const DType other16 = c.x_type == DType::bf16 ? DType::f16 : DType::bf16;
  Status::Code expected = Status::Code::invalid_argument;
  Status got, cap;
  if (c.is_forward()) {
    rmsnorm::ForwardArgs a;
    a.rows = rows;
    a.dim = dim;
    a.x = {buf.x.data(), c.x_type, stride};
    if (c.has_add()) a.o = {buf.o.data(), c.x_type, stride};
    a.y = {buf.y.data(), c.y_type, stride};
    a.g = buf.g.data();
    a.g_type = c.g_type;
    a.rstd = buf.rstd.data();
    a.eps = c.eps;
    a.convention = Convention::standard;
    a.quant = c.has_quant() ? c.quant : Quant::none;
    a.scale = c.has_quant() ? buf.scale.data() : nullptr;
    switch (which) {
      case v_dim0: a.dim = 0; break;
      case v_stride: a.x.stride = dim - 1; break;
      case v_eps_negative: a.eps = -1e-6f; break;
      case v_eps_nan: a.eps = std::numeric_limits<float>::quiet_NaN(); break;
      case v_eps_inf: a.eps = std::numeric_limits<float>::infinity(); break;
      case v_rows_negative: a.rows = -1; break;
      case v_null_x: a.x.data = nullptr; break;
      case v_null_g: a.g = nullptr; break;
      case v_bad_g_type: a.g_type = c.x_type == DType::f32 ? DType::bf16 : other16; break;
      case v_x_fp8: a.x.type = DType::e4m3; break;
      case v_overlap:
        // y starts one element into x: a partial overlap, never legal.
        a.y.data = buf.x.data() + xs;
        a.y.type = c.x_type;
        if (a.quant != Quant::none) a.y.type = c.y_type, a.y.data = buf.x.data() + 1;
        expected = Status::Code::bad_overlap;
        break;
      case v_out_type: a.y.type = a.quant == Quant::none ? (c.x_type == DType::f32 ? DType::bf16 : DType::f32) : c.x_type; break;
      case v_null_out: a.y.data = nullptr; break;
      case v_null_aux:
        if (a.quant == Quant::none) return not_applicable("no scale without quantization");
        a.scale = nullptr;
        break;
      default: break;
    }
    const Status contract = rmsnorm::validate(a);
    if (contract.ok() || contract.code != expected)
      return fail(std::string("test bug: rmsnorm::validate says ") + rmsnorm::to_string(contract.code) + " for '" +
                  kViolationNames[which] + "'");
    if (v.can_implement_forward) cap = v.can_implement_forward(a);
    got = v.run_forward ? v.run_forward(a) : Status::fail(Status::Code::unsupported, "no forward");
  } else {
    rmsnorm::BackwardArgs a;
    a.rows = rows;
    a.dim = dim;
    a.x = {buf.x.data(), c.x_type, stride};
    a.dy = {buf.dy.data(), c.x_type, stride};
    a.dx = {buf.dx.data(), c.x_type, stride};
    if (c.op == Op::add_backward) a.dresidual = {buf.dres.data(), c.x_type, stride};
    a.g = buf.g.data();
    a.g_type = c.g_type;
    a.rstd = buf.rstd.data();
    a.dg = buf.dg.data();
    a.dg_type = DType::f32;
    a.eps = c.eps;
    a.workspace = buf.workspace.data();
    a.workspace_bytes = buf.workspace.size();
    switch (which) {
      case v_dim0: a.dim = 0; break;
      case v_stride: a.dy.stride = dim - 1; break;
      case v_eps_negative: a.eps = -1e-6f; break;
      case v_eps_nan: a.eps = std::numeric_limits<float>::quiet_NaN(); break;
      case v_eps_inf: a.eps = std::numeric_limits<float>::infinity(); break;
      case v_rows_negative: a.rows = -1; break;
      case v_null_x: a.x.data = nullptr; break;
      case v_null_g: a.g = nullptr; break;
      case v_bad_g_type: a.g_type = c.x_type == DType::f32 ? DType::bf16 : other16; break;
      case v_x_fp8: a.x.type = a.dy.type = a.dx.type = DType::e4m3; break;
      case v_overlap:
        a.dx.data = buf.x.data() + xs;
        expected = Status::Code::bad_overlap;
        break;
      case v_out_type: a.dx.type = c.x_type == DType::f32 ? DType::bf16 : DType::f32; break;
      case v_null_out: a.dx.data = nullptr; break;
      case v_null_aux: a.rstd = nullptr; break;
      default: break;
    }
    const Status contract = rmsnorm::validate(a);
    if (contract.ok() || contract.code != expected)
      return fail(std::string("test bug: rmsnorm::validate says ") + rmsnorm::to_string(contract.code) + " for '" +
                  kViolationNames[which] + "'");
    if (v.can_implement_backward) cap = v.can_implement_backward(a);
    got = v.run_backward ? v.run_backward(a) : Status::fail(Status::Code::unsupported, "no backward");
  }
  const std::string what = std::string("'") + kViolationNames[which] + "': ";
  if (got.code == Status::Code::no_device) return not_applicable("no device: " + got.reason);
  if (got.code != expected)
    return fail(what + "status " + rmsnorm::to_string(got.code) + " (" + got.reason + "), expected " +
                rmsnorm::to_string(expected));
  if (got.reason.empty()) return fail(what + "rejected without a reason");
  if (cap.ok() && (v.can_implement_forward || v.can_implement_backward))
    return fail(what + "can_implement() accepted arguments that violate the contract");
  if (!(buf == before)) return fail(what + "a buffer was written although the arguments were rejected");
  return pass();
}

// ---------------------------------------------------------------------------------------------
// P19: in place (y = x, dx = dy) equals out of place, bitwise
// ---------------------------------------------------------------------------------------------
CheckResult check_in_place(const Case& c, const Variant& v) {
  std::string err, diff;
  CheckResult res;
  harness::Layout apart = c.layout, alias = c.layout;
  apart.in_place = false;
  alias.in_place = true;
  if (c.op == Op::forward) alias.y_pad = alias.x_pad, alias.y_offset = alias.x_offset;
  if (c.op == Op::add_forward) alias.y_pad = alias.o_pad, alias.y_offset = alias.o_offset;
  if (!c.is_forward()) alias.dx_pad = alias.dy_pad, alias.dx_offset = alias.dy_offset;
  if (c.is_forward()) {
    oracle::ForwardCase fc;
    if (!harness::forward_case(c, fc, err)) return fail("bad case: " + err);
    const harness::RawForward a = harness::execute_forward(v, fc, apart);
    if (!raw_ok(a, c, v, res)) return res;
    const harness::RawForward b = harness::execute_forward(v, fc, alias);
    if (!b.status.ok()) return judge_rejection(b.status, c, v);
    if (!b.guard_violation.empty()) return fail("guard band (in place): " + b.guard_violation);
    if (!(diff = compare_bits("y out of place vs in place", a.result.y, b.result.y, c.dim)).empty()) return fail(diff);
    if (!(diff = compare_floats("rstd out of place vs in place", a.result.rstd, b.result.rstd)).empty()) return fail(diff);
    if (!(diff = compare_bits("h out of place vs in place", a.result.h, b.result.h, c.dim)).empty()) return fail(diff);
    return pass();
  }
  oracle::BackwardCase bc;
  if (!harness::backward_case(c, bc, err)) return fail("bad case: " + err);
  fill_rstd(bc);
  const harness::RawBackward a = harness::execute_backward(v, bc, apart);
  if (!raw_ok(a, c, v, res)) return res;
  const harness::RawBackward b = harness::execute_backward(v, bc, alias);
  if (!b.status.ok()) return judge_rejection(b.status, c, v);
  if (!b.guard_violation.empty()) return fail("guard band (in place): " + b.guard_violation);
  if (!(diff = compare_bits("dx out of place vs in place", a.result.dx, b.result.dx, c.dim)).empty()) return fail(diff);
  if (!(diff = compare_bits("dg out of place vs in place", a.result.dg, b.result.dg, c.dim)).empty()) return fail(diff);
  return pass();
}

// P18 needs R·stride > 2^31 elements: refuse politely when the host lacks the memory.
CheckResult check_large_offsets(const Case& c, const Variant& v) {
  // P18's two rows 2^31 elements apart are strided; a variant of packed rows only takes R·D >
  // 2^31 as 2^18+ rows, which the oracle cannot judge in a property's time. Its 64-bit offsets
  // are the GPU test's ("64-bit offsets: a bf16 backward with R*D > 2^31 elements": 524352 packed
  // rows of 4096, every row's dx bitwise its pattern row's, run on every CUDA backward variant).
  if (v.packed_rows) return not_applicable(kP18PackedRows);
  if (v.memory == rmsnorm::Memory::host) {
    // One in-place buffer (forward) or two (backward: x, and dy = dx), plus 1 GiB of slack.
    const std::int64_t stride = c.dim + std::max(c.layout.x_pad, c.layout.dy_pad);
    const double span = static_cast<double>((c.rows - 1) * stride + c.dim) * static_cast<double>(rmsnorm::size_of(c.x_type));
    const double need = span * (c.is_forward() ? 1.0 : 2.0) + 1073741824.0;
    const double have = static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    if (have < need) return not_applicable(fmt("needs %.1f GiB of free host memory", need / 1073741824.0) +
                                           fmt(", %.1f GiB free", have / 1073741824.0));
  }
  return check_acceptance(c, v);
}

// ---------------------------------------------------------------------------------------------
// Domains
// ---------------------------------------------------------------------------------------------

const std::vector<Regime> kFinite = {Regime::normal, Regime::mixed, Regime::tiny, Regime::constant, Regime::outliers,
                                     Regime::large, Regime::subnormal, Regime::huge, Regime::zeros};
const std::vector<Op> kForwardOps = {Op::forward, Op::add_forward, Op::forward_quant, Op::add_forward_quant};
const std::vector<Op> kBackwardOps = {Op::backward, Op::add_backward};
const std::vector<Op> kAllOps = {Op::forward, Op::backward, Op::add_forward, Op::forward_quant, Op::add_forward_quant,
                                 Op::add_backward};

std::vector<Op> ops_for(const PropertyInfo& p, const Variant* v) {
  std::vector<Op> ops;
  for (Op op : p.ops)
    if (!v || v->supports(op)) ops.push_back(op);
  return ops.empty() ? p.ops : ops;
}

}  // namespace

const std::vector<PropertyInfo>& catalog() {
  static const std::vector<PropertyInfo> all = {
      {"P1", "forward outputs lie in the oracle's acceptance set for every type, width, shape and layout",
       {Op::forward}},
      {"P2", "backward dx and dg lie within their magnitude-weighted bounds", kBackwardOps},
      {"P3", "the oracle's gradient equals central differences of its forward", {Op::backward}, true},
      {"P4", "scaling x by 2^k and eps by 4^k leaves y bitwise unchanged and scales r by 2^-k", {Op::forward}},
      {"P5", "eps sits inside the square root: eps-dominated rows match the exact answer", {Op::forward, Op::backward}},
      {"P6", "a zero row gives y = 0 and dx = dy*g/sqrt(eps), never NaN for eps > 0",
       {Op::forward, Op::add_forward, Op::backward, Op::add_backward}},
      {"P7", "fp16 inputs of +-300 up to 65504 give finite outputs (squares in fp32)",
       {Op::forward, Op::add_forward, Op::forward_quant, Op::backward}},
      {"P8", "strided rows with poisoned gaps and misaligned bases give accepted outputs and untouched gaps", kAllOps},
      {"P9", "every width residue mod 8 (and mod 128 for per-block FP8) is handled by the tail", kAllOps},
      // add_backward's dx is RN(dx + dresidual): one rounding of the sum hides the identity.
      {"P10", "x.dx equals r*S*(1 - r^2 m), i.e. eps*r^3*sum(g dy x), within its bound", {Op::backward}},
      {"P11", "outputs are bitwise identical run to run and a row alone equals the row inside a batch", kAllOps},
      {"P12", "with a different gamma per channel over many tokens dg sums each column over the tokens",
       kBackwardOps},
      {"P13", "fused add equals add then norm bitwise and writes the residual RN(h + o)",
       {Op::add_forward, Op::add_forward_quant}},
      {"P14", "FP8 saturates at the format's max, zero rows give q = 0 with finite scales, per-block groups are exact",
       {Op::forward_quant, Op::add_forward_quant}},
      {"P15", "no poisoned byte before, after or between the rows of any buffer is ever written", kAllOps},
      {"P16", "NaN and Inf in a row reach only that row", kAllOps},
      {"P17", "invalid arguments return the contract's status with a reason and touch no buffer", kAllOps},
      {"P18", "64-bit offsets: rows beyond 2^31 elements from the base are read and written correctly",
       {Op::forward, Op::backward}, false, 2},
      {"P19", "in place (y = x, dx = dy) equals out of place bitwise",
       {Op::forward, Op::add_forward, Op::backward, Op::add_backward}},
      {"P20", "each call computes from its own inputs: a second case of the same shape right after the first is judged on its own values",
       kAllOps},
  };
  return all;
}

const PropertyInfo* find_property(const std::string& id) {
  for (const PropertyInfo& p : catalog())
    if (p.id == id) return &p;
  return nullptr;
}

bool applies(const PropertyInfo& p, const Variant& v) {
  if (p.oracle_only) return false;
  for (Op op : p.ops)
    if (v.supports(op)) return true;
  return false;
}

namespace {

// What property p draws for variant v (v null: for any variant), before it is aimed at v.
Domain property_domain(const PropertyInfo& p, const Variant* v) {
  Domain d;
  d.ops = ops_for(p, v);
  const std::string& id = p.id;
  if (id == "P1") {
    d.ops = {Op::forward};
  } else if (id == "P3") {
    d.ops = {Op::backward};
    d.x_types = {DType::f32, DType::bf16, DType::f16};
    d.conventions = {Convention::standard, Convention::gemma, Convention::no_weight};
    d.x_regimes = {Regime::normal, Regime::tiny, Regime::outliers, Regime::constant};
    d.eps_values = {1e-6f, 1e-5f, 0.1f, 0.0f};
    d.dims = Domain::Dims::small;
    d.max_rows = 4;
    d.min_rows = 1;
    d.layouts = false;
  } else if (id == "P4") {
    d.ops = {Op::forward};
    d.x_regimes = {Regime::normal, Regime::outliers, Regime::constant, Regime::tiny, Regime::mixed, Regime::large};
  } else if (id == "P5") {
    d.x_regimes = {Regime::tiny};
    d.eps_values = {1e-5f, 1e-6f, 0.1f};
  } else if (id == "P6") {
    d.x_regimes = {Regime::zeros, Regime::mixed};
    d.eps_values = {1e-6f, 1e-5f, 0.1f, 1000.0f};
    d.min_rows = 1;
  } else if (id == "P7") {
    d.x_types = {DType::f16};
    // ±300..65504 rows only: a tiny row (r ~ 1e4) times a large dy legitimately overflows fp16.
    d.x_regimes = {Regime::large};
    d.g_regimes = {Regime::random, Regime::ones};
    d.dy_regimes = {Regime::normal, Regime::ones};
    d.quants = {Quant::dynamic_token, Quant::per_block};
    d.min_rows = 1;
  } else if (id == "P8" || id == "P15") {
    d.force_layout = true;
    d.min_rows = 1;
  } else if (id == "P9") {
    d.dims = Domain::Dims::tails8;
    d.min_rows = 1;
  } else if (id == "P10") {
    d.conventions = {Convention::standard, Convention::gemma, Convention::no_weight};
    d.x_regimes = {Regime::normal, Regime::mixed, Regime::tiny, Regime::outliers, Regime::constant, Regime::zeros};
    d.eps_values = {1e-6f, 0.0f, 1e-5f, 0.1f};
    d.min_rows = 1;
  } else if (id == "P11") {
    d.max_rows = 64;
    d.min_rows = 1;
    // Half the draws in fp32: a reduction order that changes with R moves the row's sum by an
    // fp32 ulp or so, which an fp32 output keeps and a 16-bit output rounds away almost always
    // (the backward's dx shows it only through c = Σĝx̂/D; the forward also shows it in rstd).
    d.x_types = {DType::f32, DType::f32, DType::bf16, DType::f16};
  } else if (id == "P12") {
    d.g_regimes = {Regime::per_channel};
    d.dims = Domain::Dims::small;
    d.min_rows = 64;
    d.max_rows = 512;
    d.max_elements = 1 << 15;
  } else if (id == "P13") {
    d.min_rows = 1;
  } else if (id == "P14") {
    d.x_regimes = {Regime::normal, Regime::zeros, Regime::large, Regime::mixed, Regime::outliers, Regime::tiny};
    d.dims = Domain::Dims::tails128;
    d.min_rows = 1;
  } else if (id == "P16") {
    d.x_regimes = {Regime::special};
    d.min_rows = 2;
    d.max_rows = 32;
  } else if (id == "P17") {
    d.dims = Domain::Dims::small;
    d.max_rows = 4;
    d.layouts = false;
    d.in_place = false;
  } else if (id == "P18") {
    d.x_types = {DType::bf16};
    d.conventions = {Convention::standard};
    d.dims = Domain::Dims::small;
    d.layouts = false;
    d.in_place = false;
    if (v && v->memory == rmsnorm::Memory::host) d.ops = {Op::forward};  // 4 GiB, in place
  } else if (id == "P19") {
    d.in_place = false;  // the check makes both layouts itself
  }
  return d;
}

}  // namespace

std::string not_applicable_to(const PropertyInfo& p, const Variant& v) {
  if (p.oracle_only) return p.id + " checks the oracle itself, no variant";
  if (!applies(p, v)) return v.name + " implements none of " + p.id + "'s ops";
  if (p.id == "P18" && v.packed_rows) return kP18PackedRows;
  Domain d = property_domain(p, &v);
  if (std::none_of(d.ops.begin(), d.ops.end(), [&](Op op) { return v.supports(op); }))
    return p.id + " runs only " + rmsnorm::to_string(d.ops.front()) + " on " + v.name;
  return d.aim_at(v);
}

harness::Case draw_property_case(const PropertyInfo& p, Chooser& ch, const Variant* v) {
  Domain d = property_domain(p, v);
  // Every draw for a variant lies inside what it implements (Domain::aim_at); a property whose
  // domain misses the variant's claims is not applicable to it (not_applicable_to) and draws
  // unaimed cases only when asked to.
  if (v != nullptr && d.aim_at(*v).empty()) d.target_always = true;
  const std::string& id = p.id;
  harness::Case c = generators::draw_case(ch, d);
  c.property = id;
  if (id == "P9" && c.has_quant() && c.quant == Quant::per_block && ch.pick({1, 1}) == 1) {
    // Half the per-block cases probe residues mod 128 instead of mod 8.
    const std::int64_t dim = 128 * ch.between(0, 8) + ch.between(1, 127);
    c.dim = generators::aim_dim(d, c.op, c.x_type, dim, 128);
    c.rows = std::min<std::int64_t>(std::max<std::int64_t>(c.rows, 1), std::max<std::int64_t>(1, d.max_elements / c.dim));
    if (d.target_aligned && d.layouts) generators::align_rows(c);
  }
  if (id == "P4") {
    const std::int64_t k = ch.between(1, 8) * (ch.pick({1, 1}) ? -1 : 1);
    c.property_params["k"] = std::to_string(k);
  }
  // Keep h + o inside the type's range.
  if (c.has_add() && c.is_forward() && (c.x_regime == "large" || c.x_regime == "huge" || c.x_regime == "mixed"))
    c.o_regime = "tiny";
  if (id == "P17") {
    // A null scale or rstd (the last violation) is one only where the op needs it: the FP8 forms
    // and the backward (a plain forward may leave rstd null).
    const bool aux = !c.is_forward() || c.has_quant();
    c.property_params["violation"] = std::to_string(ch.between(0, aux ? v_kinds - 1 : v_null_aux - 1));
  }
  if (id == "P18") {
    c.rows = 2;
    // Two thirds of the widths are multiples of 8, so that the vector paths (which need 16-byte
    // row starts: the 2^31 pad keeps them when D·size is a multiple of 16) run the case too.
    // An aligned target gets only those: the pad cannot align the rows of other widths.
    const bool vector_width = ch.pick({2, 1}) == 0;
    const std::int64_t vec = c.has_quant() ? 16 : 8;  // an FP8 y keeps 16-byte rows too
    if (vector_width || d.target_aligned) c.dim = generators::aim_dim(d, c.op, c.x_type, (c.dim + vec - 1) / vec * vec, vec);
    // Row 1 starts 2^31 + D elements past the base: any 32-bit offset arithmetic wraps.
    c.layout = harness::Layout{};
    if (c.is_forward()) {
      c.layout.x_pad = (std::int64_t{1} << 31);
      c.layout.in_place = true;
      c.layout.y_pad = c.layout.x_pad;
    } else {
      c.layout.x_pad = c.layout.dy_pad = (std::int64_t{1} << 31);
      c.layout.in_place = true;
      c.layout.dx_pad = c.layout.dy_pad;
    }
  }
  return c;
}

CheckResult check_oracle_case(const harness::Case& c) {
  std::string err;
  if (c.property == "P3") {
    oracle::BackwardCase bc;
    if (!harness::backward_case(c, bc, err)) return fail("bad case: " + err);
    const oracle::GradientCheck g = oracle::check_gradient_central(bc);
    if (!g.pass) return fail("central differences disagree: " + g.first_failure + fmt(" (max rel dx %.3g", g.max_rel_dx) +
                             fmt(", dg %.3g)", g.max_rel_dg));
    return check_expectations_backward(c, bc, nullptr);
  }
  if (c.is_forward()) {
    oracle::ForwardCase fc;
    if (!harness::forward_case(c, fc, err)) return fail("bad case: " + err);
    return check_expectations_forward(c, fc, nullptr);
  }
  oracle::BackwardCase bc;
  if (!harness::backward_case(c, bc, err)) return fail("bad case: " + err);
  return check_expectations_backward(c, bc, nullptr);
}

CheckResult check_case(const harness::Case& c, const Variant& v) {
  if (!v.supports(c.op)) return not_applicable(v.name + " does not support " + rmsnorm::to_string(c.op));
  if (v.external && !v.in_process) {
    // A plugin kernel may crash the process: name the case first, for the certificate.
    harness::Case named = c;
    named.variant = v.name;
    std::fprintf(stderr, "%s%s\n", harness::kCaseMarker, harness::one_line(named).c_str());
    std::fflush(stderr);
  }
  const std::string& p = c.property;
  if (p == "P3") return check_oracle_case(c);
  if (p == "P4") return check_scale_invariance(c, v);
  if (p == "P6") return check_zero_rows(c, v);
  if (p == "P7") return check_fp16_finite(c, v);
  if (p == "P10") return check_backward_identity(c, v);
  if (p == "P11") return check_determinism(c, v);
  if (p == "P13") return check_fused_add(c, v);
  if (p == "P14") return check_fp8(c, v);
  if (p == "P16") return check_confinement(c, v);
  if (p == "P17") return check_invalid_arguments(c, v);
  if (p == "P18") return check_large_offsets(c, v);
  if (p == "P19") return check_in_place(c, v);
  if (p == "P20") return check_fresh_inputs(c, v);
  if (p.empty() || p == "P1" || p == "P2" || p == "P5" || p == "P8" || p == "P9" || p == "P12" || p == "P15")
    return check_acceptance(c, v);
  return fail("unknown property '" + p + "'");
}

std::vector<std::string> coverage_tags(const harness::Case& c) {
  std::vector<std::string> t;
  t.push_back(std::string("op=") + rmsnorm::to_string(c.op));
  t.push_back(std::string("x=") + rmsnorm::to_string(c.x_type));
  t.push_back(std::string("conv=") + rmsnorm::to_string(c.convention));
  if (c.has_quant()) t.push_back(std::string("quant=") + rmsnorm::to_string(c.quant) + "/" + rmsnorm::to_string(c.y_type));
  t.push_back("eps=" + fmt("%g", c.eps));
  t.push_back(generators::dim_class(c.dim));
  t.push_back("D%8=" + std::to_string(c.dim % 8));
  t.push_back(generators::rows_class(c.rows));
  t.push_back(generators::layout_class(c.layout));
  if (!c.generator.empty()) t.push_back("x." + c.x_regime);
  return t;
}

std::vector<const Variant*> variants_for(const harness::Case& c) {
  const bool mutants = c.variant.compare(0, 7, "mutant.") == 0;
  std::vector<const Variant*> out;
  for (const Variant* v : rmsnorm::match_variants(c.variant))
    if ((mutants || !v->is_mutant()) && v->supports(c.op)) out.push_back(v);
  return out;
}

}  // namespace properties
