#include "certification.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "case_runner.h"
#include "isolated_step.h"
#include "json_writer.h"

#if RMSNORM_CERT_HAVE_GENERATORS
#include "properties/generators.h"
#endif
#if RMSNORM_CERT_HAVE_PROPERTIES && RMSNORM_CERT_HAVE_GENERATORS
#include "minimize.h"
#include "properties/checks.h"
#endif

namespace cert {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double percent(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 100.0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Progress::Progress(std::string prefix, bool quiet)
    : prefix_(std::move(prefix)), tty_(::isatty(STDERR_FILENO) != 0), quiet_(quiet), last_log_(std::chrono::steady_clock::now()) {}

void Progress::update(const std::string& text) {
  if (quiet_) return;
  const std::string line = prefix_ + text;
  if (tty_) {
    std::string padded = line;
    if (padded.size() < last_len_) padded.append(last_len_ - padded.size(), ' ');
    std::fprintf(stderr, "\r%s", padded.c_str());
    last_len_ = line.size();
  } else {
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_log_).count() >= kLogSeconds) {
      std::fprintf(stderr, "%s\n", line.c_str());
      last_log_ = now;
    }
  }
  std::fflush(stderr);
}

void Progress::note(const std::string& text) {
  if (tty_ && last_len_ > 0) std::fprintf(stderr, "\r%s\r", std::string(last_len_, ' ').c_str());
  last_len_ = 0;
  std::fprintf(stderr, "%s%s\n", prefix_.c_str(), text.c_str());
  std::fflush(stderr);
}

void Progress::phase() { phase_start_ = std::chrono::steady_clock::now(); }

void Progress::step(const std::string& text, std::size_t done, std::size_t total) {
  const double spent = seconds_since(phase_start_);
  char tail[96];
  if (done > 0 && done < total)
    std::snprintf(tail, sizeof tail, " %zu/%zu, %.0f s, about %.0f s left", done, total, spent,
                  spent / static_cast<double>(done) * static_cast<double>(total - done));
  else
    std::snprintf(tail, sizeof tail, " %zu/%zu, %.0f s", done, total, spent);
  update(text + tail);
}

void Progress::done() {
  if (tty_ && last_len_ > 0) std::fprintf(stderr, "\r%s\r", std::string(last_len_, ' ').c_str());
  last_len_ = 0;
}

// ---------------------------------------------------------------------------------------------
std::vector<PropertyResult> run_property_pool(std::size_t count, const std::vector<std::size_t>& order, int jobs,
                                              Progress& progress, bool stop_at_first_failure,
                                              const std::function<PropertyResult(std::size_t)>& run) {
  std::vector<PropertyResult> results(count);
  std::vector<char> ran(count, 0);
  progress.phase();
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::size_t finished = 0;
  auto worker = [&] {
    for (;;) {
      const std::size_t k = next.fetch_add(1);
      if (k >= count || stop.load()) return;
      const std::size_t i = order.empty() ? k : order[k];
      PropertyResult r = run(i);
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      const bool bad = r.verdict != PropertyVerdict::pass && r.verdict != PropertyVerdict::not_applicable;
      progress.step("properties (last: " + r.id + " " + to_string(r.verdict) + ", " + fmt("%.1f", r.seconds) + " s)", finished,
                    count);
      if (bad) progress.note(r.id + " " + to_string(r.verdict) + ": " + r.message);
      if (bad && stop_at_first_failure) stop = true;
      results[i] = std::move(r);
      ran[i] = 1;
    }
  };
  const int n = std::max(1, std::min<int>(jobs, static_cast<int>(count)));
  std::vector<std::thread> threads;
  for (int k = 1; k < n; ++k) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  // Tests never started (stopped early) are dropped rather than reported as missing.
  std::vector<PropertyResult> out;
  for (std::size_t i = 0; i < count; ++i)
    if (ran[i]) out.push_back(std::move(results[i]));
  return out;
}

SuiteRun run_suite(const rmsnorm::Variant& variant, std::int64_t cases, int jobs, double timeout_seconds,
                   Progress& progress, bool stop_at_first_failure) {
  SuiteRun run;
  const SuiteListing listing = list_property_tests(variant.memory == rmsnorm::Memory::device);
  run.problems = listing.problems;
  struct Task { const PropertyExecutable* exe; const std::string* name; };
  std::vector<Task> tasks;
  for (const auto& [exe, names] : listing.tests)
    for (const std::string& n : names) tasks.push_back({&exe, &n});
  // P18 (rows 2^31 elements apart: buffers of gigabytes to fill, move and check) is the longest
  // test of a device variant by far: it starts first, so that it does not set the run's length
  // by starting last. The results keep the listing's order.
  std::vector<std::size_t> order(tasks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return property_id(*tasks[i].name) == "P18"; });
  run.results = run_property_pool(tasks.size(), order, jobs, progress, stop_at_first_failure, [&](std::size_t i) {
    return run_property_test(*tasks[i].exe, *tasks[i].name, variant.name, cases, timeout_seconds);
  });
  return run;
}

