// main() of every test executable: Catch2's session, plus two rules. The mutants and the plugins
// named in RMSNORM_PLUGINS are registered first, so a property test run by `rmsnorm-cert certify
// --plugin` sees the same variants as the tool (a bad plugin: exit 3). When the run selects [gpu] tests and
// no device is usable, say why and exit 77 so ctest reports "skipped", never "passed".
// RMSNORM_TIMINGS=1 prints where the harness's time went (harness::timings_report) at exit.
#define CATCH_CONFIG_RUNNER
#include <cstdio>
#include <string>

#include "harness/catch.h"
#include "harness/run.h"
#include "rmsnorm/mutants.h"
#include "rmsnorm/plugins.h"
#include "rmsnorm/variant.h"

int main(int argc, char** argv) {
  const rmsnorm::Status mutants = rmsnorm::register_mutants();
  if (!mutants.ok()) {
    std::fprintf(stderr, "%s\n", mutants.reason.c_str());
    return 3;
  }
  std::string plugin_error;
  if (!rmsnorm::register_plugins_from_env(plugin_error)) {
    std::fprintf(stderr, "%s\n", plugin_error.c_str());
    return 3;
  }
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
  const int rc = Catch::Session().run(argc, argv);
  harness::print_timings_if_requested(stdout);
  return rc;
}
