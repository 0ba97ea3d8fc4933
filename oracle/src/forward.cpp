// Public entry points of the forward family: validation, checking a kernel's output, acceptance
// sets and exact answers. All of them run fwd::evaluate_row over the rows with OpenMP; per-thread
// tallies are merged in thread order, and the first failure is the one with the smallest
// (row, tensor, column), so the verdict does not depend on the schedule.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <string>

#include "forward_plan.h"

namespace oracle {

using judge::KeyAcceptance;
using Kind = Acceptance::Kind;

namespace {

float float_of_bits(std::uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
std::uint32_t bits_of_float(float f) { std::uint32_t b; std::memcpy(&b, &f, 4); return b; }

// Below this many elements a case runs on one thread (thread start-up costs more).
constexpr std::int64_t kParallelMin = 1 << 14;

// Runs make_sink(thread) once per thread and evaluate_row on every row. An exception from a
// row never leaves the OpenMP region (that would terminate the process): the earliest row's
// is returned through `error` ("" when none), and the caller reports it instead of a result.
template <typename SinkT, typename Make>
std::vector<SinkT> run_rows(const fwd::Plan& p, const fwd::RowOptions& o, Make&& make_sink, std::string& error) {
  const int nt = std::max(1, omp_get_max_threads());
  std::vector<SinkT> sinks;
  sinks.reserve(static_cast<std::size_t>(nt));
  for (int t = 0; t < nt; ++t) sinks.push_back(make_sink());
  std::vector<judge::RowError> errors(static_cast<std::size_t>(nt));
  const std::int64_t rows = p.c->rows;
#pragma omp parallel num_threads(nt) if (rows * p.c->dim >= kParallelMin)
  {
    const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
    SinkT& sink = sinks[t];
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t r = 0; r < rows; ++r) {
      try {
        fwd::evaluate_row(p, r, o, sink);
      } catch (const std::exception& e) {
        errors[t].keep(r, "row " + std::to_string(r) + ": " + e.what());
      } catch (...) {
        errors[t].keep(r, "row " + std::to_string(r) + ": unknown exception");
      }
    }
  }
  judge::RowError first;
  for (const auto& e : errors) first.merge(e);
  error = first.message();
  return sinks;
}

// Judges a kernel's output.
struct CheckSink final : fwd::Sink {
  const fwd::Plan* p;
  const ForwardResult* got;
  judge::Tally tally;
  CheckSink(const fwd::Plan* plan, const ForwardResult* g) : p(plan), got(g) {}
  void residual(std::int64_t row, std::int64_t col, std::uint32_t bits) override {
    KeyAcceptance a;
    a.kind = Kind::exact_bits;
    a.rounded = bits;
    a.exact = rmsnorm::decode(bits, p->c->x_type);
    judge::judge(a, got->h[static_cast<std::size_t>(row * p->c->dim + col)], p->gx, "h", 0, row, col, tally);
  }
  void y_row(std::int64_t row, const KeyAcceptance* a) override {
    const std::int64_t D = p->c->dim;
    const std::uint32_t* g = got->y.data() + row * D;
    const char* name = p->quant ? "q" : "y";
    for (std::int64_t col = 0; col < D; ++col) judge::judge(a[col], g[col], p->gy, name, 1, row, col, tally);
  }
  void rstd(std::int64_t row, const KeyAcceptance& a, double, double) override {
    if (got->rstd.empty()) return;
    judge::judge(a, bits_of_float(got->rstd[static_cast<std::size_t>(row)]), p->g32, "rstd", 2, row, 0, tally);
  }
  void scale(std::int64_t row, std::int64_t group, const KeyAcceptance& a) override {
    judge::judge(a, bits_of_float(got->scale[static_cast<std::size_t>(row * p->groups + group)]), p->g32, "scale", 3,
                 row, group, tally);
  }
};

// Collects acceptance sets (and the residual bits, rstd enclosures).
struct CollectSink final : fwd::Sink {
  const fwd::Plan* p;
  ForwardAcceptance* out;
  std::vector<Enclosure>* rstd_enclosure;
  std::int64_t fallbacks = 0;
  CollectSink(const fwd::Plan* plan, ForwardAcceptance* o, std::vector<Enclosure>* e)
      : p(plan), out(o), rstd_enclosure(e) {}
  void residual(std::int64_t row, std::int64_t col, std::uint32_t bits) override {
    out->h[static_cast<std::size_t>(row * p->c->dim + col)] = bits;
  }
  void y_row(std::int64_t row, const KeyAcceptance* a) override {
    const std::int64_t D = p->c->dim;
    for (std::int64_t col = 0; col < D; ++col) {
      if (a[col].fallback) ++fallbacks;
      out->y[static_cast<std::size_t>(row * D + col)] = judge::to_public(a[col], p->gy);
    }
  }
  void rstd(std::int64_t row, const KeyAcceptance& a, double lo, double hi) override {
    if (a.fallback) ++fallbacks;
    out->rstd[static_cast<std::size_t>(row)] = judge::to_public(a, p->g32);
    if (rstd_enclosure) (*rstd_enclosure)[static_cast<std::size_t>(row)] = Enclosure{lo, hi};
  }
  void scale(std::int64_t row, std::int64_t group, const KeyAcceptance& a) override {
    if (a.fallback) ++fallbacks;
    out->scale[static_cast<std::size_t>(row * p->groups + group)] = judge::to_public(a, p->g32);
  }
};

ForwardAcceptance collect(const ForwardCase& c, AccumShape shape, const fwd::RowOptions& o,
                          std::vector<Enclosure>* rstd_enclosure = nullptr) {
  ForwardAcceptance out;
  fwd::Plan p;
  out.error = fwd::make_plan(c, shape, p);
  if (!out.error.empty()) return out;
  const std::size_t n = static_cast<std::size_t>(c.rows * c.dim);
  if (o.want_y) out.y.resize(n);
  if (o.want_rstd) out.rstd.resize(static_cast<std::size_t>(c.rows));
  if (p.dynamic && o.want_scale) out.scale.resize(static_cast<std::size_t>(c.rows * p.groups));
  if (p.fused) out.h.resize(n);
  if (rstd_enclosure) rstd_enclosure->resize(static_cast<std::size_t>(c.rows));
  auto sinks = run_rows<CollectSink>(p, o, [&] { return CollectSink(&p, &out, rstd_enclosure); }, out.error);
  if (!out.error.empty()) {  // no partial answers: the same empty result as an invalid case
    ForwardAcceptance failed;
    failed.error = out.error;
    if (rstd_enclosure) rstd_enclosure->clear();
    return failed;
  }
  for (const auto& s : sinks) out.fallbacks += s.fallbacks;
  return out;
}

// The shape only widens acceptance ranges; exact answers do not depend on it.
constexpr AccumShape kAnyShape{1, 0};

}  // namespace

std::string validate(const ForwardCase& c) {
  fwd::Plan p;
  return fwd::make_plan(c, kAnyShape, p);
}

Verdict check_forward(const ForwardCase& c, const ForwardResult& got, AccumShape shape) {
  Verdict v;
  fwd::Plan p;
  v.error = fwd::make_plan(c, shape, p);
  const std::int64_t n = c.rows * c.dim;
  if (v.error.empty()) {
    if (static_cast<std::int64_t>(got.y.size()) != n)
      v.error = "invalid result: y has " + std::to_string(got.y.size()) + " values, rows*dim = " + std::to_string(n);
    else if (!got.rstd.empty() && static_cast<std::int64_t>(got.rstd.size()) != c.rows)
      v.error = "invalid result: rstd has " + std::to_string(got.rstd.size()) + " values, rows = " + std::to_string(c.rows);
    else if (p.fused && static_cast<std::int64_t>(got.h.size()) != n)
      v.error = "invalid result: fused add needs the written-back residual h (" + std::to_string(got.h.size()) +
                " values, rows*dim = " + std::to_string(n) + ")";
    else if (p.dynamic && static_cast<std::int64_t>(got.scale.size()) != c.rows * p.groups)
      v.error = "invalid result: scale has " + std::to_string(got.scale.size()) + " values, expected " +
                std::to_string(c.rows * p.groups);
  }
  if (!v.error.empty()) { v.pass = false; return v; }
  fwd::RowOptions o;
  o.kernel_scale = p.dynamic ? &got.scale : nullptr;
  auto sinks = run_rows<CheckSink>(p, o, [&] { return CheckSink(&p, &got); }, v.error);
  if (!v.error.empty()) { v.pass = false; return v; }
  judge::Tally all;
  for (const auto& s : sinks) all.merge(s.tally);
  v.profile = all.profile;
  v.pass = all.profile.failures == 0;
  v.first_failure = all.first.line;
  return v;
}

ForwardAcceptance forward_acceptance(const ForwardCase& c, AccumShape shape, Evaluation mode,
                                     const std::vector<float>* kernel_scale) {
  fwd::RowOptions o;
  o.mode = mode;
  o.kernel_scale = kernel_scale;
  if (kernel_scale && c.quant != Quant::dynamic_token && c.quant != Quant::per_block) o.kernel_scale = nullptr;
  return collect(c, shape, o);
}

std::vector<Enclosure> row_rstd(const ForwardCase& c) {
  fwd::RowOptions o;
  o.want_y = o.want_scale = false;
  std::vector<Enclosure> enc;
  const ForwardAcceptance a = collect(c, kAnyShape, o, &enc);
  if (!a.error.empty()) return {};
  return enc;
}

std::vector<float> rstd_rounded(const ForwardCase& c, Evaluation mode, std::int64_t* fallbacks) {
  fwd::RowOptions o;
  o.mode = mode;
  o.want_y = o.want_scale = false;
  const ForwardAcceptance a = collect(c, kAnyShape, o);
  if (fallbacks) *fallbacks = a.fallbacks;
  std::vector<float> out;
  out.reserve(a.rstd.size());
  for (const Acceptance& r : a.rstd)
    out.push_back(r.kind == Kind::any ? std::numeric_limits<float>::quiet_NaN() : float_of_bits(r.rounded));
  return out;
}
std::vector<float> rstd_rounded(const ForwardCase& c) { return rstd_rounded(c, Evaluation::fast, nullptr); }

ForwardCase forward_of(const BackwardCase& b) {
  ForwardCase f;
  f.rows = b.rows;
  f.dim = b.dim;
  f.x_type = f.y_type = b.x_type;
  f.g_type = b.g_type;
  f.convention = b.convention;
  f.eps = b.eps;
  f.x = b.x;
  f.g = b.g;
  return f;
}

std::vector<std::uint32_t> forward_rounded(const ForwardCase& c, Evaluation mode, std::int64_t* fallbacks) {
  fwd::RowOptions o;
  o.mode = mode;
  o.want_rstd = o.want_scale = false;
  o.q_against_exact_scale = true;
  const ForwardAcceptance a = collect(c, kAnyShape, o);
  if (fallbacks) *fallbacks = a.fallbacks;
  std::vector<std::uint32_t> out;
  out.reserve(a.y.size());
  const std::uint32_t nan_bits = rmsnorm::traits_of(c.y_type).nan_bits;
  for (const Acceptance& y : a.y) out.push_back(y.kind == Kind::any ? nan_bits : y.rounded);
  return out;
}
std::vector<std::uint32_t> forward_rounded(const ForwardCase& c) { return forward_rounded(c, Evaluation::fast, nullptr); }

std::vector<double> forward_values(const ForwardCase& c) {
  fwd::RowOptions o;
  o.want_rstd = o.want_scale = false;
  o.q_against_exact_scale = true;
  const ForwardAcceptance a = collect(c, kAnyShape, o);
  std::vector<double> out;
  out.reserve(a.y.size());
  for (const Acceptance& y : a.y) out.push_back(y.kind == Kind::any ? std::numeric_limits<double>::quiet_NaN() : y.exact);
  return out;
}

std::vector<std::uint32_t> residual_rounded(const ForwardCase& c) {
  fwd::RowOptions o;
  o.want_y = o.want_rstd = o.want_scale = false;
  return collect(c, kAnyShape, o).h;
}

std::vector<float> scales_rounded(const ForwardCase& c) {
  fwd::RowOptions o;
  o.want_y = o.want_rstd = false;
  const ForwardAcceptance a = collect(c, kAnyShape, o);
  std::vector<float> out;
  out.reserve(a.scale.size());
  for (const Acceptance& s : a.scale)
    out.push_back(s.kind == Kind::any ? std::numeric_limits<float>::quiet_NaN() : float_of_bits(s.rounded));
  return out;
}

}  // namespace oracle
