#include "rmsnorm/plugins.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "rmsnorm/abi_args.h"
#include "rmsnorm/plugin.h"
#include "rmsnorm/validate.h"

namespace rmsnorm {

namespace {

using rmsnorm::Status;
using Code = rmsnorm::Status::Code;

constexpr std::uint32_t kAllOps = (1u << rmsnorm::kOpCount) - 1u;
constexpr std::uint32_t kForwardOps = 0xFu;
constexpr std::uint32_t kBackwardOps = 0x30u;
constexpr std::uint32_t kOpFlags = RMSNORM_OPS_NO_RSTD | RMSNORM_OPS_SAME_TYPE_WEIGHTS | RMSNORM_OPS_DG_WEIGHT_TYPE;
constexpr std::size_t kMessageBytes = 1024;

bool valid_name(const char* s) {
  if (!s || !*s) return false;
  for (const char* p = s; *p; ++p)
    if (!(std::isalnum(static_cast<unsigned char>(*p)) || *p == '_' || *p == '-')) return false;
  return std::strlen(s) <= 64;
}

Status from_c(std::int32_t code, const char* message, const std::string& who) {
  if (code == RMSNORM_STATUS_OK) return Status::success();
  std::string why(message, strnlen(message, kMessageBytes));
  if (why.empty()) why = "(no message)";
  if (code < 0 || code > RMSNORM_STATUS_LAUNCH_FAILED)
    return Status::fail(Code::launch_failed, who + " returned the unknown status " + std::to_string(code) + ": " + why);
  return Status::fail(static_cast<Code>(code), why);
}

bool has_bit(std::uint32_t set, int bit) { return set == 0 || ((set >> bit) & 1u); }

// What the kernel declared it takes: everything else is declined before it is called, so a
// kernel is only ever handed arguments inside the contract and inside its own claims.
struct Claims {
  std::string name;
  std::uint32_t dtypes = 0, conventions = 0, quant_modes = 0, alignment = 0;
  std::int64_t min_dim = 1, max_dim = std::int64_t{1} << 24;
  bool packed = false;
  bool same_type_weights = false;
  bool dg_weight_type = false;

