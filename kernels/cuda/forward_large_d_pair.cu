// Instantiation unit of the forward launcher run_large_d_pair (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_large_d_pair<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
