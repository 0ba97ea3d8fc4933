// What a certificate's floor asks of each CUDA forward product, checked without a GPU: the draws
// aimed at it (every applicable property's, and the generated cases of each op it runs) are
// cases it implements. Its capability checks read the arguments only, so they run here on the
// arguments of each drawn case at made-up addresses (a buffer per terabyte, its base the layout's
// offset in elements on). A variant that declines part of what it declares is then found here
// rather than by a certify run on the GPU falling below the floor; the variants whose checks ask
// for a device (they answer no_device) are left to that run.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/case_file.h"
#include "harness/catch.h"
#include "harness/run.h"
#include "harness/values.h"
#include "properties/checks.h"
#include "properties/generators.h"
#include "rmsnorm/formats.h"
#include "rmsnorm/variant.h"

namespace {

using rmsnorm::DType;
using rmsnorm::Op;

constexpr int kDraws = 100;       // per (variant, property) and (variant, op): certify's default
constexpr int kMostDeclined = 5;  // of kDraws: certify's floor checks at least 95 % of them
constexpr std::uint64_t kSeed = 0x5eed2025c0ffee01ull;

// FNV-1a of a name: a seed stream per (property, variant).
std::uint64_t stream_of(const std::string& name) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return h;
}

bool is_forward(Op op) {
  return op == Op::forward || op == Op::add_forward || op == Op::forward_quant || op == Op::add_forward_quant;
}

// c's call on buffers at made-up addresses: buffer k at k TiB, its base layout offset elements on
// (a 256-byte boundary plus the offset, as the harness lays it out).
rmsnorm::ForwardArgs args_of(const harness::Case& c) {
  const oracle::ForwardCase h = harness::forward_shape(c);
  const harness::Layout& L = c.layout;
  auto at = [](std::uintptr_t k, std::int64_t offset, DType t) {
    return reinterpret_cast<void*>((k << 40) + static_cast<std::uintptr_t>(offset) * rmsnorm::size_of(t));
  };
  harness::ForwardBuffers b;
  b.x = at(1, L.x_offset, c.x_type);
  if (c.has_add()) b.o = at(2, L.o_offset, c.x_type);
  b.y = L.in_place && !c.has_quant() ? (c.has_add() ? b.o : b.x) : at(3, L.y_offset, c.y_type);
  if (c.convention != rmsnorm::Convention::no_weight) b.g = at(4, L.g_offset, c.g_type);
  b.rstd = static_cast<float*>(at(5, 0, DType::f32));
  if (c.has_quant()) b.scale = static_cast<float*>(at(6, 0, DType::f32));
  return harness::forward_args(h, c.has_add(), L, b);
}

struct Tally {
  int drawn = 0, declined = 0, device = 0;
  std::string first;
};

void count(const rmsnorm::Variant& v, const harness::Case& c, Tally& t) {
  ++t.drawn;
  const rmsnorm::Status s = v.can_implement_forward(args_of(c));
  if (s.code == rmsnorm::Status::Code::no_device) {
    ++t.device;
  } else if (!s.ok()) {
    if (t.declined++ == 0) t.first = s.reason + " -- " + harness::one_line(c);
  }
}

}  // namespace

TEST_CASE("the draws aimed at each CUDA forward product are cases it implements", "[host]") {
  int variants = 0, checked = 0;
  for (const rmsnorm::Variant& v : rmsnorm::registry()) {
    if (v.memory != rmsnorm::Memory::device || v.is_mutant() || v.external || !v.can_implement_forward) continue;
    if (!(v.ops & 0xFu)) continue;  // no forward op
    ++variants;
    bool on_device = false;
    // Every property that applies to it, drawn as certify draws (aimed, each draw inside its claims).
    for (const properties::PropertyInfo& p : properties::catalog()) {
      if (!properties::not_applicable_to(p, v).empty()) continue;
      Tally t;
      for (int i = 0; i < kDraws; ++i) {
        generators::RngChooser ch(
            generators::mix_seed(kSeed, stream_of(p.id + "/" + v.name), static_cast<std::uint64_t>(i)));
        const harness::Case c = properties::draw_property_case(p, ch, &v);
        if (is_forward(c.op)) count(v, c, t);
      }
      on_device = on_device || t.device > 0;
      if (t.device > 0) continue;
      INFO(v.name << " " << p.id << ": " << t.declined << " of " << t.drawn << " declined; first: " << t.first);
      CHECK(t.declined <= kMostDeclined * t.drawn / kDraws);
      checked += t.drawn > 0;
    }
    // The generated cases of each op: the generators' default domain aimed at it.
    for (int k = 0; k < rmsnorm::kOpCount; ++k) {
      const auto op = static_cast<Op>(k);
      if (!is_forward(op) || !v.supports(op)) continue;
      generators::Domain d;
      d.ops = {op};
      if (!d.aim_at(v).empty()) continue;
      d.target_always = true;
      Tally t;
      for (int i = 0; i < kDraws; ++i) {
        generators::RngChooser ch(
            generators::mix_seed(kSeed, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(i)));
        count(v, generators::draw_case(ch, d), t);
      }
      on_device = on_device || t.device > 0;
      if (t.device > 0) continue;
      INFO(v.name << " generated " << rmsnorm::to_string(op) << ": " << t.declined << " of " << t.drawn
                  << " declined; first: " << t.first);
      CHECK(t.declined <= kMostDeclined);
      ++checked;
    }
    if (on_device) WARN(v.name << ": its capability checks ask for a device; left to certify on the GPU");
  }
  // Built with the CUDA variants (RMSNORM_CUDA): the forward products are there to check.
  CHECK(variants >= 10);
  CHECK(checked >= 100);
}
