// vclockd as a real process for tests: started by fork+exec with its own
// $NOTIFY_SOCKET (so the test learns of READY=1 as systemd would), stopped by
// pid (SIGTERM, then SIGKILL after a deadline), and always reaped, also when
// a test fails half-way (the destructor). Never by name.
#ifndef VCLOCK_TESTS_SUPPORT_DAEMON_PROCESS_H_
#define VCLOCK_TESTS_SUPPORT_DAEMON_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"

namespace vclock::test {

// A fresh directory (mode 0755) removed with everything in it at the end.
class temp_dir {
 public:
  temp_dir() {
    char pattern[] = "/tmp/vclock-test-XXXXXX";
    const char* d = mkdtemp(pattern);
    path_ = d != nullptr ? d : "";
    if (!path_.empty()) chmod(path_.c_str(), 0755);
  }
  ~temp_dir() {
    if (!path_.empty()) {
      const std::string cmd = "rm -rf '" + path_ + "'";
      if (std::system(cmd.c_str()) != 0) std::perror("rm -rf");
    }
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class daemon_process {
 public:
  // `args` after the program name; `env` in front of this process's environment.
  daemon_process(const std::string& program, std::vector<std::string> args,
                 const std::string& work_dir, std::vector<std::string> env = {}) {
    notify_path_ =
        work_dir + "/notify." + std::to_string(getpid()) + "." + std::to_string(counter()++);
    notify_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", notify_path_.c_str());
    unlink(notify_path_.c_str());
    if (bind(notify_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      std::perror("bind notify socket");
    }
    stderr_path_ = work_dir + "/vclockd.stderr." + std::to_string(counter()++);
    std::vector<std::string> argv{program};
    argv.insert(argv.end(), args.begin(), args.end());
    env.push_back("NOTIFY_SOCKET=" + notify_path_);
    const int err = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = exec_args(std::move(argv), std::move(env)).spawn(err, STDERR_FILENO);
    if (err >= 0) close(err);
  }

  ~daemon_process() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      kill(pid_, SIGCONT);
      waitpid(pid_, nullptr, 0);
    }
    if (notify_fd_ >= 0) close(notify_fd_);
    unlink(notify_path_.c_str());
  }
  daemon_process(const daemon_process&) = delete;
  daemon_process& operator=(const daemon_process&) = delete;

  pid_t pid() const { return pid_; }

  // Waits for a datagram that contains `what` ("READY=1"); false on timeout.
  bool wait_for_notification(const char* what, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd pfd{notify_fd_, POLLIN, 0};
      if (poll(&pfd, 1, 10) == 1) {
        char buf[256] = {};
        const ssize_t n = recv(notify_fd_, buf, sizeof(buf) - 1, 0);
        if (n > 0 && std::strstr(buf, what) != nullptr) return true;
      }
      if (has_exited()) return false;
    }
    return false;
  }

  bool has_exited() {
    if (exited_ || pid_ <= 0) return true;  // never started: nothing to wait for
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      status_ = status;
    }
    return exited_;
  }

  // Waits until the process stops itself (SIGSTOP); false on timeout or exit.
  bool wait_until_stopped(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return false;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG | WUNTRACED);
      if (r == pid_ && WIFSTOPPED(status)) return true;
      if (r == pid_) {
        exited_ = true;
        status_ = status;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  // Sends `signo` and waits for the exit; the wait status, or -1 if it had to
  // be killed after `timeout`.
  int stop(int signo = SIGTERM, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    if (pid_ <= 0) return -1;  // fork failed: never signal pid -1 (every process)
    if (exited_) return status_;
    kill(pid_, signo);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!has_exited()) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
        exited_ = true;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return status_;
  }

  // What it logged so far.
  std::string log() const {
    std::string text;
    if (FILE* f = std::fopen(stderr_path_.c_str(), "r")) {
      char buf[4096];
      std::size_t n = 0;
      while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
      std::fclose(f);
    }
    return text;
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  pid_t pid_ = -1;
  int notify_fd_ = -1;
  std::string notify_path_;
  std::string stderr_path_;
  bool exited_ = false;
  int status_ = 0;
};

}  // namespace vclock::test

#endif  // VCLOCK_TESTS_SUPPORT_DAEMON_PROCESS_H_
