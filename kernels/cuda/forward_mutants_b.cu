// Instantiation unit of forward mutants (group B of the bug catalog, SPEC §6).
#include "forward_instances.h"

RMSNORM_FWD_MUTANT_INSTANCES_B(RMSNORM_FWD_DEFINE)
