// `vclock stamps export FILE` and `vclock stamps convert FILE [--clock NAME]`:
// stamps converted after the process that took them is gone (issue 23,
// item 3; docs/stamps.md, "Offline").
#ifndef VCLOCK_SRC_CLI_STAMPS_STAMPS_COMMAND_H_
#define VCLOCK_SRC_CLI_STAMPS_STAMPS_COMMAND_H_

#include <span>

namespace vclock::cli {

int run_stamps(std::span<char* const> args);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_STAMPS_STAMPS_COMMAND_H_
