#include "properties/generators.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "rmsnorm/formats.h"

namespace generators {

std::size_t RngChooser::pick(const std::vector<unsigned>& weights) {
  std::uint64_t total = 0;
  for (unsigned w : weights) total += w;
  if (total == 0) return 0;
  std::uint64_t r = rng_.below(total);
  std::size_t i = 0;
  while (r >= weights[i]) r -= weights[i++];
  return i;
}

std::int64_t RngChooser::between(std::int64_t lo, std::int64_t hi) { return rng_.between(lo, hi); }

// ---------------------------------------------------------------------------------------------
// Drawing cases
// ---------------------------------------------------------------------------------------------
namespace {

const std::vector<std::int64_t> kVectorEdges = {7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
                                                127, 128, 129, 255, 256, 257, 511, 512, 513};
const std::vector<std::int64_t> kBig = {1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 8191,
                                        8192, 8193, 16383, 16384, 16385, 32768, 65535, 65536, 65537};

std::int64_t draw_dim(Chooser& ch, const Domain& d) {
  std::int64_t dim = 1;
  switch (d.dims) {
    case Domain::Dims::small: dim = ch.between(1, 64); break;
    case Domain::Dims::tails8: {
      static const std::vector<std::int64_t> kBase = {0, 8, 16, 32, 64, 256, 1024, 4096, 8192};
      dim = choose(ch, kBase) + ch.between(0, 7);
      break;
    }
    case Domain::Dims::tails128: {
      static const std::vector<std::int64_t> kBase = {0, 128, 256, 512, 1024, 4096};
      dim = choose(ch, kBase) + ch.between(0, 127);
      break;
    }
    case Domain::Dims::any:
    default:
      switch (ch.pick({6, 3, 2, 2})) {
        case 0: dim = ch.between(1, 33); break;
        case 1: dim = choose(ch, kVectorEdges); break;
        case 2: dim = ch.between(34, 1024); break;
        default: dim = choose(ch, kBig); break;
      }
  }
  return std::clamp(dim, std::max<std::int64_t>(1, d.min_dim), d.max_dim);
}

std::int64_t draw_rows(Chooser& ch, const Domain& d, std::int64_t dim) {
  std::int64_t rows = 0;
  switch (ch.pick({1, 4, 4, 2, 1})) {
    case 0: rows = 0; break;
    case 1: rows = 1; break;
    case 2: rows = ch.between(2, 8); break;
    case 3: rows = ch.between(9, 64); break;
    default: rows = ch.between(65, 300); break;
  }
  const std::int64_t cap = std::max<std::int64_t>(d.min_rows, std::min(d.max_rows, d.max_elements / dim));
  return std::clamp(rows, d.min_rows, std::max(cap, d.min_rows));
}

// Pads in elements. Multiples of 8 keep every row start 16-byte aligned whenever D·size is, so
// the vector paths see strided rows with poisoned gaps too (not only the scalar path).
std::int64_t draw_pad(Chooser& ch) {
  switch (ch.pick({3, 3, 3, 1})) {
    case 0: return 0;
    case 1: return ch.between(1, 8);
    case 2: return 8 * ch.between(1, 4);
    default: return ch.between(9, 64);
  }
}

// Offsets are whole elements (harness::Layout; a misaligned *element* would be outside the
// contract): 0, or 1..15/size elements, which moves the base 1..15 bytes off the 16-byte vector
// boundary.
std::int64_t draw_offset(Chooser& ch, DType t) {
  const std::int64_t size = static_cast<std::int64_t>(rmsnorm::size_of(t));
  if (15 / size < 1 || ch.pick({1, 2}) == 0) return 0;
  return ch.between(1, 15 / size);
}

// D rounded up to a multiple of 8 (one 16-byte vector of 16-bit elements), or down when that
// leaves [lo, hi]: rows of such a width keep 16-byte alignment under 8k-element pads.
std::int64_t round_dim_to_vector(std::int64_t dim, std::int64_t lo, std::int64_t hi) {
  const std::int64_t up = (dim + 7) / 8 * 8;
  if (up <= hi) return up;
  return std::max<std::int64_t>(std::max<std::int64_t>(8, lo), dim / 8 * 8);
}
std::int64_t round_dim_to_vector(std::int64_t dim, const Domain& d) { return round_dim_to_vector(dim, 1, d.max_dim); }

bool has_quant(Op op) { return op == Op::forward_quant || op == Op::add_forward_quant; }

// Elements of the narrowest row tensor of `op` in one 16-byte vector: 8 for 16-bit rows (fp32
// rows take two vectors), 16 when the output is FP8.
std::int64_t vector_elements(Op op) { return has_quant(op) ? 16 : 8; }

// A width in [lo, hi]: its ends, the edges and big widths inside it, or any up to lo + 4096.
std::int64_t draw_dim_in(Chooser& ch, std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> marks = {lo, hi};
  for (const auto* list : {&kVectorEdges, &kBig})
    for (std::int64_t x : *list)
      if (x > lo && x < hi) marks.push_back(x);
  if (ch.pick({2, 1}) == 0) return choose(ch, marks);
  return ch.between(lo, std::min(hi, lo + 4096));
}

}  // namespace

std::string Domain::aim_at(const rmsnorm::Variant& v) {
  Domain a = *this;
  a.target_min_dim = v.min_dim;
  a.target_max_dim = v.max_dim;
  a.target_f32_min_dim = v.min_dim_for(DType::f32);
  a.target_f32_max_dim = v.max_dim_for(DType::f32);
  a.target_f32_add_max_dim = v.max_dim_for(DType::f32, /*add=*/true);
  a.target_aligned = v.aligned_rows;
  a.target_packed = v.packed_rows;
  a.target_shared_frame = v.shared_frame;
  a.target_quant_16bit_rows = v.quant_16bit_rows;
  if (v.same_type_weights) a.g_f32 = false;
  a.target_dg_weight_type = v.dg_weight_type;
  // A range that starts past the domain's widest draw moves the domain up to it.
  const std::int64_t lowest = std::min(v.min_dim_for(DType::bf16), v.min_dim_for(DType::f32));
  const std::int64_t highest = std::max(v.max_dim_for(DType::bf16), v.max_dim_for(DType::f32));
  if (lowest > a.max_dim) a.max_dim = std::min(highest, lowest + 4096);
  // Only what it claims: false when nothing of the domain's list is claimed.
  auto keep = [](auto& items, std::uint32_t claimed) {
    if (claimed == 0) return true;
    auto kept = items;
    kept.clear();
    for (const auto& i : items)
      if ((claimed >> static_cast<int>(i)) & 1u) kept.push_back(i);
    if (kept.empty()) return false;
    items = kept;
    return true;
  };
  auto names = [](const auto& items) {
    std::vector<std::string> seen;
    std::string out;
    for (const auto& i : items) {
      const std::string n = rmsnorm::to_string(i);
      if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
      seen.push_back(n);
      out += (out.empty() ? "" : ", ") + n;
    }
    return out;
  };
  if (!keep(a.x_types, v.dtypes)) return v.name + " claims none of the input types drawn (" + names(x_types) + ")";
  if (!keep(a.conventions, v.conventions)) return v.name + " claims none of the conventions drawn (" + names(conventions) + ")";
  // FP8 ops need a claimed FP8 mode and a convention other than llama (llama has no FP8 output).
  const bool fp8_reachable =
      keep(a.quants, v.quant_modes) &&
      std::any_of(a.conventions.begin(), a.conventions.end(), [](Convention c) { return c != Convention::llama; }) &&
      (!v.quant_16bit_rows ||
       std::any_of(a.x_types.begin(), a.x_types.end(), [](DType t) { return rmsnorm::size_of(t) == 2; }));
  if (!fp8_reachable) {
    a.ops.erase(std::remove_if(a.ops.begin(), a.ops.end(), [](Op op) { return has_quant(op); }), a.ops.end());
    if (a.ops.empty())
      return v.name + " claims none of the FP8 modes drawn (" + names(quants) +
             ") with a convention that has FP8 outputs" + (v.quant_16bit_rows ? " and 16-bit rows" : "");
  }
  bool widths = false;
  for (const DType t : a.x_types)
    widths = widths || std::max(a.min_dim, v.min_dim_for(t)) <= std::min(a.max_dim, v.max_dim_for(t));
  if (!widths)
    return v.name + " declares no width in " + std::to_string(a.min_dim) + " <= D <= " + std::to_string(a.max_dim) + " for the types drawn";
  *this = a;
  return "";
}

std::int64_t aim_dim(const Domain& d, Op op, DType x_type, std::int64_t dim, std::int64_t step) {
  std::int64_t lo = std::max<std::int64_t>(1, d.min_dim), hi = d.max_dim, vec = 1;
  if (d.target_max_dim > 0) {
    const bool f32 = x_type == DType::f32 && d.target_f32_max_dim > 0;
    const std::int64_t t_lo = f32 ? d.target_f32_min_dim : d.target_min_dim;
    const bool add = rmsnorm::has_residual(op);
    const std::int64_t f32_hi = add && d.target_f32_add_max_dim > 0 ? d.target_f32_add_max_dim : d.target_f32_max_dim;
    const std::int64_t t_hi = f32 ? f32_hi : d.target_max_dim;
    if (std::max(lo, t_lo) <= std::min(hi, t_hi)) lo = std::max(lo, t_lo), hi = std::min(hi, t_hi);
    // Without pads a row stride is D itself: only a vector multiple keeps every row aligned.
    if (d.target_aligned && !d.layouts) vec = vector_elements(op);
  }
  step = std::max<std::int64_t>(step, 1);
  dim = (dim + vec - 1) / vec * vec;
  if (dim < lo) dim += (lo - dim + step - 1) / step * step;
  if (dim > hi) dim -= (dim - hi + step - 1) / step * step;
  dim = std::clamp(dim, lo, hi);
  if (dim % vec != 0) {
    const std::int64_t up = (dim + vec - 1) / vec * vec, down = dim / vec * vec;
    if (up <= hi) dim = up;
    else if (down >= lo) dim = down;
  }
  return dim;
}

void align_rows(harness::Case& c) {
  auto top_up = [&](std::int64_t& pad, DType t) {
    const std::int64_t per = 16 / static_cast<std::int64_t>(rmsnorm::size_of(t));  // elements per 16 bytes
    pad += (per - (c.dim + pad) % per) % per;
  };
  harness::Layout& l = c.layout;
  l.x_offset = l.o_offset = l.y_offset = l.g_offset = l.dy_offset = l.dx_offset = l.dres_offset = 0;
  top_up(l.x_pad, c.x_type);
  if (c.is_forward()) {
    if (c.has_add()) top_up(l.o_pad, c.x_type);
    top_up(l.y_pad, c.y_type);
    if (l.in_place) l.y_pad = c.op == Op::add_forward ? l.o_pad : l.x_pad;
  } else {
    top_up(l.dy_pad, c.x_type);
    top_up(l.dx_pad, c.x_type);
    if (c.op == Op::add_backward) top_up(l.dres_pad, c.x_type);
    if (l.in_place) l.dx_pad = l.dy_pad;
  }
}

harness::Case draw_case(Chooser& ch, const Domain& d) {
  harness::Case c;
  c.op = choose(ch, d.ops);
  c.dim = draw_dim(ch, d);
  // Aim at the variant under test (Domain::target_*): its range, and aligned rows if it needs them.
  // The width is drawn in the union of the 16-bit and fp32 ranges, then moved into the range of
  // the drawn type and onto the vector (aim_dim; no further draws: the rest of the case is what
  // it would be otherwise).
  bool aimed = false;
  if (d.target_max_dim > 0) {
    const std::int64_t f32_lo = d.target_f32_max_dim > 0 ? d.target_f32_min_dim : d.target_min_dim;
    const std::int64_t f32_hi = d.target_f32_max_dim > 0 ? d.target_f32_max_dim : d.target_max_dim;
    const std::int64_t lo = std::max({std::min(d.target_min_dim, f32_lo), d.min_dim, std::int64_t{1}});
    const std::int64_t hi = std::min(std::max(d.target_max_dim, f32_hi), d.max_dim);
    const bool outside = c.dim < lo || c.dim > hi;
    if (lo <= hi && (outside || d.target_aligned || d.target_packed || d.target_shared_frame) && ch.pick({d.target_always ? 0u : 2u, 1u}) == 1) {
      aimed = true;
      if (outside) c.dim = draw_dim_in(ch, lo, hi);
    }
  }
  const bool aimed_aligned = aimed && d.target_aligned;
  c.rows = draw_rows(ch, d, c.dim);
  c.x_type = choose(ch, d.x_types);
  // An FP8 output of a target that takes them from 16-bit rows only: fp32 rows become the first
  // 16-bit type drawn (no further draw; aim_at() keeps FP8 ops only where there is one).
  if (aimed && d.target_quant_16bit_rows && c.has_quant() && c.x_type == DType::f32) {
    const auto b16 = std::find_if(d.x_types.begin(), d.x_types.end(), [](DType t) { return rmsnorm::size_of(t) == 2; });
    if (b16 != d.x_types.end()) c.x_type = *b16;
  }
  if (aimed) {
    const std::int64_t dim = aim_dim(d, c.op, c.x_type, c.dim);
    if (dim != c.dim) {
      c.dim = dim;
      const std::int64_t cap = std::max<std::int64_t>(1, d.max_elements / c.dim);
      if (c.rows > cap) c.rows = std::max(cap, d.min_rows);
    }
  }
  c.g_type = (d.g_f32 && c.x_type != DType::f32 && ch.pick({3, 1}) == 1) ? DType::f32 : c.x_type;
  c.convention = choose(ch, d.conventions);
  const std::vector<unsigned> eps_weights = [&] {
    std::vector<unsigned> w(d.eps_values.size(), 1u);
    if (!w.empty()) w[0] = 3;
    return w;
  }();
  c.eps = d.eps_values[ch.pick(eps_weights)];
  if (c.has_quant()) {
    // llama rounds y to the input type: it has no FP8 output. The first other convention of the
    // domain instead (standard unless the domain leaves it out).
    if (c.convention == Convention::llama) {
      c.convention = Convention::standard;
      for (const Convention k : d.conventions)
        if (k != Convention::llama) {
          c.convention = k;
          break;
        }
    }
    c.quant = choose(ch, d.quants);
    c.y_type = d.fp8_types[ch.pick(d.fp8_types.size() > 1 ? std::vector<unsigned>{3, 1} : std::vector<unsigned>{1})];
    if (c.quant == Quant::static_scale) {
      static const std::vector<float> kScales = {1.0f, 0.015625f, 4.0f, 0.0302734375f};
      c.static_scale = choose(ch, kScales);
    }
  } else {
    c.quant = Quant::none;
    c.y_type = c.x_type;
  }
  // The pick is drawn whatever the target, so that aiming never shifts the draws after it.
  const bool dg_of_g = !c.is_forward() && c.g_type != DType::f32 && ch.pick({3, 1}) == 1;
  c.dg_type = dg_of_g || (d.target_dg_weight_type && !c.is_forward()) ? c.g_type : DType::f32;

  if (d.layouts) {
    const std::size_t kind = d.force_layout ? 3 : ch.pick({5, 2, 2, 2});
    // A draw aimed at a variant of packed rows has no pads (its offsets stay: misaligned bases).
    const bool pads = (kind == 1 || kind == 3) && !(aimed && d.target_packed), offsets = kind == 2 || kind == 3;
    // A forced layout (P8, P15) is, half the time, strided but 16-byte aligned throughout: pads
    // of 8k elements, no offsets, D a multiple of 8. Otherwise nearly every draw is misaligned
    // somewhere and the vector paths decline it (seen on the H200: P15 checked 0 of 40 cases
    // on fwd.large_d, reported as a pass).
    const bool aligned = aimed_aligned || (d.force_layout && ch.pick({1, 1}) == 0);
    if (aligned && !aimed_aligned) c.dim = round_dim_to_vector(c.dim, d);
    harness::Layout& l = c.layout;
    // Aligned pads keep every row tensor on 16-byte rows: 16 elements per vector of FP8 rows
    // for an aimed draw (a plugin's alignment holds for its FP8 output too).
    const std::int64_t pad_unit = aimed_aligned ? vector_elements(c.op) : 8;
    auto pad = [&]() -> std::int64_t {
      if (!pads) return 0;
      if (aligned) return pad_unit * ch.between(1, 4);
      return d.force_layout ? 1 + draw_pad(ch) : draw_pad(ch);
    };
    auto off = [&](DType t) -> std::int64_t { return offsets && !aligned ? draw_offset(ch, t) : 0; };
    l.x_pad = pad();
    l.x_offset = off(c.x_type);
    l.g_offset = off(c.g_type);
    if (c.is_forward()) {
      if (c.has_add()) {
        l.o_pad = pad();
        l.o_offset = off(c.x_type);
      }
      l.y_pad = pad();
      l.y_offset = off(c.y_type);
      // One frame for a target that needs it: o and y take x's geometry in elements. An FP8 y of
      // 16-bit rows then shares it too (x's lead in elements is y's offset mod 8 bytes); fp32 rows
      // with FP8 outputs have no such frame and are declined.
      if (aimed && d.target_shared_frame && (!c.has_quant() || rmsnorm::size_of(c.x_type) == 2)) {
        l.o_pad = c.has_add() ? l.x_pad : 0;
        l.o_offset = c.has_add() ? l.x_offset : 0;
        l.y_pad = l.x_pad;
        l.y_offset = l.x_offset;
      }
    } else {
      l.dy_pad = pad();
      l.dy_offset = off(c.x_type);
      l.dx_pad = pad();
      l.dx_offset = off(c.x_type);
      if (c.op == Op::add_backward) {
        l.dres_pad = pad();
        l.dres_offset = off(c.x_type);
      }
    }
  }
  const bool can_alias = !c.has_quant();
  if (d.in_place && can_alias && ch.pick({3, 1}) == 1) {
    harness::Layout& l = c.layout;
    l.in_place = true;
    // The alias is the same buffer: the output takes its input's geometry.
    if (c.op == Op::forward) { l.y_pad = l.x_pad; l.y_offset = l.x_offset; }
    if (c.op == Op::add_forward) { l.y_pad = l.o_pad; l.y_offset = l.o_offset; }
    if (!c.is_forward()) { l.dx_pad = l.dy_pad; l.dx_offset = l.dy_offset; }
  }

  if (aimed_aligned && d.layouts) align_rows(c);

  c.generator = kRegimeGenerator;
  c.seed = ch.seed();
  std::vector<Regime> x_regimes = d.x_regimes;
  if (c.eps == 0.0f) x_regimes.erase(std::remove(x_regimes.begin(), x_regimes.end(), Regime::zeros), x_regimes.end());
  if (x_regimes.empty()) x_regimes.push_back(Regime::normal);
  c.x_regime = to_string(choose(ch, x_regimes));
  if (c.has_add() && c.is_forward()) {
    static const std::vector<Regime> kO = {Regime::normal, Regime::outliers, Regime::tiny, Regime::large};
    c.o_regime = to_string(choose(ch, kO));
  }
  c.g_regime = to_string(choose(ch, d.g_regimes));
  if (!c.is_forward()) c.dy_regime = to_string(choose(ch, d.dy_regimes));
  return c;
}

std::string dim_class(std::int64_t dim) {
  if (dim == 1) return "D=1";
  if (dim <= 33) return "D<=33";
  if (dim >= 65536) return "D>=65536";
  if (dim > 1024) return "D>1024";
  if (dim % 8 == 0) return "D<=1024,8|D";
  return "D<=1024,odd8";
}

std::string rows_class(std::int64_t rows) {
  if (rows == 0) return "R=0";
  if (rows == 1) return "R=1";
  if (rows <= 8) return "R<=8";
  if (rows <= 64) return "R<=64";
  return "R>64";
}

std::string layout_class(const harness::Layout& l) {
  const bool pads = l.x_pad || l.o_pad || l.y_pad || l.dy_pad || l.dx_pad || l.dres_pad;
  const bool mis = (l.x_offset | l.o_offset | l.y_offset | l.g_offset | l.dy_offset | l.dx_offset | l.dres_offset) % 16 != 0;
  std::string s = pads ? (mis ? "strided+misaligned" : "strided") : (mis ? "misaligned" : "dense");
  if (l.in_place) s += "+in_place";
  return s;
}

}  // namespace generators
