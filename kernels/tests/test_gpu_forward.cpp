// The CUDA forward family on the GPU (docs/contract.md#semantics; docs/properties.md P1, P5–P9,
// P13, P14, P16, P18, P19):
// every registered non-mutant device variant of each forward op against the oracle, laid out in
// poisoned memory by the harness (odd strides, misaligned bases, in place), on the seed's widths
// and the QK-norm widths, all input types, special rows, every FP8 mode behind both fusions, and
// one case with R·D > 2^31 elements. Every case comes from a printed 64-bit seed; a failure
// prints the seed, the case, the layout and the harness's one-line summary.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/catch.h"
#include "harness/probe_args.h"
#include "harness/run.h"
#include "oracle/oracle.h"
#include "rmsnorm/formats.h"
#include "rmsnorm/variant.h"

#if RMSNORM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using rmsnorm::Convention;
using rmsnorm::DType;
using rmsnorm::Op;
using rmsnorm::Quant;

// What the rows hold.
enum class Values { normal, zero_rows, tiny, fp16_extremes, nan_inf_rows, outliers };

const char* to_string(Values v) {
  switch (v) {
    case Values::normal: return "normal";
    case Values::zero_rows: return "zero_rows";
    case Values::tiny: return "tiny";
    case Values::fp16_extremes: return "fp16_extremes";
    case Values::nan_inf_rows: return "nan_inf_rows";
    default: return "outliers";
  }
}

struct Spec {
  std::int64_t rows = 1, dim = 1;
  DType x = DType::bf16, g = DType::bf16, y = DType::bf16;
  Convention conv = Convention::standard;
  Quant quant = Quant::none;
  float eps = 1e-6f;
  float static_scale = 0.05f;
  bool add = false;
  Values values = Values::normal;
  std::uint64_t seed = 1;
  std::string describe() const {
    std::ostringstream s;
    s << "seed=" << seed << " R=" << rows << " D=" << dim << " x=" << rmsnorm::to_string(x)
      << " g=" << rmsnorm::to_string(g) << " y=" << rmsnorm::to_string(y) << " conv=" << rmsnorm::to_string(conv)
      << " quant=" << rmsnorm::to_string(quant) << " eps=" << eps << " add=" << add
      << " values=" << to_string(values);
    return s.str();
  }
  Op op() const {
    const bool q = quant != Quant::none;
    return add ? (q ? Op::add_forward_quant : Op::add_forward) : (q ? Op::forward_quant : Op::forward);
  }
};

// Dense values exactly representable in t: a normal draw, per-row scale over a few octaves.
void fill_row(std::mt19937_64& rng, float* row, std::int64_t dim, DType t, double scale) {
  std::normal_distribution<double> n(0.0, 1.0);
  for (std::int64_t j = 0; j < dim; ++j) row[j] = static_cast<float>(rmsnorm::round_to(scale * n(rng), t));
}

oracle::ForwardCase make_case(const Spec& s) {
  std::mt19937_64 rng(s.seed);
  std::uniform_int_distribution<int> octave(-3, 3);
  oracle::ForwardCase c;
  c.rows = s.rows;
  c.dim = s.dim;
  c.x_type = s.x;
  c.g_type = s.g;
  c.y_type = s.y;
  c.convention = s.conv;
  c.quant = s.quant;
  c.eps = s.eps;
  c.static_scale = s.static_scale;
  const std::size_t n = static_cast<std::size_t>(s.rows * s.dim);
  c.x.resize(n);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    float* row = c.x.data() + r * s.dim;
    double scale = std::ldexp(1.0, octave(rng));
    if (s.values == Values::tiny) scale = 1e-4;  // ε-dominated (P5)
    fill_row(rng, row, s.dim, s.x, scale);
    switch (s.values) {
      case Values::zero_rows:
        if (r % 2 == 0) std::fill(row, row + s.dim, 0.0f);
        break;
      case Values::fp16_extremes:  // P7: squares overflow fp16 but not fp32
        for (std::int64_t j = 0; j < s.dim; ++j)
          row[j] = (j % 3 == 0) ? ((j & 1) ? -300.0f : 300.0f) : (j % 3 == 1 ? 65504.0f : row[j]);
        break;
      case Values::nan_inf_rows:  // P16: only their row is affected
        if (r % 3 == 1) row[(r * 7) % s.dim] = std::numeric_limits<float>::quiet_NaN();
        if (r % 3 == 2) row[(r * 5) % s.dim] = (r & 1) ? -std::numeric_limits<float>::infinity()
                                                       : std::numeric_limits<float>::infinity();
        break;
      case Values::outliers:
        row[(r * 11) % s.dim] = static_cast<float>(rmsnorm::round_to(1000.0, s.x));
        break;
      default: break;
    }
  }
  if (s.add) {
    c.o.resize(n);
    for (std::int64_t r = 0; r < s.rows; ++r) fill_row(rng, c.o.data() + r * s.dim, s.dim, s.x, 0.5);
  }
  if (s.conv != Convention::no_weight) {
    c.g.resize(static_cast<std::size_t>(s.dim));
    std::normal_distribution<double> nd(0.0, 1.0);
    const double base = s.conv == Convention::gemma ? 0.0 : 1.0;
    for (auto& gv : c.g) gv = static_cast<float>(rmsnorm::round_to(base + 0.25 * nd(rng), s.g));
  }
  return c;
}

// RMSNORM_VARIANTS=<glob> narrows a run to the matching variants (a GPU session shards this
// binary by variant, one process each); narrowed, a case that no selected variant takes is
// skipped rather than failed (the unnarrowed run requires one to take it).
const char* narrowing() { return std::getenv("RMSNORM_VARIANTS"); }
bool selected(const std::string& name) {
  const char* glob = narrowing();
  return glob == nullptr || rmsnorm::glob_match(glob, name);
}

std::vector<const rmsnorm::Variant*> device_products(Op op) {
  std::vector<const rmsnorm::Variant*> out;
  for (const rmsnorm::Variant& v : rmsnorm::registry())
    if (!v.is_mutant() && v.memory == rmsnorm::Memory::device && v.supports(op) && v.run_forward && selected(v.name))
      out.push_back(&v);
  return out;
}

std::uint64_t g_seed_counter = 0x5eed0000ull;

// Runs every device product variant of the spec's op on the case and layout. A variant may
// decline (unsupported / misaligned); at least one must run it, and every run must pass.
void check_all(Spec s, const harness::Layout& layout = {}) {
  s.seed = ++g_seed_counter;
  const oracle::ForwardCase c = make_case(s);
  const auto variants = device_products(s.op());
  if (variants.empty() && narrowing()) return;
  REQUIRE(!variants.empty());
  int ran = 0;
  for (const rmsnorm::Variant* v : variants) {
    const harness::Outcome out = harness::run_forward(*v, c, layout);
    using Code = rmsnorm::Status::Code;
    if (out.status.code == Code::unsupported || out.status.code == Code::misaligned) continue;
    ++ran;
    INFO(v->name << " " << s.describe() << " layout[" << layout.to_string() << "]: " << out.summary());
    CHECK(out.pass());
  }
  INFO(s.describe() << " layout[" << layout.to_string() << "]");
  CHECK((ran > 0 || narrowing()));
}

const DType kTypes[] = {DType::bf16, DType::f16, DType::f32};

// A 16-bit row of 15 bulk_ring pieces (14 * 8192 + 8 elements): one more than the 14 slots of a
// 227 KB block (variants/fwd_bulk_ring.cuh).
constexpr std::int64_t kRingTooWide = 14 * 8192 + 8;

// One shape of many rows (its Spec with a fresh seed; FP8 outputs as e4m3). require_rows_pass
// runs it on one named variant laid out per `layout`, requires a launch and a pass, and returns
// the case for further runs.
struct RowsShape {
  std::int64_t dim, rows;
  DType t;
  Quant quant;
  bool add;
  Convention conv = Convention::standard;
  bool g32 = false;  // fp32 weights (else the row's type)
  Values values = Values::normal;
};
Spec rows_spec(const RowsShape& sh) {
  Spec s;
  s.dim = sh.dim;
  s.rows = sh.rows;
  s.x = sh.t;
  s.g = sh.g32 ? DType::f32 : sh.t;
  s.y = sh.quant == Quant::none ? sh.t : DType::e4m3;
  s.conv = sh.conv;
  s.quant = sh.quant;
  s.add = sh.add;
  s.values = sh.values;
  s.seed = ++g_seed_counter;
  return s;
}
oracle::ForwardCase require_rows_pass(const rmsnorm::Variant& v, const RowsShape& sh, const harness::Layout& layout) {
  const Spec s = rows_spec(sh);
  const oracle::ForwardCase c = make_case(s);
  const harness::Outcome out = harness::run_forward(v, c, layout);
  INFO(v.name << " " << s.describe() << " layout[" << layout.to_string() << "]: " << out.summary());
  REQUIRE(out.status.ok());
  CHECK(out.pass());
  return c;
}

// Bit for bit (a NaN equals only the same NaN pattern, -0 differs from +0): all of a against b,
// and a against the start of b (a batch's first rows run alone): same_bits and prefix_bits.
bool prefix_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() <= b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && prefix_bits(a, b);
}

