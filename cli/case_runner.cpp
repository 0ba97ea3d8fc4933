#include "case_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rmsnorm/formats.h"

#if RMSNORM_CERT_HAVE_PROPERTIES
#include "properties/checks.h"
#endif

namespace cert {

using rmsnorm::DType;
using rmsnorm::Memory;
using rmsnorm::Op;
using Code = rmsnorm::Status::Code;

const char* to_string(RunVerdict v) {
  switch (v) {
    case RunVerdict::pass: return "ok";
    case RunVerdict::fail: return "FAIL";
    case RunVerdict::skipped: return "skip";
    case RunVerdict::invalid: return "INVALID";
  }
  return "?";
}

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Tolerance of a worked example's number: absolute up to magnitude 1, relative above.
bool within(double got, double expected, double tol) {
  if (std::isnan(expected)) return std::isnan(got);
  if (std::isinf(expected)) return got == expected;
  return std::fabs(got - expected) <= tol * std::max(1.0, std::fabs(expected));
}

void compare_list(const char* what, const std::vector<double>& expected, const std::vector<double>& got,
                  double tol, std::vector<std::string>& failures) {
  if (expected.empty()) return;
  if (got.size() != expected.size()) {
    failures.push_back(std::string(what) + ": " + std::to_string(got.size()) + " values to compare, expected " +
                       std::to_string(expected.size()));
    return;
  }
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (!within(got[i], expected[i], tol)) {
      failures.push_back(std::string(what) + "[" + std::to_string(i) + "] = " + fmt("%.9g", got[i]) + ", expected " +
                         fmt("%.9g", expected[i]) + " ± " + fmt("%.3g", tol));
      return;  // one line per list is enough to say it is wrong
    }
}

std::vector<double> decode_all(const std::vector<std::uint32_t>& bits, DType t) {
  std::vector<double> v(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) v[i] = rmsnorm::decode(bits[i], t);
  return v;
}

CaseRun skipped(CaseRun run, std::string why) {
  run.verdict = RunVerdict::skipped;
  run.reason = std::move(why);
  return run;
}

// A launcher status on a valid case: the variant declining (unsupported shape or alignment, no
// device) is a skip; anything else is a failure of the variant.
bool status_is_decline(const rmsnorm::Status& s) {
  return s.code == Code::unsupported || s.code == Code::misaligned || s.code == Code::no_device;
}

// A launcher that did not run the case: a decline is a skip, anything else a failure. False
// when the launch went ahead.
bool not_launched(const rmsnorm::Status& st, CaseRun& run) {
  if (st.ok()) return false;
  if (status_is_decline(st)) {
    run = skipped(std::move(run), std::string(rmsnorm::to_string(st.code)) + ": " + st.reason);
  } else {
    run.verdict = RunVerdict::fail;
    run.reason = std::string("status ") + rmsnorm::to_string(st.code) + ": " + st.reason;
  }
  return true;
}

void take_verdict(const oracle::Verdict& verdict, CaseRun& run) {
  run.profile = verdict.profile;
  run.first_failure = !verdict.error.empty() ? "oracle: " + verdict.error : verdict.pass ? "" : verdict.first_failure;
}

// A case naming a property (`property = P4`) is that property's check, replayed by the property
// library itself (properties/checks.h), so a failure line from the suite replays exactly.
CaseRun run_property_case(const harness::Case& c, const rmsnorm::Variant& v, CaseRun run) {
#if RMSNORM_CERT_HAVE_PROPERTIES
  const properties::CheckResult r = properties::check_case(c, v);
  switch (r.kind) {
    case properties::CheckResult::Kind::pass:
      run.verdict = RunVerdict::pass;
      run.property_note = c.property + ": holds";
      break;
    case properties::CheckResult::Kind::fail:
      run.verdict = RunVerdict::fail;
      run.reason = c.property + ": " + r.message;
      break;
    case properties::CheckResult::Kind::rejected:
      run.verdict = RunVerdict::skipped;
      run.reason = c.property + ": the variant declined the arguments: " + r.message;
      break;
    case properties::CheckResult::Kind::not_applicable:
      run.verdict = RunVerdict::skipped;
      run.reason = c.property + ": not applicable: " + r.message;
      break;
  }
#else
  (void)v;
  run.verdict = RunVerdict::invalid;
  run.reason = "the case names property " + c.property + " but this build has no property library (properties/)";
#endif
  return run;
}

}  // namespace

