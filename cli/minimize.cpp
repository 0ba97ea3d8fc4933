#include "minimize.h"

#include <chrono>
#include <cmath>
#include <functional>

#include "case_runner.h"

namespace cert {

bool make_explicit(harness::Case& c, std::string& error) {
  if (c.generator.empty()) return true;
  harness::CaseValues v;
  if (!harness::materialize(c, v, error)) return false;
  c.generator.clear();
  c.seed = 0;
  c.x = v.x;
  c.o = c.has_add() && c.is_forward() ? v.o : std::vector<float>{};
  c.g = c.convention == rmsnorm::Convention::no_weight ? std::vector<float>{} : v.g;
  c.dy = c.is_forward() ? std::vector<float>{} : v.dy;
  c.dresidual = c.op == rmsnorm::Op::add_backward ? v.dresidual : std::vector<float>{};
  c.rstd = c.is_forward() ? std::vector<float>{} : v.rstd;
  return true;
}

namespace {

using Matrix = std::vector<float>;

// Keep rows [keep) of every row-major tensor of a case.
harness::Case with_rows(const harness::Case& c, const std::vector<std::int64_t>& keep) {
  harness::Case out = c;
  out.rows = static_cast<std::int64_t>(keep.size());
  auto pick = [&](const Matrix& m) {
    if (m.empty()) return m;
    Matrix r;
    for (std::int64_t i : keep)
      r.insert(r.end(), m.begin() + i * c.dim, m.begin() + (i + 1) * c.dim);
    return r;
  };
  out.x = pick(c.x);
  out.o = pick(c.o);
  out.dy = pick(c.dy);
  out.dresidual = pick(c.dresidual);
  if (!c.rstd.empty()) {
    out.rstd.clear();
    for (std::int64_t i : keep) out.rstd.push_back(c.rstd[static_cast<std::size_t>(i)]);
  }
  return out;
}

harness::Case with_columns(const harness::Case& c, const std::vector<std::int64_t>& keep, bool derived_rstd) {
  harness::Case out = c;
  out.dim = static_cast<std::int64_t>(keep.size());
  auto pick = [&](const Matrix& m, std::int64_t rows) {
    if (m.empty()) return m;
    Matrix r;
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j : keep) r.push_back(m[static_cast<std::size_t>(i * c.dim + j)]);
    return r;
  };
  out.x = pick(c.x, c.rows);
  out.o = pick(c.o, c.rows);
  out.dy = pick(c.dy, c.rows);
  out.dresidual = pick(c.dresidual, c.rows);
  out.g = pick(c.g, 1);
  if (derived_rstd) out.rstd.clear();  // r depends on the row: re-derived from the new x
  return out;
}

// Simpler values to try in place of v, simplest first.
std::vector<float> simpler_values(float v) {
  std::vector<float> out = {0.0f, 1.0f, -1.0f};
  if (std::isfinite(v)) {
    out.push_back(std::nearbyint(v));
    // The same magnitude with a 2-bit mantissa: keeps the binade, drops the noise.
    int e = 0;
    const float m = std::frexp(v, &e);
    out.push_back(std::ldexp(std::nearbyint(m * 4.0f) / 4.0f, e));
  }
  std::vector<float> unique;
  for (float s : out)
    if (!(s == v && std::signbit(s) == std::signbit(v)) && !std::isnan(s)) {
      bool dup = false;
      for (float u : unique) dup = dup || (u == s && std::signbit(u) == std::signbit(s));
      if (!dup) unique.push_back(s);
    }
  return unique;
}

}  // namespace

