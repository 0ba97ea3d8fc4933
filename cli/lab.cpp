// `lab`: the lecture's lab, run on this machine. The worked exercises (hand calculations of the
// forward and backward, the padding divisor, the bandwidth ledger), the FP64 central-difference
// check of dx and dγ with a verdict per element, the two bugs the lab asks to plant (sum instead
// of mean in the backward, the padded divisor) caught by the judge through their mutants,
// host.reference judged on the same row, and on a GPU the bandwidth of the eager chain, a plain
// fused kernel and ours (rmsnorm-bench --lab). One screen; --json gives the same as data.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "build_info.h"
#include "case_runner.h"
#include "command_line.h"
#include "commands.h"
#include "device_info.h"
#include "json_writer.h"
#include "subprocess.h"

namespace cert {

namespace {

// The lab's row in FP64: y = x·r·g with r = 1/sqrt(mean(x²) + eps), and the loss L = Σ dy·y
// whose gradient the backward computes.
struct Row {
  std::vector<double> x, g, dy;
  double eps = 0;
};

double rstd_of(const std::vector<double>& x, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  return 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
}

// L in long double: the central difference divides L's rounding error by 2h, and an FP64 sum over
// a row of D terms would leave about 5e-11·D of it there (3e-8 at D = 1025, against the lab's 1e-7).
long double loss(const Row& row, const std::vector<double>& x, const std::vector<double>& g) {
  long double ss = 0;
  for (double v : x) ss += static_cast<long double>(v) * v;
  const long double r = 1.0L / std::sqrt(ss / static_cast<long double>(x.size()) + row.eps);
  long double l = 0;
  for (std::size_t i = 0; i < x.size(); ++i) l += static_cast<long double>(row.dy[i]) * x[i] * r * g[i];
  return l;
}

// The lecture's analytic gradient: u = dy·g, a = mean(u·x), dx = r·u − r³·x·a, dγ = dy·x·r.
// `sum_not_mean`: the planted bug, a = Σ(u·x).
void gradient(const Row& row, bool sum_not_mean, std::vector<double>& dx, std::vector<double>& dg) {
  const std::size_t n = row.x.size();
  const double r = rstd_of(row.x, row.eps);
  double a = 0;
  for (std::size_t i = 0; i < n; ++i) a += row.dy[i] * row.g[i] * row.x[i];
  if (!sum_not_mean) a /= static_cast<double>(n);
  dx.assign(n, 0);
  dg.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    dx[i] = r * row.dy[i] * row.g[i] - r * r * r * row.x[i] * a;
    dg[i] = row.dy[i] * row.x[i] * r;
  }
}

// [L(v + h e_i) − L(v − h e_i)] / (2h) for every i, v = x (wrt_x) or g.
std::vector<double> central(const Row& row, bool wrt_x, double h) {
  std::vector<double> out(row.x.size());
  for (std::size_t i = 0; i < row.x.size(); ++i) {
    std::vector<double> xp = row.x, xm = row.x, gp = row.g, gm = row.g;
    (wrt_x ? xp : gp)[i] += h;
    (wrt_x ? xm : gm)[i] -= h;
    out[i] = static_cast<double>((loss(row, xp, gp) - loss(row, xm, gm)) / (2.0L * h));
  }
  return out;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

struct Check {
  std::string section, name, detail;
  bool pass = false;
};

const char* verdict(bool pass) { return pass ? "PASS" : "FAIL"; }

// One row of width x.size(): a backward case when dy is given, else a forward one.
harness::Case row_case(rmsnorm::DType t, std::vector<float> x, std::vector<float> g, std::vector<float> dy, float eps) {
  harness::Case c;
  c.op = dy.empty() ? rmsnorm::Op::forward : rmsnorm::Op::backward;
  c.rows = 1;
  c.dim = static_cast<std::int64_t>(x.size());
  c.x_type = c.y_type = c.g_type = t;
  c.eps = eps;
  c.x = std::move(x);
  c.g = std::move(g);
  c.dy = std::move(dy);
  return c;
}

harness::Case backward_case_of(const Row& row) {
  std::vector<float> x, g, dy;
  for (std::size_t i = 0; i < row.x.size(); ++i) {
    x.push_back(static_cast<float>(row.x[i]));
    g.push_back(static_cast<float>(row.g[i]));
    dy.push_back(static_cast<float>(row.dy[i]));
  }
  return row_case(rmsnorm::DType::f32, x, g, dy, static_cast<float>(row.eps));
}

// Runs `c` on the variant `name` through the judge: "pass", or the first failure and the repro line.
CaseRun judge(harness::Case c, const std::string& name, std::string& error) {
  CaseRun run;
  const rmsnorm::Variant* v = rmsnorm::find_variant(name);
  if (v == nullptr) {
    error = name + " is not registered in this build";
    return run;
  }
  if (!c.is_forward() && c.rstd.empty() && !fill_backward_rstd(c, error)) return run;
  c.variant = name;
  return run_case(c, *v);
}

// The bandwidth section: rmsnorm-bench --lab --json on this machine's GPU. Its output is one flat
// JSON object of rmsnorm-bench's own format, so reading a field is finding its key.
struct Timed {
  std::string name;
  double launches = 0, bytes_per_element = 0, us = 0, tbps = 0, pct_of_copy = 0;
};

struct Bandwidth {
  std::string skipped;  // why nothing was timed (no device, no rmsnorm-bench): neither a pass nor a failure
  std::string error;    // rmsnorm-bench ran and gave no result: a failure
  std::string device, variant;
  std::vector<Timed> timed;  // eager, fused, ours, copy
  double ulp_eager_fused = 0, ulp_eager_ours = 0, ulp_fused_ours = 0;
  bool agree = false;
};

bool json_number(const std::string& json, const std::string& key, double& out) {
  const std::string k = "\"" + key + "\":";
  const std::size_t p = json.find(k);
  if (p == std::string::npos) return false;
  const char* begin = json.c_str() + p + k.size();
  char* end = nullptr;
  out = std::strtod(begin, &end);
  return end != begin;
}

std::string json_string(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\":\"";
  const std::size_t p = json.find(k);
  if (p == std::string::npos) return "";
  const std::size_t e = json.find('"', p + k.size());
  return e == std::string::npos ? "" : json.substr(p + k.size(), e - p - k.size());
}

// The object of `json` that begins with "name":"<name>" ("" when there is none).
std::string json_named(const std::string& json, const std::string& name) {
  const std::size_t p = json.find("{\"name\":\"" + name + "\"");
  if (p == std::string::npos) return "";
  const std::size_t e = json.find('}', p);
  return e == std::string::npos ? "" : json.substr(p, e - p + 1);
}

Bandwidth measure_bandwidth(std::int64_t rows, std::int64_t dims) {
  Bandwidth b;
  const DeviceInfo device = device_info();
  if (!device.available) {
    b.skipped = device.reason.rfind("no CUDA device", 0) == 0 ? device.reason : "no CUDA device: " + device.reason;
    return b;
  }
  std::string path = RMSNORM_CERT_BENCH_PATH;
  if (const char* env = std::getenv("RMSNORM_BENCH"); env && *env) path = env;
  if (!is_executable(path)) {
    b.skipped = path.empty() ? "this build has no rmsnorm-bench" : path + " is not built (ninja rmsnorm-bench)";
    return b;
  }
  const ChildResult r =
      run_child({path, "--lab", "--json", "--rows", std::to_string(rows), "--dims", std::to_string(dims)}, {}, 300);
  std::string err = r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  if (err.size() > 300) err = err.substr(err.size() - 300);
  for (char& c : err)
    if (c == '\n') c = ' ';
  // 77: rmsnorm-bench found no device it could time on.
  if (r.exited_ok() && r.exit_code == 77) {
    const std::size_t p = err.find("no CUDA device");
    b.skipped = p != std::string::npos ? err.substr(p) : "no CUDA device: " + err;
    return b;
  }
  // Exit 1 with a result: the three disagree, which the checks report.
  const bool exited = r.exited_ok() && (r.exit_code == 0 || r.exit_code == 1);
  bool ok = exited && json_number(r.out, "eager_fused", b.ulp_eager_fused) &&
            json_number(r.out, "eager_ours", b.ulp_eager_ours) && json_number(r.out, "fused_ours", b.ulp_fused_ours);
  for (const char* name : {"eager", "fused", "ours", "copy"}) {
    const std::string o = json_named(r.out, name);
    Timed t;
    t.name = name;
    ok = ok && json_number(o, "launches", t.launches) && json_number(o, "bytes_per_element", t.bytes_per_element) &&
         json_number(o, "time_us", t.us) && json_number(o, "tbps", t.tbps) &&
         json_number(o, "pct_of_copy", t.pct_of_copy);
    b.timed.push_back(t);
  }
  if (!ok) {
    b.error = r.describe() + (exited ? ", no result read" : "") + (err.empty() ? "" : ": " + err);
    return b;
  }
  b.device = json_string(r.out, "device");
  b.variant = json_string(r.out, "variant");
  b.agree = r.out.find("\"agree\":true") != std::string::npos;
  return b;
}

void add(std::vector<Check>& checks, const char* section, std::string name, bool pass, std::string detail) {
  checks.push_back({section, std::move(name), std::move(detail), pass});
}

// The central differences' step and the lecture's threshold on them.
constexpr double kStep = 1e-6, kThreshold = 1e-7;

struct Element { double dx, ndx, dg, ndg; bool pass; };

// The exercises worked by hand, and the lab script's two edge rows judged on host.reference.
void add_exercises(std::vector<Check>& checks) {
  char buf[256];
  // Exercise 1: x = [1, 2], γ = [1, 2], dy = [3, −1], ε = 0, by hand.
  {
    const Row row{{1, 2}, {1, 2}, {3, -1}, 0};
    std::vector<double> dx, dg;
    gradient(row, false, dx, dg);
    const double r = rstd_of(row.x, 0);
    const double xdx = row.x[0] * dx[0] + row.x[1] * dx[1];
    const bool ok = std::fabs(r - 0.632456) < 1e-6 && std::fabs(dx[0] - 2.023858) < 1e-6 && std::fabs(dx[1] + 1.011929) < 1e-6 &&
                    std::fabs(dg[0] - 1.897367) < 1e-6 && std::fabs(dg[1] + 1.264911) < 1e-6 && std::fabs(xdx) < 1e-12;
    std::snprintf(buf, sizeof buf, "r = %.6f, y = [%.6f, %.6f], dx = [%.6f, %.6f], dγ = [%.6f, %.6f], x·dx = %.1g", r, r,
                  4 * r, dx[0], dx[1], dg[0], dg[1], xdx);
    add(checks, "exercises", "1: forward and backward by hand", ok, buf);
    std::string why;
    const CaseRun run = judge(backward_case_of(row), "host.reference", why);
    add(checks, "exercises", "1: host.reference on it, judged", run.verdict == RunVerdict::pass, why.empty() ? to_string(run.verdict) : why);
  }
  // Exercise 2: D = 5 ones padded to BLOCK = 8, the sum divided by 8.
  {
    const double right = 1.0, wrong = std::sqrt(8.0 / 5.0);
    std::snprintf(buf, sizeof buf, "correct y = %.6f; divided by BLOCK = 8: y = %.6f (%.2f%% too large)", right, wrong,
                  100 * (wrong - 1));
    add(checks, "exercises", "2: the padding divisor", std::fabs(wrong - 1.264911) < 1e-6, buf);
  }
  // Exercise 3: R = 4096, D = 8192 bf16, one read and one write in 50 µs on a 3.35 TB/s HBM.
  {
    const double bytes = 4096.0 * 8192 * 2 * 2, t = 50e-6, peak = 3.35e12;
    const double bw = bytes / t, floor_us = bytes / peak * 1e6;
    std::snprintf(buf, sizeof buf, "%.0f B / 50 µs = %.3f TB/s = %.1f%% of 3.35 TB/s; lower bound %.1f µs (%.2fx)", bytes,
                  bw / 1e12, 100 * bw / peak, floor_us, 50 / floor_us);
    add(checks, "exercises", "3: the bandwidth ledger", std::fabs(bw / 1e12 - 2.684) < 1e-3 && std::fabs(floor_us - 40.1) < 0.05, buf);
  }

  // The lab script's other checks, judged on host.reference: a zero row (y = 0, dx = dy·g/sqrt(eps),
  // finite for eps > 0) and fp16 rows of ±300, whose squares (90000) overflow fp16 but not fp32.
  {
    const harness::Case zero = row_case(rmsnorm::DType::f32, {0, 0}, {1, 2}, {3, -1}, 1e-5f);
    std::string why;
    CaseRun run = judge(zero, "host.reference", why);
    add(checks, "exercises", "zero row, eps = 1e-5: dx = dy*g/sqrt(eps), judged on host.reference", run.verdict == RunVerdict::pass,
        why.empty() ? (run.verdict == RunVerdict::pass ? "ok" : run.reason) : why);
    const harness::Case f16 = row_case(rmsnorm::DType::f16, {300, -300, 300, -300}, {1, 1, 1, 1}, {}, 1e-6f);
    why.clear();
    run = judge(f16, "host.reference", why);
    add(checks, "exercises", "fp16 x = ±300 (300² > 65504): squares in fp32, judged on host.reference", run.verdict == RunVerdict::pass,
        why.empty() ? (run.verdict == RunVerdict::pass ? "ok: y = ±1, finite" : run.reason) : why);
  }

}

// The lab's row: x ~ N(0, 1), γ ~ U(0.5, 1.5), dy ~ N(0, 1).
Row lab_row(std::int64_t width, double eps, std::int64_t seed) {
  Row row;
  row.eps = eps;
  {
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(0.5, 1.5);
    for (std::int64_t i = 0; i < width; ++i) {
      // Values representable in fp32, so that the judged kernel sees the very row differentiated here.
      row.x.push_back(static_cast<float>(normal(rng)));
      row.g.push_back(static_cast<float>(uniform(rng)));
      row.dy.push_back(static_cast<float>(normal(rng)));
    }
  }
  return row;
}

// FP64 central differences against the analytic gradient, element by element (ndx: the central
// dx, which the planted bug is measured against too), and host.reference judged on the row.
std::vector<Element> add_gradient(const Row& row, std::vector<Check>& checks, std::vector<double>& ndx) {
  char buf[256];
  const std::int64_t width = static_cast<std::int64_t>(row.x.size());
  const double h = kStep, tol = kThreshold;
  std::vector<double> dx, dg;
  gradient(row, false, dx, dg);
  ndx = central(row, true, h);
  const std::vector<double> ndg = central(row, false, h);
  std::vector<Element> elements;
  int failed_elements = 0;
  for (std::int64_t i = 0; i < width; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const bool pass = std::fabs(dx[k] - ndx[k]) < tol && std::fabs(dg[k] - ndg[k]) < tol;
    failed_elements += !pass;
    elements.push_back({dx[k], ndx[k], dg[k], ndg[k], pass});
  }
  std::snprintf(buf, sizeof buf, "D = %lld: max |dx − central| %.2g, max |dγ − central| %.2g (h = %g, threshold %g); %d of %lld elements fail",
                static_cast<long long>(width), max_abs_diff(dx, ndx), max_abs_diff(dg, ndg), h, tol, failed_elements,
                static_cast<long long>(width));
  add(checks, "gradient", "central differences, every element", failed_elements == 0, buf);
  {
    std::string why;
    const CaseRun run = judge(backward_case_of(row), "host.reference", why);
    add(checks, "gradient", "host.reference's fp32 dx and dγ on this row, judged", run.verdict == RunVerdict::pass,
        why.empty() ? (run.verdict == RunVerdict::pass ? "within the contract's bounds" : run.reason) : why);
  }
  return elements;
}

// The two bugs the lab asks to plant, caught through their mutants.
void add_planted_bugs(const Row& row, const std::vector<double>& ndx, std::vector<Check>& checks) {
  char buf[256];
  const std::int64_t width = static_cast<std::int64_t>(row.x.size());
  const double tol = kThreshold;
  // Sum instead of mean: the reduction term grows by D (nothing at D = 1).
  {
    std::vector<double> bdx, bdg;
    gradient(row, true, bdx, bdg);
    const double err = max_abs_diff(bdx, ndx);
    const bool expect_caught = width > 1;
    std::snprintf(buf, sizeof buf, "FP64: max |dx − central| = %.3g at D = %lld (%s)", err, static_cast<long long>(width),
                  expect_caught ? "the term a is D times too large" : "at D = 1 the sum is the mean: nothing to catch");
    add(checks, "planted bugs", "sum instead of mean, by central differences", (err >= tol) == expect_caught, buf);
    harness::Case c = backward_case_of(row);
    std::string why;
    const CaseRun run = judge(c, "mutant.host.reference.M4_bwd_sum_not_mean", why);
    const bool caught = run.verdict == RunVerdict::fail;
    c.variant = "mutant.host.reference.M4_bwd_sum_not_mean";
    add(checks, "planted bugs", "sum instead of mean, as mutant M4 through the judge", why.empty() && caught == expect_caught,
        !why.empty() ? why
        : caught   ? "caught: " + run.reason.substr(0, 120) + "\n    " + repro_command(c)
                   : std::string("not caught") + (expect_caught ? "" : ", as expected at D = 1"));
  }
  // The padded divisor: the host reference pads to 32 lanes; widths that are not a multiple are caught.
  {
    harness::Case c = row_case(rmsnorm::DType::f32, {1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, {}, 0);
    std::string why;
    const CaseRun run = judge(c, "mutant.host.reference.M1_padded_divisor", why);
    const bool caught = run.verdict == RunVerdict::fail;
    c.variant = "mutant.host.reference.M1_padded_divisor";
    add(checks, "planted bugs", "padded divisor (D = 5 ones), as mutant M1 through the judge", why.empty() && caught,
        !why.empty() ? why : caught ? "caught: " + run.reason.substr(0, 120) + "\n    " + repro_command(c) : std::string("not caught"));
  }

}

void add_bandwidth(const Bandwidth& bw, std::vector<Check>& checks) {
  char buf[256];
  // The lab's claims on the GPU: the three agree within one bf16 ulp (the eager chain rounds
  // twice), and fused, moving 1/9 of eager's bytes, is faster than eager, and ours at least as
  // fast as fused (within 2 %: medians of the same kernel move about 1 % run to run).
  if (!bw.error.empty()) {
    add(checks, "bandwidth", "rmsnorm-bench --lab --json", false, bw.error);
  } else if (bw.skipped.empty()) {
    std::snprintf(buf, sizeof buf, "max ulp eager-fused %.0f, eager-ours %.0f, fused-ours %.0f", bw.ulp_eager_fused,
                  bw.ulp_eager_ours, bw.ulp_fused_ours);
    add(checks, "bandwidth", "eager, fused and ours agree within one bf16 ulp", bw.agree, buf);
    const Timed &eager = bw.timed[0], &fused = bw.timed[1], &ours = bw.timed[2];
    std::snprintf(buf, sizeof buf, "%.1f µs > %.1f µs >= %.1f µs", eager.us, fused.us, ours.us);
    add(checks, "bandwidth", "fused faster than eager (1/9 of its bytes), ours at least as fast as fused (2 %)",
        fused.us < eager.us && ours.us <= 1.02 * fused.us, buf);
  }
}

}  // namespace

int run_lab(const Args& args) {
  CommandLine cl("lab", "lab [--width D] [--eps E] [--seed S] [--gpu-rows R] [--gpu-dims D] [--json]",
                 "The lecture's lab on this machine: the worked exercises, the FP64 central-difference check of\n"
                 "dx and dgamma per element, the planted bugs (sum instead of mean, the padded divisor) caught by\n"
                 "the judge through their mutants, host.reference judged on the same row, and on a GPU the\n"
                 "bandwidth of the eager 8-kernel chain, a plain fused kernel and ours (rmsnorm-bench --lab).\n"
                 "Exit 1 when a check fails; without a GPU the bandwidth is skipped.");
  std::int64_t width = 7, seed = 1, gpu_rows = 4096, gpu_dims = 8192;
  double eps = 1e-5;
  bool json = false;
  cl.option("--width", &width, "D", "the row's width (default 7; try 1, 13, 1025)", 1, 1 << 20);
  cl.option("--eps", &eps, "E", "eps inside the root (default 1e-5)");
  cl.option("--seed", &seed, "S", "seed of the row's x, gamma and dy (default 1)", 0, std::numeric_limits<std::int64_t>::max());
  cl.option("--gpu-rows", &gpu_rows, "R", "rows of the bandwidth section's bf16 input (default 4096)", 1,
            (std::int64_t{1} << 31) - 1);
  cl.option("--gpu-dims", &gpu_dims, "D", "its row width (default 8192)", 1, (std::int64_t{1} << 31) - 1);
  cl.flag("--json", &json, "print the results as JSON");
  std::string error;
  if (!cl.parse(args, error)) return cl.usage_exit(error);
  if (!(eps >= 0) || !std::isfinite(eps)) return cl.usage_exit("--eps wants a finite value >= 0");

  std::vector<Check> checks;
  add_exercises(checks);
  const Row row = lab_row(width, eps, seed);
  std::vector<double> ndx;
  const std::vector<Element> elements = add_gradient(row, checks, ndx);
  add_planted_bugs(row, ndx, checks);
  const Bandwidth bw = measure_bandwidth(gpu_rows, gpu_dims);
  add_bandwidth(bw, checks);

  bool all = true;
  for (const Check& c : checks) all = all && c.pass;
  if (json) {
    JsonWriter j;
    j.begin_object().value("width", width).value("eps", eps).value("seed", seed).value("h", kStep).value("threshold", kThreshold);
    j.begin_array("checks");
    for (const Check& c : checks)
      j.begin_object().value("section", c.section).value("name", c.name).value("pass", c.pass).value("detail", c.detail).end_object();
    j.end_array().begin_array("elements");
    for (const Element& e : elements)
      j.begin_object().value("dx", e.dx).value("dx_central", e.ndx).value("dg", e.dg).value("dg_central", e.ndg).value("pass", e.pass).end_object();
    j.end_array().begin_object("bandwidth");
    if (!bw.skipped.empty()) {
      j.value("skipped", bw.skipped);
    } else if (!bw.error.empty()) {
      j.value("error", bw.error);
    } else {
      j.value("device", bw.device)
          .value("rows", gpu_rows)
          .value("dim", gpu_dims)
          .value("dtype", "bf16")
          .value("variant", bw.variant);
      j.begin_array("methods");
      for (const Timed& t : bw.timed)
        j.begin_object()
            .value("name", t.name)
            .value("launches", t.launches)
            .value("bytes_per_element", t.bytes_per_element)
            .value("time_us", t.us)
            .value("tbps", t.tbps)
            .value("pct_of_copy", t.pct_of_copy)
            .end_object();
      j.end_array()
          .begin_object("max_ulp")
          .value("eager_fused", bw.ulp_eager_fused)
          .value("eager_ours", bw.ulp_eager_ours);
      j.value("fused_ours", bw.ulp_fused_ours).end_object();
    }
    j.end_object().value("pass", all).end_object();
    std::printf("%s\n", j.str().c_str());
    return all ? kExitOk : kExitFailed;
  }
  std::printf("rmsnorm-cert lab: D = %lld, eps = %g, seed %lld (x ~ N(0,1), gamma ~ U(0.5,1.5), dy ~ N(0,1))\n",
              static_cast<long long>(width), eps, static_cast<long long>(seed));
  std::string section;
  for (const Check& c : checks) {
    if (c.section != section) {
      section = c.section;
      const bool bandwidth_table = section == "bandwidth" && bw.error.empty();
      if (bandwidth_table)
        std::printf("bandwidth: %s, R = %lld, D = %lld bf16; the same-run copy of 4 B/element: %.1f µs, %.3f TB/s\n",
                    bw.device.c_str(), static_cast<long long>(gpu_rows), static_cast<long long>(gpu_dims),
                    bw.timed[3].us, bw.timed[3].tbps);
      else
        std::printf("%s\n", section.c_str());
      if (section == "gradient") {
        std::printf("  %4s %13s %13s %13s %13s\n", "i", "dx", "central", "dgamma", "central");
        const std::size_t shown = std::min<std::size_t>(elements.size(), 8);
        for (std::size_t i = 0; i < shown; ++i)
          std::printf("  %4zu %13.8f %13.8f %13.8f %13.8f  %s\n", i, elements[i].dx, elements[i].ndx, elements[i].dg, elements[i].ndg,
                      verdict(elements[i].pass));
        if (shown < elements.size()) std::printf("  ... %zu more elements (--json lists them)\n", elements.size() - shown);
      }
      if (bandwidth_table) {
        for (std::size_t i = 0; i < 3; ++i) {
          const Timed& t = bw.timed[i];
          std::printf("  %-5s %2.0f launch%s %2.0f B/element %9.1f µs %6.3f TB/s %5.1f%% of copy%s\n", t.name.c_str(),
                      t.launches, t.launches == 1 ? "  " : "es", t.bytes_per_element, t.us, t.tbps, t.pct_of_copy,
                      i == 2 ? ("  (" + bw.variant + ")").c_str() : "");
        }
      }
    }
    std::printf("  %-4s %s: %s\n", verdict(c.pass), c.name.c_str(), c.detail.c_str());
  }
  if (!bw.skipped.empty()) std::printf("bandwidth: skipped (%s)\n", bw.skipped.c_str());
  std::printf("lab: %s\n", all ? "PASS" : "FAIL");
  return all ? kExitOk : kExitFailed;
}

}  // namespace cert
