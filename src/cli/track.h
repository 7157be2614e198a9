// `vclock track`: vclock against the kernel, bracketed, over time.
#ifndef VCLOCK_SRC_CLI_TRACK_H_
#define VCLOCK_SRC_CLI_TRACK_H_

#include <span>

namespace vclock::cli {

int run_track(std::span<char* const> args);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_TRACK_H_