  Status layout(const rmsnorm::Tensor& t, std::int64_t dim) const {
    if (!t.data) return Status::success();
    if (packed && t.stride != dim) return Status::fail(Code::unsupported, name + " takes packed rows only (stride = D)");
    if (alignment > 1 && !rmsnorm::rows_aligned(t, alignment))
      return Status::fail(Code::misaligned, name + " needs " + std::to_string(alignment) + "-byte aligned rows");
    return Status::success();
  }
  Status common(std::int64_t dim, rmsnorm::DType x, rmsnorm::Convention c, const void* g, rmsnorm::DType g_type) const {
    if (!has_bit(dtypes, static_cast<int>(x)))
      return Status::fail(Code::unsupported, name + " does not claim x of type " + rmsnorm::to_string(x));
    if (same_type_weights && g && g_type != x)
      return Status::fail(Code::unsupported, name + " takes weights of x's type only, not " + rmsnorm::to_string(g_type));
    if (!has_bit(conventions, static_cast<int>(c)))
      return Status::fail(Code::unsupported, name + " does not claim the convention " + rmsnorm::to_string(c));
    if (dim < min_dim || dim > max_dim)
      return Status::fail(Code::unsupported, name + " declares D in [" + std::to_string(min_dim) + ", " +
                                                 std::to_string(max_dim) + "]");
    if (alignment > 1 && g && reinterpret_cast<std::uintptr_t>(g) % alignment != 0)
      return Status::fail(Code::misaligned, name + " needs a " + std::to_string(alignment) + "-byte aligned weight");
    return Status::success();
  }
  Status forward(const rmsnorm::ForwardArgs& a) const {
    Status s = rmsnorm::validate(a);
    if (s.ok()) s = common(a.dim, a.x.type, a.convention, a.g, a.g_type);
    if (s.ok() && a.quant != rmsnorm::Quant::none && !has_bit(quant_modes, static_cast<int>(a.quant)))
      s = Status::fail(Code::unsupported, name + " does not claim the FP8 mode " + rmsnorm::to_string(a.quant));
    for (const rmsnorm::Tensor* t : {&a.x, &a.o, &a.y})
      if (s.ok()) s = layout(*t, a.dim);
    return s;
  }
  Status backward(const rmsnorm::BackwardArgs& a) const {
    Status s = rmsnorm::validate(a);
    if (s.ok()) s = common(a.dim, a.x.type, a.convention, a.g, a.g_type);
    if (s.ok() && dg_weight_type && a.dg && a.g && a.dg_type != a.g_type)
      s = Status::fail(Code::unsupported, name + " writes dg in the weight's type only, not " + rmsnorm::to_string(a.dg_type));
    for (const rmsnorm::Tensor* t : {&a.x, &a.dy, &a.dx, &a.dresidual})
      if (s.ok()) s = layout(*t, a.dim);
    return s;
  }
};

rmsnorm::AccumShape ask_shape(rmsnorm_shape_fn fn, std::int64_t n) {
  std::int64_t k = 0;
  std::int32_t d = 0;
  // A shape function that fails yields a shape the judge refuses, with the numbers it gave.
  if (fn(n, &k, &d) != 0) return {0, -1};
  return {k, d};
}

bool make_variant(const rmsnorm_plugin& table, const rmsnorm_plugin_kernel& k, const std::string& path,
                  rmsnorm::Variant& v, std::string& error) {
  const std::string where = "kernel '" + std::string(k.name ? k.name : "(null)") + "'";
  if (!valid_name(k.name)) {
    error = where + ": a kernel name must be 1-64 characters of [A-Za-z0-9_-]";
    return false;
  }
  const std::uint32_t op_bits = k.ops & ~kOpFlags;
  if (op_bits == 0 || (op_bits & ~kAllOps)) {
    error = where + ": ops must be a non-empty set of bits (1u << rmsnorm_op) and RMSNORM_OPS_* flags, got " +
            std::to_string(k.ops);
    return false;
  }
  if (k.memory != RMSNORM_MEMORY_HOST && k.memory != RMSNORM_MEMORY_DEVICE) {
    error = where + ": memory must be RMSNORM_MEMORY_HOST or RMSNORM_MEMORY_DEVICE";
    return false;
  }
  if ((k.ops & kForwardOps) && !k.forward) {
    error = where + ": it claims a forward op but its forward entry point is null";
    return false;
  }
  if ((k.ops & kBackwardOps) && !k.backward) {
    error = where + ": it claims a backward op but its backward entry point is null";
    return false;
  }
  if ((k.dtypes & ~0x7u) || (k.conventions & ~0xFu) || (k.quant_modes & ~0xFu)) {
    error = where + ": dtypes may name f32, f16 and bf16 only; conventions and quant_modes their four values";
    return false;
  }
  auto claims = std::make_shared<Claims>();
  claims->name = "plugin." + std::string(table.name) + "." + k.name;
  claims->dtypes = k.dtypes;
  claims->conventions = k.conventions;
  claims->quant_modes = k.quant_modes;
  claims->alignment = k.alignment;
  if (k.min_dim > 0) claims->min_dim = k.min_dim;
  if (k.max_dim > 0) claims->max_dim = k.max_dim;
  claims->packed = k.packed_rows != 0;
  claims->same_type_weights = (k.ops & RMSNORM_OPS_SAME_TYPE_WEIGHTS) != 0;
  claims->dg_weight_type = (k.ops & RMSNORM_OPS_DG_WEIGHT_TYPE) != 0;
  if (claims->min_dim > claims->max_dim) {
    error = where + ": min_dim " + std::to_string(claims->min_dim) + " > max_dim " + std::to_string(claims->max_dim);
    return false;
  }
  if (k.alignment > 1 && (k.alignment & (k.alignment - 1))) {
    error = where + ": alignment must be a power of two, got " + std::to_string(k.alignment);
    return false;
  }

  v = rmsnorm::Variant{};
  v.name = claims->name;
  v.description = k.description ? k.description : "";
  v.memory = k.memory == RMSNORM_MEMORY_DEVICE ? rmsnorm::Memory::device : rmsnorm::Memory::host;
  v.ops = op_bits;
  v.writes_rstd = (k.ops & RMSNORM_OPS_NO_RSTD) == 0;
  v.same_type_weights = claims->same_type_weights;
  v.dg_weight_type = claims->dg_weight_type;
  v.min_dim = claims->min_dim;
  v.max_dim = claims->max_dim;
  v.aligned_rows = k.alignment >= 16;
  v.packed_rows = claims->packed;
  // 0 claims all, in the table; the variant records the claim in full.
  v.dtypes = k.dtypes ? k.dtypes : 0x7u;
  v.conventions = k.conventions ? k.conventions : 0xFu;
  v.quant_modes = k.quant_modes ? k.quant_modes : 0xEu;
  v.origin = path;
  if (k.ops & kForwardOps) {
    v.can_implement_forward = [claims](const rmsnorm::ForwardArgs& a) { return claims->forward(a); };
    const rmsnorm_forward_fn fn = k.forward;
    v.run_forward = [claims, fn](const rmsnorm::ForwardArgs& a) {
      Status s = claims->forward(a);
      if (!s.ok()) return s;
      const rmsnorm_forward_args c = rmsnorm::to_abi(a);
      char message[kMessageBytes] = {0};
      const std::int32_t code = fn(&c, message, sizeof message);
      message[kMessageBytes - 1] = 0;
      return from_c(code, message, claims->name);
    };
  }
  if (k.ops & kBackwardOps) {
    v.can_implement_backward = [claims](const rmsnorm::BackwardArgs& a) { return claims->backward(a); };
    const rmsnorm_backward_fn fn = k.backward;
    v.run_backward = [claims, fn](const rmsnorm::BackwardArgs& a) {
      Status s = claims->backward(a);
      if (!s.ok()) return s;
      const rmsnorm_backward_args c = rmsnorm::to_abi(a);
      char message[kMessageBytes] = {0};
      const std::int32_t code = fn(&c, message, sizeof message);
      message[kMessageBytes - 1] = 0;
      return from_c(code, message, claims->name);
    };
    if (k.workspace_bytes) {
      const auto ws = k.workspace_bytes;
      v.workspace_bytes = [ws](std::int64_t rows, std::int64_t dim) { return ws(rows, dim); };
    }
  }
  if (k.row_shape) {
    const rmsnorm_shape_fn fn = k.row_shape;
    v.row_shape = [fn](std::int64_t dim) { return ask_shape(fn, dim); };
  }
  if (k.dg_shape) {
    const rmsnorm_shape_fn fn = k.dg_shape;
    v.dg_shape = [fn](std::int64_t rows) { return ask_shape(fn, rows); };
  }
  // The judge's own rule (judged_row_shape / judged_dg_shape) at the usual sizes, now: a table
  // that would loosen its own tolerance is refused before anything runs.
  for (const std::int64_t n : {1, 2, 7, 8, 33, 128, 1000, 1025, 4096, 8192, 65536}) {
    rmsnorm::AccumShape ignored;
    Status st = rmsnorm::judged_row_shape(v, n, ignored);
    if (st.ok()) st = rmsnorm::judged_dg_shape(v, n, ignored);
    if (!st.ok()) {
      error = where + ": " + st.reason + " (docs/contract.md#accumulation-shape)";
      return false;
    }
  }
  return true;
}

}  // namespace

namespace {

// The variants of one table (from a library's entry point, or handed over in this process),
// not yet registered; `who` prefixes every error.
bool table_variants(const rmsnorm_plugin* table, const std::string& origin, const std::string& who,
                    std::vector<rmsnorm::Variant>& out, std::string& error) {
  if (!table) {
    error = who + RMSNORM_PLUGIN_ENTRY "() returned null";
    return false;
  }
  if (table->abi_version != RMSNORM_PLUGIN_ABI_VERSION) {
    error = who + "ABI version " + std::to_string(table->abi_version) + ", this tool speaks version " +
            std::to_string(RMSNORM_PLUGIN_ABI_VERSION);
    return false;
  }
  if (!valid_name(table->name)) {
    error = who + "the library name must be 1-64 characters of [A-Za-z0-9_-]";
    return false;
  }
  if (table->kernel_count == 0 || !table->kernels) {
    error = who + "its table holds no kernels";
    return false;
  }
  std::vector<rmsnorm::Variant> made;
  for (std::uint32_t i = 0; i < table->kernel_count; ++i) {
    rmsnorm::Variant v;
    if (!make_variant(*table, table->kernels[i], origin, v, error)) {
      error = who + error;
      return false;
    }
    for (const rmsnorm::Variant& m : made)
      if (m.name == v.name) {
        error = who + "two kernels are named '" + table->kernels[i].name + "'";
        return false;
      }
    made.push_back(std::move(v));
  }
  for (rmsnorm::Variant& v : made) out.push_back(std::move(v));
  return true;
}

}  // namespace

bool load_plugin(const std::string& path, std::vector<rmsnorm::Variant>& out, std::string& error) {
  const std::string who = "plugin " + path + ": ";
  // A bare name would make dlopen search the library path; a plugin is always a file.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  // The handle is never closed: the variants point into the library for the process's life.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    error = who + "cannot be loaded: " + (why ? why : "unknown dlopen error");
    return false;
  }
  dlerror();
  void* sym = dlsym(handle, RMSNORM_PLUGIN_ENTRY);
  if (!sym) {
    error = who + "does not export " RMSNORM_PLUGIN_ENTRY "() (see include/rmsnorm/plugin.h)";
    return false;
  }
  rmsnorm_plugin_entry_fn entry;
  static_assert(sizeof entry == sizeof sym, "function and object pointers differ in size");
  std::memcpy(&entry, &sym, sizeof entry);
  return table_variants(entry(), path, who, out, error);
}

