// `time`: how long a variant takes, measured so that the number cannot be bought with wrong
// answers. Every timed launch is a checked one: N cases of one shape, each with its own values
// and its own buffers, launched back to back through the variant's own entry point (the one
// every check calls) between two waits for the whole device, then every case judged by the
// oracle. A kernel that answers right only on its first calls, caches, or leaves its work on
// another stream is timed with that work and judged on what it wrote. W warm-up calls go first,
// launched the same way on cases of their own and judged as well, but not timed: a first call
// that loads modules or compiles (Triton, torch.compile) is not a per-call cost.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "case_runner.h"
#include "command_line.h"
#include "commands.h"
#include "harness/case_file.h"
#include "harness/run.h"
#include "json_writer.h"

namespace cert {
namespace {

// Whether `v` can run the timed cases here, told before any case is built: at large shapes
// building and judging them takes minutes, which a variant that cannot run them should not cost.
rmsnorm::Status can_time(const rmsnorm::Variant& v, rmsnorm::Op op, rmsnorm::DType type, std::int64_t dim,
                         const rmsnorm::Status& device) {
  using rmsnorm::Status;
  if (!v.supports(op))
    return Status::fail(Status::Code::unsupported, v.name + " does not implement " + rmsnorm::to_string(op));
  if (v.dtypes != 0 && !((v.dtypes >> static_cast<int>(type)) & 1u))
    return Status::fail(Status::Code::unsupported, v.name + " does not claim x of type " + rmsnorm::to_string(type));
  if (v.conventions != 0 && !((v.conventions >> static_cast<int>(rmsnorm::Convention::standard)) & 1u))
    return Status::fail(Status::Code::unsupported, v.name + " does not claim the convention standard");
  const bool backward = op == rmsnorm::Op::backward || op == rmsnorm::Op::add_backward;
  if (backward && v.dg_weight_type && type != rmsnorm::DType::f32)  // the cases' dg is f32
    return Status::fail(Status::Code::unsupported, v.name + " writes dg in the weight's type only, not f32");
  const bool add = rmsnorm::has_residual(op);
  if (!v.declares(dim, type, add))
    return Status::fail(Status::Code::unsupported, v.name + " declares D in [" + std::to_string(v.min_dim_for(type)) +
                                                       ", " + std::to_string(v.max_dim_for(type, add)) + "] for " +
                                                       rmsnorm::to_string(type) + ", not " + std::to_string(dim));
  if (v.memory == rmsnorm::Memory::device && !device.ok()) return device;
  return Status::success();
}

// The command line of `time`.
struct TimeOptions {
  std::vector<std::string> pattern;  // one: the PATTERN
  std::string op = "forward", type = "bf16";
  std::int64_t rows = 4096, dim = 4096, calls = 20, warmup = 2;
  std::uint64_t seed = 1;
  bool json = false;
  bool backward = false;  // --op is backward or add_backward
  rmsnorm::Op op_id{};
  rmsnorm::DType type_id{};
};

// `time`'s options, declared into `o`. The command line outlives the parse: a case that cannot be
// built is a usage error known only once some variant can run the cases.
CommandLine declare_options(TimeOptions& o) {
  CommandLine cl("time",
                 "time PATTERN [--op OP] [--rows R] [--dim D] [--type T] [--calls N] [--warmup W] [--seed S] [--json]",
                 "Times an op of every variant PATTERN matches on N cases of one shape (values from\n"
                 "the case format's generator, seeds S, S+1, ...), launched back to back between two waits\n"
                 "for the whole device, after W warm-up calls launched the same way, then judges every one\n"
                 "of them, the warm-up calls too. Prints the time per call, the\n"
                 "bandwidth of its reads and writes, and the cases that passed, with the line that replays\n"
                 "the first failure. Exit 1 when a case failed or a variant could not run them.");
  cl.positionals(&o.pattern, "a variant pattern", 1, 1);
  cl.option("--op", &o.op, "OP", "forward, add_forward, backward or add_backward (default forward)");
  cl.option("--rows", &o.rows, "R", "rows per case (default 4096)", 1, std::int64_t{1} << 24);
  cl.option("--dim", &o.dim, "D", "width (default 4096)", 1, std::int64_t{1} << 20);
  cl.option("--type", &o.type, "T", "x, weight and y type: f32, f16 or bf16 (default bf16)");
  cl.option("--calls", &o.calls, "N", "timed and checked calls, one case each (default 20)", 1, 1000);
  cl.option("--warmup", &o.warmup, "W", "untimed calls before them, checked too (default 2)", 0, 100);
  cl.option_u64("--seed", &o.seed, "S", "seed of the first case (default 1)");
  cl.flag("--json", &o.json, "print the results as JSON");
  return cl;
}

// False when the command ends here (--help, a usage error), with its exit status in `exit_status`.
bool parse_options(CommandLine& cl, const Args& args, TimeOptions& o, int& exit_status) {
  const auto stop = [&](const std::string& error) {
    exit_status = cl.usage_exit(error);
    return false;
  };
  std::string error;
  if (!cl.parse(args, error)) return stop(error);
  using rmsnorm::Op;
  if (!rmsnorm::parse(o.op, o.op_id) ||
      (o.op_id != Op::forward && o.op_id != Op::add_forward && o.op_id != Op::backward && o.op_id != Op::add_backward))
    return stop("--op wants forward, add_forward, backward or add_backward, got '" + o.op + "'");
  o.backward = o.op_id == Op::backward || o.op_id == Op::add_backward;
  if (!rmsnorm::parse(o.type, o.type_id)) return stop("--type wants f32, f16 or bf16, got '" + o.type + "'");
  return true;
}

// The cases of a run: [0, W) warm up, [W, W + N) are timed.
struct TimeCases {
  std::vector<harness::Case> all;  // in order, for the line that replays a failure
  // [0]: the warm-up cases, [1]: the timed ones.
  std::vector<oracle::ForwardCase> forward[2];
  std::vector<oracle::BackwardCase> backward[2];
};

// Case i's line: the shape, types and op of the run, values from the generator with seed S + i
// (the seeds run on across the warm-up and the timed cases).
std::string case_line(const TimeOptions& o, std::int64_t i) {
  char line[512];
  std::snprintf(line, sizeof line,
                "op=%s;rows=%lld;dim=%lld;x_type=%s;g_type=%s;%s=%s;convention=standard;eps=1e-6;"
                "generator=regimes;seed=0x%016llx;x.regime=normal;o.regime=normal;g.regime=random;dy.regime=normal",
                o.op.c_str(), static_cast<long long>(o.rows), static_cast<long long>(o.dim), o.type.c_str(),
                o.type.c_str(), o.backward ? "dg_type" : "y_type", o.backward ? "f32" : o.type.c_str(),
                static_cast<unsigned long long>(o.seed + static_cast<std::uint64_t>(i)));
  return line;
}

// The W + N cases; false with `error` at the first that cannot be built.
bool build_cases(const TimeOptions& o, TimeCases& out, std::string& error) {
  for (std::int64_t i = 0; i < o.warmup + o.calls; ++i) {
    harness::Case c;
    if (!harness::parse_case(case_line(o, i), c, error)) return false;
    if (o.backward) {
      oracle::BackwardCase b;
      if (!harness::backward_case(c, b, error)) return false;
      out.backward[i >= o.warmup].push_back(std::move(b));
    } else {
      oracle::ForwardCase f;
      if (!harness::forward_case(c, f, error)) return false;
      out.forward[i >= o.warmup].push_back(std::move(f));
    }
    out.all.push_back(c);
  }
  return true;
}

// The bytes that must move per call, as rmsnorm-bench counts them per element: x and y (forward),
// h, o, y and the new h (fused add), x, dy and dx (backward), and dresidual (its fused-add form).
double bytes_per_call(const TimeOptions& o) {
  const double element_bytes =
      static_cast<double>(rmsnorm::size_of(o.type_id)) * (o.op == "forward" ? 2 : o.op == "backward" ? 3 : 4);
  return element_bytes * static_cast<double>(o.rows) * static_cast<double>(o.dim);
}

// What timing one variant found.
struct VariantTiming {
  rmsnorm::Status status;  // not ok: the cases did not all run, and nothing was timed
  double per_call = 0;     // seconds per timed call (0 when not timed)
  std::int64_t passed = 0;
  std::string first_failure, repro;  // "" when every case that ran passed
  bool ok = false;                   // timed, and every one of the W + N cases passed
};

// One set of cases (0: warm-up, 1: timed) launched back to back, then judged.
harness::TimedRun time_set(const rmsnorm::Variant& v, const TimeOptions& o, const TimeCases& cases, int set) {
  return o.backward ? harness::time_backward(v, cases.backward[set], harness::Layout{})
                    : harness::time_forward(v, cases.forward[set], harness::Layout{});
}

// Counts the cases that passed, and keeps the first that failed with the line that replays it on `v`.
// outcomes[i] is the verdict on case i.
void judge(const rmsnorm::Variant& v, const std::vector<harness::Outcome>& outcomes,
           const std::vector<harness::Case>& cases, VariantTiming& r) {
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].pass()) {
      ++r.passed;
    } else if (r.first_failure.empty()) {
      r.first_failure = "case " + std::to_string(i) + ": " + outcomes[i].summary();
      harness::Case exact = cases[i];
      exact.variant = v.name;
      r.repro = repro_command(exact);
    }
  }
}

