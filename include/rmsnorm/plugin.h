/* The plugin ABI, version 1: how a shared library hands RMSNorm kernels to rmsnorm-cert.
 *
 * C99, no C++ types across the boundary. A plugin library exports one function,
 *
 *     const rmsnorm_plugin* rmsnorm_plugin_v1(void);
 *
 * returning a table that lives as long as the library: the ABI version, the library's name and
 * its kernels. rmsnorm-cert loads it with `--plugin PATH` and registers every kernel as
 * `plugin.<library name>.<kernel name>`; the harness then judges it like any in-tree variant.
 * The contract every kernel is judged by is docs/contract.md; the walk-through is
 * docs/certifying-your-kernel.md.
 *
 * Every enum value below equals the one the project uses internally; the values are part of
 * the ABI and never change within a version. */
#ifndef RMSNORM_PLUGIN_H
#define RMSNORM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RMSNORM_PLUGIN_ABI_VERSION 1u
#define RMSNORM_PLUGIN_ENTRY "rmsnorm_plugin_v1"

#if defined(_WIN32)
#define RMSNORM_PLUGIN_EXPORT __declspec(dllexport)
#else
#define RMSNORM_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Storage types (what sits in memory; arithmetic is fp32). */
typedef enum {
  RMSNORM_F32 = 0,
  RMSNORM_F16 = 1,
  RMSNORM_BF16 = 2,
  RMSNORM_E4M3 = 3,
  RMSNORM_E5M2 = 4
} rmsnorm_dtype;

/* How y is formed (docs/contract.md#conventions). */
typedef enum {
  RMSNORM_STANDARD = 0,  /* y = RN(x·r·g), one rounding */
  RMSNORM_LLAMA = 1,     /* y = RN(RN(x·r)·g), both in the input type */
  RMSNORM_GEMMA = 2,     /* y = RN(x·r·(1+g)) */
  RMSNORM_NO_WEIGHT = 3  /* y = RN(x·r); g is null */
} rmsnorm_convention;

/* FP8 output modes (docs/contract.md#fp8). */
typedef enum {
  RMSNORM_QUANT_NONE = 0,
  RMSNORM_QUANT_STATIC = 1,         /* scale[0] is an input */
  RMSNORM_QUANT_DYNAMIC_TOKEN = 2,  /* scale[R] is written, one per row */
  RMSNORM_QUANT_PER_BLOCK = 3       /* scale[R][ceil(D/128)] is written */
} rmsnorm_quant;

/* Operations; a kernel's `ops` is a set of bits (1u << op). */
typedef enum {
  RMSNORM_OP_FORWARD = 0,
  RMSNORM_OP_ADD_FORWARD = 1,        /* x <- RN(x + o), then the forward of the new x */
  RMSNORM_OP_FORWARD_QUANT = 2,
  RMSNORM_OP_ADD_FORWARD_QUANT = 3,
  RMSNORM_OP_BACKWARD = 4,
  RMSNORM_OP_ADD_BACKWARD = 5        /* dx = rmsnorm dx + dresidual */
} rmsnorm_op;

/* Flags a kernel may add to its `ops` bits, above the op bits:
 * NO_RSTD: its forward ops do not write rstd (many library kernels keep no r). The harness
 *   judges y, h and scale alone and ignores the rstd buffer; the certificate says so.
 * SAME_TYPE_WEIGHTS: it takes g of x's type only; cases with fp32 weights on 16-bit rows are
 *   not drawn for it (as for its other claims, a case outside them is declined unseen).
 * DG_WEIGHT_TYPE: its backward writes dg in g's type only (autograd frameworks do); cases asking
 *   an fp32 dg of 16-bit weights are not drawn for it. */
#define RMSNORM_OPS_NO_RSTD (1u << 31)
#define RMSNORM_OPS_SAME_TYPE_WEIGHTS (1u << 30)
#define RMSNORM_OPS_DG_WEIGHT_TYPE (1u << 29)

typedef enum { RMSNORM_MEMORY_HOST = 0, RMSNORM_MEMORY_DEVICE = 1 } rmsnorm_memory;

/* What an entry point returns. Anything but OK comes with a message in the caller's buffer.
 * UNSUPPORTED and MISALIGNED decline a case (it is skipped, and counted as not checked);
 * every other code is a failure of that case. */
typedef enum {
  RMSNORM_STATUS_OK = 0,
  RMSNORM_STATUS_INVALID_ARGUMENT = 1,
  RMSNORM_STATUS_UNSUPPORTED = 2,
  RMSNORM_STATUS_MISALIGNED = 3,
  RMSNORM_STATUS_BAD_OVERLAP = 4,
  RMSNORM_STATUS_WORKSPACE_TOO_SMALL = 5,
  RMSNORM_STATUS_NO_DEVICE = 6,
  RMSNORM_STATUS_LAUNCH_FAILED = 7
} rmsnorm_status;

