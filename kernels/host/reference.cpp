// Placeholder until the host reference lands.
#include "rmsnorm/variant.h"
namespace rmsnorm {
void register_host_variants(std::vector<Variant>&) {}
}
