// The kernel's clocks, called the way the fallback must call them: through
// the vDSO entry points found in the auxiliary vector (AT_SYSINFO_EHDR), or
// the raw system call where there is no vDSO -- never through libc's
// clock_gettime, which an LD_PRELOAD shim will point back at vclock.
// Every function here is async-signal-safe and returns -errno, like the
// vDSO itself (callers set errno), but the *_or_errno ones.
#ifndef VCLOCK_SRC_LIB_KERNEL_CLOCK_H_
#define VCLOCK_SRC_LIB_KERNEL_CLOCK_H_

#include <sys/time.h>
#include <time.h>

#include <cstdint>

namespace vclock::kernel {

// clock_gettime(2) without errno: 0 or -errno.
int gettime(clockid_t clock, timespec* ts) noexcept;
// clock_getres(2) without errno: 0 or -errno.
int getres(clockid_t clock, timespec* res) noexcept;
// gettimeofday(2) without errno: 0 or -errno.
int gettimeofday(timeval* tv, struct timezone* tz) noexcept;

// The same two as libc's: 0, or -1 with errno set. For the entry points
// that hand the kernel a call they do not serve.
int gettime_or_errno(clockid_t clock, timespec* ts) noexcept;
int gettimeofday_or_errno(timeval* tv, struct timezone* tz) noexcept;

// The time of `clock` in ns; on failure, -errno (always in [-4095, -1]).
// Only for clocks that cannot fail (the page's clocks).
std::int64_t now_ns(clockid_t clock) noexcept;

// True when the vDSO's clock_gettime was found; false means every call is
// a system call. For `vclock status` and the benchmark.
bool has_vdso() noexcept;

// The vDSO's clock_gettime itself (nullptr without a vDSO), for the
// benchmark's side-by-side comparison.
using gettime_fn = int (*)(clockid_t, timespec*);
gettime_fn vdso_gettime() noexcept;

}  // namespace vclock::kernel

#endif  // VCLOCK_SRC_LIB_KERNEL_CLOCK_H_