// A shape of many padded rows (elements between rows of x, y and o: 16-byte rows, FP8 y too) for
// a persistent kernel. check_many_rows runs `v` on each: it passes the oracle (with the harness's
// guard bands and poisoned row gaps), repeats bitwise, and its first 5 rows equal a batch of those
// 5 rows alone (y, rstd, the FP8 scales, the residual); with a `reference` of the same mapping and
// order, it also equals that variant bit for bit.
struct PaddedRows {
  RowsShape rows;
  std::int64_t pad;
};
void check_many_rows(const rmsnorm::Variant& v, const std::vector<PaddedRows>& shapes,
                     const rmsnorm::Variant* reference = nullptr) {
  for (const PaddedRows& sh : shapes) {
    harness::Layout l;
    l.x_pad = l.y_pad = l.o_pad = sh.pad;
    const oracle::ForwardCase c = require_rows_pass(v, sh.rows, l);
    const harness::RawForward a = harness::execute_forward(v, c, l);
    const harness::RawForward b = harness::execute_forward(v, c, l);
    const std::int64_t k = 5;
    const harness::RawForward h = harness::execute_forward(v, harness::first_rows(c, k), l);
    INFO(v.name << " D=" << sh.rows.dim << " R=" << sh.rows.rows << " x=" << rmsnorm::to_string(sh.rows.t)
                << " quant=" << rmsnorm::to_string(sh.rows.quant) << " add=" << sh.rows.add << " pad=" << sh.pad
                << " conv=" << rmsnorm::to_string(sh.rows.conv) << " g32=" << sh.rows.g32
                << " values=" << to_string(sh.rows.values));
    REQUIRE(a.status.ok());
    REQUIRE(h.status.ok());
    CHECK(a.result.y == b.result.y);
    CHECK(same_bits(a.result.rstd, b.result.rstd));
    CHECK(same_bits(a.result.scale, b.result.scale));
    REQUIRE(h.result.y.size() <= a.result.y.size());
    CHECK(std::equal(h.result.y.begin(), h.result.y.end(), a.result.y.begin()));
    CHECK(prefix_bits(h.result.rstd, a.result.rstd));
    CHECK(prefix_bits(h.result.scale, a.result.scale));
    if (sh.rows.add) CHECK(std::equal(h.result.h.begin(), h.result.h.end(), a.result.h.begin()));
    if (reference != nullptr) {
      const harness::RawForward ref = harness::execute_forward(*reference, c, l);
      INFO("against " << reference->name);
      REQUIRE(ref.status.ok());
      CHECK(same_bits(a.result.rstd, ref.result.rstd));
      if (sh.rows.add) CHECK(a.result.h == ref.result.h);
      // A dynamic per-token FP8 scale may be formed two ways (both within the oracle's bound,
      // both checked against it above): fwd.large_d's fused amax, RN(r · max|RN(h·w)|), where
      // its y stash does not fit, and the max over the ŷ_j elsewhere. Their last bits may differ, and the codes with them: y and the scales are
      // compared bitwise only under the other scales.
      if (sh.rows.quant != Quant::dynamic_token) {
        CHECK(a.result.y == ref.result.y);
        CHECK(same_bits(a.result.scale, ref.result.scale));
      }
    }
  }
}

// The same rows without FP8 outputs on `v`: the same rstd bits (and the same residual under the
// fused add): the FP8 forms share the plain forward's row sum.
void check_rstd_as_without_fp8(const rmsnorm::Variant& v, const std::vector<PaddedRows>& shapes) {
  for (const PaddedRows& sh : shapes) {
    harness::Layout l;
    l.x_pad = l.y_pad = l.o_pad = sh.pad;
    const oracle::ForwardCase q = make_case(rows_spec(sh.rows));
    oracle::ForwardCase plain = q;
    plain.quant = Quant::none;
    plain.y_type = sh.rows.t;
    const harness::RawForward a = harness::execute_forward(v, q, l);
    const harness::RawForward b = harness::execute_forward(v, plain, l);
    INFO(v.name << " D=" << sh.rows.dim << " x=" << rmsnorm::to_string(sh.rows.t) << " add=" << sh.rows.add);
    REQUIRE(a.status.ok());
    REQUIRE(b.status.ok());
    CHECK(same_bits(a.result.rstd, b.result.rstd));
    if (sh.rows.add) CHECK(a.result.h == b.result.h);
  }
}

// The FP8 shapes of variant `name` through both checks above. Returns the variant, or nullptr
// where the run is narrowed to other variants (RMSNORM_VARIANTS).
const rmsnorm::Variant* check_fp8_rows(const char* name, const std::vector<PaddedRows>& shapes) {
  const rmsnorm::Variant* v = rmsnorm::find_variant(name);
  REQUIRE(v != nullptr);
  if (!selected(v->name)) return nullptr;
  check_many_rows(*v, shapes);
  check_rstd_as_without_fp8(*v, shapes);
  return v;
}

}  // namespace

TEST_CASE("forward: seed widths and QK-norm widths, every type", "[gpu][widths]") {
  const std::int64_t widths[] = {1, 7, 8, 64, 96, 128, 192, 256, 1000, 1024, 1025, 2048, 4097, 8191, 16384, 20000, 32768, 65536};
  for (DType t : kTypes)
    for (std::int64_t d : widths) {
      Spec s;
      s.dim = d;
      s.rows = d >= 16384 ? 3 : (d >= 1024 ? 9 : 67);
      s.x = s.g = s.y = t;
      check_all(s);
      if (t != DType::f32) {
        s.g = DType::f32;  // fp32 weights with 16-bit activations
        check_all(s);
      }
    }
}

TEST_CASE("forward: conventions and eps", "[gpu][conventions]") {
  for (Convention conv : {Convention::gemma, Convention::no_weight, Convention::llama})
    for (std::int64_t d : {7, 128, 1025, 4097, 65536}) {
      Spec s;
      s.dim = d;
      s.rows = 5;
      s.conv = conv;
      check_all(s);
      s.x = s.g = s.y = DType::f16;
      check_all(s);
    }
  Spec s;
  s.dim = 1025;
  s.rows = 4;
  s.eps = 0.0f;  // P4 regime: no ε
  check_all(s);
}

TEST_CASE("forward: layouts (odd strides, misaligned bases, in place)", "[gpu][layouts]") {
  std::vector<harness::Layout> layouts(7);
  layouts[0].x_pad = 3, layouts[0].y_pad = 5;                       // odd strides: scalar only
  layouts[1].x_pad = 8, layouts[1].y_pad = 16;                      // aligned pads: vector paths
  layouts[2].x_offset = 2, layouts[2].y_offset = 6;                 // misaligned bases
  layouts[3].g_offset = 4;                                          // misaligned weight
  layouts[4].in_place = true;
  layouts[5].in_place = true, layouts[5].x_pad = 8, layouts[5].y_pad = 8;
  layouts[6].x_offset = 16, layouts[6].y_offset = 32, layouts[6].g_offset = 16;  // aligned offsets
  for (const auto& l : layouts)
    for (DType t : kTypes)
      for (std::int64_t d : {1, 7, 128, 1025, 4097, 65536}) {
        Spec s;
        s.dim = d;
        s.rows = d >= 4097 ? 3 : 11;
        s.x = s.g = s.y = t;
        check_all(s, l);
        Spec a = s;  // fused add in the same layout (in place: y aliases o)
        a.add = true;
        harness::Layout la = l;
        la.o_pad = l.x_pad;
        la.o_offset = l.x_offset;
        check_all(a, la);
      }
}

TEST_CASE("forward: special rows (zero, tiny, ±300/65504 fp16, NaN/Inf, outliers)", "[gpu][special]") {
  for (Values v : {Values::zero_rows, Values::tiny, Values::fp16_extremes, Values::nan_inf_rows, Values::outliers})
    for (DType t : kTypes)
      for (std::int64_t d : {7, 256, 1025, 8191, 65536}) {
        Spec s;
        s.dim = d;
        s.rows = 6;
        s.x = s.g = s.y = t;
        s.values = v;
        if (v == Values::tiny) s.eps = 1e-5f;
        if (v == Values::fp16_extremes && t != DType::f16) continue;
        check_all(s);
        s.add = true;
        check_all(s);
      }
}

TEST_CASE("forward: fused add", "[gpu]") {
  for (DType t : kTypes)
    for (std::int64_t d : {1, 7, 64, 128, 1025, 4096, 5120, 8191, 32768, 65536}) {
      Spec s;
      s.dim = d;
      s.rows = d >= 8191 ? 3 : 13;
      s.x = s.g = s.y = t;
      s.add = true;
      check_all(s);
    }
}

TEST_CASE("forward: FP8 quantization, every mode, with and without fused add", "[gpu][fp8]") {
  for (DType fp8 : {DType::e4m3, DType::e5m2})
    for (Quant q : {Quant::static_scale, Quant::dynamic_token, Quant::per_block})
      for (DType t : kTypes)
        for (std::int64_t d : {1, 7, 64, 128, 129, 200, 1025, 4096, 4097, 12289, 16384, 65536}) {
          Spec s;
          s.dim = d;
          s.rows = d >= 4096 ? 3 : 9;
          s.x = s.g = t;
          s.y = fp8;
          s.quant = q;
          s.static_scale = q == Quant::static_scale ? 0.004f : 1.0f;  // saturates some values (P14)
          check_all(s);
          s.add = true;
          check_all(s);
          if (d == 129 || d == 1025) {
            s.values = Values::zero_rows;  // P14: zero rows give finite scales and q = 0
            check_all(s);
            s.values = Values::nan_inf_rows;
            check_all(s);
          }
        }
}

