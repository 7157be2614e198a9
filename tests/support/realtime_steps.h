// REALTIME steps that someone else makes while a test runs: NTP, an administrator, or a VM's
// guest agent catching the clock up after a snapshot (seen on this project's VMs: +500 us
// every 100 ms for minutes after a VM fork). vclock mirrors a step within its documented lag
// (tests/step_lag holds it to 1 ms on a machine with a CPU to spare), so a REALTIME or TAI
// reading taken that close after a step may still be off by the step. The tests that sandwich
// those clocks between two kernel readings skip the samples taken within 50 ms of a step (and
// one whose own check was preempted), and count them (realtime_excused_counts): an
// in-process timekeeper competing with a test's 16 busy threads, or with its fork storm, on
// 2 CPUs was seen more than 5 ms late. MONOTONIC, ordering and every other check still apply
// to every sample; without steps nothing is skipped.
//
// A step is seen two ways: at once, as a change of the kernel's REALTIME - MONOTONIC (read
// between two MONOTONIC reads; the vDSO shows a step the moment it is made), and as the
// kernel's clock_was_set event, through a timerfd armed with TFD_TIMER_CANCEL_ON_SET (its read
// fails with ECANCELED after one), which also catches a step and its undoing that both fell
// between two calls. The event alone is not enough: it reaches timerfds a little after the
// clock moved (seen on Linux 6.18), so a kernel sandwich around the step would be judged
// before it arrives.
#ifndef VCLOCK_TESTS_SUPPORT_REALTIME_STEPS_H_
#define VCLOCK_TESTS_SUPPORT_REALTIME_STEPS_H_

#include <errno.h>
#include <pthread.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace vclock::test {
namespace realtime_steps_detail {

inline std::int64_t monotonic_ns() noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// Armed at a REALTIME far in the future, cancelled by any setting of the clock.
inline void arm(int fd) noexcept {
  itimerspec far{};
  far.it_value.tv_sec = INT32_MAX;
  timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &far, nullptr);
}

inline int open_watch() noexcept {
  const int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd >= 0) arm(fd);
  return fd;
}

// REALTIME - MONOTONIC at the start or the last call (INT64_MIN: none read yet).
inline std::atomic<std::int64_t> last_offset_ns{INT64_MIN};
inline constexpr std::int64_t offset_noise_ns = 10'000;

// The kernel's REALTIME - MONOTONIC now, and whether it was read narrowly enough to compare.
inline bool kernel_offset(std::int64_t& offset) noexcept {
  timespec m1{}, r{}, m2{};
  clock_gettime(CLOCK_MONOTONIC, &m1);
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_MONOTONIC, &m2);
  const auto ns = [](const timespec& t) {
    return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
  };
  const std::int64_t width = ns(m2) - ns(m1);
  offset = ns(r) - (ns(m1) + width / 2);
  return width < offset_noise_ns / 2;
}

// How many samples were asked about, and how many excused (realtime_excused_counts()).
inline std::atomic<std::uint64_t> asked{0};
inline std::atomic<std::uint64_t> excused{0};

inline std::atomic<int> watch_fd{-1};
inline std::atomic<std::int64_t> last_step_ns{INT64_MIN / 2};
// Held while one call reads the timerfd: a read that finds the step consumes it, so a call
// that ran between that read and its store of last_step_ns would miss the step.
inline std::atomic<bool> reading{false};

// A fork child gets a timerfd of its own: one shared with the parent tells only one of the
// two about each step.
inline void reopen_in_child() noexcept {
  const int old = watch_fd.exchange(open_watch());
  if (old >= 0) close(old);
}

inline const bool started = [] {
  std::int64_t offset = 0;
  if (kernel_offset(offset)) last_offset_ns.store(offset);
  watch_fd.store(open_watch());
  pthread_atfork(nullptr, nullptr, reopen_in_child);
  return true;
}();

}  // namespace realtime_steps_detail

// Whether the kernel's REALTIME was set (a step, a leap second) within the last `window_ns`
// of MONOTONIC, a step found by this very call included: call it after the readings being
// judged. Thread-safe and async-signal-safe (a read, a timerfd_settime, atomics; while
// another call, or the one a handler interrupted, is reading the timerfd it says true: the
// sample is skipped, never wrongly judged). Without the timerfd (it could not be made) it
// says false: the checks stay strict.
inline bool realtime_stepped_recently(std::int64_t window_ns = 50'000'000) noexcept {
  namespace d = realtime_steps_detail;
  if (d::reading.exchange(true, std::memory_order_acquire)) return true;
  const int saved_errno = errno;
  const std::int64_t now = d::monotonic_ns();
  std::int64_t offset = 0;
  const bool narrow = d::kernel_offset(offset);
  const std::int64_t last = d::last_offset_ns.load();
  if (narrow) d::last_offset_ns.store(offset);
  if (narrow && last != INT64_MIN &&
      (offset - last > d::offset_noise_ns || last - offset > d::offset_noise_ns)) {
    d::last_step_ns.store(now);
  }
  const int fd = d::watch_fd.load();
  std::uint64_t expirations = 0;
  if (fd >= 0 && read(fd, &expirations, sizeof(expirations)) < 0 && errno == ECANCELED) {
    d::last_step_ns.store(now);
    d::arm(fd);  // a step between the read and this re-arm is covered by the window from now
  }
  // A read too wide to compare (a preemption inside it) excuses this sample only: a step it
  // hid shows at the next narrow read, against the last narrow one, and opens the window then.
  const bool recent = !narrow || now - d::last_step_ns.load() <= window_ns;
  d::reading.store(false, std::memory_order_release);
  d::asked.fetch_add(1, std::memory_order_relaxed);
  if (recent) d::excused.fetch_add(1, std::memory_order_relaxed);
  errno = saved_errno;
  return recent;
}

// The samples realtime_stepped_recently() was asked about in this process, and how many it
// excused (a call that found another one reading counts as neither): a test that excused most
// of its samples judged little, and must say so (tests/support/realtime_steps_check.cc).
struct excused_counts {
  std::uint64_t asked;
  std::uint64_t excused;
};
inline excused_counts realtime_excused_counts() noexcept {
  return {realtime_steps_detail::asked.load(), realtime_steps_detail::excused.load()};
}

}  // namespace vclock::test

#endif  // VCLOCK_TESTS_SUPPORT_REALTIME_STEPS_H_
