// Running a test in a fresh process: fork + execve of this test binary with
// a gtest filter, so that the child's first vclock call is truly the first
// of its process (and environment variables such as VCLOCK_DISABLE apply).
#ifndef VCLOCK_TESTS_SUPPORT_CHILD_PROCESS_H_
#define VCLOCK_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
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

// Runs this test binary again with --gtest_filter=`filter` and `env` in
// front of the current environment. Returns the wait status, -1 on timeout.
inline int run_child_test(const std::string& filter, const std::vector<std::string>& env,
                          std::chrono::seconds timeout) {
  std::vector<std::string> strings = env;
  for (char** e = environ; *e != nullptr; ++e) strings.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& s : strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string filter_arg = "--gtest_filter=" + filter;
  char* argv[] = {self.data(), filter_arg.data(), nullptr};
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execve(self.c_str(), argv, envp.data());
    _exit(127);
  }
  if (pid < 0) return -1;
  return wait_with_watchdog(pid, timeout);
}

}  // namespace vclock::test

#endif  // VCLOCK_TESTS_SUPPORT_CHILD_PROCESS_H_
