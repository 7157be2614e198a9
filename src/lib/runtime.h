// The process-wide pieces: the page itself, the timekeeper thread that
// keeps it fresh, and their life cycle (first use, fork).
#ifndef VCLOCK_SRC_LIB_RUNTIME_H_
#define VCLOCK_SRC_LIB_RUNTIME_H_

#include "timekeeper.h"
#include "vclock/page.h"

namespace vclock::detail {

// The page this process reads. Page-aligned and page-sized, so that a later
// daemon mode can map shared memory over it (MAP_FIXED, read-only) without
// changing a single reader instruction. Hidden: the library reaches it
// RIP-relative, without a GOT load (the CLI and tests link the static
// library and see it too).
[[gnu::visibility("hidden")]] extern page the_page;

// Wakes the timekeeper thread, created asleep when the library was loaded
// (or in a child after fork), on a process's first call. Async-signal-safe
// always: an atomic load, and once per process a compare-exchange and a
// futex wake. Never blocks, never creates anything.
void ensure_started() noexcept;

// The timekeeper under its lock, for status; nullptr (and no lock held) if
// it was never created. Pair with unlock_timekeeper().
timekeeper* lock_timekeeper() noexcept;
void unlock_timekeeper() noexcept;

// Why the counter is or is not trusted, decided at start (trust.cc).
const char* trust_note() noexcept;

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_RUNTIME_H_
