// Sleeps and timeouts in virtual time (API.md, "Virtual time"), for a
// process that joined a namespace: a deadline on a virtual clock is a host
// deadline only through the namespace's line, and that line changes when
// `vclock ns set` changes the namespace.
//
// A process in no namespace pays one load and one test per call, then
// calls libc's own function (found with dlsym(RTLD_NEXT) by the
// constructor; before that, the system call).
//
// In a namespace, every wait is a loop that never returns early:
//   1. the virtual deadline D (absolute as given, or virtual now + the
//      relative time);
//   2. the host deadline where the namespace's line reaches D (none while
//      frozen);
//   3. wait for it, woken also by a change of the namespace: sleeps wait on
//      a futex on the page's `current` word, which the writer moves on and
//      wakes after every change (a read-only shared mapping can be waited
//      on); waits on file descriptors (poll, select, epoll_wait) and on
//      libc's objects (condition variables, semaphores) cannot be, so they
//      wait at most max_slice_ns at a time and look again;
//   4. back to 1 unless the virtual clock has reached D.
// A wait interrupted by a signal returns EINTR (and the virtual time
// left, where the function reports it), as the real one does.
//
// Timers are virtual_timers.cc's. Not interposed: waits inside libc that
// do not go through these exported names.
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstring>

#include "lib/kernel_clock.h"
#include "lib/runtime.h"
#include "shim/export.h"
#include "shim/glibc_versions.h"
#include "shim/virtual_time.h"
#include "vclock/detail/ns_reader.h"
#include "vclock/vclock.h"

namespace vclock::shim {
namespace {

namespace d = vclock::detail;

// The longest a wait that cannot be woken by a change (file descriptors,
// libc's objects) goes without looking at the namespace again.
constexpr std::int64_t max_slice_ns = 100'000'000;

using nanosleep_fn = int (*)(const timespec*, timespec*);
using clock_nanosleep_fn = int (*)(clockid_t, int, const timespec*, timespec*);
using usleep_fn = int (*)(useconds_t);
using sleep_fn = unsigned (*)(unsigned);
using poll_fn = int (*)(pollfd*, nfds_t, int);
using select_fn = int (*)(int, fd_set*, fd_set*, fd_set*, timeval*);
using epoll_wait_fn = int (*)(int, epoll_event*, int, int);
using epoll_pwait_fn = int (*)(int, epoll_event*, int, int, const sigset_t*);
using ppoll_fn = int (*)(pollfd*, nfds_t, const timespec*, const sigset_t*);
using pselect_fn = int (*)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*);
using cond_timedwait_fn = int (*)(pthread_cond_t*, pthread_mutex_t*, const timespec*);
using sem_timedwait_fn = int (*)(sem_t*, const timespec*);
using cond_clockwait_fn = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);
using sem_clockwait_fn = int (*)(sem_t*, clockid_t, const timespec*);

struct real_functions {
  nanosleep_fn nanosleep = nullptr;
  clock_nanosleep_fn clock_nanosleep = nullptr;
  usleep_fn usleep = nullptr;
  sleep_fn sleep = nullptr;
  poll_fn poll = nullptr;
  select_fn select = nullptr;
  epoll_wait_fn epoll_wait = nullptr;
  epoll_pwait_fn epoll_pwait = nullptr;
  ppoll_fn ppoll = nullptr;
  pselect_fn pselect = nullptr;
  cond_timedwait_fn cond_timedwait = nullptr;
  sem_timedwait_fn sem_timedwait = nullptr;
  cond_clockwait_fn cond_clockwait = nullptr;
  sem_clockwait_fn sem_clockwait = nullptr;
};
real_functions real;

