// The kernel time namespace helper of `vclock bench` (bench_timens.h).
#include "cli/bench/bench_timens.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "lib/kernel_clock.h"

namespace vclock::cli {
namespace {

int timens_request_fd = -1;  // the bench writes n here
int timens_reply_fd = -1;    // the helper answers here when its loop is done

// The helper: waits for n, runs the loop, answers; exits when the bench
// closes its end (the bench exited, however it ended).
[[noreturn]] void helper_main(int requests, int replies) {
  const kernel::gettime_fn vdso = kernel::vdso_gettime();
  std::uint64_t n = 0;
  while (read(requests, &n, sizeof(n)) == static_cast<ssize_t>(sizeof(n))) {
    std::uint64_t fold = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      timespec ts;
      vdso(CLOCK_MONOTONIC, &ts);
      fold += static_cast<std::uint64_t>(ts.tv_nsec);
    }
    if (write(replies, &fold, sizeof(fold)) != static_cast<ssize_t>(sizeof(fold))) break;
  }
  _exit(0);
}

bool write_text(const char* path, const char* text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const auto n = static_cast<ssize_t>(std::strlen(text));
  const bool ok = write(fd, text, static_cast<std::size_t>(n)) == n;
  close(fd);
  return ok;
}

}  // namespace

bool start_timens_helper() noexcept {
  if (kernel::vdso_gettime() == nullptr) return false;
  int requests[2];
  int replies[2];
  if (pipe2(requests, O_CLOEXEC) != 0) return false;
  if (pipe2(replies, O_CLOEXEC) != 0) {
    close(requests[0]);
    close(requests[1]);
    return false;
  }
  // An intermediate child unshares (the bench's own later children stay
  // where they are), sets the offsets and forks the helper, which is the
  // first process in the new namespace.
  const pid_t middle = fork();
  if (middle == 0) {
    if (unshare(CLONE_NEWTIME) != 0 ||
        !write_text("/proc/self/timens_offsets", "monotonic 1 0\nboottime 1 0\n")) {
      _exit(1);
    }
    const pid_t helper = fork();
    if (helper == 0) {
      close(requests[1]);
      close(replies[0]);
      helper_main(requests[0], replies[1]);
    }
    _exit(helper > 0 ? 0 : 1);
  }
  close(requests[0]);
  close(replies[1]);
  int status = 0;
  const bool started = middle > 0 && waitpid(middle, &status, 0) == middle && WIFEXITED(status) &&
                       WEXITSTATUS(status) == 0;
  if (!started) {
    close(requests[1]);
    close(replies[0]);
    return false;
  }
  timens_request_fd = requests[1];
  timens_reply_fd = replies[0];
  return true;
}

std::uint64_t timens_vdso_loop(std::uint64_t n) noexcept {
  std::uint64_t fold = 0;
  if (write(timens_request_fd, &n, sizeof(n)) != static_cast<ssize_t>(sizeof(n)) ||
      read(timens_reply_fd, &fold, sizeof(fold)) != static_cast<ssize_t>(sizeof(fold))) {
    return 0;
  }
  return fold;
}

}  // namespace vclock::cli
