// libvclock_preload.so: libc's clock functions, answered by vclock, for
// programs that were never built against it (LD_PRELOAD, `vclock run`).
//
// Each time reader is one load and one jump to an entry point chosen once,
// at load or by the first call, so that a call pays for nothing it does not
// use:
//   plain        vclock's own ordered entry point for this CPU (the function
//                vclock_gettime binds to; clock_gettime's adds one test for a
//                null timespec);
//   counting     the same, counting served and forwarded calls, when
//                VCLOCK_SHIM_STATS is set (shim_stats.h): the page's fast
//                path inlined as in vclock's own, plus one increment of a
//                per-thread counter (the kernel's, counted, with no page);
//   pass-through the kernel's vDSO, for VCLOCK_DISABLE=1.
// Nothing on any of these paths allocates, locks, calls dlsym or touches
// TLS other than errno (and the counting path's initial-exec slot pointer); the time comes from the
// runtime that libvclock.so has (the daemon's shared page, else a timekeeper thread created parked
// at load), linked in here with every symbol hidden (preload.map.in).
//
// libc's time(), gettimeofday(), timespec_get() and ftime() do not call the
// interposable clock_gettime, so each is interposed in its own right.
#include <errno.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timeb.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "lib/entry_points.h"
#include "lib/kernel_clock.h"
#include "lib/ordering.h"
#include "lib/runtime.h"
#include "shim/export.h"
#include "shim/shim_stats.h"
#include "shim/startup_environment.h"
#include "shim/virtual_clock.h"
#include "shim/virtual_time.h"
#include "vclock/detail/reader.h"
#include "vclock/vclock.h"

