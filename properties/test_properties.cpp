// The property suite: P1–P19 of docs/properties.md, each a Catch2 test whose name states the
// invariant, run against every registered product variant that supports one of its ops — host
// variants always ([property]), CUDA variants when a device is usable ([property][gpu]); [slow]
// runs the big budget. Each failure prints the shrunk case as one replayable line (REPRODUCE: ...).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "budget.h"
#include "properties/generators.h"
#include "harness/catch.h"
#include "harness/probe_args.h"
#include "rc_support.h"
#include "rmsnorm/variant.h"

namespace {

using properties::PropertyInfo;
using rmsnorm::Memory;

enum class Budget { standard, slow };

void run_on(const char* id, Memory where, Budget budget) {
  const PropertyInfo* p = properties::find_property(id);
  REQUIRE(p != nullptr);
  if (where == Memory::device) {
    const rmsnorm::Status s = rmsnorm::device_status();
    // Never a silent pass: without a device the GPU instantiation fails with its reason (ctest's
    // gpu entry never gets here: the shared main exits 77 "skipped" first).
    if (!s.ok()) FAIL("GPU property not run: " << s.reason);
  }
  const int cases = properties::cases_for(budget == Budget::slow);
  if (p->oracle_only) {
    const properties::RunReport r = properties::run_property(*p, nullptr, cases, properties::property_seed(id, "oracle"));
    std::cout << properties::describe(r, true) << std::endl;
    INFO(properties::describe(r, false));
    CHECK_FALSE(r.failed);
    CHECK(r.checked > 0);
    return;
  }
  // RMSNORM_VARIANTS=<glob> (set by `rmsnorm-cert certify` and `mutants`) narrows the run to
  // the matching variants, mutants included; a property that applies to none of them is
  // reported as not applicable, not as passed.
  const char* only = std::getenv("RMSNORM_VARIANTS");
  int variants = 0, not_applicable = 0;
  std::int64_t total_checked = 0;
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    if (only ? !rmsnorm::glob_match(only, v.name) : v.is_mutant()) continue;
    if (v.memory != where || !properties::applies(*p, v)) continue;
    // The property draws nothing the variant claims (P7's fp16 rows on a variant without fp16):
    // not applicable, with the reason; otherwise every draw is aimed inside its claims.
    if (const std::string why = properties::not_applicable_to(*p, v); !why.empty()) {
      std::cout << id << ": not applicable to " << v.name << ": " << why << std::endl;
      ++not_applicable;
      continue;
    }
    ++variants;
    const properties::RunReport r = properties::run_property(*p, &v, cases, properties::property_seed(id, v.name));
    std::cout << properties::describe(r, true) << std::endl;
    INFO(properties::describe(r, false));
    CHECK_FALSE(r.failed);
    if (r.checked == 0 && r.rejected > 0 && !r.failed) {
      // Every draw was declined through can_implement (e.g. P8's strided layouts on a vector-only
      // path): not a pass for this variant — reported as not applicable, with the reasons above.
      std::cout << id << ": not applicable to " << v.name << ": all " << r.rejected << " cases declined" << std::endl;
      continue;
    }
    if (r.checked == 0 && r.not_applicable > 0 && !r.failed) {
      // The property itself does not apply to this variant (P18 on a variant of packed rows
      // only): not applicable, with the check's reason.
      std::cout << id << ": not applicable to " << v.name << ": " << r.not_applicable_reason << std::endl;
      continue;
    }
    // A variant that checked nothing and declined nothing was not tested: say so, never pass.
    CHECK(r.checked > 0);
    total_checked += r.checked;
  }
  // Across the variants, the property must have checked something (unless narrowed to one).
  if (variants > 0 && !only) CHECK(total_checked > 0);
  if (variants == 0 && (only || not_applicable > 0)) {
    if (not_applicable == 0) std::cout << id << ": not applicable to " << only << std::endl;
    return;
  }
  if (variants == 0) FAIL("no registered " << (where == Memory::host ? "host" : "CUDA") << " variant supports " << id);
}

}  // namespace

// Default and slow budgets on the host variants, default budget on the CUDA variants.
#define RMSNORM_PROPERTY(ID, INVARIANT)                                                         \
  TEST_CASE(ID ": " INVARIANT, "[property]") { run_on(ID, Memory::host, Budget::standard); }    \
  TEST_CASE(ID " (slow budget): " INVARIANT, "[property][slow]") { run_on(ID, Memory::host, Budget::slow); } \
  TEST_CASE(ID " (CUDA variants): " INVARIANT, "[property][gpu][" ID "]") { run_on(ID, Memory::device, Budget::standard); }

