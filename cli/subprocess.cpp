#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace cert {

std::string ChildResult::describe() const {
  if (!started) return "did not start: " + error;
  if (timed_out) return "killed after the time limit";
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exit_code);
}

bool is_executable(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

namespace {

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> p;
  p.reserve(v.size() + 1);
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv_in,
                      const std::vector<std::pair<std::string, std::string>>& extra_env, double timeout_seconds) {
  ChildResult res;
  if (argv_in.empty()) {
    res.error = "empty command";
    return res;
  }
  if (!is_executable(argv_in[0])) {
    res.error = argv_in[0] + " is not an executable file";
    return res;
  }
  // Everything the child needs is prepared before fork(): after it only async-signal-safe calls.
  std::vector<std::string> argv = argv_in;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    bool overridden = false;
    for (const auto& [name, value] : extra_env)
      if (kv.compare(0, name.size() + 1, name + "=") == 0) overridden = true;
    if (!overridden) env.push_back(kv);
  }
  for (const auto& [name, value] : extra_env) env.push_back(name + "=" + value);
  std::vector<char*> cargv = c_strings(argv), cenv = c_strings(env);

  // O_CLOEXEC: run_child is called from several threads at once (certify's and mutants' pools).
  // A child forked by another thread while these pipes are open would otherwise keep their write
  // ends across its exec, and this call would see no end of file until that sibling exited too:
  // every test of a pool then lasted as long as the longest one running beside it. dup2() below
  // clears the flag on the child's own stdout and stderr.
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    res.error = std::string("pipe: ") + std::strerror(errno);
    return res;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    res.error = std::string("pipe: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return res;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    res.error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return res;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so a time-out kills what it started too
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    ::execve(cargv[0], cargv.data(), cenv.data());
    const char msg[] = "exec failed\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  res.started = true;
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  const auto start = std::chrono::steady_clock::now();
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&res.out, &res.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    int wait_ms = 200;
    if (timeout_seconds > 0) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (elapsed > timeout_seconds) {
        res.timed_out = true;
        ::kill(-pid, SIGKILL);
        break;
      }
    }
    const int n = ::poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !res.timed_out) res.signal = WTERMSIG(status);
  return res;
}

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = dirs.find(':', start);
    const std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable(candidate)) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

std::string exec_replace(const std::vector<std::string>& argv_in) {
  if (argv_in.empty()) return "empty command";
  if (!is_executable(argv_in[0])) return argv_in[0] + " is not an executable file";
  std::vector<std::string> argv = argv_in;
  std::vector<char*> cargv = c_strings(argv);
  ::execv(cargv[0], cargv.data());
  return argv_in[0] + ": " + std::strerror(errno);
}

}  // namespace cert