TEST_CASE("forward: R = 0 is a no-op, batch invariance", "[gpu]") {
  for (const rmsnorm::Variant* v : device_products(Op::forward)) {
    rmsnorm::ForwardArgs a;
    a.rows = 0;
    a.dim = 1025;
    a.x = {nullptr, DType::bf16, 1025};
    a.y = {nullptr, DType::bf16, 1025};
    a.g = nullptr;
    a.convention = Convention::no_weight;
    INFO(v->name);
    CHECK(v->run_forward(a).ok());
  }
  // A row alone and inside a batch gives the same bits (docs/properties.md#p11); past the few-row
  // forms' rows (few_rows_form: at most 512) the batch takes the many-row forms, the row alone the
  // few-row ones.
  for (std::int64_t d : {7, 128, 1025, 8192, 65536}) {
    Spec s;
    s.dim = d;
    s.rows = d > 8192 ? 520 : 600;
    s.seed = 77;
    const oracle::ForwardCase batch = make_case(s);
    oracle::ForwardCase one = batch;
    one.rows = 1;
    one.x.assign(batch.x.begin() + 17 * d, batch.x.begin() + 18 * d);
    for (const rmsnorm::Variant* v : device_products(Op::forward)) {
      const auto rb = harness::execute_forward(*v, batch, {});
      const auto r1 = harness::execute_forward(*v, one, {});
      if (!rb.status.ok() || !r1.status.ok()) continue;
      const std::vector<std::uint32_t> row17(rb.result.y.begin() + 17 * d, rb.result.y.begin() + 18 * d);
      INFO(v->name << " D=" << d);
      CHECK(row17 == r1.result.y);
      const auto rb2 = harness::execute_forward(*v, batch, {});
      CHECK(rb2.result.y == rb.result.y);  // run to run
    }
  }
}

// Persistent grids (fwd.block_row.staged: a few blocks per SM, each walking rows blockIdx.x + k·grid
// through a ring of shared-memory stages) wrap their rings only when a block gets more rows than
// it has stages; the property draws (R <= 300) never get there. R·D = 2^25 here: 8-16 rows per
// block. Every such run must pass the oracle and equal fwd.block_row (one row per block, the same
// thread mapping and order) bit for bit: y, rstd, the residual, the FP8 scales.
TEST_CASE("forward: persistent grids over many rows per block match the oracle and fwd.block_row bitwise", "[gpu][many_rows]") {
  const rmsnorm::Variant* reference = rmsnorm::find_variant("fwd.block_row");
  const rmsnorm::Variant* staged = rmsnorm::find_variant("fwd.block_row.staged");
  REQUIRE(reference != nullptr);
  REQUIRE(staged != nullptr);
  if (!selected(staged->name)) return;
  struct Shape {
    std::int64_t dim;
    DType t;
    Quant quant;
    bool add;
  };
  const Shape shapes[] = {{8192, DType::bf16, Quant::dynamic_token, false}, {8192, DType::bf16, Quant::dynamic_token, true},
                          {6144, DType::f32, Quant::dynamic_token, false},  {4104, DType::bf16, Quant::per_block, false},
                          {8192, DType::f16, Quant::per_block, true},       {5120, DType::bf16, Quant::static_scale, true}};
  for (const Shape& sh : shapes) {
    const Spec s = rows_spec({sh.dim, (std::int64_t{1} << 25) / sh.dim, sh.t, sh.quant, sh.add});
    const oracle::ForwardCase c = make_case(s);
    const auto ref = harness::execute_forward(*reference, c, {});
    REQUIRE(ref.status.ok());
    const harness::Outcome out = harness::run_forward(*staged, c, {});
    INFO(s.describe() << ": " << out.summary());
    REQUIRE(out.status.ok());  // every shape here is inside its range, aligned
    CHECK(out.pass());
    const auto run = harness::execute_forward(*staged, c, {});
    REQUIRE(run.status.ok());
    CHECK(run.result.y == ref.result.y);
    CHECK(run.result.rstd == ref.result.rstd);
    CHECK(run.result.h == ref.result.h);
    CHECK(run.result.scale == ref.result.scale);
  }
}

// fwd.element_row.realigned is fwd.element_row's kernel with the row moved through shared memory in
// 16-byte vectors: the same thread mapping, order and arithmetic, so every output bit must equal
// element_row's — on odd widths (every row start at another alignment), odd strides, offset
// bases down to one element, in place, under the fused add and in every FP8 mode, with enough
// rows that every alignment of a row start occurs. Each run also passes the oracle.
TEST_CASE("forward: fwd.element_row.realigned equals fwd.element_row bit for bit", "[gpu][realigned]") {
  const rmsnorm::Variant* reference = rmsnorm::find_variant("fwd.element_row");
  const rmsnorm::Variant* realigned = rmsnorm::find_variant("fwd.element_row.realigned");
  REQUIRE(reference != nullptr);
  REQUIRE(realigned != nullptr);
  if (!selected(realigned->name)) return;
  std::vector<harness::Layout> layouts(6);
  layouts[1].x_pad = 3, layouts[1].y_pad = 5;
  layouts[2].x_offset = 1, layouts[2].y_offset = 3, layouts[2].g_offset = 1;
  layouts[3].in_place = true, layouts[3].x_pad = 1, layouts[3].y_pad = 1;
  layouts[4].x_offset = 7, layouts[4].y_offset = 2, layouts[4].x_pad = 9, layouts[4].y_pad = 2;
  layouts[5].x_pad = 8, layouts[5].y_pad = 8;  // aligned rows: the vectors cover them whole
  int runs = 0;
  for (const auto& l0 : layouts)
    for (DType t : kTypes)
      for (std::int64_t d : {1, 5, 9, 17, 1025, 2049, 4097, 8191}) {
        for (const Quant quant : {Quant::none, Quant::dynamic_token, Quant::per_block, Quant::static_scale})
          for (const bool add : {false, true}) {
            if (l0.in_place && quant != Quant::none) continue;  // y (FP8) cannot alias a 16/32-bit row
            Spec s;
            s.dim = d;
            s.rows = d >= 4097 ? 24 : 40;
            s.x = s.g = t;
            s.y = quant == Quant::none ? t : DType::e4m3;
            s.quant = quant;
            s.add = add;
            s.seed = ++g_seed_counter;
            harness::Layout l = l0;
            if (add) l.o_pad = l.x_pad, l.o_offset = l.x_offset;
            const oracle::ForwardCase c = make_case(s);
            const auto ref = harness::execute_forward(*reference, c, l);
            REQUIRE(ref.status.ok());
            const harness::Outcome out = harness::run_forward(*realigned, c, l);
            INFO(s.describe() << " layout[" << l.to_string() << "]: " << out.summary());
            REQUIRE(out.status.ok());
            CHECK(out.pass());
            const auto run = harness::execute_forward(*realigned, c, l);
            REQUIRE(run.status.ok());
            CHECK(run.result.y == ref.result.y);
            CHECK(run.result.rstd == ref.result.rstd);
            CHECK(run.result.h == ref.result.h);
            CHECK(run.result.scale == ref.result.scale);
            ++runs;
          }
      }
  CHECK(runs > 500);
}

// fwd.large_d and the plain forward of fwd.element_row.realigned run persistent grids (a block walks
// rows blockIdx.x + k·grid, prefetching its next row into L2; realigned_row holds its weights
// across rows): with R several times the grid every block runs several rows, so what a row
// leaves behind (the shared-memory cache, the reduction partials, the held weights) would show
// in the next one. Each run passes the oracle; realigned_row also equals fwd.element_row (its
// kernel with one block per row) bit for bit.
TEST_CASE("forward: persistent grids with several rows per block match the oracle: fwd.large_d and fwd.element_row.realigned", "[gpu]") {
  const rmsnorm::Variant* large = rmsnorm::find_variant("fwd.large_d");
  const rmsnorm::Variant* realigned = rmsnorm::find_variant("fwd.element_row.realigned");
  const rmsnorm::Variant* element = rmsnorm::find_variant("fwd.element_row");
  REQUIRE(large != nullptr);
  REQUIRE(realigned != nullptr);
  REQUIRE(element != nullptr);
  struct Shape {
    const rmsnorm::Variant* v;
    RowsShape rows;
    int x_offset;  // elements: a misaligned base for realigned_row
  };
  // fwd.large_d: 1 block per SM (132 on an H200), so 300 rows give each block 2-3. The plain
  // forward of 128 KB rows keeps a block per row (large_d_persistent): 65536 bf16 is the control.
  // fwd.element_row.realigned: up to 21 blocks of 96 threads per SM at D = 1025 (2772), so 6000 rows.
  const Shape shapes[] = {
      {large, {20000, 300, DType::bf16, Quant::none, false}, 0},   {large, {32768, 300, DType::f16, Quant::none, true}, 0},
      {large, {65536, 300, DType::bf16, Quant::dynamic_token, false}, 0}, {large, {16384, 300, DType::f32, Quant::per_block, true}, 0},
      {large, {65536, 150, DType::bf16, Quant::none, false}, 0},   {realigned, {1025, 6000, DType::bf16, Quant::none, false}, 1},
      {realigned, {8191, 2000, DType::f16, Quant::none, false}, 3}, {realigned, {4097, 3000, DType::f32, Quant::none, false}, 0},
  };
  for (const Shape& sh : shapes) {
    if (!selected(sh.v->name)) continue;
    harness::Layout l;
    l.x_offset = l.y_offset = sh.x_offset;
    const oracle::ForwardCase c = require_rows_pass(*sh.v, sh.rows, l);
    if (sh.v == realigned) {
      const auto ref = harness::execute_forward(*element, c, l);
      REQUIRE(ref.status.ok());
      const auto run = harness::execute_forward(*realigned, c, l);
      REQUIRE(run.status.ok());
      CHECK(run.result.y == ref.result.y);
      CHECK(run.result.rstd == ref.result.rstd);
    }
  }
}

