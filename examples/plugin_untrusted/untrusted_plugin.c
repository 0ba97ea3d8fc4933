/* librmsnorm_untrusted_plugin.so: kernels that try to game a test suite, one trick each. Every
 * one of them must FAIL certification, with the property that caught it named in the
 * certificate (docs/certifying-your-kernel.md, "Untrusted kernels"). All host memory. */
#include "host_rmsnorm.h"

#define FWD_OPS ((1u << RMSNORM_OP_FORWARD) | (1u << RMSNORM_OP_ADD_FORWARD))

/* Returns success and writes nothing. */
static int32_t writes_nothing(const rmsnorm_forward_args* a, char* m, size_t n) {
  (void)a;
  (void)m;
  (void)n;
  return RMSNORM_STATUS_OK;
}

/* Right only where tests usually look: R a power of two and D a multiple of 128. Elsewhere it
 * writes the largest such block and leaves the rest. */
static int32_t common_sizes_only(const rmsnorm_forward_args* a, char* m, size_t n) {
  int64_t rows = 1;
  while (rows * 2 <= a->rows) rows *= 2;
  const int64_t cols = a->dim >= 128 ? a->dim / 128 * 128 : a->dim;
  const ex_forward_options opt = {rows, cols, 0, 0};
  return ex_forward_with(a, m, n, opt);
}

/* Keeps the last outputs and hands them back when the shape repeats. */
static struct {
  int64_t rows, dim, y_stride;
  int32_t y_dtype, convention;
  size_t bytes;
  unsigned char* y;
  float* rstd;
} shape_cache;

static int32_t caches_by_shape(const rmsnorm_forward_args* a, char* m, size_t n) {
  const size_t bytes = (size_t)((a->rows - 1) * a->y.stride + a->dim) * (a->y.dtype == RMSNORM_F32 ? 4 : 2);
  if (shape_cache.y && shape_cache.rows == a->rows && shape_cache.dim == a->dim && shape_cache.y_stride == a->y.stride &&
      shape_cache.y_dtype == a->y.dtype && shape_cache.convention == a->convention && a->o.data == NULL) {
    memcpy(a->y.data, shape_cache.y, bytes);
    if (a->rstd) memcpy(a->rstd, shape_cache.rstd, (size_t)a->rows * sizeof(float));
    return RMSNORM_STATUS_OK;
  }
  const int32_t st = ex_forward(a, m, n);
  if (st != RMSNORM_STATUS_OK || a->o.data != NULL) return st;
  free(shape_cache.y);
  free(shape_cache.rstd);
  shape_cache.y = (unsigned char*)malloc(bytes);
  shape_cache.rstd = (float*)malloc((size_t)a->rows * sizeof(float));
  if (!shape_cache.y || !shape_cache.rstd) return st;
  memcpy(shape_cache.y, a->y.data, bytes);
  if (a->rstd) memcpy(shape_cache.rstd, a->rstd, (size_t)a->rows * sizeof(float));
  shape_cache.rows = a->rows;
  shape_cache.dim = a->dim;
  shape_cache.y_stride = a->y.stride;
  shape_cache.y_dtype = a->y.dtype;
  shape_cache.convention = a->convention;
  shape_cache.bytes = bytes;
  return st;
}

/* Remembers which (x, y) buffers it already normalized, and skips the work for them. */
static const void* seen_x;
static const void* seen_y;
static int64_t seen_rows, seen_dim;
static int32_t caches_by_pointer(const rmsnorm_forward_args* a, char* m, size_t n) {
  if (a->x.data == seen_x && a->y.data == seen_y && a->rows == seen_rows && a->dim == seen_dim && a->o.data == NULL)
    return RMSNORM_STATUS_OK;
  const int32_t st = ex_forward(a, m, n);
  seen_x = a->x.data;
  seen_y = a->y.data;
  seen_rows = a->rows;
  seen_dim = a->dim;
  return st;
}

