#include "generators.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "rmsnorm/formats.h"

namespace generators {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Round once to t; the regimes never ask for a value beyond t's range.
float in_type(double v, DType t) { return static_cast<float>(rmsnorm::round_to(v, t)); }

double type_max(DType t) { return rmsnorm::traits_of(t).max_finite; }

// A random subnormal of t (non-zero): m · 2^(emin - mantissa), m in [1, 2^mantissa).
double random_subnormal(DType t, Rng& rng) {
  const rmsnorm::FormatTraits& f = rmsnorm::traits_of(t);
  const std::uint64_t m = 1 + rng.below((std::uint64_t{1} << f.mantissa_bits) - 1);
  const double v = std::ldexp(static_cast<double>(m), f.emin() - f.mantissa_bits);
  return rng.chance(1, 2) ? -v : v;
}

double normal_value(Rng& rng) {
  const int e = static_cast<int>(rng.between(-3, 3));
  double v = rng.normal() * std::ldexp(1.0, e);
  if (std::fabs(v) < 1e-3) v = v < 0 ? -1e-3 : 1e-3;  // stay away from the type's tiny end
  return v;
}

// Regimes a mixed row may pick, first the commonest.
Regime mixed_row_regime(Rng& rng, float eps) {
  static const Regime kFinite[] = {Regime::normal, Regime::tiny,  Regime::constant, Regime::outliers,
                                   Regime::large,  Regime::zeros, Regime::subnormal, Regime::huge};
  static const unsigned kWeights[] = {6, 2, 1, 2, 1, 1, 1, 1};
  for (;;) {
    std::uint64_t total = 0;
    for (unsigned w : kWeights) total += w;
    std::uint64_t r = rng.below(total);
    std::size_t i = 0;
    while (r >= kWeights[i]) r -= kWeights[i++];
    if (kFinite[i] == Regime::zeros && eps == 0.0f) continue;
    return kFinite[i];
  }
}

}  // namespace

