// Kernels from outside this build: shared libraries that export the C table of
// include/rmsnorm/plugin.h. Each kernel becomes a variant named plugin.<library>.<kernel>, added
// to the registry before its first use, so every tool, test and benchmark can name it like a
// built-in one (the dispatcher never picks it).
#pragma once

#include <string>
#include <vector>

#include "rmsnorm/plugin.h"
#include "rmsnorm/variant.h"

namespace rmsnorm {

// The environment variable that carries the plugin paths (':'-separated) to child processes:
// rmsnorm-cert sets it; every test executable and rmsnorm-bench read it at start.
inline constexpr const char* kPluginsEnv = "RMSNORM_PLUGINS";

// Opens one library and builds its variants (not yet registered). False with the reason: a
// missing file, a missing entry point, an ABI version mismatch, a malformed table (null entry
// points, bad or duplicate names, an inconsistent range).
bool load_plugin(const std::string& path, std::vector<Variant>& out, std::string& error);

// Loads every library and adds its variants to the registry (rmsnorm::add_external_variants).
bool register_plugins(const std::vector<std::string>& paths, std::string& error);

// The kernels of a table handed over by the process itself (the Python bridge, through
// rmsnorm/cert.h), registered as in_process variants; `origin` is the command that registers
// them again, which repro lines start with. Only before the registry is first used.
bool register_in_process_table(const rmsnorm_plugin* table, const std::string& origin, std::string& error);

// The paths of kPluginsEnv, registered; true when it is unset or empty.
bool register_plugins_from_env(std::string& error);

}  // namespace rmsnorm
