// `certify PATTERN`: for every matching product variant, the property suite, the corpus and N
// generated cases per op; a certificate per variant (Markdown + JSON) and a summary. Device
// variants on a machine without a GPU are listed as skipped with the reason, never certified.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "build_info.h"
#include "certification.h"
#include "command_line.h"
#include "commands.h"
#include "device_info.h"
#include "git_commit.h"
#include "isolated_step.h"
#include "json_writer.h"
#include "subprocess.h"

namespace cert {

namespace {

std::string profile_brief(const oracle::Profile& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.3f%% correctly rounded, max %.3g ulp, max err/bound %.3g, %lld fallbacks",
                p.elements ? 100.0 * static_cast<double>(p.correctly_rounded) / static_cast<double>(p.elements) : 100.0,
                p.max_ulp, p.max_err_over_bound, static_cast<long long>(p.fallbacks));
  return buf;
}


// The summary line of a certificate: properties, corpus, the error profile over the corpus and the
// generated cases, the time.
std::string evidence(const Certificate& c) {
  oracle::Profile total = c.corpus.profile;
  for (const OpRun& r : c.generated) total.merge(r.profile);
  int props_pass = 0, props_na = 0;
  for (const auto& r : c.suite.results) {
    props_pass += r.verdict == PropertyVerdict::pass;
    props_na += r.verdict == PropertyVerdict::not_applicable;
  }
  char detail[512];
  std::snprintf(detail, sizeof detail, "properties %d pass / %d n/a / %zu; corpus %d/%d; %s; %.1f s", props_pass, props_na,
                c.suite.results.size(), c.corpus.passed, c.corpus.passed + c.corpus.failed + c.corpus.invalid,
                profile_brief(total).c_str(), c.seconds);
  return detail;
}

// DIR/report.html, drawn by the Python package of this tree (python/rmsnorm_cert) with
// matplotlib: the first of $RMSNORM_PYTHON, python3 on PATH and /usr/bin/python3 (where the
// distribution's matplotlib lives) that has it. False (said on stderr) when it could not be.
bool write_html_report(const std::string& out_dir) {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("RMSNORM_PYTHON"); p && *p) candidates.emplace_back(p);
  if (std::string p = find_in_path("python3"); !p.empty()) candidates.push_back(p);
  candidates.emplace_back("/usr/bin/python3");
  std::string python;
  for (const std::string& c : candidates) {
    if (!is_executable(c)) continue;
    const ChildResult probe = run_child({c, "-c", "import matplotlib"}, {}, 60);
    if (probe.exited_ok() && probe.exit_code == 0) {
      python = c;
      break;
    }
  }
  if (python.empty()) {
    std::fprintf(stderr, "rmsnorm-cert certify: --html needs python3 with matplotlib (Debian: apt-get install "
                         "python3-matplotlib; or name an interpreter in RMSNORM_PYTHON)\n");
    return false;
  }
  std::string pythonpath = std::string(RMSNORM_CERT_SOURCE_DIR) + "/python";
  if (const char* p = std::getenv("PYTHONPATH"); p && *p) pythonpath += std::string(":") + p;
  const ChildResult r = run_child({python, "-m", "rmsnorm_cert", "report", out_dir}, {{"PYTHONPATH", pythonpath}}, 600);
  if (!r.exited_ok() || r.exit_code != 0) {
    std::fprintf(stderr, "rmsnorm-cert certify: the HTML report failed (%s)\n%s%s", r.describe().c_str(), r.out.c_str(), r.err.c_str());
    return false;
  }
  std::printf("%s", r.out.c_str());
  return true;
}

// The options every variant's certification shares.
struct CertifyOptions {
  std::int64_t cases = 100, property_cases = 100, jobs = 1;
  std::uint64_t seed = 0;
  std::string corpus;
  double timeout = 300;
  bool no_properties = false;
};

