// Removing a command's temporary files when it exits, for a program that
// then replaces itself with the command (`vclock run` execs it, so it
// cannot clean up afterwards): a detached process waits on a pidfd of the
// caller, which stays valid across exec, and removes them.
#ifndef VCLOCK_SRC_CLI_RUN_EXIT_CLEANER_H_
#define VCLOCK_SRC_CLI_RUN_EXIT_CLEANER_H_

#include <string>
#include <vector>

namespace vclock::cli {

// When this process (or what it execs into) exits, unlink `files` and then
// rmdir `directory`. The cleaner is a grandchild in a session of its own
// (not a child the command could wait for, nor in its terminal's process
// group). False, with `error`, if it cannot be started: the caller removes
// the files itself then.
bool remove_at_exit(const std::vector<std::string>& files, const std::string& directory,
                    std::string& error);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_EXIT_CLEANER_H_
