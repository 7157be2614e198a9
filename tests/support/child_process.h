// Running a test in a fresh process: fork + execve of this test binary with
// a gtest filter, so that the child's first vclock call is truly the first
// of its process (and environment variables such as VCLOCK_DISABLE apply).
#ifndef VCLOCK_TESTS_SUPPORT_CHILD_PROCESS_H_
#define VCLOCK_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace vclock::test {

// Waits for `pid`; kills it and returns -1 if it runs past `timeout`.
inline int wait_with_watchdog(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

// argv and envp for execve, owning their strings: `env` goes in front of this
// process's environment (the first definition of a name wins).
class exec_args {
 public:
  exec_args(std::vector<std::string> argv, std::vector<std::string> env)
      : argv_(std::move(argv)), env_(std::move(env)) {
    for (char** e = environ; *e != nullptr; ++e) env_.emplace_back(*e);
    for (std::string& a : argv_) argv_pointers_.push_back(a.data());
    argv_pointers_.push_back(nullptr);
    for (std::string& e : env_) env_pointers_.push_back(e.data());
    env_pointers_.push_back(nullptr);
  }
  exec_args(const exec_args&) = delete;
  exec_args& operator=(const exec_args&) = delete;

  // Forks and execs argv[0] (a path); in the child, `fd` (if >= 0) becomes
  // `target` first. The child's pid, or -1.
  pid_t spawn(int fd = -1, int target = -1) const {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      if (fd >= 0) dup2(fd, target);
      execve(argv_pointers_[0], argv_pointers_.data(), env_pointers_.data());
      _exit(127);
    }
    return pid;
  }

 private:
  std::vector<std::string> argv_;
  std::vector<std::string> env_;
  std::vector<char*> argv_pointers_;
  std::vector<char*> env_pointers_;
};

// Runs this test binary again with --gtest_filter=`filter` and `env` in
// front of the current environment. Returns the wait status, -1 on timeout.
inline int run_child_test(const std::string& filter, const std::vector<std::string>& env,
                          std::chrono::seconds timeout) {
  const exec_args args({"/proc/self/exe", "--gtest_filter=" + filter}, env);
  const pid_t pid = args.spawn();
  if (pid < 0) return -1;
  return wait_with_watchdog(pid, timeout);
}

// What a program printed and how it ended.
struct program_result {
  int status = -1;  // wait status; -1 on timeout (the program was killed)
  std::string output;
};

// Runs `argv` (argv[0] a path) with stdout captured and stderr passed through; kills it and
// reports status -1 if it runs past `timeout`.
inline program_result run_program(const std::vector<std::string>& argv,
                                  std::chrono::seconds timeout,
                                  const std::vector<std::string>& env = {}) {
  program_result result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return result;
  const pid_t pid = exec_args(argv, env).spawn(fds[1], STDOUT_FILENO);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return result;
  }
  // The probes print one short line at exit: it fits in the pipe, so waiting first cannot
  // deadlock.
  result.status = wait_with_watchdog(pid, timeout);
  char buf[4096];
  ssize_t n = 0;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0)
    result.output.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  return result;
}

}  // namespace vclock::test

#endif  // VCLOCK_TESTS_SUPPORT_CHILD_PROCESS_H_
