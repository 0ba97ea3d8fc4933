// `time`: how long a variant takes, measured so that the number cannot be bought with wrong
// answers. Every timed launch is a checked one: N cases of one shape, each with its own values
// and its own buffers, launched back to back through the variant's own entry point (the one
// every check calls) between two waits for the whole device, then every case judged by the
// oracle. A kernel that answers right only on its first calls, caches, or leaves its work on
// another stream is timed with that work and judged on what it wrote. W warm-up calls go first,
// launched the same way on cases of their own and judged as well, but not timed: a first call
// that loads modules or compiles (Triton, torch.compile) is not a per-call cost.
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
  if (!v.supports(op)) return Status::fail(Status::Code::unsupported, v.name + " does not implement " + rmsnorm::to_string(op));
  if (v.dtypes != 0 && !((v.dtypes >> static_cast<int>(type)) & 1u))
    return Status::fail(Status::Code::unsupported, v.name + " does not claim x of type " + rmsnorm::to_string(type));
  if (v.conventions != 0 && !((v.conventions >> static_cast<int>(rmsnorm::Convention::standard)) & 1u))
    return Status::fail(Status::Code::unsupported, v.name + " does not claim the convention standard");
  const bool backward = op == rmsnorm::Op::backward || op == rmsnorm::Op::add_backward;
  if (backward && v.dg_weight_type && type != rmsnorm::DType::f32)  // the cases' dg is f32
    return Status::fail(Status::Code::unsupported, v.name + " writes dg in the weight's type only, not f32");
  const bool add = op == rmsnorm::Op::add_forward || op == rmsnorm::Op::add_backward;
  if (!v.declares(dim, type, add))
    return Status::fail(Status::Code::unsupported, v.name + " declares D in [" + std::to_string(v.min_dim_for(type)) + ", " +
                                                       std::to_string(v.max_dim_for(type, add)) + "] for " +
                                                       rmsnorm::to_string(type) + ", not " + std::to_string(dim));
  if (v.memory == rmsnorm::Memory::device && !device.ok()) return device;
  return Status::success();
}

}  // namespace

