// Argument checks shared by every launcher (docs/contract.md#arguments): each variant calls these
// first, then adds its own capability checks in can_implement(). Nothing here touches the buffers.
#pragma once

#include <cstdint>

#include "rmsnorm/types.h"

namespace rmsnorm {

// The contract's checks for a forward op: shapes, strides, eps, dtype combination, null
// pointers, overlap. ok() or the first violation with its reason.
Status validate(const ForwardArgs& a);
Status validate(const BackwardArgs& a);

// Bytes spanned by a [rows, dim] view with row stride `stride` elements of `elem` bytes
// (0 when rows == 0). Saturates instead of overflowing.
std::uint64_t span_bytes(std::int64_t rows, std::int64_t dim, std::int64_t stride, std::size_t elem);

// True when [a, a+na) and [b, b+nb) share a byte.
bool overlaps(const void* a, std::uint64_t na, const void* b, std::uint64_t nb);

// True when every row start of the view and the base are `bytes`-aligned (row stride included).
bool rows_aligned(const Tensor& t, std::size_t bytes);

}  // namespace rmsnorm
