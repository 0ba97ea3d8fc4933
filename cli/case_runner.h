// Running one case (harness/case_file.h) on one variant, the way replay, repro, fuzz, certify
// and mutants all do it: the oracle's acceptance inside guard bands and the worked example's
// expected numbers when the case has them; a case naming a property (`property = P4`) is that
// property's check, run by the property library (properties/checks.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/case_file.h"
#include "harness/run.h"
#include "oracle/oracle.h"
#include "rmsnorm/variant.h"

namespace cert {

enum class RunVerdict { pass, fail, skipped, invalid };
const char* to_string(RunVerdict v);

struct CaseRun {
  RunVerdict verdict = RunVerdict::invalid;
  std::string reason;             // why it failed / was skipped / is invalid ("" on pass)
  oracle::Profile profile;        // the oracle's error profile of this run
  // Raw outputs and exact values, for `repro` details.
  oracle::ForwardCase fwd;
  oracle::BackwardCase bwd;
  oracle::ForwardResult fwd_out;
  oracle::BackwardResult bwd_out;
  std::string guard_violation;
  std::string first_failure;
  std::vector<std::string> expectation_failures;
  std::string property_note;      // "P11: 3 runs bitwise identical", or why it was not replayed
  // A property case run by run_case_in_detail: the verdict of the same case run alone (no
  // property), whose inputs, outputs and profile the fields above then hold.
  std::string alone;
};

// The rstd a backward case is handed when it carries none: RN32 of the exact r of its x.
bool fill_backward_rstd(harness::Case& c, std::string& error);

// Run `c` on `v`. `skipped` when the variant does not do the op, cannot implement the arguments
// (unsupported, misaligned) or has no device; `invalid` when the case itself is malformed.
CaseRun run_case(const harness::Case& c, const rmsnorm::Variant& v);

// run_case, and for a case naming a property also the same case alone (the plain check of its
// inputs on v), so that describe_run can show the inputs, the worst elements and the profile
// beside the property's verdict, which is the run's verdict.
CaseRun run_case_in_detail(const harness::Case& c, const rmsnorm::Variant& v);

// Variants a case runs on: `override_pattern` when given, else the case's own pattern; "*" and
// "all" mean every product variant. Mutants only when the pattern names them ("mutant.*").
std::vector<const rmsnorm::Variant*> variants_for(const harness::Case& c, const std::string& override_pattern);

// Read and parse a case file; false + "path: line N: why".
bool load_case_file(const std::string& path, harness::Case& out, std::string& error);

// Every *.case under the given files/directories (recursively, sorted); false + reason when a
// path does not exist.
bool collect_case_files(const std::vector<std::string>& paths, std::vector<std::string>& files, std::string& error);

// The command that replays a case line: rmsnorm-cert repro --line '<one_line>'.
std::string repro_command(const harness::Case& c);
// repro_command of a case's one-line form (a counterexample, the case a crashed step was on);
// "" for an empty line, the bare `rmsnorm-cert repro --line` for one that does not parse.
std::string repro_command(const std::string& line);

// Human-readable details of a run: inputs summary, outputs, failing elements with accept ranges.
std::string describe_run(const harness::Case& c, const CaseRun& run, std::size_t max_elements = 16);

}  // namespace cert
