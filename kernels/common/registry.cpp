#include <algorithm>
#include <functional>
#include <string_view>
#include <string>
#include <vector>

#include "rmsnorm/dispatch.h"
#include "rmsnorm/validate.h"
#include "rmsnorm/variant.h"

namespace rmsnorm {

namespace {
std::vector<Variant>& pending() {  // plugins and mutants, until the registry is built
  static std::vector<Variant> v;
  return v;
}
bool& registry_built() {
  static bool built = false;
  return built;
}
}  // namespace

const std::vector<Variant>& registry() {
  static const std::vector<Variant> all = [] {
    std::vector<Variant> v;
    register_cuda_variants(v);  // device variants first: registration order is preference
    register_host_variants(v);
    for (Variant& e : pending()) v.push_back(std::move(e));
    pending().clear();
    registry_built() = true;
    // Products before mutants, each group in registration order.
    std::stable_partition(v.begin(), v.end(), [](const Variant& x) { return !x.is_mutant(); });
    return v;
  }();
  return all;
}

namespace {
// Variants added from outside the built-in families, each under its reserved prefix: no built-in
// name can clash.
Status add_pending(std::vector<Variant> variants, std::string_view prefix, bool mutants) {
  if (registry_built())
    return Status::fail(Status::Code::invalid_argument, "variants must be added before the registry is first used");
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (variants[i].name.compare(0, prefix.size(), prefix) != 0)
      return Status::fail(Status::Code::invalid_argument,
                          "the variant's name must start with '" + std::string(prefix) + "': " + variants[i].name);
    if (variants[i].is_mutant() != mutants)
      return Status::fail(Status::Code::invalid_argument,
                          std::string(mutants ? "not a mutant: " : "a mutant cannot be added as external: ") + variants[i].name);
    bool taken = false;
    for (const Variant& p : pending()) taken = taken || p.name == variants[i].name;
    for (std::size_t j = 0; j < i; ++j) taken = taken || variants[j].name == variants[i].name;
    if (taken) return Status::fail(Status::Code::invalid_argument, "duplicate variant name " + variants[i].name);
  }
  for (Variant& v : variants) {
    v.external = !mutants;
    pending().push_back(std::move(v));
  }
  return Status::success();
}
}  // namespace

Status add_external_variants(std::vector<Variant> variants) {
  return add_pending(std::move(variants), kExternalPrefix, false);
}
Status add_mutant_variants(std::vector<Variant> variants) { return add_pending(std::move(variants), kMutantPrefix, true); }

namespace {
Status judged_shape(const std::function<AccumShape(std::int64_t)>& declared, std::int64_t n, const char* what,
                    AccumShape& out) {
  const std::int64_t terms = std::max<std::int64_t>(n, 1);
  // No terms (R = 0 for dg): nothing is summed, so no shape can loosen anything.
  if (!declared || n < 1) {
    out = {terms, 0};
    return Status::success();
  }
  const AccumShape s = declared(n);
  if (s.per_thread < 1 || s.per_thread > terms || s.tree_depth < 0 || s.tree_depth > kMaxTreeDepth) {
    out = {terms, 0};
    return Status::fail(Status::Code::invalid_argument,
                        std::string("declared ") + what + " accumulation shape (" + std::to_string(s.per_thread) +
                            " terms per thread, tree depth " + std::to_string(s.tree_depth) + ") for " +
                            std::to_string(n) + " terms is outside the limits: 1 <= terms per thread <= " +
                            std::to_string(terms) + ", 0 <= depth <= " + std::to_string(kMaxTreeDepth));
  }
  out = s;
  return Status::success();
}
}  // namespace

Status judged_row_shape(const Variant& v, std::int64_t dim, AccumShape& out) {
  return judged_shape(v.row_shape, dim, "row", out);
}
Status judged_dg_shape(const Variant& v, std::int64_t rows, AccumShape& out) {
  return judged_shape(v.dg_shape, rows, "dg", out);
}

const Variant* find_variant(const std::string& name) {
  for (const Variant& v : registry())
    if (v.name == name) return &v;
  for (const Variant& v : registry())
    if (v.answers_to(name)) return &v;
  return nullptr;
}

namespace {
// One glob ('*' any run, '?' any one character): iterative, with a single backtrack point.
bool glob_match_one(const std::string& p, const std::string& s) {
  std::size_t i = 0, j = 0, star = std::string::npos, mark = 0;
  while (j < s.size()) {
    if (i < p.size() && (p[i] == '?' || p[i] == s[j])) { ++i; ++j; }
    else if (i < p.size() && p[i] == '*') { star = i++; mark = j; }
    else if (star != std::string::npos) { i = star + 1; j = ++mark; }
    else return false;
  }
  while (i < p.size() && p[i] == '*') ++i;
  return i == p.size();
}
}  // namespace

// A pattern is one glob or several separated by commas, any of which may match
// ("fwd.cluster_row,fwd.large_d*"); variant names have no commas.
bool glob_match(const std::string& p, const std::string& s) {
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = p.find(',', start);
    if (glob_match_one(p.substr(start, comma == std::string::npos ? std::string::npos : comma - start), s)) return true;
    if (comma == std::string::npos) return false;
    start = comma + 1;
  }
}

namespace {
// Each comma-separated glob of `pattern` without wildcards that names one of v's aliases.
bool glob_match_alias(const std::string& pattern, const Variant& v) {
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = pattern.find(',', start);
    const std::string one = pattern.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (one.find_first_of("*?") == std::string::npos && one != v.name && v.answers_to(one)) return true;
    if (comma == std::string::npos) return false;
    start = comma + 1;
  }
}
}  // namespace

bool variant_matches(const std::string& pattern, const Variant& v) {
  return glob_match(pattern, v.name) || glob_match_alias(pattern, v);
}

std::vector<const Variant*> match_variants(const std::string& pattern) {
  std::vector<const Variant*> out;
  for (const Variant& v : registry()) {
    if (pattern == "all") {
      if (!v.is_mutant()) out.push_back(&v);
    } else if (variant_matches(pattern, v)) {
      out.push_back(&v);
    }
  }
  return out;
}

const Variant* pick_forward(const ForwardArgs& a, Memory where) {
  if (!validate(a).ok()) return nullptr;
  const dispatch::Query q = dispatch::query_of(a);
  for (const Variant& v : registry()) {
    if (v.is_mutant() || v.external || v.memory != where || !v.supports(op_of(a))) continue;
    if (!dispatch::prefers(v, q)) continue;
    if (v.can_implement_forward && v.can_implement_forward(a).ok()) return &v;
  }
  return nullptr;
}

const Variant* pick_backward(const BackwardArgs& a, Memory where) {
  if (!validate(a).ok()) return nullptr;
  const dispatch::Query q = dispatch::query_of(a);
  for (const Variant& v : registry()) {
    if (v.is_mutant() || v.external || v.memory != where || !v.supports(op_of(a))) continue;
    if (!dispatch::prefers(v, q)) continue;
    if (v.can_implement_backward && v.can_implement_backward(a).ok()) return &v;
  }
  return nullptr;
}

std::size_t backward_workspace_bytes(std::int64_t rows, std::int64_t dim, Memory where) {
  std::size_t most = 0;
  if (rows <= 0 || dim <= 0) return 0;
  for (const Variant& v : registry()) {
    if (v.is_mutant() || v.external || v.memory != where || !v.workspace_bytes) continue;
    if (!v.supports(Op::backward) && !v.supports(Op::add_backward)) continue;
    most = std::max(most, v.workspace_bytes(rows, dim));
  }
  return most;
}

}  // namespace rmsnorm
