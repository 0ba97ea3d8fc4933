// The plugin ABI's argument structs (include/rmsnorm/plugin.h) and the C++ API's (types.h), field
// for field, both ways: every C face of a kernel (plugins, librmsnorm_c, the reference plugin)
// converts through here. The enum values are the same on both sides (plugin.h says so).
#pragma once

#include "rmsnorm/plugin.h"
#include "rmsnorm/types.h"

namespace rmsnorm {

inline Tensor from_abi(const rmsnorm_tensor& t) { return {t.data, static_cast<DType>(t.dtype), t.stride}; }
inline rmsnorm_tensor to_abi(const Tensor& t) { return {t.data, static_cast<std::int32_t>(t.type), t.stride}; }

inline ForwardArgs from_abi(const rmsnorm_forward_args& c) {
  ForwardArgs a;
  a.rows = c.rows;
  a.dim = c.dim;
  a.x = from_abi(c.x);
  a.o = from_abi(c.o);
  a.y = from_abi(c.y);
  a.g = c.g;
  a.g_type = static_cast<DType>(c.g_dtype);
  a.convention = static_cast<Convention>(c.convention);
  a.quant = static_cast<Quant>(c.quant);
  a.eps = c.eps;
  a.rstd = c.rstd;
  a.scale = c.scale;
  a.stream = c.stream;
  return a;
}

inline rmsnorm_forward_args to_abi(const ForwardArgs& a) {
  rmsnorm_forward_args c{};
  c.rows = a.rows;
  c.dim = a.dim;
  c.x = to_abi(a.x);
  c.o = to_abi(a.o);
  c.y = to_abi(a.y);
  c.g = a.g;
  c.g_dtype = static_cast<std::int32_t>(a.g_type);
  c.convention = static_cast<std::int32_t>(a.convention);
  c.quant = static_cast<std::int32_t>(a.quant);
  c.eps = a.eps;
  c.rstd = a.rstd;
  c.scale = a.scale;
  c.stream = a.stream;
  return c;
}

inline BackwardArgs from_abi(const rmsnorm_backward_args& c) {
  BackwardArgs a;
  a.rows = c.rows;
  a.dim = c.dim;
  a.x = from_abi(c.x);
  a.dy = from_abi(c.dy);
  a.dx = from_abi(c.dx);
  a.dresidual = from_abi(c.dresidual);
  a.g = c.g;
  a.g_type = static_cast<DType>(c.g_dtype);
  a.convention = static_cast<Convention>(c.convention);
  a.rstd = c.rstd;
  a.dg = c.dg;
  a.dg_type = static_cast<DType>(c.dg_dtype);
  a.eps = c.eps;
  a.workspace = c.workspace;
  a.workspace_bytes = c.workspace_bytes;
  a.stream = c.stream;
  return a;
}

inline rmsnorm_backward_args to_abi(const BackwardArgs& a) {
  rmsnorm_backward_args c{};
  c.rows = a.rows;
  c.dim = a.dim;
  c.x = to_abi(a.x);
  c.dy = to_abi(a.dy);
  c.dx = to_abi(a.dx);
  c.dresidual = to_abi(a.dresidual);
  c.g = a.g;
  c.g_dtype = static_cast<std::int32_t>(a.g_type);
  c.convention = static_cast<std::int32_t>(a.convention);
  c.rstd = a.rstd;
  c.dg = a.dg;
  c.dg_dtype = static_cast<std::int32_t>(a.dg_type);
  c.eps = a.eps;
  c.workspace = a.workspace;
  c.workspace_bytes = a.workspace_bytes;
  c.stream = a.stream;
  return c;
}

}  // namespace rmsnorm
