/* The product's kernels behind a C interface (librmsnorm_c.so), for callers without C++: the
 * PyTorch ops of python/rmsnorm_cert/torch.py call it through ctypes. The arguments are the
 * plugin ABI's structs (plugin.h); the dispatcher picks the variant, exactly as the C++ API's
 * rmsnorm::pick_forward / pick_backward do, and its name is handed back. */
#ifndef RMSNORM_C_H
#define RMSNORM_C_H

#include <stddef.h>
#include <stdint.h>

#include "rmsnorm/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* memory: RMSNORM_MEMORY_DEVICE (CUDA variants, on args->stream) or RMSNORM_MEMORY_HOST (the host
 * reference). Returns an rmsnorm_status; `variant` (may be NULL) gets the name of the variant
 * that ran, `message` the reason of anything but OK. */
int32_t rmsnorm_c_forward(const rmsnorm_forward_args* args, int32_t memory, char* variant, size_t variant_size,
                          char* message, size_t message_size);
int32_t rmsnorm_c_backward(const rmsnorm_backward_args* args, int32_t memory, char* variant, size_t variant_size,
                           char* message, size_t message_size);
/* Scratch the backward needs for R rows of D columns (args->workspace), in that memory. */
size_t rmsnorm_c_backward_workspace_bytes(int64_t rows, int64_t dim, int32_t memory);

#ifdef __cplusplus
}
#endif

#endif /* RMSNORM_C_H */
