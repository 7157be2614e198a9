// VCLOCK_SHIM_STATS=PATH: what the shim did for a process, one JSON line
// appended to PATH at exit (API.md):
//   {"pid": N, "exe": "...", "source": "shared|in-process|kernel",
//    "served": N, "forwarded": N}
// Counting costs an atomic increment per call, so the resolvers bind the
// counting entry points only when the variable is set; without it the
// shim's entry points are vclock's own, with nothing added.
#ifndef VCLOCK_SRC_SHIM_SHIM_STATS_H_
#define VCLOCK_SRC_SHIM_SHIM_STATS_H_

#include <time.h>

namespace vclock::shim {

inline constexpr const char* stats_env = "VCLOCK_SHIM_STATS";

// True when VCLOCK_SHIM_STATS names a file (decided once; safe in a
// resolver: startup_environment.h).
bool stats_wanted() noexcept;

// One clock read that returned `ok`: served if the page answered it (a
// clock the page serves, the page in counter mode and fresh), forwarded
// otherwise (another clock id, an error, the kernel's answer).
void count_read(clockid_t clock, bool ok) noexcept;

}  // namespace vclock::shim

#endif  // VCLOCK_SRC_SHIM_SHIM_STATS_H_
