// Built only with -DRMSNORM_CUDA=OFF: the registry has no device variants and says why.
#include "rmsnorm/variant.h"

namespace rmsnorm {
void register_cuda_variants(std::vector<Variant>&) {}
Status device_status() {
  return Status::fail(Status::Code::no_device, "built without CUDA (-DRMSNORM_CUDA=OFF)");
}
}  // namespace rmsnorm
