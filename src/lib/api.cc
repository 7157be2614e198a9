// The C entry points (include/vclock/vclock.h).
//
// Each ordered entry point exists in one variant per counter ordering
// (lfence;rdtsc, mfence;rdtsc, rdtscp), and a GNU ifunc resolver binds the
// symbol to the right one when the library is loaded: the choice costs
// nothing per call. The reader is inlined into each variant (the seeds'
// "inline do_hres"); only the careful path is out of line and cold.
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "lib/entry_points.h"
#include "lib/kernel_clock.h"
#include "lib/ordering.h"
#include "lib/runtime.h"
#include "lib/virtual_reader.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/vclock.h"

namespace vclock::detail {
namespace {

using arch::counter_ordering;

// In a process that joined a namespace, the_page never lets a read finish
// on the fast path: every read comes here, and is virtual. O: the ordering
// of the entry point that came here (the coarse clocks read no counter).
template <clock_kind K, counter_ordering O = arch::strongest_ordering>
[[gnu::cold, gnu::noinline]] std::int64_t careful_ns() noexcept {
  ensure_started();
  if (joined_namespace != nullptr) [[unlikely]] {
    return virtual_ns<K, O>();
  }
  return read_careful<K>(
      the_page, [] { return arch::read_counter<arch::strongest_ordering>(); },
      [] { return kernel::now_ns(kernel_clock_of(K)); });
}

// The careful path of a timespec entry point, storing the result itself:
// the fast path reaches it by a tail jump, so it needs no stack frame to
// keep `ts` across a call.
template <clock_kind K, counter_ordering O = arch::strongest_ordering>
[[gnu::cold, gnu::noinline]] int careful_timespec(timespec* ts) noexcept {
  *ts = as_timespec::from_ns(careful_ns<K, O>());
  return 0;
}

template <clock_kind K, counter_ordering O>
[[gnu::always_inline]] inline std::int64_t now_ns() noexcept {
  return read_fast<K>(
      the_page, [] { return arch::read_counter<O>(); }, [] { return careful_ns<K, O>(); });
}

template <clock_kind K, counter_ordering O>
[[gnu::always_inline]] inline timespec now_timespec() noexcept {
  return read_fast<K, as_timespec>(
      the_page, [] { return arch::read_counter<O>(); }, [] { return careful_ns<K, O>(); });
}

template <clock_kind K, counter_ordering O>
[[gnu::always_inline]] inline int now_into(timespec* ts) noexcept {
  timespec r;
  if (try_read_fast<K, as_timespec>(
          the_page, [] { return arch::read_counter<O>(); }, r)) [[likely]] {
    *ts = r;
    return 0;
  }
  return careful_timespec<K, O>(ts);
}

// The coarse clocks need no ordering: they read no counter. Inlined into
// the dispatch: a few loads on a path of their own, reached after the
// MONOTONIC and REALTIME tests, that adds no register to the fine clocks'
// paths (checked in the disassembly: no stack frame).
template <clock_kind K, class Out>
[[gnu::always_inline]] inline typename Out::result coarse() noexcept {
  return read_coarse<K, Out>(the_page, [] { return careful_ns<K>(); });
}

template <clock_kind K>
[[gnu::always_inline]] inline int coarse_timespec(timespec* ts) noexcept {
  timespec r;
  if (try_read_coarse<K, as_timespec>(the_page, r)) [[likely]] {
    *ts = r;
    return 0;
  }
  return careful_timespec<K>(ts);
}

// Clock ids the page does not serve go to the kernel. Out of line, so
// that the dispatch reaches them by a tail jump: inlined, their call (and
// the register kept across it for errno) gave MONOTONIC_RAW's and TAI's
// paths, which share the dispatching function, a stack frame.
[[gnu::noinline]] std::int64_t forward_ns(clockid_t clock) noexcept {
  timespec ts{};
  const int r = kernel::gettime(clock, &ts);
  if (r != 0) {
    errno = -r;
    return -1;
  }
  return ts.tv_sec * ns_per_s + ts.tv_nsec;
}

// The clocks other than MONOTONIC, REALTIME and the coarse ones, and the
// kernel's: out of line (a tail jump), so that their tests add nothing to
// the common clocks' paths. Tests, not a switch: GCC orders a switch's
// compares itself (it put BOOTTIME and TAI before MONOTONIC_RAW, the
// commonest of the three, which now falls through).
template <counter_ordering O>
[[gnu::noinline]] std::int64_t gettime_ns_other(clockid_t clock) noexcept {
  if (clock == CLOCK_MONOTONIC_RAW) return now_ns<clock_kind::monotonic_raw, O>();
  if (clock == CLOCK_BOOTTIME) return now_ns<clock_kind::boottime, O>();
  if (clock == CLOCK_TAI) return now_ns<clock_kind::tai, O>();
  return forward_ns(clock);
}

// The dispatch: MONOTONIC first (the commonest), then REALTIME and the
// coarse clocks, each inlined on a path of its own. Their paths share no
// register across the counter read, so none gets a stack frame (seen in
// the disassembly of every variant).
template <counter_ordering O>
std::int64_t gettime_ns(clockid_t clock) noexcept {
  if (clock == CLOCK_MONOTONIC) [[likely]]
    return now_ns<clock_kind::monotonic, O>();
  if (clock == CLOCK_REALTIME) return now_ns<clock_kind::realtime, O>();
  if (clock == CLOCK_MONOTONIC_COARSE) return coarse<clock_kind::monotonic_coarse, as_ns>();
  if (clock == CLOCK_REALTIME_COARSE) return coarse<clock_kind::realtime_coarse, as_ns>();
  return gettime_ns_other<O>(clock);
}

// TAI's timespec keeps one value more than the other clocks across the
// checks (its whole seconds, added after the split), one more than the
// caller-saved registers: a one-register frame, kept in a function of its
// own so that the paths beside it stay leaves. That is faster than the
// frameless alternative, which multiplies the seconds into the
// nanoseconds before the split (docs/performance.md, "Why the code is shaped so").
template <counter_ordering O>
[[gnu::noinline]] int tai_timespec(timespec* ts) noexcept {
  return now_into<clock_kind::tai, O>(ts);
}

template <counter_ordering O>
[[gnu::noinline]] int gettime_other(clockid_t clock, timespec* ts) noexcept {
  if (clock == CLOCK_MONOTONIC_RAW) return now_into<clock_kind::monotonic_raw, O>(ts);
  if (clock == CLOCK_BOOTTIME) return now_into<clock_kind::boottime, O>(ts);
  if (clock == CLOCK_TAI) return tai_timespec<O>(ts);
  return kernel::gettime_or_errno(clock, ts);
}

template <counter_ordering O>
int gettime(clockid_t clock, timespec* ts) noexcept {
  if (clock == CLOCK_MONOTONIC) [[likely]] {
    return now_into<clock_kind::monotonic, O>(ts);
  }
  if (clock == CLOCK_REALTIME) return now_into<clock_kind::realtime, O>(ts);
  if (clock == CLOCK_MONOTONIC_COARSE) return coarse_timespec<clock_kind::monotonic_coarse>(ts);
  if (clock == CLOCK_REALTIME_COARSE) return coarse_timespec<clock_kind::realtime_coarse>(ts);
  return gettime_other<O>(clock, ts);
}

// A null timespec goes to the system call itself (never the vDSO, which
// would store through it): EFAULT for a clock it knows, EINVAL otherwise.
[[gnu::cold, gnu::noinline]] int gettime_null(clockid_t clock) noexcept {
  return static_cast<int>(syscall(SYS_clock_gettime, clock, nullptr));
}

// The shim's clock_gettime (src/shim): the same dispatch behind one test of
// `ts`, so that a null pointer gets the system call's error, not a crash.
template <counter_ordering O>
int gettime_or_efault(clockid_t clock, timespec* ts) noexcept {
  if (ts == nullptr) [[unlikely]] {
    return gettime_null(clock);
  }
  return gettime<O>(clock, ts);
}

template <counter_ordering O>
[[gnu::cold, gnu::noinline]] int careful_timeval(timeval* tv) noexcept {
  to_timeval(as_timespec::from_ns(careful_ns<clock_kind::realtime, O>()), tv);
  return 0;
}

// With a timezone: rare, and the kernel owns the timezone, so ask it; out
// of line, so that the common call keeps no register across this call.
template <counter_ordering O>
[[gnu::cold, gnu::noinline]] int gettimeofday_with_tz(timeval* tv, void* tz) noexcept {
  if (kernel::gettimeofday_or_errno(nullptr, static_cast<struct timezone*>(tz)) != 0) return -1;
  if (tv != nullptr) {
    to_timeval(now_timespec<clock_kind::realtime, O>(), tv);
  }
  return 0;
}

template <counter_ordering O>
int gettimeofday(timeval* tv, void* tz) noexcept {
  if (tz != nullptr) [[unlikely]] {
    return gettimeofday_with_tz<O>(tv, tz);
  }
  if (tv == nullptr) [[unlikely]] {
    return 0;
  }
  timespec r;
  if (try_read_fast<clock_kind::realtime, as_timespec>(
          the_page, [] { return arch::read_counter<O>(); }, r)) [[likely]] {
    to_timeval(r, tv);
    return 0;
  }
  return careful_timeval<O>(tv);
}

// The ordered entry points of one ordering.
struct entry_set {
  template <counter_ordering O>
  VCLOCK_RESOLVER_SAFE static entry_points make() noexcept {
    return {gettime_ns<O>, gettime<O>, gettimeofday<O>, gettime_or_efault<O>};
  }
};

}  // namespace

// Only returns addresses, so it is safe in an ifunc resolver.
VCLOCK_RESOLVER_SAFE entry_points entry_points_for(arch::counter_ordering ordering) noexcept {
  if (ordering == counter_ordering::none) {
    return {nullptr, nullptr, nullptr, nullptr};  // the relaxed entry points are plain
  }
  return for_ordering<entry_set>(ordering);
}

}  // namespace vclock::detail