/* A row-major [rows, dim] view: row i starts `stride` elements after row i - 1. */
typedef struct {
  void* data;      /* host or device pointer, as the kernel's memory says; NULL: absent */
  int32_t dtype;   /* rmsnorm_dtype */
  int64_t stride;  /* elements, >= dim */
} rmsnorm_tensor;

typedef struct {
  int64_t rows;        /* R >= 0; R = 0 is a no-op */
  int64_t dim;         /* D >= 1 */
  rmsnorm_tensor x;    /* input; under the fused add the residual stream, overwritten by RN(x + o) */
  rmsnorm_tensor o;    /* fused add: the sub-layer output; o.data == NULL for a plain forward */
  rmsnorm_tensor y;    /* output; may alias x (plain) or o (fused add) exactly */
  const void* g;       /* weight [D]; NULL only with RMSNORM_NO_WEIGHT */
  int32_t g_dtype;
  int32_t convention;  /* rmsnorm_convention */
  int32_t quant;       /* rmsnorm_quant; y is e4m3/e5m2 when not NONE */
  float eps;           /* >= 0, inside the root */
  float* rstd;         /* output [R], fp32 r of each row; may be NULL */
  float* scale;        /* see rmsnorm_quant; NULL without quantization */
  void* stream;        /* cudaStream_t for device kernels; NULL on the host */
} rmsnorm_forward_args;

typedef struct {
  int64_t rows;
  int64_t dim;
  rmsnorm_tensor x;          /* the forward's input */
  rmsnorm_tensor dy;         /* incoming gradient, x's type */
  rmsnorm_tensor dx;         /* output, x's type; may alias dy exactly */
  rmsnorm_tensor dresidual;  /* fused-add backward: added to dx; data == NULL: plain backward */
  const void* g;
  int32_t g_dtype;
  int32_t convention;
  const float* rstd;         /* [R], the forward's r */
  void* dg;                  /* output [D] or NULL (not wanted) */
  int32_t dg_dtype;
  float eps;
  void* workspace;           /* scratch of workspace_bytes(R, D) bytes, in the kernel's memory */
  size_t workspace_bytes;
  void* stream;
} rmsnorm_backward_args;

/* Entry points: return an rmsnorm_status and, when not OK, write a NUL-terminated reason of at
 * most message_size bytes into message. */
typedef int32_t (*rmsnorm_forward_fn)(const rmsnorm_forward_args* args, char* message, size_t message_size);
typedef int32_t (*rmsnorm_backward_fn)(const rmsnorm_backward_args* args, char* message, size_t message_size);

/* The shape of the kernel's floating-point reduction over a row of `n` terms (or over the R rows
 * of a dg column): each participant adds per_thread terms in sequence, then partials meet in a
 * tree of depth tree_depth. The judge's tolerance follows from it (docs/contract.md#accumulation-shape);
 * it is accepted only with 1 <= per_thread <= n and 0 <= tree_depth <= 64. Return 0 on success. */
typedef int32_t (*rmsnorm_shape_fn)(int64_t n, int64_t* per_thread, int32_t* tree_depth);

typedef struct {
  const char* name;         /* [A-Za-z0-9_-]+, unique within the library */
  const char* description;  /* one line; may be NULL */
  uint32_t ops;             /* bits (1u << rmsnorm_op), plus the RMSNORM_OPS_* flags */
  int32_t memory;           /* rmsnorm_memory */
  uint32_t dtypes;          /* bits (1u << rmsnorm_dtype) of x accepted (f32, f16, bf16); 0: all */
  uint32_t conventions;     /* bits (1u << rmsnorm_convention); 0: all */
  uint32_t quant_modes;     /* bits (1u << rmsnorm_quant) of the FP8 modes; 0: all */
  int64_t min_dim, max_dim; /* declared D range; 0: no bound */
  uint32_t alignment;       /* bytes every base pointer and row pitch must be a multiple of; 0: none */
  int32_t packed_rows;      /* non-zero: only rows with stride == dim */
  rmsnorm_shape_fn row_shape; /* optional; NULL: judged as a sequential sum of D terms */
  rmsnorm_shape_fn dg_shape;  /* optional; NULL: judged as a sequential sum of R terms */
  rmsnorm_forward_fn forward;   /* required when ops has a forward op */
  rmsnorm_backward_fn backward; /* required when ops has a backward op */
  /* Optional: bytes of backward scratch for R rows of D columns; NULL: none. */
  size_t (*workspace_bytes)(int64_t rows, int64_t dim);
} rmsnorm_plugin_kernel;

typedef struct {
  uint32_t abi_version;  /* RMSNORM_PLUGIN_ABI_VERSION */
  const char* name;      /* [A-Za-z0-9_-]+: kernels register as plugin.<name>.<kernel> */
  uint32_t kernel_count;
  const rmsnorm_plugin_kernel* kernels;
} rmsnorm_plugin;

typedef const rmsnorm_plugin* (*rmsnorm_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* RMSNORM_PLUGIN_H */