[[gnu::constructor]] void find_real_waits() noexcept {
  real.nanosleep = libc_next<nanosleep_fn>("nanosleep");
  real.clock_nanosleep = libc_next<clock_nanosleep_fn>("clock_nanosleep");
  real.usleep = libc_next<usleep_fn>("usleep");
  real.sleep = libc_next<sleep_fn>("sleep");
  real.poll = libc_next<poll_fn>("poll");
  real.select = libc_next<select_fn>("select");
  real.epoll_wait = libc_next<epoll_wait_fn>("epoll_wait");
  real.epoll_pwait = libc_next<epoll_pwait_fn>("epoll_pwait");
  real.ppoll = libc_next<ppoll_fn>("ppoll");
  real.pselect = libc_next<pselect_fn>("pselect");
  // The version interposed (the architecture's current condvar:
  // glibc_versions.h); x86-64 binaries bound to the compat one (linked
  // before 2002) bind to it, not to us.
  real.cond_timedwait =
      libc_next<cond_timedwait_fn>("pthread_cond_timedwait", VCLOCK_GLIBC_COND_TIMEDWAIT);
  if (real.cond_timedwait == nullptr) {
    real.cond_timedwait = libc_next<cond_timedwait_fn>("pthread_cond_timedwait");
  }
  real.sem_timedwait = libc_next<sem_timedwait_fn>("sem_timedwait");
  real.cond_clockwait = libc_next<cond_clockwait_fn>("pthread_cond_clockwait");
  real.sem_clockwait = libc_next<sem_clockwait_fn>("sem_clockwait");
}

// Host ns until the namespace reaches `deadline` on `clock`'s line, at
// most max_slice_ns (and that much while frozen), at least 1 ms.
std::int64_t slice_until(clockid_t clock, std::int64_t deadline) noexcept {
  const ns_family f = family_of_clock(clock);
  const d::ns_view v = d::load_ns_view(*joined(), f);
  std::int64_t host = 0;
  if (!host_deadline(v, as_family_deadline(clock, deadline), host)) return max_slice_ns;
  const clockid_t host_clock = f == ns_family::monotonic  ? CLOCK_MONOTONIC
                               : f == ns_family::boottime ? CLOCK_BOOTTIME
                                                          : CLOCK_REALTIME;
  const std::int64_t left = host - kernel::now_ns(host_clock);
  if (left < 1'000'000) return 1'000'000;
  return left < max_slice_ns ? left : max_slice_ns;
}

// Sleeps until virtual `clock` reaches `deadline`: 0, or EINTR.
int sleep_until(clockid_t clock, std::int64_t deadline) noexcept {
  const ns_page& ns = *joined();
  const ns_family f = family_of_clock(clock);
  for (;;) {
    const d::ns_view v = d::load_ns_view(ns, f);
    if (virtual_now(clock) >= deadline) return 0;
    std::int64_t host = 0;
    const bool ends = host_deadline(v, as_family_deadline(clock, deadline), host);
    int op = FUTEX_WAIT_BITSET;
    timespec at{};
    if (ends) {
      if (f == ns_family::realtime) {
        op |= FUTEX_CLOCK_REALTIME;
      } else if (f == ns_family::boottime) {
        // Futexes wait on MONOTONIC or REALTIME: BOOTTIME less the time
        // spent suspended so far.
        host -= kernel::now_ns(CLOCK_BOOTTIME) - kernel::now_ns(CLOCK_MONOTONIC);
      }
      at = to_timespec(host);
    }
    if (!d::still_current(ns, v)) continue;
    const long r = syscall(SYS_futex, &ns.header.current, op, v.current, ends ? &at : nullptr,
                           nullptr, FUTEX_BITSET_MATCH_ANY);
    if (r != 0 && errno == EINTR) return EINTR;
  }
}

// A relative virtual time from now on `clock`, as a deadline.
std::int64_t deadline_after(clockid_t clock, std::int64_t ns) noexcept {
  return saturating_add(virtual_now(clock), ns);
}

int relative_sleep(std::int64_t ns, timespec* remaining) noexcept {
  const std::int64_t deadline = deadline_after(CLOCK_MONOTONIC, ns);
  const int saved = errno;
  if (sleep_until(CLOCK_MONOTONIC, deadline) == EINTR) {
    if (remaining != nullptr) {
      const std::int64_t left = deadline - virtual_now(CLOCK_MONOTONIC);
      *remaining = to_timespec(left > 0 ? left : 0);
    }
    errno = EINTR;
    return -1;
  }
  errno = saved;
  return 0;
}

