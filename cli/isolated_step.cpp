#include "isolated_step.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "case_runner.h"
#include "command_line.h"
#include "harness/run.h"
#include "subprocess.h"

namespace cert {

namespace {

// A step may take long (a slow kernel, many cases), but a hung kernel must not hang certify.
constexpr double kStepSeconds = 1800;
constexpr int kExitCrash = 4;  // the child saw a launch failure of a device kernel

std::string self_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "rmsnorm-cert";
  buf[n] = 0;
  return buf;
}

std::vector<std::string> launcher_argv() {
  std::vector<std::string> argv;
  const char* env = std::getenv(kLauncherEnv);
  if (!env || !*env) return argv;
  std::string cur;
  for (const char* p = env;; ++p) {
    if (*p == '\t' || *p == '\0') {
      if (!cur.empty()) argv.push_back(cur);
      cur.clear();
      if (!*p) break;
    } else {
      cur += *p;
    }
  }
  return argv;
}

// The command a step of `v` starts with, `_step` and its arguments to follow.
std::vector<std::string> step_command(const rmsnorm::Variant& v) {
  if (v.in_process) {
    std::vector<std::string> argv = launcher_argv();
    argv.push_back("_step");
    return argv;
  }
  return {self_path(), "_step"};
}

// One field of a tab-separated record: no tabs, newlines kept as "\n".
std::string field(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\t') out += ' ';
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}
std::string unfield(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> f;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', start);
    f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return f;
    start = tab + 1;
  }
}

void print_profile(const oracle::Profile& p) {
  std::printf("profile\t%lld\t%lld\t%lld\t%a\t%a\t%lld\n", static_cast<long long>(p.elements),
              static_cast<long long>(p.correctly_rounded), static_cast<long long>(p.failures), p.max_ulp,
              p.max_err_over_bound, static_cast<long long>(p.fallbacks));
  // The distributions, per output type that has elements: "hist <type> <ulp bins,...> <bound bins,...>".
  for (int t = 0; t < oracle::Profile::kTypes; ++t) {
    std::string ulp, bound;
    std::int64_t any = 0;
    for (int b = 0; b < oracle::Profile::kUlpBins; ++b) {
      ulp += (b ? "," : "") + std::to_string(p.ulp_hist[t][b]);
      any += p.ulp_hist[t][b];
    }
    for (int b = 0; b < oracle::Profile::kBoundBins; ++b) bound += (b ? "," : "") + std::to_string(p.bound_hist[t][b]);
    if (any > 0) std::printf("hist\t%d\t%s\t%s\n", t, ulp.c_str(), bound.c_str());
  }
}

// Comma-separated counts into `out` (n of them), false on a malformed list.
bool read_counts(const std::string& text, std::int64_t* out, int n) {
  std::istringstream in(text);
  std::string item;
  int k = 0;
  while (std::getline(in, item, ',')) {
    if (k >= n) return false;
    out[k++] = std::atoll(item.c_str());
  }
  return k == n;
}

void read_hist(const std::vector<std::string>& f, oracle::Profile& p) {
  if (f.size() != 4) return;
  const int t = std::atoi(f[1].c_str());
  if (t < 0 || t >= oracle::Profile::kTypes) return;
  read_counts(f[2], p.ulp_hist[t], oracle::Profile::kUlpBins);
  read_counts(f[3], p.bound_hist[t], oracle::Profile::kBoundBins);
}

bool read_profile(const std::vector<std::string>& f, oracle::Profile& p) {
  if (f.size() != 7) return false;
  p.elements = std::atoll(f[1].c_str());
  p.correctly_rounded = std::atoll(f[2].c_str());
  p.failures = std::atoll(f[3].c_str());
  p.max_ulp = std::strtod(f[4].c_str(), nullptr);
  p.max_err_over_bound = std::strtod(f[5].c_str(), nullptr);
  p.fallbacks = std::atoll(f[6].c_str());
  return true;
}

