// The real-time driver of a timekeeper: a periodic tick, and an immediate
// one when the kernel sets REALTIME.
#include "tick_loop.h"

#include <poll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>

#include "kernel_clock.h"

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

// True if the clock was set since the last call (and re-arms).
bool clock_was_set(int& fd) noexcept {
  std::uint64_t expirations = 0;
  if (read(fd, &expirations, sizeof(expirations)) < 0 && errno == ECANCELED) {
    close(fd);
    fd = open_clock_was_set_fd();
    return true;
  }
  return false;
}

}  // namespace

tick_loop::tick_loop(timekeeper& tk) noexcept
    : tk_(tk), fd_(open_clock_was_set_fd()), next_(kernel::now_ns(CLOCK_MONOTONIC)) {}

tick_loop::~tick_loop() {
  if (fd_ >= 0) close(fd_);
}

bool tick_loop::run_once(pthread_mutex_t* lock) noexcept {
  if (lock != nullptr) pthread_mutex_lock(lock);
  const bool was_set = fd_ >= 0 && clock_was_set(fd_);
  if (was_set) {
    tk_.clock_was_set();  // re-measures the offsets and publishes at once
  } else {
    tk_.tick();
  }
  if (lock != nullptr) pthread_mutex_unlock(lock);
  return was_set;
}

void tick_loop::wait(const sigset_t* sigmask) noexcept {
  const std::int64_t tick_ns = tk_.config().tick_ns;
  const std::int64_t now = kernel::now_ns(CLOCK_MONOTONIC);
  next_ += tick_ns;
  if (next_ < now) next_ = now + tick_ns;  // overslept: don't try to catch up
  const std::int64_t wait_ns = next_ - now;
  const timespec timeout{wait_ns / 1'000'000'000, wait_ns % 1'000'000'000};
  pollfd pfd{fd_, POLLIN, 0};
  ppoll(&pfd, fd_ >= 0 ? 1 : 0, &timeout, sigmask);
}

}  // namespace vclock
