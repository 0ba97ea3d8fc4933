// The property suite (properties/, Catch2 executables written beside this tool) run against one
// variant as a child process: RMSNORM_VARIANTS=<exact name> selects the variant,
// RMSNORM_PROP_CASES=<N> the number of generated cases per property, and Catch2's XML reporter
// tells us, per test case, the verdict, the assertion counts and the failure messages.
// One child per test case: a crash (a mutant may well segfault) costs one property, not all.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cert {

// One property test executable of this build.
struct PropertyExecutable {
  std::string target;  // CMake target name, e.g. "test_properties_forward"
  std::string path;    // absolute path (may not exist: then the suite is "missing")
};

// The executables known at build time (generated header), overridable at run time with
// RMSNORM_PROPERTY_EXES="path1:path2".
std::vector<PropertyExecutable> property_executables();

// The floor, in percent: a property that applies to a variant must check at least this share of
// the cases asked, and certify's generated cases of each op must run (not be declined) at least
// this share (docs/certificates.md#the-floor). Property draws and generated cases are aimed inside
// what the variant declares (Domain::aim_at), so a share under it means the variant declines
// what it claims, or the draws miss its claims.
inline constexpr std::int64_t kCheckedFloorPercent = 95;
// True when `part` of `whole` is below the floor (integers: no rounding at the edge).
inline bool below_floor(std::int64_t part, std::int64_t whole) { return part * 100 < kCheckedFloorPercent * whole; }

// not_exercised: the property applies to an op of the variant, but every case it drew was
// declined by the variant: nothing was checked — a certificate gap, never a pass. below_floor:
// it checked some, fewer than kCheckedFloorPercent of the cases asked. n/a is for a property that
// cannot apply to the variant at all (no op of it, nothing it draws is claimed, no device).
enum class PropertyVerdict { pass, fail, not_applicable, not_exercised, below_floor, crashed, timed_out, missing };
const char* to_string(PropertyVerdict v);

struct PropertyResult {
  std::string executable;  // target name
  std::string name;        // the Catch2 test case name ("P1 forward output within ...")
  std::string id;          // "P1" (property_id of the name)
  std::string tags;
  PropertyVerdict verdict = PropertyVerdict::missing;
  std::int64_t assertions_passed = 0, assertions_failed = 0;
  std::int64_t cases_requested = 0;  // RMSNORM_PROP_CASES handed to it
  // From the suite's report line ("N cases asked, N checked, N rejected, N not applicable"); -1
  // when it printed none (a test that is not a drawn property: examples, canonical cases).
  std::int64_t cases_asked = -1;     // the property's own count (P18 asks 2 at most)
  std::int64_t cases_checked = -1;
  std::int64_t cases_rejected = 0;   // declined by the variant
  std::int64_t cases_not_applicable = 0;  // draws the check could not apply (P4: 4^k eps not exact)
  // checked / asked, or -1 without a report line.
  double checked_share() const {
    return cases_checked >= 0 && cases_asked > 0 ? static_cast<double>(cases_checked) / static_cast<double>(cases_asked) : -1.0;
  }
  std::int64_t failed_after = -1;    // "after N tests/cases" from the failure text, when given
  std::string counterexample;        // the one reproducing line, when found
  std::string message;               // first failure, shortened to one line
  double seconds = 0;
};

struct SuiteListing {
  std::vector<std::pair<PropertyExecutable, std::vector<std::string>>> tests;  // per executable
  std::vector<std::string> problems;  // "test_properties: not built (path ...)"
  std::size_t count() const;
};

// Test cases of every executable that apply to a host variant ([property]~[slow]~[gpu]) or to a
// device variant ([property][gpu]~[slow]).
SuiteListing list_property_tests(bool device_variant);

// Run one test case against one variant. `timeout_seconds` bounds the child.
PropertyResult run_property_test(const PropertyExecutable& exe, const std::string& test_name,
                                 const std::string& variant, std::int64_t cases, double timeout_seconds);

// The verdict of a property that ran to the end without failing, from its counts: not
// exercised (every draw declined), not applicable (nothing checked; the line or reason says why),
// below the floor, or pass. `first_rejection` and `not_applicable_reason` go into the message.
void classify_counted(PropertyResult& res, const std::string& not_applicable_line, const std::string& first_rejection,
                      const std::string& not_applicable_reason);

// The short id of a property test name: the label before its ": " ("P4"), else its first words.
std::string property_id(const std::string& test_name);

}  // namespace cert