bool register_in_process_table(const rmsnorm_plugin* table, const std::string& origin, std::string& error) {
  std::vector<rmsnorm::Variant> made;
  if (!table_variants(table, origin, "kernel table: ", made, error)) return false;
  for (rmsnorm::Variant& v : made) v.in_process = true;
  const Status s = rmsnorm::add_external_variants(std::move(made));
  if (!s.ok()) {
    error = "kernel table: " + s.reason;
    return false;
  }
  return true;
}

bool register_plugins(const std::vector<std::string>& paths, std::string& error) {
  std::vector<rmsnorm::Variant> all;
  for (const std::string& p : paths)
    if (!load_plugin(p, all, error)) return false;
  if (all.empty()) return true;
  const Status s = rmsnorm::add_external_variants(std::move(all));
  if (!s.ok()) {
    error = "plugins: " + s.reason;
    return false;
  }
  return true;
}

bool register_plugins_from_env(std::string& error) {
  const char* env = std::getenv(kPluginsEnv);
  if (!env || !*env) return true;
  std::vector<std::string> paths;
  std::string cur;
  for (const char* p = env;; ++p) {
    if (*p == ':' || *p == '\0') {
      if (!cur.empty()) paths.push_back(cur);
      cur.clear();
      if (!*p) break;
    } else {
      cur += *p;
    }
  }
  return register_plugins(paths, error);
}

}  // namespace rmsnorm
