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

}  // namespace

int run_replay(const Args& args) {
  CommandLine cl("replay", "replay FILE|DIR... [--variant PATTERN] [--memory host|device|any] [--quiet] [--verbose] [--junit FILE]",
                 "Parses every case file (*.case under directories) and runs it on every registered variant\n"
                 "matching the case's variant pattern (or --variant). One line per case file with its counts\n"
                 "(--verbose: one per case x variant); every failure gets its own line and the command that\n"
                 "reproduces it. Exit 1 when anything failed, when a\n"
                 "case's variant pattern matches no registered variant, or when nothing was checked at all;\n"
                 "2 when a case file is malformed. --memory device without a usable GPU exits 77 (skipped).");
  std::vector<std::string> paths;
  std::string variant_override, memory = "any", junit_path;
  bool quiet = false, verbose = false;
  cl.positionals(&paths, "at least one case file or directory", 1, 100000);
  cl.option("--variant", &variant_override, "PATTERN", "run on these variants instead of each case's own pattern");
  cl.option("--memory", &memory, "WHERE", "only host or only device variants (default any)");
  cl.flag("--quiet", &quiet, "print failures and the summary only");
  cl.flag("--verbose", &verbose, "one line per case and variant, skips included");
  cl.option("--junit", &junit_path, "FILE", "also write JUnit XML: a test case per case file and variant");
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  if (memory != "any" && memory != "host" && memory != "device")
    return cl.usage_exit("--memory wants host, device or any, got '" + memory + "'");
  if (memory == "device") {
    const rmsnorm::Status s = rmsnorm::device_status();
    if (!s.ok()) {
      std::printf("SKIPPED: device variants not replayed: %s\n", s.reason.c_str());
      return 77;
    }
  }

  std::vector<std::string> files;
  if (!collect_case_files(paths, files, error)) {
    std::fprintf(stderr, "rmsnorm-cert replay: %s\n", error.c_str());
    return kExitError;
  }
  if (files.empty()) {
    std::fprintf(stderr, "rmsnorm-cert replay: no *.case file under the given paths\n");
    return kExitUsage;
  }
  int passed = 0, failed = 0, skipped = 0, invalid = 0, unmatched = 0, other_memory = 0;
  using R = JUnitCase::Result;
  JUnitSuite junit{"rmsnorm-cert replay", {}};
  std::map<std::string, int> skip_reasons;
  for (const std::string& file : files) {
    harness::Case c;
    if (!load_case_file(file, c, error)) {
      std::printf("INVALID %s\n", error.c_str());
      ++invalid;
      junit.cases.push_back({"replay", file, 0, R::error, "invalid case file: " + error, ""});
      continue;
    }
    std::vector<const rmsnorm::Variant*> variants = variants_for(c, variant_override);
    int ran = 0, file_passed = 0, file_skipped = 0, file_failed = 0;
    for (const rmsnorm::Variant* v : variants) {
      if (memory == "host" && v->memory != rmsnorm::Memory::host) continue;
      if (memory == "device" && v->memory != rmsnorm::Memory::device) continue;
      ++ran;
      const auto t0 = std::chrono::steady_clock::now();
      const CaseRun run = run_case(c, *v);
      JUnitCase jc{v->name, file, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), R::pass, run.reason, ""};
      switch (run.verdict) {
        case RunVerdict::pass:
          ++passed;
          ++file_passed;
          if (verbose) std::printf("ok      %-48s %-34s %s\n", file.c_str(), v->name.c_str(), profile_note(run.profile).c_str());
          break;
        case RunVerdict::skipped:
          ++skipped;
          ++file_skipped;
          ++skip_reasons[run.reason];
          if (verbose) std::printf("skip    %-48s %-34s %s\n", file.c_str(), v->name.c_str(), run.reason.c_str());
          jc.result = R::skipped;
          break;
        case RunVerdict::invalid:
          ++invalid;
          std::printf("INVALID %-48s %-34s %s\n", file.c_str(), v->name.c_str(), run.reason.c_str());
          jc.result = R::error;
          break;
        case RunVerdict::fail: {
          ++failed;
          ++file_failed;
          harness::Case exact = c;
          exact.variant = v->name;
          std::printf("FAIL    %-48s %-34s %s\n        %s\n", file.c_str(), v->name.c_str(), run.reason.c_str(),
                      repro_command(exact).c_str());
          jc.result = R::fail;
          jc.detail = repro_command(exact);
          break;
        }
      }
      std::fflush(stdout);
      junit.cases.push_back(std::move(jc));
    }
    const std::string pattern = variant_override.empty() ? c.variant : variant_override;
    if (!quiet && !verbose && ran > 0 && file_failed == 0)
      std::printf("%-7s %-48s %d passed, %d skipped\n", file_passed > 0 ? "ok" : "skip", file.c_str(), file_passed, file_skipped);
    if (variants.empty()) {
      // A pattern that names nothing registered is a mistake (a typo, a plugin not loaded).
      ++unmatched;
      std::printf("NONE    %-48s no registered variant matches '%s' (rmsnorm-cert list)\n", file.c_str(), pattern.c_str());
      junit.cases.push_back({"replay", file, 0, R::fail, "no registered variant matches '" + pattern + "'", ""});
    } else if (ran == 0) {
      ++other_memory;
      if (!quiet) std::printf("none    %-48s no %s variant matches '%s'\n", file.c_str(), memory.c_str(), pattern.c_str());
    }
  }
  std::printf("replay: %zu case files: %d passed, %d failed, %d skipped, %d invalid, %d matched no variant",
              files.size(), passed, failed, skipped, invalid, unmatched);
  if (other_memory > 0) std::printf(", %d for %s variants only", other_memory, memory == "host" ? "device" : "host");
  std::printf("\n");
  // The reasons for skips, most frequent first; all of them with --verbose.
  std::vector<std::pair<int, std::string>> reasons;
  for (const auto& [reason, n] : skip_reasons) reasons.emplace_back(n, reason);
  std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const std::size_t shown = verbose ? reasons.size() : std::min<std::size_t>(reasons.size(), 3);
  for (std::size_t i = 0; i < shown; ++i) std::printf("  skipped %d× : %s\n", reasons[i].first, reasons[i].second.c_str());
  if (shown < reasons.size()) std::printf("  ... and %zu other reasons for skips (--verbose lists them)\n", reasons.size() - shown);
  if (!junit_path.empty() && !write_junit(junit_path, {junit}, error)) {
    std::fprintf(stderr, "rmsnorm-cert replay: %s\n", error.c_str());
    return kExitError;
  }
  if (invalid > 0) return kExitUsage;
  if (failed > 0) return kExitFailed;
  if (unmatched > 0) {
    std::printf("replay: FAILED: %d case file%s matched no registered variant\n", unmatched, unmatched == 1 ? "" : "s");
    return kExitFailed;
  }
  if (passed == 0) {
    std::printf("replay: FAILED: nothing was checked (every run was skipped or no variant was selected)\n");
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace cert
