// `vclock track`: vclock against the kernel, bracketed, over time; with
// --steps, the lag of vclock's REALTIME behind the kernel's steps.
#ifndef VCLOCK_SRC_CLI_MEASURE_TRACK_H_
#define VCLOCK_SRC_CLI_MEASURE_TRACK_H_

#include <span>
#include <string>

#include "lib/status.h"

namespace vclock::cli {

int run_track(std::span<char* const> args);

// The first line of track's report: mode, counter, ordering, clocksource.
std::string track_machine_line(const status_snapshot& st);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_MEASURE_TRACK_H_
