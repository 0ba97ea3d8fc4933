#include "rc_support.h"

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <sstream>

namespace harness {
void showValue(const Case& c, std::ostream& os) { os << one_line(c); }
}  // namespace harness

namespace properties {
namespace {

// An index with the given weights that shrinks towards 0 (RapidCheck's weightedElement does
// not shrink at all).
rc::Gen<std::size_t> weighted_index(std::vector<unsigned> weights) {
  return [weights](const rc::Random& random, int) {
    std::uint64_t total = 0;
    for (unsigned w : weights) total += w;
    std::size_t i = 0;
    if (total > 0) {
      std::uint64_t r = rc::Random(random).next() % total;
      while (r >= weights[i]) r -= weights[i++];
    }
    return rc::shrinkable::shrinkRecur(i, [](std::size_t x) { return rc::shrink::towards<std::size_t>(x, 0); });
  };
}

// Uniform in [lo, hi] whatever RapidCheck's size, shrinking towards lo.
rc::Gen<std::int64_t> uniform_between(std::int64_t lo, std::int64_t hi) {
  return [lo, hi](const rc::Random& random, int) {
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    const std::int64_t v = span == 0 ? lo : lo + static_cast<std::int64_t>(rc::Random(random).next() % span);
    return rc::shrinkable::shrinkRecur(v, [lo](std::int64_t x) { return rc::shrink::towards<std::int64_t>(x, lo); });
  };
}

rc::Gen<std::uint64_t> value_seed() {
  return [](const rc::Random& random, int) {
    // The only "simpler" seed is 0: neighbouring seeds are not simpler, just other values (and
    // a shrink that can go back and forth between two seeds would never end).
    return rc::shrinkable::shrinkRecur(rc::Random(random).next(), [](std::uint64_t x) {
      return x == 0 ? rc::Seq<std::uint64_t>() : rc::seq::just(std::uint64_t{0});
    });
  };
}

}  // namespace

std::size_t RcChooser::pick(const std::vector<unsigned>& weights) { return *weighted_index(weights); }
std::int64_t RcChooser::between(std::int64_t lo, std::int64_t hi) {
  return hi <= lo ? lo : *uniform_between(lo, hi);
}
std::uint64_t RcChooser::seed() { return *value_seed(); }

rc::Gen<harness::Case> gen_property_case(const PropertyInfo& p, const rmsnorm::Variant* v) {
  return rc::gen::exec([p, v]() {
    RcChooser ch;
    harness::Case c = draw_property_case(p, ch, v);
    c.variant = v ? v->name : "*";
    return c;
  });
}

RunReport run_property(const PropertyInfo& p, const rmsnorm::Variant* v, int cases, std::uint64_t seed) {
  RunReport rep;
  rep.property = p.id;
  rep.variant = v ? v->name : "oracle";
  rep.seed = seed;
  rep.cases = p.max_cases > 0 && p.max_cases < cases ? p.max_cases : cases;
  const auto start = std::chrono::steady_clock::now();
  bool seen_failure = false;
  // RMSNORM_PROP_TRACE=1 prints every case before it runs (to find a hang or a slow case).
  const bool trace = std::getenv("RMSNORM_PROP_TRACE") != nullptr;

  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = rep.cases;
  params.maxSize = 100;
  params.maxDiscardRatio = 10;
  // A property capped for cost (P18: every case moves GiBs) reports its failing case as drawn:
  // its draws are already small in everything but the offsets (R = 2, small D), and each shrink
  // step would cost as much as a case (on the H200 a shrinking M11 outlived a 120 s limit).
  params.disableShrinking = p.max_cases > 0;
  rc::detail::TestMetadata meta;
  meta.id = p.id + "/" + rep.variant;
  meta.description = p.invariant;

  const auto result = rc::detail::checkTestable(
      [&]() {
        const harness::Case c = *gen_property_case(p, v);
        RC_TAG(generators::dim_class(c.dim));
        if (trace) std::fprintf(stderr, "case: %s\n", harness::one_line(c).c_str());
        const CheckResult r = v ? check_case(c, *v) : check_oracle_case(c);
        switch (r.kind) {
          case CheckResult::Kind::pass:
            if (!seen_failure) {
              ++rep.checked;
              for (const std::string& t : coverage_tags(c)) ++rep.coverage[t];
            }
            break;
          case CheckResult::Kind::rejected:
            if (!seen_failure) {
              ++rep.rejected;
              ++rep.reject_reasons[r.message];
            }
            break;
          case CheckResult::Kind::not_applicable:
            if (!seen_failure) {
              ++rep.not_applicable;
              rep.not_applicable_reason = r.message;
            }
            break;
          case CheckResult::Kind::fail:
            seen_failure = true;
            // Our own message only (RC_FAIL would prepend the file, line and expression text).
            throw rc::detail::CaseResult(rc::detail::CaseResult::Type::Failure,
                                         r.message + "\nREPRODUCE: " + harness::one_line(c));
        }
      },
      meta, params);

  if (result.template is<rc::detail::FailureResult>()) {
    const auto& f = result.template get<rc::detail::FailureResult>();
    rep.failed = true;
    const std::string& d = f.description;
    const std::size_t at = d.find("REPRODUCE: ");
    rep.failure = at == std::string::npos ? d : d.substr(0, at);
    while (!rep.failure.empty() && (rep.failure.back() == '\n' || rep.failure.back() == ' ')) rep.failure.pop_back();
    if (at != std::string::npos) {
      rep.reproduce = d.substr(at + 11);
      const std::size_t nl = rep.reproduce.find('\n');
      if (nl != std::string::npos) rep.reproduce.erase(nl);
    }
  } else if (result.template is<rc::detail::GaveUpResult>()) {
    rep.failed = true;
    rep.failure = "RapidCheck gave up: " + result.template get<rc::detail::GaveUpResult>().description;
  } else if (result.template is<rc::detail::Error>()) {
    rep.failed = true;
    rep.failure = "RapidCheck error: " + result.template get<rc::detail::Error>().description;
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

std::string describe(const RunReport& r, bool with_coverage) {
  std::ostringstream os;
  char head[256];
  std::snprintf(head, sizeof head, "%s on %s: %d cases asked, %d checked, %d rejected, %d not applicable, %.2f s, seed 0x%016llx",
                r.property.c_str(), r.variant.c_str(), r.cases, r.checked, r.rejected, r.not_applicable, r.seconds,
                static_cast<unsigned long long>(r.seed));
  os << head;
  if (r.failed) {
    os << "\n  FAILED: " << r.failure;
    if (!r.reproduce.empty()) os << "\n  REPRODUCE: " << r.reproduce;
  }
  for (const auto& kv : r.reject_reasons) os << "\n  rejected " << kv.second << "x: " << kv.first;
  if (r.not_applicable > 0) os << "\n  not applicable (last reason): " << r.not_applicable_reason;
  if (with_coverage && !r.coverage.empty()) {
    // One line per tag family ("op=", "x=", "D", ...), counts in cases.
    std::map<std::string, std::string> families;
    for (const auto& kv : r.coverage) {
      std::string fam = kv.first.substr(0, kv.first.find_first_of("=<>%+,"));
      if (fam.rfind("x.", 0) == 0) fam = "regime";
      if (fam.rfind("strided", 0) == 0 || fam.rfind("misaligned", 0) == 0 || fam.rfind("dense", 0) == 0) fam = "layout";
      std::string& line = families[fam];
      if (!line.empty()) line += ", ";
      line += kv.first + " " + std::to_string(kv.second);
    }
    os << "\n  coverage:";
    for (const auto& kv : families) os << "\n    " << kv.second;
  }
  return os.str();
}

}  // namespace properties
