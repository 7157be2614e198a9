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
  if (pipe(fds) != 0) return result;
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  // `env` in front of this process's environment: the first definition wins.
  std::vector<std::string> env_strings = env;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execve(cargv[0], cargv.data(), envp.data());
    _exit(127);
  }
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
