// Instantiation unit of forward mutants (group C of forward_mutant_instances.h).
#include "forward_mutant_instances.h"

RMSNORM_FWD_MUTANT_INSTANCES_C(RMSNORM_FWD_DEFINE)
