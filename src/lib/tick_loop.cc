// The real-time driver of a timekeeper: a periodic tick, and an immediate
// one when the kernel sets REALTIME.
#include "lib/tick_loop.h"

#include <poll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>

#include "lib/kernel_clock.h"
#include "vclock/detail/reader.h"

namespace vclock {
namespace {

// A timerfd that the kernel cancels whenever REALTIME is set or the system
// resumes. -1 if unavailable.
int open_clock_was_set_fd() noexcept {
  const int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) return -1;
  itimerspec far{};
  far.it_value.tv_sec = std::int64_t{1} << 40;  // never expires
  if (timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &far, nullptr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True if the clock was set since the timerfd was armed. It then stays
// cancelled until re-armed.
bool clock_was_set(int fd) noexcept {
  std::uint64_t expirations = 0;
  return read(fd, &expirations, sizeof(expirations)) < 0 && errno == ECANCELED;
}

}  // namespace

tick_loop::tick_loop(timekeeper& tk) noexcept
    : tk_(tk), fd_(open_clock_was_set_fd()), next_(kernel::now_ns(CLOCK_MONOTONIC)) {}

tick_loop::~tick_loop() {
  if (fd_ >= 0) close(fd_);
}

bool tick_loop::run_once(pthread_mutex_t* lock) noexcept {
  // The timerfd is this loop's own: read before the lock, which other
  // tickers wait on (vclockd's standby tickers), as briefly as can be.
  const bool was_set = fd_ >= 0 && clock_was_set(fd_);
  if (lock != nullptr) pthread_mutex_lock(lock);
  if (was_set) {
    // The step first: readers show the old REALTIME until it is published.
    // Then re-arm (three system calls), and look once more for a step made
    // between the wake-up and the re-arm, which would not wake us again.
    tk_.clock_was_set();
    close(fd_);
    fd_ = open_clock_was_set_fd();
    tk_.clock_was_set();
  } else {
    tk_.tick();
  }
  if (lock != nullptr) pthread_mutex_unlock(lock);
  return was_set;
}

bool tick_loop::wait(const sigset_t* sigmask, int watch_fd) noexcept {
  const std::int64_t tick_ns = tk_.config().tick_ns;
  const std::int64_t now = kernel::now_ns(CLOCK_MONOTONIC);
  next_ += tick_ns;
  if (next_ < now) next_ = now + tick_ns;  // overslept: don't try to catch up
  const std::int64_t wait_ns = next_ - now;
  const timespec timeout{wait_ns / detail::ns_per_s, wait_ns % detail::ns_per_s};
  pollfd fds[2] = {{fd_, POLLIN, 0}, {watch_fd, POLLIN, 0}};  // a negative fd is skipped
  if (ppoll(fds, 2, &timeout, sigmask) <= 0) return false;
  return watch_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

}  // namespace vclock
