// `vclock bound [--json]`: REALTIME's error interval now (vclock_now_bounded)
// and where it comes from.
#ifndef VCLOCK_SRC_CLI_STATUS_BOUND_H_
#define VCLOCK_SRC_CLI_STATUS_BOUND_H_

#include <span>
#include <string>

namespace vclock::cli {

int run_bound(std::span<char* const> args);

// "synced", "free_running", ... for a VCLOCK_SYNC_* value.
const char* sync_status_name(int status);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_STATUS_BOUND_H_
