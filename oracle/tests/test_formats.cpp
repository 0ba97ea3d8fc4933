// The rounding models of rmsnorm/formats.h against CUDA's own host conversion functions
// (cuda_bf16.h, cuda_fp16.h, cuda_fp8.h compiled by the host compiler), bit for bit:
// every float under [slow], 20M seeded random bit patterns plus all special values by default.
// Also decode() against CUDA's conversions back to float (exhaustive: 2^16 and 2^8 patterns),
// and the oracle's fast rounding num::rn_key against encode() on random doubles.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "harness/catch.h"
#include "oracle/numeric.h"
#include "rmsnorm/formats.h"

#if defined(RMSNORM_HAVE_CUDA) || defined(RMSNORM_CUDA_HEADERS)
#define ORACLE_TEST_HAVE_CUDA_HEADERS 1
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

using rmsnorm::DType;
using rmsnorm::Overflow;

namespace {

float float_of(std::uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }

#if ORACLE_TEST_HAVE_CUDA_HEADERS
std::uint16_t cuda_bf16(float f) { const __nv_bfloat16 h = __float2bfloat16(f); std::uint16_t b; std::memcpy(&b, &h, 2); return b; }
std::uint16_t cuda_f16(float f) { const __half h = __float2half(f); std::uint16_t b; std::memcpy(&b, &h, 2); return b; }
std::uint8_t cuda_fp8(float f, __nv_saturation_t s, __nv_fp8_interpretation_t t) { return __nv_cvt_float_to_fp8(f, s, t); }

// One float through every conversion; returns a description of the first disagreement or "".
// NaN results must agree bit for bit too (CUDA's canonical NaNs are part of the model).
struct Conversion { const char* name; DType type; Overflow ov; };
const Conversion kConversions[] = {
    {"bf16", DType::bf16, Overflow::ieee},          {"f16", DType::f16, Overflow::ieee},
    {"e4m3 satfinite", DType::e4m3, Overflow::saturate}, {"e4m3 nosat", DType::e4m3, Overflow::nan},
    {"e5m2 satfinite", DType::e5m2, Overflow::saturate}, {"e5m2 nosat", DType::e5m2, Overflow::ieee},
};
std::uint32_t cuda_convert(int which, float f) {
  switch (which) {
    case 0: return cuda_bf16(f);
    case 1: return cuda_f16(f);
    case 2: return cuda_fp8(f, __NV_SATFINITE, __NV_E4M3);
    case 3: return cuda_fp8(f, __NV_NOSAT, __NV_E4M3);
    case 4: return cuda_fp8(f, __NV_SATFINITE, __NV_E5M2);
    default: return cuda_fp8(f, __NV_NOSAT, __NV_E5M2);
  }
}

// Mismatch counts per conversion over the bit patterns [begin, end) of `patterns` (or the
// integers themselves when patterns is null).
struct Tally { std::int64_t checked = 0, mismatches[6] = {0, 0, 0, 0, 0, 0}; std::uint32_t first[6] = {0, 0, 0, 0, 0, 0}; };
Tally compare_range(const std::vector<std::uint32_t>* patterns, std::uint64_t begin, std::uint64_t end) {
  Tally all;
#pragma omp parallel
  {
    Tally t;
#pragma omp for schedule(static, 1 << 16)
    for (std::int64_t i = static_cast<std::int64_t>(begin); i < static_cast<std::int64_t>(end); ++i) {
      const std::uint32_t bits = patterns ? (*patterns)[static_cast<std::size_t>(i)] : static_cast<std::uint32_t>(i);
      const float f = float_of(bits);
      ++t.checked;
      for (int k = 0; k < 6; ++k) {
        const std::uint32_t ours = rmsnorm::encode(f, kConversions[k].type, kConversions[k].ov);
        if (ours != cuda_convert(k, f)) {
          if (t.mismatches[k]++ == 0) t.first[k] = bits;
        }
      }
    }
#pragma omp critical
    {
      all.checked += t.checked;
      for (int k = 0; k < 6; ++k) {
        if (t.mismatches[k] && (!all.mismatches[k] || t.first[k] < all.first[k])) all.first[k] = t.first[k];
        all.mismatches[k] += t.mismatches[k];
      }
    }
  }
  return all;
}

void require_no_mismatch(const Tally& t) {
  for (int k = 0; k < 6; ++k) {
    const float f = float_of(t.first[k]);
    CAPTURE(kConversions[k].name, t.mismatches[k], t.first[k], f,
            rmsnorm::encode(f, kConversions[k].type, kConversions[k].ov), cuda_convert(k, f));
    CHECK(t.mismatches[k] == 0);
  }
}
#endif

#if !ORACLE_TEST_HAVE_CUDA_HEADERS
void skip_without_cuda_headers() {
#if RMSNORM_CATCH2_MAJOR >= 3
  SKIP("SKIPPED: the CUDA toolkit headers (cuda_bf16.h, cuda_fp16.h, cuda_fp8.h) were not found at configure time");
#else
  WARN("SKIPPED: the CUDA toolkit headers (cuda_bf16.h, cuda_fp16.h, cuda_fp8.h) were not found at configure time");
#endif
}
#endif

}  // namespace

