// vclockd's claim on the coarse line (include/vclock/page.h, "the owner
// word"): its thread id goes into the word, and the word onto the thread's
// robust futex list, so that the kernel marks it FUTEX_OWNER_DIED when
// vclockd dies, however it dies (SIGKILL, a crash, the OOM killer). Readers
// then stop trusting the coarse line, which reads no counter and so could
// not go stale by itself.
#ifndef VCLOCK_SRC_DAEMON_COARSE_OWNER_H_
#define VCLOCK_SRC_DAEMON_COARSE_OWNER_H_

#include <cstdint>

#include "vclock/page.h"

namespace vclock::daemon {

// Registers `p`'s owner word on the calling thread's robust list (replacing
// glibc's list for this thread: vclockd uses no robust mutexes) and returns
// the thread id to write into it (timekeeper_config::coarse_owner). On
// failure (an old kernel): the thread id all the same, and `registered`
// false: the coarse clocks then freeze while the daemon is dead, as before.
std::uint32_t claim_coarse_owner(const page& p, bool& registered) noexcept;

}  // namespace vclock::daemon

#endif  // VCLOCK_SRC_DAEMON_COARSE_OWNER_H_
