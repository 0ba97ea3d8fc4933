// RapidCheck over the property checks: the RapidCheck chooser (every choice shrinks), the case
// generator, and the driver that runs one property on one variant and reports what happened —
// with the shrunk counterexample as ONE line (harness::one_line) that replays it exactly.
// RapidCheck's own `reproduce=` does not work through Catch, and it is not needed: the line
// carries the value seed and every choice.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include <rapidcheck.h>

#include "properties/checks.h"
#include "harness/case_file.h"

namespace harness {
// How RapidCheck prints a case in its counterexample: the replay line.
void showValue(const Case& c, std::ostream& os);
}  // namespace harness

namespace properties {

// Choices drawn through RapidCheck: weighted indices shrink towards index 0 (the simplest
// alternative), ranges towards their low end, seeds towards 0.
class RcChooser : public generators::Chooser {
 public:
  std::size_t pick(const std::vector<unsigned>& weights) override;
  std::int64_t between(std::int64_t lo, std::int64_t hi) override;
  std::uint64_t seed() override;
};

rc::Gen<harness::Case> gen_property_case(const PropertyInfo& p, const rmsnorm::Variant* v);

struct RunReport {
  std::string property, variant;
  std::uint64_t seed = 0;
  int cases = 0;                 // cases asked for
  int checked = 0;               // passed checks (before any failure)
  int rejected = 0;              // legitimate rejections (capability limits with a reason)
  int not_applicable = 0;
  bool failed = false;
  std::string failure;           // the shrunk failure's message
  std::string reproduce;         // one_line() of the shrunk case
  std::map<std::string, int> coverage;      // tag → cases
  std::map<std::string, int> reject_reasons;
  std::string not_applicable_reason;
  double seconds = 0;
};

// Run p on v (v null: the oracle-only property) for `cases` cases from `seed`.
RunReport run_property(const PropertyInfo& p, const rmsnorm::Variant* v, int cases, std::uint64_t seed);

// Text blocks for the test log.
std::string describe(const RunReport& r, bool with_coverage);

}  // namespace properties
