// Shrinking a failing case: greedy passes that re-run the failure after every step and keep a
// step only when the case still fails on the same variant. Rows first (one row, then chunks),
// then columns, then the layout, then the values (0, ±1, integers, short mantissas).
#pragma once

#include <cstdint>
#include <string>

#include "harness/case_file.h"
#include "rmsnorm/variant.h"

namespace cert {

struct MinimizeStats {
  int attempts = 0, accepted = 0;
  std::int64_t rows_before = 0, dim_before = 0;
  double seconds = 0;
};

// `c` fails on `v`. Returns the smallest failing case found (explicit values, no generator)
// within `max_attempts` re-runs and `max_seconds`; `reason` gets the final failure.
harness::Case minimize_case(const harness::Case& c, const rmsnorm::Variant& v, int max_attempts, double max_seconds,
                            std::string& reason, MinimizeStats& stats);

// The generated values written out explicitly (generator cleared), so rows, columns and values
// can be edited one by one.
bool make_explicit(harness::Case& c, std::string& error);

}  // namespace cert
