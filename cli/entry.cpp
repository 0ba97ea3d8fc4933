// The command line of the verification harness: one subcommand per job; with none, the overview.
// Every command validates its arguments and answers a clear message and a non-zero status on bad
// input (2) or on a failed check (1); nothing here aborts. main.cpp runs it as rmsnorm-cert;
// capi.cpp runs it inside a process that hosts kernels itself (the Python bridge).
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "command_line.h"
#include "commands.h"
#include "harness/run.h"
#include "rmsnorm/mutants.h"
#include "rmsnorm/plugins.h"
#include "isolated_step.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(const cert::Args&);
  const char* summary;
};

const Subcommand kCommands[] = {
    {"list", cert::run_list, "list variants (memory, ops, availability), properties or mutants"},
    {"replay", cert::run_replay, "run case files (or directories of them) on every matching variant"},
    {"repro", cert::run_repro, "rebuild one case from a seed or a failure line and print every detail"},
    {"fuzz", cert::run_fuzz, "seeded, time-boxed differential fuzzing; failures minimized into corpora/"},
    {"certify", cert::run_certify, "property suite + corpus + N cases per op → certificate (Markdown, JSON)"},
    {"mutants", cert::run_mutants, "run the suite and corpus against every mutant; print the kill matrix"},
    {"time", cert::run_time, "time an op on N cases launched back to back, then judge every one"},
    {"bench", cert::run_bench, "run rmsnorm-bench with the given arguments"},
    {"examples", cert::run_examples, "the seed's worked examples, computed by the oracle"},
    {"lab", cert::run_lab, "the lecture's lab: exercises, central differences, planted bugs caught"},
};

void print_overview(std::FILE* out) {
  std::fprintf(out,
               "rmsnorm-cert: certify RMSNorm kernels against an exact oracle\n\n"
               "usage: rmsnorm-cert <command> [options]     (rmsnorm-cert <command> --help for details)\n\n"
               "commands:\n");
  for (const Subcommand& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\nstart here:\n"
               "  rmsnorm-cert certify all          certify every variant this machine can run\n"
               "  rmsnorm-cert replay corpora       replay the corpus on every matching variant\n"
               "  rmsnorm-cert list                 what is registered and what can run here\n"
               "\nevery command takes --plugin PATH (repeatable): kernels of a shared library exporting\n"
               "rmsnorm_plugin_v1() (include/rmsnorm/plugin.h), registered as plugin.<library>.<kernel>\n"
               "\nexit status: 0 all good, 1 a check failed, 2 bad arguments or case file, 3 could not run\n");
}

// Registers the mutants, then takes every `--plugin PATH` (or `--plugin=PATH`) out of the
// arguments, loads those libraries before any command touches the registry, and hands them to
// child processes (the property suite) through RMSNORM_PLUGINS. Plugins already named there by a
// parent come first.
int take_plugins(std::vector<std::string>& args) {
  // Once per process: a host process may run several commands (capi.cpp).
  static bool registered = false;
  if (!registered) {
    if (const rmsnorm::Status s = rmsnorm::register_mutants(); !s.ok()) {
      std::fprintf(stderr, "rmsnorm-cert: %s\n", s.reason.c_str());
      return cert::kExitError;
    }
    std::string error;
    if (!rmsnorm::register_plugins_from_env(error)) {
      std::fprintf(stderr, "rmsnorm-cert: %s\n", error.c_str());
      return cert::kExitError;
    }
    registered = true;
  }
  std::vector<std::string> paths, rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string path;
    if (args[i] == "--plugin") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "rmsnorm-cert: --plugin needs a PATH\n");
        return cert::kExitUsage;
      }
      path = args[++i];
    } else if (args[i].rfind("--plugin=", 0) == 0) {
      path = args[i].substr(9);
    } else {
      rest.push_back(args[i]);
      continue;
    }
    char resolved[PATH_MAX];
    paths.push_back(realpath(path.c_str(), resolved) ? std::string(resolved) : path);
  }
  args = rest;
  std::string error;
  if (paths.empty()) return cert::kExitOk;
  if (!rmsnorm::register_plugins(paths, error)) {
    std::fprintf(stderr, "rmsnorm-cert: %s\n", error.c_str());
    return cert::kExitError;
  }
  std::string joined;
  if (const char* before = std::getenv(rmsnorm::kPluginsEnv)) joined = before;
  for (const std::string& p : paths) joined += (joined.empty() ? "" : ":") + p;
  setenv(rmsnorm::kPluginsEnv, joined.c_str(), 1);
  return cert::kExitOk;
}

}  // namespace

int cert::run_command_line(int argc, const char* const* argv) {
  if (argc < 2) {
    print_overview(stdout);
    return cert::kExitOk;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_overview(stdout);
    return cert::kExitOk;
  }
  cert::Args args(argv + 2, argv + argc);
  if (name == "_step") {  // internal: a plugin kernel's certification step, run by certify
    if (const int status = take_plugins(args); status != cert::kExitOk) return status;
    return cert::run_step(args);
  }
  for (const Subcommand& c : kCommands) {
    if (name != c.name) continue;
    if (const int status = take_plugins(args); status != cert::kExitOk) return status;
    try {
      const int rc = c.run(args);
      // Where the harness's time went in this process (certify's property suites run in child
      // processes, which print their own).
      harness::print_timings_if_requested(stderr);
      return rc;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rmsnorm-cert %s: internal error: %s\n", c.name, e.what());
      return cert::kExitError;
    } catch (...) {
      std::fprintf(stderr, "rmsnorm-cert %s: internal error\n", c.name);
      return cert::kExitError;
    }
  }
  std::fprintf(stderr, "rmsnorm-cert: unknown command '%s'\n\n", name.c_str());
  print_overview(stderr);
  return cert::kExitUsage;
}