// What the parent makes of a child that did not finish its record.
struct StepEnd {
  bool complete = false;
  std::string last_case, crash_reason;
  std::vector<std::vector<std::string>> records;
};

StepEnd run_step_child(const std::vector<std::string>& argv, Progress& progress, const std::string& what) {
  progress.update(what + " (in a child process)");
  const ChildResult child = run_child(argv, {}, kStepSeconds);
  StepEnd end;
  std::istringstream in(child.out);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = split_tabs(line);
    if (f[0] == "case" && f.size() == 2) end.last_case = unfield(f[1]);
    else if (f[0] == "crash" && f.size() == 2) end.crash_reason = unfield(f[1]);
    else if (f[0] == "end") end.complete = true;
    else end.records.push_back(std::move(f));
  }
  if (!child.exited_ok() || child.exit_code != 0) end.complete = false;
  if (!end.complete && end.crash_reason.empty()) {
    end.crash_reason = child.timed_out ? "no result within " + std::to_string(static_cast<int>(kStepSeconds)) + " s"
                                       : child.describe();
    if (child.started && child.exit_code != 0 && child.signal == 0 && !child.err.empty()) {
      std::string tail = child.err.substr(child.err.size() > 300 ? child.err.size() - 300 : 0);
      for (char& c : tail)
        if (c == '\n') c = ' ';
      end.crash_reason += ": " + tail;
    }
    // A Python host's child dumps its stack on a fatal signal (faulthandler): where it died.
    const std::size_t fatal = child.err.find("Fatal Python error");
    if (child.signal != 0 && fatal != std::string::npos) {
      std::string stack = child.err.substr(fatal, 1200);
      std::string squeezed;
      for (char c : stack) {
        if (c == '\n') c = ' ';
        if (c == ' ' && !squeezed.empty() && squeezed.back() == ' ') continue;
        squeezed += c;
      }
      end.crash_reason += ": " + squeezed;
    }
  }
  return end;
}

std::string crash_text(const StepEnd& end) {
  return "crashed on case " + (end.last_case.empty() ? std::string("(before its first case)") : end.last_case) + " (" +
         end.crash_reason + ")";
}

}  // namespace

bool can_isolate(const rmsnorm::Variant& variant) {
  return variant.external && (!variant.in_process || !launcher_argv().empty());
}

SuiteRun isolated_suite(const rmsnorm::Variant& variant, std::int64_t cases, int jobs, Progress& progress) {
  SuiteRun run;
  const std::vector<std::string> ids = in_process_properties(variant);
  if (ids.empty()) run.problems.push_back("this build has no property checks (properties/), which an in-process kernel needs");
  run.results = run_property_pool(ids.size(), {}, jobs, progress, false, [&](std::size_t k) {
    std::vector<std::string> argv = step_command(variant);
    for (const std::string& a : {std::string("property"), std::string("--variant"), variant.name, std::string("--property"),
                                 ids[k], std::string("--cases"), std::to_string(cases)})
      argv.push_back(a);
    Progress quiet("", /*quiet=*/true);
    const StepEnd end = run_step_child(argv, quiet, ids[k]);
    PropertyResult r;
    r.id = r.name = ids[k];
    r.executable = "a child process of the kernel's host";
    r.cases_requested = cases;
    for (const auto& f : end.records)
      if (f[0] == "property" && f.size() == 14) {
        r.name = unfield(f[1]);
        r.verdict = static_cast<PropertyVerdict>(std::atoi(f[2].c_str()));
        r.cases_asked = std::atoll(f[3].c_str());
        r.cases_checked = std::atoll(f[4].c_str());
        r.cases_rejected = std::atoll(f[5].c_str());
        r.cases_not_applicable = std::atoll(f[6].c_str());
        r.failed_after = std::atoll(f[7].c_str());
        r.assertions_passed = std::atoll(f[8].c_str());
        r.seconds = std::strtod(f[9].c_str(), nullptr);
        r.message = unfield(f[10]);
        r.counterexample = unfield(f[11]);
        r.tags = unfield(f[12]);
      }
    if (!end.complete) {
      r.verdict = PropertyVerdict::crashed;
      r.message = crash_text(end);
      r.counterexample = end.last_case;
    }
    return r;
  });
  return run;
}

