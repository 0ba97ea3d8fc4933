// Instantiation unit of the forward launcher run_staged_rows (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_staged_rows<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
