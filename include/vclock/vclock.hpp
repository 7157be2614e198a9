// vclock's std::chrono clocks. Each meets Cpp17TrivialClock, counts
// nanoseconds, and has a noexcept now(): a counter read and a multiply, no
// system call, read inline from the library's page (no call, no PLT) and
// calling vclock_gettime_ns() only where the page cannot answer
// (detail/inline_reader.h). Define VCLOCK_NO_INLINE_READER to always call.
//
//   vclock::steady_clock          CLOCK_MONOTONIC (is_steady)
//   vclock::system_clock          CLOCK_REALTIME, to/from time_t and
//                                 std::chrono::system_clock::time_point
//   vclock::boot_clock            CLOCK_BOOTTIME (counts suspend)
//   vclock::tai_clock             CLOCK_TAI
//   vclock::raw_clock             CLOCK_MONOTONIC_RAW (no NTP slewing)
//   vclock::coarse_steady_clock   CLOCK_MONOTONIC_COARSE (no counter read)
//   vclock::coarse_system_clock   CLOCK_REALTIME_COARSE
//
// vclock::relaxed:: holds the same clocks without cross-CPU ordering: a
// bare counter read. Prefer them when only one thread compares readings.
#ifndef VCLOCK_VCLOCK_HPP_
#define VCLOCK_VCLOCK_HPP_

#include <chrono>
#include <cstdint>
#include <ctime>

#include "vclock/vclock.h"
#if !defined(VCLOCK_NO_INLINE_READER)
#  include "vclock/detail/inline_reader.h"
#endif

namespace vclock {
inline namespace v1 {
namespace clock_impl {

enum class order { ordered, relaxed };

// The called reader, whatever the header's configuration: what the inline
// one falls back to, and what tests compare it with.
template <clockid_t Id, order O>
inline std::int64_t called_now_ns() noexcept {
  if constexpr (O == order::ordered) {
    return vclock_gettime_ns(Id);
  } else {
    return vclock_gettime_ns_relaxed(Id);
  }
}

// One clock: `Id` read with ordering `O`. `Steady` is true for the clocks
// that never step back.
template <clockid_t Id, bool Steady, order O>
struct basic_clock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<basic_clock, duration>;
  static constexpr bool is_steady = Steady;
  static constexpr clockid_t id = Id;  // what it reads (and what stamps convert to)

  static time_point now() noexcept {
#if !defined(VCLOCK_NO_INLINE_READER)
    constexpr detail::served_kind page_clock = detail::kind_of(Id);
    if constexpr (page_clock.served) {
      return time_point(duration(detail::inline_now_ns<page_clock.kind, O == order::ordered>()));
    }
#endif
    return time_point(duration(called_now_ns<Id, O>()));
  }
};

// The interval vclock_now_bounded() gives, as time points (see
// vclock::system_clock::now_bounded()).
enum class bound_status : int {
  unknown = VCLOCK_SYNC_UNKNOWN,
  synced = VCLOCK_SYNC_SYNCED,
  free_running = VCLOCK_SYNC_FREE_RUNNING,
  unsynced = VCLOCK_SYNC_UNSYNCED,
  disrupted = VCLOCK_SYNC_DISRUPTED,
};

template <class TimePoint>
struct basic_bounded_time {
  TimePoint earliest;  // the true time is not before this ...
  TimePoint latest;    // ... and not after this (unknown: the time points' extremes)
  bound_status status;
};

// REALTIME and REALTIME_COARSE: the same epoch as std::chrono::system_clock.
template <clockid_t Id, order O>
struct basic_system_clock : basic_clock<Id, false, O> {
  using base = basic_clock<Id, false, O>;
  using typename base::duration;
  using time_point = std::chrono::time_point<basic_system_clock, duration>;

  static time_point now() noexcept { return time_point(base::now().time_since_epoch()); }

  static std::time_t to_time_t(const time_point& t) noexcept {
    return static_cast<std::time_t>(
        std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
  }
  static time_point from_time_t(std::time_t t) noexcept {
    return time_point(std::chrono::seconds(t));
  }
  static std::chrono::system_clock::time_point to_sys(const time_point& t) noexcept {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(t.time_since_epoch()));
  }
  static time_point from_sys(const std::chrono::system_clock::time_point& t) noexcept {
    return time_point(std::chrono::duration_cast<duration>(t.time_since_epoch()));
  }

  // REALTIME with its error bound (vclock_now_bounded). The midpoint is not
  // "the true time": act on `latest` (commit-wait) or compare intervals.
  static basic_bounded_time<time_point> now_bounded() noexcept requires(Id == CLOCK_REALTIME) {
    vclock_bounds b;
    vclock_now_bounded(CLOCK_REALTIME, &b);
    return {time_point(duration(b.earliest_ns)), time_point(duration(b.latest_ns)),
            static_cast<bound_status>(b.status)};
  }
};

template <order O>
struct clocks {
  using steady_clock = basic_clock<CLOCK_MONOTONIC, true, O>;
  using system_clock = basic_system_clock<CLOCK_REALTIME, O>;
  using boot_clock = basic_clock<CLOCK_BOOTTIME, true, O>;
  using tai_clock = basic_clock<CLOCK_TAI, false, O>;
  using raw_clock = basic_clock<CLOCK_MONOTONIC_RAW, true, O>;
  using coarse_steady_clock = basic_clock<CLOCK_MONOTONIC_COARSE, true, O>;
  using coarse_system_clock = basic_system_clock<CLOCK_REALTIME_COARSE, O>;
};

}  // namespace clock_impl

// A stamp (vclock.h, docs/stamps.md): the counter now, the time later.
class stamp {
 public:
  stamp() noexcept = default;
  explicit stamp(vclock_stamp_t raw) noexcept : raw_(raw) {}
  static stamp now() noexcept { return stamp(vclock_stamp()); }
  static stamp now_relaxed() noexcept { return stamp(vclock_stamp_relaxed()); }
  vclock_stamp_t raw() const noexcept { return raw_; }