// fwd.cluster_row splits a row over an 8-CTA cluster and walks rows cluster + k·clusters, the
// next row in flight (registers; L2 for FP8 outputs) and the partials double-buffered in every
// CTA's shared memory. H200: 33 clusters of 16-bit rows at D = 65536 (two 512-thread CTAs per SM),
// 16 of fp32 rows (one 1024-thread CTA per SM), so 300 rows give each cluster 9-19 and the slots'
// parity turns many times. Each shape: passes the oracle (with the harness's guard bands and
// poisoned row gaps), repeats bitwise, and its first 5 rows equal a batch of those 5 rows alone
// (y, rstd, the residual, the FP8 scales): one row per cluster there.
TEST_CASE("forward: fwd.cluster_row over many rows per cluster matches the oracle, repeats bitwise, batch invariant", "[gpu]") {
  const rmsnorm::Variant* v = rmsnorm::find_variant("fwd.cluster_row");
  REQUIRE(v != nullptr);
  if (!selected(v->name)) return;
  check_many_rows(*v, {
      {{65536, 300, DType::bf16, Quant::none, false}, 0},          {{65536, 300, DType::f16, Quant::none, true}, 8},
      {{32768, 300, DType::bf16, Quant::dynamic_token, false}, 16}, {{65536, 200, DType::bf16, Quant::per_block, true}, 0},
      {{20000, 300, DType::bf16, Quant::static_scale, true}, 8},    {{16392, 400, DType::f16, Quant::none, false}, 0},
      {{65536, 300, DType::f32, Quant::none, true}, 4},             {{40000, 300, DType::f32, Quant::dynamic_token, true}, 0},
      {{24576, 300, DType::f32, Quant::per_block, false}, 0},       {{1000, 3000, DType::bf16, Quant::dynamic_token, true}, 0},
      {{8, 5000, DType::f16, Quant::none, true}, 0},
  });
}

// fwd.bulk_ring streams each block's rows (blockIdx.x + k·grid, one block per SM) through a ring
// of 1024-chunk slots; a slot is refilled one ring length later and its mbarrier's phase parity
// flips each time. The shapes turn the rings many times (300-5000 rows on a 132-SM H200) at the
// edges of the geometry: a row of 8 pieces in 14 slots; a row filling its ring (P = S: 14 slots of
// bf16, 13 with the fused add's single o slot, 7 of fp32); the fused add's o ring of 1 and 3 slots;
// a partial last chunk (D mod 8 != 0, read from global memory by its thread), alone in its piece
// (D = 8193: that piece's copy moves no bytes); a row of one piece; padded, 16-byte rows; rows
// held in registers (16-bit, at most 8 pieces: slots let go after the first pass) and not (fp32,
// more pieces), with and without a partial chunk; the plain forward's
// weights staged in shared memory (16-bit weights: every convention, none at all included, whose
// copies move no bytes) and not (fp32 weights). Each
// shape: passes the oracle, repeats bitwise, its first 5 rows equal a batch of those rows alone,
// and it equals fwd.large_d (the same mapping and order) bit for bit: rstd, the residual and y.
// FP8 outputs are declined with the reason (fwd.large_d runs them).
TEST_CASE("forward: fwd.bulk_ring over many rows per block matches the oracle and fwd.large_d bitwise, repeats, batch invariant", "[gpu][many_rows]") {
  const rmsnorm::Variant* v = rmsnorm::find_variant("fwd.bulk_ring");
  const rmsnorm::Variant* large_d = rmsnorm::find_variant("fwd.large_d");
  REQUIRE(v != nullptr);
  REQUIRE(large_d != nullptr);
  if (!selected(v->name)) return;
  check_many_rows(*v, {
      {{65536, 300, DType::bf16, Quant::none, false}, 0},           {{65536, 300, DType::f16, Quant::none, true}, 8},
      {{114688, 140, DType::bf16, Quant::none, false}, 0},          {{106496, 140, DType::bf16, Quant::none, true}, 16},
      {{65531, 300, DType::bf16, Quant::none, false}, 5},           {{8193, 600, DType::f16, Quant::none, true}, 7},
      {{40000, 300, DType::f32, Quant::none, true}, 0},             {{57344, 150, DType::f32, Quant::none, false}, 0},
      {{49152, 150, DType::f32, Quant::none, true}, 0},
      {{1000, 3000, DType::bf16, Quant::none, true}, 0},            {{8, 5000, DType::f16, Quant::none, true}, 0},
      {{16384, 2000, DType::bf16, Quant::none, false}, 0},          {{32768, 400, DType::bf16, Quant::none, true}, 0},
      {{49157, 300, DType::f16, Quant::none, true}, 3},             {{8193, 600, DType::bf16, Quant::none, false}, 7},
      {{65536, 300, DType::bf16, Quant::none, false, Convention::no_weight}, 0},
      {{57344, 300, DType::f16, Quant::none, false, Convention::gemma}, 8},
      {{49157, 300, DType::bf16, Quant::none, false, Convention::llama}, 3},
      {{65536, 300, DType::bf16, Quant::none, false, Convention::standard, /*g32=*/true}, 0},
  }, large_d);
  // FP8 outputs, and beyond the ring a row of more pieces than slots: declined with the reason.
  for (Quant q : {Quant::dynamic_token, Quant::per_block}) {
    const oracle::ForwardCase c = make_case(rows_spec({65536, 2, DType::bf16, q, true}));
    const harness::Outcome out = harness::run_forward(*v, c, {});
    INFO(out.summary());
    CHECK(out.status.code == rmsnorm::Status::Code::unsupported);
  }
  // fp32 rows of the fused add: o takes one of the row's slots, so the widest declared is one slot
  // under the plain forward's (49152 above runs it; test_dispatch checks the declaration) and one
  // chunk more is declined.
  {
    const oracle::ForwardCase c = make_case(rows_spec({49160, 2, DType::f32, Quant::none, true}));
    const harness::Outcome out = harness::run_forward(*v, c, {});
    INFO(out.summary());
    CHECK(out.status.code == rmsnorm::Status::Code::unsupported);
  }
  {
    Spec s = rows_spec({kRingTooWide, 2, DType::bf16, Quant::none, false});
    const oracle::ForwardCase c = make_case(s);
    const harness::Outcome out = harness::run_forward(*v, c, {});
    INFO(out.summary());
    CHECK(out.status.code == rmsnorm::Status::Code::unsupported);
  }
}

// The dispatch rules of fwd.cluster_row (the dispatch table): the plain
// forward and the fused add of 16-bit rows past 16384, R <= 64 (the fused add at R = 64 only to
// D = 32768); the FP8 forms of 16-bit rows from D = 16384 to R = 16 (the plain FP8 forward at
// D = 16384 goes to fwd.block_row, first in registration order). Its capability check asks the
// device for cluster launch, so this choice is tested here rather than in test_dispatch.
TEST_CASE("the dispatcher's forward choice for few long rows: fwd.cluster_row", "[gpu]") {
  auto pick = [&](DType x, std::int64_t rows, std::int64_t dim, bool fp8 = false, bool add = false) {
    const rmsnorm::Variant* v = rmsnorm::pick_forward(harness::probe_forward(x, rows, dim, fp8, add), rmsnorm::Memory::device);
    return v ? v->name : std::string("none");
  };
  CHECK(pick(DType::bf16, 1, 65536) == "fwd.cluster_row");
  CHECK(pick(DType::f16, 64, 16392, false, /*add=*/true) == "fwd.cluster_row");
  CHECK(pick(DType::bf16, 16, 32768, false, /*add=*/true) == "fwd.cluster_row");
  CHECK(pick(DType::bf16, 64, 32768, false, /*add=*/true) == "fwd.cluster_row");
  CHECK(pick(DType::bf16, 64, 49152, false, /*add=*/true) == "fwd.large_d");   // the fused add at R = 64 past 32768
  CHECK(pick(DType::bf16, 16, 49152, false, /*add=*/true) == "fwd.cluster_row");
  CHECK(pick(DType::bf16, 64, 49152) == "fwd.cluster_row");                    // the plain forward keeps it
  CHECK(pick(DType::bf16, 65, 65536) == "fwd.large_d");                        // more rows
  CHECK(pick(DType::bf16, 64, 16384) == "fwd.block_row");                      // block_row's range
  CHECK(pick(DType::bf16, 64, 65536, /*fp8=*/true) == "fwd.large_d");          // FP8 outputs: to R = 16
  CHECK(pick(DType::bf16, 17, 32768, /*fp8=*/true) == "fwd.large_d");
  CHECK(pick(DType::bf16, 1, 65536, /*fp8=*/true) == "fwd.cluster_row");
  CHECK(pick(DType::f16, 16, 16384, /*fp8=*/true, /*add=*/true) == "fwd.cluster_row");  // ... from D = 16384
  CHECK(pick(DType::bf16, 16, 16384, /*fp8=*/true) == "fwd.block_row");        // the plain FP8 forward: to 16384 block_row's
  CHECK(pick(DType::bf16, 4, 24576, /*fp8=*/true, /*add=*/true) == "fwd.cluster_row");
  CHECK(pick(DType::bf16, 1, 16383, /*fp8=*/true) != "fwd.cluster_row");
  CHECK(pick(DType::f32, 1, 65536, /*fp8=*/true) != "fwd.cluster_row");
  CHECK(pick(DType::f32, 64, 65536) == "fwd.large_d");                         // fp32 rows
  CHECK(pick(DType::bf16, 64, 65544) == "fwd.large_d");                        // beyond 65536
}

