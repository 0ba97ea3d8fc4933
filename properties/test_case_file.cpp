// The case-file format and the value generators: round trips, errors with line numbers, no
// crash on garbage, determinism and the regimes actually reached.
#include <cmath>
#include <cstring>
#include <string>

#include <rapidcheck.h>

#include "properties/generators.h"
#include "harness/case_file.h"
#include "harness/catch.h"
#include "rc_support.h"
#include "rmsnorm/formats.h"

namespace {

using harness::Case;

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (bits(a[i]) != bits(b[i]) && !(std::isnan(a[i]) && std::isnan(b[i]))) return false;
  return true;
}

bool same_case(const Case& a, const Case& b) {
  return a.op == b.op && a.variant == b.variant && a.rows == b.rows && a.dim == b.dim && a.x_type == b.x_type &&
         a.g_type == b.g_type && a.y_type == b.y_type && (!a.is_forward() ? a.dg_type == b.dg_type : true) &&
         a.convention == b.convention && a.quant == b.quant && bits(a.eps) == bits(b.eps) &&
         (a.quant != rmsnorm::Quant::static_scale || bits(a.static_scale) == bits(b.static_scale)) &&
         a.layout.to_string() == b.layout.to_string() && a.generator == b.generator && a.seed == b.seed &&
         same_floats(a.x, b.x) && same_floats(a.g, b.g) && same_floats(a.o, b.o) && same_floats(a.dy, b.dy) &&
         a.property == b.property && a.property_params == b.property_params && a.expect_y == b.expect_y &&
         a.expect_dx == b.expect_dx;
}

// A drawn case, sometimes turned into explicit values (hex floats, NaN, ±0, subnormals).
rc::Gen<Case> gen_any_case() {
  return rc::gen::exec([]() {
    properties::RcChooser ch;
    const auto& cat = properties::catalog();
    const properties::PropertyInfo& p = cat[ch.between(0, static_cast<std::int64_t>(cat.size()) - 1)];
    Case c = properties::draw_property_case(p, ch, nullptr);
    if (c.rows * c.dim <= 4096 && ch.pick({1, 1}) == 1) {
      harness::CaseValues v;
      std::string err;
      RC_ASSERT(harness::materialize(c, v, err));
      c.generator.clear();
      c.seed = 0;
      c.x = v.x;
      c.o = v.o;
      c.g = c.convention == rmsnorm::Convention::no_weight ? std::vector<float>{} : v.g;
      c.dy = v.dy;
      c.dresidual = v.dresidual;
    }
    c.note = "drawn; for the round trip";
    return c;
  });
}

}  // namespace

TEST_CASE("formatting a case and parsing it back yields the same case, bit for bit", "[case_file]") {
  const bool ok = rc::check("format_case then parse_case is the identity", [] {
    const Case c = *gen_any_case();
    Case back;
    std::string err;
    const std::string text = harness::format_case(c);
    RC_ASSERT(harness::parse_case(text, back, err));
    RC_ASSERT(same_case(c, back));
  });
  CHECK(ok);
}

TEST_CASE("the one-line form parses back to the same case (failure lines paste into files)", "[case_file]") {
  const bool ok = rc::check("one_line then parse_case is the identity", [] {
    const Case c = *gen_any_case();
    Case back;
    std::string err;
    const std::string line = harness::one_line(c);
    RC_ASSERT(line.find('\n') == std::string::npos);
    RC_ASSERT(harness::parse_case(line, back, err));
    RC_ASSERT(same_case(c, back));
    // Materializing is deterministic: the same values from the line as from the case.
    harness::CaseValues a, b;
    RC_ASSERT(harness::materialize(c, a, err));
    RC_ASSERT(harness::materialize(back, b, err));
    RC_ASSERT(same_floats(a.x, b.x));
    RC_ASSERT(same_floats(a.g, b.g));
  });
  CHECK(ok);
}