bool fill_backward_rstd(harness::Case& c, std::string& error) {
  if (c.is_forward() || !c.rstd.empty()) return true;
  // The harness's backward view materializes the values and derives RN32 of the exact r.
  oracle::BackwardCase b;
  if (!harness::backward_case(c, b, error)) {
    error = "cannot derive rstd: " + error;
    return false;
  }
  c.rstd = b.rstd;
  if (!c.generator.empty()) {
    // The rstd rides along as an explicit list, which a generated case does not carry: the case
    // becomes explicit values (the same ones the generator drew).
    c.x = b.x;
    c.g = b.g;
    c.dy = b.dy;
    c.dresidual = b.dresidual;
    c.generator.clear();
  }
  return true;
}

CaseRun run_case(const harness::Case& c_in, const rmsnorm::Variant& v) {
  CaseRun run;
  if (!v.supports(c_in.op)) return skipped(std::move(run), v.name + " does not implement " + rmsnorm::to_string(c_in.op));
  if (v.memory == Memory::device) {
    const rmsnorm::Status s = rmsnorm::device_status();
    if (!s.ok()) return skipped(std::move(run), "no device: " + s.reason);
  }
  if (!c_in.property.empty()) return run_property_case(c_in, v, std::move(run));
  harness::Case c = c_in;
  std::string error;
  if (c.is_forward()) {
    if (!harness::forward_case(c, run.fwd, error)) {
      run.verdict = RunVerdict::invalid;
      run.reason = error;
      return run;
    }
    auto raw = harness::execute_forward(v, run.fwd, c.layout);
    if (not_launched(raw.status, run)) return run;
    run.fwd_out = std::move(raw.result);
    run.guard_violation = raw.guard_violation;
    take_verdict(harness::judge_forward(v, run.fwd, run.fwd_out), run);
    if (c.has_expectations()) {
      compare_list("exact y", c.expect_y, oracle::forward_values(run.fwd), c.expect_tol, run.expectation_failures);
      compare_list("variant y", c.expect_y, decode_all(run.fwd_out.y, c.y_type), c.expect_tol, run.expectation_failures);
      if (!c.expect_rstd.empty()) {
        std::vector<double> exact_r, got_r(run.fwd_out.rstd.begin(), run.fwd_out.rstd.end());
        for (const auto& e : oracle::row_rstd(run.fwd)) exact_r.push_back(e.mid());
        compare_list("exact rstd", c.expect_rstd, exact_r, c.expect_tol, run.expectation_failures);
        // A variant that keeps no r (Variant::writes_rstd) is held to y alone.
        if (v.writes_rstd) compare_list("variant rstd", c.expect_rstd, got_r, c.expect_tol, run.expectation_failures);
      }
    }
  } else {
    if (!fill_backward_rstd(c, error) || !harness::backward_case(c, run.bwd, error)) {
      run.verdict = RunVerdict::invalid;
      run.reason = error;
      return run;
    }
    auto raw = harness::execute_backward(v, run.bwd, c.layout);
    if (not_launched(raw.status, run)) return run;
    run.bwd_out = std::move(raw.result);
    run.guard_violation = raw.guard_violation;
    take_verdict(harness::judge_backward(v, run.bwd, run.bwd_out), run);
    if (c.has_expectations()) {
      const oracle::BackwardValues exact = oracle::backward_values(run.bwd);
      compare_list("exact dx", c.expect_dx, exact.dx, c.expect_tol, run.expectation_failures);
      compare_list("variant dx", c.expect_dx, decode_all(run.bwd_out.dx, c.x_type), c.expect_tol,
                   run.expectation_failures);
      compare_list("exact dg", c.expect_dg, exact.dg, c.expect_tol, run.expectation_failures);
      if (!c.expect_dg.empty() && !run.bwd_out.dg.empty())
        compare_list("variant dg", c.expect_dg, decode_all(run.bwd_out.dg, c.dg_type), c.expect_tol,
                     run.expectation_failures);
    }
  }
  if (!run.guard_violation.empty()) {
    run.verdict = RunVerdict::fail;
    run.reason = "guard: " + run.guard_violation;
  } else if (!run.first_failure.empty()) {
    run.verdict = RunVerdict::fail;
    run.reason = run.first_failure;
  } else if (!run.expectation_failures.empty()) {
    run.verdict = RunVerdict::fail;
    run.reason = "expected value: " + run.expectation_failures.front();
  } else {
    run.verdict = RunVerdict::pass;
  }
  return run;
}