std::vector<std::string> in_process_properties(const rmsnorm::Variant& variant) {
  std::vector<std::string> ids;
#if RMSNORM_CERT_HAVE_PROPERTIES && RMSNORM_CERT_HAVE_GENERATORS
  const bool device = variant.memory == rmsnorm::Memory::device;
  for (const properties::PropertyInfo& p : properties::catalog()) {
    // As the suite's listing: P3 checks the oracle (host listing only); P18 moves gigabytes per
    // case, in the default suite on a device and in the slow one on the host.
    if ((p.oracle_only && device) || (p.id == "P18" && !device)) continue;
    ids.push_back(p.id);
  }
#else
  (void)variant;
#endif
  return ids;
}

PropertyResult run_property_here(const rmsnorm::Variant& variant, const std::string& id, std::int64_t cases,
                                 const BeforeCase& before_case) {
  PropertyResult r;
  r.id = id;
  r.executable = "in-process";
  r.cases_requested = cases;
#if RMSNORM_CERT_HAVE_PROPERTIES && RMSNORM_CERT_HAVE_GENERATORS
  const properties::PropertyInfo* info = properties::find_property(id);
  if (!info) {
    r.verdict = PropertyVerdict::missing;
    r.message = "no property " + id;
    return r;
  }
  const properties::PropertyInfo& p = *info;
  const bool device = variant.memory == rmsnorm::Memory::device;
  const auto t0 = std::chrono::steady_clock::now();
  r.name = p.id + (device ? " (CUDA variants): " : ": ") + p.invariant;
  const std::string why = p.oracle_only ? std::string()
                          : !properties::applies(p, variant) ? variant.name + " supports none of its ops"
                                                              : properties::not_applicable_to(p, variant);
  if (!why.empty()) {
    r.verdict = PropertyVerdict::not_applicable;
    r.message = why;
    r.cases_checked = 0;
    return r;
  }
  const std::int64_t asked = p.max_cases > 0 ? std::min<std::int64_t>(p.max_cases, cases) : cases;
  r.cases_asked = asked;
  r.cases_checked = 0;
  std::string first_rejection, not_applicable_reason;
  // The seed of each draw: FNV-1a of "P4/<variant>", then the case's index.
  std::uint64_t seed = 0xcbf29ce484222325ull;
  for (char ch : p.id + "/" + variant.name) seed = (seed ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  for (std::int64_t i = 0; i < asked; ++i) {
    generators::RngChooser ch(seed + static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull);
    harness::Case c = properties::draw_property_case(p, ch, p.oracle_only ? nullptr : &variant);
    c.variant = p.oracle_only ? "*" : variant.name;
    if (before_case) before_case(harness::one_line(c));
    const properties::CheckResult res = p.oracle_only ? properties::check_oracle_case(c) : properties::check_case(c, variant);
    using Kind = properties::CheckResult::Kind;
    if (res.kind == Kind::pass) {
      ++r.cases_checked;
    } else if (res.kind == Kind::rejected) {
      ++r.cases_rejected;
      if (first_rejection.empty()) first_rejection = res.message;
    } else if (res.kind == Kind::not_applicable) {
      ++r.cases_not_applicable;
      not_applicable_reason = res.message;
    } else {
      // The smallest case that still fails, as the suite's shrinking gives it.
      std::string reason = res.message;
      MinimizeStats stats;
      const harness::Case small = p.oracle_only || p.max_cases > 0 ? c : minimize_case(c, variant, 200, 30.0, reason, stats);
      r.verdict = PropertyVerdict::fail;
      r.failed_after = i + 1;
      r.message = reason;
      // The shorter line of the two: a case that would not shrink is kept as drawn (generator and
      // seed), not as its values written out.
      const std::string shrunk = harness::one_line(small), drawn = harness::one_line(c);
      r.counterexample = shrunk.size() <= drawn.size() ? shrunk : drawn;
      break;
    }
  }
  r.assertions_passed = r.cases_checked;
  if (r.verdict != PropertyVerdict::fail) classify_counted(r, "", first_rejection, not_applicable_reason);
  r.seconds = seconds_since(t0);
#else
  (void)variant;
  (void)before_case;
  r.verdict = PropertyVerdict::missing;
  r.message = "this build has no property checks (properties/), which an in-process kernel needs";
#endif
  return r;
}

SuiteRun run_suite_here(const rmsnorm::Variant& variant, std::int64_t cases, Progress& progress) {
  SuiteRun run;
  const std::vector<std::string> ids = in_process_properties(variant);
  if (ids.empty()) run.problems.push_back("this build has no property checks (properties/), which an in-process kernel needs");
  progress.phase();
  for (std::size_t k = 0; k < ids.size(); ++k) {
    progress.step("properties: " + ids[k], k, ids.size());
    PropertyResult r = run_property_here(variant, ids[k], cases, {});
    if (r.verdict != PropertyVerdict::pass && r.verdict != PropertyVerdict::not_applicable)
      progress.note(r.id + " " + to_string(r.verdict) + ": " + r.message);
    run.results.push_back(std::move(r));
  }
  return run;
}

// ---------------------------------------------------------------------------------------------
std::string base_variant_name(const rmsnorm::Variant& v) {
  if (!v.is_mutant()) return v.name;
  std::string name = v.name;
  if (name.compare(0, 7, "mutant.") == 0) name = name.substr(7);
  const std::string suffix = std::string(".") + rmsnorm::to_string(v.mutant);
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

CorpusRun replay_corpus(const rmsnorm::Variant& variant, const std::string& dir, Progress& progress,
                        bool stop_at_first_failure) {
  if (can_isolate(variant)) return isolated_corpus(variant, dir, progress, stop_at_first_failure);
  return replay_corpus_here(variant, dir, progress, stop_at_first_failure, {});
}

CorpusRun replay_corpus_here(const rmsnorm::Variant& variant, const std::string& dir, Progress& progress,
                             bool stop_at_first_failure, const BeforeCase& before_case) {
  CorpusRun run;
  run.dir = dir;
  std::vector<std::string> files;
  if (!collect_case_files({dir}, files, run.error)) return run;
  const std::string as = base_variant_name(variant);
  progress.phase();
  for (const std::string& file : files) {
    ++run.files;
    harness::Case c;
    std::string error;
    if (!load_case_file(file, c, error)) {
      ++run.invalid;
      run.failures.push_back({file, "invalid case file: " + error, ""});
      continue;
    }
    const std::string pattern = c.variant.empty() || c.variant == "*" || c.variant == "all" ? "*" : c.variant;
    if (!rmsnorm::glob_match(pattern, as) && !rmsnorm::glob_match(pattern, variant.name)) {
      ++run.not_matching;
      continue;
    }
    progress.step("corpus " + file, static_cast<std::size_t>(run.files), files.size());
    if (before_case) {
      harness::Case exact = c;
      exact.variant = variant.name;
      before_case(harness::one_line(exact));
    }
    const CaseRun r = run_case(c, variant);
    run.profile.merge(r.profile);
    switch (r.verdict) {
      case RunVerdict::pass: ++run.passed; break;
      case RunVerdict::skipped: ++run.skipped; break;
      case RunVerdict::invalid:
        ++run.invalid;
        run.failures.push_back({file, "invalid: " + r.reason, ""});
        break;
      case RunVerdict::fail: {
        ++run.failed;
        harness::Case exact = c;
        exact.variant = variant.name;
        run.failures.push_back({file, r.reason, repro_command(exact)});
        if (stop_at_first_failure) return run;
        break;
      }
    }
  }
  return run;
}

// ---------------------------------------------------------------------------------------------
bool generators_available() {
#if RMSNORM_CERT_HAVE_GENERATORS
  return true;
#else
  return false;
#endif
}

std::vector<OpRun> run_generated(const rmsnorm::Variant& variant, std::int64_t cases_per_op, std::uint64_t seed,
                                 Progress& progress) {
  std::vector<OpRun> out;
  for (int k = 0; k < rmsnorm::kOpCount; ++k) {
    const auto op = static_cast<rmsnorm::Op>(k);
    if (!variant.supports(op)) continue;
    out.push_back(can_isolate(variant) ? isolated_generated_op(variant, op, cases_per_op, seed, progress)
                                   : run_generated_op_here(variant, op, cases_per_op, seed, progress, {}));
  }
  return out;
}

OpRun run_generated_op_here(const rmsnorm::Variant& variant, rmsnorm::Op op, std::int64_t cases_per_op,
                            std::uint64_t seed, Progress& progress, const BeforeCase& before_case) {
  OpRun r;
  r.op = op;
#if RMSNORM_CERT_HAVE_GENERATORS
  const int k = static_cast<int>(op);
  const auto t0 = std::chrono::steady_clock::now();
  progress.phase();
  generators::Domain domain;
  domain.ops = {op};
  // Every case inside what the variant claims: its D range, layout, types, conventions and FP8
  // modes.
  r.unreachable = domain.aim_at(variant);
  if (!r.unreachable.empty()) return r;
  domain.target_always = true;
  // Host variants run on 1–2 cores next to the oracle: keep cases small enough that N of them
  // take seconds. Device variants keep the generators' own (larger) cap.
  if (variant.memory == rmsnorm::Memory::host) domain.max_elements = std::int64_t{1} << 15;
  for (std::int64_t i = 0; i < cases_per_op; ++i) {
    generators::RngChooser chooser(generators::mix_seed(seed, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(i)));
    harness::Case c = generators::draw_case(chooser, domain);
    c.variant = variant.name;
    if (before_case) before_case(harness::one_line(c));
    const CaseRun run = run_case(c, variant);
    ++r.cases;
    r.profile.merge(run.profile);
    if (run.verdict == RunVerdict::pass) ++r.passed;
    else if (run.verdict == RunVerdict::skipped) {
      if (r.skipped++ == 0) r.first_skip = run.reason + " — " + harness::one_line(c);
    } else {
      ++r.failed;
      if (r.failures.size() < 5) r.failures.push_back(run.reason + "\n    " + repro_command(c));
    }
    if (i % 8 == 0 || i + 1 == cases_per_op)
      progress.step(std::string(rmsnorm::to_string(op)) + " cases" + (r.failed ? " (" + std::to_string(r.failed) + " FAILED)" : ""),
                    static_cast<std::size_t>(i + 1), static_cast<std::size_t>(cases_per_op));
  }
  r.seconds = seconds_since(t0);
#else
  (void)variant;
  (void)cases_per_op;
  (void)seed;
  (void)progress;
  (void)before_case;
#endif
  return r;
}

// ---------------------------------------------------------------------------------------------
bool Certificate::passed() const { return failure_summary().empty(); }

std::vector<std::string> Certificate::failure_summary() const {
  std::vector<std::string> f;
  // Nothing certified is not a pass: a variant that declined every case checked nothing.
  bool checked = corpus.passed > 0;
  for (const PropertyResult& r : suite.results) checked = checked || r.verdict == PropertyVerdict::pass;
  for (const OpRun& r : generated) checked = checked || r.passed > 0;
  if (!checked) f.push_back("nothing was checked: every property, corpus case and generated case was declined or not run");
  if (suite.results.empty()) f.push_back("property suite: not run (" + (suite.problems.empty() ? std::string("no tests") : suite.problems.front()) + ")");
  for (const std::string& p : suite.problems) f.push_back("property suite: " + p);
  for (const PropertyResult& r : suite.results)
    if (r.verdict != PropertyVerdict::pass && r.verdict != PropertyVerdict::not_applicable)
      f.push_back(r.id + " " + to_string(r.verdict) + ": " + r.message);
  if (!corpus.error.empty()) f.push_back("corpus: " + corpus.error);
  for (const CorpusFailure& cf : corpus.failures) f.push_back("corpus " + cf.file + ": " + cf.reason);
  if (generated.empty() && !generated_note.empty()) f.push_back("generated cases: " + generated_note);
  for (const OpRun& r : generated) {
    const std::string op = std::string("generated ") + rmsnorm::to_string(r.op) + ": ";
    if (r.failed > 0) f.push_back(op + std::to_string(r.failed) + " of " + std::to_string(r.cases) + " failed");
    if (!r.unreachable.empty()) f.push_back(op + "no case can be drawn inside the claims: " + r.unreachable);
    if (r.too_many_skipped())
      f.push_back(op + std::to_string(r.skipped) + " of " + std::to_string(r.cases) + " cases skipped (" +
                  fmt("%.1f", percent(r.skipped, r.cases)) + "%), above the ceiling of " +
                  std::to_string(100 - kCheckedFloorPercent) + "% (first: " + r.first_skip + ")");
  }
  return f;
}

JUnitCase property_junit(const PropertyResult& r, const std::string& classname) {
  using R = JUnitCase::Result;
  JUnitCase j;
  j.classname = classname;
  j.name = r.name;
  j.seconds = r.seconds;
  j.message = r.message;
  j.detail = r.counterexample;
  switch (r.verdict) {
    case PropertyVerdict::pass: j.result = R::pass; break;
    case PropertyVerdict::not_applicable: j.result = R::skipped; break;
    case PropertyVerdict::missing: j.result = R::error; break;
    default:
      j.result = R::fail;
      j.message = std::string(to_string(r.verdict)) + ": " + r.message;
  }
  return j;
}

JUnitSuite certificate_junit(const Certificate& c) {
  using R = JUnitCase::Result;
  JUnitSuite s;
  s.name = "rmsnorm-cert certify " + c.variant;
  for (const PropertyResult& r : c.suite.results) s.cases.push_back(property_junit(r, c.variant));
  for (const std::string& p : c.suite.problems) s.cases.push_back({c.variant, "property suite", 0, R::error, p, ""});
  JUnitCase corpus{c.variant, "corpus " + c.corpus.dir, 0, R::pass, "", ""};
  if (!c.corpus.error.empty()) {
    corpus.result = R::error;
    corpus.message = c.corpus.error;
  } else if (!c.corpus.failures.empty()) {
    corpus.result = R::fail;
    corpus.message = std::to_string(c.corpus.failures.size()) + " case file(s) failed or were invalid";
    for (const CorpusFailure& f : c.corpus.failures) corpus.detail += f.file + ": " + f.reason + (f.repro.empty() ? "" : "\n  " + f.repro) + "\n";
  } else if (c.corpus.passed == 0) {
    corpus.result = R::skipped;
    corpus.message = "no case file of the corpus applies to this variant";
  }
  s.cases.push_back(corpus);
  for (const OpRun& r : c.generated) {
    JUnitCase g{c.variant, std::string("generated ") + rmsnorm::to_string(r.op) + " cases", r.seconds, R::pass, "", ""};
    if (!r.unreachable.empty()) {
      g.result = R::fail;
      g.message = "no case can be drawn inside the claims: " + r.unreachable;
    } else if (r.failed > 0 || r.too_many_skipped()) {
      g.result = R::fail;
      g.message = std::to_string(r.failed) + " of " + std::to_string(r.cases) + " failed, " + std::to_string(r.skipped) + " skipped";
      for (const std::string& f : r.failures) g.detail += f + "\n";
      if (r.too_many_skipped()) g.detail += "first skip: " + r.first_skip + "\n";
    }
    s.cases.push_back(g);
  }
  if (c.generated.empty() && !c.generated_note.empty())
    s.cases.push_back({c.variant, "generated cases", 0, R::error, c.generated_note, ""});
  return s;
}

namespace {

oracle::Profile total_profile(const Certificate& c) {
  oracle::Profile p;
  for (const OpRun& r : c.generated) p.merge(r.profile);
  p.merge(c.corpus.profile);
  return p;
}

std::string md_escape(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += "<br>";
    else out += ch;
  }
  return out;
}

// "19 checked of 20 asked (95.0%)"; a failed property's: "failed after 3 checked of 20 asked" (the
// draws that held before the failing one); tests without a report line: "20 asked".
std::string cases_cell(const PropertyResult& r) {
  if (r.checked_share() < 0) return std::to_string(r.cases_asked >= 0 ? r.cases_asked : r.cases_requested) + " asked";
  if (r.verdict == PropertyVerdict::fail)
    return "failed after " + std::to_string(r.cases_checked) + " checked of " + std::to_string(r.cases_asked) + " asked";
  return std::to_string(r.cases_checked) + " checked of " + std::to_string(r.cases_asked) + " asked (" +
         fmt("%.1f", 100.0 * r.checked_share()) + "%)";
}

std::string profile_cells(const oracle::Profile& p) {
  return std::to_string(p.elements) + " | " + fmt("%.3f", percent(p.correctly_rounded, p.elements)) + " | " +
         fmt("%.3g", p.max_ulp) + " | " + fmt("%.3g", p.max_err_over_bound) + " | " + std::to_string(p.fallbacks) +
         " | " + std::to_string(p.failures);
}

void json_profile(JsonWriter& j, const char* key, const oracle::Profile& p) {
  j.begin_object(key)
      .value("elements", p.elements)
      .value("correctly_rounded", p.correctly_rounded)
      .value("percent_correctly_rounded", percent(p.correctly_rounded, p.elements))
      .value("max_ulp", p.max_ulp)
      .value("max_err_over_bound", p.max_err_over_bound)
      .value("fallbacks", p.fallbacks)
      .value("failures", p.failures);
  // Per output type with elements: the ulp and err/bound histograms (oracle::Profile's bins).
  j.begin_object("distributions");
  for (int t = 0; t < oracle::Profile::kTypes; ++t) {
    std::int64_t n = 0;
    for (std::int64_t c : p.ulp_hist[t]) n += c;
    if (n == 0) continue;
    j.begin_object(rmsnorm::to_string(static_cast<rmsnorm::DType>(t))).value("elements", n);
    j.begin_array("ulp_bins");
    for (std::int64_t c : p.ulp_hist[t]) j.value(nullptr, c);
    j.end_array().begin_array("err_over_bound_bins");
    for (std::int64_t c : p.bound_hist[t]) j.value(nullptr, c);
    j.end_array().end_object();
  }
  j.end_object().end_object();
}

}  // namespace

std::vector<std::string> claim_lines(const rmsnorm::Variant& v) {
  std::vector<std::string> out;
  auto list = [](int count, std::uint32_t set, auto name) {
    std::string yes, no;
    for (int i = 0; i < count; ++i) {
      const std::string n = name(i);
      if (n.empty()) continue;
      std::string& into = (set == 0 || ((set >> i) & 1u)) ? yes : no;
      if (!into.empty()) into += ", ";
      into += n;
    }
    return std::make_pair(yes, no);
  };

  const auto ops = list(rmsnorm::kOpCount, v.ops, [](int i) { return std::string(rmsnorm::to_string(static_cast<rmsnorm::Op>(i))); });
  out.push_back("ops claimed: " + ops.first + (ops.second.empty() ? "" : "; not claimed (not certified): " + ops.second));
  auto declared = [&](const char* what, int count, std::uint32_t set, auto name) {
    if (set == 0) {
      out.push_back(std::string(what) + ": not declared (the variant's can_implement decides each case)");
      return;
    }
    const auto l = list(count, set, name);
    out.push_back(std::string(what) + " claimed: " + l.first + (l.second.empty() ? "" : "; not claimed: " + l.second));
  };
  declared("input types", 3, v.dtypes, [](int i) { return std::string(rmsnorm::to_string(static_cast<rmsnorm::DType>(i))); });
  declared("conventions", 4, v.conventions, [](int i) { return std::string(rmsnorm::to_string(static_cast<rmsnorm::Convention>(i))); });
  if (v.supports(rmsnorm::Op::forward_quant) || v.supports(rmsnorm::Op::add_forward_quant))
    declared("FP8 modes", 4, v.quant_modes & ~1u,
             [](int i) { return i == 0 ? std::string() : std::string(rmsnorm::to_string(static_cast<rmsnorm::Quant>(i))); });
  std::string range = "D from " + std::to_string(v.min_dim) + " to " + std::to_string(v.max_dim);
  if (v.f32_min_dim > 0 || v.f32_max_dim > 0)
    range += " (fp32 rows " + std::to_string(v.min_dim_for(rmsnorm::DType::f32)) + " to " +
             std::to_string(v.max_dim_for(rmsnorm::DType::f32)) + ")";
  if (v.f32_add_max_dim > 0) range += " (fp32 rows with the fused add to " + std::to_string(v.f32_add_max_dim) + ")";
  out.push_back(range +
                (v.packed_rows    ? ", packed rows only"
                 : v.aligned_rows ? ", 16-byte aligned rows"
                                  : ", any layout") +
                (v.shared_frame ? ", x, y and o in one 16-byte frame" : "") +
                (v.quant_16bit_rows ? ", FP8 outputs of 16-bit rows only" : "") +
                (v.same_type_weights ? ", weights of x's type" : "") +
                (v.dg_weight_type ? ", dg in the weight's type only" : ""));
  if (!v.writes_rstd && (v.ops & 0xFu))
    out.push_back("rstd: not written by its forward ops, so not judged (y, h and scale are)");
  // The tolerance is the judge's: the declared shape within its limits, else a sequential sum.
  auto shape_line = [&](const char* what, bool is_row, std::int64_t n) {
    rmsnorm::AccumShape s;
    const rmsnorm::Status st = is_row ? rmsnorm::judged_row_shape(v, n, s) : rmsnorm::judged_dg_shape(v, n, s);
    const bool declared_shape = is_row ? static_cast<bool>(v.row_shape) : static_cast<bool>(v.dg_shape);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s at %s = %lld: %s %lld terms per thread, tree depth %d -> eps = ((k+d)/2 + 7)u = %.3g%s",
                  what, is_row ? "D" : "R", static_cast<long long>(n),
                  !st.ok() ? "REFUSED, judged as" : declared_shape ? "declared" : "not declared, judged as a sequential sum:",
                  static_cast<long long>(s.per_thread), s.tree_depth,
                  ((static_cast<double>(s.per_thread) + s.tree_depth) / 2 + 7) * 0x1p-24, st.ok() ? "" : (" (" + st.reason + ")").c_str());
    out.push_back(buf);
  };
  for (const std::int64_t d : {std::int64_t{1024}, std::int64_t{4096}, std::int64_t{16384}, std::int64_t{65536}})
    if (v.declares(d, rmsnorm::DType::bf16)) shape_line("row reduction", true, d);
  if (v.supports(rmsnorm::Op::backward) || v.supports(rmsnorm::Op::add_backward))
    for (const std::int64_t r : {std::int64_t{1}, std::int64_t{4096}, std::int64_t{65536}}) shape_line("dg column sum", false, r);
  return out;
}

