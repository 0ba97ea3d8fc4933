// Instantiation unit of the forward launcher run_packed_rows (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_packed_rows<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
