// What a certificate says about the machine: the GPU (name, driver, CUDA runtime) or why there
// is none.
#pragma once

#include <string>

namespace cert {

struct DeviceInfo {
  bool available = false;
  std::string reason;       // why no device (when !available)
  std::string name;         // "NVIDIA H200"
  std::string compute_capability;  // "9.0"
  std::string driver;       // CUDA driver API version, e.g. "13.0"
  std::string runtime;      // CUDA runtime version this build links, e.g. "13.0"
  std::string memory;       // "139.8 GiB"
};

DeviceInfo device_info();
std::string host_name();
std::string utc_now();  // "2025-11-29T19:47:03Z"

}  // namespace cert