int raw_nanosleep(const timespec* req, timespec* rem) noexcept {
  return static_cast<int>(syscall(SYS_nanosleep, req, rem));
}

// A timeout in ms for the next slice of an fd wait that ends at `deadline`.
int slice_ms(std::int64_t deadline) noexcept {
  return static_cast<int>((slice_until(CLOCK_MONOTONIC, deadline) + 999'999) / 1'000'000);
}

// A slice of a wait on libc's objects that times out before the virtual
// deadline returns 0 for a condition variable (a spurious wake-up, which
// every caller handles) and waits again for a semaphore (0 would mean it
// was taken).
int cond_wait_until(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                    const timespec* abstime) noexcept {
  const std::int64_t deadline = to_ns(*abstime);
  if (virtual_now(clock) >= deadline) return ETIMEDOUT;
  const timespec at = to_timespec(kernel::now_ns(clock) + slice_until(clock, deadline));
  const int r = real.cond_clockwait != nullptr ? real.cond_clockwait(cond, mutex, clock, &at)
                                               : real.cond_timedwait(cond, mutex, &at);
  if (r == ETIMEDOUT && virtual_now(clock) < deadline) return 0;
  return r;
}

int sem_wait_until(sem_t* sem, clockid_t clock, const timespec* abstime) noexcept {
  const std::int64_t deadline = to_ns(*abstime);
  for (;;) {
    const timespec at = to_timespec(kernel::now_ns(clock) + slice_until(clock, deadline));
    const int r = real.sem_clockwait != nullptr ? real.sem_clockwait(sem, clock, &at)
                                                : real.sem_timedwait(sem, &at);
    if (r == 0 || errno != ETIMEDOUT) return r;
    if (virtual_now(clock) >= deadline) return r;
  }
}

}  // namespace
}  // namespace vclock::shim

namespace s = vclock::shim;

VCLOCK_SHIM_EXPORT int nanosleep(const timespec* req, timespec* rem) {
  if (s::joined() == nullptr || !s::valid_timespec(req)) {
    return s::real.nanosleep != nullptr ? s::real.nanosleep(req, rem) : s::raw_nanosleep(req, rem);
  }
  return s::relative_sleep(s::to_ns(*req), rem);
}

VCLOCK_SHIM_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* req,
                                       timespec* rem) {
  if (s::joined() == nullptr || !s::is_virtual_clock(clock) || !s::valid_timespec(req)) {
    if (s::real.clock_nanosleep != nullptr) return s::real.clock_nanosleep(clock, flags, req, rem);
    return static_cast<int>(syscall(SYS_clock_nanosleep, clock, flags, req, rem)) == 0 ? 0 : errno;
  }
  const std::int64_t deadline =
      (flags & TIMER_ABSTIME) != 0 ? s::to_ns(*req) : s::deadline_after(clock, s::to_ns(*req));
  const int saved = errno;
  const int r = s::sleep_until(clock, deadline);
  errno = saved;
  if (r == EINTR && (flags & TIMER_ABSTIME) == 0 && rem != nullptr) {
    const std::int64_t left = deadline - s::virtual_now(clock);
    *rem = s::to_timespec(left > 0 ? left : 0);
  }
  return r;
}

VCLOCK_SHIM_EXPORT int usleep(useconds_t us) {
  if (s::joined() == nullptr) {
    if (s::real.usleep != nullptr) return s::real.usleep(us);
    const timespec t = s::to_timespec(static_cast<std::int64_t>(us) * 1000);
    return s::raw_nanosleep(&t, nullptr) == 0 ? 0 : -1;
  }
  return s::relative_sleep(static_cast<std::int64_t>(us) * 1000, nullptr);
}

