// Instantiation unit of forward mutants (group D of forward_mutant_instances.h).
#include "forward_mutant_instances.h"

RMSNORM_FWD_MUTANT_INSTANCES_D(RMSNORM_FWD_DEFINE)