std::string certificate_markdown(const Certificate& c) {
  std::ostringstream o;
  const bool ok = c.passed();
  o << "# Certificate: `" << c.variant << "` — " << (ok ? "PASS" : "FAIL") << "\n\n";
  o << "| | |\n|---|---|\n";
  o << "| variant | `" << c.variant << "` (" << c.memory << ") " << md_escape(c.description) << " |\n";
  o << "| device | " << (c.device_name.empty() ? "none: " + md_escape(c.device_reason) : c.device_name + " (sm " + c.device_cc + ")") << " |\n";
  o << "| driver / CUDA runtime | " << c.driver << " / " << c.runtime << " |\n";
  o << "| commit | `" << c.commit << "`" << (c.commit_dirty ? " (with local changes)" : "") << " |\n";
  o << "| date | " << c.date << " on " << c.host << " |\n";
  o << "| tool | rmsnorm-cert " << c.tool_version << ", seed `";
  char seed[32];
  std::snprintf(seed, sizeof seed, "0x%016llx", static_cast<unsigned long long>(c.seed));
  o << seed << "`, " << c.cases << " generated cases per op, " << c.property_cases << " cases per property |\n";
  o << "| time | " << fmt("%.1f", c.seconds) << " s |\n\n";
  if (!c.claims.empty()) {
    o << "## What is claimed, and how it is judged\n\n";
    for (const std::string& l : c.claims) o << "- " << md_escape(l) << "\n";
    o << "\nOnly what is claimed is certified. The tolerance follows from the accumulation shape, which the judge "
         "accepts only within 1 <= k <= n terms per thread and a tree depth d <= 64 (docs/contract.md#accumulation-shape).\n\n";
  }

  o << "## Properties\n\n";
  if (c.suite.results.empty()) o << "**Not run.** ";
  for (const std::string& p : c.suite.problems) o << "Problem: " << md_escape(p) << "\n\n";
  if (!c.suite.results.empty()) {
    o << "| property | test | cases | assertions | verdict | time (s) | note |\n|---|---|---|---|---|---|---|\n";
    for (const PropertyResult& r : c.suite.results)
      o << "| " << r.id << " | " << md_escape(r.name) << " | "
        << cases_cell(r) << " | " << r.assertions_passed << " passed, "
        << r.assertions_failed << " failed | " << (r.verdict == PropertyVerdict::pass ? "pass" : std::string("**") + to_string(r.verdict) + "**")
        << " | " << fmt("%.1f", r.seconds) << " | " << md_escape(r.counterexample.empty() ? r.message : r.message + " — `" + repro_command(r.counterexample) + "`") << " |\n";
    o << "\nCases: checked (the suite's count; declined and not-applicable draws excluded) of asked, and the share. "
         "Every draw is aimed inside what the variant declares (D range, layout, types, conventions, FP8 modes), so "
         "a property that applies must check at least "
      << kCheckedFloorPercent
      << "% of the cases asked: `BELOW FLOOR` fails the certificate. `NOT EXERCISED`: it checked none, the "
         "variant declined every case; it fails too. `n/a`: the property cannot apply to this variant (an op it does "
         "not implement, nothing it draws is claimed, or nothing it could run here); never counted as a pass.\n";
  }
  o << "\n## Corpus replay\n\n";
  if (!c.corpus.error.empty()) o << "**Could not read** `" << c.corpus.dir << "`: " << md_escape(c.corpus.error) << "\n";
  else
    o << "`" << c.corpus.dir << "`: " << c.corpus.files << " case files, " << c.corpus.passed << " passed, " << c.corpus.failed
      << " failed, " << c.corpus.skipped << " skipped (op or shape not implemented by this variant), " << c.corpus.invalid
      << " invalid, " << c.corpus.not_matching << " for other variants.\n";
  for (const CorpusFailure& f : c.corpus.failures)
    o << "\n- **FAIL** `" << f.file << "`: " << md_escape(f.reason) << (f.repro.empty() ? "" : "\n  `" + f.repro + "`");
  o << "\n\n## Generated cases and error profile\n\n";
  if (c.generated.empty()) o << "**Not run**: " << md_escape(c.generated_note) << "\n";
  else {
    o << "| op | cases | passed | failed | skipped (share) | elements | % correctly rounded | max ulp | max err/bound | fallbacks | element failures |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const OpRun& r : c.generated)
      o << "| " << rmsnorm::to_string(r.op) << " | " << r.cases << " | " << r.passed << " | " << r.failed << " | " << r.skipped
        << " (" << fmt("%.1f", r.cases > 0 ? percent(r.skipped, r.cases) : 0.0) << "%)" << (r.too_many_skipped() ? " **TOO MANY**" : "")
        << " | " << profile_cells(r.profile) << " |\n";
    o << "| **all (with corpus)** | | | | | " << profile_cells(total_profile(c)) << " |\n";
    o << "\nEvery generated case is drawn inside what the variant declares; at most " << 100 - kCheckedFloorPercent
      << "% of an op's cases may be skipped (declined by the variant), else the certificate fails.\n";
    for (const OpRun& r : c.generated) {
      if (!r.unreachable.empty()) o << "\n- **" << rmsnorm::to_string(r.op) << "**: no case can be drawn inside the claims: " << md_escape(r.unreachable) << "\n";
      if (r.skipped > 0) o << "\n- " << rmsnorm::to_string(r.op) << ", first skipped: " << md_escape(r.first_skip) << "\n";
    }
    o << "\nmax ulp is measured against the exact value in ulps of the output type; max err/bound ≤ 1 "
         "means every element inside the oracle's acceptance set; fallbacks: elements the FP64 fast "
         "path could not decide, settled by Boost.Multiprecision.\n\n"
         "The backward's ulp figures can be large on a passing certificate: where dx = r(ĝ − x̂·c) "
         "cancels, the exact value is tiny while the fp32 rounding of the terms that cancel is not, so "
         "the contract bounds each element by the magnitude of those terms "
         "(docs/contract.md#backward-bound), not by ulps of its own value. err/bound is the measure "
         "there; the forward's outputs are judged within a few ulps.\n";
    for (const OpRun& r : c.generated)
      for (const std::string& f : r.failures) o << "\n- **FAIL** " << rmsnorm::to_string(r.op) << ": `" << md_escape(f) << "`";
  }
  const auto failures = c.failure_summary();
  o << "\n\n## Verdict: " << (ok ? "PASS" : "FAIL") << "\n";
  for (const std::string& f : failures) o << "\n- " << md_escape(f);
  o << "\n";
  return o.str();
}