CaseRun run_case_in_detail(const harness::Case& c, const rmsnorm::Variant& v) {
  CaseRun property = run_case(c, v);
  if (c.property.empty() || property.verdict == RunVerdict::invalid) return property;
  harness::Case plain = c;
  plain.property.clear();
  CaseRun detail = run_case(plain, v);
  if (detail.verdict == RunVerdict::skipped || detail.verdict == RunVerdict::invalid) return property;
  detail.alone = to_string(detail.verdict) + (detail.reason.empty() ? "" : ": " + detail.reason);
  detail.verdict = property.verdict;
  detail.reason = std::move(property.reason);
  detail.property_note = std::move(property.property_note);
  return detail;
}

std::vector<const rmsnorm::Variant*> variants_for(const harness::Case& c, const std::string& override_pattern) {
  std::string pattern = override_pattern.empty() ? c.variant : override_pattern;
  if (pattern.empty() || pattern == "*") pattern = "all";
  return rmsnorm::match_variants(pattern);
}

bool load_case_file(const std::string& path, harness::Case& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot be read";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > (std::size_t{64} << 20)) {
    error = path + ": larger than 64 MiB, not a case file";
    return false;
  }
  out = harness::Case{};
  if (!harness::parse_case(text, out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool collect_case_files(const std::vector<std::string>& paths, std::vector<std::string>& files, std::string& error) {
  namespace fs = std::filesystem;
  for (const std::string& p : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      error = p + ": no such file or directory";
      return false;
    }
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
           !ec && it != end; it.increment(ec))
        if (it->is_regular_file(ec) && it->path().extension() == ".case") found.push_back(it->path().string());
      if (ec) {
        error = p + ": " + ec.message();
        return false;
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(p);
    }
  }
  return true;
}

std::string repro_command(const harness::Case& c) {
  std::string line = harness::one_line(c);
  // Single quotes survive the shell unless the line has one: close, escape, reopen.
  std::string quoted;
  for (char ch : line) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  // A plugin's kernel replays only with its library loaded.
  // A kernel registered in-process replays through the command that registers it again.
  const rmsnorm::Variant* v = rmsnorm::find_variant(c.variant);
  if (v && v->in_process) return v->origin + " --line '" + quoted + "'";
  const std::string plugin = v && v->external ? "--plugin '" + v->origin + "' " : "";
  return "rmsnorm-cert repro " + plugin + "--line '" + quoted + "'";
}

std::string repro_command(const std::string& line) {
  if (line.empty()) return "";
  harness::Case c;
  std::string error;
  if (!harness::parse_case(line, c, error)) return "rmsnorm-cert repro --line '" + line + "'";
  return repro_command(c);
}

