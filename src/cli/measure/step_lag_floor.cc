// The step-lag floor (step_lag_floor.h).
#include "cli/measure/step_lag_floor.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/kernel_clock.h"
#include "tool/args.h"

namespace vclock::cli {
namespace {

// Armed far in the future, so that only a setting of REALTIME (or a
// resume) ends the wait; a read then fails with ECANCELED, after which
// the timer waits for the next setting without being armed again.
int open_cancel_on_set_timer() noexcept {
  const int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) return -1;
  itimerspec far{};
  far.it_value.tv_sec = std::int64_t{1} << 40;
  if (timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &far, nullptr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

step_floor::step_floor(std::size_t max_wakes)
    : timer_fd_(open_cancel_on_set_timer()), stop_fd_(eventfd(0, EFD_CLOEXEC)) {
  wakes_.reserve(max_wakes);
  if (timer_fd_ >= 0 && stop_fd_ >= 0) {
    thread_ = std::thread([this] { run(); });
    // The policy is the thread's to set: wait for it, so that the first
    // step finds the thread at its priority.
    while (!policy_set_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
}

step_floor::~step_floor() {
  stop();
  if (timer_fd_ >= 0) close(timer_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

void step_floor::stop() {
  if (!thread_.joinable()) return;
  const std::uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  thread_.join();
}

void step_floor::run() {
  sched_param param{};
  param.sched_priority = floor_fifo_priority;
  const int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
  policy_ = err == 0 ? tool::strformat("SCHED_FIFO %d", floor_fifo_priority)
                     : tool::strformat("normal (SCHED_FIFO: %s)", std::strerror(err));
  policy_set_.store(true, std::memory_order_release);
  for (;;) {
    // Blocked as vclockd is (tick_loop::wait: ppoll on this timerfd,
    // its period's and one more descriptor), with no timeout.
    pollfd fds[2] = {{timer_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    // The timer never expires: readable means REALTIME was set (or the
    // system resumed). Told at once, then the read that clears it.
    if ((fds[0].revents & POLLIN) != 0) {
      wake_count_.fetch_add(1, std::memory_order_relaxed);
      const std::int64_t woke = kernel::now_ns(CLOCK_MONOTONIC);
      if (wakes_.size() < wakes_.capacity()) wakes_.push_back(woke);
      std::uint64_t expirations = 0;
      (void)!read(timer_fd_, &expirations, sizeof(expirations));
    }
    if (fds[1].revents != 0) return;
  }
}

}  // namespace vclock::cli
