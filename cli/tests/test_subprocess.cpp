// run_child() from several threads at once, as certify's and mutants' pools call it.
#include "harness/catch.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "subprocess.h"

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

// A child forked by one thread must not hold the pipes of a child another thread is starting at
// the same moment: each call ends when its own child does. (With inherited pipes, certify's pool
// of property tests, all started together, finished in clusters: each test lasted as long as the
// longest one it had leaked its pipes to.) Sixteen threads start together, one child sleeps 3 s,
// the others 0.2 s; none of the short ones may wait for the long one.
TEST_CASE("run_child returns when its own child exits, whatever other threads start beside it", "[cli]") {
  const char* sleep = cert::is_executable("/bin/sleep") ? "/bin/sleep" : "/usr/bin/sleep";
  REQUIRE(cert::is_executable(sleep));
  constexpr int kThreads = 16;
  for (int round = 0; round < 2; ++round) {
    std::vector<double> took(kThreads, 0);
    std::vector<int> exit_codes(kThreads, -1);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) {
        }
        const cert::ChildResult r = cert::run_child({sleep, i == 0 ? "3" : "0.2"}, {}, 30);
        exit_codes[static_cast<std::size_t>(i)] = r.exit_code;
        took[static_cast<std::size_t>(i)] = seconds_since(t0);
      });
    for (auto& t : threads) t.join();
    CHECK(took[0] >= 3.0);
    for (int i = 0; i < kThreads; ++i) {
      CAPTURE(round, i, took[static_cast<std::size_t>(i)]);
      CHECK(exit_codes[static_cast<std::size_t>(i)] == 0);
      if (i > 0) CHECK(took[static_cast<std::size_t>(i)] < 2.0);
    }
  }
}

TEST_CASE("run_child reports the exit code, the output and a time-out", "[cli]") {
  const char* sh = "/bin/sh";
  REQUIRE(cert::is_executable(sh));
  const cert::ChildResult ok = cert::run_child({sh, "-c", "echo out; echo err >&2; exit 3"}, {{"X", "1"}}, 30);
  CHECK(ok.exit_code == 3);
  CHECK(ok.out == "out\n");
  CHECK(ok.err == "err\n");
  const cert::ChildResult env = cert::run_child({sh, "-c", "printf %s \"$RMSNORM_TEST_VALUE\""}, {{"RMSNORM_TEST_VALUE", "v"}}, 30);
  CHECK(env.out == "v");
  const cert::ChildResult slow = cert::run_child({sh, "-c", "sleep 10"}, {}, 0.3);
  CHECK(slow.timed_out);
  CHECK_FALSE(slow.exited_ok());
}
