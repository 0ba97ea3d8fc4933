// Storage formats on the host: bit-exact encode/decode for f32, f16, bf16, E4M3 ("fn") and
// E5M2, and their traits. These are the rounding models of the oracle and the host variant;
// they must agree bit for bit with CUDA's host conversions (cuda_fp16.h, cuda_bf16.h,
// cuda_fp8.h) — oracle/tests/test_formats.cpp checks that, exhaustively under [slow].
//
// Every float is exactly a double, so one routine rounds a double to any format once
// (round to nearest, ties to even): float → format through it has no double rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "rmsnorm/types.h"

namespace rmsnorm {

// What the rounding does beyond the largest finite value.
enum class Overflow : std::uint8_t {
  ieee,       // to ±infinity (f16, bf16, f32, E5M2 without saturation)
  nan,        // to NaN (E4M3 "fn" has no infinity: CUDA's __NV_NOSAT gives NaN)
  saturate,   // to ±max finite (CUDA's __NV_SATFINITE), and ±inf → ±max
};

// A binary floating-point format with implicit leading bit and subnormals.
struct FormatTraits {
  int mantissa_bits;   // stored fraction bits
  int exponent_bits;
  int bias;
  double max_finite;
  bool has_inf;
  std::uint32_t nan_bits;  // the canonical NaN CUDA returns (sign cleared)
  int total_bits;

