// Instantiation unit of forward mutants (group A of the bug catalog, docs/mutants.md).
#include "forward_mutant_instances.h"

RMSNORM_FWD_MUTANT_INSTANCES_A(RMSNORM_FWD_DEFINE)
