// The case the fuzz loop draws at step i, shared by `fuzz` and `repro --seed`: the same seed
// and op always give the same case.
#pragma once

#include <cstdint>

#include "harness/case_file.h"
#include "rmsnorm/types.h"
#include "rmsnorm/variant.h"

namespace cert {

// Seed of fuzz step `index` under the run's seed.
std::uint64_t fuzz_case_seed(std::uint64_t run_seed, std::uint64_t index);

// One case of op `op` drawn from the generators with `case_seed` (at most 2^15 elements, so a
// host run takes milliseconds). False when this build has no generators.
bool draw_fuzz_case(std::uint64_t case_seed, rmsnorm::Op op, harness::Case& out);

}  // namespace cert
