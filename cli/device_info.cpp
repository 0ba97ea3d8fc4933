#include "device_info.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "rmsnorm/variant.h"

#if RMSNORM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cert {

#if RMSNORM_HAVE_CUDA
namespace {
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace
#endif

DeviceInfo device_info() {
  DeviceInfo info;
  const rmsnorm::Status s = rmsnorm::device_status();
#if RMSNORM_HAVE_CUDA
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) info.runtime = cuda_version(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) info.driver = cuda_version(driver);
  else info.driver = "none";
  (void)cudaGetLastError();
  if (s.ok()) {
    int dev = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
      info.name = prop.name;
      info.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
      char mem[32];
      std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
      info.memory = mem;
    }
    (void)cudaGetLastError();
  }
#else
  info.runtime = "not built (RMSNORM_CUDA=OFF)";
  info.driver = "n/a";
#endif
  info.available = s.ok();
  if (!s.ok()) info.reason = s.reason;
  return info;
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace cert
