// What the shim needs to know of the environment to choose its entry
// points, read in a way that is safe wherever the first clock call comes
// from: a signal handler (no getenv, whose environ a setenv may be
// rewriting), another library's constructor before libc's environ is set.
// Raw system calls and zeroed static storage only.
#ifndef VCLOCK_SRC_SHIM_STARTUP_ENVIRONMENT_H_
#define VCLOCK_SRC_SHIM_STARTUP_ENVIRONMENT_H_

namespace vclock::shim {

struct startup_settings {
  bool stats = false;    // VCLOCK_SHIM_STATS set and not empty
  bool disable = false;  // VCLOCK_DISABLE=1
};

// The process's initial environment (/proc/self/environ, read with raw
// system calls), scanned once; the answer is kept for every later call.
// All false where /proc is not mounted (the shim then serves, uncounted).
startup_settings read_startup_settings() noexcept;

}  // namespace vclock::shim

#endif  // VCLOCK_SRC_SHIM_STARTUP_ENVIRONMENT_H_
