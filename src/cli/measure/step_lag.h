// `vclock track --steps`: how long vclock's REALTIME lags the kernel's after
// the kernel steps REALTIME, optionally with steps this run injects itself
// (clock_adjtime ADJ_SETOFFSET, always put back). Used by track.cc.
#ifndef VCLOCK_SRC_CLI_MEASURE_STEP_LAG_H_
#define VCLOCK_SRC_CLI_MEASURE_STEP_LAG_H_

#include <cstdint>

#include "lib/status.h"

namespace vclock::cli {

struct step_lag_options {
  std::int64_t seconds = 10;
  // Size of the injected steps in µs (+US, then -US 50 ms later); 0: only
  // watch for steps that something else makes.
  std::int64_t inject_us = 0;
  bool json = false;
  // Exit 1 if a step is never caught up with or certainly caught up with
  // late (1 ms or more), or if fewer than 80 % of the steps (of those
  // injected, when injecting) are certainly caught up with within 1 ms.
  bool check = false;
};

// The smallest and largest --inject-steps, in µs.
inline constexpr std::int64_t min_inject_us = 10;
inline constexpr std::int64_t max_inject_us = 100'000;

// Runs the measurement and prints it (text or JSON). Returns the exit
// status: exit_ok, exit_check_failed (a failed --check, or an injected step
// that could not be made or undone), or exit_usage when --inject-steps lacks
// CAP_SYS_TIME. When SIGINT, SIGTERM or SIGHUP stops an injecting run, the
// clock is put back, the partial result printed, and the process then dies
// of that signal.
int run_step_lag(const step_lag_options& o, const status_snapshot& st);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_MEASURE_STEP_LAG_H_