TEST_CASE("encode agrees with CUDA's conversions on 20M random floats and all specials", "[formats]") {
#if ORACLE_TEST_HAVE_CUDA_HEADERS
  std::vector<std::uint32_t> patterns;
  patterns.reserve(20'000'000 + 4096);
  // Specials and boundaries: zeros, subnormal ends, normal ends, infinities, NaNs, and every
  // float near the largest finite values and the overflow thresholds of each format.
  const std::uint32_t specials[] = {0u, 1u, 2u, 0x007fffffu, 0x00800000u, 0x3f800000u, 0x7f7fffffu, 0x7f800000u,
                                    0x7f800001u, 0x7fc00000u, 0x7fffffffu};
  for (std::uint32_t s : specials) { patterns.push_back(s); patterns.push_back(s | 0x80000000u); }
  for (double edge : {448.0, 464.0, 480.0, 57344.0, 61440.0, 65504.0, 65520.0, 3.3895313892515355e38, 0x1p-9, 0x1p-10,
                      0x1p-16, 0x1p-17, 0x1p-24, 0x1p-25, 0x1p-133, 0x1p-134}) {
    const float f = static_cast<float>(edge);
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    for (std::uint32_t d = 0; d < 64; ++d) {
      patterns.push_back(b + d);
      patterns.push_back(b - d);
      patterns.push_back((b + d) | 0x80000000u);
    }
  }
  std::mt19937_64 rng(0x5eed0f0a7);
  while (patterns.size() < 20'000'000) patterns.push_back(static_cast<std::uint32_t>(rng()));
  const Tally t = compare_range(&patterns, 0, patterns.size());
  CHECK(t.checked == static_cast<std::int64_t>(patterns.size()));
  require_no_mismatch(t);
#else
  skip_without_cuda_headers();
#endif
}

TEST_CASE("encode agrees with CUDA's conversions on every float", "[formats][slow]") {
#if ORACLE_TEST_HAVE_CUDA_HEADERS
  const Tally t = compare_range(nullptr, 0, 1ull << 32);
  CHECK(t.checked == (1ll << 32));
  require_no_mismatch(t);
#else
  skip_without_cuda_headers();
#endif
}

TEST_CASE("decode agrees with CUDA's conversions back to float on every pattern", "[formats]") {
#if ORACLE_TEST_HAVE_CUDA_HEADERS
  auto same = [](double ours, float cuda) { return (std::isnan(ours) && std::isnan(cuda)) || ours == static_cast<double>(cuda); };
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint16_t h = static_cast<std::uint16_t>(b);
    __nv_bfloat16_raw braw;
    braw.x = h;
    __half_raw hraw;
    hraw.x = h;
    const __nv_bfloat16 bf(braw);
    const __half hf(hraw);
    CAPTURE(b);
    REQUIRE(same(rmsnorm::decode(b, DType::bf16), __bfloat162float(bf)));
    REQUIRE(same(rmsnorm::decode(b, DType::f16), __half2float(hf)));
  }
  for (std::uint32_t b = 0; b < 256; ++b) {
    const __half e4 = __half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), __NV_E4M3));
    const __half e5 = __half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), __NV_E5M2));
    CAPTURE(b);
    REQUIRE(same(rmsnorm::decode(b, DType::e4m3), __half2float(e4)));
    REQUIRE(same(rmsnorm::decode(b, DType::e5m2), __half2float(e5)));
  }
#else
  skip_without_cuda_headers();
#endif
}

