// The case the fuzz loop draws at step i, shared by `fuzz` and `repro --seed`: the same seed
// and op always give the same case.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/case_file.h"
#include "rmsnorm/types.h"
#include "rmsnorm/variant.h"

namespace cert {

// Seed of fuzz step `index` under the run's seed.
std::uint64_t fuzz_case_seed(std::uint64_t run_seed, std::uint64_t index);

// One case of op `op` drawn from the generators with `case_seed` (at most 2^15 elements, so a
// host run takes milliseconds), aimed — when `aim` is a variant — at its declared D range and
// layout a third of the time (property draws and certify's generated cases aim every time). False
// when this build has no generators.
bool draw_fuzz_case(std::uint64_t case_seed, rmsnorm::Op op, const rmsnorm::Variant* aim, harness::Case& out);

// The variant step `index` aims at: the loop cycles through the selected variants that
// implement the step's op and "none" (nullptr), so every variant's range gets its share.
const rmsnorm::Variant* fuzz_aim(const std::vector<const rmsnorm::Variant*>& variants, rmsnorm::Op op,
                                 std::uint64_t index, std::size_t op_count);

}  // namespace cert
