// The bench's "shim with stats" rows: the shim counting its calls
// (VCLOCK_SHIM_STATS) beside the shim plain, in the same run. The shim
// decides whether to count from the environment its process started with
// (/proc/self/environ: src/shim/startup_environment.h), which a running
// process cannot change, so a helper started anew (this program again,
// exec'd with VCLOCK_SHIM_STATS set) loads the shim and runs the loops on
// request, on the CPU the bench is pinned to (inherited).
#ifndef VCLOCK_SRC_CLI_BENCH_BENCH_SHIM_STATS_H_
#define VCLOCK_SRC_CLI_BENCH_BENCH_SHIM_STATS_H_

#include <cstdint>
#include <span>
#include <string>

namespace vclock::cli {

// Starts the helper with the shim at `shim`; false if it could not load it
// (no rows then).
bool start_shim_stats_helper(const std::string& shim);

// The helper's loops of `n` calls, run while this thread waits: a round
// trip of two pipe writes per call of these, microseconds against trials
// of milliseconds. clock_gettime(MONOTONIC), and time().
std::uint64_t shim_stats_gettime_loop(std::uint64_t n) noexcept;
std::uint64_t shim_stats_time_loop(std::uint64_t n) noexcept;

// `vclock bench` with these arguments is the helper (not in the help: the
// bench runs it itself).
bool is_shim_stats_helper(std::span<char* const> args);
int run_shim_stats_helper(std::span<char* const> args);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_BENCH_BENCH_SHIM_STATS_H_
