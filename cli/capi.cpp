// include/rmsnorm/cert.h: the tool's command line and the in-process registration of a host
// process's kernel table, behind a C interface (librmsnorm_cert.so).
#include "rmsnorm/cert.h"

#include <cstdio>
#include <exception>
#include <string>

#include "commands.h"
#include "rmsnorm/plugins.h"

extern "C" RMSNORM_PLUGIN_EXPORT int rmsnorm_cert_register(const rmsnorm_plugin* table, const char* origin, char* error,
                                                           size_t error_size) {
  std::string why;
  bool ok = false;
  try {
    ok = rmsnorm::register_in_process_table(table, origin ? origin : "", why);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!ok && error && error_size > 0) std::snprintf(error, error_size, "%s", why.c_str());
  return ok ? 0 : 1;
}

extern "C" RMSNORM_PLUGIN_EXPORT int rmsnorm_cert_main(int argc, const char* const* argv) {
  const int rc = cert::run_command_line(argc, argv);
  std::fflush(stdout);
  std::fflush(stderr);
  return rc;
}
