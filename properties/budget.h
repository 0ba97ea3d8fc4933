// How many cases each property runs, set in one place (docs/properties.md: a default budget that
// keeps CI in its time, a larger [slow] one), and the seed they start from. Both are overridable
// from the environment:
//   RMSNORM_PROP_CASES=N   cases per property and variant (either suite)
//   RMSNORM_PROP_SEED=S    base seed (decimal or 0x hex); each property/variant pair mixes in
//                          its own name, so one seed reproduces a whole run
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

namespace properties {

// Default suite: 19 properties × 100 cases on host.reference takes ~10 s on 2 cores (measured),
// far under the CI minutes. [slow]: the nightly budget.
inline constexpr int kDefaultCases = 100;
inline constexpr int kSlowCases = 1000;
inline constexpr std::uint64_t kDefaultSeed = 0x5eed0f12a5c0ffeeull;

inline int cases_for(bool slow) {
  if (const char* env = std::getenv("RMSNORM_PROP_CASES")) {
    const long v = std::strtol(env, nullptr, 0);
    if (v > 0) return static_cast<int>(v);
  }
  return slow ? kSlowCases : kDefaultCases;
}

inline std::uint64_t base_seed() {
  if (const char* env = std::getenv("RMSNORM_PROP_SEED")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 0);
    if (end != env) return v;
  }
  return kDefaultSeed;
}

// The seed of one property on one variant: FNV-1a of "P4/host.reference" mixed into the base.
inline std::uint64_t property_seed(const std::string& property, const std::string& variant) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ base_seed();
  for (char ch : property + "/" + variant) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return h;
}

}  // namespace properties