namespace {

struct Summary {
  double min = INFINITY, max = -INFINITY, sum_sq = 0;
  std::int64_t nan = 0, inf = 0, zero = 0, subnormal = 0, n = 0;
};

Summary summarize(const std::vector<float>& v) {
  Summary s;
  for (float x : v) {
    ++s.n;
    if (std::isnan(x)) { ++s.nan; continue; }
    if (std::isinf(x)) { ++s.inf; continue; }
    if (x == 0) ++s.zero;
    if (std::fpclassify(x) == FP_SUBNORMAL) ++s.subnormal;
    s.min = std::min<double>(s.min, x);
    s.max = std::max<double>(s.max, x);
    s.sum_sq += static_cast<double>(x) * x;
  }
  return s;
}

std::string summary_line(const char* name, const std::vector<float>& v) {
  if (v.empty()) return "";
  const Summary s = summarize(v);
  std::ostringstream o;
  o << "  " << name << ": " << s.n << " values";
  if (s.n > s.nan + s.inf) o << ", min " << fmt("%.6g", s.min) << ", max " << fmt("%.6g", s.max) << ", rms " << fmt("%.6g", std::sqrt(s.sum_sq / static_cast<double>(s.n - s.nan - s.inf)));
  if (s.zero) o << ", " << s.zero << " zeros";
  if (s.subnormal) o << ", " << s.subnormal << " subnormal";
  if (s.nan) o << ", " << s.nan << " NaN";
  if (s.inf) o << ", " << s.inf << " Inf";
  if (v.size() <= 8) {
    o << "  [";
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? " " : "") << fmt("%.9g", v[i]);
    o << "]";
  }
  return o.str() + "\n";
}

// ulps of type t between `got` and the exact value (at the exact value's binade).
double ulps(double got, double exact, DType t) {
  if (std::isnan(got) || std::isnan(exact)) return std::isnan(got) && std::isnan(exact) ? 0 : INFINITY;
  if (std::isinf(got) || std::isinf(exact)) return got == exact ? 0 : INFINITY;
  const rmsnorm::FormatTraits& f = rmsnorm::traits_of(t);
  int e = 0;
  std::frexp(std::max(std::fabs(exact), f.min_normal()), &e);
  const double ulp = std::ldexp(1.0, e - 1 - f.mantissa_bits);
  return std::fabs(got - exact) / ulp;
}

}  // namespace

