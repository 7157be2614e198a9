// `vclock bench --gettime-perf`: the kernel selftest's own benchmark loop
// (tools/testing/selftests/timens/gettime_perf.c), run for the vDSO and for
// vclock, so that vclock's figures read in the units the seeds quote.
#ifndef VCLOCK_SRC_CLI_BENCH_GETTIME_PERF_H_
#define VCLOCK_SRC_CLI_BENCH_GETTIME_PERF_H_

namespace vclock::cli {

// Runs the gettime_perf section alone; the caller has parsed the options.
// `quick`: 3 rounds of 0.1 s instead of 10 of 0.3 s. Returns the exit status.
int run_gettime_perf(bool quick, bool json);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_BENCH_GETTIME_PERF_H_
