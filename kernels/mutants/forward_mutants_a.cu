// Instantiation unit of forward mutants (group A of forward_mutant_instances.h).
#include "forward_mutant_instances.h"

RMSNORM_FWD_MUTANT_INSTANCES_A(RMSNORM_FWD_DEFINE)
