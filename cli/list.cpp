// `list`: what this build registered and what this machine can run; `list --markdown`: the
// registry as docs/variants.md (the same bytes on every machine for one build).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "command_line.h"
#include "commands.h"
#include "property_suite.h"
#include "rmsnorm/dispatch.h"
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
    if (!pattern.empty() && pattern != "all" && !rmsnorm::variant_matches(pattern, v)) continue;
    std::printf("%-44s %-6s %-34s %-20s %s\n", v.name.c_str(), v.memory == rmsnorm::Memory::host ? "host" : "device",
                ops_of(v).c_str(), shape_of(v).c_str(), availability(v, device).c_str());
    if (mutants) std::printf("    %s: %s\n", rmsnorm::to_string(v.mutant), rmsnorm::mutant_description(v.mutant));
    else if (!v.description.empty()) std::printf("    %s\n", v.description.c_str());
    std::printf("    declared range: %lld <= D <= %lld", static_cast<long long>(v.min_dim), static_cast<long long>(v.max_dim));
    if (v.f32_min_dim > 0 || v.f32_max_dim > 0)
      std::printf(" (fp32 rows: %lld <= D <= %lld)", static_cast<long long>(v.min_dim_for(rmsnorm::DType::f32)),
                  static_cast<long long>(v.max_dim_for(rmsnorm::DType::f32)));
    if (v.f32_add_max_dim > 0)
      std::printf(" (fp32 rows with the fused add: D <= %lld)", static_cast<long long>(v.f32_add_max_dim));
    std::string types;
    for (int t = 0; t < 32; ++t)
      if ((v.dtypes >> t) & 1u) types += std::string(types.empty() ? ", x of " : " or ") + rmsnorm::to_string(static_cast<rmsnorm::DType>(t));
    std::printf("%s%s%s%s%s\n", v.aligned_rows ? ", 16-byte aligned rows" : ", any alignment",
                v.packed_rows ? ", packed rows (stride = D)" : "",
                v.shared_frame ? ", x, y and o in one 16-byte frame" : "",
                (types + (v.quant_16bit_rows ? ", FP8 outputs of 16-bit rows" : "")).c_str(),
                v.same_type_weights ? ", weights of x's type" : "");
    ++n;
  }
  std::printf("%d %s%s\n", n, mutants ? "mutants" : "variants", device.ok() ? "" : ("; no GPU here: " + device.reason).c_str());
}

// --- list --markdown: docs/variants.md. Nothing here may depend on the machine (no device
// query, no path, no date): the test cli.variants_doc compares this output with the file.

