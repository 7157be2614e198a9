// What the timekeeper reads the world through. Production: the CPU counter
// and the kernel's vDSO (runtime.cc). Tests: a simulated counter and kernel
// (tests/support/), so the real timekeeper runs over hours of simulated
// time in milliseconds.
#ifndef VCLOCK_SRC_LIB_TIME_SOURCES_H_
#define VCLOCK_SRC_LIB_TIME_SOURCES_H_

#include <time.h>

#include <cstdint>

namespace vclock {

class time_sources {
 public:
  virtual ~time_sources() = default;

  // The counter, read after every earlier store is globally visible
  // (the writer's read: arch::read_counter_after_stores()).
  virtual std::uint64_t read_counter() = 0;

  // The kernel's time of `clock` in ns: CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
  // CLOCK_REALTIME, CLOCK_BOOTTIME or CLOCK_TAI.
  virtual std::int64_t read_kernel(clockid_t clock) = 0;
};

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_TIME_SOURCES_H_
