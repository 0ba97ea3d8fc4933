// `fuzz`: a seeded, time-boxed differential fuzz loop. Cases come from the property generators
// (shapes, strides, misaligned bases, value regimes); every selected variant that implements
// the op runs each case against the oracle. The first failure is minimized, written to --out as
// a case file with its replay line, printed, and the run exits 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>

#include "case_runner.h"
#include "certification.h"
#include "command_line.h"
#include "commands.h"
#include "device_info.h"
#include "fuzz_loop.h"
#include "minimize.h"

#if RMSNORM_CERT_HAVE_GENERATORS
#include "properties/generators.h"
#endif

namespace cert {

std::uint64_t fuzz_case_seed(std::uint64_t run_seed, std::uint64_t index) {
  // splitmix64 of (seed, index): independent streams per step, reproducible from the pair.
  std::uint64_t z = run_seed + 0x9e3779b97f4a7c15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool draw_fuzz_case(std::uint64_t case_seed, rmsnorm::Op op, const rmsnorm::Variant* aim, harness::Case& out) {
#if RMSNORM_CERT_HAVE_GENERATORS
  generators::RngChooser chooser(case_seed);
  generators::Domain domain;
  domain.ops = {op};
  domain.max_elements = std::int64_t{1} << 15;
  if (aim != nullptr) domain.aim_at(*aim);
  out = generators::draw_case(chooser, domain);
  return true;
#else
  (void)case_seed;
  (void)op;
  (void)aim;
  (void)out;
  return false;
#endif
}

const rmsnorm::Variant* fuzz_aim(const std::vector<const rmsnorm::Variant*>& variants, rmsnorm::Op op,
                                 std::uint64_t index, std::size_t op_count) {
  std::vector<const rmsnorm::Variant*> takers;
  for (const rmsnorm::Variant* v : variants)
    if (v->supports(op)) takers.push_back(v);
  const std::uint64_t k = (index / std::max<std::size_t>(op_count, 1)) % (takers.size() + 1);
  return k < takers.size() ? takers[k] : nullptr;
}

int run_fuzz(const Args& args) {
  CommandLine cl("fuzz", "fuzz --seconds N [--variant PATTERN] [--seed S] [--op OP] [--out DIR]",
                 "Draws cases from the generators (seeded; step i uses a seed derived from S and i) and runs\n"
                 "each on every selected variant that implements its op, judged by the oracle. Prints a\n"
                 "progress line with cases/s. On the first failure: minimizes it (rows, columns, layout,\n"
                 "values), writes DIR/<variant>-<op>-<hash>.case with its replay line, prints it, exits 1.");
  std::int64_t seconds = 60, max_cases = 0, minimize_attempts = 3000;
  std::uint64_t seed = 0;
  std::string pattern = "all", out_dir = default_corpus_dir() + "/found", op_name;
  cl.option("--seconds", &seconds, "N", "time box (default 60)", 1, 7 * 24 * 3600);
  cl.option("--variant", &pattern, "PATTERN", "variants to fuzz (default all: every product variant available)");
  cl.option_u64("--seed", &seed, "S", "run seed (default: from the clock, printed)");
  cl.option("--op", &op_name, "OP", "only this op (forward, add_forward, forward_quant, add_forward_quant, backward, add_backward)");
  cl.option("--out", &out_dir, "DIR", "where a minimized failure is written (default corpora/found)");
  cl.option("--max-cases", &max_cases, "N", "stop after N cases (0: only the time box)", 0, INT64_MAX);
  cl.option("--minimize-attempts", &minimize_attempts, "N", "re-runs allowed to the minimizer (default 3000)", 0, 10000000);
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  if (!cl.given("--seed")) seed = static_cast<std::uint64_t>(std::time(nullptr)) * 0x9e3779b97f4a7c15ull;
  std::vector<rmsnorm::Op> ops;
  if (!op_name.empty()) {
    rmsnorm::Op op;
    if (!rmsnorm::parse(op_name, op)) return cl.usage_exit("unknown op '" + op_name + "'");
    ops.push_back(op);
  }

  const rmsnorm::Status device = rmsnorm::device_status();
  std::vector<const rmsnorm::Variant*> variants;
  std::vector<std::string> unavailable;
  for (const rmsnorm::Variant* v : rmsnorm::match_variants(pattern)) {
    if (v->memory == rmsnorm::Memory::device && !device.ok()) {
      unavailable.push_back(v->name);
      continue;
    }
    variants.push_back(v);
  }
  if (variants.empty()) {
    std::fprintf(stderr, "rmsnorm-cert fuzz: no runnable variant matches '%s'%s\n", pattern.c_str(),
                 unavailable.empty() ? "" : (" (device variants need a GPU: " + device.reason + ")").c_str());
    return kExitUsage;
  }
  if (ops.empty())
    for (int k = 0; k < rmsnorm::kOpCount; ++k) {
      const auto op = static_cast<rmsnorm::Op>(k);
      for (const rmsnorm::Variant* v : variants)
        if (v->supports(op)) {
          ops.push_back(op);
          break;
        }
    }
  if (ops.empty()) return cl.usage_exit("the selected variants implement no op" + (op_name.empty() ? "" : " " + op_name));
  harness::Case probe;
  if (!draw_fuzz_case(0, ops[0], nullptr, probe)) {
    std::fprintf(stderr, "rmsnorm-cert fuzz: this build has no rmsnorm_generators library (properties/)\n");
    return kExitError;
  }
  std::printf("fuzz: seed 0x%016llx, %lld s, %zu variants (%s%s), %zu ops\n", static_cast<unsigned long long>(seed),
              static_cast<long long>(seconds), variants.size(), variants.front()->name.c_str(), variants.size() > 1 ? ", ..." : "",
              ops.size());
  if (!unavailable.empty()) std::printf("fuzz: %zu device variants skipped: %s\n", unavailable.size(), device.reason.c_str());
  std::fflush(stdout);

  Progress progress("fuzz: ");
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::int64_t cases = 0, runs = 0, skipped = 0, elements = 0;
  double last_report = 0;
  std::map<std::string, std::int64_t> per_op;
  for (std::uint64_t i = 0;; ++i) {
    if (elapsed() >= static_cast<double>(seconds) || (max_cases > 0 && cases >= max_cases)) break;
    const rmsnorm::Op op = ops[i % ops.size()];
    const std::uint64_t case_seed = fuzz_case_seed(seed, i);
    const rmsnorm::Variant* aim = fuzz_aim(variants, op, i, ops.size());
    harness::Case c;
    draw_fuzz_case(case_seed, op, aim, c);
    ++cases;
    ++per_op[rmsnorm::to_string(op)];
    for (const rmsnorm::Variant* v : variants) {
      if (!v->supports(op)) continue;
      const double started = elapsed();
      const CaseRun run = run_case(c, *v);
      ++runs;
      if (elapsed() - started > 5.0) {
        // The time box is checked between cases: a case this slow is itself worth a look.
        progress.note("slow case (" + std::to_string(static_cast<int>(elapsed() - started)) + " s on " + v->name + "): " +
                      repro_command(c));
      }
      elements += run.profile.elements;
      if (run.verdict == RunVerdict::skipped) {
        ++skipped;
        continue;
      }
      if (run.verdict == RunVerdict::pass) continue;
      // A failure (or a case the generators made invalid, which is a generator bug): report it.
      progress.done();
      harness::Case failing = c;
      failing.variant = v->name;
      std::printf("\nfuzz: FAIL after %lld cases (%.1f s): %s on %s\n  %s\n  step %llu: rmsnorm-cert repro --seed 0x%016llx --op %s%s%s --variant %s\n",
                  static_cast<long long>(cases), elapsed(), to_string(run.verdict), v->name.c_str(), run.reason.c_str(),
                  static_cast<unsigned long long>(i), static_cast<unsigned long long>(case_seed), rmsnorm::to_string(op),
                  aim ? " --aim " : "", aim ? aim->name.c_str() : "", v->name.c_str());
      if (run.verdict == RunVerdict::invalid) return kExitFailed;
      std::printf("fuzz: minimizing (R=%lld D=%lld)...\n", static_cast<long long>(c.rows), static_cast<long long>(c.dim));
      std::fflush(stdout);
      std::string reason;
      MinimizeStats stats;
      harness::Case small = minimize_case(failing, *v, static_cast<int>(minimize_attempts), 120.0, reason, stats);
      small.variant = v->name;
      char note[256];
      std::snprintf(note, sizeof note, "found by rmsnorm-cert fuzz --seed 0x%016llx (step %llu), minimized from R=%lld D=%lld",
                    static_cast<unsigned long long>(seed), static_cast<unsigned long long>(i),
                    static_cast<long long>(stats.rows_before), static_cast<long long>(stats.dim_before));
      small.note = note;
      const std::string line = harness::one_line(small);
      char name[128];
      std::snprintf(name, sizeof name, "%s-%s-%016llx.case", v->name.c_str(), rmsnorm::to_string(op),
                    static_cast<unsigned long long>(std::hash<std::string>{}(line)));
      std::error_code ec;
      std::filesystem::create_directories(out_dir, ec);
      const std::string path = out_dir + "/" + name;
      const std::string text = "# " + std::string(note) + ", " + utc_now() + "\n# failure: " + reason +
                               "\n# replay:  rmsnorm-cert replay " + path + "\n# " + repro_command(small) + "\n" +
                               harness::format_case(small);
      if (ec || !write_text_file(path, text, error)) {
        std::printf("fuzz: could not write %s (%s); the case:\n%s", path.c_str(), ec ? ec.message().c_str() : error.c_str(), text.c_str());
      } else {
        std::printf("fuzz: minimized to R=%lld D=%lld in %d attempts (%d kept, %.1f s): %s\n", static_cast<long long>(small.rows),
                    static_cast<long long>(small.dim), stats.attempts, stats.accepted, stats.seconds, reason.c_str());
        std::printf("fuzz: wrote %s\n  rmsnorm-cert replay %s\n  %s\n", path.c_str(), path.c_str(), repro_command(small).c_str());
      }
      return kExitFailed;
    }
    const double t = elapsed();
    if (t - last_report >= 1.0) {
      last_report = t;
      char line[200];
      std::snprintf(line, sizeof line, "%.0f/%lld s, %lld cases (%.1f/s), %lld runs, %lld skipped, %.3g elements checked", t,
                    static_cast<long long>(seconds), static_cast<long long>(cases), static_cast<double>(cases) / t,
                    static_cast<long long>(runs), static_cast<long long>(skipped), static_cast<double>(elements));
      progress.update(line);
    }
  }
  progress.done();
  const double t = elapsed();
  std::printf("fuzz: no failure: %lld cases in %.1f s (%.1f cases/s), %lld variant runs (%lld skipped: op/shape not implemented), %.3g elements checked\n",
              static_cast<long long>(cases), t, t > 0 ? static_cast<double>(cases) / t : 0.0, static_cast<long long>(runs),
              static_cast<long long>(skipped), static_cast<double>(elements));
  std::string mix;
  for (const auto& [op, n] : per_op) mix += (mix.empty() ? "" : ", ") + op + " " + std::to_string(n);
  std::printf("fuzz: ops: %s\n", mix.c_str());
  return kExitOk;
}

}  // namespace cert
