// What the timekeeper reads the world through. Production: the CPU counter
// and the kernel's vDSO (runtime.cc). Tests: a simulated counter and kernel
// (tests/support/), so the real timekeeper runs over hours of simulated
// time in milliseconds.
#ifndef VCLOCK_SRC_LIB_TIME_SOURCES_H_
#define VCLOCK_SRC_LIB_TIME_SOURCES_H_

#include <time.h>

#include <cstdint>

#include "vclock/page.h"

namespace vclock {

// What a synchronisation source says of the kernel's REALTIME: it is
// within error_ns of the true time as of now, and that error grows by at
// most drift_ppb ns per second from now on (API.md, "Error-bounded time").
//   quantum_ns   the resolution of error_ns (adjtimex: 1 us), added to it.
//   valid_ns     how long after this reading the source's figures may be
//                extrapolated before the bound is void (status unknown).
struct bound_sample {
  sync_status status = sync_status::unknown;
  bound_source_kind source = bound_source_kind::none;
  std::int64_t error_ns = 0;
  std::int64_t drift_ppb = 0;
  std::int64_t quantum_ns = 0;
  std::int64_t valid_ns = 0;
};

class time_sources {
 public:
  virtual ~time_sources() = default;

  // The counter, read after every earlier store is globally visible
  // (the writer's read: arch::read_counter_after_stores()).
  virtual std::uint64_t read_counter() = 0;

  // The kernel's time of `clock` in ns: CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
  // CLOCK_REALTIME, CLOCK_BOOTTIME or CLOCK_TAI.
  virtual std::int64_t read_kernel(clockid_t clock) = 0;

  // The error bound's source, read once per tick (no bound by default: the
  // simulation's sources have none).
  virtual bound_sample read_bound() { return {}; }
};

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_TIME_SOURCES_H_
