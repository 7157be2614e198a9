// Which ordered counter read this CPU gets, decided once at load time.
#ifndef VCLOCK_SRC_LIB_ORDERING_H_
#define VCLOCK_SRC_LIB_ORDERING_H_

#include "vclock/detail/arch.h"

namespace vclock {

// The ordered read the plain (non-relaxed) entry points use. Safe to call
// from an ifunc resolver: no relocations, no sanitizer instrumentation.
arch::counter_ordering chosen_ordering() noexcept;

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_ORDERING_H_