namespace vclock::shim {
namespace {

using gettime_fn = int (*)(clockid_t, timespec*) noexcept;
using getres_fn = int (*)(clockid_t, timespec*) noexcept;
using gettimeofday_fn = int (*)(timeval*, void*) noexcept;
using time_fn = time_t (*)(time_t*) noexcept;
using timespec_get_fn = int (*)(timespec*, int) noexcept;

enum class mode { plain, counting, pass_through };

// Decided in the first resolver and the same for all: the environment the
// process started with.
// From the environment the process started with (startup_environment.h):
// async-signal-safe, so the first call may come from a handler.
mode chosen_mode() noexcept {
  const startup_settings settings = read_startup_settings();
  if (settings.stats) return mode::counting;
  return settings.disable ? mode::pass_through : mode::plain;
}

detail::entry_points ordered() noexcept { return detail::entry_points_for(chosen_ordering()); }

int fail(int negative_errno) noexcept {
  errno = -negative_errno;
  return -1;
}

// --- pass-through: the kernel, as libc would ask it ------------------------------------------

int kernel_gettime(clockid_t clock, timespec* ts) noexcept {
  if (ts == nullptr) return static_cast<int>(syscall(SYS_clock_gettime, clock, nullptr));
  const int r = kernel::gettime(clock, ts);
  return r == 0 ? 0 : fail(r);
}

int kernel_getres(clockid_t clock, timespec* res) noexcept {
  const int r = kernel::getres(clock, res);
  return r == 0 ? 0 : fail(r);
}

int kernel_gettimeofday(timeval* tv, void* tz) noexcept {
  const int r = kernel::gettimeofday(tv, static_cast<struct timezone*>(tz));
  return r == 0 ? 0 : fail(r);
}

// time(2) is the kernel's coarse REALTIME seconds.
time_t kernel_time(time_t* t) noexcept {
  timespec ts{};
  kernel::gettime(CLOCK_REALTIME_COARSE, &ts);
  if (t != nullptr) *t = ts.tv_sec;
  return ts.tv_sec;
}

// --- counting: vclock's entry points, each call counted --------------------------------------

// vclock's ordered entry points, for the calls the counting ones do not
// answer on their own fast path (set by choose()).
std::atomic<gettime_fn> vclock_gettime_target{nullptr};
std::atomic<gettimeofday_fn> vclock_gettimeofday_target{nullptr};

namespace d = vclock::detail;
using arch::counter_ordering;
using d::clock_kind;

// The page's fast path, as vclock's entry point runs it (api.cc): an
// answer from it is served, at the cost of one increment
// (shim_stats.h). Every other call goes through vclock's entry point and
// is classified after it (cold: it reads the counter again).
template <clock_kind K, counter_ordering O>
[[gnu::always_inline]] inline bool fast_into(timespec& r) noexcept {
  if constexpr (d::is_coarse(K)) {
    return d::try_read_coarse<K, d::as_timespec>(d::the_page, r);
  } else {
    return d::try_read_fast<K, d::as_timespec>(
        d::the_page, [] { return arch::read_counter<O>(); }, r);
  }
}

[[gnu::cold, gnu::noinline]] int counting_gettime_slow(clockid_t clock, timespec* ts) noexcept {
  const int r = vclock_gettime_target.load(std::memory_order_relaxed)(clock, ts);
  count_read(clock, r == 0);
  return r;
}

template <clock_kind K, counter_ordering O>
[[gnu::always_inline]] inline int counting_into(clockid_t clock, timespec* ts) noexcept {
  timespec r;
  if (fast_into<K, O>(r)) [[likely]] {
    *ts = r;
    count_served();
    return 0;
  }
  return counting_gettime_slow(clock, ts);
}

// The clocks after MONOTONIC, REALTIME and the coarse ones, out of line.
template <counter_ordering O>
[[gnu::noinline]] int counting_gettime_other(clockid_t clock, timespec* ts) noexcept {
  if (clock == CLOCK_MONOTONIC_RAW) return counting_into<clock_kind::monotonic_raw, O>(clock, ts);
  if (clock == CLOCK_BOOTTIME) return counting_into<clock_kind::boottime, O>(clock, ts);
  if (clock == CLOCK_TAI) return counting_into<clock_kind::tai, O>(clock, ts);
  return counting_gettime_slow(clock, ts);
}

template <counter_ordering O>
int counting_gettime(clockid_t clock, timespec* ts) noexcept {
  if (ts == nullptr) [[unlikely]] {
    return counting_gettime_slow(clock, ts);
  }
  if (clock == CLOCK_MONOTONIC) [[likely]] {
    return counting_into<clock_kind::monotonic, O>(clock, ts);
  }
  if (clock == CLOCK_REALTIME) return counting_into<clock_kind::realtime, O>(clock, ts);
  if (clock == CLOCK_MONOTONIC_COARSE) {
    return counting_into<clock_kind::monotonic_coarse, O>(clock, ts);
  }
  if (clock == CLOCK_REALTIME_COARSE) {
    return counting_into<clock_kind::realtime_coarse, O>(clock, ts);
  }
  return counting_gettime_other<O>(clock, ts);
}

[[gnu::cold, gnu::noinline]] int counting_gettimeofday_slow(timeval* tv, void* tz) noexcept {
  const int r = vclock_gettimeofday_target.load(std::memory_order_relaxed)(tv, tz);
  count_read(CLOCK_REALTIME, r == 0 && tv != nullptr);
  return r;
}

template <counter_ordering O>
int counting_gettimeofday(timeval* tv, void* tz) noexcept {
  timespec r;
  if (tv != nullptr && tz == nullptr && fast_into<clock_kind::realtime, O>(r)) [[likely]] {
    d::to_timeval(r, tv);
    count_served();
    return 0;
  }
  return counting_gettimeofday_slow(tv, tz);
}

[[gnu::cold, gnu::noinline]] time_t counting_time_slow(time_t* t) noexcept {
  const time_t r = vclock_time(t);
  count_read(CLOCK_REALTIME_COARSE, true);
  return r;
}

time_t counting_time(time_t* t) noexcept {
  std::int64_t seconds;
  if (d::try_read_time(d::the_page, seconds)) [[likely]] {
    if (t != nullptr) *t = static_cast<time_t>(seconds);
    count_served();
    return static_cast<time_t>(seconds);
  }
  return counting_time_slow(t);
}

// --- counting with no page: the kernel answers, each call counted as forwarded ----------------

int counting_kernel_gettime(clockid_t clock, timespec* ts) noexcept {
  count_forwarded();
  return kernel_gettime(clock, ts);
}

int counting_kernel_gettimeofday(timeval* tv, void* tz) noexcept {
  count_forwarded();
  return kernel_gettimeofday(tv, tz);
}

time_t counting_kernel_time(time_t* t) noexcept {
  count_forwarded();
  return kernel_time(t);
}

// --- choosing, once -----------------------------------------------------------------------------

struct chosen_functions {
  gettime_fn gettime;
  getres_fn getres;
  gettimeofday_fn gettimeofday;
  time_fn time;
};

struct counting_set {
  template <counter_ordering O>
  VCLOCK_RESOLVER_SAFE static chosen_functions make() noexcept {
    return {counting_gettime<O>, vclock_getres, counting_gettimeofday<O>, counting_time};
  }
};

// Counting: vclock's entry points for this CPU's ordering where a page (or
// a namespace) serves, else (no page, or VCLOCK_DISABLE=1) the kernel's,
// as pass-through would be.
chosen_functions counting_functions() noexcept {
  if (read_startup_settings().disable || (detail::current_source() != detail::page_source::shared &&
                                          detail::joined_namespace == nullptr)) {
    return {counting_kernel_gettime, kernel_getres, counting_kernel_gettimeofday,
            counting_kernel_time};
  }
  const detail::entry_points ep = ordered();
  vclock_gettime_target.store(ep.gettime_or_efault, std::memory_order_relaxed);
  vclock_gettimeofday_target.store(ep.gettimeofday, std::memory_order_relaxed);
  return for_ordering<counting_set>(chosen_ordering());
}

// Until the runtime's constructor has attached to a daemon's page (and
// for good if there is none) vclock's entry points would only forward to
// the kernel, a little slower than the kernel's own: pass through instead.
chosen_functions choose() noexcept {
  mode m = chosen_mode();
  // (A process in a virtual-time namespace is served always: its time is
  // not the kernel's.)
  if (m == mode::plain && detail::current_source() != detail::page_source::shared &&
      detail::joined_namespace == nullptr) {
    m = mode::pass_through;
  }
  switch (m) {
    case mode::plain: {
      if (detail::joined_namespace != nullptr) {
        const virtual_entry_points v = virtual_entry_points_for(chosen_ordering());
        return {v.gettime, vclock_getres, v.gettimeofday, v.time};
      }
      const detail::entry_points ep = ordered();
      return {ep.gettime_or_efault, vclock_getres, ep.gettimeofday, vclock_time};
    }
    case mode::counting:
      return counting_functions();
    case mode::pass_through:
      break;
  }
  return {kernel_gettime, kernel_getres, kernel_gettimeofday, kernel_time};
}

int first_gettime(clockid_t clock, timespec* ts) noexcept;
int first_getres(clockid_t clock, timespec* res) noexcept;
int first_gettimeofday(timeval* tv, void* tz) noexcept;
time_t first_time(time_t* t) noexcept;

// What each exported function jumps to: a first-call function until the
// choice is made (by the constructor, or by whichever call comes first),
// then the chosen entry point. Relaxed atomics: every value ever stored is
// a right answer, so a thread that sees the old one only chooses again.
std::atomic<gettime_fn> gettime_target{first_gettime};
std::atomic<getres_fn> getres_target{first_getres};
std::atomic<gettimeofday_fn> gettimeofday_target{first_gettimeofday};
std::atomic<time_fn> time_target{first_time};
// True when time_target is vclock_time, whose fast path time() inlines.
std::atomic<bool> time_inline{false};

// Async-signal-safe (a call in a handler may be the first): the choice
// reads /proc with raw system calls and the CPU, and stores four pointers.
void choose_and_store() noexcept {
  const chosen_functions c = choose();
  gettime_target.store(c.gettime, std::memory_order_relaxed);
  getres_target.store(c.getres, std::memory_order_relaxed);
  gettimeofday_target.store(c.gettimeofday, std::memory_order_relaxed);
  time_target.store(c.time, std::memory_order_relaxed);
  time_inline.store(c.time == vclock_time, std::memory_order_relaxed);
}

// Each goes on through the pointer it has just set (not the value choose()
// returned: the same, but tools/check-signal-safety.sh follows the table).
int first_gettime(clockid_t clock, timespec* ts) noexcept {
  choose_and_store();
  return gettime_target.load(std::memory_order_relaxed)(clock, ts);
}
int first_getres(clockid_t clock, timespec* res) noexcept {
  choose_and_store();
  return getres_target.load(std::memory_order_relaxed)(clock, res);
}
int first_gettimeofday(timeval* tv, void* tz) noexcept {
  choose_and_store();
  return gettimeofday_target.load(std::memory_order_relaxed)(tv, tz);
}
time_t first_time(time_t* t) noexcept {
  choose_and_store();
  return time_target.load(std::memory_order_relaxed)(t);
}

// Runs after the runtime's constructor (which has a priority: see
// runtime.cc), so that choose() sees whether it attached to a daemon.
[[gnu::constructor]] void choose_at_load() noexcept { choose_and_store(); }

int gettime_chosen(clockid_t clock, timespec* ts) noexcept {
  return gettime_target.load(std::memory_order_relaxed)(clock, ts);
}

// C11 timespec_get: TIME_UTC is REALTIME. Other bases (C23's
// TIME_MONOTONIC, ...) are libc's to answer or refuse: the next definition,
// looked up in our constructor (never on the call path).
timespec_get_fn next_timespec_get = nullptr;
timespec_get_fn next_timespec_getres = nullptr;

[[gnu::constructor]] void find_next_definitions() noexcept {
  next_timespec_get = libc_next<timespec_get_fn>("timespec_get");
  next_timespec_getres = libc_next<timespec_get_fn>("timespec_getres");
}

}  // namespace
}  // namespace vclock::shim