RMSNORM_PROPERTY("P1", "forward outputs lie in the oracle's acceptance set for every type, width, shape and layout")
RMSNORM_PROPERTY("P2", "backward dx and dg lie within their magnitude-weighted bounds")
RMSNORM_PROPERTY("P4", "scaling x by 2^k and eps by 4^k leaves y bitwise unchanged and scales r by 2^-k")
RMSNORM_PROPERTY("P5", "eps sits inside the square root: eps-dominated rows match the exact answer")
RMSNORM_PROPERTY("P6", "a zero row gives y = 0 and dx = dy*g/sqrt(eps), never NaN for eps > 0")
RMSNORM_PROPERTY("P7", "fp16 inputs of +-300 up to 65504 give finite outputs (squares in fp32)")
RMSNORM_PROPERTY("P8", "strided rows with poisoned gaps and misaligned bases give accepted outputs and untouched gaps")
RMSNORM_PROPERTY("P9", "every width residue mod 8 (and mod 128 for per-block FP8) is handled by the tail")
RMSNORM_PROPERTY("P10", "x.dx equals eps*r^3*sum(g dy x) (r*S*(1 - r^2 m) for the stored r) within its bound")
RMSNORM_PROPERTY("P11", "outputs are bitwise identical run to run and a row alone equals the row inside a batch")
RMSNORM_PROPERTY("P12", "with a different gamma per channel over many tokens dg sums each column over the tokens")
RMSNORM_PROPERTY("P13", "fused add equals add then norm bitwise and writes the residual RN(h + o)")
RMSNORM_PROPERTY("P14", "FP8 saturates at the format's max, zero rows give q = 0 with finite scales, per-block groups are exact")
RMSNORM_PROPERTY("P15", "no poisoned byte before, after or between the rows of any buffer is ever written")
RMSNORM_PROPERTY("P16", "NaN and Inf in a row reach only that row")
RMSNORM_PROPERTY("P17", "invalid arguments return the contract's status with a reason and touch no buffer")
RMSNORM_PROPERTY("P19", "in place (y = x, dx = dy) equals out of place bitwise")
RMSNORM_PROPERTY("P20", "each call computes from its own inputs: a second case of the same shape right after the first is judged on its own values")

// P3 checks the oracle itself: no variant, no GPU instantiation.
TEST_CASE("P3: the oracle's gradient equals central differences of its forward", "[property]") {
  run_on("P3", Memory::host, Budget::standard);
}
TEST_CASE("P3 (slow budget): the oracle's gradient equals central differences of its forward", "[property][slow]") {
  run_on("P3", Memory::host, Budget::slow);
}

// P18 moves 4 GiB per case on the host: slow suite there; on the GPU it is part of the default.
TEST_CASE("P18 (slow, host): 64-bit offsets: rows beyond 2^31 elements from the base are read and written correctly",
          "[property][slow]") {
  run_on("P18", Memory::host, Budget::standard);
}
TEST_CASE("P18 (CUDA variants): 64-bit offsets: rows beyond 2^31 elements from the base are read and written correctly",
          "[property][gpu][P18]") {
  run_on("P18", Memory::device, Budget::standard);
}

