// Instantiation unit of the forward launcher run_scalar (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_scalar<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
