// Whether the CPU counter can be trusted as a clock on this machine.
#ifndef VCLOCK_SRC_LIB_TRUST_H_
#define VCLOCK_SRC_LIB_TRUST_H_

#include "vclock/page.h"

namespace vclock {

// Fixed buffers, no allocation: decide_trust() runs in the library's
// constructor, and reading it must stay safe anywhere.
struct trust_verdict {
  fallback_reason reason = fallback_reason::none;  // none: trusted
  bool invariant_counter = false;
  char clocksource[64] = {};  // the kernel's current clocksource
  char note[256] = {};        // one sentence for `vclock status`
};

// Decides once, at start-up:
//  - VCLOCK_DISABLE=1: disabled.
//  - VCLOCK_COUNTER=trust / distrust: forced either way (the note says so).
//  - no counter on this architecture: unsupported_arch.
//  - x86: CPUID must report an invariant TSC (constant rate, runs in deep
//    C-states). The kernel's clocksource is NOT required to be "tsc": on
//    VMs the kernel often uses kvm-clock, and may be booted with
//    tsc=unstable, because the host may migrate it to a machine whose TSC
//    runs at another rate. vclock does not need the kernel's word for that:
//    the timekeeper compares the counter with the kernel every tick and
//    falls back (counter_rate_wrong / counter_jumped) the moment the two
//    disagree, which is exactly the migration case.
//  - arm64: the kernel's clocksource must be the counter (arch_sys_counter;
//    arch/cpu_features.h says why), except under a user-mode emulator,
//    where the kernel is another architecture's (tests only; the note says).
// Reads the environment and /sys: call it at load time, not from a handler.
trust_verdict decide_trust() noexcept;

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_TRUST_H_
