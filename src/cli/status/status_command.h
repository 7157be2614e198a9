// `vclock status`: what the timekeeper is doing, for people and scripts.
#ifndef VCLOCK_SRC_CLI_STATUS_STATUS_COMMAND_H_
#define VCLOCK_SRC_CLI_STATUS_STATUS_COMMAND_H_

#include <span>

namespace vclock::cli {

// Runs `vclock status [--json]` with the arguments after "status".
// Returns the exit status.
int run_status(std::span<char* const> args);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_STATUS_STATUS_COMMAND_H_
