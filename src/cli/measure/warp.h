// `vclock warp`: Ingo Molnar's time-warp test. Do readings taken on
// different CPUs, one after another, ever go backwards?
#ifndef VCLOCK_SRC_CLI_MEASURE_WARP_H_
#define VCLOCK_SRC_CLI_MEASURE_WARP_H_

#include <span>

namespace vclock::cli {

// Runs `vclock warp [--threads N] [--seconds S] [--clock C] [--json]` with
// the arguments after "warp". Returns 1 if an ordered vclock clock warped.
int run_warp(std::span<char* const> args);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_MEASURE_WARP_H_
