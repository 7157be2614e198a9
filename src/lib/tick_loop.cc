// The real-time driver of a timekeeper: a periodic tick, and an immediate
// one when the kernel sets REALTIME.
//
// Both are timerfds, waited on by ppoll with no timeout. A step's wake-up
// then has nothing to undo before its publish: a ppoll timeout is an
// hrtimer that the return from ppoll cancels, and where it is the CPU's
// next timer the cancel reprograms the local timer, which in a VM is a
// trap to the hypervisor (the step lag's floor, docs/performance.md). The
// periodic timer stays armed across a step, and is read only when it has
// expired.
#include "lib/tick_loop.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>

#include "lib/kernel_clock.h"
#include "vclock/detail/reader.h"

namespace vclock {
namespace {

// A timerfd on `clock`, armed as `when` (absolute). -1 if unavailable.
// Made with the system calls themselves: in a process under the shim,
// libc's names are the shim's, which put a timer of the process's virtual
// time (--rate, --frozen, an offset) under the one asked for, and re-arm it
// when the namespace changes; these timers are the host's.
int open_real_timerfd(clockid_t clock, int flags, const itimerspec& when) noexcept {
  const int fd = static_cast<int>(syscall(SYS_timerfd_create, clock, TFD_NONBLOCK | TFD_CLOEXEC));
  if (fd < 0) return -1;
  if (syscall(SYS_timerfd_settime, fd, TFD_TIMER_ABSTIME | flags, &when, nullptr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A timerfd that the kernel cancels whenever REALTIME is set or the system
// resumes. -1 if unavailable.
int open_clock_was_set_fd() noexcept {
  itimerspec far{};
  far.it_value.tv_sec = std::int64_t{1} << 40;  // never expires
  return open_real_timerfd(CLOCK_REALTIME, TFD_TIMER_CANCEL_ON_SET, far);
}

// A timerfd expiring every `period_ns` of MONOTONIC from one period after
// `start_ns`. -1 if unavailable.
int open_period_fd(std::int64_t start_ns, std::int64_t period_ns) noexcept {
  const std::int64_t first_ns = start_ns + period_ns;
  itimerspec every{};
  every.it_value = {first_ns / detail::ns_per_s, first_ns % detail::ns_per_s};
  every.it_interval = {period_ns / detail::ns_per_s, period_ns % detail::ns_per_s};
  return open_real_timerfd(CLOCK_MONOTONIC, 0, every);
}

// True if the clock was set since the timerfd was armed. It then stays
// cancelled until re-armed.
bool clock_was_set(int fd) noexcept {
  std::uint64_t expirations = 0;
  return read(fd, &expirations, sizeof(expirations)) < 0 && errno == ECANCELED;
}

}  // namespace

tick_loop::tick_loop(timekeeper& tk) noexcept
    : tk_(tk), fd_(open_clock_was_set_fd()), next_(kernel::now_ns(CLOCK_MONOTONIC)) {
  period_fd_ = open_period_fd(next_, tk_.config().tick_ns);
}

tick_loop::~tick_loop() {
  if (fd_ >= 0) close(fd_);
  if (period_fd_ >= 0) close(period_fd_);
}

bool tick_loop::run_once(pthread_mutex_t* lock) noexcept {
  // Woken by the step: told by ppoll, so nothing stands between the
  // wake-up and the publish (the descriptor is replaced below, unread).
  // Otherwise the timerfd is asked, before the lock, which other tickers
  // wait on (vclockd's standby tickers), as briefly as can be.
  const bool was_set = woken_by_step_ || (fd_ >= 0 && clock_was_set(fd_));
  woken_by_step_ = false;
  if (lock != nullptr) pthread_mutex_lock(lock);
  if (was_set) {
    // The step first: readers show the old REALTIME until it is published.
    // Then re-arm (three system calls), and look once more for a step made
    // between the wake-up and the re-arm, which would not wake us again.
    tk_.clock_was_set();
    close(fd_);
    fd_ = open_clock_was_set_fd();
    tk_.recheck_clock_was_set();
  } else {
    tk_.tick();
  }
  if (lock != nullptr) pthread_mutex_unlock(lock);
  return was_set;
}

bool tick_loop::wait(const sigset_t* sigmask, int watch_fd) noexcept {
  pollfd fds[3] = {{fd_, POLLIN, 0}, {watch_fd, POLLIN, 0}, {period_fd_, POLLIN, 0}};
  timespec timeout{};
  const timespec* wait_for = nullptr;  // the period's timerfd ends the wait
  if (period_fd_ < 0) {
    const std::int64_t tick_ns = tk_.config().tick_ns;
    const std::int64_t now = kernel::now_ns(CLOCK_MONOTONIC);
    next_ += tick_ns;
    if (next_ < now) next_ = now + tick_ns;  // overslept: don't try to catch up
    const std::int64_t wait_ns = next_ - now;
    timeout = {wait_ns / detail::ns_per_s, wait_ns % detail::ns_per_s};
    wait_for = &timeout;
  }
  // A negative fd is skipped.
  if (ppoll(fds, 3, wait_for, sigmask) <= 0) return false;
  if ((fds[2].revents & POLLIN) != 0) {
    // Expired once or more (overslept): one tick either way, no catching up.
    std::uint64_t expirations = 0;
    (void)!read(period_fd_, &expirations, sizeof(expirations));
  }
  woken_by_step_ = (fds[0].revents & POLLIN) != 0;
  return watch_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

}  // namespace vclock
