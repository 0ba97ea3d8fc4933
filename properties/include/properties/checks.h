// The properties P1–P19 of docs/properties.md as plain checks of one case on one variant,
// independent of RapidCheck: the Catch2 suite drives them through RapidCheck (shrinking), the
// command line and the fuzzers through generators::RngChooser, and a case file names the property
// that replays it (`property = P4`, with its parameters as `property.<key>`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "properties/generators.h"
#include "harness/case_file.h"
#include "rmsnorm/variant.h"

namespace properties {

struct PropertyInfo {
  std::string id;         // "P1"
  std::string invariant;  // the sentence the test is named after
  std::vector<rmsnorm::Op> ops;  // ops it exercises; a variant qualifies when it supports one
  bool oracle_only = false;      // P3: checks the oracle itself, no variant involved
  int max_cases = 0;             // > 0: a cap on the case count (P18: each case moves GiBs)
};

// P1..P19 in order.
const std::vector<PropertyInfo>& catalog();
const PropertyInfo* find_property(const std::string& id);

// True when v is a candidate for p (it supports one of p's ops).
bool applies(const PropertyInfo& p, const rmsnorm::Variant& v);

// Why p cannot apply to v at all, "" when it can: v has none of p's ops; or p draws only what v
// does not claim (P7 draws fp16 rows, P14 FP8 modes, P18 bf16 standard rows: Domain::aim_at);
// or p's case cannot exist in v's layout (P18's rows 2^31 elements apart on packed rows). A
// property that applies draws every case inside v's declared range, layout and claims.
std::string not_applicable_to(const PropertyInfo& p, const rmsnorm::Variant& v);

// One case for p, its op drawn among those v supports (v null: any of p's ops), aimed inside
// what v implements when p applies to it. The case names its property and parameters, so
// one_line(case) replays exactly this check.
harness::Case draw_property_case(const PropertyInfo& p, generators::Chooser& ch, const rmsnorm::Variant* v);

struct CheckResult {
  enum class Kind { pass, fail, rejected, not_applicable };
  Kind kind = Kind::pass;
  std::string message;  // why it failed, the rejection's reason, or why it does not apply
};

// Check case c on variant v under c.property ("" = oracle acceptance, plus the worked-example
// expectations the case carries). A rejection (status not ok) is judged against the contract
// here: it passes as `rejected` only when it is a legitimate capability limit with a reason.
CheckResult check_case(const harness::Case& c, const rmsnorm::Variant& v);

// The oracle-only checks: P3 (gradient vs central differences) and a case's expectations
// against the oracle's exact values.
CheckResult check_oracle_case(const harness::Case& c);

// Coverage classes of a case (op, types, convention, eps, D, R, layout, regime).
std::vector<std::string> coverage_tags(const harness::Case& c);

// The variants a case file's pattern selects: products only unless the pattern names mutants
// ("mutant.*"), and only those supporting the op.
std::vector<const rmsnorm::Variant*> variants_for(const harness::Case& c);

}  // namespace properties
