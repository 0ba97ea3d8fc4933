// `list`: what this build registered and what this machine can run.
#include <algorithm>
#include <cstdio>
#include <string>

#include "command_line.h"
#include "commands.h"
#include "property_suite.h"
#include "rmsnorm/variant.h"

namespace cert {

namespace {

std::string ops_of(const rmsnorm::Variant& v) {
  static const char* const kShort[] = {"fwd", "add", "quant", "add+quant", "bwd", "add_bwd"};
  std::string s;
  for (int i = 0; i < rmsnorm::kOpCount; ++i)
    if (v.supports(static_cast<rmsnorm::Op>(i))) s += (s.empty() ? "" : ",") + std::string(kShort[i]);
  return s.empty() ? "-" : s;
}

std::string shape_of(const rmsnorm::Variant& v) {
  if (!v.row_shape) return "-";
  // At D = 4096, or the nearest D of the variant's declared range.
  const std::int64_t d = std::clamp<std::int64_t>(4096, v.min_dim, v.max_dim);  // 16-bit rows
  const rmsnorm::AccumShape s = v.row_shape(d);
  return "k=" + std::to_string(s.per_thread) + " d=" + std::to_string(s.tree_depth) + " @D=" + std::to_string(d);
}

std::string availability(const rmsnorm::Variant& v, const rmsnorm::Status& device) {
  if (v.memory == rmsnorm::Memory::host) return "yes";
  return device.ok() ? "yes" : "no: " + device.reason;
}

void print_variants(const std::string& pattern, bool mutants) {
  const rmsnorm::Status device = rmsnorm::device_status();
  std::printf("%-44s %-6s %-34s %-20s %s\n", "variant", "memory", "ops", "accumulation", "available");
  int n = 0;
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    if (v.is_mutant() != mutants) continue;
    if (!pattern.empty() && pattern != "all" && !rmsnorm::glob_match(pattern, v.name)) continue;
    std::printf("%-44s %-6s %-34s %-20s %s\n", v.name.c_str(), v.memory == rmsnorm::Memory::host ? "host" : "device",
                ops_of(v).c_str(), shape_of(v).c_str(), availability(v, device).c_str());
    if (mutants) std::printf("    %s: %s\n", rmsnorm::to_string(v.mutant), rmsnorm::mutant_description(v.mutant));
    else if (!v.description.empty()) std::printf("    %s\n", v.description.c_str());
    std::printf("    declared range: %lld <= D <= %lld", static_cast<long long>(v.min_dim), static_cast<long long>(v.max_dim));
    if (v.f32_min_dim > 0 || v.f32_max_dim > 0)
      std::printf(" (fp32 rows: %lld <= D <= %lld)", static_cast<long long>(v.min_dim_for(rmsnorm::DType::f32)),
                  static_cast<long long>(v.max_dim_for(rmsnorm::DType::f32)));
    std::printf("%s%s\n", v.aligned_rows ? ", 16-byte aligned rows" : ", any alignment",
                v.packed_rows ? ", packed rows (stride = D)" : "");
    ++n;
  }
  std::printf("%d %s%s\n", n, mutants ? "mutants" : "variants", device.ok() ? "" : ("; no GPU here: " + device.reason).c_str());
}

void print_properties() {
  for (bool device : {false, true}) {
    const SuiteListing listing = list_property_tests(device);
    std::printf("%s variants: %zu property tests\n", device ? "device" : "host", listing.count());
    for (const auto& [exe, names] : listing.tests) {
      std::printf("  %s (%s)\n", exe.target.c_str(), exe.path.c_str());
      for (const std::string& n : names) std::printf("    %s\n", n.c_str());
    }
    for (const std::string& p : listing.problems) std::printf("  problem: %s\n", p.c_str());
  }
}

}  // namespace

int run_list(const Args& args) {
  CommandLine cl("list", "list [variants|properties|mutants] [--pattern GLOB]",
                 "Variants: name, memory, ops, declared accumulation shape, whether this machine can run them.\n"
                 "Properties: the property suite's tests (host variants / device variants).\n"
                 "Mutants: the bug catalog's mutants (SPEC §6) registered in this build.");
  std::vector<std::string> what;
  std::string pattern;
  cl.positionals(&what, "what to list", 0, 1);
  cl.option("--pattern", &pattern, "GLOB", "only variants/mutants whose name matches");
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  const std::string kind = what.empty() ? "variants" : what[0];
  if (kind == "variants") print_variants(pattern, false);
  else if (kind == "mutants") print_variants(pattern, true);
  else if (kind == "properties") print_properties();
  else return cl.usage_exit("unknown list '" + kind + "' (variants, properties or mutants)");
  return kExitOk;
}

}  // namespace cert