namespace s = vclock::shim;

// --- the interposed functions ----------------------------------------------------------------
// Their prototypes are glibc's (time.h, sys/time.h, sys/timeb.h). Each of
// the four time readers is one load and one jump (the compiler's tail
// call) to the chosen entry point. Not ifuncs: a library relocated before
// the shim (bash's libtinfo, linked -z now) would make the dynamic linker
// run our resolvers before the shim is relocated, and print a "Relink"
// warning on every start.

VCLOCK_SHIM_EXPORT int clock_gettime(clockid_t clock, timespec* ts) noexcept {
  return s::gettime_target.load(std::memory_order_relaxed)(clock, ts);
}

VCLOCK_SHIM_EXPORT int clock_getres(clockid_t clock, timespec* res) noexcept {
  return s::getres_target.load(std::memory_order_relaxed)(clock, res);
}

VCLOCK_SHIM_EXPORT int gettimeofday(timeval* __restrict tv, void* __restrict tz) noexcept {
  return s::gettimeofday_target.load(std::memory_order_relaxed)(tv, tz);
}

// time() is the cheapest call of all (libc binds it to the vDSO's: one
// load), so the plain path is inlined here rather than jumped to: one test
// of the mode, then vclock_time's own single load.
VCLOCK_SHIM_EXPORT time_t time(time_t* t) noexcept {
  namespace d = vclock::detail;
  std::int64_t seconds;
  if (s::time_inline.load(std::memory_order_relaxed) && d::try_read_time(d::the_page, seconds))
      [[likely]] {
    if (t != nullptr) *t = static_cast<time_t>(seconds);
    return static_cast<time_t>(seconds);
  }
  return s::time_target.load(std::memory_order_relaxed)(t);
}

VCLOCK_SHIM_EXPORT int timespec_get(timespec* ts, int base) noexcept {
  if (base != TIME_UTC) {
    return s::next_timespec_get != nullptr ? s::next_timespec_get(ts, base) : 0;
  }
  return s::gettime_chosen(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

VCLOCK_SHIM_EXPORT int timespec_getres(timespec* res, int base) noexcept {
  if (base != TIME_UTC) {
    return s::next_timespec_getres != nullptr ? s::next_timespec_getres(res, base) : 0;
  }
  return s::getres_target.load(std::memory_order_relaxed)(CLOCK_REALTIME, res) == 0 ? base : 0;
}

// ftime(3), as glibc implements it: REALTIME in milliseconds, no timezone.
// (glibc declares it without __THROW.)
VCLOCK_SHIM_EXPORT int ftime(timeb* tb) {
  timespec ts{};
  s::gettime_chosen(CLOCK_REALTIME, &ts);
  tb->time = ts.tv_sec;
  tb->millitm = static_cast<unsigned short>(ts.tv_nsec / 1'000'000);
  tb->timezone = 0;
  tb->dstflag = 0;
  return 0;
}
