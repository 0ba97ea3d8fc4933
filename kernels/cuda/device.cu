// Device discovery shared by every CUDA variant.
#include <cuda_runtime.h>

#include <string>

#include "rmsnorm/variant.h"

namespace rmsnorm {

Status device_status() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::fail(Status::Code::no_device, std::string("no CUDA device: ") + cudaGetErrorString(e));
  }
  if (n == 0) return Status::fail(Status::Code::no_device, "no CUDA device: cudaGetDeviceCount = 0");
  return Status::success();
}

}  // namespace rmsnorm