// Times `v` (`runnable`: whether it can run the cases here): the warm-up set, then the timed set
// unless the warm-up could not run; every case that ran judged.
VariantTiming time_variant(const rmsnorm::Variant& v, const rmsnorm::Status& runnable, const TimeOptions& o,
                           const TimeCases& cases) {
  harness::TimedRun t;
  if (!runnable.ok()) {
    t.status = runnable;
  } else if (o.warmup > 0) {
    t = time_set(v, o, cases, 0);
  }
  std::vector<harness::Outcome> outcomes = std::move(t.outcomes);
  if (t.status.ok()) {
    t = time_set(v, o, cases, 1);
    outcomes.insert(outcomes.end(), t.outcomes.begin(), t.outcomes.end());
  }
  VariantTiming r;
  r.status = t.status;
  r.per_call = t.status.ok() ? t.seconds / static_cast<double>(o.calls) : 0;
  judge(v, outcomes, cases.all, r);
  r.ok = t.status.ok() && r.passed == o.warmup + o.calls;
  return r;
}

// A variant's object in the JSON.
void timing_json(JsonWriter& j, const rmsnorm::Variant& v, const VariantTiming& r, double bytes) {
  j.begin_object().value("variant", v.name).value("status", r.status.ok() ? "ok" : rmsnorm::to_string(r.status.code));
  j.value("reason", r.status.reason).value("microseconds_per_call", r.per_call * 1e6);
  j.value("gb_per_s", r.per_call > 0 ? bytes / r.per_call / 1e9 : 0.0).value("cases_passed", r.passed);
  j.value("first_failure", r.first_failure).value("repro", r.repro).end_object();
}