std::string describe_run(const harness::Case& c, const CaseRun& run, std::size_t max_elements) {
  std::ostringstream o;
  o << "case: op " << rmsnorm::to_string(c.op) << ", R=" << c.rows << " D=" << c.dim << ", x " << rmsnorm::to_string(c.x_type)
    << " g " << rmsnorm::to_string(c.g_type);
  if (c.is_forward()) o << " y " << rmsnorm::to_string(c.y_type);
  else o << " dg " << rmsnorm::to_string(c.dg_type);
  o << ", " << rmsnorm::to_string(c.convention) << ", eps " << fmt("%.9g", c.eps);
  if (c.has_quant()) o << ", quant " << rmsnorm::to_string(c.quant);
  const std::string layout = c.layout.to_string();
  o << ", layout " << (layout.empty() ? "dense" : layout) << "\n";
  if (!c.generator.empty()) {
    char seed[32];
    std::snprintf(seed, sizeof seed, "0x%016llx", static_cast<unsigned long long>(c.seed));
    o << "values: generator " << c.generator << " seed " << seed << " (regimes x=" << c.x_regime << " g=" << c.g_regime
      << (c.is_forward() ? "" : " dy=" + c.dy_regime) << ")\n";
  }
  o << "inputs:\n";
  if (c.is_forward()) {
    o << summary_line("x", run.fwd.x) << summary_line("o", run.fwd.o) << summary_line("g", run.fwd.g);
  } else {
    o << summary_line("x", run.bwd.x) << summary_line("dy", run.bwd.dy) << summary_line("g", run.bwd.g)
      << summary_line("rstd", run.bwd.rstd) << summary_line("dresidual", run.bwd.dresidual);
  }
  std::ostringstream out;
  out << o.str();
  out << "result: " << to_string(run.verdict) << (run.reason.empty() ? "" : ": " + run.reason) << "\n";
  if (!run.alone.empty()) out << "the case alone, without " << c.property << ": " << run.alone << "\n";
  if (run.verdict == RunVerdict::invalid || (run.verdict == RunVerdict::skipped && run.alone.empty())) return out.str();
  const oracle::Profile& p = run.profile;
  out << "profile: " << p.elements << " elements, "
      << fmt("%.2f", p.elements ? 100.0 * static_cast<double>(p.correctly_rounded) / static_cast<double>(p.elements) : 100.0)
      << "% correctly rounded, max " << fmt("%.3g", p.max_ulp) << " ulp, max err/bound " << fmt("%.3g", p.max_err_over_bound)
      << ", " << p.failures << " failures, " << p.fallbacks << " multiprecision fallbacks\n";
  if (!run.first_failure.empty()) out << "first failing element (accept range): " << run.first_failure << "\n";
  for (const auto& e : run.expectation_failures) out << "expected-value mismatch: " << e << "\n";
  if (!run.property_note.empty()) out << run.property_note << "\n";

  // Element table: the worst elements (by ulps from the exact value), rows of the output.
  struct Row { std::size_t i; double got, exact, rn, ulp; };
  std::vector<Row> rows;
  DType out_type = DType::f32;
  const char* name = "y";
  if (c.is_forward()) {
    out_type = c.y_type;
    const auto exact = oracle::forward_values(run.fwd);
    const auto rn = oracle::forward_rounded(run.fwd);
    for (std::size_t i = 0; i < run.fwd_out.y.size() && i < exact.size(); ++i) {
      const double got = rmsnorm::decode(run.fwd_out.y[i], out_type);
      rows.push_back({i, got, exact[i], i < rn.size() ? rmsnorm::decode(rn[i], out_type) : NAN, ulps(got, exact[i], out_type)});
    }
  } else {
    out_type = c.x_type;
    name = "dx";
    const auto exact = oracle::backward_values(run.bwd);
    for (std::size_t i = 0; i < run.bwd_out.dx.size() && i < exact.dx.size(); ++i) {
      const double got = rmsnorm::decode(run.bwd_out.dx[i], out_type);
      rows.push_back({i, got, exact.dx[i], rmsnorm::round_to(exact.dx[i], out_type), ulps(got, exact.dx[i], out_type)});
    }
  }
  if (!c.has_quant() || c.is_forward()) {
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      const double ua = std::isnan(a.ulp) ? INFINITY : a.ulp, ub = std::isnan(b.ulp) ? INFINITY : b.ulp;
      return ua > ub;
    });
    const std::size_t shown = std::min(rows.size(), max_elements);
    if (shown > 0) {
      out << "outputs (" << shown << " of " << rows.size() << ", worst first; " << name << "[row,col]  got  exact  RN(exact)  ulps):\n";
      for (std::size_t k = 0; k < shown; ++k) {
        const Row& r = rows[k];
        const std::int64_t row = static_cast<std::int64_t>(r.i) / c.dim, col = static_cast<std::int64_t>(r.i) % c.dim;
        out << "  " << name << "[" << row << "," << col << "]  " << fmt("%.9g", r.got) << "  " << fmt("%.12g", r.exact) << "  "
            << fmt("%.9g", r.rn) << "  " << fmt("%.3g", r.ulp) << "\n";
      }
    }
  }
  if (!c.is_forward() && !run.bwd_out.dg.empty()) {
    const auto exact = oracle::backward_values(run.bwd);
    out << "dg (first " << std::min<std::size_t>(exact.dg.size(), max_elements) << "; got  exact):\n";
    for (std::size_t j = 0; j < exact.dg.size() && j < max_elements && j < run.bwd_out.dg.size(); ++j)
      out << "  dg[" << j << "]  " << fmt("%.9g", rmsnorm::decode(run.bwd_out.dg[j], c.dg_type)) << "  " << fmt("%.12g", exact.dg[j]) << "\n";
  }
  if (c.is_forward() && !run.fwd_out.rstd.empty()) {
    const auto r = oracle::row_rstd(run.fwd);
    out << "rstd (first " << std::min<std::size_t>(r.size(), 4) << " rows; got  exact):\n";
    for (std::size_t i = 0; i < r.size() && i < 4; ++i)
      out << "  r[" << i << "]  " << fmt("%.9g", run.fwd_out.rstd[i]) << "  " << fmt("%.12g", r[i].mid()) << "\n";
  }
  return out.str();
}

}  // namespace cert