/* Writes one element past the end of the last row of y. */
static int32_t writes_outside(const rmsnorm_forward_args* a, char* m, size_t n) {
  const int32_t st = ex_forward(a, m, n);
  if (st == RMSNORM_STATUS_OK && a->rows > 0) ex_store(a->y.data, a->y.dtype, (a->rows - 1) * a->y.stride + a->dim, 0.0f);
  return st;
}

/* Reads one element past the end of each row of x (a vector tail read without a mask) and lets
 * it into the sum multiplied by zero. */
static int32_t reads_outside(const rmsnorm_forward_args* a, char* m, size_t n) {
  const int32_t st = ex_forward(a, m, n);
  if (st != RMSNORM_STATUS_OK || a->o.data != NULL) return st;
  for (int64_t r = 0; r < a->rows; ++r) {
    const float spill = 0.0f * ex_load(a->x.data, a->x.dtype, r * a->x.stride + a->dim);
    if (spill != 0.0f || spill != spill) ex_store(a->y.data, a->y.dtype, r * a->y.stride, spill);
  }
  return st;
}

/* Uses its input x as scratch: leaves x·r behind in it. */
static int32_t writes_inputs(const rmsnorm_forward_args* a, char* m, size_t n) {
  const int32_t st = ex_forward(a, m, n);
  if (st != RMSNORM_STATUS_OK || a->o.data != NULL || a->y.data == a->x.data || !a->rstd) return st;
  for (int64_t r = 0; r < a->rows; ++r)
    for (int64_t j = 0; j < a->dim; ++j) {
      const int64_t i = r * a->x.stride + j;
      ex_store(a->x.data, a->x.dtype, i, ex_load(a->x.data, a->x.dtype, i) * a->rstd[r]);
    }
  return st;
}

/* Alternates the order of its sum from call to call: every answer is within the bound, but two
 * runs of one case differ in their last bits. */
static int calls;
static int32_t nondeterministic(const rmsnorm_forward_args* a, char* m, size_t n) {
  const ex_forward_options opt = {-1, -1, (calls++) & 1, 0};
  return ex_forward_with(a, m, n, opt);
}

/* Claims every row count, then declines the odd ones as unsupported: a limit it never declared,
 * so about half of what it is certified for is never run. */
static int32_t declines_odd_rows(const rmsnorm_forward_args* a, char* m, size_t n) {
  if (a->rows % 2 != 0) {
    snprintf(m, n, "odd row counts are not implemented");
    return RMSNORM_STATUS_UNSUPPORTED;
  }
  return ex_forward(a, m, n);
}

#define UNTRUSTED(NAME, WHAT) \
  {.name = #NAME, .description = WHAT, .ops = FWD_OPS, .memory = RMSNORM_MEMORY_HOST, .dtypes = EX_DTYPES, .forward = NAME}

static const rmsnorm_plugin_kernel kKernels[] = {
    UNTRUSTED(writes_nothing, "returns success, writes nothing"),
    UNTRUSTED(common_sizes_only, "right only at R a power of two and D a multiple of 128"),
    UNTRUSTED(caches_by_shape, "hands back the last outputs when the shape repeats"),
    UNTRUSTED(caches_by_pointer, "skips the work for buffers it has seen"),
    UNTRUSTED(writes_outside, "writes one element past the last row of y"),
    UNTRUSTED(reads_outside, "reads one element past each row of x"),
    UNTRUSTED(writes_inputs, "leaves x*r in its input x"),
    UNTRUSTED(nondeterministic, "alternates its summation order between calls"),
    UNTRUSTED(declines_odd_rows, "declines the odd row counts it claims"),
};

static const rmsnorm_plugin kPlugin = {RMSNORM_PLUGIN_ABI_VERSION, "untrusted",
                                       (uint32_t)(sizeof kKernels / sizeof kKernels[0]), kKernels};

RMSNORM_PLUGIN_EXPORT const rmsnorm_plugin* rmsnorm_plugin_v1(void) { return &kPlugin; }
