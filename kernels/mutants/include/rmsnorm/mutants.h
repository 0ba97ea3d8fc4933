// The bug catalog (docs/mutants.md) as variants: the product kernels with one switch flipped each,
// for the verification tools (the harness's mutation tests, `rmsnorm-cert mutants`). A program that
// only runs RMSNorm links librmsnorm alone and carries none of them.
#pragma once

#include "rmsnorm/variant.h"

namespace rmsnorm {

// Adds every mutant of this build to the registry (once; later calls do nothing). Call it before
// the registry is first used: after that it fails and says so.
Status register_mutants();

}  // namespace rmsnorm
