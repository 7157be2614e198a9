// `vclock run [--shim PATH] [--] CMD [ARGS...]`: runs CMD with
// libvclock_preload.so preloaded, so that its clock reads are vclock's.
#ifndef VCLOCK_SRC_CLI_RUN_RUN_H_
#define VCLOCK_SRC_CLI_RUN_RUN_H_

#include <span>
#include <string>

namespace vclock::cli {

// Returns only on failure (exit 2 bad usage, 1 no shim, 126 CMD not
// executable, 127 CMD not found, as a shell says); on success the process
// is CMD, and the exit status is CMD's.
int run_run(std::span<char* const> args);

// The shim to preload: `requested` (--shim) if not empty, else
// $VCLOCK_SHIM, else the installed one, else the one beside this program
// (a build tree). An absolute path, or "" with `why` set.
std::string find_shim(const std::string& requested, std::string& why);

// LD_PRELOAD with `shim` first (after a sanitizer runtime, which must
// lead): then `existing` as it was (space- or colon-separated, as the
// dynamic linker reads it), without a second copy of `shim`.
std::string preload_with_shim(const std::string& shim, const char* existing);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_RUN_H_
