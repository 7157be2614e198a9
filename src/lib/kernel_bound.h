// The kernel as the error bound's source (vclockd --bound-source kernel, and
// the in-process timekeeper): adjtimex(2) read-only, which needs no
// privilege. The kernel's maxerror (us) is its own bound on REALTIME's
// error: set by the NTP daemon at each update and grown by the kernel at
// 500 ppm a second after; STA_UNSYNC (or the TIME_ERROR state) means no
// daemon vouches for it, and maxerror then reaches its 16 s ceiling.
#ifndef VCLOCK_SRC_LIB_KERNEL_BOUND_H_
#define VCLOCK_SRC_LIB_KERNEL_BOUND_H_

#include <sys/timex.h>

#include "lib/time_sources.h"

namespace vclock {

// The bound of one adjtimex(2) answer (pure: tests give it any).
bound_sample kernel_bound_of(int state, const struct timex& t) noexcept;

// adjtimex(2) now; status unknown if it fails.
bound_sample read_kernel_bound() noexcept;

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_KERNEL_BOUND_H_