// One variant's certificate: the property suite, the corpus and the generated cases.
Certificate certify_variant(const rmsnorm::Variant& v, const CertifyOptions& o, const DeviceInfo& device,
                            const std::string& progress_prefix) {
  const auto t0 = std::chrono::steady_clock::now();
  Progress progress(progress_prefix);
  Certificate c;
  c.variant = v.name;
  c.description = v.description;
  c.memory = v.memory == rmsnorm::Memory::host ? "host" : "device";
  c.date = utc_now();
  c.host = host_name();
  c.commit = RMSNORM_CERT_GIT_COMMIT;
  c.commit_dirty = RMSNORM_CERT_GIT_DIRTY != 0;
  c.tool_version = RMSNORM_CERT_VERSION;
  c.device_name = device.name;
  c.device_cc = device.compute_capability;
  c.driver = device.driver;
  c.runtime = device.runtime;
  c.device_reason = device.available ? "" : device.reason;
  c.cases = o.cases;
  c.property_cases = o.property_cases;
  c.seed = o.seed;
  c.claims = claim_lines(v);
  // The corpus and the generated cases run in this process, the properties in child processes:
  // with more than one job the two go side by side, and the properties show the progress.
  // A kernel hosted by this process (the Python bridge) runs its steps in child processes when
  // its host named a launcher (isolated_step.h), else everything here, one after another.
  const bool here = v.in_process && !can_isolate(v);
  const bool side_by_side = !o.no_properties && o.jobs > 1 && !here;
  Progress side_progress(progress_prefix, /*quiet=*/side_by_side);
  auto corpus_and_generated = [&] {
    c.corpus = replay_corpus(v, o.corpus, side_progress);
    if (generators_available()) {
      c.generated = run_generated(v, o.cases, o.seed, side_progress);
    } else {
      c.generated_note = "this build has no rmsnorm_generators library (properties/)";
    }
  };
  std::thread side;
  if (side_by_side) side = std::thread(corpus_and_generated);
  if (!o.no_properties) {
    c.suite = here ? run_suite_here(v, o.property_cases, progress)
              : v.in_process ? isolated_suite(v, o.property_cases, static_cast<int>(o.jobs), progress)
                              : run_suite(v, o.property_cases, static_cast<int>(o.jobs), o.timeout, progress);
  } else {
    c.suite.problems.push_back("skipped by --no-properties");
  }
  if (side_by_side) {
    progress.update("corpus and generated cases");
    side.join();
  } else {
    corpus_and_generated();
  }
  progress.done();
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

// The command line of `certify`: what every variant's certification shares and what the run does.
struct CertifyRun {
  std::string pattern;
  CertifyOptions variant;
  std::string out_dir = "certificates", junit_path;
  double deadline = 0;
  bool html = false;
};

// False when the command ends here (--help, a usage error), with its exit status in `exit_status`.
bool parse_options(const Args& args, CertifyRun& run, int& exit_status) {
  CommandLine cl("certify",
                 "certify PATTERN [--cases N] [--property-cases N] [--seed S] [--out DIR] [--jobs J] [--deadline S] "
                 "[--junit FILE] [--html]",
                 "Certifies every product variant matching PATTERN ('all' = every non-mutant variant; globs with\n"
                 "* and ?): runs the property suite against it (RMSNORM_VARIANTS=<name>), replays the corpus,\n"
                 "runs N generated cases per op it implements and accumulates the error profile. Writes\n"
                 "DIR/<variant>.md and .json and DIR/SUMMARY.md/.json (the summary after every variant, so a\n"
                 "run cut short still says what it certified). Without a GPU, device variants are listed as\n"
                 "skipped with the reason. Exit 1 if any check failed or a variant was not run.");
  std::vector<std::string> pattern;
  CertifyOptions& o = run.variant;
  o.property_cases = -1;  // not given: --cases, once parsed
  o.jobs = std::max(1u, std::thread::hardware_concurrency());
  o.seed = 0x5eed2025c0ffee01ull;
  o.corpus = default_corpus_dir();
  cl.positionals(&pattern, "a variant PATTERN (e.g. all, host.*, fwd.*)", 1, 1);
  cl.option("--cases", &o.cases, "N", "generated cases per supported op (default 100)", 0, 100000000);
  cl.option("--property-cases", &o.property_cases, "N", "RMSNORM_PROP_CASES for the suite (default: --cases)", 1,
            100000000);
  cl.option_u64("--seed", &o.seed, "S", "seed of the generated cases (default 0x5eed2025c0ffee01)");
  cl.option("--out", &run.out_dir, "DIR", "where certificates go (default ./certificates)");
  cl.option("--corpus", &o.corpus, "DIR", "corpus to replay (default: this tree's corpora/)");
  cl.option("--jobs", &o.jobs, "J",
            "property tests run J at a time, the corpus and generated cases beside them when J > 1 (default: cores)", 1,
            256);
  cl.option("--timeout", &o.timeout, "S", "limit per property test in seconds (default 300; a time-out is a failure)");
  cl.flag("--no-properties", &o.no_properties, "skip the property suite (the certificate then says FAIL: not run)");
  cl.option("--deadline", &run.deadline, "S",
            "start no variant after S seconds (0: none); the rest are listed NOT RUN and the run fails");
  cl.option("--junit", &run.junit_path, "FILE",
            "also write the results as JUnit XML: a test case per property, corpus and op");
  cl.flag("--html", &run.html,
          "also write DIR/report.html with plots (python3 with matplotlib: python -m rmsnorm_cert report DIR)");
  const auto stop = [&](const std::string& error) {
    exit_status = cl.usage_exit(error);
    return false;
  };
  std::string error;
  if (!cl.parse(args, error)) return stop(error);
  if (cl.given("--corpus") && !std::filesystem::is_directory(o.corpus)) {
    std::fprintf(stderr, "rmsnorm-cert certify: --corpus %s: no such folder\n", o.corpus.c_str());
    exit_status = kExitError;
    return false;
  }
  if (!(run.deadline >= 0) || !std::isfinite(run.deadline)) return stop("--deadline wants seconds >= 0 (0: none)");
  if (!(o.timeout > 0) || !std::isfinite(o.timeout)) return stop("--timeout wants seconds > 0");
  if (o.property_cases < 0) o.property_cases = std::max<std::int64_t>(o.cases, 1);
  run.pattern = pattern[0];
  return true;
}

// The product variants (no mutants) that `pattern` selects, in registry order.
std::vector<const rmsnorm::Variant*> product_variants(const std::string& pattern) {
  std::vector<const rmsnorm::Variant*> matched;
  for (const rmsnorm::Variant* v : rmsnorm::match_variants(pattern))
    if (!v->is_mutant()) matched.push_back(v);
  return matched;
}

// What the run has done so far; the summary, the JUnit file and the exit status are drawn from it.
struct RunRecord {
  struct Line { std::string variant, verdict, detail, file; };
  std::vector<Line> lines;                                   // certified
  std::vector<std::pair<std::string, std::string>> skipped;  // device variants without a GPU, and why
  std::vector<std::string> not_run;                          // --deadline passed before they started
  std::vector<JUnitSuite> junit;
  bool all_ok = true;
  const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

// SUMMARY.md (`pending`: variants still to come, listed so).
std::string summary_markdown(const std::string& pattern, const DeviceInfo& device, const RunRecord& r,
                             const std::vector<std::string>& pending, double total_s) {
  std::string md = "# Certification summary: `" + pattern + "`\n\n";
  md += "Commit `" + std::string(RMSNORM_CERT_GIT_COMMIT) + "`" +
        (RMSNORM_CERT_GIT_DIRTY ? " (with local changes)" : "") + ", " + utc_now() + ", device: " +
        (device.available ? device.name + ", driver " + device.driver + ", CUDA runtime " + device.runtime
                          : "none (" + device.reason + ")") +
        ".\n\n";
  md += "| variant | verdict | evidence | certificate |\n|---|---|---|---|\n";
  for (const auto& l : r.lines)
    md += "| `" + l.variant + "` | " + l.verdict + " | " + l.detail + " | [" + l.variant + ".md](" + l.variant +
          ".md) |\n";
  for (const auto& [name, why] : r.skipped) md += "| `" + name + "` | SKIPPED | no GPU: " + why + " | — |\n";
  for (const std::string& name : r.not_run) md += "| `" + name + "` | NOT RUN | the --deadline had passed | — |\n";
  for (const std::string& name : pending)
    md += "| `" + name + "` | PENDING | the run had not reached it when this was written | — |\n";
  char tail[96];
  std::snprintf(tail, sizeof tail, "\n%s %.1f s.\n", pending.empty() ? "Total time" : "In progress after", total_s);
  md += tail;
  return md;
}

// SUMMARY.json (`pending` as for summary_markdown).
std::string summary_json(const std::string& pattern, const DeviceInfo& device, const RunRecord& r,
                         const std::vector<std::string>& pending, double total_s) {
  JsonWriter j;
  j.begin_object().value("pattern", pattern).value("commit", RMSNORM_CERT_GIT_COMMIT).value("date", utc_now());
  j.value("device", device.available ? device.name : "").value("device_reason", device.reason);
  j.value("seconds", total_s);
  j.begin_array("certified");
  for (const auto& l : r.lines)
    j.begin_object().value("variant", l.variant).value("verdict", l.verdict).value("detail", l.detail).end_object();
  j.end_array().begin_array("skipped");
  for (const auto& [name, why] : r.skipped) j.begin_object().value("variant", name).value("reason", why).end_object();
  j.end_array().begin_array("not_run");
  for (const std::string& name : r.not_run)
    j.begin_object().value("variant", name).value("reason", "deadline").end_object();
  j.end_array().begin_array("pending");
  for (const std::string& name : pending) j.begin_object().value("variant", name).end_object();
  const bool complete = pending.empty() && r.not_run.empty();
  const char* verdict = !complete ? (pending.empty() ? "fail" : "in progress") : (r.all_ok ? "pass" : "fail");
  j.end_array().value("verdict", verdict).end_object();
  return j.str();
}

// SUMMARY.md/.json from what is done so far; false with `error` when one could not be written.
bool write_summary(const CertifyRun& run, const DeviceInfo& device, const RunRecord& r,
                   const std::vector<std::string>& pending, std::string& error) {
  const double total_s = r.elapsed();
  const std::string md = summary_markdown(run.pattern, device, r, pending, total_s);
  const std::string json = summary_json(run.pattern, device, r, pending, total_s);
  return write_text_file(run.out_dir + "/SUMMARY.md", md, error) &&
         write_text_file(run.out_dir + "/SUMMARY.json", json, error);
}

// Certifies `v`, the (index+1)-th of `count` variants: writes DIR/<variant>.md and .json, prints its
// verdict and records it. False with `error` when the certificate could not be written.
bool certify_one(const rmsnorm::Variant& v, std::size_t index, std::size_t count, const CertifyRun& run,
                 const DeviceInfo& device, RunRecord& r, std::string& error) {
  const std::string progress_prefix = "[" + std::to_string(index + 1) + "/" + std::to_string(count) + " " + v.name +
                                      ", " + std::to_string(static_cast<long long>(r.elapsed())) + " s in] ";
  const Certificate c = certify_variant(v, run.variant, device, progress_prefix);
  const std::string base = run.out_dir + "/" + v.name;
  if (!write_text_file(base + ".md", certificate_markdown(c), error) ||
      !write_text_file(base + ".json", certificate_json(c), error))
    return false;
  const bool ok = c.passed();
  r.all_ok = r.all_ok && ok;
  const std::string detail = evidence(c);
  std::printf("%-4s %-36s %s\n", ok ? "PASS" : "FAIL", v.name.c_str(), detail.c_str());
  for (const std::string& f : c.failure_summary()) std::printf("       %s\n", f.c_str());
  std::fflush(stdout);
  r.lines.push_back({v.name, ok ? "PASS" : "FAIL", detail, base + ".md"});
  r.junit.push_back(certificate_junit(c));
  return true;
}

// Every matched variant in turn: skipped when it needs a GPU this machine lacks, not run once the
// --deadline has passed, else certified, with SUMMARY rewritten after each certificate. False with
// `error` when a file could not be written.
bool certify_all(const std::vector<const rmsnorm::Variant*>& matched, const CertifyRun& run, const DeviceInfo& device,
                 RunRecord& r, std::string& error) {
  for (std::size_t vi = 0; vi < matched.size(); ++vi) {
    const rmsnorm::Variant* v = matched[vi];
    if (v->memory == rmsnorm::Memory::device && !device.available) {
      r.skipped.emplace_back(v->name, device.reason);
      continue;
    }
    if (run.deadline > 0 && r.elapsed() >= run.deadline) {
      r.not_run.push_back(v->name);
      continue;
    }
    if (!certify_one(*v, vi, matched.size(), run, device, r, error)) return false;
    std::vector<std::string> pending;
    for (std::size_t k = vi + 1; k < matched.size(); ++k) pending.push_back(matched[k]->name);
    if (!write_summary(run, device, r, pending, error)) return false;
  }
  return true;
}

// The variants not certified, on the console.
void print_not_certified(const RunRecord& r, double deadline) {
  // Without a GPU every device variant is skipped for the same reason: say it once.
  if (!r.skipped.empty()) {
    std::string names;
    for (const auto& entry : r.skipped) names += (names.empty() ? "" : ", ") + entry.first;
    std::printf("SKIP %zu device variant%s, not certified here: %s\n     %s\n", r.skipped.size(),
                r.skipped.size() == 1 ? "" : "s", r.skipped.front().second.c_str(), names.c_str());
  }
  for (const std::string& name : r.not_run)
    std::printf("NOT RUN %-33s the --deadline (%.0f s) had passed\n", name.c_str(), deadline);
}

// The JUnit file: each certificate's suite, then one of the variants not certified.
bool write_junit_file(const std::string& path, const RunRecord& r, std::string& error) {
  using R = JUnitCase::Result;
  std::vector<JUnitSuite> suites = r.junit;
  JUnitSuite rest{"rmsnorm-cert certify: not certified", {}};
  for (const auto& [name, why] : r.skipped)
    rest.cases.push_back({name, "certificate", 0, R::skipped, "no GPU: " + why, ""});
  for (const std::string& name : r.not_run)
    rest.cases.push_back({name, "certificate", 0, R::fail, "not run: the --deadline had passed", ""});
  if (!rest.cases.empty()) suites.push_back(rest);
  return write_junit(path, suites, error);
}

// A file that could not be written ends the run.
int write_failed(const std::string& error) {
  std::fprintf(stderr, "rmsnorm-cert certify: %s\n", error.c_str());
  return kExitError;
}

// The closing line and the exit status: every certificate passed, every variant that could run
// here ran, and there was at least one.
int final_status(const RunRecord& r, const std::string& out_dir) {
  const double total_s = r.elapsed();
  const char* verdict = r.lines.empty() ? "none" : r.all_ok ? "all pass" : "FAILURES";
  std::printf("certify: %zu certified (%s), %zu skipped, %zu not run, %.1f s; certificates in %s/\n", r.lines.size(),
              verdict, r.skipped.size(), r.not_run.size(), total_s, out_dir.c_str());
  if (r.lines.empty()) {
    std::printf("certify: nothing could be certified on this machine\n");
    return kExitFailed;
  }
  return r.all_ok && r.not_run.empty() ? kExitOk : kExitFailed;
}

}  // namespace

int run_certify(const Args& args) {
  CertifyRun run;
  int status = kExitOk;
  if (!parse_options(args, run, status)) return status;
  const std::vector<const rmsnorm::Variant*> matched = product_variants(run.pattern);
  if (matched.empty()) {
    std::fprintf(stderr, "rmsnorm-cert certify: no product variant matches '%s' (see rmsnorm-cert list)\n",
                 run.pattern.c_str());
    return kExitUsage;
  }
  std::error_code ec;
  std::filesystem::create_directories(run.out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "rmsnorm-cert certify: cannot create %s: %s\n", run.out_dir.c_str(), ec.message().c_str());
    return kExitError;
  }

  const DeviceInfo device = device_info();
  std::printf("certify '%s': %zu variants; device: %s; seed 0x%016llx; %lld cases per op, %lld per property\n",
              run.pattern.c_str(), matched.size(),
              device.available ? device.name.c_str() : ("none (" + device.reason + ")").c_str(),
              static_cast<unsigned long long>(run.variant.seed), static_cast<long long>(run.variant.cases),
              static_cast<long long>(run.variant.property_cases));
  RunRecord r;
  std::string error;
  if (!certify_all(matched, run, device, r, error)) return write_failed(error);
  print_not_certified(r, run.deadline);
  if (!write_summary(run, device, r, {}, error)) return write_failed(error);
  if (!run.junit_path.empty() && !write_junit_file(run.junit_path, r, error)) return write_failed(error);
  if (run.html && !write_html_report(run.out_dir)) return kExitError;
  return final_status(r, run.out_dir);
}

}  // namespace cert