Rng::Rng(std::uint64_t seed) {
  std::uint64_t st = seed;
  for (auto& s : s_) s = splitmix64(st);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::uint64_t Rng::below(std::uint64_t n) {
  if (n <= 1) return 0;
  // Rejection keeps it exactly uniform.
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  std::uint64_t v;
  do v = next();
  while (v >= limit);
  return v % n;
}

std::int64_t Rng::between(std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

bool Rng::chance(unsigned num, unsigned den) { return below(den) < num; }

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  std::uint64_t st = seed ^ (stream * 0xd1b54a32d192ed03ull);
  std::uint64_t a = splitmix64(st);
  st = a ^ (index * 0x8cb92ba72f3d8dd7ull);
  return splitmix64(st);
}

namespace {
constexpr const char* kRegimeNames[] = {"normal", "tiny",  "constant", "outliers", "large",
                                        "zeros",  "subnormal", "huge", "special",  "mixed",
                                        "ones",   "random", "per_channel", "with_zeros"};
constexpr int kRegimeCount = static_cast<int>(sizeof kRegimeNames / sizeof kRegimeNames[0]);
}  // namespace

const char* to_string(Regime r) {
  const int i = static_cast<int>(r);
  return i < kRegimeCount ? kRegimeNames[i] : "?";
}

bool parse(const std::string& s, Regime& out) {
  for (int i = 0; i < kRegimeCount; ++i)
    if (s == kRegimeNames[i]) {
      out = static_cast<Regime>(i);
      return true;
    }
  return false;
}

bool is_row_regime(Regime r) { return static_cast<int>(r) <= static_cast<int>(Regime::mixed); }
bool is_weight_regime(Regime r) { return static_cast<int>(r) >= static_cast<int>(Regime::ones); }

std::vector<float> gen_row_values(Regime r, std::int64_t dim, DType t, float eps, Rng& rng) {
  std::vector<float> row(static_cast<std::size_t>(dim));
  const double tmax = type_max(t);
  if (r == Regime::mixed) r = mixed_row_regime(rng, eps);
  if (r == Regime::zeros && eps == 0.0f) r = Regime::tiny;  // never NaN rows by accident
  switch (r) {
    case Regime::tiny:
      for (auto& v : row) v = in_type((rng.chance(1, 2) ? -1.0 : 1.0) * 1e-4 * (0.5 + 1.5 * rng.uniform()), t);
      break;
    case Regime::constant: {
      static const double kValues[] = {1.0, -3.5, 1e-3, 300.0, 0.1, -1.0};
      const double c = kValues[rng.below(6)];
      for (auto& v : row) v = in_type(c, t);
      break;
    }
    case Regime::outliers: {
      for (auto& v : row) v = in_type(normal_value(rng), t);
      const std::int64_t n = 1 + rng.between(0, std::min<std::int64_t>(2, dim - 1));
      for (std::int64_t k = 0; k < n; ++k) {
        const std::size_t j = static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(dim)));
        const double big = std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.between(8, 12)));
        row[j] = in_type(std::min(big, tmax) * (rng.chance(1, 2) ? -1.0 : 1.0), t);
      }
      break;
    }
    case Regime::large: {
      // Values whose squares overflow fp16 (300² = 90000 > 65504) but not fp32.
      static const double kValues[] = {300.0, 256.0, 65504.0, 65472.0, 32768.0, 1000.0, 4096.0, 300.5};
      for (auto& v : row) {
        double m = kValues[rng.below(8)];
        if (rng.chance(1, 4)) m = 100.0 + rng.uniform() * 65000.0;
        v = in_type(std::min(m, tmax) * (rng.chance(1, 2) ? -1.0 : 1.0), t);
      }
      break;
    }
    case Regime::zeros:
      for (auto& v : row) v = rng.chance(1, 2) ? -0.0f : 0.0f;
      break;
    case Regime::subnormal: {
      // A row of only subnormals has Σx² far below fp32's normals unless the type is fp16:
      // with eps = 0 that row's exact r overflows fp32, outside the guaranteed domain.
      const bool whole_row = (eps > 0.0f || t == DType::f16) && rng.chance(1, 4);
      for (auto& v : row) v = (whole_row || rng.chance(1, 2)) ? in_type(random_subnormal(t, rng), t) : in_type(normal_value(rng), t);
      if (!whole_row && eps == 0.0f && t != DType::f16) row[0] = in_type(normal_value(rng), t);
      break;
    }
    case Regime::huge: {
      if (t == DType::f16) return gen_row_values(Regime::large, dim, t, eps, rng);
      // D·x² <= 2^125 keeps Σx² and every partial sum finite in fp32.
      const int log2d = static_cast<int>(std::ceil(std::log2(static_cast<double>(dim))));
      const int emax = (125 - log2d) / 2 - 1;
      for (auto& v : row) {
        const int e = static_cast<int>(rng.between(emax - 8, emax));
        v = in_type(std::ldexp(1.0 + rng.uniform(), e) * (rng.chance(1, 2) ? -1.0 : 1.0), t);
      }
      break;
    }
    case Regime::special: {
      for (auto& v : row) v = in_type(normal_value(rng), t);
      if (rng.chance(1, 2)) {
        const std::int64_t n = 1 + rng.between(0, std::min<std::int64_t>(1, dim - 1));
        for (std::int64_t k = 0; k < n; ++k) {
          const std::size_t j = static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(dim)));
          const std::uint64_t kind = rng.below(3);
          row[j] = kind == 0 ? std::numeric_limits<float>::quiet_NaN()
                   : kind == 1 ? std::numeric_limits<float>::infinity()
                               : -std::numeric_limits<float>::infinity();
        }
      }
      break;
    }
    case Regime::ones:
      for (auto& v : row) v = 1.0f;
      break;
    case Regime::normal:
    default:
      for (auto& v : row) v = in_type(normal_value(rng), t);
      break;
  }
  return row;
}

std::vector<float> gen_weight(Regime r, std::int64_t dim, DType t, Rng& rng) {
  std::vector<float> g(static_cast<std::size_t>(dim));
  for (std::int64_t j = 0; j < dim; ++j) {
    double v;
    switch (r) {
      case Regime::ones: v = 1.0; break;
      case Regime::per_channel: v = 0.25 + static_cast<double>(j % 61) / 16.0 + rng.uniform() / 64.0; break;
      case Regime::with_zeros: v = rng.chance(1, 4) ? 0.0 : -2.0 + 4.0 * rng.uniform(); break;
      case Regime::random:
      default: v = -2.0 + 4.0 * rng.uniform(); break;
    }
    g[static_cast<std::size_t>(j)] = in_type(v, t);
  }
  return g;
}

