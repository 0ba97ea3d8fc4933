// oracle-bench: throughput of check_forward's FP64 path (bf16 in and out, D = 4096), in
// elements per second, on one thread and on all threads. A benchmark, not a test:
//   OMP_NUM_THREADS=1 build/oracle/bench/oracle-bench      (per core)
//   build/oracle/bench/oracle-bench [rows] [dim]
#include <omp.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "oracle/oracle.h"
#include "rmsnorm/formats.h"

namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Best of `repeats` wall-clock times; `cpu` gets the CPU time of that run (on a shared machine
// the CPU time is the honest per-core figure).
double seconds_of(const oracle::ForwardCase& c, const oracle::ForwardResult& r, int threads, int repeats,
                  oracle::Verdict& v, double& cpu) {
  omp_set_num_threads(threads);
  double best = 1e30;
  for (int k = 0; k < repeats; ++k) {
    const double c0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    v = oracle::check_forward(c, r, rmsnorm::AccumShape{16, 8});
    const auto t1 = std::chrono::steady_clock::now();
    const double w = std::chrono::duration<double>(t1 - t0).count();
    if (w < best) { best = w; cpu = cpu_seconds() - c0; }
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : 1024;
  const std::int64_t dim = argc > 2 ? std::atoll(argv[2]) : 4096;
  oracle::ForwardCase c;
  c.rows = rows;
  c.dim = dim;
  c.x_type = c.g_type = c.y_type = rmsnorm::DType::bf16;
  c.eps = 1e-6f;
  std::mt19937_64 rng(20240601);
  std::normal_distribution<double> n(0.0, 1.0);
  c.x.resize(static_cast<std::size_t>(rows * dim));
  for (auto& v : c.x) v = static_cast<float>(rmsnorm::round_to(n(rng), rmsnorm::DType::bf16));
  c.g.resize(static_cast<std::size_t>(dim));
  for (auto& v : c.g) v = static_cast<float>(rmsnorm::round_to(1.0 + 0.1 * n(rng), rmsnorm::DType::bf16));
  oracle::ForwardResult r;
  r.y = oracle::forward_rounded(c);
  r.rstd = oracle::rstd_rounded(c);

  const int all = omp_get_max_threads();
  const double elements = static_cast<double>(rows * dim);
  oracle::Verdict v;
  double cpu1 = 0, cpun = 0;
  const double t1 = seconds_of(c, r, 1, 3, v, cpu1);
  std::printf("oracle-bench: check_forward bf16 D=%lld R=%lld (%.0f elements), FP64 path\n", static_cast<long long>(dim),
              static_cast<long long>(rows), elements);
  std::printf("  1 thread : %8.3f s wall  %7.2f M elements/s; CPU %.3f s: %7.2f M elements/s per core (pass=%d, fallbacks=%lld)\n",
              t1, elements / t1 / 1e6, cpu1, elements / cpu1 / 1e6, v.pass ? 1 : 0, static_cast<long long>(v.profile.fallbacks));
  if (all > 1) {
    const double tn = seconds_of(c, r, all, 3, v, cpun);
    std::printf("  %d threads: %8.3f s wall  %7.2f M elements/s total; CPU %.3f s: %7.2f M elements/s per core\n", all, tn,
                elements / tn / 1e6, cpun, elements / cpun / 1e6);
  }
  return v.pass ? 0 : 1;
}