  // Clock's time at the stamp (a vclock clock other than the coarse ones).
  // `status`, if given: 0 exact, VCLOCK_STAMP_ESTIMATE, or a negative errno
  // (then the result is time_point::min()).
  template <class Clock>
  typename Clock::time_point to_time_point(int* status = nullptr) const noexcept {
    std::int64_t ns = 0;
    const int r = vclock_stamp_to_ns(Clock::id, raw_, &ns);
    if (status != nullptr) *status = r;
    if (r < 0) return Clock::time_point::min();
    return typename Clock::time_point(typename Clock::duration(ns));
  }

 private:
  vclock_stamp_t raw_{0, 0};
};

using steady_clock = clock_impl::clocks<clock_impl::order::ordered>::steady_clock;
using system_clock = clock_impl::clocks<clock_impl::order::ordered>::system_clock;
using boot_clock = clock_impl::clocks<clock_impl::order::ordered>::boot_clock;
using tai_clock = clock_impl::clocks<clock_impl::order::ordered>::tai_clock;
using raw_clock = clock_impl::clocks<clock_impl::order::ordered>::raw_clock;
using coarse_steady_clock = clock_impl::clocks<clock_impl::order::ordered>::coarse_steady_clock;
using coarse_system_clock = clock_impl::clocks<clock_impl::order::ordered>::coarse_system_clock;
using bound_status = clock_impl::bound_status;
using bounded_time = clock_impl::basic_bounded_time<system_clock::time_point>;

namespace relaxed {
using steady_clock = clock_impl::clocks<clock_impl::order::relaxed>::steady_clock;
using system_clock = clock_impl::clocks<clock_impl::order::relaxed>::system_clock;
using boot_clock = clock_impl::clocks<clock_impl::order::relaxed>::boot_clock;
using tai_clock = clock_impl::clocks<clock_impl::order::relaxed>::tai_clock;
using raw_clock = clock_impl::clocks<clock_impl::order::relaxed>::raw_clock;
using coarse_steady_clock = clock_impl::clocks<clock_impl::order::relaxed>::coarse_steady_clock;
using coarse_system_clock = clock_impl::clocks<clock_impl::order::relaxed>::coarse_system_clock;
}  // namespace relaxed

}  // namespace v1
}  // namespace vclock

#endif  // VCLOCK_VCLOCK_HPP_
