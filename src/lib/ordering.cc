// Chooses, once, the cheapest counter read that is ordered after earlier
// loads; the choice itself is the architecture's (arch/cpu_features.h).
//
// This runs inside the ifunc resolvers (api.cc), before relocations and
// before any sanitizer runtime is ready, so it calls nothing and is not
// instrumented.
#include "lib/ordering.h"

#include "vclock/detail/arch/cpu_features.h"

namespace vclock {
namespace {

// 0 = not decided yet; otherwise ordering + 1. Plain int: the resolvers run
// single-threaded, before any thread exists.
int decided = 0;

}  // namespace

VCLOCK_RESOLVER_SAFE arch::counter_ordering chosen_ordering() noexcept {
  if (decided == 0) {
    decided = static_cast<int>(arch::choose_ordering()) + 1;
  }
  return static_cast<arch::counter_ordering>(decided - 1);
}

}  // namespace vclock
