// The shim's clock entry points for a process that joined a virtual-time
// namespace (docs/virtual-time.md): chosen once, like the plain ones, so a
// process in no namespace runs exactly the plain entry points' instructions.
#ifndef VCLOCK_SRC_SHIM_VIRTUAL_CLOCK_H_
#define VCLOCK_SRC_SHIM_VIRTUAL_CLOCK_H_

#include <sys/time.h>
#include <time.h>

#include "vclock/detail/arch.h"

namespace vclock::shim {

struct virtual_entry_points {
  int (*gettime)(clockid_t, timespec*) noexcept;  // a null timespec: EFAULT, as the kernel
  int (*gettimeofday)(timeval*, void*) noexcept;
  time_t (*time)(time_t*) noexcept;
};

// The set for counter ordering `ordering` (never counter_ordering::none).
virtual_entry_points virtual_entry_points_for(arch::counter_ordering ordering) noexcept;

}  // namespace vclock::shim

#endif  // VCLOCK_SRC_SHIM_VIRTUAL_CLOCK_H_