// The dispatch rules of fwd.bulk_ring (the dispatch table): 16-bit rows of
// 40960 < D without FP8 outputs, the fused add to D = 65536 from R = 512, the plain forward with
// 16-bit weights to D = 57344 from R = 4096. Its capability check asks the device for bulk copies
// (sm_90), so this runs here; test_dispatch checks the hint alone.
TEST_CASE("the dispatcher's forward choice for 16-bit rows of 40960 < D: fwd.bulk_ring", "[gpu]") {
  auto pick = [&](DType x, std::int64_t rows, std::int64_t dim, bool fp8 = false, bool add = false) {
    const rmsnorm::Variant* v = rmsnorm::pick_forward(harness::probe_forward(x, rows, dim, fp8, add), rmsnorm::Memory::device);
    return v ? v->name : std::string("none");
  };
  CHECK(pick(DType::bf16, 512, 65536, false, /*add=*/true) == "fwd.bulk_ring");
  CHECK(pick(DType::f16, 32768, 57352, false, /*add=*/true) == "fwd.bulk_ring");
  CHECK(pick(DType::bf16, 4096, 40968, false, /*add=*/true) == "fwd.bulk_ring");
  CHECK(pick(DType::bf16, 4096, 49152) == "fwd.bulk_ring");                        // the plain forward
  CHECK(pick(DType::f16, 32768, 57344) == "fwd.bulk_ring");
  CHECK(pick(DType::bf16, 511, 65536, false, /*add=*/true) == "fwd.large_d");      // fewer rows
  CHECK(pick(DType::bf16, 4096, 40960, false, /*add=*/true) == "fwd.large_d");     // narrower rows
  CHECK(pick(DType::bf16, 4096, 65544, false, /*add=*/true) == "fwd.large_d");     // wider rows
  CHECK(pick(DType::bf16, 4096, 65536) == "fwd.large_d");                          // the plain forward past 57344
  CHECK(pick(DType::bf16, 4095, 49152) == "fwd.large_d");                          // ... below 4096 rows
  CHECK(pick(DType::bf16, 512, 49152) == "fwd.large_d.pair");                      // ... the pair's 256-512 rows
  CHECK(pick(DType::bf16, 4096, 65536, /*fp8=*/true, /*add=*/true) == "fwd.large_d");  // FP8 outputs
  CHECK(pick(DType::f32, 4096, 49152, false, /*add=*/true) == "fwd.large_d");      // fp32 rows
  rmsnorm::ForwardArgs fp32_weights = harness::probe_forward(DType::bf16, 4096, 49152);
  fp32_weights.g_type = DType::f32;
  CHECK(rmsnorm::pick_forward(fp32_weights, rmsnorm::Memory::device)->name == "fwd.large_d");  // fp32 weights
}

// fwd.block_row runs a block per row; for the 16-bit plain forward of rows over 8192, the fp32
// FP8 forward and the 16-bit fused add + FP8 from 16384 rows it asks L2 for the row one wave
// ahead (`ahead`: the blocks that fit at once, fwd_regs_ahead_kernel). With R over a wave the
// prefetching blocks run, on padded strides (the gaps are poisoned, and a prefetch reads nothing
// into a result). H200 waves: 2 blocks of 512 threads per SM at D = 16384 bf16 (264), about 5 of
// 128 threads for fp32 FP8 at D = 4096; the fused add at D = 4096 is the control without it.
TEST_CASE("forward: fwd.block_row over more rows than a wave matches the oracle", "[gpu]") {
  const rmsnorm::Variant* block = rmsnorm::find_variant("fwd.block_row");
  REQUIRE(block != nullptr);
  if (!selected(block->name)) return;
  struct Shape {
    RowsShape rows;
    std::int64_t pad;  // elements between rows (x and y; o too under the fused add): 16-byte rows, FP8 y too
  };
  const Shape shapes[] = {
      {{16384, 1000, DType::bf16, Quant::none, false}, 8},  {{12288, 1500, DType::f16, Quant::none, false}, 16},
      {{4096, 2000, DType::f32, Quant::dynamic_token, false}, 16}, {{2048, 3000, DType::f32, Quant::per_block, false}, 0},
      {{1024, 16384, DType::bf16, Quant::per_block, true}, 16},     {{4096, 2500, DType::bf16, Quant::none, true}, 8},
  };
  for (const Shape& sh : shapes) {
    harness::Layout l;
    l.x_pad = l.y_pad = l.o_pad = sh.pad;
    require_rows_pass(*block, sh.rows, l);
  }
}

// fwd.block_row's plain 16-bit forward of 2048 <= D <= 5120 and its 16-bit fused add + FP8 of
// 2048 <= D <= 8192, over four waves of rows or more, stagger their first wave
// (fwd_regs_stagger_kernel: an SM's k-th block of the first wave starts k slots late); the 5 rows
// of check_many_rows' batch-invariance check run fwd_regs_kernel (one block each), so the two
// kernels are compared bit for bit. H200 waves (blocks of the kernel at once): plain, 8 blocks of
// 128 threads an SM at D = 4096 (1056), 10 of 96 at 2056 (1320), 6 of 160 at 5120 (792); add +
// FP8 (80 registers), 6 of 128 at 4096 (792), 3 of 256 at 8192 (396), 5 of 160 at 5120 (660):
// these R are 4-6 waves. Every convention (llama has no FP8 output), every FP8 mode, fp32
// weights, padded rows, a partial last thread (D = 2056: 257 chunks over 96 threads); as controls,
// not staggered: the plain forward at 8192 (past the stagger's rows), the fused add and FP8 alone.
TEST_CASE("forward: fwd.block_row's staggered first wave matches the oracle and the unstaggered kernel bitwise", "[gpu][block_row]") {
  const rmsnorm::Variant* block = rmsnorm::find_variant("fwd.block_row");
  REQUIRE(block != nullptr);
  if (!selected(block->name)) return;
  check_many_rows(*block, {
      {{4096, 5000, DType::bf16, Quant::none, false}, 8},
      {{5120, 4000, DType::f16, Quant::none, false}, 0},
      {{8192, 2700, DType::f16, Quant::none, false}, 0},
      {{2056, 6000, DType::bf16, Quant::none, false, Convention::gemma}, 8},
      {{5120, 4000, DType::bf16, Quant::none, false, Convention::llama, true}, 16},
      {{4096, 5000, DType::f16, Quant::none, false, Convention::no_weight}, 0},
      {{4096, 5000, DType::bf16, Quant::dynamic_token, true}, 16},
      {{8192, 2000, DType::f16, Quant::per_block, true}, 0},
      {{5120, 4000, DType::bf16, Quant::dynamic_token, true, Convention::standard, true}, 16},
      {{2056, 6000, DType::f16, Quant::static_scale, true, Convention::gemma}, 8},
      {{8192, 2000, DType::f16, Quant::per_block, false}, 0},
      {{5120, 4000, DType::bf16, Quant::none, true}, 8},
  });
}

// fwd.block_row's FP8 forms of 16-bit rows past 8192, and its per-block scales of narrower rows
// past the few-row form (kLeanYPerBlockMinRows) (fwd_regs_lean_y_kernel: up to 512 threads a row,
// 4 chunks each, y formed once for the amax and again to quantize, 32-bit chunk indices, one row
// per block); the few rows that check_many_rows runs alone take the held-y kernel, so the two are
// compared bit for bit. Every FP8 mode, both fusions, every convention, fp32 weights, partial last
// chunks and 128-groups, padded rows: each passes the oracle, repeats bitwise and is batch
// invariant (check_many_rows); its rstd (and residual) equal the plain block_row forward's (fused
// add's) on the same rows bit for bit, the same mapping and sum order with no FP8 output.
TEST_CASE("forward: fwd.block_row's lean-y FP8 outputs of 16-bit rows match the oracle, repeat, batch invariant", "[gpu][block_row]") {
  const std::vector<PaddedRows> shapes = {
      {{4096, 600, DType::bf16, Quant::per_block, false}, 0},
      {{2056, 700, DType::f16, Quant::per_block, true}, 8},
      {{8192, 300, DType::bf16, Quant::per_block, true, Convention::gemma}, 0},
      {{1000, 900, DType::bf16, Quant::per_block, false, Convention::standard, /*g32=*/true}, 8},
      {{5121, 400, DType::f16, Quant::per_block, false, Convention::no_weight}, 15},
      {{129, 129, DType::bf16, Quant::per_block, true}, 15},
      {{16384, 300, DType::bf16, Quant::dynamic_token, false}, 0},
      {{16384, 300, DType::bf16, Quant::dynamic_token, true}, 8},
      {{16384, 200, DType::f16, Quant::per_block, true}, 16},
      {{16384, 200, DType::bf16, Quant::static_scale, false}, 0},
      {{8200, 400, DType::bf16, Quant::dynamic_token, true}, 8},
      {{12289, 300, DType::f16, Quant::dynamic_token, false}, 7},
      {{12289, 300, DType::bf16, Quant::per_block, true}, 7},
      {{16376, 200, DType::f16, Quant::static_scale, true}, 0},
      {{16384, 200, DType::bf16, Quant::dynamic_token, true, Convention::gemma}, 0},
      {{12288, 200, DType::f16, Quant::dynamic_token, false, Convention::no_weight}, 8},  // llama: no FP8 outputs
      {{16384, 200, DType::bf16, Quant::per_block, false, Convention::no_weight}, 0},
      {{16384, 200, DType::bf16, Quant::dynamic_token, true, Convention::standard, /*g32=*/true}, 8},
      {{10000, 200, DType::f16, Quant::per_block, false, Convention::standard, /*g32=*/true}, 0},
      // Rows of exactly lanes · 4 whole chunks, no fused add: the exact-row lean-y kernel.
      {{2048, 700, DType::f16, Quant::per_block, false, Convention::gemma}, 8},
      {{4096, 600, DType::bf16, Quant::per_block, false, Convention::standard, false, Values::nan_inf_rows}, 0},
      {{16384, 200, DType::bf16, Quant::dynamic_token, false, Convention::standard, false, Values::nan_inf_rows}, 8},
      {{8192, 400, DType::bf16, Quant::per_block, false, Convention::standard, /*g32=*/true}, 0},
      {{16384, 200, DType::f16, Quant::dynamic_token, false, Convention::no_weight, /*g32=*/true}, 16},
  };
  const rmsnorm::Variant* block = check_fp8_rows("fwd.block_row", shapes);
  if (block == nullptr) return;
  // fp32 rows keep the 256-thread limit: D = 8200 with FP8 outputs is declined with its reason.
  {
    const oracle::ForwardCase c = make_case(rows_spec({8200, 2, DType::f32, Quant::dynamic_token, false}));
    const harness::Outcome out = harness::run_forward(*block, c, {});
    INFO(out.summary());
    CHECK(out.status.code == rmsnorm::Status::Code::unsupported);
  }
}

