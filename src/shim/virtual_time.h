// Virtual time for the shim's waits and timers: converting between a
// namespace's virtual clocks and the host's, for a process that joined one
// (docs/virtual-time.md). Nothing here blocks or allocates.
#ifndef VCLOCK_SRC_SHIM_VIRTUAL_TIME_H_
#define VCLOCK_SRC_SHIM_VIRTUAL_TIME_H_

#include <dlfcn.h>
#include <time.h>

#include <cstdint>

#include "lib/runtime.h"
#include "vclock/detail/ns_reader.h"
#include "vclock/detail/reader.h"
#include "vclock/ns_page.h"

namespace vclock::shim {

using detail::ns_per_s;

// The definition of `name` after the shim's (libc's own), of `version`
// when one is given; nullptr when there is none.
template <class F>
F libc_next(const char* name, const char* version = nullptr) noexcept {
  void* f = version != nullptr ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
  return reinterpret_cast<F>(f);
}

// The virtual-time namespace this process joined; nullptr: none (the
// host's time), or only its kernel time namespace, whose waits and timers
// the kernel converts itself. Two loads: what every interposed wait pays
// outside a namespace.
inline const ns_page* joined() noexcept {
  return detail::kernel_frame_only ? nullptr : detail::joined_namespace;
}

// The clocks a namespace moves and sleeps can wait on.
bool is_virtual_clock(clockid_t clock) noexcept;
bool valid_timespec(const timespec* t) noexcept;
// Saturating at the ends of int64 ns.
std::int64_t to_ns(const timespec& t) noexcept;
timespec to_timespec(std::int64_t ns) noexcept;
std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept;
// The namespace's time on `clock`, in ns.
std::int64_t virtual_now(clockid_t clock) noexcept;
// A virtual TAI deadline as a virtual REALTIME one (TAI follows REALTIME's
// line; their difference is whole seconds); other clocks' as they are.
std::int64_t as_family_deadline(clockid_t clock, std::int64_t deadline) noexcept;
ns_family family_of_clock(clockid_t clock) noexcept;
// The host time at which `v` reaches virtual time `deadline` (rounded up),
// or false if it never does (frozen before it).
bool host_deadline(const detail::ns_view& v, std::int64_t deadline, std::int64_t& host) noexcept;

}  // namespace vclock::shim

#endif  // VCLOCK_SRC_SHIM_VIRTUAL_TIME_H_