TEST_CASE("the oracle's fast rounding of doubles equals encode() on every grid", "[formats]") {
  std::mt19937_64 rng(0xd0b1e);
  const DType types[] = {DType::f32, DType::bf16, DType::f16, DType::e4m3, DType::e5m2};
  for (DType t : types)
    for (Overflow ov : {Overflow::ieee, Overflow::saturate}) {
      if (t == DType::f32 && ov == Overflow::saturate) continue;  // encode's f32 path is IEEE only
      const oracle::num::Grid g = oracle::num::grid_of(t, ov);
      std::int64_t mismatches = 0;
      double first = 0;
      for (int i = 0; i < 200'000; ++i) {
        // Doubles with random exponents across each grid's whole range, exact midpoints included.
        const int e = static_cast<int>(rng() % 320) - 170;
        double v = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, e);
        if (i % 4 == 1) v = oracle::num::midpoint(static_cast<std::int64_t>(rng() % (g.max_mag + 1)), g);
        if (i % 2) v = -v;
        const std::uint32_t bits = rmsnorm::encode(v, t, ov);
        std::int64_t want = bits & g.mag_mask;
        if (rmsnorm::is_fp8(t) && ov != Overflow::saturate && want > g.max_mag) want = g.max_mag + 1;
        if (bits & g.sign_bit) want = -want;
        if (oracle::num::rn_key(v, g) != want && mismatches++ == 0) first = v;
      }
      CAPTURE(rmsnorm::to_string(t), static_cast<int>(ov), first);
      CHECK(mismatches == 0);
    }
}

// encode() and decode() take an integer fast path where both sides are normal numbers; the
// generic routines (frexp / ldexp) are the reference. Doubles, not only floats: the generators and
// the harness round doubles, and a double carries bits below a float's that decide its ties.
TEST_CASE("encode's and decode's fast paths equal the generic routines on doubles and every pattern", "[formats]") {
  std::mt19937_64 rng(0xfa57a7b);
  const DType types[] = {DType::bf16, DType::f16, DType::e4m3, DType::e5m2, DType::f32};
  std::int64_t checked = 0;
  for (DType t : types) {
    const rmsnorm::FormatTraits& f = rmsnorm::traits_of(t);
    for (Overflow ov : {Overflow::ieee, Overflow::nan, Overflow::saturate}) {
      std::int64_t mismatches = 0;
      double first = 0;
      auto check = [&](double v) {
        ++checked;
        if (rmsnorm::encode(v, t, ov) != rmsnorm::encode_generic(v, t, ov) && mismatches++ == 0) first = v;
      };
      for (int i = 0; i < 200'000; ++i) {
        // Random significands in every binade from below the format's subnormals to past its
        // largest finite value, and the same significand cut to the format's width plus exactly
        // half an ulp (a tie), plus or minus the double's last bit.
        const int e = f.emin() - f.mantissa_bits - 3 + static_cast<int>(rng() % static_cast<std::uint64_t>(
                                                           (std::ilogb(f.max_finite) + 3) - (f.emin() - f.mantissa_bits - 3)));
        const std::uint64_t frac = rng() >> 12;
        const double v = std::ldexp(1.0 + static_cast<double>(frac) * 0x1p-52, e);
        const int keep = f.mantissa_bits;
        const double cut = std::ldexp(std::floor(std::ldexp(1.0 + static_cast<double>(frac) * 0x1p-52, keep)), e - keep);
        const double tie = cut + std::ldexp(1.0, e - keep - 1);
        for (double w : {v, tie, std::nextafter(tie, 0.0), std::nextafter(tie, 1e300), cut}) {
          check(w);
          check(-w);
        }
      }
      for (double s : {0.0, 1e-320, std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(),
                       std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN(), f.max_finite, f.min_normal(), f.min_subnormal()}) {
        for (double w : {s, std::nextafter(s, 0.0), std::nextafter(s, 1e300), s * 1.0625, s * 0.9375}) {
          check(w);
          check(-w);
        }
      }
      CAPTURE(rmsnorm::to_string(t), static_cast<int>(ov), first, rmsnorm::encode(first, t, ov),
              rmsnorm::encode_generic(first, t, ov));
      CHECK(mismatches == 0);
    }
    const std::uint32_t patterns = t == DType::f32 ? 0u : (1u << f.total_bits);
    for (std::uint32_t b = 0; b < patterns; ++b) {
      const double fast = rmsnorm::decode(b, t), generic = rmsnorm::decode_generic(b, t);
      CAPTURE(rmsnorm::to_string(t), b, fast, generic);
      REQUIRE(((std::isnan(fast) && std::isnan(generic)) || std::memcmp(&fast, &generic, 8) == 0));
    }
  }
  CHECK(checked > 25'000'000);
}
