// The library's own threads (the timekeeper, the shim's timer watcher):
// detached, small, every signal blocked, so that no handler of the
// program's ever runs on them (and none runs on the timekeeper in the
// middle of an update).
#ifndef VCLOCK_SRC_LIB_QUIET_THREAD_H_
#define VCLOCK_SRC_LIB_QUIET_THREAD_H_

namespace vclock::detail {

// Starts `body` on such a thread named `name` (at most 15 characters);
// false if it could not be created. Not async-signal-safe.
bool start_quiet_thread(void* (*body)(void*), const char* name) noexcept;

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_QUIET_THREAD_H_