// fwd.block_row's 16-bit FP8 forward (per token, static) of rows of exactly lanes · 4 whole chunks
// (D a multiple of 1024) past the few-row form: fwd_regs_exact_kernel, the held-y kernel without
// the row-end tests. Every convention but llama (no FP8 outputs), fp32 weights, padded rows, NaN,
// Inf and zero rows (P14, P16; the scales compared bit for bit, so a NaN scale too): each
// passes the oracle, repeats bitwise, and its first rows alone (the few-row form, which keeps the
// tests) equal the batch's bit for bit (check_many_rows); its rstd equals the plain forward's.
TEST_CASE("forward: fwd.block_row's exact-row FP8 kernel matches the oracle and the few-row form bitwise",
          "[gpu][block_row]") {
  const std::vector<PaddedRows> shapes = {
      {{4096, 600, DType::bf16, Quant::dynamic_token, false}, 0},
      {{8192, 300, DType::f16, Quant::dynamic_token, false}, 8},
      {{2048, 700, DType::bf16, Quant::static_scale, false, Convention::gemma}, 0},
      {{5120, 400, DType::bf16, Quant::dynamic_token, false, Convention::no_weight}, 16},
      {{3072, 500, DType::f16, Quant::static_scale, false}, 8},
      {{8192, 300, DType::bf16, Quant::dynamic_token, false, Convention::standard, /*g32=*/true}, 0},
      {{6144, 300, DType::f16, Quant::dynamic_token, false, Convention::gemma, /*g32=*/true}, 8},
      // NaN and Inf rows (their scales NaN / Inf, bit for bit against the few-row form) and zero rows.
      {{4096, 600, DType::bf16, Quant::dynamic_token, false, Convention::standard, false, Values::nan_inf_rows}, 0},
      {{2048, 700, DType::f16, Quant::static_scale, false, Convention::gemma, false, Values::zero_rows}, 8},
  };
  check_fp8_rows("fwd.block_row", shapes);
}

// The exact-row kernels (no row-end tests, for rows of a whole number of their threads' chunks) give
// the general kernels' bits: each shape passes the oracle as dispatched, then runs again with
// RMSNORM_EXACT_ROWS=0 (the general kernels), y, rstd, the scales and the residual compared bit
// for bit. Few rows (the few-row form, every op) and many (the FP8 forms: fwd.block_row's held-y
// and lean-y kernels, fwd.warp_row's), NaN/Inf and zero rows among them.
TEST_CASE("forward: the exact-row kernels give the general kernels' bits", "[gpu][block_row][fp8]") {
  struct ExactCase {
    const char* variant;
    PaddedRows shape;
  };
  const std::vector<ExactCase> cases = {
      // Few rows (few_rows_form): fwd_regs_few_exact_kernel.
      {"fwd.block_row", {{1024, 1, DType::bf16, Quant::none, false}, 0}},
      {"fwd.block_row", {{4096, 300, DType::bf16, Quant::none, false}, 0}},
      {"fwd.block_row", {{2048, 512, DType::f16, Quant::none, true, Convention::gemma}, 8}},
      {"fwd.warp_row", {{1024, 400, DType::bf16, Quant::none, true, Convention::llama}, 0}},
      {"fwd.block_row", {{4096, 16, DType::f16, Quant::none, true, Convention::gemma}, 8}},
      {"fwd.block_row", {{8192, 64, DType::bf16, Quant::none, false, Convention::llama, true}, 0}},
      {"fwd.block_row", {{16384, 3, DType::bf16, Quant::none, true}, 8}},
      {"fwd.block_row", {{5120, 64, DType::bf16, Quant::dynamic_token, false, Convention::no_weight}, 16}},
      {"fwd.block_row", {{2048, 100, DType::f16, Quant::per_block, true, Convention::standard, true}, 8}},
      {"fwd.block_row", {{3072, 128, DType::bf16, Quant::static_scale, false, Convention::gemma}, 0}},
      {"fwd.block_row",
       {{4096, 40, DType::bf16, Quant::dynamic_token, false, Convention::standard, false, Values::nan_inf_rows}, 0}},
      {"fwd.warp_row", {{1024, 1, DType::bf16, Quant::none, false}, 0}},
      {"fwd.warp_row", {{1024, 64, DType::f16, Quant::none, true, Convention::llama}, 8}},
      {"fwd.warp_row", {{1024, 17, DType::bf16, Quant::per_block, true, Convention::gemma, true}, 0}},
      {"fwd.warp_row",
       {{1024, 128, DType::f16, Quant::dynamic_token, false, Convention::no_weight, false, Values::nan_inf_rows}, 8}},
      // Many rows: the FP8 kernels past the few-row form; the forward of both, fwd.warp_row's fused
      // add too. Past four waves of rows (132 SMs) fwd.block_row's 16-bit forward of rows to 10 KB
      // and its fused add + FP8 run the staggered kernel.
      {"fwd.block_row", {{8192, 600, DType::bf16, Quant::none, false, Convention::gemma}, 8}},
      {"fwd.block_row", {{2048, 1000, DType::f16, Quant::none, false, Convention::llama, true}, 0}},
      {"fwd.block_row", {{4096, 8000, DType::bf16, Quant::none, false}, 0}},
      {"fwd.block_row", {{2048, 9000, DType::f16, Quant::dynamic_token, true, Convention::standard}, 8}},
      {"fwd.block_row", {{4096, 600, DType::bf16, Quant::dynamic_token, false}, 0}},
      {"fwd.block_row", {{8192, 300, DType::f16, Quant::static_scale, false, Convention::gemma, true}, 8}},
      {"fwd.block_row",
       {{2048, 700, DType::bf16, Quant::per_block, false, Convention::standard, false, Values::nan_inf_rows}, 0}},
      {"fwd.block_row", {{16384, 200, DType::bf16, Quant::dynamic_token, false, Convention::no_weight}, 0}},
      {"fwd.warp_row", {{1024, 900, DType::bf16, Quant::per_block, false, Convention::gemma}, 8}},
      {"fwd.warp_row", {{1024, 900, DType::bf16, Quant::none, false}, 0}},
      {"fwd.warp_row", {{1024, 900, DType::bf16, Quant::dynamic_token, true, Convention::gemma}, 8}},
      {"fwd.warp_row", {{1024, 800, DType::f16, Quant::per_block, true, Convention::standard, true}, 0}},
      {"fwd.warp_row", {{1024, 700, DType::f16, Quant::none, true, Convention::gemma}, 8}},
      {"fwd.warp_row",
       {{1024, 640, DType::bf16, Quant::none, true, Convention::llama, false, Values::nan_inf_rows}, 0}},
      {"fwd.warp_row",
       {{1024, 600, DType::f16, Quant::dynamic_token, false, Convention::standard, false, Values::zero_rows}, 0}},
      // D = 128 (half a warp of one chunk a row), few rows and many, every op.
      {"fwd.warp_row", {{128, 1, DType::bf16, Quant::none, false}, 0}},
      {"fwd.warp_row", {{128, 300, DType::f16, Quant::dynamic_token, true, Convention::gemma}, 8}},
      {"fwd.warp_row", {{128, 5000, DType::bf16, Quant::none, false, Convention::llama}, 8}},
      {"fwd.warp_row", {{128, 9000, DType::f16, Quant::none, true, Convention::standard, true}, 0}},
      {"fwd.warp_row", {{128, 7000, DType::bf16, Quant::per_block, false, Convention::gemma}, 0}},
      {"fwd.warp_row",
       {{128, 6000, DType::bf16, Quant::dynamic_token, true, Convention::no_weight, false, Values::nan_inf_rows}, 8}},
      {"fwd.warp_row", {{128, 5000, DType::f16, Quant::static_scale, true, Convention::standard}, 0}},
  };
  int ran = 0;
  for (const ExactCase& e : cases) {
    const rmsnorm::Variant* v = rmsnorm::find_variant(e.variant);
    REQUIRE(v != nullptr);
    if (!selected(v->name)) continue;
    harness::Layout l;
    l.x_pad = l.y_pad = l.o_pad = e.shape.pad;
    const oracle::ForwardCase c = require_rows_pass(*v, e.shape.rows, l);
    const harness::RawForward exact = harness::execute_forward(*v, c, l);
    REQUIRE(setenv("RMSNORM_EXACT_ROWS", "0", 1) == 0);
    const harness::RawForward general = harness::execute_forward(*v, c, l);
    REQUIRE(unsetenv("RMSNORM_EXACT_ROWS") == 0);
    const RowsShape& sh = e.shape.rows;
    INFO(v->name << " D=" << sh.dim << " R=" << sh.rows << " x=" << rmsnorm::to_string(sh.t)
                 << " quant=" << rmsnorm::to_string(sh.quant) << " add=" << sh.add << " pad=" << e.shape.pad
                 << " conv=" << rmsnorm::to_string(sh.conv) << " g32=" << sh.g32 << " values=" << to_string(sh.values));
    REQUIRE(exact.status.ok());
    REQUIRE(general.status.ok());
    CHECK(exact.result.y == general.result.y);
    CHECK(same_bits(exact.result.rstd, general.result.rstd));
    CHECK(same_bits(exact.result.scale, general.result.scale));
    CHECK(exact.result.h == general.result.h);
    ++ran;
  }
  if (selected("fwd.block_row") || selected("fwd.warp_row")) CHECK(ran > 0);
}