VCLOCK_SHIM_EXPORT unsigned sleep(unsigned seconds) {
  if (s::joined() == nullptr) {
    if (s::real.sleep != nullptr) return s::real.sleep(seconds);
    timespec t{static_cast<time_t>(seconds), 0};
    timespec left{};
    if (s::raw_nanosleep(&t, &left) == 0) return 0;
    return static_cast<unsigned>(left.tv_sec + (left.tv_nsec > 0 ? 1 : 0));
  }
  timespec left{};
  if (s::relative_sleep(static_cast<std::int64_t>(seconds) * s::ns_per_s, &left) == 0) return 0;
  return static_cast<unsigned>(left.tv_sec + (left.tv_nsec > 0 ? 1 : 0));
}

VCLOCK_SHIM_EXPORT int poll(pollfd* fds, nfds_t n, int timeout_ms) {
  if (s::joined() == nullptr || timeout_ms <= 0 || s::real.poll == nullptr) {
    if (s::real.poll != nullptr) return s::real.poll(fds, n, timeout_ms);
    const timespec t = s::to_timespec(static_cast<std::int64_t>(timeout_ms) * 1'000'000);
    return static_cast<int>(
        syscall(SYS_ppoll, fds, n, timeout_ms < 0 ? nullptr : &t, nullptr, sizeof(sigset_t)));
  }
  const std::int64_t deadline =
      s::deadline_after(CLOCK_MONOTONIC, static_cast<std::int64_t>(timeout_ms) * 1'000'000);
  for (;;) {
    const int r = s::real.poll(fds, n, s::slice_ms(deadline));
    if (r != 0 || s::virtual_now(CLOCK_MONOTONIC) >= deadline) return r;
  }
}

VCLOCK_SHIM_EXPORT int epoll_wait(int epfd, epoll_event* events, int max, int timeout_ms) {
  if (s::joined() == nullptr || timeout_ms <= 0 || s::real.epoll_wait == nullptr) {
    if (s::real.epoll_wait != nullptr) return s::real.epoll_wait(epfd, events, max, timeout_ms);
    return static_cast<int>(
        syscall(SYS_epoll_pwait, epfd, events, max, timeout_ms, nullptr, sizeof(sigset_t)));
  }
  const std::int64_t deadline =
      s::deadline_after(CLOCK_MONOTONIC, static_cast<std::int64_t>(timeout_ms) * 1'000'000);
  for (;;) {
    const int r = s::real.epoll_wait(epfd, events, max, s::slice_ms(deadline));
    if (r != 0 || s::virtual_now(CLOCK_MONOTONIC) >= deadline) return r;
  }
}

VCLOCK_SHIM_EXPORT int epoll_pwait(int epfd, epoll_event* events, int max, int timeout_ms,
                                   const sigset_t* mask) {
  if (s::joined() == nullptr || timeout_ms <= 0 || s::real.epoll_pwait == nullptr) {
    if (s::real.epoll_pwait != nullptr) {
      return s::real.epoll_pwait(epfd, events, max, timeout_ms, mask);
    }
    return static_cast<int>(
        syscall(SYS_epoll_pwait, epfd, events, max, timeout_ms, mask, sizeof(sigset_t)));
  }
  const std::int64_t deadline =
      s::deadline_after(CLOCK_MONOTONIC, static_cast<std::int64_t>(timeout_ms) * 1'000'000);
  for (;;) {
    const int r = s::real.epoll_pwait(epfd, events, max, s::slice_ms(deadline), mask);
    if (r != 0 || s::virtual_now(CLOCK_MONOTONIC) >= deadline) return r;
  }
}