// ---------------------------------------------------------------------------------------------
// The seed's worked examples (P2/P3/P5/P6/P7 examples), in the case-file syntax, on every
// product variant that supports their op and on the oracle.
// ---------------------------------------------------------------------------------------------
namespace {

const char* const kExamples[] = {
    // Forward: x = [1,2,3,4], g = 1, eps = 0: r = 1/sqrt(7.5).
    "op=forward;dim=4;x_type=f32;g_type=f32;eps=0;x=1,2,3,4;g=1,1,1,1;"
    "expect.y=0.365148,0.730297,1.095445,1.460593;expect.rstd=0.365148;expect.tol=1e-6",
    // Exercise 1 forward: x = [1,2], g = [1,2], eps = 0.
    "op=forward;dim=2;x_type=f32;g_type=f32;eps=0;x=1,2;g=1,2;expect.y=0.632456,2.529822;expect.tol=1e-6",
    // Exercise 1 backward: dy = [3,-1]: dx = [2.023858, -1.011929], dg = [1.897367, -1.264911].
    "op=backward;dim=2;x_type=f32;g_type=f32;eps=0;x=1,2;g=1,2;dy=3,-1;"
    "expect.dx=2.023858,-1.011929;expect.dg=1.897367,-1.264911;expect.tol=1e-6",
    // P5: eps inside the root: x = 1e-4 with eps = 1e-5 gives 0.031607, ten times x gives 0.301511.
    "op=forward;dim=2;x_type=f32;g_type=f32;eps=1e-5;x=1e-4,1e-4;g=1,1;expect.y=0.031607,0.031607;expect.tol=1e-6",
    "op=forward;dim=2;x_type=f32;g_type=f32;eps=1e-5;x=1e-3,1e-3;g=1,1;expect.y=0.301511,0.301511;expect.tol=1e-6",
    // P6: a zero row: y = 0, dx = dy*g/sqrt(eps) (eps = 1e-6: 1000·dy·g).
    "op=forward;dim=3;x_type=f32;g_type=f32;eps=1e-6;x=0,0,0;g=1,2,-1;expect.y=0,0,0;expect.tol=0",
    "op=backward;dim=3;x_type=f32;g_type=f32;eps=0x1p-20;x=0,0,0;g=1,2,-1;dy=1,-0.5,2;"
    "expect.dx=1024,-1024,-2048;expect.tol=1e-3",
    // P7: fp16 +-300 and 65504: 300² overflows fp16 but not fp32; y = x/rms.
    "op=forward;dim=2;x_type=f16;g_type=f16;eps=1e-6;x=300,-300;g=1,1;expect.y=1,-1;expect.tol=1e-6",
    "op=forward;dim=2;x_type=f16;g_type=f16;eps=1e-6;x=65504,65504;g=1,1;expect.y=1,1;expect.tol=1e-6",
    // The padding exercise: five ones, eps = 0: y = 1 (dividing by the padded 8 would give 1.2649).
    "op=forward;dim=5;x_type=f32;g_type=f32;eps=0;x=1,1,1,1,1;g=1,1,1,1,1;expect.y=1,1,1,1,1;expect.tol=1e-6",
};

void run_examples(Memory where) {
  int checked = 0;
  // RMSNORM_VARIANTS (certify, mutants) narrows the run: a certificate depends on its variant alone.
  const char* only = std::getenv("RMSNORM_VARIANTS");
  for (const char* text : kExamples) {
    harness::Case c;
    std::string error;
    INFO("case: " << text);
    REQUIRE(harness::parse_case(text, c, error));
    const properties::CheckResult oracle_result = properties::check_oracle_case(c);
    INFO("oracle: " << oracle_result.message);
    CHECK(oracle_result.kind == properties::CheckResult::Kind::pass);
    const std::vector<const rmsnorm::Variant*> chosen = only ? rmsnorm::match_variants(only) : properties::variants_for(c);
    for (const rmsnorm::Variant* v : chosen) {
      if (v->memory != where || !v->supports(c.op)) continue;
      c.variant = v->name;
      const properties::CheckResult r = properties::check_case(c, *v);
      INFO(v->name << ": " << r.message << "\nREPRODUCE: " << harness::one_line(c));
      CHECK((r.kind == properties::CheckResult::Kind::pass || r.kind == properties::CheckResult::Kind::rejected));
      if (r.kind == properties::CheckResult::Kind::pass) ++checked;
    }
  }
  if (checked == 0 && only) {
    // Widths of 2 to 5 in fp32 and fp16: outside the claims of most narrow variants.
    std::cout << "worked examples: not applicable to " << only << ": it declined every example" << std::endl;
    return;
  }
  CHECK(checked > 0);
}

}  // namespace

TEST_CASE("P2/P5/P6/P7 examples: the seed's worked examples come out as the seed computes them", "[property]") {
  run_examples(Memory::host);
}
TEST_CASE("P2/P5/P6/P7 examples (CUDA variants): the seed's worked examples come out as the seed computes them",
          "[property][gpu]") {
  const rmsnorm::Status s = rmsnorm::device_status();
  if (!s.ok()) FAIL("GPU examples not run: " << s.reason);
  run_examples(Memory::device);
}

