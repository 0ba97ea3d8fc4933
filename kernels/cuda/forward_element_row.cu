// Instantiation unit of the forward launcher run_element_row (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_element_row<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