using vclock::arch::counter_ordering;
namespace d = vclock::detail;

extern "C" {

#if VCLOCK_ARCH_CHOOSES_ORDERING
// The resolvers have external linkage (hidden): clang accepts only those
// as ifunc targets. No sanitizer: they run during relocation, before the
// sanitizer runtimes are up.
#  define VCLOCK_RESOLVER \
    __attribute__((visibility("hidden"), no_sanitize("address", "thread", "undefined")))

VCLOCK_RESOLVER decltype(d::entry_points::gettime_ns) resolve_gettime_ns() {
  return d::entry_points_for(vclock::chosen_ordering()).gettime_ns;
}

VCLOCK_RESOLVER decltype(d::entry_points::gettime) resolve_gettime() {
  return d::entry_points_for(vclock::chosen_ordering()).gettime;
}

VCLOCK_RESOLVER decltype(d::entry_points::gettimeofday) resolve_gettimeofday() {
  return d::entry_points_for(vclock::chosen_ordering()).gettimeofday;
}

VCLOCK_API std::int64_t vclock_gettime_ns(clockid_t clock) noexcept
    __attribute__((ifunc("resolve_gettime_ns")));
VCLOCK_API int vclock_gettimeofday(timeval* tv, void* tz) noexcept
    __attribute__((ifunc("resolve_gettimeofday")));
VCLOCK_API int vclock_gettime(clockid_t clock, timespec* ts) noexcept
    __attribute__((ifunc("resolve_gettime")));
#else
VCLOCK_API std::int64_t vclock_gettime_ns(clockid_t clock) noexcept {
  return d::gettime_ns<vclock::arch::ordered_variants[0]>(clock);
}
VCLOCK_API int vclock_gettime(clockid_t clock, timespec* ts) noexcept {
  return d::gettime<vclock::arch::ordered_variants[0]>(clock, ts);
}
VCLOCK_API int vclock_gettimeofday(timeval* tv, void* tz) noexcept {
  return d::gettimeofday<vclock::arch::ordered_variants[0]>(tv, tz);
}
#endif

VCLOCK_API std::int64_t vclock_gettime_ns_relaxed(clockid_t clock) noexcept {
  return d::gettime_ns<counter_ordering::none>(clock);
}

VCLOCK_API int vclock_gettime_relaxed(clockid_t clock, timespec* ts) noexcept {
  return d::gettime<counter_ordering::none>(clock, ts);
}

VCLOCK_API int vclock_getres(clockid_t clock, timespec* res) noexcept {
  // The fine clocks have the kernel's 1 ns; the coarse clocks advance once
  // per timekeeper tick here, and the kernel's coarse clocks once per
  // jiffy: report the coarser of the two, the honest resolution.
  const int r = vclock::kernel::getres(clock, res);
  if (r != 0) {
    errno = -r;
    return -1;
  }
  if (res != nullptr && (clock == CLOCK_REALTIME_COARSE || clock == CLOCK_MONOTONIC_COARSE)) {
    // A relaxed load, not the timekeeper's lock: this stays async-signal-safe.
    const std::int64_t tick = d::load_relaxed(d::host_page->tick_ns);
    const std::int64_t kernel_res = res->tv_sec * d::ns_per_s + res->tv_nsec;
    if (tick > kernel_res) {
      res->tv_sec = static_cast<time_t>(tick / d::ns_per_s);
      res->tv_nsec = static_cast<long>(tick % d::ns_per_s);
    }
  }
  return 0;
}

VCLOCK_API time_t vclock_time(time_t* t) noexcept {
  // time(2) is the kernel's coarse REALTIME seconds; so is this: one load.
  std::int64_t seconds;
  if (!d::try_read_time(d::the_page, seconds)) [[unlikely]] {
    seconds = d::coarse<d::clock_kind::realtime_coarse, d::as_seconds>();
  }
  const auto s = static_cast<time_t>(seconds);
  if (t != nullptr) {
    *t = s;
  }
  return s;
}

}  // extern "C"