// ---------------------------------------------------------------------------------------------
// Rejections are part of the contract: every product variant accepts the canonical production
// case (bf16, standard, D = 4096, dense aligned buffers) of every op it claims.
// ---------------------------------------------------------------------------------------------
namespace {
// The widths a variant's canonical case tries, in order: 4096; else the width of its declared
// bf16 range nearest 4096, rounded up to a multiple of 8 (aligned rows) where that stays inside
// (fwd.block_row.staged: 4097 <= D <= 8192 gives 4104); then 1024, 128 and 32768.
std::vector<std::int64_t> canonical_dims(const rmsnorm::Variant& v) {
  const std::int64_t lo = v.min_dim_for(rmsnorm::DType::bf16), hi = v.max_dim_for(rmsnorm::DType::bf16);
  std::int64_t near = std::clamp<std::int64_t>(4096, lo, std::max(lo, hi));
  if (near % 8 != 0 && (near + 7) / 8 * 8 <= hi) near = (near + 7) / 8 * 8;
  std::vector<std::int64_t> dims = {4096};
  if (near != 4096) dims.push_back(near);
  for (const std::int64_t d : {1024, 128, 32768})
    if (d != near) dims.push_back(d);
  return dims;
}

void run_canonical(Memory where) {
  static const rmsnorm::Op kOps[] = {rmsnorm::Op::forward, rmsnorm::Op::add_forward, rmsnorm::Op::forward_quant,
                                     rmsnorm::Op::add_forward_quant, rmsnorm::Op::backward, rmsnorm::Op::add_backward};
  int checked = 0;
  // RMSNORM_VARIANTS (certify, mutants) narrows the run as in run_on(): certifying one variant
  // judges that variant's canonical cases only.
  const char* only = std::getenv("RMSNORM_VARIANTS");
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    if (only ? !rmsnorm::glob_match(only, v.name) : v.is_mutant()) continue;
    if (v.memory != where) continue;
    for (rmsnorm::Op op : kOps) {
      if (!v.supports(op)) continue;
      // The first width of canonical_dims() it accepts; it must pass it.
      std::string report;
      bool passed = false;
      for (std::int64_t dim : canonical_dims(v)) {
        harness::Case c;
        c.op = op;
        c.variant = v.name;
        c.rows = 4;
        c.dim = dim;
        // bf16, standard; or the first type and convention the variant claims instead.
        c.x_type = rmsnorm::DType::bf16;
        if (v.dtypes && !((v.dtypes >> static_cast<int>(rmsnorm::DType::bf16)) & 1u))
          for (int t = 0; t < 3; ++t)
            if ((v.dtypes >> t) & 1u) { c.x_type = static_cast<rmsnorm::DType>(t); break; }
        c.g_type = c.y_type = c.x_type;
        if (v.conventions && !(v.conventions & 1u))
          for (int k = 1; k < 4; ++k)
            if ((v.conventions >> k) & 1u) { c.convention = static_cast<rmsnorm::Convention>(k); break; }
        if (c.has_quant()) {
          // FP8 per token; or the first FP8 mode the variant claims instead.
          c.quant = rmsnorm::Quant::dynamic_token, c.y_type = rmsnorm::DType::e4m3;
          if (v.quant_modes && !((v.quant_modes >> static_cast<int>(c.quant)) & 1u))
            for (int q = 1; q < 4; ++q)
              if ((v.quant_modes >> q) & 1u) { c.quant = static_cast<rmsnorm::Quant>(q); break; }
        }
        c.generator = "regimes";
        c.seed = 0x4096;
        const properties::CheckResult r = properties::check_case(c, v);
        report += "\n  D=" + std::to_string(dim) + ": " + r.message + "\n  REPRODUCE: " + harness::one_line(c);
        if (r.kind == properties::CheckResult::Kind::rejected) continue;
        passed = r.kind == properties::CheckResult::Kind::pass;
        break;
      }
      INFO(v.name << " " << rmsnorm::to_string(op) << ":" << report);
      CHECK(passed);
      ++checked;
    }
  }
  if (only && checked == 0) {
    std::cout << "canonical cases: not applicable to " << only << std::endl;
    return;
  }
  CHECK(checked > 0);
}
}  // namespace

TEST_CASE("every product variant accepts and passes the canonical bf16 case (D = 4096, else the nearest D it takes) of each op it claims",
          "[property]") {
  run_canonical(Memory::host);
}
// Without a GPU the CUDA variants' canonical cases cannot run; their widths can be checked: the
// second width tried lies in the variant's declared bf16 range and keeps rows 16-byte aligned
// (the widths 4096, 1024, 128 and 32768 alone never reach a variant of 4097 <= D <= 8192 such as
// fwd.block_row.staged).
TEST_CASE("the canonical widths of every product variant reach its declared range", "[property]") {
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    if (v.is_mutant()) continue;
    const std::vector<std::int64_t> dims = canonical_dims(v);
    const bool inside = std::any_of(dims.begin(), dims.end(), [&](std::int64_t d) {
      return v.declares(d, rmsnorm::DType::bf16) && (!v.aligned_rows || d % 8 == 0);
    });
    CAPTURE(v.name, dims);
    CHECK(inside);
  }
}
TEST_CASE("every CUDA product variant accepts and passes the canonical bf16 case (D = 4096, else the nearest D it takes) of each op it claims",
          "[property][gpu]") {
  const rmsnorm::Status s = rmsnorm::device_status();
  if (!s.ok()) FAIL("GPU canonical cases not run: " << s.reason);
  run_canonical(Memory::device);
}

namespace {

// Every vector-accessed tensor of the case has 16-byte row starts (8 bytes for FP8 outputs):
// the harness puts each base `offset` elements past a 256-byte boundary, rows `D + pad` apart.
// Every row tensor of the case is packed (row stride = D), as a variant of packed rows only
// (Variant::packed_rows) needs.
bool packed(const harness::Case& c) {
  const harness::Layout& l = c.layout;
  if (c.rows <= 1) return true;
  if (c.is_forward()) return l.x_pad == 0 && l.y_pad == 0 && (!c.has_add() || l.o_pad == 0);
  return l.x_pad == 0 && l.dy_pad == 0 && l.dx_pad == 0 && (c.op != rmsnorm::Op::add_backward || l.dres_pad == 0);
}

// fp8_bytes: the row alignment asked of an FP8 output (8 for the built-in vector paths; 16 for
// a plugin's 16-byte alignment, which holds for every row tensor).
bool vector_aligned(const harness::Case& c, std::int64_t fp8_bytes = 8) {
  const harness::Layout& l = c.layout;
  auto rows_ok = [&](std::int64_t pad, std::int64_t offset, rmsnorm::DType t, std::int64_t bytes) {
    const std::int64_t size = static_cast<std::int64_t>(rmsnorm::size_of(t));
    return (offset * size) % bytes == 0 && ((c.dim + pad) * size) % bytes == 0;
  };
  bool ok = rows_ok(l.x_pad, l.x_offset, c.x_type, 16) && (l.g_offset * static_cast<std::int64_t>(rmsnorm::size_of(c.g_type))) % 16 == 0;
  if (c.is_forward()) {
    if (c.has_add()) ok = ok && rows_ok(l.o_pad, l.o_offset, c.x_type, 16);
    ok = ok && rows_ok(l.y_pad, l.y_offset, c.y_type, rmsnorm::is_fp8(c.y_type) ? fp8_bytes : 16);
  } else {
    ok = ok && rows_ok(l.dy_pad, l.dy_offset, c.x_type, 16) && rows_ok(l.dx_pad, l.dx_offset, c.x_type, 16);
    if (c.op == rmsnorm::Op::add_backward) ok = ok && rows_ok(l.dres_pad, l.dres_offset, c.x_type, 16);
  }
  return ok;
}

}  // namespace

