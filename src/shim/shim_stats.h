// VCLOCK_SHIM_STATS=PATH: what the shim did for a process, one JSON line
// appended to PATH at exit (API.md):
//   {"pid": N, "exe": "...", "source": "shared|in-process|kernel",
//    "served": N, "forwarded": N}
// The resolvers bind the counting entry points only when the variable is
// set; without it the shim's entry points are vclock's own, with nothing
// added.
//
// Counting a call is one increment of a counter that only the calling
// thread writes: no atomic read-modify-write (a locked instruction, and a
// cache line that threads would bounce), no lock, no allocation. Each
// thread takes a slot of a static table at its first counted call; the
// slots outlive their threads, so the line at exit sums every thread's
// calls, those of threads that ended before the process included. A slot
// whose thread has ended is taken over by a new thread once the table is
// full, its counts first folded into a shared total; a thread that finds
// no slot counts into that total with atomic increments.
#ifndef VCLOCK_SRC_SHIM_SHIM_STATS_H_
#define VCLOCK_SRC_SHIM_SHIM_STATS_H_

#include <time.h>

#include <atomic>
#include <cstdint>

#include "vclock/detail/arch.h"

namespace vclock::shim {

inline constexpr const char* stats_env = "VCLOCK_SHIM_STATS";

// True when VCLOCK_SHIM_STATS names a file (decided once; safe in a
// resolver: startup_environment.h).
bool stats_wanted() noexcept;

// One thread's counts, in a line of its own. Written by its owner only;
// read by the line at exit and by a thread that takes the slot over.
struct alignas(64) thread_counts {
  std::uint64_t served;
  std::uint64_t forwarded;
  std::int32_t owner;  // the owner's thread id; 0: free (atomic_ref)
};

// This thread's slot: null before its first counted call, no_slot (as a
// pointer) when the table had none for it. Initial-exec: an offset from the thread
// pointer, no __tls_get_addr (which may allocate), also when the shim is
// dlopen'ed (the bench); 8 bytes of the static TLS that glibc keeps for
// libraries loaded later.
// NOLINTNEXTLINE(bugprone-dynamic-static-initializers): a declaration, zero-initialised TLS
extern __thread thread_counts* this_thread_counts __attribute__((tls_model("initial-exec")));
inline constexpr std::uintptr_t no_slot = 1;

// One more, as one instruction where the CPU has one: a signal handler
// that counts a call of its own on this thread cannot fall between a load
// and a store and be lost. (Elsewhere such a count may be.)
[[gnu::always_inline]] inline void bump(std::uint64_t& n) noexcept { arch::increment_in_place(n); }

// A thread without a slot of its own: takes one, or counts into the
// shared total. Out of line and cold: once per thread.
void count_without_slot(bool served) noexcept;

// A call the page answered on the fast path: the counting entry points'
// common case.
[[gnu::always_inline]] inline void count_served() noexcept {
  thread_counts* const c = this_thread_counts;
  if (reinterpret_cast<std::uintptr_t>(c) <= no_slot) [[unlikely]] {
    count_without_slot(true);
    return;
  }
  bump(c->served);
}

// Any other call that returned `ok`: served if the page answered it (a
// clock the page serves, the page in counter mode and fresh), forwarded
// otherwise (another clock id, an error, the kernel's answer). Reads the
// counter to tell: for the calls that left the fast path.
void count_read(clockid_t clock, bool ok) noexcept;

// A call the kernel answered (the shim passing through: no page).
void count_forwarded() noexcept;

}  // namespace vclock::shim

#endif  // VCLOCK_SRC_SHIM_SHIM_STATS_H_
