// librmsnorm_reference_plugin.so: this project's own host reference, compiled into a plugin and
// reached only through the C table. It claims every op, type, convention and FP8 mode, so its
// certificate exercises the whole ABI; and since `host.reference` runs the same code in-tree,
// certifying both side by side measures what the plugin path costs.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "rmsnorm/abi_args.h"
#include "rmsnorm/plugin.h"
#include "rmsnorm/variant.h"

namespace {

const rmsnorm::Variant& reference() {
  static const rmsnorm::Variant v = [] {
    std::vector<rmsnorm::Variant> all;
    rmsnorm::register_host_variants(all);
    for (const rmsnorm::Variant& x : all)
      if (x.name == "host.reference") return x;
    return all.front();
  }();
  return v;
}

int32_t report(const rmsnorm::Status& s, char* message, size_t size) {
  if (!s.ok()) std::snprintf(message, size, "%s", s.reason.c_str());
  return static_cast<int32_t>(s.code);
}

int32_t forward(const rmsnorm_forward_args* c, char* message, size_t size) {
  const rmsnorm::ForwardArgs a = rmsnorm::from_abi(*c);
  return report(reference().run_forward(a), message, size);
}

int32_t backward(const rmsnorm_backward_args* c, char* message, size_t size) {
  const rmsnorm::BackwardArgs a = rmsnorm::from_abi(*c);
  return report(reference().run_backward(a), message, size);
}

int32_t row_shape(int64_t n, int64_t* per_thread, int32_t* depth) {
  const rmsnorm::AccumShape s = reference().row_shape(n);
  *per_thread = s.per_thread;
  *depth = s.tree_depth;
  return 0;
}

int32_t dg_shape(int64_t n, int64_t* per_thread, int32_t* depth) {
  const rmsnorm::AccumShape s = reference().dg_shape(n);
  *per_thread = s.per_thread;
  *depth = s.tree_depth;
  return 0;
}

constexpr std::uint32_t kAllOps = (1u << 6) - 1u;

// `host` claims everything. `narrow` and `packed` run the same code behind narrow claims, so that
// their certificates show the property draws and generated cases aimed inside a declared range,
// layout, types, conventions and FP8 modes (the harness declines everything outside a claim
// before the kernel is called): `narrow` takes 16-bit rows of 2048 <= D <= 6144, 16-byte aligned,
// standard or gemma, FP8 per token or per block; `packed` takes packed rows of 64 <= D <= 1024 of
// any alignment, fp32 or bf16, every convention, FP8 with a static scale only.
const rmsnorm_plugin_kernel kKernels[] = {
    {"host", "the in-tree host.reference behind the C table", kAllOps, RMSNORM_MEMORY_HOST, 0, 0, 0, 0, 0, 0, 0,
     row_shape, dg_shape, forward, backward, nullptr},
    {"narrow", "host.reference behind narrow claims: bf16/f16, standard/gemma, FP8 per token or block, 2048 <= D <= 6144, aligned rows",
     kAllOps, RMSNORM_MEMORY_HOST, (1u << RMSNORM_F16) | (1u << RMSNORM_BF16),
     (1u << RMSNORM_STANDARD) | (1u << RMSNORM_GEMMA), (1u << RMSNORM_QUANT_DYNAMIC_TOKEN) | (1u << RMSNORM_QUANT_PER_BLOCK),
     2048, 6144, 16, 0, row_shape, dg_shape, forward, backward, nullptr},
    {"packed", "host.reference behind narrow claims: fp32/bf16, FP8 with a static scale, 64 <= D <= 1024, packed rows",
     kAllOps, RMSNORM_MEMORY_HOST, (1u << RMSNORM_F32) | (1u << RMSNORM_BF16), 0, 1u << RMSNORM_QUANT_STATIC, 64, 1024,
     0, 1, row_shape, dg_shape, forward, backward, nullptr},
};
const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "reference", sizeof kKernels / sizeof kKernels[0], kKernels};

}  // namespace

extern "C" RMSNORM_PLUGIN_EXPORT const rmsnorm_plugin* rmsnorm_plugin_v1(void) { return &kPlugin; }
