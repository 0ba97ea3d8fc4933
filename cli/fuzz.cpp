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

namespace {

// The command line of `fuzz`.
struct FuzzOptions {
  std::int64_t seconds = 60, max_cases = 0, minimize_attempts = 3000;
  std::uint64_t seed = 0;
  std::string pattern = "all", out_dir = default_corpus_dir() + "/found", op_name;
  std::vector<rmsnorm::Op> ops;  // the --op, else (once the variants are selected) every op they implement
};

// `fuzz`'s options, declared into `o`. The command line outlives the parse: whether the selected
// variants implement any op is a usage error known only once they are selected.
CommandLine declare_options(FuzzOptions& o) {
  CommandLine cl("fuzz", "fuzz --seconds N [--variant PATTERN] [--seed S] [--op OP] [--out DIR]",
                 "Draws cases from the generators (seeded; step i uses a seed derived from S and i) and runs\n"
                 "each on every selected variant that implements its op, judged by the oracle. Prints a\n"
                 "progress line with cases/s. On the first failure: minimizes it (rows, columns, layout,\n"
                 "values), writes DIR/<variant>-<op>-<hash>.case with its replay line, prints it, exits 1.");
  cl.option("--seconds", &o.seconds, "N", "time box (default 60)", 1, 7 * 24 * 3600);
  cl.option("--variant", &o.pattern, "PATTERN", "variants to fuzz (default all: every product variant available)");
  cl.option_u64("--seed", &o.seed, "S", "run seed (default: from the clock, printed)");
  cl.option("--op", &o.op_name, "OP",
            "only this op (forward, add_forward, forward_quant, add_forward_quant, backward, add_backward)");
  cl.option("--out", &o.out_dir, "DIR", "where a minimized failure is written (default corpora/found)");
  cl.option("--max-cases", &o.max_cases, "N", "stop after N cases (0: only the time box)", 0, INT64_MAX);
  cl.option("--minimize-attempts", &o.minimize_attempts, "N", "re-runs allowed to the minimizer (default 3000)", 0,
            10000000);
  return cl;
}

// False when the command ends here (--help, a usage error), with its exit status in `exit_status`.
bool parse_options(CommandLine& cl, const Args& args, FuzzOptions& o, int& exit_status) {
  const auto stop = [&](const std::string& error) {
    exit_status = cl.usage_exit(error);
    return false;
  };
  std::string error;
  if (!cl.parse(args, error)) return stop(error);
  if (!cl.given("--seed")) o.seed = static_cast<std::uint64_t>(std::time(nullptr)) * 0x9e3779b97f4a7c15ull;
  if (!o.op_name.empty()) {
    rmsnorm::Op op;
    if (!rmsnorm::parse(o.op_name, op)) return stop("unknown op '" + o.op_name + "'");
    o.ops.push_back(op);
  }
  return true;
}

// The variants a pattern selects.
struct Selection {
  std::vector<const rmsnorm::Variant*> variants;  // those that can run here
  std::vector<std::string> unavailable;           // device variants, on a machine without a usable GPU
};

// The variants `pattern` matches, device variants set aside when `device` is not usable.
Selection select_variants(const std::string& pattern, const rmsnorm::Status& device) {
  Selection s;
  for (const rmsnorm::Variant* v : rmsnorm::match_variants(pattern)) {
    if (v->memory == rmsnorm::Memory::device && !device.ok()) {
      s.unavailable.push_back(v->name);
      continue;
    }
    s.variants.push_back(v);
  }
  return s;
}

// Every op at least one of `variants` implements, in the order of rmsnorm::Op.
std::vector<rmsnorm::Op> implemented_ops(const std::vector<const rmsnorm::Variant*>& variants) {
  std::vector<rmsnorm::Op> ops;
  for (int k = 0; k < rmsnorm::kOpCount; ++k) {
    const auto op = static_cast<rmsnorm::Op>(k);
    for (const rmsnorm::Variant* v : variants)
      if (v->supports(op)) {
        ops.push_back(op);
        break;
      }
  }
  return ops;
}

// The opening lines: the seed (the one thing needed to replay the run), the time box, the variants.
void print_header(const FuzzOptions& o, const Selection& s, const rmsnorm::Status& device) {
  std::printf("fuzz: seed 0x%016llx, %lld s, %zu variants (%s%s), %zu ops\n", static_cast<unsigned long long>(o.seed),
              static_cast<long long>(o.seconds), s.variants.size(), s.variants.front()->name.c_str(),
              s.variants.size() > 1 ? ", ..." : "", o.ops.size());
  if (!s.unavailable.empty())
    std::printf("fuzz: %zu device variants skipped: %s\n", s.unavailable.size(), device.reason.c_str());
  std::fflush(stdout);
}

// Step i of the loop: its op, its case seed, the variant it aims at and the case drawn from them.
struct Step {
  std::uint64_t index = 0, case_seed = 0;
  rmsnorm::Op op{};
  const rmsnorm::Variant* aim = nullptr;
  harness::Case c;
};

Step draw_step(const FuzzOptions& o, const std::vector<const rmsnorm::Variant*>& variants, std::uint64_t i) {
  Step s;
  s.index = i;
  s.op = o.ops[i % o.ops.size()];
  s.case_seed = fuzz_case_seed(o.seed, i);
  s.aim = fuzz_aim(variants, s.op, i, o.ops.size());
  draw_fuzz_case(s.case_seed, s.op, s.aim, s.c);
  return s;
}

// What the loop has done so far; the progress line and the closing summary are drawn from it.
struct FuzzRecord {
  std::int64_t cases = 0, runs = 0, skipped = 0, elements = 0;
  std::map<std::string, std::int64_t> per_op;  // cases drawn, by op name
  double last_report = 0;                      // when the progress line was last updated
  const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

// Runs the step's case on every variant that implements its op, in turn. Returns the first
// variant on which it neither passed nor was skipped, with that run in `failure` (the variants
// after it not run); nullptr when there is none.
const rmsnorm::Variant* run_step(const Step& s, const std::vector<const rmsnorm::Variant*>& variants,
                                 Progress& progress, FuzzRecord& r, CaseRun& failure) {
  for (const rmsnorm::Variant* v : variants) {
    if (!v->supports(s.op)) continue;
    const double started = r.elapsed();
    CaseRun run = run_case(s.c, *v);
    ++r.runs;
    if (r.elapsed() - started > 5.0) {
      // The time box is checked between cases: a case this slow is itself worth a look.
      progress.note("slow case (" + std::to_string(static_cast<int>(r.elapsed() - started)) + " s on " + v->name +
                    "): " + repro_command(s.c));
    }
    r.elements += run.profile.elements;
    if (run.verdict == RunVerdict::skipped) {
      ++r.skipped;
      continue;
    }
    if (run.verdict == RunVerdict::pass) continue;
    failure = std::move(run);
    return v;
  }
  return nullptr;
}

// The progress line, at most once a second.
void update_progress(Progress& progress, FuzzRecord& r, std::int64_t seconds) {
  const double t = r.elapsed();
  if (t - r.last_report < 1.0) return;
  r.last_report = t;
  char line[200];
  std::snprintf(line, sizeof line, "%.0f/%lld s, %lld cases (%.1f/s), %lld runs, %lld skipped, %.3g elements checked",
                t, static_cast<long long>(seconds), static_cast<long long>(r.cases), static_cast<double>(r.cases) / t,
                static_cast<long long>(r.runs), static_cast<long long>(r.skipped), static_cast<double>(r.elements));
  progress.update(line);
}

// The failure as found: the verdict, the reason, and the repro line that draws the same case.
void print_failure(const Step& s, const rmsnorm::Variant& v, const CaseRun& run, const FuzzRecord& r) {
  std::printf("\nfuzz: FAIL after %lld cases (%.1f s): %s on %s\n  %s\n"
              "  step %llu: rmsnorm-cert repro --seed 0x%016llx --op %s%s%s --variant %s\n",
              static_cast<long long>(r.cases), r.elapsed(), to_string(run.verdict), v.name.c_str(),
              run.reason.c_str(), static_cast<unsigned long long>(s.index),
              static_cast<unsigned long long>(s.case_seed), rmsnorm::to_string(s.op), s.aim ? " --aim " : "",
              s.aim ? s.aim->name.c_str() : "", v.name.c_str());
}

// Minimizes the failing case and writes it to --out as DIR/<variant>-<op>-<hash>.case, headed by
// how it was found and the lines that replay it; printed in full when it cannot be written.
void minimize_and_write(const FuzzOptions& o, const Step& s, const rmsnorm::Variant& v) {
  std::printf("fuzz: minimizing (R=%lld D=%lld)...\n", static_cast<long long>(s.c.rows),
              static_cast<long long>(s.c.dim));
  std::fflush(stdout);
  harness::Case failing = s.c;
  failing.variant = v.name;
  std::string reason;
  MinimizeStats stats;
  harness::Case small = minimize_case(failing, v, static_cast<int>(o.minimize_attempts), 120.0, reason, stats);
  small.variant = v.name;
  char note[256];
  std::snprintf(note, sizeof note,
                "found by rmsnorm-cert fuzz --seed 0x%016llx (step %llu), minimized from R=%lld D=%lld",
                static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(s.index),
                static_cast<long long>(stats.rows_before), static_cast<long long>(stats.dim_before));
  small.note = note;
  const std::string line = harness::one_line(small);
  char name[128];
  std::snprintf(name, sizeof name, "%s-%s-%016llx.case", v.name.c_str(), rmsnorm::to_string(s.op),
                static_cast<unsigned long long>(std::hash<std::string>{}(line)));
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  const std::string path = o.out_dir + "/" + name;
  const std::string text = "# " + std::string(note) + ", " + utc_now() + "\n# failure: " + reason +
                           "\n# replay:  rmsnorm-cert replay " + path + "\n# " + repro_command(small) + "\n" +
                           harness::format_case(small);
  std::string error;
  if (ec || !write_text_file(path, text, error)) {
    std::printf("fuzz: could not write %s (%s); the case:\n%s", path.c_str(), ec ? ec.message().c_str() : error.c_str(),
                text.c_str());
    return;
  }
  std::printf("fuzz: minimized to R=%lld D=%lld in %d attempts (%d kept, %.1f s): %s\n",
              static_cast<long long>(small.rows), static_cast<long long>(small.dim), stats.attempts, stats.accepted,
              stats.seconds, reason.c_str());
  std::printf("fuzz: wrote %s\n  rmsnorm-cert replay %s\n  %s\n", path.c_str(), path.c_str(),
              repro_command(small).c_str());
}

// The closing lines of a run without a failure: the counts and the mix of ops.
void print_summary(const FuzzRecord& r) {
  const double t = r.elapsed();
  std::printf("fuzz: no failure: %lld cases in %.1f s (%.1f cases/s), %lld variant runs (%lld skipped: op/shape not "
              "implemented), %.3g elements checked\n",
              static_cast<long long>(r.cases), t, t > 0 ? static_cast<double>(r.cases) / t : 0.0,
              static_cast<long long>(r.runs), static_cast<long long>(r.skipped), static_cast<double>(r.elements));
  std::string mix;
  for (const auto& [op, n] : r.per_op) mix += (mix.empty() ? "" : ", ") + op + " " + std::to_string(n);
  std::printf("fuzz: ops: %s\n", mix.c_str());
}

// A step at a time until the time box or --max-cases ends the run (kExitOk), or until a case fails
// on a variant (kExitFailed). A case the generators made invalid is a generator bug: reported,
// but not minimized.
int fuzz_loop(const FuzzOptions& o, const std::vector<const rmsnorm::Variant*>& variants) {
  Progress progress("fuzz: ");
  FuzzRecord r;
  for (std::uint64_t i = 0;; ++i) {
    if (r.elapsed() >= static_cast<double>(o.seconds) || (o.max_cases > 0 && r.cases >= o.max_cases)) break;
    const Step s = draw_step(o, variants, i);
    ++r.cases;
    ++r.per_op[rmsnorm::to_string(s.op)];
    CaseRun failure;
    if (const rmsnorm::Variant* v = run_step(s, variants, progress, r, failure)) {
      progress.done();
      print_failure(s, *v, failure, r);
      if (failure.verdict != RunVerdict::invalid) minimize_and_write(o, s, *v);
      return kExitFailed;
    }
    update_progress(progress, r, o.seconds);
  }
  progress.done();
  print_summary(r);
  return kExitOk;
}

}  // namespace

int run_fuzz(const Args& args) {
  FuzzOptions o;
  CommandLine cl = declare_options(o);
  int status = kExitOk;
  if (!parse_options(cl, args, o, status)) return status;
  const rmsnorm::Status device = rmsnorm::device_status();
  const Selection s = select_variants(o.pattern, device);
  if (s.variants.empty()) {
    std::fprintf(stderr, "rmsnorm-cert fuzz: no runnable variant matches '%s'%s\n", o.pattern.c_str(),
                 s.unavailable.empty() ? "" : (" (device variants need a GPU: " + device.reason + ")").c_str());
    return kExitUsage;
  }
  if (o.ops.empty()) o.ops = implemented_ops(s.variants);
  if (o.ops.empty())
    return cl.usage_exit("the selected variants implement no op" + (o.op_name.empty() ? "" : " " + o.op_name));
  harness::Case probe;
  if (!draw_fuzz_case(0, o.ops[0], nullptr, probe)) {
    std::fprintf(stderr, "rmsnorm-cert fuzz: this build has no rmsnorm_generators library (properties/)\n");
    return kExitError;
  }
  print_header(o, s, device);
  return fuzz_loop(o, s.variants);
}

}  // namespace cert
