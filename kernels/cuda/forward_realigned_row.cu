// Instantiation unit of the forward launcher run_realigned_row (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_realigned_row<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
