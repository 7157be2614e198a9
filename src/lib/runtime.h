// The process-wide pieces: the page itself, the timekeeper thread that
// keeps it fresh, and their life cycle (first use, fork).
#ifndef VCLOCK_SRC_LIB_RUNTIME_H_
#define VCLOCK_SRC_LIB_RUNTIME_H_

#include "lib/shared_page.h"
#include "lib/timekeeper.h"
#include "lib/timens_join.h"
#include "vclock/page.h"

namespace vclock::detail {

// The declarations below are extern: defined, constant-initialised, in
// runtime.cc (clang-tidy 14 takes them for header definitions).
// NOLINTBEGIN(bugprone-dynamic-static-initializers)

// The page this process reads. Page-aligned and page-sized, so that a later
// daemon mode can map shared memory over it (MAP_FIXED, read-only) without
// changing a single reader instruction. Hidden: the library reaches it
// RIP-relative, without a GOT load (the CLI and tests link the static
// library and see it too).
[[gnu::visibility("hidden")]] extern page the_page;

// Virtual time (timens_join.h): the namespace this process joined when the
// library was loaded (nullptr: none, and then host_page is &the_page), and
// the page its host time comes from. Written once, in the constructor.
[[gnu::visibility("hidden")]] extern const ns_page* joined_namespace;
[[gnu::visibility("hidden")]] extern const page* host_page;
// A process in a kernel time namespace that offsets its clocks, reading
// the daemon's page (the initial namespace's time): what its namespace adds
// to each family's host time (0 otherwise), and whether that namespace is
// all it joined (no VCLOCK_NS: its "namespace" is the identity, and its
// waits are the kernel's business). Written at load and in a fork child.
[[gnu::visibility("hidden")]] extern std::int64_t frame_offset_ns[ns_family_count];
[[gnu::visibility("hidden")]] extern bool kernel_frame_only;

// What they point to when a namespace was joined: the careful path reads
// these directly, by their link-time addresses.
[[gnu::visibility("hidden")]] extern page the_host_page;
[[gnu::visibility("hidden")]] extern ns_page the_ns_page;
// NOLINTEND(bugprone-dynamic-static-initializers)

// Wakes the timekeeper thread, created asleep when the library was loaded
// (or in a child after fork), on a process's first call. Async-signal-safe
// always: an atomic load, and once per process a compare-exchange and a
// futex wake. Never blocks, never creates anything.
void ensure_started() noexcept;

// Where this process's time comes from, decided when the library was
// loaded: vclockd's shared page, its own timekeeper, or the kernel alone.
enum class page_source { kernel, in_process, shared };
page_source current_source() noexcept;
// The shared page's path that was tried ("" when VCLOCK_PAGE=off), and why
// it was refused (refusal none when attached or never tried).
const char* page_path() noexcept;
attach_result page_attach_outcome() noexcept;
// The namespace file that was tried ("" when VCLOCK_NS is unset) and why
// it was refused (none when joined or never tried).
const char* namespace_file() noexcept;
timens_join_result namespace_outcome() noexcept;

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_RUNTIME_H_
