// The shim's clock entry points in a virtual-time namespace. The plain
// entry points would serve a namespace too (the_page is left odd, so every
// read falls into the careful path, which maps host time), but through a
// failed fast path and three calls, all before the counter read, which an
// ordered read waits for. These go to the host page directly, with the
// namespace's line applied around its fast path (virtual_reader.h), and
// keep the careful path for everything else.
#include "shim/virtual_clock.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "lib/entry_points.h"
#include "lib/kernel_clock.h"
#include "lib/ordering.h"
#include "lib/virtual_reader.h"

namespace vclock::shim {
namespace {

namespace d = vclock::detail;
using arch::counter_ordering;
using d::clock_kind;

template <clock_kind K, counter_ordering O>
[[gnu::cold, gnu::noinline]] int careful_into(timespec* ts) noexcept {
  *ts = d::as_timespec::from_ns(d::virtual_ns<K, O>());
  return 0;
}

// A rate other than 1: the multiply, out of line (virtual_reader.h).
template <clock_kind K, counter_ordering O>
[[gnu::noinline]] int rated_into(ns_anchor a, std::uint64_t rate, d::host_parts h,
                                 timespec* ts) noexcept {
  const d::virtual_parts v = d::virtual_at_base(a, rate, h);
  timespec r;
  if (!d::finish_parts<d::as_timespec>(v.at_base, v.elapsed, r)) [[unlikely]] {
    return careful_into<K, O>(ts);
  }
  *ts = r;
  return 0;
}

template <clock_kind K, counter_ordering O>
[[gnu::always_inline]] inline int fine_into(timespec* ts) noexcept {
  ns_anchor a;
  std::uint64_t rate;
  d::host_parts h;
  if (!d::try_read_virtual_line<K, O>(a, rate, h)) [[unlikely]] {
    return careful_into<K, O>(ts);
  }
  if (rate != rate_one_q32) [[unlikely]] {
    return rated_into<K, O>(a, rate, h, ts);
  }
  timespec r;
  if (!d::finish_virtual<d::as_timespec>(a, rate_one_q32, h, r)) [[unlikely]] {
    return careful_into<K, O>(ts);
  }
  *ts = r;
  return 0;
}

// The clocks without a fast form here (the coarse ones, TAI): the careful
// path's mapping, out of line. gettime() answers MONOTONIC and REALTIME
// itself and never sends them here; the careful path would answer them (a
// call, not two more inlined fast paths).
template <counter_ordering O>
[[gnu::noinline]] int gettime_other(clockid_t clock, timespec* ts) noexcept {
  const d::served_kind k = d::kind_of(clock);
  if (k.served) {
    // Forced inline: left to the inliner, g++ 12 laid out the rdtscp and
    // lfence variants' MONOTONIC_RAW and BOOTTIME paths longer (jumps taken).
    return d::with_kind(
        k.kind, [ts]<clock_kind K>() __attribute__((always_inline)) {
          if constexpr (K == clock_kind::monotonic_raw || K == clock_kind::boottime) {
            return fine_into<K, O>(ts);  // the fine clocks gettime() left, inlined here
          } else {
            return careful_into<K, O>(ts);
          }
        });
  }
  // Clocks a namespace does not move (CPU time, and every id the kernel
  // knows and vclock does not): the kernel's.
  if (ts == nullptr) return static_cast<int>(syscall(SYS_clock_gettime, clock, nullptr));
  return kernel::gettime_or_errno(clock, ts);
}

// MONOTONIC first, then REALTIME, as the plain dispatch (api.cc).
template <counter_ordering O>
int gettime(clockid_t clock, timespec* ts) noexcept {
  if (ts == nullptr) [[unlikely]] {
    return static_cast<int>(syscall(SYS_clock_gettime, clock, nullptr));  // EFAULT or EINVAL
  }
  if (clock == CLOCK_MONOTONIC) [[likely]] {
    return fine_into<clock_kind::monotonic, O>(ts);
  }
  if (clock == CLOCK_REALTIME) return fine_into<clock_kind::realtime, O>(ts);
  return gettime_other<O>(clock, ts);
}

template <counter_ordering O>
int gettimeofday(timeval* tv, void* tz) noexcept {
  // With a timezone, the kernel's (it owns the timezone): rare.
  if (tz != nullptr &&
      kernel::gettimeofday_or_errno(nullptr, static_cast<struct timezone*>(tz)) != 0) [[unlikely]] {
    return -1;
  }
  if (tv == nullptr) [[unlikely]] {
    return 0;
  }
  timespec ts;
  fine_into<clock_kind::realtime, O>(&ts);
  d::to_timeval(ts, tv);
  return 0;
}

// time(2): the coarse REALTIME's seconds, virtual.
time_t time_seconds(time_t* t) noexcept {
  const std::int64_t ns = d::virtual_ns<clock_kind::realtime_coarse, arch::strongest_ordering>();
  const auto s = static_cast<time_t>(d::as_timespec::from_ns(ns).tv_sec);
  if (t != nullptr) *t = s;
  return s;
}

// The virtual entry points of one ordering.
struct virtual_set {
  template <counter_ordering O>
  VCLOCK_RESOLVER_SAFE static virtual_entry_points make() noexcept {
    return {gettime<O>, gettimeofday<O>, time_seconds};
  }
};

}  // namespace

virtual_entry_points virtual_entry_points_for(counter_ordering ordering) noexcept {
  return for_ordering<virtual_set>(ordering);
}

}  // namespace vclock::shim
