// The bench's "vDSO in a kernel time namespace" row: what the kernel's own
// time namespaces cost a read (its vDSO takes a slower path for a process
// in one, seeds: "the time-namespace slowdown"), measured beside vclock's
// namespaces. A process cannot enter a time namespace itself, so a helper
// child in one runs the loop on request.
#ifndef VCLOCK_SRC_CLI_BENCH_BENCH_TIMENS_H_
#define VCLOCK_SRC_CLI_BENCH_BENCH_TIMENS_H_

#include <cstdint>

namespace vclock::cli {

// Starts the helper in a new kernel time namespace (MONOTONIC and BOOTTIME
// 1 s ahead), on the CPU this thread is pinned to. False where time
// namespaces are not permitted (not root) or the kernel has none: no row.
bool start_timens_helper() noexcept;

// The helper's loop of `n` vDSO clock_gettime(MONOTONIC) calls, run while
// this thread waits: a round trip of two pipe writes per call of this
// function, microseconds against trials of milliseconds.
std::uint64_t timens_vdso_loop(std::uint64_t n) noexcept;

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_BENCH_BENCH_TIMENS_H_
