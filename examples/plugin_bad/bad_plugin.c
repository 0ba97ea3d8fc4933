/* Plugins that break the ABI, one way each (chosen by BAD_KIND at compile time), for the tests of
 * what rmsnorm-cert says about them: a clear message and exit status 3, never a crash, for the
 * table's faults; a FAIL with the kernel's own message or "crashed on case ..." for a kernel that
 * returns an error or dies. */
#include "../plugin_host/host_rmsnorm.h"

#define FWD ((1u << RMSNORM_OP_FORWARD))

static int32_t fails(const rmsnorm_forward_args* a, char* m, size_t n) {
  (void)a;
  return ex_fail(m, n, RMSNORM_STATUS_LAUNCH_FAILED, "this kernel always fails");
}

static int32_t segfaults(const rmsnorm_forward_args* a, char* m, size_t n) {
  if (a->rows > 1) {
    volatile int* nowhere = NULL;
    *nowhere = 1;
  }
  return ex_forward(a, m, n);
}

#if BAD_KIND == 1 /* no entry point */
int rmsnorm_plugin_v0(void) { return 0; }
#else
#if BAD_KIND == 2 /* another ABI version */
static const rmsnorm_plugin_kernel kKernels[] = {{.name = "k", .ops = FWD, .forward = ex_forward}};
static const rmsnorm_plugin kPlugin = {99u, "bad", 1, kKernels};
#elif BAD_KIND == 3 /* a forward op without a forward entry point */
static const rmsnorm_plugin_kernel kKernels[] = {{.name = "k", .ops = FWD, .forward = NULL}};
static const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "bad", 1, kKernels};
#elif BAD_KIND == 4 /* two kernels of one name */
static const rmsnorm_plugin_kernel kKernels[] = {{.name = "k", .ops = FWD, .forward = ex_forward},
                                                 {.name = "k", .ops = FWD, .forward = ex_forward}};
static const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "bad", 2, kKernels};
#elif BAD_KIND == 5 /* kernels that fail or crash when run */
static const rmsnorm_plugin_kernel kKernels[] = {
    {.name = "fails", .ops = FWD, .dtypes = EX_DTYPES, .forward = fails},
    {.name = "segfaults", .ops = FWD, .dtypes = EX_DTYPES, .forward = segfaults}};
static const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "faulty", 2, kKernels};
#elif BAD_KIND == 6 /* a declared accumulation shape beyond the limits */
static int32_t too_loose(int64_t n, int64_t* per_thread, int32_t* depth) {
  *per_thread = 4 * n;
  *depth = 0;
  return 0;
}
static const rmsnorm_plugin_kernel kKernels[] = {
    {.name = "loose", .ops = FWD, .dtypes = EX_DTYPES, .row_shape = too_loose, .forward = ex_forward}};
static const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "loose", 1, kKernels};
#endif
RMSNORM_PLUGIN_EXPORT const rmsnorm_plugin* rmsnorm_plugin_v1(void) { return &kPlugin; }
#endif
