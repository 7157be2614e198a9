// Conversions between a namespace's virtual clocks and the host's
// (virtual_time.h).
#include "shim/virtual_time.h"

#include <climits>

#include "vclock/vclock.h"

namespace vclock::shim {

namespace d = vclock::detail;

// The clocks a namespace moves and sleeps can wait on.
bool is_virtual_clock(clockid_t clock) noexcept {
  return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC || clock == CLOCK_BOOTTIME ||
         clock == CLOCK_TAI;
}

bool valid_timespec(const timespec* t) noexcept {
  return t != nullptr && t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < ns_per_s;
}

std::int64_t to_ns(const timespec& t) noexcept {
  std::int64_t ns = 0;
  if (__builtin_mul_overflow(static_cast<std::int64_t>(t.tv_sec), ns_per_s, &ns) ||
      __builtin_add_overflow(ns, static_cast<std::int64_t>(t.tv_nsec), &ns)) {
    return t.tv_sec < 0 ? INT64_MIN : INT64_MAX;
  }
  return ns;
}

timespec to_timespec(std::int64_t ns) noexcept {
  timespec t{static_cast<time_t>(ns / ns_per_s), static_cast<long>(ns % ns_per_s)};
  if (t.tv_nsec < 0) {
    t.tv_nsec += ns_per_s;
    t.tv_sec -= 1;
  }
  return t;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

std::int64_t virtual_now(clockid_t clock) noexcept { return vclock_gettime_ns(clock); }

// A virtual TAI deadline as a virtual REALTIME one (TAI follows REALTIME's
// line; their difference is whole seconds).
std::int64_t as_family_deadline(clockid_t clock, std::int64_t deadline) noexcept {
  if (clock != CLOCK_TAI) return deadline;
  const std::int64_t gap = virtual_now(CLOCK_TAI) - virtual_now(CLOCK_REALTIME);
  return deadline - (gap + ns_per_s / 2) / ns_per_s * ns_per_s;
}

ns_family family_of_clock(clockid_t clock) noexcept {
  switch (clock) {
    case CLOCK_MONOTONIC:
      return ns_family::monotonic;
    case CLOCK_BOOTTIME:
      return ns_family::boottime;
    default:
      return ns_family::realtime;
  }
}

// The host time at which `v` reaches virtual time `deadline` (rounded up),
// or false if it never does (frozen before it).
bool host_deadline(const d::ns_view& v, std::int64_t deadline, std::int64_t& host) noexcept {
  const auto solve = [deadline](const ns_anchor& a, std::uint64_t rate, std::int64_t& h) {
    if (deadline <= a.virtual_ns) {
      h = a.host_ns;
      return true;
    }
    if (rate == 0) return false;
    const ns_int128 span = ((static_cast<ns_int128>(deadline) - a.virtual_ns) << 32) + rate - 1;
    const ns_int128 r = static_cast<ns_int128>(a.host_ns) + span / rate;
    h = r > INT64_MAX ? INT64_MAX : static_cast<std::int64_t>(r);
    return true;
  };
  if (deadline >= v.line.after.virtual_ns) return solve(v.line.after, v.rate_after_q32, host);
  std::int64_t h = 0;
  if (!solve(v.line.before, v.rate_before_q32, h)) {
    host = v.line.after.host_ns;  // frozen before the switch point: waits for it
    return true;
  }
  host = h < v.line.after.host_ns ? h : v.line.after.host_ns;
  return true;
}

}  // namespace vclock::shim
