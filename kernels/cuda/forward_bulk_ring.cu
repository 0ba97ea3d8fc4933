// Instantiation unit of the forward launcher run_bulk_ring (the product): the only product unit
// that sees forward_ring_kernel.cuh.
#include "forward_instances.h"
#include "forward_ring_kernel.cuh"

template rmsnorm::Status rmsnorm::cuda::fwd::run_bulk_ring<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
