// libFuzzer target: bytes → a small case (op, shape, types, eps, layout, values from raw bits)
// → the oracle's validation and judgement, and the host reference run inside guard bands.
// Asserts: nothing crashes (ASan/UBSan watch the oracle, the harness and the host variant), and
// host.reference — the contract's reference — passes every valid case.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness/case_file.h"
#include "harness/run.h"
#include "oracle/oracle.h"
#include "rmsnorm/formats.h"
#include "rmsnorm/variant.h"

namespace {

using rmsnorm::DType;

constexpr DType kActivation[] = {DType::f32, DType::f16, DType::bf16};

// A value of type t from raw bits: every bit pattern, NaN/Inf/subnormal included.
float value_from_bits(FuzzedDataProvider& in, DType t) {
  const std::uint32_t bits = t == DType::f32 ? in.ConsumeIntegral<std::uint32_t>() : in.ConsumeIntegral<std::uint16_t>();
  return static_cast<float>(rmsnorm::decode(bits, t));
}

std::vector<float> values(FuzzedDataProvider& in, std::size_t n, DType t) {
  std::vector<float> v(n);
  for (float& x : v) x = value_from_bits(in, t);
  return v;
}

[[noreturn]] void die(const char* what, const harness::Case& c, const std::string& why) {
  std::fprintf(stderr, "%s: %s\nREPRODUCE: %s\n", what, why.c_str(), harness::one_line(c).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  harness::Case c;
  c.op = static_cast<rmsnorm::Op>(in.ConsumeIntegralInRange<int>(0, rmsnorm::kOpCount - 1));
  c.variant = "host.reference";
  c.rows = in.ConsumeIntegralInRange<std::int64_t>(0, 6);
  c.dim = in.ConsumeIntegralInRange<std::int64_t>(1, 300);
  c.x_type = kActivation[in.ConsumeIntegralInRange<int>(0, 2)];
  c.g_type = in.ConsumeBool() ? DType::f32 : c.x_type;
  c.dg_type = in.ConsumeBool() ? DType::f32 : c.g_type;
  c.convention = static_cast<rmsnorm::Convention>(in.ConsumeIntegralInRange<int>(0, 3));
  if (c.has_quant()) {
    c.quant = static_cast<rmsnorm::Quant>(in.ConsumeIntegralInRange<int>(1, 3));
    c.y_type = in.ConsumeBool() ? DType::e4m3 : DType::e5m2;
    c.static_scale = in.ConsumeFloatingPointInRange<float>(1e-3f, 1e3f);
  } else {
    c.y_type = c.x_type;
  }
  // eps: the usual ones, or raw bits (negative/NaN/Inf are invalid cases the oracle must reject).
  const float eps_choices[] = {0.0f, 1e-6f, 1e-5f, 0.1f};
  c.eps = in.ConsumeBool() ? eps_choices[in.ConsumeIntegralInRange<int>(0, 3)] : value_from_bits(in, DType::f32);
  harness::Layout& L = c.layout;
  if (in.ConsumeBool()) {
    L.x_pad = in.ConsumeIntegralInRange<int>(0, 9);
    L.y_pad = in.ConsumeIntegralInRange<int>(0, 9);
    L.dy_pad = in.ConsumeIntegralInRange<int>(0, 9);
    L.dx_pad = in.ConsumeIntegralInRange<int>(0, 9);
    L.x_offset = in.ConsumeIntegralInRange<int>(0, 31);
    L.y_offset = in.ConsumeIntegralInRange<int>(0, 31);
    L.g_offset = in.ConsumeIntegralInRange<int>(0, 31);
    L.dy_offset = in.ConsumeIntegralInRange<int>(0, 31);
    L.in_place = in.ConsumeBool() && !c.has_quant();
  }
  const std::size_t n = static_cast<std::size_t>(c.rows * c.dim);
  c.x = values(in, n, c.x_type);
  if (c.has_add()) (c.is_forward() ? c.o : c.dresidual) = values(in, n, c.x_type);
  if (c.convention != rmsnorm::Convention::no_weight) c.g = values(in, static_cast<std::size_t>(c.dim), c.g_type);
  if (!c.is_forward()) c.dy = values(in, n, c.x_type);

  // The text forms must round-trip whatever the values.
  harness::Case back;
  std::string error;
  if (!harness::parse_case(harness::format_case(c), back, error)) {
    // A case the format refuses (eps NaN/negative) must be refused by the oracle as well.
    oracle::ForwardCase f;
    if (c.is_forward() && harness::forward_case(c, f, error)) die("format refused a case the oracle accepts", c, error);
    return 0;
  }

  const rmsnorm::Variant* reference = rmsnorm::find_variant("host.reference");
  if (!reference) die("no host.reference", c, "");
  if (c.is_forward()) {
    oracle::ForwardCase f;
    if (!harness::forward_case(c, f, error)) return 0;  // invalid: validated and refused, fine
    const harness::Outcome out = harness::run_forward(*reference, f, c.layout);
    if (!out.pass()) die("host.reference failed", c, out.summary());
  } else {
    // The backward gets RN32 of the exact r, as the harness does when a case carries none.
    oracle::ForwardCase f;
    harness::Case fc = c;
    fc.op = rmsnorm::Op::forward;
    fc.dy.clear();
    fc.dresidual.clear();
    fc.y_type = c.x_type;
    if (!harness::forward_case(fc, f, error)) return 0;
    c.rstd = oracle::rstd_rounded(f);
    oracle::BackwardCase b;
    if (!harness::backward_case(c, b, error)) return 0;
    const harness::Outcome out = harness::run_backward(*reference, b, c.layout);
    if (!out.pass()) die("host.reference failed", c, out.summary());
  }
  return 0;
}
