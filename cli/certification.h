// The three kinds of evidence a certificate (and a kill matrix) is built from: the property
// suite run against a variant, the corpus replayed on it, and N generated cases per op with
// their accumulated error profile. Also the Markdown/JSON writers of a certificate.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "oracle/oracle.h"
#include "junit.h"
#include "property_suite.h"
#include "rmsnorm/variant.h"

namespace cert {

// Progress lines go to stderr, rewritten in place when stderr is a terminal.
// Progress on stderr: a line rewritten in place on a terminal; elsewhere (logs, CI, a GPU host's
// captured output) one permanent line every kLogSeconds, so long runs still show their pace.
class Progress {
 public:
  static constexpr double kLogSeconds = 30.0;
  // quiet: no transient lines (work running beside another phase that shows its own).
  explicit Progress(std::string prefix, bool quiet = false);
  void update(const std::string& text);  // transient line
  void note(const std::string& text);    // permanent line
  void done();
  // A counted phase: phase() starts its clock; step() shows "<text> k/n, 12 s, about 30 s left",
  // the estimate from the phase's pace so far.
  void phase();
  void step(const std::string& text, std::size_t done, std::size_t total);
 private:
  std::string prefix_;
  bool tty_;
  bool quiet_;
  std::size_t last_len_ = 0;
  std::chrono::steady_clock::time_point last_log_;
  std::chrono::steady_clock::time_point phase_start_ = std::chrono::steady_clock::now();
};

// --- property suite -------------------------------------------------------------------------
struct SuiteRun {
  std::vector<PropertyResult> results;
  std::vector<std::string> problems;  // executables missing or unlistable
  bool ran_anything() const { return !results.empty(); }
};
// `count` property runs, `jobs` at a time, task order[k] started k-th (empty: in turn), `run(i)`
// giving task i's result; the suite's progress lines; with stop_at_first_failure nothing more
// starts after a failure. The results in task order, those never started left out.
std::vector<PropertyResult> run_property_pool(std::size_t count, const std::vector<std::size_t>& order, int jobs,
                                              Progress& progress, bool stop_at_first_failure,
                                              const std::function<PropertyResult(std::size_t)>& run);
// Every property test (list_property_tests) against `variant`, `jobs` children at a time.
SuiteRun run_suite(const rmsnorm::Variant& variant, std::int64_t cases, int jobs, double timeout_seconds,
                   Progress& progress, bool stop_at_first_failure = false);

// The property suite of a variant that lives in a host process (Variant::in_process), through the
// property checks directly: the same draws aimed at its claims, checks and verdicts as the suite's
// children; a failure is shrunk by minimize_case. in_process_properties: the ids that apply to
// its memory (as the suite's listing); run_suite_here: all of them in this process, one after
// another (run_property_here, declared below, runs one).
std::vector<std::string> in_process_properties(const rmsnorm::Variant& variant);
SuiteRun run_suite_here(const rmsnorm::Variant& variant, std::int64_t cases, Progress& progress);

// --- corpus ---------------------------------------------------------------------------------
struct CorpusFailure {
  std::string file, reason, repro;
};
struct CorpusRun {
  std::string dir;
  std::string error;  // the directory could not be read
  int files = 0, passed = 0, failed = 0, skipped = 0, invalid = 0, not_matching = 0;
  std::vector<CorpusFailure> failures;
  oracle::Profile profile;
};
// The variant a mutant was made from ("mutant.host.reference.M1_x" -> "host.reference").
std::string base_variant_name(const rmsnorm::Variant& v);
// Called with each case's repro line just before it runs (the isolated step reports it).
using BeforeCase = std::function<void(const std::string& repro_line)>;

// One property of an in-process variant here, each case announced to before_case first.
PropertyResult run_property_here(const rmsnorm::Variant& variant, const std::string& id, std::int64_t cases,
                                 const BeforeCase& before_case);

// Replay every case of `dir` whose variant pattern matches the variant (mutants: their base).
// A plugin variant's replay runs in a child process (isolated_step.h): a crash fails the step.
CorpusRun replay_corpus(const rmsnorm::Variant& variant, const std::string& dir, Progress& progress,
                        bool stop_at_first_failure = false);
CorpusRun replay_corpus_here(const rmsnorm::Variant& variant, const std::string& dir, Progress& progress,
                             bool stop_at_first_failure, const BeforeCase& before_case);

// --- generated cases ------------------------------------------------------------------------
struct OpRun {
  rmsnorm::Op op;
  std::int64_t cases = 0, passed = 0, failed = 0, skipped = 0;
  oracle::Profile profile;
  std::vector<std::string> failures;  // "reason\n  repro line", the first few
  std::string first_skip;             // why the first skipped case was declined
  // Set when no case of the op can be drawn inside what the variant claims (Domain::aim_at): the
  // op is claimed but cannot be certified. No case runs.
  std::string unreachable;
  double seconds = 0;
  // Skipped cases above the ceiling (100 - kCheckedFloorPercent percent of the cases).
  bool too_many_skipped() const { return cases > 0 && below_floor(cases - skipped, cases); }
};
bool generators_available();
// N cases per supported op from the generators, every one inside what the variant declares
// (Domain::aim_at), seeds derived from `seed`; a plugin variant's ops each in a child process.
std::vector<OpRun> run_generated(const rmsnorm::Variant& variant, std::int64_t cases_per_op, std::uint64_t seed,
                                 Progress& progress);
OpRun run_generated_op_here(const rmsnorm::Variant& variant, rmsnorm::Op op, std::int64_t cases, std::uint64_t seed,
                            Progress& progress, const BeforeCase& before_case);

// --- certificate ----------------------------------------------------------------------------
struct Certificate {
  std::string variant, description, memory, date, host, commit, tool_version;
  bool commit_dirty = false;
  std::string device_name, device_cc, driver, runtime, device_reason;
  std::int64_t cases = 0, property_cases = 0;
  std::uint64_t seed = 0;
  SuiteRun suite;
  CorpusRun corpus;
  std::vector<OpRun> generated;
  std::string generated_note;  // why generated cases are missing, if they are
  std::vector<std::string> claims;  // what the variant claims and how it is judged (claim_lines)
  double seconds = 0;
  bool passed() const;
  std::vector<std::string> failure_summary() const;
};
// What `v` claims (ops, types, conventions, FP8 modes, D range, layout) and what is not claimed,
// and the accumulation shapes the judge takes from it with the ε they give.
std::vector<std::string> claim_lines(const rmsnorm::Variant& v);
std::string certificate_markdown(const Certificate& c);
std::string certificate_json(const Certificate& c);
// The certificate as JUnit (junit.h): one test case per property, the corpus, and each op's
// generated cases; a property that cannot apply is skipped, every failure_summary() item a failure.
JUnitSuite certificate_junit(const Certificate& c);
// A property's result as a JUnit test case of `classname` (certify's variant, mutants' mutant).
JUnitCase property_junit(const PropertyResult& r, const std::string& classname);

bool write_text_file(const std::string& path, const std::string& text, std::string& error);

}  // namespace cert