VCLOCK_SHIM_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask) {
  const bool zero = timeout != nullptr && timeout->tv_sec == 0 && timeout->tv_nsec == 0;
  if (s::joined() == nullptr || !s::valid_timespec(timeout) || zero || s::real.ppoll == nullptr) {
    if (s::real.ppoll != nullptr) return s::real.ppoll(fds, n, timeout, mask);
    return static_cast<int>(syscall(SYS_ppoll, fds, n, timeout, mask, sizeof(sigset_t)));
  }
  const std::int64_t deadline = s::deadline_after(CLOCK_MONOTONIC, s::to_ns(*timeout));
  for (;;) {
    const timespec slice = s::to_timespec(s::slice_until(CLOCK_MONOTONIC, deadline));
    const int r = s::real.ppoll(fds, n, &slice, mask);
    if (r != 0 || s::virtual_now(CLOCK_MONOTONIC) >= deadline) return r;
  }
}

// select() and pselect() clear the sets of a wait that timed out (and
// Linux's select updates its timeout to what is left): each slice starts
// from the caller's sets, and select's caller gets the virtual time left.
namespace vclock::shim {
namespace {

struct fd_sets {
  fd_set* given[3];
  fd_set saved[3];
  fd_sets(fd_set* r, fd_set* w, fd_set* e) noexcept : given{r, w, e}, saved{} {
    for (int i = 0; i < 3; ++i) {
      if (given[i] != nullptr) std::memcpy(&saved[i], given[i], sizeof(fd_set));
    }
  }
  void restore() noexcept {
    for (int i = 0; i < 3; ++i) {
      if (given[i] != nullptr) std::memcpy(given[i], &saved[i], sizeof(fd_set));
    }
  }
};

}  // namespace
}  // namespace vclock::shim

VCLOCK_SHIM_EXPORT int select(int n, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                              timeval* timeout) {
  const bool zero = timeout != nullptr && timeout->tv_sec == 0 && timeout->tv_usec == 0;
  if (s::joined() == nullptr || timeout == nullptr || zero || s::real.select == nullptr ||
      timeout->tv_sec < 0 || timeout->tv_usec < 0 || timeout->tv_usec >= 1'000'000 || n < 0 ||
      n > FD_SETSIZE) {
    if (s::real.select != nullptr) return s::real.select(n, readfds, writefds, exceptfds, timeout);
    // Through pselect6, which every architecture has (arm64 has no select), with no
    // mask; it writes back what is left, as select does, in a timespec.
    timespec t{};
    if (timeout != nullptr) {
      t = {timeout->tv_sec, static_cast<long>(timeout->tv_usec) * 1000};
    }
    const int r = static_cast<int>(syscall(SYS_pselect6, n, readfds, writefds, exceptfds,
                                           timeout != nullptr ? &t : nullptr, nullptr));
    if (timeout != nullptr && t.tv_sec >= 0) {
      timeout->tv_sec = t.tv_sec;
      timeout->tv_usec = static_cast<suseconds_t>(t.tv_nsec / 1000);
    }
    return r;
  }
  const std::int64_t deadline =
      s::deadline_after(CLOCK_MONOTONIC, static_cast<std::int64_t>(timeout->tv_sec) * s::ns_per_s +
                                             static_cast<std::int64_t>(timeout->tv_usec) * 1000);
  s::fd_sets sets(readfds, writefds, exceptfds);
  for (;;) {
    sets.restore();
    const std::int64_t slice_us = (s::slice_until(CLOCK_MONOTONIC, deadline) + 999) / 1000;
    timeval t{static_cast<time_t>(slice_us / 1'000'000),
              static_cast<suseconds_t>(slice_us % 1'000'000)};
    const int r = s::real.select(n, readfds, writefds, exceptfds, &t);
    const std::int64_t left = deadline - s::virtual_now(CLOCK_MONOTONIC);
    if (r != 0 || left <= 0) {
      const std::int64_t us = left > 0 ? left / 1000 : 0;
      timeout->tv_sec = static_cast<time_t>(us / 1'000'000);
      timeout->tv_usec = static_cast<suseconds_t>(us % 1'000'000);
      return r;
    }
  }
}

