// `vclock bench`: vclock against the kernel's vDSO, the system call and the
// bare counter, side by side in one pinned process.
#ifndef VCLOCK_SRC_CLI_BENCH_BENCH_H_
#define VCLOCK_SRC_CLI_BENCH_BENCH_H_

#include <span>

namespace vclock::cli {

// Runs `vclock bench [--quick] [--json] [--cold] [--threads N]` with the
// arguments after "bench". Returns the exit status.
int run_bench(std::span<char* const> args);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_BENCH_BENCH_H_