int run_time(const Args& args) {
  CommandLine cl("time", "time PATTERN [--op OP] [--rows R] [--dim D] [--type T] [--calls N] [--warmup W] [--seed S] [--json]",
                 "Times an op of every variant PATTERN matches on N cases of one shape (values from\n"
                 "the case format's generator, seeds S, S+1, ...), launched back to back between two waits\n"
                 "for the whole device, after W warm-up calls launched the same way, then judges every one\n"
                 "of them, the warm-up calls too. Prints the time per call, the\n"
                 "bandwidth of its reads and writes, and the cases that passed, with the line that replays\n"
                 "the first failure. Exit 1 when a case failed or a variant could not run them.");
  std::vector<std::string> pattern;
  std::string op = "forward", type = "bf16";
  std::int64_t rows = 4096, dim = 4096, calls = 20, warmup = 2;
  std::uint64_t seed = 1;
  bool json = false;
  cl.positionals(&pattern, "a variant pattern", 1, 1);
  cl.option("--op", &op, "OP", "forward, add_forward, backward or add_backward (default forward)");
  cl.option("--rows", &rows, "R", "rows per case (default 4096)", 1, std::int64_t{1} << 24);
  cl.option("--dim", &dim, "D", "width (default 4096)", 1, std::int64_t{1} << 20);
  cl.option("--type", &type, "T", "x, weight and y type: f32, f16 or bf16 (default bf16)");
  cl.option("--calls", &calls, "N", "timed and checked calls, one case each (default 20)", 1, 1000);
  cl.option("--warmup", &warmup, "W", "untimed calls before them, checked too (default 2)", 0, 100);
  cl.option_u64("--seed", &seed, "S", "seed of the first case (default 1)");
  cl.flag("--json", &json, "print the results as JSON");
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  const bool backward = op == "backward" || op == "add_backward";
  if (op != "forward" && op != "add_forward" && !backward)
    return cl.usage_exit("--op wants forward, add_forward, backward or add_backward, got '" + op + "'");

  rmsnorm::Op op_id{};
  rmsnorm::DType type_id{};
  if (!rmsnorm::parse(op, op_id)) return cl.usage_exit("unknown op '" + op + "'");
  if (!rmsnorm::parse(type, type_id)) return cl.usage_exit("--type wants f32, f16 or bf16, got '" + type + "'");
  const std::vector<const rmsnorm::Variant*> variants = rmsnorm::match_variants(pattern[0]);
  if (variants.empty()) {
    std::fprintf(stderr, "rmsnorm-cert time: no variant matches '%s' (rmsnorm-cert list variants)\n", pattern[0].c_str());
    return kExitUsage;
  }
  const rmsnorm::Status device = rmsnorm::device_status();
  std::vector<rmsnorm::Status> runnable;
  bool any_runnable = false;
  for (const rmsnorm::Variant* v : variants) {
    runnable.push_back(can_time(*v, op_id, type_id, dim, device));
    any_runnable = any_runnable || runnable.back().ok();
  }

  std::vector<harness::Case> cases;
  // [0]: the warm-up cases, [1]: the timed ones.
  std::vector<oracle::ForwardCase> forward[2];
  std::vector<oracle::BackwardCase> backward_cases[2];
  // Cases [0, W) warm up, [W, W + N) are timed: the seeds run on across both.
  for (std::int64_t i = 0; any_runnable && i < warmup + calls; ++i) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "op=%s;rows=%lld;dim=%lld;x_type=%s;g_type=%s;%s=%s;convention=standard;eps=1e-6;"
                  "generator=regimes;seed=0x%016llx;x.regime=normal;o.regime=normal;g.regime=random;dy.regime=normal",
                  op.c_str(), static_cast<long long>(rows), static_cast<long long>(dim), type.c_str(), type.c_str(),
                  backward ? "dg_type" : "y_type", backward ? "f32" : type.c_str(),
                  static_cast<unsigned long long>(seed + static_cast<std::uint64_t>(i)));
    harness::Case c;
    if (!harness::parse_case(line, c, error)) return cl.usage_exit("cannot build the cases: " + error);
    if (backward) {
      oracle::BackwardCase b;
      if (!harness::backward_case(c, b, error)) return cl.usage_exit("cannot build the cases: " + error);
      backward_cases[i >= warmup].push_back(std::move(b));
    } else {
      oracle::ForwardCase f;
      if (!harness::forward_case(c, f, error)) return cl.usage_exit("cannot build the cases: " + error);
      forward[i >= warmup].push_back(std::move(f));
    }
    cases.push_back(c);
  }
  // The bytes that must move per element, as rmsnorm-bench counts them: x and y (forward), h, o, y
  // and the new h (fused add), x, dy and dx (backward), and dresidual (its fused-add form).
  const double element_bytes =
      static_cast<double>(rmsnorm::size_of(type_id)) * (op == "forward" ? 2 : op == "backward" ? 3 : 4);
  const double bytes = element_bytes * static_cast<double>(rows) * static_cast<double>(dim);

  bool all_ok = true;
  JsonWriter j;
  j.begin_object().value("op", op).value("rows", rows).value("dim", dim).value("type", type).value("calls", calls);
  j.value("warmup", warmup);
  j.begin_array("variants");
  if (!json)
    std::printf("%s %lld x %lld %s, %lld timed calls after %lld warm-up calls, each a case of its own, every one judged\n",
                op.c_str(), static_cast<long long>(rows), static_cast<long long>(dim), type.c_str(),
                static_cast<long long>(calls), static_cast<long long>(warmup));
  // One set of cases (0: warm-up, 1: timed) launched back to back, then judged.
  const auto time_set = [&](const rmsnorm::Variant& v, int set) {
    return backward ? harness::time_backward(v, backward_cases[set], harness::Layout{})
                    : harness::time_forward(v, forward[set], harness::Layout{});
  };
  for (std::size_t k = 0; k < variants.size(); ++k) {
    const rmsnorm::Variant* v = variants[k];
    harness::TimedRun t;
    if (!runnable[k].ok()) {
      t.status = runnable[k];
    } else if (warmup > 0) {
      t = time_set(*v, 0);
    }
    std::vector<harness::Outcome> outcomes = std::move(t.outcomes);
    if (t.status.ok()) {
      t = time_set(*v, 1);
      outcomes.insert(outcomes.end(), t.outcomes.begin(), t.outcomes.end());
    }
    std::int64_t passed = 0;
    std::string first_failure, repro;
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i].pass()) {
        ++passed;
      } else if (first_failure.empty()) {
        first_failure = "case " + std::to_string(i) + ": " + outcomes[i].summary();
        harness::Case exact = cases[i];
        exact.variant = v->name;
        repro = repro_command(exact);
      }
    }
    const std::int64_t checked = warmup + calls;
    const double per_call = t.status.ok() ? t.seconds / static_cast<double>(calls) : 0;
    const bool ok = t.status.ok() && passed == checked;
    all_ok = all_ok && ok;
    j.begin_object().value("variant", v->name).value("status", t.status.ok() ? "ok" : rmsnorm::to_string(t.status.code));
    j.value("reason", t.status.reason).value("microseconds_per_call", per_call * 1e6);
    j.value("gb_per_s", per_call > 0 ? bytes / per_call / 1e9 : 0.0).value("cases_passed", passed);
    j.value("first_failure", first_failure).value("repro", repro).end_object();
    if (json) continue;
    if (!t.status.ok()) {
      std::printf("NOT RUN %-34s %s\n", v->name.c_str(), t.status.reason.c_str());
      continue;
    }
    std::printf("%-4s %-36s %10.1f us per call %8.1f GB/s   %lld/%lld cases passed\n", ok ? "PASS" : "FAIL",
                v->name.c_str(), per_call * 1e6, bytes / per_call / 1e9, static_cast<long long>(passed),
                static_cast<long long>(checked));
    if (!first_failure.empty()) std::printf("       %s\n       %s\n", first_failure.c_str(), repro.c_str());
  }
  j.end_array().value("passed", all_ok).end_object();
  if (json) std::printf("%s\n", j.str().c_str());
  return all_ok ? kExitOk : kExitFailed;
}

}  // namespace cert
