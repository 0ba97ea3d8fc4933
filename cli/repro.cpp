// `repro`: one case, every detail. The case comes from a failure line (--line), a case file
// (--file), or a seed and an op (--seed, --op: the fuzz loop's step), optionally with shape,
// types and regimes overridden; it runs on the case's variants (or --variant) and prints the
// inputs, the outputs, the worst elements against the exact values and the accept range of the
// first failing one. A line that names a property gets the property's verdict, and beside it the
// same case run alone, for those details.
#include <cstdio>
#include <fstream>

#include "case_runner.h"
#include "command_line.h"
#include "commands.h"
#include "fuzz_loop.h"

namespace cert {

int run_repro(const Args& args) {
  CommandLine cl("repro", "repro (--line 'LINE' | --file FILE | --seed S --op OP [--aim V] [params]) [--variant PATTERN]",
                 "Rebuilds one case and runs it with full details. LINE is the one-line case every failure\n"
                 "prints (key=value;...). With --seed/--op the case is the fuzz loop's draw for that seed;\n"
                 "--rows, --dim, --x-type, ... then override parts of it (the values stay seeded).");
  std::string line, file, op_name, aim_name, variant, layout, x_type, g_type, y_type, convention, quant, x_regime, g_regime, dy_regime;
  std::uint64_t seed = 0;
  std::int64_t rows = -1, dim = -1, max_elements = 16;
  double eps = -1;
  bool print_case = false;
  cl.option("--line", &line, "LINE", "a one-line case (as printed by failures)");
  cl.option("--file", &file, "FILE", "a case file");
  cl.option_u64("--seed", &seed, "S", "case seed (decimal or 0x...)");
  cl.option("--op", &op_name, "OP", "op of a seeded case");
  cl.option("--aim", &aim_name, "VARIANT", "a seeded case drawn aimed at this variant's declared range (as the fuzz step printed)");
  cl.option("--variant", &variant, "PATTERN", "variants to run on (default: the case's own pattern)");
  cl.option("--rows", &rows, "R", "override R", 0, INT64_MAX);
  cl.option("--dim", &dim, "D", "override D", 1, INT64_MAX);
  cl.option("--x-type", &x_type, "T", "override x type (f32 f16 bf16)");
  cl.option("--g-type", &g_type, "T", "override g type");
  cl.option("--y-type", &y_type, "T", "override y type");
  cl.option("--convention", &convention, "C", "override convention (standard llama gemma no_weight)");
  cl.option("--quant", &quant, "Q", "override quant mode");
  cl.option("--eps", &eps, "E", "override eps");
  cl.option("--layout", &layout, "L", "override layout ('x_pad=3 y_offset=2', '' = dense)");
  cl.option("--x-regime", &x_regime, "R", "override the x value regime");
  cl.option("--g-regime", &g_regime, "R", "override the g value regime");
  cl.option("--dy-regime", &dy_regime, "R", "override the dy value regime");
  cl.option("--elements", &max_elements, "N", "elements shown per table (default 16)", 1, 1000000);
  cl.flag("--print-case", &print_case, "print the case file text first");
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  const int sources = !line.empty() + !file.empty() + cl.given("--seed");
  if (sources != 1) return cl.usage_exit("give exactly one of --line, --file, --seed");

  harness::Case c;
  if (!line.empty()) {
    if (!harness::parse_case(line, c, error)) return cl.usage_exit("bad --line: " + error);
  } else if (!file.empty()) {
    if (!std::ifstream(file, std::ios::binary)) {
      std::fprintf(stderr, "rmsnorm-cert repro: %s: cannot be read\n", file.c_str());
      return kExitError;
    }
    if (!load_case_file(file, c, error)) return cl.usage_exit(error);
  } else {
    if (op_name.empty()) return cl.usage_exit("--seed needs --op");
    rmsnorm::Op op;
    if (!rmsnorm::parse(op_name, op)) return cl.usage_exit("unknown op '" + op_name + "'");
    const rmsnorm::Variant* aim = aim_name.empty() ? nullptr : rmsnorm::find_variant(aim_name);
    if (!aim_name.empty() && aim == nullptr) return cl.usage_exit("unknown variant '" + aim_name + "' for --aim");
    if (!draw_fuzz_case(seed, op, aim, c)) {
      std::fprintf(stderr, "rmsnorm-cert repro: this build has no rmsnorm_generators library\n");
      return kExitError;
    }
  }
  // Overrides (seeded cases keep their seed, so values stay reproducible).
  auto set_type = [&](const std::string& s, rmsnorm::DType& t, const char* what) {
    if (s.empty()) return true;
    if (!rmsnorm::parse(s, t)) {
      error = std::string("unknown ") + what + " '" + s + "'";
      return false;
    }
    return true;
  };
  if (!set_type(x_type, c.x_type, "x type") || !set_type(g_type, c.g_type, "g type") || !set_type(y_type, c.y_type, "y type"))
    return cl.usage_exit(error);
  if (!convention.empty() && !rmsnorm::parse(convention, c.convention)) return cl.usage_exit("unknown convention '" + convention + "'");
  if (!quant.empty() && !rmsnorm::parse(quant, c.quant)) return cl.usage_exit("unknown quant '" + quant + "'");
  if (rows >= 0) c.rows = rows;
  if (dim >= 0) c.dim = dim;
  if (cl.given("--eps")) c.eps = static_cast<float>(eps);
  if (cl.given("--layout") && !harness::Layout::parse(layout, c.layout, error)) return cl.usage_exit("bad --layout: " + error);
  if (!x_regime.empty()) c.x_regime = x_regime;
  if (!g_regime.empty()) c.g_regime = g_regime;
  if (!dy_regime.empty()) c.dy_regime = dy_regime;
  const bool overridden = rows >= 0 || dim >= 0 || !x_type.empty() || !g_type.empty() || !y_type.empty() || !convention.empty() ||
                          !quant.empty() || cl.given("--eps") || cl.given("--layout") || !x_regime.empty() || !g_regime.empty() ||
                          !dy_regime.empty();
  if (overridden) {
    // Re-validate through the text form: the same checks a case file gets.
    harness::Case checked;
    if (!harness::parse_case(harness::format_case(c), checked, error)) return cl.usage_exit("the overridden case is invalid: " + error);
    c = checked;
  }
  if (print_case) std::printf("%s\n", harness::format_case(c).c_str());
  std::printf("line: %s\n", harness::one_line(c).c_str());

  const auto variants = variants_for(c, variant);
  if (variants.empty()) {
    std::fprintf(stderr, "rmsnorm-cert repro: no variant matches '%s'\n", (variant.empty() ? c.variant : variant).c_str());
    return kExitUsage;
  }
  int failed = 0, invalid = 0, ran = 0;
  for (const rmsnorm::Variant* v : variants) {
    const CaseRun run = run_case_in_detail(c, *v);
    std::printf("\n=== %s\n%s", v->name.c_str(), describe_run(c, run, static_cast<std::size_t>(max_elements)).c_str());
    failed += run.verdict == RunVerdict::fail;
    invalid += run.verdict == RunVerdict::invalid;
    ran += run.verdict != RunVerdict::skipped;
  }
  std::printf("\nrepro: %zu variants, %d ran, %d failed%s\n", variants.size(), ran, failed, invalid ? ", the case is invalid" : "");
  if (invalid) return kExitUsage;
  return failed ? kExitFailed : kExitOk;
}

}  // namespace cert
