// Instantiation unit of the forward launcher run_shifted_row (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_shifted_row<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
