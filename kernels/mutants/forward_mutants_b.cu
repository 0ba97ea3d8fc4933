// Instantiation unit of forward mutants (group B of forward_mutant_instances.h).
#include "forward_mutant_instances.h"

RMSNORM_FWD_MUTANT_INSTANCES_B(RMSNORM_FWD_DEFINE)