// A variant's console line: why it did not run, or its time, bandwidth and passes with the first
// failure under it.
void print_timing(const rmsnorm::Variant& v, const VariantTiming& r, std::int64_t checked, double bytes) {
  if (!r.status.ok()) {
    std::printf("NOT RUN %-34s %s\n", v.name.c_str(), r.status.reason.c_str());
    return;
  }
  std::printf("%-4s %-36s %10.1f us per call %8.1f GB/s   %lld/%lld cases passed\n", r.ok ? "PASS" : "FAIL",
              v.name.c_str(), r.per_call * 1e6, bytes / r.per_call / 1e9, static_cast<long long>(r.passed),
              static_cast<long long>(checked));
  if (!r.first_failure.empty()) std::printf("       %s\n       %s\n", r.first_failure.c_str(), r.repro.c_str());
}

// Times every variant in turn (`runnable[k]`: whether variants[k] can run the cases here) and reports
// them, a line each or (--json) one object at the end. Exit 1 unless every one ran and passed.
int time_variants(const TimeOptions& o, const std::vector<const rmsnorm::Variant*>& variants,
                  const std::vector<rmsnorm::Status>& runnable, const TimeCases& cases) {
  const double bytes = bytes_per_call(o);
  bool all_ok = true;
  JsonWriter j;
  j.begin_object().value("op", o.op).value("rows", o.rows).value("dim", o.dim).value("type", o.type);
  j.value("calls", o.calls).value("warmup", o.warmup);
  j.begin_array("variants");
  if (!o.json)
    std::printf("%s %lld x %lld %s, %lld timed calls after %lld warm-up calls, each a case of its own, every one "
                "judged\n",
                o.op.c_str(), static_cast<long long>(o.rows), static_cast<long long>(o.dim), o.type.c_str(),
                static_cast<long long>(o.calls), static_cast<long long>(o.warmup));
  for (std::size_t k = 0; k < variants.size(); ++k) {
    const VariantTiming r = time_variant(*variants[k], runnable[k], o, cases);
    all_ok = all_ok && r.ok;
    timing_json(j, *variants[k], r, bytes);
    if (!o.json) print_timing(*variants[k], r, o.warmup + o.calls, bytes);
  }
  j.end_array().value("passed", all_ok).end_object();
  if (o.json) std::printf("%s\n", j.str().c_str());
  return all_ok ? kExitOk : kExitFailed;
}

}  // namespace

int run_time(const Args& args) {
  TimeOptions o;
  CommandLine cl = declare_options(o);
  int status = kExitOk;
  if (!parse_options(cl, args, o, status)) return status;
  const std::vector<const rmsnorm::Variant*> variants = rmsnorm::match_variants(o.pattern[0]);
  if (variants.empty()) {
    std::fprintf(stderr, "rmsnorm-cert time: no variant matches '%s' (rmsnorm-cert list variants)\n",
                 o.pattern[0].c_str());
    return kExitUsage;
  }
  const rmsnorm::Status device = rmsnorm::device_status();
  std::vector<rmsnorm::Status> runnable;
  for (const rmsnorm::Variant* v : variants) runnable.push_back(can_time(*v, o.op_id, o.type_id, o.dim, device));
  const bool any_runnable =
      std::any_of(runnable.begin(), runnable.end(), [](const rmsnorm::Status& s) { return s.ok(); });
  TimeCases cases;
  std::string error;
  if (any_runnable && !build_cases(o, cases, error)) return cl.usage_exit("cannot build the cases: " + error);
  return time_variants(o, variants, runnable, cases);
}

}  // namespace cert