CorpusRun isolated_corpus(const rmsnorm::Variant& variant, const std::string& dir, Progress& progress,
                          bool stop_at_first_failure) {
  std::vector<std::string> argv = step_command(variant);
  for (const std::string& a : {std::string("corpus"), std::string("--variant"), variant.name, std::string("--corpus"), dir})
    argv.push_back(a);
  if (stop_at_first_failure) argv.push_back("--stop-first");
  const StepEnd end = run_step_child(argv, progress, "corpus");
  CorpusRun run;
  run.dir = dir;
  for (const auto& f : end.records) {
    if (f[0] == "counts" && f.size() == 8) {
      run.files = std::atoi(f[1].c_str());
      run.passed = std::atoi(f[2].c_str());
      run.failed = std::atoi(f[3].c_str());
      run.skipped = std::atoi(f[4].c_str());
      run.invalid = std::atoi(f[5].c_str());
      run.not_matching = std::atoi(f[6].c_str());
      run.error = unfield(f[7]);
    } else if (f[0] == "failure" && f.size() == 4) {
      run.failures.push_back({unfield(f[1]), unfield(f[2]), unfield(f[3])});
    } else if (f[0] == "profile") {
      read_profile(f, run.profile);
    } else if (f[0] == "hist") {
      read_hist(f, run.profile);
    }
  }
  if (!end.complete) {
    ++run.failed;
    run.failures.push_back({dir, crash_text(end), repro_command(end.last_case)});
  }
  return run;
}

OpRun isolated_generated_op(const rmsnorm::Variant& variant, rmsnorm::Op op, std::int64_t cases, std::uint64_t seed,
                            Progress& progress) {
  char seed_text[32];
  std::snprintf(seed_text, sizeof seed_text, "0x%016llx", static_cast<unsigned long long>(seed));
  std::vector<std::string> argv = step_command(variant);
  for (const std::string& a : {std::string("generated"), std::string("--variant"), variant.name, std::string("--op"),
                               std::string(rmsnorm::to_string(op)), std::string("--cases"), std::to_string(cases),
                               std::string("--seed"), std::string(seed_text)})
    argv.push_back(a);
  const StepEnd end = run_step_child(argv, progress, std::string(rmsnorm::to_string(op)) + " cases");
  OpRun r;
  r.op = op;
  for (const auto& f : end.records) {
    if (f[0] == "counts" && f.size() == 6) {
      r.cases = std::atoll(f[1].c_str());
      r.passed = std::atoll(f[2].c_str());
      r.failed = std::atoll(f[3].c_str());
      r.skipped = std::atoll(f[4].c_str());
      r.seconds = std::strtod(f[5].c_str(), nullptr);
    } else if (f[0] == "failure" && f.size() == 2) {
      r.failures.push_back(unfield(f[1]));
    } else if (f[0] == "first_skip" && f.size() == 2) {
      r.first_skip = unfield(f[1]);
    } else if (f[0] == "unreachable" && f.size() == 2) {
      r.unreachable = unfield(f[1]);
    } else if (f[0] == "profile") {
      read_profile(f, r.profile);
    } else if (f[0] == "hist") {
      read_hist(f, r.profile);
    }
  }
  if (!end.complete) {
    ++r.failed;
    r.cases = std::max<std::int64_t>(r.cases, r.failed);
    const std::string repro = repro_command(end.last_case);
    r.failures.push_back(crash_text(end) + (repro.empty() ? "" : "\n    " + repro));
  }
  return r;
}

