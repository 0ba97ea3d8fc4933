/* librmsnorm_example_plugin.so: the plugin walk-through of docs/certifying-your-kernel.md.
 *
 *   rmsnorm-cert certify --plugin build/ci/examples/librmsnorm_example_plugin.so 'plugin.example.*'
 *
 * `correct` implements the contract for host memory and passes; `eps_outside` adds eps outside
 * the square root (rsqrt(mean) + eps, the lecture's pitfall) and fails with a repro line. */
#include "host_rmsnorm.h"

static int32_t eps_outside_forward(const rmsnorm_forward_args* a, char* message, size_t size) {
  const ex_forward_options opt = {-1, -1, 0, 1};
  return ex_forward_with(a, message, size, opt);
}

static const rmsnorm_plugin_kernel kKernels[] = {
    {
        .name = "correct",
        .description = "plain C, fp32 arithmetic, sequential sums",
        .ops = EX_ALL_OPS,
        .memory = RMSNORM_MEMORY_HOST,
        .dtypes = EX_DTYPES,
        .row_shape = ex_sequential_shape,
        .dg_shape = ex_sequential_shape,
        .forward = ex_forward,
        .backward = ex_backward,
    },
    {
        .name = "eps_outside",
        .description = "forward only, eps added outside the square root",
        .ops = (1u << RMSNORM_OP_FORWARD) | (1u << RMSNORM_OP_ADD_FORWARD),
        .memory = RMSNORM_MEMORY_HOST,
        .dtypes = EX_DTYPES,
        .forward = eps_outside_forward,
    },
};

static const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "example", 2, kKernels};

RMSNORM_PLUGIN_EXPORT const rmsnorm_plugin* rmsnorm_plugin_v1(void) { return &kPlugin; }
