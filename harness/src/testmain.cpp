// main() of every test executable: Catch2's session, plus the GPU rule — when the run selects
// [gpu] tests and no device is usable, say why and exit 77 so ctest reports "skipped", never
// "passed".
#define CATCH_CONFIG_RUNNER
#include <cstdio>
#include <string>

#include "harness/catch.h"
#include "rmsnorm/variant.h"

int main(int argc, char** argv) {
  bool gpu_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.find("[gpu]") != std::string::npos && a.find("~[gpu]") == std::string::npos) gpu_only = true;
  }
  if (gpu_only) {
    const rmsnorm::Status s = rmsnorm::device_status();
    if (!s.ok()) {
      std::printf("SKIPPED: GPU tests not run: %s\n", s.reason.c_str());
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
