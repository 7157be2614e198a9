// The ordered entry points, one set per counter ordering (api.cc).
//
// The ifunc resolvers bind vclock_gettime_ns, vclock_gettime and
// vclock_gettimeofday to the set of chosen_ordering(). Tests call every set
// directly, so that the variants this CPU does not choose (lfence;rdtsc where
// rdtscp measured faster, mfence;rdtsc on Intel) run too, not only compile.
#ifndef VCLOCK_SRC_LIB_ENTRY_POINTS_H_
#define VCLOCK_SRC_LIB_ENTRY_POINTS_H_

#include <sys/time.h>
#include <time.h>

#include <cstdint>

#include "vclock/detail/arch.h"

namespace vclock::detail {

struct entry_points {
  std::int64_t (*gettime_ns)(clockid_t) noexcept;
  int (*gettime)(clockid_t, timespec*) noexcept;
  int (*gettimeofday)(timeval*, void*) noexcept;
  // gettime, but a null `ts` gets the system call's error (EFAULT, or
  // EINVAL for an unknown id) rather than a crash: the shim's clock_gettime.
  int (*gettime_or_efault)(clockid_t, timespec*) noexcept;
};

// gettimeofday's form of a REALTIME timespec (microseconds, truncated).
[[gnu::always_inline]] inline void to_timeval(const timespec& ts, timeval* tv) noexcept {
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = static_cast<suseconds_t>(ts.tv_nsec / 1000);
}

// The set for an ordered `ordering`; all null for counter_ordering::none
// (the relaxed entry points are plain exported functions). Safe to call
// from an ifunc resolver: it only returns addresses.
entry_points entry_points_for(arch::counter_ordering ordering) noexcept;

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_ENTRY_POINTS_H_
