// The default dispatcher's policy as data: where several product variants implement the same
// arguments, which one it prefers. The dispatcher walks the variants in registration order and
// takes the first that implements the arguments and that its rules prefer. A variant without a
// rule is taken wherever it implements; a variant with rules is taken only where its first
// matching rule says so (no matching rule: passed over). Every threshold the dispatcher uses is a
// row of the one table in dispatch_table.cpp, with the measurement that set it.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "rmsnorm/types.h"

namespace rmsnorm {
struct Variant;
}

namespace rmsnorm::dispatch {

inline constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();

// The rows' element type: any, 16-bit (bf16 and f16: the same kernels, the same sizes) or fp32.
enum class Width : std::uint8_t { any, b16, f32 };
// A condition beyond op, width and shape.
enum class When : std::uint8_t {
  always,
  weights16,     // the weights are 16-bit (or there are none and the rows are 16-bit)
  per_block,     // FP8 scales per block of 128
  static_scale,  // FP8 outputs with a given scale (no amax to find)
  misaligned,    // some view the backward moves in 16-byte vectors is not 16-byte aligned
};

struct Range {
  std::int64_t lo = 0, hi = kNoLimit;  // inclusive
  bool contains(std::int64_t v) const { return v >= lo && v <= hi; }
};

struct Rule {
  const char* variant;
  std::uint32_t ops;  // bit i: Op(i)
  Width width;
  Range rows, dim;
  When when;
  bool take;           // true: prefer the variant here; false: pass it over
  const char* reason;  // the measurement (one run, ratios; the card in dispatch_table.cpp) behind the rule
};

// The table, grouped by variant in registration order; within a variant the first match decides.
const std::vector<Rule>& rules();

// What the arguments are, as the rules see them.
struct Query {
  Op op = Op::forward;
  DType x_type = DType::bf16;
  std::int64_t rows = 0, dim = 0;
  bool weights16 = false, per_block = false, static_scale = false, misaligned = false;
};
Query query_of(const ForwardArgs& a);
Query query_of(const BackwardArgs& a);

bool matches(const Rule& r, const Query& q);
// The rule of `variant` that decides `q` (its first match), or null when none matches.
const Rule* deciding_rule(const char* variant, const Query& q);
bool has_rules(const char* variant);
// Whether the dispatcher may take `v` for `q` (given that v implements it).
bool prefers(const Variant& v, const Query& q);

// Every view the backward reads or writes with 16-byte vectors (x, dy, dx, dresidual and g where
// present) starts each row on a `bytes` boundary.
bool backward_views_aligned(const BackwardArgs& a, std::size_t bytes);

}  // namespace rmsnorm::dispatch