// The layout properties must reach the vector paths as well as the any-alignment ones: a mix
// where every draw is misaligned checks 0 cases on a vector-only variant (fwd.large_d declines
// them all) and reports a pass, and M11 survives it. Guard the generators' mix here.
// ---------------------------------------------------------------------------------------------
// Declared ranges are honest: a variant declines every width outside the D range it declares for
// the row type (Variant::min_dim_for / max_dim_for). The generators aim at the declared range and
// the certificates state it; a width accepted outside it is run by nobody's tests (as
// corpora/regressions/backward_streams_f32_wide_no_launch.case shows: fp32 rows past a declared
// D = 4096 accepted, then nothing launched).
// ---------------------------------------------------------------------------------------------
namespace {
constexpr rmsnorm::Op kAllOps[] = {rmsnorm::Op::forward,  rmsnorm::Op::add_forward, rmsnorm::Op::forward_quant,
                                   rmsnorm::Op::add_forward_quant, rmsnorm::Op::backward, rmsnorm::Op::add_backward};
// f(v) for every product (non-mutant) variant of `where`.
template <typename F>
void for_each_product(Memory where, F&& f) {
  for (const rmsnorm::Variant& v : rmsnorm::registry())
    if (!v.is_mutant() && v.memory == where) f(v);
}

// can_implement() of v for op on dense rows of width `dim` (R = 4, row type t, g of type t, FP8
// outputs for the FP8 ops, dg and its workspace for the backward where the variant sizes one;
// harness/probe_args.h).
rmsnorm::Status probe_width(const rmsnorm::Variant& v, rmsnorm::Op op, rmsnorm::DType t, std::int64_t dim) {
  using rmsnorm::Op;
  const std::int64_t rows = 4;
  const bool add = rmsnorm::has_residual(op);
  if (op == Op::backward || op == Op::add_backward)
    return v.can_implement_backward(
        harness::probe_backward(t, rows, dim, add, v.workspace_bytes ? v.workspace_bytes(rows, dim) : 0));
  const bool fp8 = op == Op::forward_quant || op == Op::add_forward_quant;
  return v.can_implement_forward(harness::probe_forward(t, rows, dim, fp8, add));
}

// Widths just outside [lo, hi]: next to the edges, and multiples of 16 (16-byte rows for every
// row type and FP8 output, so an aligned-only variant cannot decline them for alignment alone).
std::vector<std::int64_t> outside_widths(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> out;
  const std::int64_t hi16 = (hi / 16 + 1) * 16, lo16 = (lo - 1) / 16 * 16;
  for (const std::int64_t k : {1, 2, 7, 8}) out.push_back(hi + k);
  for (const std::int64_t k : {0, 16, 48, 496, 4080}) out.push_back(hi16 + k);
  for (const std::int64_t k : {1, 2, 7, 8}) out.push_back(lo - k);
  for (const std::int64_t k : {0, 16, 496}) out.push_back(lo16 - k);
  out.erase(std::remove_if(out.begin(), out.end(), [&](std::int64_t d) { return d < 1 || (d >= lo && d <= hi); }),
            out.end());
  return out;
}

// Checks every product variant of `where`; returns how many (variant, op, type) triples were
// checked. A variant whose can_implement() answers "no device" is not judged here.
int check_declared_ranges(Memory where) {
  using rmsnorm::DType;
  int checked = 0;
  for_each_product(where, [&](const rmsnorm::Variant& v) {
    for (const rmsnorm::Op op : kAllOps) {
      if (!v.supports(op)) continue;
      const bool add = rmsnorm::has_residual(op);
      for (const DType t : {DType::bf16, DType::f16, DType::f32}) {
        bool judged = true;
        for (const std::int64_t dim : outside_widths(v.min_dim_for(t), v.max_dim_for(t, add))) {
          const rmsnorm::Status s = probe_width(v, op, t, dim);
          if (s.code == rmsnorm::Status::Code::no_device) {
            judged = false;
            break;
          }
          INFO(v.name << " " << rmsnorm::to_string(op) << " " << rmsnorm::to_string(t) << " rows: declares "
                      << v.min_dim_for(t) << " <= D <= " << v.max_dim_for(t, add) << ", accepted D = " << dim);
          CHECK_FALSE(s.ok());
        }
        if (judged) ++checked;
      }
    }
  });
  return checked;
}

// The other half: each declared range is reached. At both ends of it (rounded inward to a
// multiple of 16, so aligned-only variants take them), some op the variant claims accepts the
// width for that row type. A range wider than what the variant takes would aim the generators'
// draws at widths every case declines. Returns the (variant, type) pairs judged.
int check_declared_edges(Memory where) {
  using rmsnorm::DType;
  int checked = 0;
  for_each_product(where, [&](const rmsnorm::Variant& v) {
    // The fused add's own fp32 range (Variant::f32_add_max_dim) is judged on the add ops alone.
    for (const bool add_range : {false, true}) {
    for (const DType t : {DType::bf16, DType::f16, DType::f32}) {
      if (add_range && (t != DType::f32 || v.f32_add_max_dim <= 0)) continue;
      if (v.dtypes && !((v.dtypes >> static_cast<int>(t)) & 1u)) continue;  // rows of a type it does not claim
      const std::int64_t lo = v.min_dim_for(t), hi = v.max_dim_for(t, add_range);
      const std::int64_t lo16 = (lo + 15) / 16 * 16, hi16 = hi / 16 * 16;
      for (const std::int64_t dim : {lo16, hi16}) {
        if (dim < lo || dim > hi) continue;  // a range narrower than 16
        bool accepted = false, judged = true;
        std::string reasons;
        for (const rmsnorm::Op op : kAllOps) {
          if (!v.supports(op)) continue;
          const bool add = rmsnorm::has_residual(op);
          if (add_range && !add) continue;
          const rmsnorm::Status s = probe_width(v, op, t, dim);
          if (s.code == rmsnorm::Status::Code::no_device) judged = false;
          accepted = accepted || s.ok();
          reasons += std::string("\n  ") + rmsnorm::to_string(op) + ": " + (s.ok() ? "ok" : s.reason);
        }
        if (!judged) break;
        INFO(v.name << " " << rmsnorm::to_string(t) << " rows at D = " << dim << " (declared " << lo << " <= D <= " << hi
                    << "):" << reasons);
        CHECK(accepted);
        ++checked;
      }
    }
    }
  });
  return checked;
}
}  // namespace

