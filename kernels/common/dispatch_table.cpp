// The dispatch table (rmsnorm/dispatch.h). Every figure is from one NVIDIA H200 (132 SMs) unless
// its reason begins "H100" (one NVIDIA H100 80GB HBM3, 132 SMs); bf16 rows unless said otherwise,
// timed by `rmsnorm-bench` beside the variants it competes with in the same run; "A/B x" is the
// other variant's time over this one's, "of the copy" the ratio to a device-to-device copy of the
// same bytes. fp16 rows take the bf16 rule: the same kernels and sizes. A range's end between two
// measured widths whose leaders differ is their midpoint.
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "rmsnorm/dispatch.h"
#include "rmsnorm/validate.h"
#include "rmsnorm/variant.h"

namespace rmsnorm::dispatch {
namespace {

constexpr std::uint32_t bit(Op o) { return 1u << static_cast<int>(o); }
constexpr std::uint32_t kFwd = bit(Op::forward), kAdd = bit(Op::add_forward), kFp8 = bit(Op::forward_quant),
                        kAddFp8 = bit(Op::add_forward_quant), kAnyFp8 = kFp8 | kAddFp8,
                        kPlainOrAdd = kFwd | kAdd, kAllFwd = kFwd | kAdd | kFp8 | kAddFp8,
                        kBwd = bit(Op::backward), kAddBwd = bit(Op::add_backward), kAllBwd = kBwd | kAddBwd;
constexpr Range kAll{};
constexpr Range from(std::int64_t lo) { return {lo, kNoLimit}; }
constexpr Range upto(std::int64_t hi) { return {0, hi}; }

constexpr bool kTake = true, kPass = false;
using W = Width;

const std::vector<Rule> kRules = {
    // fwd.block_row.staged (FP8 outputs only): fwd.block_row's kernel and bits on a persistent grid.
    {"fwd.block_row.staged", kAnyFp8, W::b16, {512, 2047}, from(7169), When::always, kTake,
     "leads fwd.block_row only here: 1.02-1.03x at 512 x 8192; block_row leads from R = 4096 (1.11-1.37x) and at 512 x 6144"},

    // fwd.block_row: wherever it implements, but the lean-y FP8 kernel (16-bit rows past 8192) needs rows,
    // except in the plain FP8 forward of few rows (one block a row, no cluster or shared-memory row).
    {"fwd.block_row", kFp8, W::b16, upto(256), {8193, 16384}, When::always, kTake,
     "H100, the FP8 forward at R = 1-256 x D = 9216-16384: per token 1.17-1.45x the best of fwd.large_d, the pair and fwd.cluster_row, per block 1.07-1.24x (static not timed)"},
    {"fwd.block_row", kAnyFp8, W::b16, upto(1023), from(8193), When::always, kPass,
     "below R = 1024 the pair or fwd.large_d lead (R = 512: 1-7 %); from 1024 rows add + FP8 0.68-0.95 of the copy against the pair's 0.58-0.78"},
    {"fwd.block_row", kAllFwd, W::any, kAll, kAll, When::always, kTake, "the register-resident row: the default where it implements"},

    // fwd.cluster_row: a row over an 8-CTA cluster, for few wide rows.
    {"fwd.cluster_row", kAnyFp8, W::b16, upto(16), from(16384), When::always, kTake,
     "R = 1-16: FP8 1.03-2.21x fwd.large_d, add + FP8 1.08-2.43x (graph replay); at R = 64 fwd.large_d leads 1.07-1.17x"},
    {"fwd.cluster_row", kAdd, W::b16, {64, 64}, from(32769), When::always, kPass,
     "the fused add at R = 64 past D = 32768 runs faster on fwd.large_d (D = 49152: 1.16-1.17x)"},
    {"fwd.cluster_row", kPlainOrAdd, W::b16, upto(64), from(16385), When::always, kTake,
     "R = 1-16: 1.27-2.41x the better of fwd.large_d and the pair (one row over 8 SMs); R = 64: 1.01-1.13x"},

    // fwd.bulk_ring: rows streamed into a shared-memory ring by bulk copies.
    {"fwd.bulk_ring", kAdd, W::b16, from(512), {40961, 65536}, When::always, kTake,
     "the fused add at D = 65536: 0.85-0.91 of the copy, 1.03-1.11x the better of fwd.large_d and the pair"},
    {"fwd.bulk_ring", kFwd, W::b16, from(4096), {40961, 57344}, When::weights16, kTake,
     "the forward with staged 16-bit weights at D = 49152: 0.75-0.78 of the copy against 0.71-0.73 (1.06-1.07x); 65536 stays on fwd.large_d"},

    // fwd.large_d.pair: fwd.large_d with two 512-thread blocks per SM; needs two rows per SM.
    {"fwd.large_d.pair", kAnyFp8, W::b16, from(256), upto(32768), When::always, kTake,
     "FP8 rows to 64 KB: 1.02-1.19x fwd.large_d from R = 256 (R = 128: 0.62 against 0.65 of the copy)"},
    {"fwd.large_d.pair", kFp8, W::b16, from(512), {32769, 65536}, When::always, kTake,
     "the FP8 forward to 128 KB rows from R = 512: 1.02-1.19x fwd.large_d"},
    {"fwd.large_d.pair", kAddFp8, W::b16, from(512), {32769, 40960}, When::always, kTake,
     "add + FP8 to 80 KB rows: at D = 40960 0.71-0.86 of the copy against 0.69-0.78; at 65536 fwd.large_d leads from R = 4096"},
    {"fwd.large_d.pair", kAddFp8, W::f32, from(4096), {8193, 16384}, When::always, kPass,
     "fp32 add + FP8 of rows over 32 KB from R = 4096 runs faster on fwd.large_d (D = 20000: 1.01-1.03x, 32768: 1.06-1.07x)"},
    {"fwd.large_d.pair", kAnyFp8, W::f32, from(256), upto(16384), When::always, kTake,
     "fp32 FP8 rows to 64 KB: 1.09-1.38x fwd.large_d"},
    {"fwd.large_d.pair", kFwd, W::b16, {256, 512}, upto(49152), When::always, kTake,
     "the forward at R = 256-512: 1.01-1.14x fwd.large_d for every D from 16392 to 49152"},
    {"fwd.large_d.pair", kFwd, W::b16, from(513), {28673, 40000}, When::always, kTake,
     "H100, the forward at 4096-8192 x 32768: 0.975-1.002 of the copy against fwd.large_d's 0.872-0.892 (H200: a tie at 32768, 1.12-1.13x at 40000, fwd.large_d 1.02-1.08x at 20000-24576)"},
    {"fwd.large_d.pair", kAdd, W::b16, from(512), upto(32768), When::always, kTake,
     "the fused add of 16384 < D <= 32768: 1.04-1.11x fwd.large_d at R = 512 and 32768"},

    // fwd.shifted_row: rows sharing one 16-byte frame, the weights at the block's lead.
    {"fwd.shifted_row", kFwd, W::b16, from(4096), {1025, 4097}, When::always, kTake,
     "1.02-1.19x fwd.packed_rows from R = 4096 (32768 x 1025: 0.66 of the copy against 0.60-0.62)"},
    {"fwd.shifted_row", kFwd, W::b16, from(16384), from(4098), When::always, kTake,
     "D = 6145-8191: 1.09-1.17x fwd.packed_rows at R = 32768, a tie at 8192 rows, 0.94-0.95x at 4096"},
    {"fwd.shifted_row", kFp8, W::b16, from(8192), {1025, 1536}, When::always, kTake,
     "the FP8 forward at D = 1025 from R = 8192: per token 1.15-1.22x, static 1.21-1.23x, per block 1.00-1.03x the next variant; at 2047 per token fwd.element_row.realigned leads (1.18-1.23x) and per block fwd.packed_rows (1.10-1.12x)"},
    {"fwd.shifted_row", kFp8, W::b16, from(8192), {1537, 6656}, When::static_scale, kTake,
     "the static FP8 forward from R = 8192: 1.04-1.07x the next variant at D = 2047, 1.11-1.28x at 4097 and 5121; at 8191 fwd.packed_rows, 0.95-1.04x"},
    {"fwd.shifted_row", kFp8, W::b16, from(8192), {3073, 6656}, When::per_block, kTake,
     "the FP8 forward per block from R = 8192: 1.13-1.21x fwd.packed_rows at D = 4097 and 5121 (2047 and 8191: 0.85-0.91x)"},

    // fwd.packed_rows: tiles of packed rows through shared-memory stages.
    {"fwd.packed_rows", kAddFp8, W::f32, from(1024), from(4097), When::always, kTake,
     "fp32 add + FP8 from D = 4097: 1.06-1.88x the better of fwd.element_row.realigned and fwd.element_row"},
    {"fwd.packed_rows", kAddFp8, W::b16, from(4096), kAll, When::always, kTake,
     "bf16 add + FP8 per token 1.04-1.30x from R = 4096 (32768 x 1025: 0.41 of the copy against 0.31-0.32); per block 1.46-1.98x"},
    {"fwd.packed_rows", kAddFp8, W::b16, from(1024), from(1025), When::always, kTake,
     "bf16 add + FP8 at R = 1024-2048 from D = 1025: 1.02-1.23x (0.88-0.91x at 513)"},
    {"fwd.packed_rows", kFp8, W::b16, from(8192), {6657, 8191}, When::static_scale, kTake,
     "the static FP8 forward at D = 8191 from R = 8192: 1.24-1.30x fwd.element_row.realigned (per token 1.03-1.04x, within one run's spread: not taken)"},
    {"fwd.packed_rows", kFp8, W::b16, from(4096), kAll, When::per_block, kTake,
     "the FP8 forward per block of 128: 1.39-2.06x; per token and static 0.78-1.00x, not taken"},
    {"fwd.packed_rows", kFwd, W::b16, from(512), kAll, When::always, kTake,
     "the 16-bit forward from R = 512: 1.00-1.07x the next variant (0.99x at 2048 x 1537)"},
    {"fwd.packed_rows", kFwd, W::f32, from(8192), upto(4097), When::always, kTake,
     "the fp32 forward to D = 4097: 1.03-1.10x at R = 32768, 0.97-1.04x at 4096"},
    {"fwd.packed_rows", kAdd, W::b16, from(4096), kAll, When::always, kTake,
     "the 16-bit fused add from R = 4096: 1.24-1.61x the better of fwd.element_row.realigned and fwd.element_row"},
    {"fwd.packed_rows", kAdd, W::b16, from(512), from(4097), When::always, kTake,
     "the 16-bit fused add at R = 512 from D = 4097: 1.08-1.24x (0.87-0.97x below)"},
    {"fwd.packed_rows", kAdd, W::f32, from(4096), from(4097), When::always, kTake,
     "the fp32 fused add from D = 4097: 1.11-1.19x at 4096 rows (0.85-1.06x below D = 4097)"},

    // fwd.element_row.realigned: fwd.element_row's kernel and bits, the row moved in 16-byte vectors.
    {"fwd.element_row.realigned", kAllFwd, W::b16, from(8192), kAll, When::always, kTake,
     "16-bit rows from R = 8192: 0.81-0.96x fwd.element_row's time for the forward and fused add, 0.50-0.78x with FP8"},

    // bwd.staged_streams: SMs programs of 2-6 row streams.
    {"bwd.staged_streams", kAllBwd, W::b16, from(1024), kAll, When::always, kTake,
     "from R = 2048 1.02-1.11x bwd.staged_rows; at 1024 within 0.94-1.07x; at 512 bwd.staged_rows leads (1.05-1.11x)"},

    // bwd.staged_cluster: cluster slices with staged rows.
    {"bwd.staged_cluster", kAllBwd, W::b16, upto(32), {8193, 16384}, When::always, kTake,
     "R = 1-32 at D = 12288-16384: 1.06-1.47x bwd.staged_rows; from R = 128 bwd.staged_rows leads 1.08-1.90x"},
    {"bwd.staged_cluster", kAllBwd, W::f32, upto(32), {4097, 8192}, When::always, kTake,
     "fp32 D = 8192 at R = 1-16: 1.08-1.35x bwd.staged_rows; from R = 64 bwd.staged_rows leads"},
    {"bwd.staged_cluster", kBwd, W::b16, from(2), from(16385), When::always, kTake,
     "16-bit rows past 16384: 1.15-1.22x bwd.cluster_rows from 4096 rows, 1.03-1.14x from R = 4; at R = 1 bwd.cluster_rows leads"},
    {"bwd.staged_cluster", kAddBwd, W::b16, kAll, from(16385), When::always, kTake,
     "the fused-add backward past 16384: 1.02-1.11x bwd.cluster_rows from R = 64 (0.97-0.98x at R = 1 only)"},

    // bwd.packed_rows: packed rows that are not all 16-byte aligned.
    {"bwd.packed_rows", kAllBwd, W::any, kAll, upto(512), When::misaligned, kPass,
     "D <= 512: a warp per row on bwd.persistent_rows is enough (D = 257: 0.73-1.01x)"},
    {"bwd.packed_rows", kAllBwd, W::any, kAll, from(2561), When::misaligned, kTake,
     "from D = 2561 (D = 3073: 1.02-2.14x bwd.persistent_rows at every R)"},
    {"bwd.packed_rows", kAllBwd, W::b16, from(2048), kAll, When::misaligned, kTake,
     "16-bit D = 513-2560 from R = 2048: 1.16-2.70x bwd.persistent_rows"},
    {"bwd.packed_rows", kAllBwd, W::b16, from(512), from(1025), When::misaligned, kTake,
     "16-bit from R = 512 at D >= 1025: 1.01-1.46x (R = 1-64: 0.53-0.80x, the one-block-per-SM set-up costs more)"},
    {"bwd.packed_rows", kAllBwd, W::f32, from(512), kAll, When::misaligned, kTake,
     "fp32 from R = 512: 1.05-2.04x bwd.persistent_rows"},
    {"bwd.packed_rows", kAllBwd, W::f32, kAll, from(2049), When::misaligned, kTake,
     "fp32 at any R from D = 2049: 1.15-1.64x at R = 64 (0.77-0.85x below)"},
};

}  // namespace

const std::vector<Rule>& rules() { return kRules; }

bool backward_views_aligned(const BackwardArgs& a, std::size_t bytes) {
  if (!rows_aligned(a.x, bytes) || !rows_aligned(a.dy, bytes) || !rows_aligned(a.dx, bytes)) return false;
  if (a.dresidual.data && !rows_aligned(a.dresidual, bytes)) return false;
  return a.convention == Convention::no_weight || reinterpret_cast<std::uintptr_t>(a.g) % bytes == 0;
}

namespace {
template <typename Args>
Query shape_query(const Args& a) {
  Query q;
  q.op = op_of(a);
  q.x_type = a.x.type;
  q.rows = a.rows;
  q.dim = a.dim;
  q.weights16 = size_of(a.convention == Convention::no_weight ? a.x.type : a.g_type) == 2;
  return q;
}
}  // namespace

Query query_of(const ForwardArgs& a) {
  Query q = shape_query(a);
  q.per_block = a.quant == Quant::per_block;
  q.static_scale = a.quant == Quant::static_scale;
  return q;
}

Query query_of(const BackwardArgs& a) {
  Query q = shape_query(a);
  q.misaligned = !backward_views_aligned(a, 16);
  return q;
}

bool matches(const Rule& r, const Query& q) {
  if (!(r.ops & (1u << static_cast<int>(q.op)))) return false;
  if (r.width == Width::b16 && size_of(q.x_type) != 2) return false;
  if (r.width == Width::f32 && q.x_type != DType::f32) return false;
  if (!r.rows.contains(q.rows) || !r.dim.contains(q.dim)) return false;
  switch (r.when) {
    case When::always: return true;
    case When::weights16: return q.weights16;
    case When::per_block: return q.per_block;
    case When::static_scale: return q.static_scale;
    case When::misaligned: return q.misaligned;
  }
  return false;
}

namespace {
// Each variant's rows, found by one hash lookup: the dispatcher asks for every variant it passes
// on every call. The rows of a variant are contiguous (test_dispatch checks it).
struct Span {
  std::size_t begin = 0, end = 0;
};
const Span* rows_of(const char* variant) {
  static const std::unordered_map<std::string_view, Span> spans = [] {
    std::unordered_map<std::string_view, Span> m;
    for (std::size_t i = 0; i < kRules.size(); ++i) {
      const auto [it, fresh] = m.try_emplace(kRules[i].variant, Span{i, i + 1});
      if (!fresh) it->second.end = i + 1;
    }
    return m;
  }();
  const auto it = spans.find(variant);
  return it == spans.end() ? nullptr : &it->second;
}
}  // namespace

const Rule* deciding_rule(const char* variant, const Query& q) {
  const Span* span = rows_of(variant);
  if (!span) return nullptr;
  for (std::size_t i = span->begin; i < span->end; ++i)
    if (std::strcmp(kRules[i].variant, variant) == 0 && matches(kRules[i], q)) return &kRules[i];
  return nullptr;
}

bool has_rules(const char* variant) { return rows_of(variant) != nullptr; }

bool prefers(const Variant& v, const Query& q) {
  if (v.is_mutant() || v.external || !has_rules(v.name.c_str())) return true;
  const Rule* r = deciding_rule(v.name.c_str(), q);
  return r != nullptr && r->take;
}

}  // namespace rmsnorm::dispatch
