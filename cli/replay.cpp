// `replay`: every case file given (directories recursively) on every variant its pattern
// matches; one line per case × variant, the reproduction line under every failure.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "build_info.h"
#include "case_runner.h"
#include "command_line.h"
#include "commands.h"
#include "junit.h"

namespace cert {

std::string default_corpus_dir() {
  if (const char* env = std::getenv("RMSNORM_CORPUS"); env && *env) return env;
  return std::string(RMSNORM_CERT_SOURCE_DIR) + "/corpora";
}

namespace {

std::string profile_note(const oracle::Profile& p) {
  if (p.elements == 0) return "";
  char buf[128];
  std::snprintf(buf, sizeof buf, "%lld el, %.1f%% CR, max %.3g ulp, err/bound %.3g", static_cast<long long>(p.elements),
                100.0 * static_cast<double>(p.correctly_rounded) / static_cast<double>(p.elements), p.max_ulp,
                p.max_err_over_bound);
  return buf;
}

// The status of a run that had nothing it could do on this machine (ctest's SKIP_RETURN_CODE).
constexpr int kExitSkipped = 77;

// The command line of `replay`.
struct ReplayOptions {
  std::vector<std::string> paths;
  std::string variant_override, memory = "any", junit_path;
  bool quiet = false, verbose = false;
};

// False when the command ends here (--help, a usage error), with its exit status in `exit_status`.
bool parse_options(const Args& args, ReplayOptions& o, int& exit_status) {
  CommandLine cl("replay",
                 "replay FILE|DIR... [--variant PATTERN] [--memory host|device|any] [--quiet] [--verbose] "
                 "[--junit FILE]",
                 "Parses every case file (*.case under directories) and runs it on every registered variant\n"
                 "matching the case's variant pattern (or --variant). One line per case file with its counts\n"
                 "(--verbose: one per case x variant); every failure gets its own line and the command that\n"
                 "reproduces it. Exit 1 when anything failed, when a\n"
                 "case's variant pattern matches no registered variant, or when nothing was checked at all;\n"
                 "2 when a case file is malformed. --memory device without a usable GPU exits 77 (skipped).");
  cl.positionals(&o.paths, "at least one case file or directory", 1, 100000);
  cl.option("--variant", &o.variant_override, "PATTERN", "run on these variants instead of each case's own pattern");
  cl.option("--memory", &o.memory, "WHERE", "only host or only device variants (default any)");
  cl.flag("--quiet", &o.quiet, "print failures and the summary only");
  cl.flag("--verbose", &o.verbose, "one line per case and variant, skips included");
  cl.option("--junit", &o.junit_path, "FILE", "also write JUnit XML: a test case per case file and variant");
  const auto stop = [&](const std::string& error) {
    exit_status = cl.usage_exit(error);
    return false;
  };
  std::string error;
  if (!cl.parse(args, error)) return stop(error);
  if (o.memory != "any" && o.memory != "host" && o.memory != "device")
    return stop("--memory wants host, device or any, got '" + o.memory + "'");
  return true;
}

// --memory device on a machine without a usable GPU: there is nothing to replay (said on stdout).
bool device_missing(const ReplayOptions& o) {
  if (o.memory != "device") return false;
  const rmsnorm::Status s = rmsnorm::device_status();
  if (s.ok()) return false;
  std::printf("SKIPPED: device variants not replayed: %s\n", s.reason.c_str());
  return true;
}

// What the replay has found so far; the summary, the JUnit file and the exit status are drawn from it.
struct ReplayRecord {
  int passed = 0, failed = 0, skipped = 0, invalid = 0, unmatched = 0, other_memory = 0;
  std::map<std::string, int> skip_reasons;  // skipped runs, by reason
  JUnitSuite junit{"rmsnorm-cert replay", {}};
};

// The runs of one case file.
struct FileCounts {
  int ran = 0, passed = 0, skipped = 0, failed = 0;
};

// Whether --memory lets `v` run.
bool memory_selected(const std::string& memory, const rmsnorm::Variant& v) {
  if (memory == "host" && v.memory != rmsnorm::Memory::host) return false;
  if (memory == "device" && v.memory != rmsnorm::Memory::device) return false;
  return true;
}

// Runs case `c` of `file` on `v` and records it: a failure is printed with the line that
// reproduces it, an invalid run too, a pass or a skip with --verbose only.
void replay_on(const std::string& file, const harness::Case& c, const rmsnorm::Variant& v, bool verbose,
               ReplayRecord& r, FileCounts& n) {
  using R = JUnitCase::Result;
  ++n.ran;
  const auto t0 = std::chrono::steady_clock::now();
  const CaseRun run = run_case(c, v);
  JUnitCase jc{v.name, file, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), R::pass,
               run.reason, ""};
  switch (run.verdict) {
    case RunVerdict::pass:
      ++r.passed;
      ++n.passed;
      if (verbose)
        std::printf("ok      %-48s %-34s %s\n", file.c_str(), v.name.c_str(), profile_note(run.profile).c_str());
      break;
    case RunVerdict::skipped:
      ++r.skipped;
      ++n.skipped;
      ++r.skip_reasons[run.reason];
      if (verbose) std::printf("skip    %-48s %-34s %s\n", file.c_str(), v.name.c_str(), run.reason.c_str());
      jc.result = R::skipped;
      break;
    case RunVerdict::invalid:
      ++r.invalid;
      std::printf("INVALID %-48s %-34s %s\n", file.c_str(), v.name.c_str(), run.reason.c_str());
      jc.result = R::error;
      break;
    case RunVerdict::fail: {
      ++r.failed;
      ++n.failed;
      harness::Case exact = c;
      exact.variant = v.name;
      std::printf("FAIL    %-48s %-34s %s\n        %s\n", file.c_str(), v.name.c_str(), run.reason.c_str(),
                  repro_command(exact).c_str());
      jc.result = R::fail;
      jc.detail = repro_command(exact);
      break;
    }
  }
  std::fflush(stdout);
  r.junit.cases.push_back(std::move(jc));
}

// One case file on every variant its pattern (or --variant) matches that --memory lets run, then
// its line: the counts of a file without failures (unless --quiet or --verbose), or why nothing ran.
void replay_file(const std::string& file, const ReplayOptions& o, ReplayRecord& r) {
  using R = JUnitCase::Result;
  harness::Case c;
  std::string error;
  if (!load_case_file(file, c, error)) {
    std::printf("INVALID %s\n", error.c_str());
    ++r.invalid;
    r.junit.cases.push_back({"replay", file, 0, R::error, "invalid case file: " + error, ""});
    return;
  }
  const std::vector<const rmsnorm::Variant*> variants = variants_for(c, o.variant_override);
  FileCounts n;
  for (const rmsnorm::Variant* v : variants)
    if (memory_selected(o.memory, *v)) replay_on(file, c, *v, o.verbose, r, n);
  const std::string pattern = o.variant_override.empty() ? c.variant : o.variant_override;
  if (!o.quiet && !o.verbose && n.ran > 0 && n.failed == 0)
    std::printf("%-7s %-48s %d passed, %d skipped\n", n.passed > 0 ? "ok" : "skip", file.c_str(), n.passed, n.skipped);
  if (variants.empty()) {
    // A pattern that names nothing registered is a mistake (a typo, a plugin not loaded).
    ++r.unmatched;
    std::printf("NONE    %-48s no registered variant matches '%s' (rmsnorm-cert list)\n", file.c_str(),
                pattern.c_str());
    r.junit.cases.push_back({"replay", file, 0, R::fail, "no registered variant matches '" + pattern + "'", ""});
  } else if (n.ran == 0) {
    ++r.other_memory;
    if (!o.quiet)
      std::printf("none    %-48s no %s variant matches '%s'\n", file.c_str(), o.memory.c_str(), pattern.c_str());
  }
}

// The closing line with the counts, then the reasons for skips, most frequent first: all of them
// with --verbose, else the first three.
void print_summary(std::size_t files, const ReplayOptions& o, const ReplayRecord& r) {
  std::printf("replay: %zu case files: %d passed, %d failed, %d skipped, %d invalid, %d matched no variant", files,
              r.passed, r.failed, r.skipped, r.invalid, r.unmatched);
  if (r.other_memory > 0)
    std::printf(", %d for %s variants only", r.other_memory, o.memory == "host" ? "device" : "host");
  std::printf("\n");
  std::vector<std::pair<int, std::string>> reasons;
  for (const auto& [reason, n] : r.skip_reasons) reasons.emplace_back(n, reason);
  std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const std::size_t shown = o.verbose ? reasons.size() : std::min<std::size_t>(reasons.size(), 3);
  for (std::size_t i = 0; i < shown; ++i)
    std::printf("  skipped %d× : %s\n", reasons[i].first, reasons[i].second.c_str());
  if (shown < reasons.size())
    std::printf("  ... and %zu other reasons for skips (--verbose lists them)\n", reasons.size() - shown);
}

// A malformed case file is a usage error; a failure, a pattern that matched nothing registered and
// a run that checked nothing at all are failures.
int exit_status(const ReplayRecord& r) {
  if (r.invalid > 0) return kExitUsage;
  if (r.failed > 0) return kExitFailed;
  if (r.unmatched > 0) {
    std::printf("replay: FAILED: %d case file%s matched no registered variant\n", r.unmatched,
                r.unmatched == 1 ? "" : "s");
    return kExitFailed;
  }
  if (r.passed == 0) {
    std::printf("replay: FAILED: nothing was checked (every run was skipped or no variant was selected)\n");
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

int run_replay(const Args& args) {
  ReplayOptions o;
  int status = kExitOk;
  if (!parse_options(args, o, status)) return status;
  if (device_missing(o)) return kExitSkipped;
  std::vector<std::string> files;
  std::string error;
  if (!collect_case_files(o.paths, files, error)) {
    std::fprintf(stderr, "rmsnorm-cert replay: %s\n", error.c_str());
    return kExitError;
  }
  if (files.empty()) {
    std::fprintf(stderr, "rmsnorm-cert replay: no *.case file under the given paths\n");
    return kExitUsage;
  }
  ReplayRecord r;
  for (const std::string& file : files) replay_file(file, o, r);
  print_summary(files.size(), o, r);
  if (!o.junit_path.empty() && !write_junit(o.junit_path, {r.junit}, error)) {
    std::fprintf(stderr, "rmsnorm-cert replay: %s\n", error.c_str());
    return kExitError;
  }
  return exit_status(r);
}

}  // namespace cert