// Without a device this judges the host variants and the CUDA forward family (its checks read
// the arguments only); the CUDA backward's checks ask for a device and are judged below.
TEST_CASE("every product variant declines widths outside its declared D range and takes both ends of it", "[property]") {
  CHECK(check_declared_ranges(Memory::host) + check_declared_ranges(Memory::device) > 0);
  CHECK(check_declared_edges(Memory::host) + check_declared_edges(Memory::device) > 0);
}
TEST_CASE("every CUDA product variant declines widths outside its declared D range and takes both ends of it (CUDA variants)",
          "[property][gpu]") {
  const rmsnorm::Status s = rmsnorm::device_status();
  if (!s.ok()) FAIL("GPU check not run: " << s.reason);
  CHECK(check_declared_ranges(Memory::device) > 0);
  CHECK(check_declared_edges(Memory::device) > 0);
}

TEST_CASE("the layout properties draw vector-aligned and misaligned cases alike", "[property]") {
  for (const char* id : {"P8", "P15", "P18"}) {
    const PropertyInfo* p = properties::find_property(id);
    REQUIRE(p != nullptr);
    int aligned = 0, strided_aligned = 0;
    const int draws = 400;
    for (int i = 0; i < draws; ++i) {
      generators::RngChooser ch(0x1a7e0000u + static_cast<std::uint64_t>(i));
      const harness::Case c = properties::draw_property_case(*p, ch, nullptr);
      if (!vector_aligned(c)) continue;
      ++aligned;
      if (c.layout.x_pad > 0) ++strided_aligned;
    }
    CAPTURE(id, aligned, strided_aligned, draws);
    CHECK(aligned >= draws / 5);          // the vector paths see a fifth at least
    CHECK(draws - aligned >= draws / 5);  // and the misaligned paths as much
    CHECK(strided_aligned >= draws / 10); // strided rows (poisoned gaps) on the vector paths
  }
}

namespace {

// A device variant of the backward ops with this declared range, for the draw tests below.
rmsnorm::Variant backward_test_variant(const char* name, std::int64_t min_dim, std::int64_t max_dim,
                                       std::int64_t f32_min_dim, std::int64_t f32_max_dim) {
  rmsnorm::Variant v;
  v.name = name;
  v.memory = rmsnorm::Memory::device;
  v.ops = (1u << static_cast<int>(rmsnorm::Op::backward)) | (1u << static_cast<int>(rmsnorm::Op::add_backward));
  v.min_dim = min_dim;
  v.max_dim = max_dim;
  v.f32_min_dim = f32_min_dim;
  v.f32_max_dim = f32_max_dim;
  return v;
}
// `count` draws of property `id` aimed at v, seeds seed_base + i.
std::vector<harness::Case> property_draws(const char* id, const rmsnorm::Variant& v, std::uint64_t seed_base, int count) {
  const PropertyInfo* p = properties::find_property(id);
  REQUIRE(p != nullptr);
  std::vector<harness::Case> out;
  for (int i = 0; i < count; ++i) {
    generators::RngChooser ch(seed_base + static_cast<std::uint64_t>(i));
    out.push_back(properties::draw_property_case(*p, ch, &v));
  }
  return out;
}

}  // namespace

