// Running another executable of this build (the property suite, the benchmark) as a child
// process: its output captured, its environment extended, a wall-clock limit enforced.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cert {

struct ChildResult {
  bool started = false;      // false: the executable could not be run (see error)
  int exit_code = -1;        // valid when exited normally
  int signal = 0;            // non-zero: killed by this signal
  bool timed_out = false;    // killed by us after the limit
  std::string out, err;      // captured stdout and stderr
  std::string error;         // why it did not start
  bool exited_ok() const { return started && signal == 0 && !timed_out; }
  std::string describe() const;  // "exit 0", "killed by signal 11 (Segmentation fault)", ...
};

// Run `argv[0]` with the given arguments and extra environment variables (NAME, value), wait at
// most `timeout_seconds` (<= 0: no limit), capture both output streams.
ChildResult run_child(const std::vector<std::string>& argv,
                      const std::vector<std::pair<std::string, std::string>>& extra_env,
                      double timeout_seconds);

// Replace this process by `argv` (for `bench`); returns only on failure, with the reason.
std::string exec_replace(const std::vector<std::string>& argv);

bool is_executable(const std::string& path);

// The first executable `name` in the directories of $PATH; "" when there is none.
std::string find_in_path(const std::string& name);

}  // namespace cert