  constexpr int emin() const { return 1 - bias; }  // exponent of the smallest normal
  double min_normal() const { return std::ldexp(1.0, emin()); }
  double min_subnormal() const { return std::ldexp(1.0, emin() - mantissa_bits); }
  // Relative half-ulp of normal numbers: 2^-(p) with p = mantissa_bits + 1 significant bits.
  double unit_roundoff() const { return std::ldexp(1.0, -(mantissa_bits + 1)); }
};

inline constexpr FormatTraits kF32{23, 8, 127, 3.4028234663852886e38, true, 0x7fffffffu, 32};
inline constexpr FormatTraits kF16{10, 5, 15, 65504.0, true, 0x7fffu, 16};
inline constexpr FormatTraits kBF16{7, 8, 127, 3.3895313892515355e38, true, 0x7fffu, 16};
inline constexpr FormatTraits kE4M3{3, 4, 7, 448.0, false, 0x7fu, 8};
inline constexpr FormatTraits kE5M2{2, 5, 15, 57344.0, true, 0x7fu, 8};

constexpr const FormatTraits& traits_of(DType t) {
  switch (t) {
    case DType::f16: return kF16;
    case DType::bf16: return kBF16;
    case DType::e4m3: return kE4M3;
    case DType::e5m2: return kE5M2;
    case DType::f32: default: return kF32;
  }
}

// FP8 quantization constants (docs/contract.md#fp8): the dynamic scale floor is 1/(max·512), so an
// all-zero row has a finite, non-zero scale and q = 0.
struct Fp8Quant {
  static constexpr double kFloorDivisor = 512.0;
  static double max(DType t) { return traits_of(t).max_finite; }
  // The floor as the fp32 value every implementation uses: RN32(1 / (max·512)).
  static float scale_floor(DType t) {
    return static_cast<float>(1.0 / (traits_of(t).max_finite * kFloorDivisor));
  }
};

namespace detail {
inline std::uint32_t encode_finite(bool neg, double mag, const FormatTraits& f, Overflow ov) {
  const std::uint32_t sign = neg ? (1u << (f.total_bits - 1)) : 0u;
  if (mag == 0.0) return sign;
  int e2 = 0;
  (void)std::frexp(mag, &e2);  // mag = m · 2^e2, m in [0.5, 1)
  const int e = e2 - 1;        // mag in [2^e, 2^(e+1))
  const int q = (e < f.emin() ? f.emin() : e) - f.mantissa_bits;  // quantum exponent
  const double scaled = std::ldexp(mag, -q);  // exact: a power-of-two scaling
  double n = std::floor(scaled);
  const double frac = scaled - n;              // exact
  if (frac > 0.5 || (frac == 0.5 && std::fmod(n, 2.0) != 0.0)) n += 1.0;
  const double value = std::ldexp(n, q);
  if (value > f.max_finite) {
    switch (ov) {
      case Overflow::saturate: mag = f.max_finite; return encode_finite(neg, mag, f, ov);
      case Overflow::nan: return f.nan_bits | sign;
      case Overflow::ieee:
      default:
        return sign | (((1u << f.exponent_bits) - 1u) << f.mantissa_bits);
    }
  }
  std::uint32_t ni = static_cast<std::uint32_t>(n);
  int qq = q;
  const std::uint32_t hidden = 1u << f.mantissa_bits;
  if (ni < hidden) return sign | ni;  // subnormal (q == emin - m)
  if (ni == (hidden << 1)) { ni >>= 1; ++qq; }
  const std::uint32_t expfield = static_cast<std::uint32_t>(qq + f.mantissa_bits + f.bias);
  return sign | (expfield << f.mantissa_bits) | (ni - hidden);
}
}  // namespace detail

namespace detail {
// The fast paths of encode() and decode() below: integer arithmetic on the double's bits where
// both sides of the conversion are normal numbers, which is where nearly every generated and
// produced value lies (the generic routines call frexp / ldexp / floor / fmod for each element:
// about a third of a large case's host time would go there). They return false where the
// generic routine decides: a subnormal or zero, the top binade of a format without infinity
// (E4M3: its largest finite value and its NaN share it), overflow, and f32 (already a cast).
// oracle/tests/test_formats.cpp checks both against the generic routines on random doubles of
// every binade and on every 8- and 16-bit pattern.
inline bool encode_normal_fast(bool neg, double mag, const FormatTraits& f, std::uint32_t& out) {
  std::uint64_t b;
  std::memcpy(&b, &mag, 8);
  const int e = static_cast<int>(b >> 52) - 1023;  // mag > 0 and finite; a subnormal double gives -1023
  // The top binade of finite values: below the all-ones exponent field (kept for infinity and NaN),
  // or, without infinity (E4M3), that field itself, which the generic routine handles.
  const int emax = (1 << f.exponent_bits) - (f.has_inf ? 2 : 1) - f.bias;
  if (e < f.emin() || e > emax) return false;
  const int shift = 52 - f.mantissa_bits;
  const std::uint64_t m = (b & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
  // Round to nearest, ties to even, at bit `shift`: add half an ulp less one, plus the kept lsb.
  std::uint64_t r = (m + ((std::uint64_t{1} << (shift - 1)) - 1) + ((m >> shift) & 1)) >> shift;
  int er = e;
  if (r >> (f.mantissa_bits + 1)) {  // rounded up to the next binade
    r >>= 1;
    ++er;
  }
  if (er > emax || (!f.has_inf && er == emax)) return false;
  const std::uint32_t sign = neg ? (1u << (f.total_bits - 1)) : 0u;
  out = sign | (static_cast<std::uint32_t>(er + f.bias) << f.mantissa_bits) |
        static_cast<std::uint32_t>(r - (std::uint64_t{1} << f.mantissa_bits));
  return true;
}

inline bool decode_normal_fast(std::uint32_t bits, const FormatTraits& f, double& out) {
  const std::uint32_t expmask = (1u << f.exponent_bits) - 1u;
  const std::uint32_t e = (bits >> f.mantissa_bits) & expmask;
  if (e == 0 || e == expmask) return false;  // zero, subnormal, infinity, NaN, E4M3's top binade
  const std::uint64_t sign = static_cast<std::uint64_t>((bits >> (f.total_bits - 1)) & 1u) << 63;
  const std::uint64_t m = bits & ((1u << f.mantissa_bits) - 1u);
  const std::uint64_t b = sign | (static_cast<std::uint64_t>(static_cast<int>(e) - f.bias + 1023) << 52) |
                          (m << (52 - f.mantissa_bits));
  std::memcpy(&out, &b, 8);
  return true;
}
}  // namespace detail

// Round a double once to format t (RN-even) and return its bit pattern.
// NaN → the canonical NaN of the format (CUDA clears the sign too for bf16/f16... see tests).
// encode_generic is the reference routine; encode takes the fast path where it applies.
inline std::uint32_t encode_generic(double v, DType t, Overflow ov = Overflow::ieee) {
  const FormatTraits& f = traits_of(t);
  if (t == DType::e4m3 && ov == Overflow::ieee) ov = Overflow::nan;  // no infinity in E4M3fn
  if (t == DType::f32) {
    float x = static_cast<float>(v);  // the C++ conversion is RN-even on IEEE hosts
    std::uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  }
  const bool neg = std::signbit(v);
  const std::uint32_t sign = neg ? (1u << (f.total_bits - 1)) : 0u;
  if (std::isnan(v)) return f.nan_bits;
  if (std::isinf(v)) {
    if (ov == Overflow::saturate) return detail::encode_finite(neg, f.max_finite, f, ov);
    if (ov == Overflow::nan) return f.nan_bits | sign;
    return sign | (((1u << f.exponent_bits) - 1u) << f.mantissa_bits);
  }
  return detail::encode_finite(neg, std::fabs(v), f, ov);
}

inline std::uint32_t encode(double v, DType t, Overflow ov = Overflow::ieee) {
  if (t != DType::f32) {
    std::uint32_t bits;
    const double mag = std::fabs(v);
    if (mag > 0.0 && mag <= std::numeric_limits<double>::max() &&
        detail::encode_normal_fast(std::signbit(v), mag, traits_of(t), bits))
      return bits;
  }
  return encode_generic(v, t, ov);
}

// The exact value of a bit pattern of format t (decode_generic: the reference routine).
inline double decode_generic(std::uint32_t bits, DType t) {
  if (t == DType::f32) {
    float x;
    std::memcpy(&x, &bits, 4);
    return x;
  }
  const FormatTraits& f = traits_of(t);
  const bool neg = (bits >> (f.total_bits - 1)) & 1u;
  const std::uint32_t expmask = (1u << f.exponent_bits) - 1u;
  const std::uint32_t e = (bits >> f.mantissa_bits) & expmask;
  const std::uint32_t m = bits & ((1u << f.mantissa_bits) - 1u);
  double v;
  if (e == 0) {
    v = std::ldexp(static_cast<double>(m), f.emin() - f.mantissa_bits);
  } else if (e == expmask && f.has_inf) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.has_inf && e == expmask && m == ((1u << f.mantissa_bits) - 1u)) {
    v = std::numeric_limits<double>::quiet_NaN();  // E4M3fn: S.1111.111 is the only NaN
  } else {
    v = std::ldexp(static_cast<double>(m | (1u << f.mantissa_bits)), static_cast<int>(e) - f.bias - f.mantissa_bits);
  }
  return neg ? -v : v;
}

inline double decode(std::uint32_t bits, DType t) {
  double v;
  if (t != DType::f32 && detail::decode_normal_fast(bits, traits_of(t), v)) return v;
  return decode_generic(bits, t);
}

// Read element i of a typed buffer as float (exact: every format here widens into fp32).
inline float load_as_float(const void* base, DType t, std::int64_t i) {
  const unsigned char* p = static_cast<const unsigned char*>(base) + i * static_cast<std::int64_t>(size_of(t));
  std::uint32_t bits = 0;
  switch (size_of(t)) {
    case 4: std::memcpy(&bits, p, 4); break;
    case 2: { std::uint16_t h; std::memcpy(&h, p, 2); bits = h; break; }
    default: bits = *p; break;
  }
  return static_cast<float>(decode(bits, t));
}

// Round v once to t and store it as element i of a typed buffer.
inline void store_rounded(void* base, DType t, std::int64_t i, double v, Overflow ov = Overflow::ieee) {
  unsigned char* p = static_cast<unsigned char*>(base) + i * static_cast<std::int64_t>(size_of(t));
  const std::uint32_t bits = encode(v, t, ov);
  switch (size_of(t)) {
    case 4: std::memcpy(p, &bits, 4); break;
    case 2: { const std::uint16_t h = static_cast<std::uint16_t>(bits); std::memcpy(p, &h, 2); break; }
    default: *p = static_cast<unsigned char>(bits); break;
  }
}

// RN_t(v) as a double: the value a single rounding to t produces.
inline double round_to(double v, DType t, Overflow ov = Overflow::ieee) {
  return decode(encode(v, t, ov), t);
}

}  // namespace rmsnorm