// A variant of a narrow range must meet more than stray cases: with widths drawn over every D, a
// certificate of bwd.cluster_rows (16384 < D <= 65536, aligned rows) checks 0 or 1 of 40
// cases for most properties — every other draw is outside its range and declined. Every draw for
// a variant takes a width inside its declared range (Variant::min_dim/max_dim, per row type) and,
// for a variant of aligned rows only, 16-byte aligned rows.
TEST_CASE("property draws for a variant aim at its declared D range and layout", "[property]") {
  // As bwd.cluster_rows: 16-bit rows from 16385, fp32 rows from 8193.
  rmsnorm::Variant v = backward_test_variant("test.narrow", 16385, 65536, 8193, 0);
  v.aligned_rows = true;
  for (const char* id : {"P2", "P5", "P6", "P7", "P8", "P9", "P10", "P11", "P12", "P15", "P16", "P17", "P18", "P19", "P20"}) {
    const int draws = 300;
    int in_range = 0;
    int tails = 0;  // widths that are not whole vectors: the rows stay aligned through their pads
    for (const harness::Case& c : property_draws(id, v, 0xa1e00000u, draws)) {
      if (v.declares(c.dim, c.x_type, c.has_add()) && vector_aligned(c)) ++in_range;
      tails += c.dim % 8 != 0;
    }
    CAPTURE(id, in_range, tails, draws);
    CHECK(in_range == draws);
    // P9 is the tail's property: aiming must not round its widths onto the vector.
    if (std::string(id) == "P9") CHECK(tails > draws / 4);
  }
}

// A variant whose fp32 rows are narrower with the fused add (bwd.staged_streams: two stages
// of three row tensors fit shared memory only to D = 2040): on the H200 its certificate checked
// 86-91 % of the cases asked, every other one an fp32 add_backward row between 2041 and 4096
// that it declined. Every draw of the fused add's fp32 rows takes a width within that limit.
TEST_CASE("property draws for a variant aim at its narrower fp32 range for the fused add", "[property]") {
  rmsnorm::Variant v = backward_test_variant("test.streams", 513, 8192, 513, 4096);
  v.f32_add_max_dim = 2040;
  v.aligned_rows = true;
  for (const char* id : {"P2", "P5", "P6", "P8", "P9", "P10", "P11", "P12", "P15", "P16", "P19", "P20"}) {
    const int draws = 300;
    int in_range = 0, f32_add = 0;
    for (const harness::Case& c : property_draws(id, v, 0xa2e00000u, draws)) {
      if (v.declares(c.dim, c.x_type, c.has_add()) && vector_aligned(c)) ++in_range;
      if (c.x_type == rmsnorm::DType::f32 && c.has_add()) {
        ++f32_add;
        CHECK(c.dim <= 2040);
      }
    }
    CAPTURE(id, in_range, f32_add, draws);
    CHECK(in_range == draws);
  }
}

// A variant of packed rows only (bwd.packed_rows) declines every case with row pads; P8 and
// P15 force pads on every draw, so without aiming it would check none of them. Aimed draws keep
// their misaligned offsets and drop the pads: every draw is packed and inside its range, and
// (where the property forces layouts) a fifth at least are misaligned.
TEST_CASE("property draws for a variant of packed rows give packed rows, misaligned ones among them", "[property]") {
  rmsnorm::Variant v = backward_test_variant("test.packed", 1, 8192, 1, 4096);  // as bwd.packed_rows
  v.packed_rows = true;
  // P18 is not applicable to it (its rows are 2^31 elements apart); the GPU test covers its
  // 64-bit offsets.
  CHECK_FALSE(properties::not_applicable_to(*properties::find_property("P18"), v).empty());
  for (const char* id : {"P2", "P8", "P10", "P11", "P12", "P15", "P16", "P19", "P20"}) {
    const int draws = 300;
    int taken = 0, misaligned = 0;
    for (const harness::Case& c : property_draws(id, v, 0xb2e00000u, draws)) {
      if (!v.declares(c.dim, c.x_type, c.has_add()) || !packed(c)) continue;
      ++taken;
      if (!vector_aligned(c)) ++misaligned;
    }
    CAPTURE(id, taken, misaligned, draws);
    CHECK(taken == draws);
    if (std::string(id) == "P8" || std::string(id) == "P15") CHECK(misaligned >= draws / 5);
  }
}

namespace {
bool claimed(std::uint32_t set, int bit) { return set == 0 || ((set >> bit) & 1u); }
}  // namespace