int run_step(const Args& args) {
  CommandLine cl("_step", "_step corpus|generated|property --variant NAME ...",
                 "Internal: one certification step of a plugin kernel, run by certify in a child process.");
  std::vector<std::string> kind;
  std::string name, corpus, op_name, property;
  std::int64_t cases = 0;
  std::uint64_t seed = 0;
  bool stop_first = false;
  cl.positionals(&kind, "corpus|generated|property", 1, 1);
  cl.option("--property", &property, "ID", "the property (P1 ...) of an in-process kernel");
  cl.option("--variant", &name, "NAME", "the variant");
  cl.option("--corpus", &corpus, "DIR", "corpus directory");
  cl.option("--op", &op_name, "OP", "op of the generated cases");
  cl.option("--cases", &cases, "N", "generated cases", 0, 100000000);
  cl.option_u64("--seed", &seed, "S", "seed");
  cl.flag("--stop-first", &stop_first, "stop at the first failure");
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  const rmsnorm::Variant* v = rmsnorm::find_variant(name);
  if (!v) {
    std::fprintf(stderr, "_step: no variant %s\n", name.c_str());
    return kExitUsage;
  }
  Progress progress("[" + v->name + "] ");
  // Each case is announced before it runs. A device kernel that left the context broken (a
  // sticky error) ends the step as a crash on the case before.
  bool ran = false;
  const auto check_device = [&] {
    if (!ran || v->memory != rmsnorm::Memory::device) return;
    const rmsnorm::Status health = harness::device_health();
    if (health.ok()) return;
    std::printf("crash\t%s\n", field("the CUDA context is broken: " + health.reason).c_str());
    std::fflush(stdout);
    std::_Exit(kExitCrash);
  };
  const BeforeCase before = [&](const std::string& line) {
    check_device();
    std::printf("case\t%s\n", field(line).c_str());
    std::fflush(stdout);
    ran = true;
  };
  if (kind[0] == "corpus") {
    const CorpusRun run = replay_corpus_here(*v, corpus, progress, stop_first, before);
    check_device();
    for (const CorpusFailure& f : run.failures) {
      std::printf("failure\t%s\t%s\t%s\n", field(f.file).c_str(), field(f.reason).c_str(), field(f.repro).c_str());
    }
    std::printf("counts\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", run.files, run.passed, run.failed, run.skipped, run.invalid,
                run.not_matching, field(run.error).c_str());
    print_profile(run.profile);
  } else if (kind[0] == "generated") {
    rmsnorm::Op op;
    if (!rmsnorm::parse(op_name, op)) return cl.usage_exit("unknown op '" + op_name + "'");
    const OpRun r = run_generated_op_here(*v, op, cases, seed, progress, before);
    check_device();
    for (const std::string& f : r.failures) std::printf("failure\t%s\n", field(f).c_str());
    if (!r.first_skip.empty()) std::printf("first_skip\t%s\n", field(r.first_skip).c_str());
    if (!r.unreachable.empty()) std::printf("unreachable\t%s\n", field(r.unreachable).c_str());
    std::printf("counts\t%lld\t%lld\t%lld\t%lld\t%.6f\n", static_cast<long long>(r.cases),
                static_cast<long long>(r.passed), static_cast<long long>(r.failed), static_cast<long long>(r.skipped),
                r.seconds);
    print_profile(r.profile);
  } else if (kind[0] == "property") {
    const PropertyResult r = run_property_here(*v, property, cases, before);
    check_device();
    std::printf("property\t%s\t%d\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%.6f\t%s\t%s\t%s\t%s\n", field(r.name).c_str(),
                static_cast<int>(r.verdict), static_cast<long long>(r.cases_asked), static_cast<long long>(r.cases_checked),
                static_cast<long long>(r.cases_rejected), static_cast<long long>(r.cases_not_applicable),
                static_cast<long long>(r.failed_after), static_cast<long long>(r.assertions_passed), r.seconds,
                field(r.message).c_str(), field(r.counterexample).c_str(), field(r.tags).c_str(), field(r.executable).c_str());
  } else {
    return cl.usage_exit("unknown step '" + kind[0] + "'");
  }
  progress.done();
  std::printf("end\n");
  return kExitOk;
}

}  // namespace cert
