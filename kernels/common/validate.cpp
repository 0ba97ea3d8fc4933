#include "rmsnorm/validate.h"

#include <cmath>
#include <limits>
#include <string>

namespace rmsnorm {
namespace {

using Code = Status::Code;

bool is_activation_type(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

Status check_view(const char* name, const Tensor& t, std::int64_t rows, std::int64_t dim) {
  if (t.stride < dim)
    return Status::fail(Code::invalid_argument, std::string(name) + ".stride (" + std::to_string(t.stride) +
                                                    ") < D (" + std::to_string(dim) + ")");
  // The last element touched is (rows-1)·stride + dim - 1; keep every byte offset within int64.
  const double last = (static_cast<double>(rows) - 1.0) * static_cast<double>(t.stride) + static_cast<double>(dim);
  if (rows > 0 && last * static_cast<double>(size_of(t.type)) > 9.0e18)
    return Status::fail(Code::invalid_argument, std::string(name) + ": R·stride overflows 64-bit offsets");
  if (rows > 0 && t.data == nullptr)
    return Status::fail(Code::invalid_argument, std::string(name) + " is null");
  if (reinterpret_cast<std::uintptr_t>(t.data) % size_of(t.type) != 0)
    return Status::fail(Code::invalid_argument, std::string(name) + " is not aligned to its element size");
  return Status::success();
}

std::uint64_t view_bytes(const Tensor& t, std::int64_t rows, std::int64_t dim) {
  return span_bytes(rows, dim, t.stride, size_of(t.type));
}

// Two views may be the very same buffer (identical pointer, stride and element size) when the
// contract allows in-place, otherwise they may not share a byte.
Status check_pair(const char* na, const Tensor& a, const char* nb, const Tensor& b, std::int64_t rows,
                  std::int64_t dim, bool identical_ok) {
  if (a.data == nullptr || b.data == nullptr) return Status::success();
  const bool identical = a.data == b.data && a.stride == b.stride && size_of(a.type) == size_of(b.type);
  if (identical && identical_ok) return Status::success();
  if (overlaps(a.data, view_bytes(a, rows, dim), b.data, view_bytes(b, rows, dim)))
    return Status::fail(Code::bad_overlap, std::string(na) + " overlaps " + nb +
                                               (identical_ok ? " (only exact in-place aliasing is allowed)" : ""));
  return Status::success();
}

Status check_vec(const char* na, const void* a, std::uint64_t na_bytes, const char* nb, const void* b,
                 std::uint64_t nb_bytes) {
  if (a && b && overlaps(a, na_bytes, b, nb_bytes))
    return Status::fail(Code::bad_overlap, std::string(na) + " overlaps " + nb);
  return Status::success();
}

Status check_eps(float eps) {
  if (std::isnan(eps)) return Status::fail(Code::invalid_argument, "eps is NaN");
  if (eps < 0.0f) return Status::fail(Code::invalid_argument, "eps < 0");
  if (std::isinf(eps)) return Status::fail(Code::invalid_argument, "eps is infinite");
  return Status::success();
}

Status check_weight(const void* g, DType g_type, DType x_type, Convention c, std::int64_t rows) {
  if (c != Convention::no_weight) {
    if (rows > 0 && g == nullptr) return Status::fail(Code::invalid_argument, "g is null (only no_weight allows it)");
    if (g_type != x_type && g_type != DType::f32)
      return Status::fail(Code::invalid_argument, std::string("g type ") + to_string(g_type) +
                                                      " must be the input type or f32");
  }
  return Status::success();
}

#define RMSNORM_TRY(expr)            \
  do {                               \
    Status s_ = (expr);              \
    if (!s_.ok()) return s_;         \
  } while (0)

}  // namespace

std::uint64_t span_bytes(std::int64_t rows, std::int64_t dim, std::int64_t stride, std::size_t elem) {
  if (rows <= 0 || dim <= 0) return 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t r1 = static_cast<std::uint64_t>(rows - 1), s = static_cast<std::uint64_t>(stride);
  if (s != 0 && r1 > (kMax - static_cast<std::uint64_t>(dim)) / s) return kMax;
  const std::uint64_t n = r1 * s + static_cast<std::uint64_t>(dim);
  return n > kMax / elem ? kMax : n * elem;
}

bool overlaps(const void* a, std::uint64_t na, const void* b, std::uint64_t nb) {
  if (na == 0 || nb == 0) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + nb && pb < pa + na;
}

bool rows_aligned(const Tensor& t, std::size_t bytes) {
  const auto p = reinterpret_cast<std::uintptr_t>(t.data);
  return p % bytes == 0 && (static_cast<std::uint64_t>(t.stride) * size_of(t.type)) % bytes == 0;
}

Status validate(const ForwardArgs& a) {
  if (a.rows < 0) return Status::fail(Code::invalid_argument, "R < 0");
  if (a.dim < 1) return Status::fail(Code::invalid_argument, "D must be >= 1 (got " + std::to_string(a.dim) + ")");
  RMSNORM_TRY(check_eps(a.eps));
  if (!is_activation_type(a.x.type))
    return Status::fail(Code::invalid_argument, std::string("x type ") + to_string(a.x.type) + " is not f32/f16/bf16");
  const bool add = a.o.data != nullptr;
  if (add && a.o.type != a.x.type) return Status::fail(Code::invalid_argument, "o type must equal x type");
  if (a.quant == Quant::none) {
    if (a.y.type != a.x.type)
      return Status::fail(Code::invalid_argument, std::string("y type ") + to_string(a.y.type) +
                                                      " must equal x type without quantization");
  } else {
    if (!is_fp8(a.y.type))
      return Status::fail(Code::invalid_argument, "quantized y must be e4m3 or e5m2");
    if (a.rows > 0 && a.scale == nullptr) return Status::fail(Code::invalid_argument, "scale is null");
  }
  RMSNORM_TRY(check_weight(a.g, a.g_type, a.x.type, a.convention, a.rows));
  RMSNORM_TRY(check_view("x", a.x, a.rows, a.dim));
  if (add) RMSNORM_TRY(check_view("o", a.o, a.rows, a.dim));
  RMSNORM_TRY(check_view("y", a.y, a.rows, a.dim));
  if (a.rows == 0) return Status::success();

  // Aliasing (docs/contract.md#arguments): y may be the input itself (x, or o under fused add);
  // nothing else.
  RMSNORM_TRY(check_pair("y", a.y, "x", a.x, a.rows, a.dim, /*identical_ok=*/!add && a.quant == Quant::none));
  if (add) {
    RMSNORM_TRY(check_pair("y", a.y, "o", a.o, a.rows, a.dim, /*identical_ok=*/a.quant == Quant::none));
    RMSNORM_TRY(check_pair("o", a.o, "x", a.x, a.rows, a.dim, false));
  }
  const std::uint64_t rstd_bytes = a.rstd ? static_cast<std::uint64_t>(a.rows) * 4 : 0;
  std::uint64_t scale_bytes = 0;
  if (a.quant == Quant::static_scale) scale_bytes = 4;
  if (a.quant == Quant::dynamic_token) scale_bytes = static_cast<std::uint64_t>(a.rows) * 4;
  if (a.quant == Quant::per_block) scale_bytes = static_cast<std::uint64_t>(a.rows * quant_groups(a.dim)) * 4;
  const std::uint64_t g_bytes = a.g ? static_cast<std::uint64_t>(a.dim) * size_of(a.g_type) : 0;
  const struct { const char* n; const void* p; std::uint64_t b; } outs[] = {
      {"y", a.y.data, view_bytes(a.y, a.rows, a.dim)},
      {"rstd", a.rstd, rstd_bytes},
      {"scale", a.quant == Quant::static_scale ? nullptr : a.scale, scale_bytes},
      {"x", add ? a.x.data : nullptr, view_bytes(a.x, a.rows, a.dim)},  // x is written under fused add
  };
  const struct { const char* n; const void* p; std::uint64_t b; } ins[] = {
      {"g", a.g, g_bytes},
      {"static scale", a.quant == Quant::static_scale ? a.scale : nullptr, scale_bytes},
      {"rstd", a.rstd, rstd_bytes},
      {"scale", a.quant == Quant::static_scale ? nullptr : a.scale, scale_bytes},
      {"x", a.x.data, view_bytes(a.x, a.rows, a.dim)},
      {"o", a.o.data, view_bytes(a.o, a.rows, a.dim)},
  };
  // Every written buffer against every other buffer, except the view pairs checked above.
  for (const auto& w : outs) {
    if (!w.p) continue;
    for (const auto& r : ins) {
      if (!r.p || r.p == w.p) continue;
      const bool view_pair = (w.p == a.y.data || w.p == a.x.data) && (r.p == a.x.data || r.p == a.o.data);
      if (view_pair) continue;
      RMSNORM_TRY(check_vec(w.n, w.p, w.b, r.n, r.p, r.b));
    }
  }
  if (a.rstd && a.scale && a.quant != Quant::none)
    RMSNORM_TRY(check_vec("rstd", a.rstd, rstd_bytes, "scale", a.scale, scale_bytes));
  return Status::success();
}

Status validate(const BackwardArgs& a) {
  if (a.rows < 0) return Status::fail(Code::invalid_argument, "R < 0");
  if (a.dim < 1) return Status::fail(Code::invalid_argument, "D must be >= 1 (got " + std::to_string(a.dim) + ")");
  RMSNORM_TRY(check_eps(a.eps));
  if (!is_activation_type(a.x.type))
    return Status::fail(Code::invalid_argument, std::string("x type ") + to_string(a.x.type) + " is not f32/f16/bf16");
  if (a.dy.type != a.x.type || a.dx.type != a.x.type)
    return Status::fail(Code::invalid_argument, "dy and dx must have x's type");
  const bool add = a.dresidual.data != nullptr;
  if (add && a.dresidual.type != a.x.type) return Status::fail(Code::invalid_argument, "dresidual must have x's type");
  RMSNORM_TRY(check_weight(a.g, a.g_type, a.x.type, a.convention, a.rows));
  if (a.dg && a.dg_type != DType::f32 && a.dg_type != a.g_type)
    return Status::fail(Code::invalid_argument, "dg type must be f32 or g's type");
  RMSNORM_TRY(check_view("x", a.x, a.rows, a.dim));
  RMSNORM_TRY(check_view("dy", a.dy, a.rows, a.dim));
  RMSNORM_TRY(check_view("dx", a.dx, a.rows, a.dim));
  if (add) RMSNORM_TRY(check_view("dresidual", a.dresidual, a.rows, a.dim));
  if (a.rows == 0) return Status::success();
  if (a.rstd == nullptr) return Status::fail(Code::invalid_argument, "rstd is null");
  RMSNORM_TRY(check_pair("dx", a.dx, "dy", a.dy, a.rows, a.dim, true));
  RMSNORM_TRY(check_pair("dx", a.dx, "x", a.x, a.rows, a.dim, false));
  if (add) RMSNORM_TRY(check_pair("dx", a.dx, "dresidual", a.dresidual, a.rows, a.dim, true));
  const std::uint64_t dxb = view_bytes(a.dx, a.rows, a.dim);
  const std::uint64_t dgb = a.dg ? static_cast<std::uint64_t>(a.dim) * size_of(a.dg_type) : 0;
  const std::uint64_t gb = a.g ? static_cast<std::uint64_t>(a.dim) * size_of(a.g_type) : 0;
  RMSNORM_TRY(check_vec("dx", a.dx.data, dxb, "g", a.g, gb));
  RMSNORM_TRY(check_vec("dx", a.dx.data, dxb, "rstd", a.rstd, static_cast<std::uint64_t>(a.rows) * 4));
  RMSNORM_TRY(check_vec("dx", a.dx.data, dxb, "dg", a.dg, dgb));
  if (a.dg) {
    RMSNORM_TRY(check_vec("dg", a.dg, dgb, "x", a.x.data, view_bytes(a.x, a.rows, a.dim)));
    RMSNORM_TRY(check_vec("dg", a.dg, dgb, "dy", a.dy.data, view_bytes(a.dy, a.rows, a.dim)));
    RMSNORM_TRY(check_vec("dg", a.dg, dgb, "g", a.g, gb));
    RMSNORM_TRY(check_vec("dg", a.dg, dgb, "rstd", a.rstd, static_cast<std::uint64_t>(a.rows) * 4));
    RMSNORM_TRY(check_vec("dg", a.dg, dgb, "workspace", a.workspace, a.workspace_bytes));
  }
  return Status::success();
}

}  // namespace rmsnorm
