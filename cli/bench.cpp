// `bench`: hand over to rmsnorm-bench (bench/), found where this build put it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "build_info.h"
#include "command_line.h"
#include "commands.h"
#include "subprocess.h"

namespace cert {

int run_bench(const Args& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::printf(
        "usage: rmsnorm-cert bench [rmsnorm-bench arguments...]\n\n"
        "Runs rmsnorm-bench (bandwidth of every variant next to a same-run device copy) with the\n"
        "arguments as given; `rmsnorm-cert bench -- --help` shows its own options.\n"
        "RMSNORM_BENCH overrides the path (this build: %s).\n",
        RMSNORM_CERT_BENCH_PATH[0] ? RMSNORM_CERT_BENCH_PATH : "not built");
    return kExitOk;
  }
  std::string path = RMSNORM_CERT_BENCH_PATH;
  if (const char* env = std::getenv("RMSNORM_BENCH"); env && *env) path = env;
  if (path.empty()) {
    std::fprintf(stderr, "rmsnorm-cert bench: this build has no rmsnorm-bench (bench/ defines no such target)\n");
    return kExitError;
  }
  if (!is_executable(path)) {
    std::fprintf(stderr, "rmsnorm-cert bench: %s is not built (ninja rmsnorm-bench)\n", path.c_str());
    return kExitError;
  }
  std::vector<std::string> argv = {path};
  std::size_t first = (!args.empty() && args[0] == "--") ? 1 : 0;
  argv.insert(argv.end(), args.begin() + static_cast<std::ptrdiff_t>(first), args.end());
  std::fflush(stdout);
  const std::string why = exec_replace(argv);
  std::fprintf(stderr, "rmsnorm-cert bench: could not start %s\n", why.c_str());
  return kExitError;
}

}  // namespace cert