// fwd.warp_row's FP8 forward of 16-bit rows of D = 513-1024. Per-block scales past the few-row form
// take fwd_regs_lean_y_kernel with a warp a row (y formed for each group's amax and again to
// quantize); per-token and static scales, and few rows, the held-y kernel. Every scale mode,
// convention, fp32 weights, partial last chunks and 128-groups, padded rows (16-byte x rows), few
// rows and many (the small-R blocks): each passes the oracle and repeats bitwise, its first 5 rows
// alone (the few-row form) equal the batch's bit for bit, and its rstd equals the plain forward's
// on the same rows (the same lanes and warp_sum order).
TEST_CASE("forward: fwd.warp_row's FP8 forward of 16-bit rows of D = 513-1024 match the oracle, repeat, batch invariant", "[gpu][fp8]") {
  const std::vector<PaddedRows> shapes = {
      {{520, 2000, DType::bf16, Quant::per_block, false}, 8},
      {{1000, 700, DType::f16, Quant::per_block, false, Convention::gemma}, 0},
      {{769, 1500, DType::bf16, Quant::per_block, false, Convention::standard, /*g32=*/true}, 15},
      {{1017, 900, DType::f16, Quant::per_block, false, Convention::no_weight}, 7},
      {{1024, 5, DType::bf16, Quant::per_block, false, Convention::standard, /*g32=*/true}, 0},
      {{640, 20000, DType::bf16, Quant::per_block, false, Convention::gemma}, 8},
      {{1024, 3000, DType::bf16, Quant::dynamic_token, false}, 0},
      {{1024, 40, DType::f16, Quant::dynamic_token, false}, 8},
      {{769, 1500, DType::bf16, Quant::dynamic_token, false, Convention::standard, /*g32=*/true}, 15},
      {{1017, 900, DType::f16, Quant::static_scale, false}, 7},
      {{896, 600, DType::bf16, Quant::dynamic_token, false, Convention::no_weight}, 0},
      // D = 1024 past the few-row form: the exact-row kernels (no row-end tests), held y and lean y.
      {{1024, 1001, DType::f16, Quant::static_scale, false, Convention::gemma}, 8},
      {{1024, 900, DType::bf16, Quant::per_block, false, Convention::gemma}, 8},
      {{1024, 600, DType::bf16, Quant::dynamic_token, false, Convention::standard, /*g32=*/true}, 0},
      {{1024, 900, DType::bf16, Quant::per_block, false, Convention::standard, false, Values::nan_inf_rows}, 0},
      {{1024, 600, DType::f16, Quant::dynamic_token, false, Convention::no_weight, false, Values::nan_inf_rows}, 8},
  };
  check_fp8_rows("fwd.warp_row", shapes);
}

// Packed rows of every odd width (harness::kOddPackedWidths), type and op (forward, fused add) on
// `v`, per layout: the oracle, a repeat bitwise, the first 37 rows alone bitwise; with `moved`,
// also the rows one position on (every row at another offset from a 16-byte boundary: a row's
// bits must not depend on its position). Rows of odd D laid out per `g32_layout` take fp32
// weights beside 16-bit rows. Returns the runs.
// With FP8 outputs (`quant`), the scales too, and 2^22 elements a run. `b16_only`: bf16 and f16
// rows only.
static int check_odd_widths(const rmsnorm::Variant& v, const std::vector<const harness::Layout*>& layouts, bool moved = false,
                            const harness::Layout* g32_layout = nullptr, Quant quant = Quant::none,
                            bool b16_only = false) {
  int ran = 0;
  const std::int64_t elements = std::int64_t{1} << (quant == Quant::none ? 23 : 22);
  for (const std::int64_t d : harness::kOddPackedWidths)
    for (const DType t : kTypes)
      if (!b16_only || t != DType::f32)
      for (const bool add : {false, true})
        for (const harness::Layout* layout : layouts) {
          RowsShape sh{d, std::min<std::int64_t>(elements / d, 20000), t, quant, add};
          sh.g32 = t != DType::f32 && d % 2 == 1 && layout == g32_layout;
          const oracle::ForwardCase c = require_rows_pass(v, sh, *layout);
          ++ran;
          const harness::RawForward a = harness::execute_forward(v, c, *layout);
          const harness::RawForward b = harness::execute_forward(v, c, *layout);
          const auto n = static_cast<std::size_t>(harness::kHeadRows * d);
          const harness::RawForward h = harness::execute_forward(v, harness::first_rows(c, harness::kHeadRows), *layout);
          INFO(v.name << " D=" << d << " x=" << rmsnorm::to_string(t) << " add=" << add << " g32=" << sh.g32
                      << " quant=" << rmsnorm::to_string(quant) << " layout=" << layout->to_string());
          REQUIRE(a.status.ok());
          REQUIRE(h.status.ok());
          CHECK(a.result.y == b.result.y);
          CHECK(a.result.rstd == b.result.rstd);
          CHECK(a.result.scale == b.result.scale);
          CHECK(harness::head_matches(h.result.y, a.result.y, n));
          CHECK(harness::head_matches(h.result.rstd, a.result.rstd, static_cast<std::size_t>(harness::kHeadRows)));
          if (add) CHECK(harness::head_matches(h.result.h, a.result.h, n));
          // Scales a row: one (per token), ceil(D / 128) (per block), none (static).
          const std::size_t per_row = quant == Quant::dynamic_token ? 1
                                      : quant == Quant::per_block   ? static_cast<std::size_t>((d + rmsnorm::kQuantGroup - 1) / rmsnorm::kQuantGroup)
                                                                    : 0;
          if (per_row > 0) CHECK(harness::head_matches(h.result.scale, a.result.scale, per_row * harness::kHeadRows));
          if (!moved) continue;
          oracle::ForwardCase later = c;  // the same rows one position on
          later.rows -= 1;
          later.x.erase(later.x.begin(), later.x.begin() + d);
          if (add) later.o.erase(later.o.begin(), later.o.begin() + d);
          if (later.rows > harness::kHeadRows) {
            const harness::RawForward m = harness::execute_forward(v, harness::first_rows(later, harness::kHeadRows), *layout);
            REQUIRE(m.status.ok());
            const auto from = static_cast<std::ptrdiff_t>(d);
            CHECK(std::equal(m.result.y.begin(), m.result.y.end(), a.result.y.begin() + from));
            CHECK(std::equal(m.result.rstd.begin(), m.result.rstd.end(), a.result.rstd.begin() + 1));
            if (add) CHECK(std::equal(m.result.h.begin(), m.result.h.end(), a.result.h.begin() + from));
            if (per_row > 0)
              CHECK(std::equal(m.result.scale.begin(), m.result.scale.end(), a.result.scale.begin() + static_cast<std::ptrdiff_t>(per_row)));
          }
        }
  return ran;
}

// fwd.packed_rows moves tiles of packed rows as one
// span of 16-byte vectors: every tile of an odd width starts at another alignment, a vector at a
// tile's edge holds the neighbouring tile's elements (read, never used, never written), and the
// tensor's first and last vectors reach outside it (element loads, short copies). R·D up to 2^23:
// several tiles per program, so the stage ring wraps; shifted bases (each tensor its own lead),
// in place (y over x, or over o under the fused add: the residual goes over x). Each run passes
// the oracle (the harness's guard bands catch a write outside the tensors), repeats bitwise, and
// its first 37 rows are bitwise those of a batch of 37 rows (y, rstd and the residual).
TEST_CASE("forward: fwd.packed_rows, odd widths through shared-memory tiles, exact at their edges, batch invariant", "[gpu][packed]") {
  const rmsnorm::Variant* v = rmsnorm::find_variant("fwd.packed_rows");
  REQUIRE(v != nullptr);
  if (!selected(v->name)) return;
  harness::Layout shifted;  // every tensor at its own element offset
  shifted.x_offset = 1;
  shifted.o_offset = 3;
  shifted.y_offset = 6;
  shifted.g_offset = 1;
  harness::Layout in_place;
  in_place.in_place = true;
  in_place.x_offset = in_place.o_offset = in_place.y_offset = 2;
  CHECK(check_odd_widths(*v, {&shifted, &in_place}) == 108);  // 9 widths x 3 types x 2 ops x 2 layouts
}

