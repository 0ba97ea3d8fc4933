// Instantiation unit of the forward launcher run_warp_row (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_warp_row<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
