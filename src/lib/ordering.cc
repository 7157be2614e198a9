// Chooses the cheapest counter read that is ordered after earlier loads.
//
// x86-64: LFENCE;RDTSC on Intel (LFENCE is documented to wait for earlier
// instructions) and on AMD where LFENCE is dispatch-serialising (CPUID
// 8000_0021h EAX bit 2, or family >= 10h where Linux sets DE_CFG bit 1 at
// boot); MFENCE;RDTSC on other AMD parts. Where RDTSCP exists, it also
// waits for earlier instructions, and it is used instead if it measures
// faster here (fastest of 8 rounds of 32 reads each).
//
// This runs inside the ifunc resolvers (api.cc), before relocations and
// before any sanitizer runtime is ready, so it calls nothing and is not
// instrumented.
#include "lib/ordering.h"

#if defined(__x86_64__)
#  include <cpuid.h>
#endif

namespace vclock {
namespace {

#define VCLOCK_UNINSTRUMENTED \
  __attribute__((no_sanitize("address", "thread", "undefined"), no_stack_protector))

#if defined(__x86_64__)
using arch::counter_ordering;

VCLOCK_UNINSTRUMENTED inline void cpuid(unsigned leaf, unsigned& a, unsigned& b, unsigned& c,
                                        unsigned& d) noexcept {
  __cpuid_count(leaf, 0, a, b, c, d);
}

template <counter_ordering O>
VCLOCK_UNINSTRUMENTED std::uint64_t cost_of_32_reads() noexcept {
  std::uint64_t best = ~std::uint64_t{0};
  for (int round = 0; round < 8; ++round) {
    const std::uint64_t start = arch::read_counter<counter_ordering::lfence>().value;
    for (int i = 0; i < 32; ++i) {
      (void)arch::read_counter<O>();
    }
    const std::uint64_t cost = arch::read_counter<counter_ordering::lfence>().value - start;
    best = cost < best ? cost : best;
  }
  return best;
}

VCLOCK_UNINSTRUMENTED counter_ordering decide() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  cpuid(0, a, b, c, d);
  const bool intel = b == 0x756e6547u;  // "Genu"
  const bool amd = b == 0x68747541u;    // "Auth"
  cpuid(1, a, b, c, d);
  const unsigned family =
      ((a >> 8) & 0xfu) + (((a >> 8) & 0xfu) == 0xfu ? ((a >> 20) & 0xffu) : 0u);
  cpuid(0x80000000u, a, b, c, d);
  const unsigned max_ext = a;
  bool lfence_serialises = intel || (amd && family >= 0x10);
  if (amd && max_ext >= 0x80000021u) {
    cpuid(0x80000021u, a, b, c, d);
    lfence_serialises = lfence_serialises || (a & (1u << 2)) != 0;
  }
  if (!intel && !amd) {
    lfence_serialises = false;  // unknown vendor: the documented-everywhere MFENCE
  }
  bool has_rdtscp = false;
  if (max_ext >= 0x80000001u) {
    cpuid(0x80000001u, a, b, c, d);
    has_rdtscp = (d & (1u << 27)) != 0;
  }
  const counter_ordering fenced =
      lfence_serialises ? counter_ordering::lfence : counter_ordering::mfence;
  if (has_rdtscp) {
    const std::uint64_t fenced_cost = fenced == counter_ordering::lfence
                                          ? cost_of_32_reads<counter_ordering::lfence>()
                                          : cost_of_32_reads<counter_ordering::mfence>();
    if (cost_of_32_reads<counter_ordering::rdtscp>() < fenced_cost) {
      return counter_ordering::rdtscp;
    }
  }
  return fenced;
}
#else
VCLOCK_UNINSTRUMENTED arch::counter_ordering decide() noexcept {
  return arch::counter_ordering::ordered;
}
#endif

// 0 = not decided yet; otherwise ordering + 1. Plain int: the resolvers run
// single-threaded, before any thread exists.
int decided = 0;

}  // namespace

VCLOCK_UNINSTRUMENTED arch::counter_ordering chosen_ordering() noexcept {
  if (decided == 0) {
    decided = static_cast<int>(decide()) + 1;
  }
  return static_cast<arch::counter_ordering>(decided - 1);
}

}  // namespace vclock
