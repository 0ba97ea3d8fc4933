// JUnit XML for CI systems: `certify`, `replay` and `mutants --junit FILE` write one test case
// per property and variant, per case file and variant, per mutant. The dialect is the common one
// (Jenkins, GitLab, GitHub reporters): <testsuites> of <testsuite name tests failures errors
// skipped time> of <testcase classname name time> holding at most one <failure>, <error> or
// <skipped>, with the details as text.
#pragma once

#include <string>
#include <vector>

namespace cert {

struct JUnitCase {
  enum class Result { pass, fail, error, skipped };
  std::string classname;  // the variant or mutant ("fwd.block_row")
  std::string name;       // the property, case file or check
  double seconds = 0;
  Result result = Result::pass;
  std::string message;  // one line: why it failed or was skipped
  std::string detail;   // the rest (counterexample, reproduction line)
};

struct JUnitSuite {
  std::string name;  // "rmsnorm-cert certify fwd.block_row"
  std::vector<JUnitCase> cases;
};

std::string junit_xml(const std::vector<JUnitSuite>& suites);
// Writes junit_xml(suites) to `path`; false with the reason in `error`.
bool write_junit(const std::string& path, const std::vector<JUnitSuite>& suites, std::string& error);

}  // namespace cert