VCLOCK_SHIM_EXPORT int pselect(int n, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                               const timespec* timeout, const sigset_t* mask) {
  const bool zero = timeout != nullptr && timeout->tv_sec == 0 && timeout->tv_nsec == 0;
  if (s::joined() == nullptr || !s::valid_timespec(timeout) || zero || s::real.pselect == nullptr ||
      n < 0 || n > FD_SETSIZE) {
    if (s::real.pselect != nullptr) {
      return s::real.pselect(n, readfds, writefds, exceptfds, timeout, mask);
    }
    struct {
      const sigset_t* mask;
      std::size_t size;
    } sig{mask, sizeof(sigset_t)};
    timespec copy = timeout != nullptr ? *timeout : timespec{};
    return static_cast<int>(syscall(SYS_pselect6, n, readfds, writefds, exceptfds,
                                    timeout != nullptr ? &copy : nullptr, &sig));
  }
  const std::int64_t deadline = s::deadline_after(CLOCK_MONOTONIC, s::to_ns(*timeout));
  s::fd_sets sets(readfds, writefds, exceptfds);
  for (;;) {
    sets.restore();
    const timespec slice = s::to_timespec(s::slice_until(CLOCK_MONOTONIC, deadline));
    const int r = s::real.pselect(n, readfds, writefds, exceptfds, &slice, mask);
    if (r != 0 || s::virtual_now(CLOCK_MONOTONIC) >= deadline) return r;
  }
}

// The condition variable's clock is glibc's bit 1 of __wrefs (set by
// pthread_condattr_setclock).
// Exported as pthread_cond_timedwait@@VCLOCK_GLIBC_COND_TIMEDWAIT only
// (GLIBC_2.3.2 on x86-64, GLIBC_2.17 on arm64; preload.map.in): an x86-64
// binary bound to the 2.2.5 version passes the old condvar, and reaches
// glibc's compat function past the shim.
VCLOCK_SHIM_EXPORT int vclock_shim_pthread_cond_timedwait(pthread_cond_t* cond,
                                                          pthread_mutex_t* mutex,
                                                          const timespec* abstime) {
  if (s::real.cond_timedwait == nullptr) s::find_real_waits();  // before our constructor
  if (s::joined() == nullptr || !s::valid_timespec(abstime)) {
    return s::real.cond_timedwait(cond, mutex, abstime);
  }
  const clockid_t clock =
      ((cond->__data.__wrefs >> 1) & 1u) != 0 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
  return s::cond_wait_until(cond, mutex, clock, abstime);
}
__asm__(
    ".symver vclock_shim_pthread_cond_timedwait, "
    "pthread_cond_timedwait@@" VCLOCK_GLIBC_COND_TIMEDWAIT);

VCLOCK_SHIM_EXPORT int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                              clockid_t clock, const timespec* abstime) {
  if (s::real.cond_clockwait == nullptr) s::find_real_waits();
  if (s::joined() == nullptr || !s::valid_timespec(abstime) || !s::is_virtual_clock(clock) ||
      clock == CLOCK_BOOTTIME || clock == CLOCK_TAI) {
    return s::real.cond_clockwait(cond, mutex, clock, abstime);
  }
  return s::cond_wait_until(cond, mutex, clock, abstime);
}

VCLOCK_SHIM_EXPORT int sem_timedwait(sem_t* sem, const timespec* abstime) {
  if (s::real.sem_timedwait == nullptr) s::find_real_waits();
  if (s::joined() == nullptr || !s::valid_timespec(abstime)) {
    return s::real.sem_timedwait(sem, abstime);
  }
  return s::sem_wait_until(sem, CLOCK_REALTIME, abstime);
}

VCLOCK_SHIM_EXPORT int sem_clockwait(sem_t* sem, clockid_t clock, const timespec* abstime) {
  if (s::real.sem_clockwait == nullptr) s::find_real_waits();
  if (s::joined() == nullptr || !s::valid_timespec(abstime) || !s::is_virtual_clock(clock) ||
      clock == CLOCK_BOOTTIME || clock == CLOCK_TAI) {
    return s::real.sem_clockwait(sem, clock, abstime);
  }
  return s::sem_wait_until(sem, clock, abstime);
}
