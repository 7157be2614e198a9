// `vclock bench`: vclock against the kernel's vDSO, the system call and the
// bare counter, side by side in one pinned process. Also the CPU helpers
// that `vclock warp` shares.
#ifndef VCLOCK_SRC_CLI_BENCH_H_
#define VCLOCK_SRC_CLI_BENCH_H_

#include <cstdint>
#include <span>
#include <vector>

namespace vclock::cli {

// Runs `vclock bench [--quick] [--json] [--cold] [--threads N]` with the
// arguments after "bench". Returns the exit status.
int run_bench(std::span<char* const> args);

// The CPUs this process may run on (its affinity mask), in order.
std::vector<int> allowed_cpus();

// Pins the calling thread to `cpu`. False if the kernel refused.
bool pin_current_thread(int cpu);

// True if the CPU has RDTSCP (CPUID 0x80000001, EDX bit 27).
bool has_rdtscp();

// Counter ticks per second: the timekeeper's calibration when there is one,
// else measured here against CLOCK_MONOTONIC_RAW over `measure_ms`.
double counter_hz_or_measure(double calibrated_hz, int measure_ms);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_BENCH_H_
