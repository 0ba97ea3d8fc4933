// Instantiation unit of the forward launcher run_shift_row (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_shift_row<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
