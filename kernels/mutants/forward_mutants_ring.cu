// Instantiation unit of fwd.bulk_ring's mutants: the only mutant unit that sees its kernel.
#include "forward_mutant_instances.h"
#include "forward_ring_kernel.cuh"

RMSNORM_FWD_MUTANT_INSTANCES_RING(RMSNORM_FWD_DEFINE)
