// The hot path alone, for tools/check-hot-path.sh: read_fast() for CLOCK_MONOTONIC with the
// ordered counter read, compiled at -O2 as the library compiles it. The careful path is an
// out-of-line call, so everything left in vclock_probe_fast is the fast path itself.
#include <cstdint>

#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/page.h"

// The careful path: declared only, never defined (the probe is compiled, not linked).
extern "C" [[gnu::noinline]] std::int64_t vclock_probe_careful(const vclock::page& p) noexcept;

extern "C" std::int64_t vclock_probe_fast(const vclock::page& p) noexcept {
  return vclock::detail::read_fast<vclock::detail::clock_kind::monotonic>(
      p, []() noexcept { return vclock::arch::read_counter<vclock::arch::ordered_variants[0]>(); },
      [&p]() noexcept { return vclock_probe_careful(p); });
}