std::vector<float> gen_matrix(Regime r, std::int64_t rows, std::int64_t dim, DType t, float eps, std::uint64_t seed,
                              std::uint64_t stream) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(rows * dim));
  for (std::int64_t i = 0; i < rows; ++i) {
    Rng rng(mix_seed(seed, stream, static_cast<std::uint64_t>(i)));
    const std::vector<float> row = gen_row_values(r, dim, t, eps, rng);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

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

harness::Case draw_case(Chooser& ch, const Domain& d) {
  harness::Case c;
  c.op = choose(ch, d.ops);
  c.dim = draw_dim(ch, d);
  // Aim at the variant under test (Domain::target_*): its range, and aligned rows if it needs them.
  // The width is drawn in the union of the 16-bit and fp32 ranges, then moved into the range of
  // the drawn type (no further draws: the rest of the case is what it would be otherwise).
  bool aimed = false, aimed_aligned = false;
  auto range_lo = [&](std::int64_t t) { return std::max({t, d.min_dim, std::int64_t{1}}); };
  if (d.target_max_dim > 0) {
    const std::int64_t f32_lo = d.target_f32_max_dim > 0 ? d.target_f32_min_dim : d.target_min_dim;
    const std::int64_t f32_hi = d.target_f32_max_dim > 0 ? d.target_f32_max_dim : d.target_max_dim;
    const std::int64_t lo = range_lo(std::min(d.target_min_dim, f32_lo));
    const std::int64_t hi = std::min(std::max(d.target_max_dim, f32_hi), d.max_dim);
    const bool outside = c.dim < lo || c.dim > hi;
    if (lo <= hi && (outside || d.target_aligned || d.target_packed) && ch.pick({d.target_always ? 0u : 2u, 1u}) == 1) {
      aimed = true;
      if (outside) c.dim = draw_dim_in(ch, lo, hi);
      if (d.target_aligned && hi >= 8) {
        c.dim = round_dim_to_vector(c.dim, lo, hi);
        aimed_aligned = true;
      }
    }
  }
  c.rows = draw_rows(ch, d, c.dim);
  c.x_type = choose(ch, d.x_types);
  if (aimed) {
    const bool f32 = c.x_type == DType::f32 && d.target_f32_max_dim > 0;
    const std::int64_t lo = range_lo(f32 ? d.target_f32_min_dim : d.target_min_dim);
    const std::int64_t hi = std::min(f32 ? d.target_f32_max_dim : d.target_max_dim, d.max_dim);
    if (lo <= hi && (c.dim < lo || c.dim > hi)) {
      c.dim = std::clamp(c.dim, lo, hi);
      if (aimed_aligned) c.dim = round_dim_to_vector(c.dim, lo, hi);
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
    // llama rounds y to the input type: it has no FP8 output.
    if (c.convention == Convention::llama) c.convention = Convention::standard;
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
  c.dg_type = (!c.is_forward() && c.g_type != DType::f32 && ch.pick({3, 1}) == 1) ? c.g_type : DType::f32;

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
    auto pad = [&]() -> std::int64_t {
      if (!pads) return 0;
      if (aligned) return 8 * ch.between(1, 4);
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

// The case file's hook: materialize a generator + seed case through the regimes above.
namespace harness {

bool generate_values(const Case& c, CaseValues& out, std::string& error) {
  using generators::Regime;
  if (c.generator != generators::kRegimeGenerator) {
    error = "unknown generator '" + c.generator + "' (known: regimes)";
    return false;
  }
  Regime xr, orr, gr, dyr;
  if (!generators::parse(c.x_regime, xr) || !generators::is_row_regime(xr)) {
    error = "unknown x.regime '" + c.x_regime + "'";
    return false;
  }
  if (!generators::parse(c.o_regime, orr) || !generators::is_row_regime(orr)) {
    error = "unknown o.regime '" + c.o_regime + "'";
    return false;
  }
  if (!generators::parse(c.g_regime, gr) || !generators::is_weight_regime(gr)) {
    error = "unknown g.regime '" + c.g_regime + "'";
    return false;
  }
  if (!generators::parse(c.dy_regime, dyr) || (!generators::is_row_regime(dyr) && dyr != Regime::ones)) {
    error = "unknown dy.regime '" + c.dy_regime + "'";
    return false;
  }
  // Streams: 1 x, 2 o, 3 g, 4 dy, 5 dresidual.
  out.x = generators::gen_matrix(xr, c.rows, c.dim, c.x_type, c.eps, c.seed, 1);
  if (c.has_add() && c.is_forward()) out.o = generators::gen_matrix(orr, c.rows, c.dim, c.x_type, c.eps, c.seed, 2);
  generators::Rng grng(generators::mix_seed(c.seed, 3, 0));
  out.g = generators::gen_weight(gr, c.dim, c.g_type, grng);
  if (!c.is_forward()) {
    out.dy = generators::gen_matrix(dyr, c.rows, c.dim, c.x_type, 1.0f, c.seed, 4);
    if (c.op == rmsnorm::Op::add_backward)
      out.dresidual = generators::gen_matrix(Regime::normal, c.rows, c.dim, c.x_type, 1.0f, c.seed, 5);
  }
  out.rstd = c.rstd;
  error.clear();
  return true;
}

}  // namespace harness