// Its FP8 outputs: each scale mode, the same widths, types and both ops, every
// tensor at its own offset (the codes' rows in yet another frame); every row moved one position
// must keep its codes and scales (the per-token and per-block maxima are order-free).
TEST_CASE("forward: fwd.packed_rows, FP8 outputs of odd widths, every scale mode, batch invariant", "[gpu][packed_fp8]") {
  const rmsnorm::Variant* v = rmsnorm::find_variant("fwd.packed_rows");
  REQUIRE(v != nullptr);
  if (!selected(v->name)) return;
  harness::Layout shifted;
  shifted.x_offset = 1;
  shifted.o_offset = 3;
  shifted.y_offset = 5;
  shifted.g_offset = 1;
  for (const Quant quant : {Quant::static_scale, Quant::dynamic_token, Quant::per_block}) {
    INFO(rmsnorm::to_string(quant));
    CHECK(check_odd_widths(*v, {&shifted}, /*moved=*/true, nullptr, quant) == 54);  // 9 widths x 3 types x 2 ops
  }
}

TEST_CASE("forward: fwd.shifted_row, rows in their own 16-byte frame, exact at their edges, repeats, batch invariant", "[gpu][shifted]") {
  const rmsnorm::Variant* v = rmsnorm::find_variant("fwd.shifted_row");
  REQUIRE(v != nullptr);
  if (!selected(v->name)) return;
  harness::Layout shifted;  // every row tensor at one element offset, the weights at another
  shifted.x_offset = shifted.o_offset = shifted.y_offset = 3;
  shifted.g_offset = 1;
  harness::Layout in_place;
  in_place.in_place = true;
  in_place.x_offset = in_place.o_offset = in_place.y_offset = 2;
  harness::Layout strided;  // odd row strides (poisoned gaps between rows), one frame
  strided.x_pad = strided.y_pad = strided.o_pad = 3;
  strided.x_offset = strided.o_offset = strided.y_offset = 1;
  CHECK(check_odd_widths(*v, {&shifted, &in_place, &strided}, /*moved=*/true, &strided) == 162);  // x 3 layouts
  // Tensors in different frames are declined with a reason, never run.
  harness::Layout apart;
  apart.x_offset = 1;
  apart.y_offset = 2;
  const oracle::ForwardCase c = make_case(rows_spec(RowsShape{1025, 64, DType::bf16, Quant::none, false}));
  const harness::Outcome out = harness::run_forward(*v, c, apart);
  INFO(out.summary());
  CHECK(out.status.code == rmsnorm::Status::Code::misaligned);
}

// Its FP8 outputs (16-bit rows, every scale mode): the codes' rows in the rows' frame (3 elements
// on: 6 bytes of x, 3 of y), also with odd row strides and fp32 weights; every row moved one
// position on keeps its codes and scales (its lead changes, so per block its groups' cut chunks
// change too). A y whose rows start at another offset mod 8 bytes and fp32 rows are declined,
// each with its code.
TEST_CASE("forward: fwd.shifted_row, FP8 outputs of odd widths, every scale mode", "[gpu][shifted_fp8]") {
  const rmsnorm::Variant* v = rmsnorm::find_variant("fwd.shifted_row");
  REQUIRE(v != nullptr);
  if (!selected(v->name)) return;
  harness::Layout shifted;
  shifted.x_offset = shifted.o_offset = shifted.y_offset = 3;
  shifted.g_offset = 1;
  harness::Layout strided;
  strided.x_pad = strided.y_pad = strided.o_pad = 3;
  strided.x_offset = strided.o_offset = strided.y_offset = 1;
  for (const Quant quant : {Quant::static_scale, Quant::dynamic_token, Quant::per_block}) {
    INFO(rmsnorm::to_string(quant));
    // 9 widths x 2 types x 2 ops x 2 layouts
    CHECK(check_odd_widths(*v, {&shifted, &strided}, /*moved=*/true, &strided, quant, /*b16_only=*/true) == 72);
  }
  using Code = rmsnorm::Status::Code;
  struct Declined {
    RowsShape shape;
    std::int64_t y_offset;
    Code code;
  };
  for (const Declined& d : {Declined{{1025, 64, DType::bf16, Quant::dynamic_token, false}, 5, Code::misaligned},
                            Declined{{1025, 64, DType::f32, Quant::dynamic_token, false}, 3, Code::unsupported}}) {
    harness::Layout l;
    l.x_offset = l.o_offset = 3;
    l.y_offset = d.y_offset;
    const harness::Outcome out = harness::run_forward(*v, make_case(rows_spec(d.shape)), l);
    INFO(out.summary() << " quant=" << rmsnorm::to_string(d.shape.quant) << " y_offset=" << d.y_offset);
    CHECK(out.status.code == d.code);
  }
}

#if RMSNORM_HAVE_CUDA
// P18: R·D > 2^31 elements (bf16, D = 65536, R = 32769), laid out directly (the harness would
// copy 2^31-element dense vectors); a sample of rows on both sides of 2^31 is judged.
TEST_CASE("forward: 64-bit offsets, R*D > 2^31", "[gpu][big]") {
  // D = 65536 for the aligned paths; D = 8191 (R = 262180) for the paths of misaligned rows
  // (fwd.packed_rows' tiles, fwd.element_row.realigned, fwd.element_row, fwd.scalar): every row from
  // 2^31 / D on lies past 2^31 elements.
  struct Shape {
    std::int64_t D, R;
  };
  for (const Shape shape : {Shape{65536, 32769}, Shape{8191, 262180}}) {
    const std::int64_t D = shape.D, R = shape.R;
    const std::size_t n = static_cast<std::size_t>(R * D);
    REQUIRE(n > (std::size_t{1} << 31));
    size_t free_b = 0, total_b = 0;
    REQUIRE(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
    // Too little device memory is a failure with its reason, never a silent pass.
    if (free_b < 2 * n * 2 + (1u << 30))
      FAIL("not run: needs " << (4 * n >> 30) << " GiB of device memory, " << (free_b >> 30) << " GiB free");
    // bf16 bit patterns from a per-row hash: exponents in [2^-7, 2^7), every row different.
    std::vector<std::uint16_t> host(n);
    for (std::int64_t r = 0; r < R; ++r) {
      std::uint64_t h = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(r + 1);
      for (std::int64_t j = 0; j < D; ++j) {
        h ^= h << 13, h ^= h >> 7, h ^= h << 17;
        const std::uint16_t sign = static_cast<std::uint16_t>((h >> 20) & 1u) << 15;
        const std::uint16_t expo = static_cast<std::uint16_t>(120 + (h >> 8) % 14) << 7;
        host[static_cast<std::size_t>(r * D + j)] = static_cast<std::uint16_t>(sign | expo | (h & 0x7fu));
      }
    }
    void *x = nullptr, *y = nullptr, *g = nullptr;
    float* rstd = nullptr;
    REQUIRE(cudaMalloc(&x, n * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&y, n * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&g, D * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&rstd, R * 4) == cudaSuccess);
    std::vector<std::uint16_t> gh(static_cast<std::size_t>(D));
    for (std::int64_t j = 0; j < D; ++j)
      gh[static_cast<std::size_t>(j)] = static_cast<std::uint16_t>(0x3f80 + (j % 64));  // 1 + j%64/128
    REQUIRE(cudaMemcpy(x, host.data(), n * 2, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(g, gh.data(), D * 2, cudaMemcpyHostToDevice) == cudaSuccess);

    // The first rows, the rows on both sides of element 2^31, the last row.
    const std::int64_t cross = (std::int64_t{1} << 31) / D;
    std::vector<std::int64_t> sample = {0, 1, cross - 1, cross, std::min(cross + 1, R - 1), R - 1};
    sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
    int ran = 0;
    for (const rmsnorm::Variant* v : device_products(Op::forward)) {
      rmsnorm::ForwardArgs a;
      a.rows = R;
      a.dim = D;
      a.x = {x, DType::bf16, D};
      a.y = {y, DType::bf16, D};
      a.g = g;
      a.g_type = DType::bf16;
      a.rstd = rstd;
      a.eps = 1e-6f;
      if (!v->can_implement_forward(a).ok()) continue;
      ++ran;
      REQUIRE(cudaMemset(y, 0xFF, n * 2) == cudaSuccess);
      const rmsnorm::Status st = v->run_forward(a);
      INFO(v->name << " D=" << D << " R=" << R << ": " << st.reason);
      REQUIRE(st.ok());
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      oracle::ForwardCase c;
      c.rows = static_cast<std::int64_t>(sample.size());
      c.dim = D;
      c.x_type = c.g_type = c.y_type = DType::bf16;
      c.eps = a.eps;
      oracle::ForwardResult got;
      for (std::uint16_t b : gh) c.g.push_back(static_cast<float>(rmsnorm::decode(b, DType::bf16)));
      for (std::int64_t r : sample) {
        std::vector<std::uint16_t> yrow(static_cast<std::size_t>(D));
        REQUIRE(cudaMemcpy(yrow.data(), static_cast<std::uint16_t*>(y) + r * D, D * 2, cudaMemcpyDeviceToHost) ==
                cudaSuccess);
        float rs = 0;
        REQUIRE(cudaMemcpy(&rs, rstd + r, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
        for (std::int64_t j = 0; j < D; ++j) {
          c.x.push_back(static_cast<float>(rmsnorm::decode(host[static_cast<std::size_t>(r * D + j)], DType::bf16)));
          got.y.push_back(yrow[static_cast<std::size_t>(j)]);
        }
        got.rstd.push_back(rs);
      }
      const oracle::Verdict verdict = oracle::check_forward(c, got, v->row_shape(D));
      INFO(v->name << " D=" << D << " sample rows around element 2^31: " << verdict.first_failure << verdict.error);
      CHECK(verdict.pass);
    }
    INFO("D=" << D);
    CHECK((ran > 0 || narrowing()));
    cudaFree(x);
    cudaFree(y);
    cudaFree(g);
    cudaFree(rstd);
  }
}
#endif
