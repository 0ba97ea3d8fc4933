#include <algorithm>
#include <string>
#include <vector>

#include "rmsnorm/validate.h"
#include "rmsnorm/variant.h"

namespace rmsnorm {

const std::vector<Variant>& registry() {
  static const std::vector<Variant> all = [] {
    std::vector<Variant> v;
    register_cuda_variants(v);  // device variants first: registration order is preference
    register_host_variants(v);
    // Products before mutants, each group in registration order.
    std::stable_partition(v.begin(), v.end(), [](const Variant& x) { return !x.is_mutant(); });
    return v;
  }();
  return all;
}

const Variant* find_variant(const std::string& name) {
  for (const Variant& v : registry())
    if (v.name == name) return &v;
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

std::vector<const Variant*> match_variants(const std::string& pattern) {
  std::vector<const Variant*> out;
  for (const Variant& v : registry()) {
    if (pattern == "all") {
      if (!v.is_mutant()) out.push_back(&v);
    } else if (glob_match(pattern, v.name)) {
      out.push_back(&v);
    }
  }
  return out;
}

const Variant* pick_forward(const ForwardArgs& a, Memory where) {
  if (!validate(a).ok()) return nullptr;
  for (const Variant& v : registry()) {
    if (v.is_mutant() || v.memory != where || !v.supports(op_of(a))) continue;
    if (v.preferred_forward && !v.preferred_forward(a)) continue;
    if (v.can_implement_forward && v.can_implement_forward(a).ok()) return &v;
  }
  return nullptr;
}

const Variant* pick_backward(const BackwardArgs& a, Memory where) {
  if (!validate(a).ok()) return nullptr;
  for (const Variant& v : registry()) {
    if (v.is_mutant() || v.memory != where || !v.supports(op_of(a))) continue;
    if (v.preferred_backward && !v.preferred_backward(a)) continue;
    if (v.can_implement_backward && v.can_implement_backward(a).ok()) return &v;
  }
  return nullptr;
}

std::size_t backward_workspace_bytes(std::int64_t rows, std::int64_t dim, Memory where) {
  std::size_t most = 0;
  if (rows <= 0 || dim <= 0) return 0;
  for (const Variant& v : registry()) {
    if (v.is_mutant() || v.memory != where || !v.workspace_bytes) continue;
    if (!v.supports(Op::backward) && !v.supports(Op::add_backward)) continue;
    most = std::max(most, v.workspace_bytes(rows, dim));
  }
  return most;
}

}  // namespace rmsnorm