harness::Case minimize_case(const harness::Case& original, const rmsnorm::Variant& v, int max_attempts, double max_seconds,
                            std::string& reason, MinimizeStats& stats) {
  const auto t0 = std::chrono::steady_clock::now();
  harness::Case best = original;
  stats = MinimizeStats{};
  stats.rows_before = original.rows;
  stats.dim_before = original.dim;
  std::string error;
  // A backward case without its own rstd gets RN32(exact r) from its x; after shrinking, again.
  const bool derived_rstd = !best.is_forward() && best.rstd.empty();
  if (!make_explicit(best, error)) {
    reason = "cannot make the values explicit: " + error;
    return original;
  }
  if (derived_rstd) best.rstd.clear();
  {
    const CaseRun first = run_case(best, v);
    reason = first.reason;
    if (first.verdict != RunVerdict::fail) {
      // Explicit values must reproduce the generated ones exactly; if not, keep the original.
      reason = "the explicit form does not fail (" + std::string(to_string(first.verdict)) + ": " + first.reason + ")";
      return original;
    }
  }
  auto out_of_budget = [&] {
    return stats.attempts >= max_attempts ||
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > max_seconds;
  };
  // Accept `candidate` when it still fails.
  auto attempt = [&](const harness::Case& candidate) {
    if (out_of_budget()) return false;
    ++stats.attempts;
    const CaseRun r = run_case(candidate, v);
    if (r.verdict != RunVerdict::fail) return false;
    best = candidate;
    reason = r.reason;
    ++stats.accepted;
    return true;
  };

  // Rows: a single row first (most failures live in one row), then drop chunks, halving.
  if (best.rows > 1) {
    bool single = false;
    for (std::int64_t i = 0; i < best.rows && !single && !out_of_budget(); ++i) single = attempt(with_rows(best, {i}));
    for (std::int64_t chunk = best.rows / 2; chunk >= 1 && !single && !out_of_budget(); chunk /= 2) {
      for (std::int64_t start = 0; start < best.rows && best.rows > 1;) {
        std::vector<std::int64_t> keep;
        for (std::int64_t i = 0; i < best.rows; ++i)
          if (i < start || i >= start + chunk) keep.push_back(i);
        if (keep.empty() || !attempt(with_rows(best, keep))) start += chunk;
        if (out_of_budget()) break;
      }
    }
  }
  // Columns: drop chunks, halving down to single columns (D >= 1 always).
  for (std::int64_t chunk = best.dim / 2; chunk >= 1 && !out_of_budget(); chunk /= 2) {
    for (std::int64_t start = 0; start < best.dim && best.dim > 1;) {
      std::vector<std::int64_t> keep;
      for (std::int64_t j = 0; j < best.dim; ++j)
        if (j < start || j >= start + chunk) keep.push_back(j);
      if (keep.empty() || !attempt(with_columns(best, keep, derived_rstd))) start += chunk;
      if (out_of_budget()) break;
    }
  }
  // Layout: dense and aligned if that still fails, else each field back to its default.
  if (!best.layout.to_string().empty()) {
    harness::Case dense = best;
    dense.layout = harness::Layout{};
    if (!attempt(dense)) {
      harness::Layout& L = best.layout;
      std::int64_t* fields[] = {&L.x_pad, &L.o_pad, &L.y_pad, &L.dy_pad, &L.dx_pad, &L.dres_pad, &L.x_offset,
                                &L.o_offset, &L.y_offset, &L.g_offset, &L.dy_offset, &L.dx_offset, &L.dres_offset};
      for (std::size_t k = 0; k < sizeof fields / sizeof fields[0]; ++k) {
        if (*fields[k] == 0) continue;
        harness::Case cand = best;
        std::int64_t* cf[] = {&cand.layout.x_pad, &cand.layout.o_pad, &cand.layout.y_pad, &cand.layout.dy_pad,
                              &cand.layout.dx_pad, &cand.layout.dres_pad, &cand.layout.x_offset, &cand.layout.o_offset,
                              &cand.layout.y_offset, &cand.layout.g_offset, &cand.layout.dy_offset,
                              &cand.layout.dx_offset, &cand.layout.dres_offset};
        *cf[k] = 0;
        attempt(cand);
      }
      if (best.layout.in_place) {
        harness::Case cand = best;
        cand.layout.in_place = false;
        attempt(cand);
      }
    }
  }
  // Values, element by element, simplest replacement first.
  std::vector<float> harness::Case::*tensors[] = {&harness::Case::x, &harness::Case::o, &harness::Case::g,
                                                  &harness::Case::dy, &harness::Case::dresidual};
  for (auto member : tensors) {
    for (std::size_t i = 0; i < (best.*member).size() && !out_of_budget(); ++i) {
      for (float s : simpler_values((best.*member)[i])) {
        harness::Case cand = best;
        (cand.*member)[i] = s;
        if (derived_rstd && member == &harness::Case::x) cand.rstd.clear();
        if (attempt(cand)) break;
      }
    }
  }
  // The derived rstd is left implicit in the written case (replay derives it the same way).
  if (derived_rstd) best.rstd.clear();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return best;
}

}  // namespace cert