std::string md_cell(const std::string& text) {  // a table cell: '|' escaped, no line breaks
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::string md_dim(std::int64_t d) {  // 16777216 -> 2^24 (powers of two from 2^20), else decimal
  if (d >= (std::int64_t{1} << 20) && (d & (d - 1)) == 0) {
    int k = 0;
    while ((std::int64_t{1} << k) < d) ++k;
    return "2^" + std::to_string(k);
  }
  return std::to_string(d);
}

std::string md_range(const rmsnorm::Variant& v) {
  using rmsnorm::DType;
  std::string s = md_dim(v.min_dim) + "–" + md_dim(v.max_dim);
  if (v.min_dim_for(DType::f32) != v.min_dim || v.max_dim_for(DType::f32) != v.max_dim)
    s += "; fp32 " + md_dim(v.min_dim_for(DType::f32)) + "–" + md_dim(v.max_dim_for(DType::f32));
  if (v.f32_add_max_dim > 0) s += " (" + md_dim(v.f32_add_max_dim) + " with the fused add)";
  return s;
}

std::string md_layout(const rmsnorm::Variant& v) {
  if (v.packed_rows) return v.aligned_rows ? "packed, aligned" : "packed";
  if (v.shared_frame) return "any, x/y/o in one 16-byte frame";
  return v.aligned_rows ? "aligned" : "any";
}

std::string md_ops(const rmsnorm::Variant& v) {
  std::string s;
  for (int i = 0; i < rmsnorm::kOpCount; ++i)
    if (v.supports(static_cast<rmsnorm::Op>(i)))
      s += (s.empty() ? "" : ", ") + std::string(rmsnorm::to_string(static_cast<rmsnorm::Op>(i)));
  return s.empty() ? "-" : s;
}

// The row reduction's declared shape at a few widths inside the 16-bit range (at least two: the
// range's ends where fewer of the sample widths fall inside it).
std::string md_shapes(const rmsnorm::Variant& v) {
  if (!v.row_shape) return "none declared (judged as a sequential sum of D terms)";
  std::vector<std::int64_t> dims;
  for (std::int64_t d : {1024, 4096, 8192, 16384, 65536})
    if (d >= v.min_dim && d <= v.max_dim) dims.push_back(d);
  if (dims.size() < 2) {
    dims.push_back(v.min_dim);
    dims.push_back(v.max_dim);
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  }
  std::string s;
  for (std::int64_t d : dims) {
    const rmsnorm::AccumShape a = v.row_shape(d);
    s += (s.empty() ? "" : "; ") + md_dim(d) + ": " + std::to_string(a.per_thread) + ", " + std::to_string(a.tree_depth);
  }
  return s;
}

std::string mutant_code(rmsnorm::Mutant m) {  // "M1_padded_divisor" -> "M1"
  const std::string s = rmsnorm::to_string(m);
  return s.substr(0, s.find('_'));
}

std::string md_bound(const rmsnorm::dispatch::Range& r) {
  if (r.lo == 0 && r.hi == rmsnorm::dispatch::kNoLimit) return "any";
  if (r.hi == rmsnorm::dispatch::kNoLimit) return "≥ " + md_dim(r.lo);
  if (r.lo == 0) return "≤ " + md_dim(r.hi);
  if (r.lo == r.hi) return md_dim(r.lo);
  return md_dim(r.lo) + "–" + md_dim(r.hi);
}

std::string md_rule_ops(std::uint32_t ops) {
  std::string s;
  for (int i = 0; i < rmsnorm::kOpCount; ++i)
    if (ops & (1u << i)) s += (s.empty() ? "" : ", ") + std::string(rmsnorm::to_string(static_cast<rmsnorm::Op>(i)));
  return s;
}

void print_dispatch_rules() {
  using rmsnorm::dispatch::Width;
  using rmsnorm::dispatch::When;
  std::printf(
      "\n## Dispatch rules\n\n"
      "Where several variants implement the same arguments, these rows (`kernels/common/dispatch_table.cpp`)\n"
      "decide. A variant without a row is taken wherever it implements the arguments; a variant with\n"
      "rows is taken where its first matching row says *take*, and passed over where that row says\n"
      "*pass* or no row matches. *Rows*: the row type (16-bit = bf16 and f16). Every reason is a\n"
      "measurement on one H200 (on one H100 where it begins \"H100\"), the variants side by side in\n"
      "one run.\n\n"
      "| variant | ops | rows | R | D | when | decision | measured reason |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const rmsnorm::dispatch::Rule& r : rmsnorm::dispatch::rules()) {
    const char* width = r.width == Width::b16 ? "16-bit" : r.width == Width::f32 ? "fp32" : "any";
    const char* when = r.when == When::weights16      ? "16-bit weights"
                       : r.when == When::per_block    ? "FP8 per block"
                       : r.when == When::static_scale ? "FP8 with a given scale"
                       : r.when == When::misaligned   ? "rows not all 16-byte aligned"
                                                      : "-";
    std::printf("| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", r.variant, md_rule_ops(r.ops).c_str(), width,
                md_bound(r.rows).c_str(), md_bound(r.dim).c_str(), when, r.take ? "take" : "pass",
                md_cell(r.reason).c_str());
  }
}

// " (also answers to `a`, `b`)": the names a variant had before (Variant::aliases).
std::string former_names(const rmsnorm::Variant& v) {
  std::string out;
  for (const std::string& a : v.aliases) out += (out.empty() ? " (also answers to `" : "`, `") + a;
  return out.empty() ? out : out + "`)";
}

void print_markdown() {
  std::printf(
      "# Variants\n\n"
      "This file is generated by `rmsnorm-cert list --markdown` from the variant registry of a build with\n"
      "the CUDA variants; do not edit it by hand. Regenerate it with\n"
      "`build/ci/cli/rmsnorm-cert list --markdown > docs/variants.md`; the test `cli.variants_doc` fails\n"
      "while it is stale.\n\n"
      "The rows are in dispatch order: `rmsnorm::pick_forward` / `pick_backward` take the first product\n"
      "variant of the memory asked for that supports the op, whose dispatch rules (below) take the\n"
      "arguments and whose `can_implement()` accepts them. Any variant can also be run by name.\n"
      "*Declared D* is the range the variant is built for (16-bit rows, and fp32 rows where they\n"
      "differ); `can_implement()` decides every case. *Layout*: `aligned` takes 16-byte aligned rows\n"
      "and weights only, `packed` takes packed rows only (every row stride = D), `any` takes any\n"
      "alignment and stride. *Row accumulation* is the declared shape of the row reduction at a few\n"
      "widths, `D: k, d`: each participant adds k terms in fp32 in sequence, then the partials meet\n"
      "in a tree (or chain) of depth d; the oracle's forward bound is ((k + d)/2 + 7)·u.\n\n");
  std::printf("| # | variant | memory | ops | declared D | layout | row accumulation (D: k, d) | description |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  int n = 0;
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    if (v.is_mutant() || v.external) continue;  // this build's variants only, not --plugin ones
    std::printf("| %d | `%s` | %s | %s | %s | %s | %s | %s |\n", ++n, v.name.c_str(),
                v.memory == rmsnorm::Memory::host ? "host" : "device", md_ops(v).c_str(), md_range(v).c_str(),
                md_layout(v).c_str(), md_shapes(v).c_str(), md_cell(v.description + former_names(v)).c_str());
  }
  std::printf(
      "\n## Mutants\n\n"
      "Each mutant is its variant's code with one bug of the catalog switched on (`rmsnorm-cert list\n"
      "mutants` describes each); it is registered as `mutant.<variant>.<Mn_...>`, never dispatched, and\n"
      "`rmsnorm-cert mutants` must kill every one.\n\n"
      "| variant | mutants | bugs |\n"
      "| --- | --- | --- |\n");
  int total = 0;
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    if (v.is_mutant() || v.external) continue;
    const std::string prefix = "mutant." + v.name + ".";
    std::string codes;
    int count = 0;
    for (const rmsnorm::Variant& m : rmsnorm::registry()) {
      if (!m.is_mutant() || m.name.compare(0, prefix.size(), prefix) != 0) continue;
      codes += (codes.empty() ? "" : ", ") + mutant_code(m.mutant);
      ++count;
    }
    if (count == 0) continue;
    std::printf("| `%s` | %d | %s |\n", v.name.c_str(), count, codes.c_str());
    total += count;
  }
  std::printf("\n%d product variants, %d mutants.\n", n, total);
  print_dispatch_rules();
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
  CommandLine cl("list", "list [variants|properties|mutants] [--pattern GLOB] [--markdown]",
                 "Variants: name, memory, ops, declared accumulation shape, whether this machine can run them.\n"
                 "Properties: the property suite's tests (host variants / device variants).\n"
                 "Mutants: the bug catalog's mutants registered in this build.\n"
                 "--markdown: docs/variants.md, the same bytes on any machine for one build.");
  std::vector<std::string> what;
  std::string pattern;
  bool markdown = false;
  cl.positionals(&what, "what to list", 0, 1);
  cl.option("--pattern", &pattern, "GLOB", "only variants/mutants whose name matches");
  cl.flag("--markdown", &markdown,
          "this build's product variants as docs/variants.md (dispatch order, ranges, shapes; no machine state)");
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  const std::string kind = what.empty() ? "variants" : what[0];
  if (markdown) {
    if (kind != "variants") return cl.usage_exit("--markdown lists variants only");
    if (!pattern.empty()) return cl.usage_exit("--markdown lists every variant: no --pattern");
    print_markdown();
    return kExitOk;
  }
  if (kind == "variants") print_variants(pattern, false);
  else if (kind == "mutants") print_variants(pattern, true);
  else if (kind == "properties") print_properties();
  else return cl.usage_exit("unknown list '" + kind + "' (variants, properties or mutants)");
  return kExitOk;
}

}  // namespace cert