std::string certificate_json(const Certificate& c) {
  JsonWriter j;
  char seed[32];
  std::snprintf(seed, sizeof seed, "0x%016llx", static_cast<unsigned long long>(c.seed));
  j.begin_object()
      .value("variant", c.variant)
      .value("description", c.description)
      .value("memory", c.memory)
      .value("verdict", c.passed() ? "pass" : "fail");
  j.begin_object("device")
      .value("available", c.device_reason.empty())
      .value("name", c.device_name)
      .value("compute_capability", c.device_cc)
      .value("driver", c.driver)
      .value("cuda_runtime", c.runtime)
      .value("reason", c.device_reason)
      .end_object();
  j.value("commit", c.commit).value("commit_dirty", c.commit_dirty).value("date", c.date).value("host", c.host);
  j.value("tool_version", c.tool_version).value("seed", std::string(seed)).value("cases_per_op", c.cases);
  j.value("cases_per_property", c.property_cases).value("seconds", c.seconds);
  j.begin_array("claims");
  for (const std::string& l : c.claims) j.value(nullptr, l);
  j.end_array();
  j.begin_object("properties");
  j.value("checked_floor_percent", kCheckedFloorPercent);
  j.begin_array("problems");
  for (const auto& p : c.suite.problems) j.value(nullptr, p);
  j.end_array();
  j.begin_array("tests");
  for (const PropertyResult& r : c.suite.results) {
    j.begin_object()
        .value("id", r.id)
        .value("name", r.name)
        .value("executable", r.executable)
        .value("cases_requested", r.cases_requested)
        .value("cases_asked", r.cases_asked)
        .value("cases_checked", r.cases_checked)
        .value("cases_rejected", r.cases_rejected)
        .value("cases_not_applicable", r.cases_not_applicable);
    if (r.checked_share() >= 0) j.value("checked_percent", 100.0 * r.checked_share());
    else j.null("checked_percent");
    j.value("below_floor", r.verdict == PropertyVerdict::below_floor)
        .value("assertions_passed", r.assertions_passed)
        .value("assertions_failed", r.assertions_failed)
        .value("verdict", to_string(r.verdict))
        .value("seconds", r.seconds)
        .value("message", r.message)
        .value("counterexample", r.counterexample)
        .value("repro", repro_command(r.counterexample));
    if (r.failed_after >= 0) j.value("failed_after_cases", r.failed_after);
    j.end_object();
  }
  j.end_array().end_object();
  j.begin_object("corpus")
      .value("dir", c.corpus.dir)
      .value("error", c.corpus.error)
      .value("files", c.corpus.files)
      .value("passed", c.corpus.passed)
      .value("failed", c.corpus.failed)
      .value("skipped", c.corpus.skipped)
      .value("invalid", c.corpus.invalid)
      .value("other_variants", c.corpus.not_matching);
  j.begin_array("failures");
  for (const CorpusFailure& f : c.corpus.failures)
    j.begin_object().value("file", f.file).value("reason", f.reason).value("repro", f.repro).end_object();
  j.end_array();
  json_profile(j, "profile", c.corpus.profile);
  j.end_object();
  j.begin_object("generated").value("note", c.generated_note);
  j.value("skipped_ceiling_percent", 100 - kCheckedFloorPercent);
  j.begin_array("ops");
  for (const OpRun& r : c.generated) {
    j.begin_object()
        .value("op", rmsnorm::to_string(r.op))
        .value("cases", r.cases)
        .value("passed", r.passed)
        .value("failed", r.failed)
        .value("skipped", r.skipped)
        .value("skipped_percent", r.cases > 0 ? percent(r.skipped, r.cases) : 0.0)
        .value("too_many_skipped", r.too_many_skipped())
        .value("first_skip", r.first_skip)
        .value("unreachable", r.unreachable)
        .value("seconds", r.seconds);
    json_profile(j, "profile", r.profile);
    j.begin_array("failures");
    for (const auto& f : r.failures) j.value(nullptr, f);
    j.end_array().end_object();
  }
  j.end_array().end_object();
  json_profile(j, "error_profile", total_profile(c));
  j.begin_array("failures");
  for (const auto& f : c.failure_summary()) j.value(nullptr, f);
  j.end_array();
  j.end_object();
  return j.str();
}

bool write_text_file(const std::string& path, const std::string& text, std::string& error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = path + ": cannot be written";
    return false;
  }
  out << text;
  out.close();
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

}  // namespace cert
