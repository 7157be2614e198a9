// The CPU helpers the measuring subcommands share (bench, warp,
// gettime_perf): which CPUs this process may use, pinning, and the timers
// that bracket what they measure.
#ifndef VCLOCK_SRC_CLI_CPU_H_
#define VCLOCK_SRC_CLI_CPU_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vclock/detail/arch.h"

namespace vclock::cli {

// The CPU's model name from /proc/cpuinfo ("unknown" where it has none).
std::string read_cpu_model();

// The CPUs this process may run on (its affinity mask), in order.
std::vector<int> allowed_cpus();

// Pins the calling thread to `cpu`. False if the kernel refused.
bool pin_current_thread(int cpu);

// True if the CPU has RDTSCP (CPUID 0x80000001, EDX bit 27).
bool has_rdtscp();

// Counter ticks per second: the timekeeper's calibration when there is one,
// else measured here against CLOCK_MONOTONIC_RAW over `measure_ms`.
double counter_hz_or_measure(double calibrated_hz, int measure_ms);

// Kernel CLOCK_MONOTONIC_RAW through the vDSO: the timer of the hot trials,
// independent of both the library under test and of NTP slewing.
std::int64_t raw_now_ns();

// The counter read that brackets a single timed call: it waits until every
// earlier instruction, the call included, has completed.
[[gnu::always_inline]] inline std::uint64_t ticks() noexcept {
  return arch::read_counter<arch::bracket_ordering>().value;
}

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_CPU_H_
