// Instantiation unit of the forward launcher run_cluster_row (the product).
#include "forward_instances.h"

template rmsnorm::Status rmsnorm::cuda::fwd::run_cluster_row<rmsnorm::Mutant::none>(const rmsnorm::ForwardArgs&);