TEST_CASE("bad case files give an error naming the line and never crash", "[case_file]") {
  struct Bad { const char* text; const char* expect; };
  const Bad bad[] = {
      {"op = forward\ndim = 4\nfoo = 1\n", "line 3: unknown key 'foo'"},
      {"op = sideways\n", "line 1: unknown op"},
      {"dim = 4\ndim = 5\n", "line 2: duplicate key"},
      {"op = forward\n\n# comment\ndim = four\n", "line 4: dim 'four' is not an integer"},
      {"dim = 2\nx = 1 zebra\n", "line 2: x: 'zebra' is not a number"},
      {"dim = 2\nlayout = x_pad=-1\n", "line 2: layout: x_pad must be"},
      {"dim = 2\nlayout = y_offset=999\n", "line 2: layout: y_offset must be"},
      {"dim=2;x=1,2,3;g=1,1", "x has 3 values, expected 2"},
      {"dim=2;x_type=e4m3;x=1,2;g=1,1", "x_type must be"},
      {"dim=0;x=", "dim must be"},
      {"op=forward;dim=2;generator=regimes", "generator needs a seed"},
      {"op=forward;dim=2;eps=-1;x=1,2;g=1,1", "eps must be"},
      {"just some words", "line 1: expected 'key = value'"},
      {"dim=2;oops", "entry 2: expected 'key = value'"},
      {"dim=2;seed=-5;generator=regimes", "seed '-5'"},
      {"rows=1099511627777;dim=1", "rows must be"},
      {"rows=65536;dim=65536", "rows·dim exceeds"},
      {"", "the case is empty"},
      {"# only a comment\n\n", "the case is empty"},
  };
  for (const Bad& b : bad) {
    Case c;
    std::string err;
    INFO("text: " << b.text);
    CHECK_FALSE(harness::parse_case(b.text, c, err));
    INFO("error: " << err);
    CHECK(err.find(b.expect) != std::string::npos);
  }
  // Arbitrary text: parse_case answers, whatever it is.
  const bool ok = rc::check("parse_case never crashes", [](const std::string& text) {
    Case c;
    std::string err;
    if (!harness::parse_case(text, c, err)) RC_ASSERT(!err.empty());
  });
  CHECK(ok);
}

TEST_CASE("a row's generated values depend only on the seed and its index", "[case_file]") {
  const bool ok = rc::check("dropping rows leaves the remaining rows' values unchanged", [] {
    properties::RcChooser ch;
    Case c = generators::draw_case(ch, generators::Domain{});
    RC_PRE(c.rows >= 2);
    harness::CaseValues all, fewer;
    std::string err;
    RC_ASSERT(harness::materialize(c, all, err));
    c.rows -= 1;
    RC_ASSERT(harness::materialize(c, fewer, err));
    RC_ASSERT(same_floats(fewer.x, std::vector<float>(all.x.begin(), all.x.begin() + c.rows * c.dim)));
  });
  CHECK(ok);
}

TEST_CASE("draws aimed at a variant that takes FP8 outputs of 16-bit rows only give it no fp32 rows with them",
          "[case_file]") {
  // The flags fwd.shifted_row declares (rows in one frame, FP8 outputs of 16-bit rows only).
  rmsnorm::Variant v;
  v.name = "test.frame_fp8";
  v.max_dim = 8192;
  v.shared_frame = true;
  v.quant_16bit_rows = true;
  generators::Domain d;
  d.ops = {rmsnorm::Op::forward, rmsnorm::Op::add_forward, rmsnorm::Op::forward_quant, rmsnorm::Op::add_forward_quant};
  generators::Domain only32 = d;
  REQUIRE(d.aim_at(v).empty());
  d.target_always = true;
  int fp8 = 0, fp8_f32 = 0, f32 = 0;
  const bool ok = rc::check("an aimed FP8 draw has 16-bit rows", [&] {
    properties::RcChooser ch;
    const Case c = generators::draw_case(ch, d);
    f32 += c.x_type == rmsnorm::DType::f32;
    if (!c.has_quant()) return;
    ++fp8;
    fp8_f32 += c.x_type == rmsnorm::DType::f32;
    RC_ASSERT(c.x_type != rmsnorm::DType::f32);
  });
  CHECK(ok);
  CHECK(fp8 > 0);  // the FP8 ops are still drawn
  CHECK(f32 > 0);  // and fp32 rows for the other ops
  CHECK(fp8_f32 == 0);
  // Without 16-bit rows in the domain, the FP8 ops are dropped, not drawn to be declined.
  only32.x_types = {rmsnorm::DType::f32};
  REQUIRE(only32.aim_at(v).empty());
  for (const rmsnorm::Op op : only32.ops)
    CHECK_FALSE((op == rmsnorm::Op::forward_quant || op == rmsnorm::Op::add_forward_quant));
}

