// Arguments for capability checks and dispatch choices with nothing behind the pointers: dense
// rows of width `dim`, each tensor at its own 16-byte aligned address 64 GiB from the next (no
// two views overlap for any D the variants take), never dereferenced. can_implement() and the
// dispatchers read arguments only; nothing may run on these.
#pragma once
#include <cstddef>
#include <cstdint>

#include "rmsnorm/types.h"

namespace harness {

inline void* probe_address(std::uintptr_t k) { return reinterpret_cast<void*>(k << 36); }

// Forward (fp8: a dynamic per-token E4M3 output; add: the fused residual add). g has x's type.
inline rmsnorm::ForwardArgs probe_forward(rmsnorm::DType x, std::int64_t rows, std::int64_t dim, bool fp8 = false,
                                          bool add = false) {
  rmsnorm::ForwardArgs a;
  a.rows = rows;
  a.dim = dim;
  a.x = {probe_address(1), x, dim};
  if (add) a.o = {probe_address(2), x, dim};
  a.y = {probe_address(3), fp8 ? rmsnorm::DType::e4m3 : x, dim};
  a.g = probe_address(4);
  a.g_type = x;
  a.rstd = static_cast<float*>(probe_address(5));
  if (fp8) {
    a.quant = rmsnorm::Quant::dynamic_token;
    a.scale = static_cast<float*>(probe_address(6));
  }
  return a;
}

// Backward (add: the fused residual-add backward). workspace_bytes > 0: dg wanted, with that
// much workspace; 0: no dg.
inline rmsnorm::BackwardArgs probe_backward(rmsnorm::DType x, std::int64_t rows, std::int64_t dim, bool add = false,
                                            std::size_t workspace_bytes = 0) {
  rmsnorm::BackwardArgs a;
  a.rows = rows;
  a.dim = dim;
  a.x = {probe_address(1), x, dim};
  a.dy = {probe_address(2), x, dim};
  a.dx = {probe_address(3), x, dim};
  if (add) a.dresidual = {probe_address(4), x, dim};
  a.g = probe_address(5);
  a.g_type = x;
  a.rstd = static_cast<const float*>(probe_address(6));
  if (workspace_bytes > 0) {
    a.dg = probe_address(7);
    a.workspace = probe_address(8);
    a.workspace_bytes = workspace_bytes;
  }
  return a;
}

}  // namespace harness