// A plugin declares its input types, conventions and FP8 modes, a D range and an alignment that
// holds for every row tensor (FP8 outputs included); the harness declines everything else before
// the kernel sees it. Every draw of every property that applies lies inside all of that, so the
// property checks (nearly) every case it draws; a property that draws nothing the variant claims
// (P7's fp16 rows, P18's bf16 rows or strided layout) is not applicable to it, with the reason.
TEST_CASE("property draws for a variant lie inside its declared types, conventions and FP8 modes", "[property]") {
  rmsnorm::Variant v;
  v.name = "test.claims";
  v.memory = rmsnorm::Memory::host;
  v.ops = (1u << rmsnorm::kOpCount) - 1u;
  v.min_dim = 2048;
  v.max_dim = 6144;
  v.aligned_rows = true;
  v.dtypes = (1u << static_cast<int>(rmsnorm::DType::bf16)) | (1u << static_cast<int>(rmsnorm::DType::f16));
  v.conventions = (1u << static_cast<int>(rmsnorm::Convention::standard)) | (1u << static_cast<int>(rmsnorm::Convention::gemma));
  v.quant_modes = (1u << static_cast<int>(rmsnorm::Quant::dynamic_token)) | (1u << static_cast<int>(rmsnorm::Quant::per_block));
  for (const PropertyInfo& p : properties::catalog()) {
    if (p.oracle_only) continue;
    CAPTURE(p.id);
    REQUIRE(properties::not_applicable_to(p, v).empty());
    const int draws = 200;
    int inside = 0;
    for (const harness::Case& c : property_draws(p.id.c_str(), v, 0xc1a10000u, draws)) {
      const bool ok = v.supports(c.op) && v.declares(c.dim, c.x_type, c.has_add()) && vector_aligned(c, 16) &&
                      claimed(v.dtypes, static_cast<int>(c.x_type)) && claimed(v.conventions, static_cast<int>(c.convention)) &&
                      (!c.has_quant() || claimed(v.quant_modes, static_cast<int>(c.quant)));
      if (ok) ++inside;
      else if (draws - inside < 3) UNSCOPED_INFO("outside the claims: " << harness::one_line(c));
    }
    CAPTURE(inside, draws);
    CHECK(inside == draws);
  }

  // FP8 with a static scale and bf16 rows only: P7 (fp16 rows; FP8 per token or per block) and
  // P18 (not its op) cannot apply; P14 draws its one FP8 mode.
  rmsnorm::Variant w = v;
  w.name = "test.static_fp8";
  w.ops = 1u << static_cast<int>(rmsnorm::Op::forward_quant);
  w.dtypes = 1u << static_cast<int>(rmsnorm::DType::bf16);
  w.quant_modes = 1u << static_cast<int>(rmsnorm::Quant::static_scale);
  const std::string p7 = properties::not_applicable_to(*properties::find_property("P7"), w);
  CAPTURE(p7);
  CHECK(p7.find("f16") != std::string::npos);
  CHECK_FALSE(properties::not_applicable_to(*properties::find_property("P18"), w).empty());
  REQUIRE(properties::not_applicable_to(*properties::find_property("P14"), w).empty());
  for (const harness::Case& c : property_draws("P14", w, 0xc1a20000u, 100)) {
    CAPTURE(harness::one_line(c));
    CHECK(c.quant == rmsnorm::Quant::static_scale);
    CHECK(c.x_type == rmsnorm::DType::bf16);
    CHECK(w.declares(c.dim, c.x_type, c.has_add()));
  }
}

// Corpus replay is part of every certificate; a variant with no case in its range is certified
// on none (seen on the H200: bwd.staged_rows and bwd.cluster_rows replayed 0 of 47 case files).
// Every product variant, CUDA ones included (the registry is the same without a GPU), has for
// each op family it claims (forward ops, backward ops) at least one corpus case of an op it
// implements with D in its declared range and, where it takes aligned rows only, aligned rows.
TEST_CASE("the corpus holds cases inside every product variant's declared range", "[property][corpus]") {
  std::vector<harness::Case> corpus;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(RMSNORM_CORPUS_DIR)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".case") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    harness::Case c;
    std::string error;
    INFO(entry.path().string() << ": " << error);
    REQUIRE(harness::parse_case(text.str(), c, error));
    corpus.push_back(c);
  }
  REQUIRE(corpus.size() >= 10);
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    // The corpus is this tree's: a plugin kernel's own range is covered by its generated cases.
    if (v.is_mutant() || v.external) continue;
    for (const bool forward : {true, false}) {
      bool claims = false;
      int inside = 0;
      for (const harness::Case& c : corpus) {
        if (c.is_forward() != forward) continue;
        if (!v.supports(c.op)) continue;
        claims = true;
        if (!v.declares(c.dim, c.x_type, c.has_add())) continue;
        if (v.aligned_rows && !vector_aligned(c)) continue;
        if (v.packed_rows && !packed(c)) continue;
        ++inside;
      }
      if (!claims) continue;
      CAPTURE(v.name, forward, inside);
      CHECK(inside > 0);
    }
  }
}