TEST_CASE("the value regimes reach the values that matter and stay representable in their type", "[case_file]") {
  using generators::Regime;
  const rmsnorm::DType types[] = {rmsnorm::DType::f16, rmsnorm::DType::bf16, rmsnorm::DType::f32};
  for (rmsnorm::DType t : types) {
    INFO("type " << rmsnorm::to_string(t));
    generators::Rng rng(42);
    auto row = [&](Regime r, float eps) { return generators::gen_row_values(r, 256, t, eps, rng); };
    bool big = false, sub = false, nan = false, inf = false, neg_zero = false, over_fp16_square = false;
    for (int k = 0; k < 20; ++k) {
      for (float v : row(Regime::large, 1e-6f)) {
        big = big || std::fabs(v) >= 65000.0f;
        over_fp16_square = over_fp16_square || std::fabs(v) * std::fabs(v) > 65504.0f;
        CHECK(rmsnorm::round_to(v, t) == v);
      }
      for (float v : row(Regime::subnormal, 1e-6f)) {
        sub = sub || (v != 0 && std::fabs(v) < rmsnorm::traits_of(t).min_normal());
        CHECK(rmsnorm::round_to(v, t) == v);
      }
      for (float v : row(Regime::special, 1e-6f)) nan = nan || std::isnan(v), inf = inf || std::isinf(v);
      for (float v : row(Regime::zeros, 1e-6f)) {
        CHECK(v == 0.0f);
        neg_zero = neg_zero || std::signbit(v);
      }
      for (float v : row(Regime::zeros, 0.0f)) CHECK(v != 0.0f);  // never a NaN row by accident
      for (float v : row(Regime::tiny, 1e-5f)) CHECK((std::fabs(v) > 4e-5f && std::fabs(v) < 2.1e-4f));
      const std::vector<float> constant = row(Regime::constant, 1e-6f);
      for (float v : constant) CHECK(v == constant[0]);
      // huge: Σx² stays finite in fp32.
      double sum = 0;
      for (float v : row(Regime::huge, 0.0f)) sum += static_cast<double>(v) * v;
      CHECK(sum < 3.0e38);
    }
    CHECK(big);
    CHECK(sub);
    CHECK(nan);
    CHECK(inf);
    CHECK(neg_zero);
    CHECK(over_fp16_square);
  }
}

TEST_CASE("layouts print only what differs from dense and parse back", "[case_file]") {
  harness::Layout l;
  CHECK(l.to_string().empty());
  l.x_pad = 3;
  l.y_offset = 2;
  l.in_place = true;
  CHECK(l.to_string() == "x_pad=3 y_offset=2 in_place=1");
  harness::Layout back;
  std::string err;
  REQUIRE(harness::Layout::parse(l.to_string(), back, err));
  CHECK(back.to_string() == l.to_string());
  CHECK_FALSE(harness::Layout::parse("x_pad=3 bogus=1", back, err));
  CHECK(err.find("bogus") != std::string::npos);
}

// Decimal values are rounded once, straight from their text to their tensor's type, as a
// correctly rounded parser would: never text → double → float → type.
TEST_CASE("decimal values a hair off a rounding boundary are rounded once to their type", "[case_file]") {
  struct Once { const char* type; const char* text; float want; };
  const Once cases[] = {
      // 1 + 2^-8 is the midpoint of bf16's 1 and 1 + 2^-7 (and an fp32 value): the text decides.
      {"bf16", "1.00390625000001", 1.0078125f},
      {"bf16", "1.00390624999999", 1.0f},
      {"bf16", "1.00390625", 1.0f},  // the tie itself: to even
      {"bf16", "-1.00390625000001", -1.0078125f},
      // 1 + 2^-24 is fp32's midpoint; ±2^-80 off it, strtod's double is the midpoint itself.
      {"f32", "1.00000005960464477539062582718061255302767487140869206996285356581211090087890625",
       1.00000011920928955078125f},
      {"f32", "1.00000005960464477539062417281938744697232512859130793003714643418788909912109375", 1.0f},
      // f16: 1 + 2^-11 is the midpoint of 1 and 1 + 2^-10.
      {"f16", "1.000488281250000001", 1.0009765625f},
      {"f16", "0x1.002p+0", 1.0f},  // hex is exact: the tie, to even
  };
  for (const Once& o : cases) {
    harness::Case c;
    std::string err;
    const std::string text = std::string("op=forward;dim=1;x_type=") + o.type + ";g_type=" + o.type + ";x=" + o.text + ";g=1";
    INFO(text);
    REQUIRE(harness::parse_case(text, c, err));
    CHECK(c.x[0] == o.want);
    harness::CaseValues v;
    REQUIRE(harness::materialize(c, v, err));
    CHECK(v.x[0] == o.want);
  }
}
