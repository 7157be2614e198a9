// Which ordered counter read this CPU gets, decided once at load time, and
// the one place that turns that run-time choice into a template instance.
#ifndef VCLOCK_SRC_LIB_ORDERING_H_
#define VCLOCK_SRC_LIB_ORDERING_H_

#include <cstddef>
#include <iterator>

#include "vclock/detail/arch.h"
#include "vclock/detail/arch/cpu_features.h"  // VCLOCK_RESOLVER_SAFE

namespace vclock {

// The ordered read the plain (non-relaxed) entry points use. Safe to call
// from an ifunc resolver: no relocations, no sanitizer instrumentation.
arch::counter_ordering chosen_ordering() noexcept;

// The dispatch, written once: Set::make<O>() for the ordered variant O ==
// `ordering` (arch::ordered_variants), or for the default (the first) when
// `ordering` is none of them. `Set` is a struct with
//   template <arch::counter_ordering O> static T make() noexcept;
// returning addresses only (declare it VCLOCK_RESOLVER_SAFE), so that this
// is safe in an ifunc resolver: no table to relocate, only code.
template <class Set, std::size_t I = 1>
VCLOCK_RESOLVER_SAFE inline auto for_ordering(arch::counter_ordering ordering) noexcept {
  if constexpr (I < std::size(arch::ordered_variants)) {
    if (ordering == arch::ordered_variants[I]) {
      return Set::template make<arch::ordered_variants[I]>();
    }
    return for_ordering<Set, I + 1>(ordering);
  } else {
    return Set::template make<arch::ordered_variants[0]>();
  }
}

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_ORDERING_H_
