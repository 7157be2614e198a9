// x86-64: the counter is the TSC.
//
// RDTSC is not ordered with anything. Intel documents LFENCE;RDTSC as "read
// after all earlier instructions have completed"; AMD documents
// MFENCE;RDTSC, and LFENCE;RDTSC where LFENCE is dispatch-serialising (Zen,
// and older parts where the kernel sets the DE_CFG bit). RDTSCP waits for
// earlier instructions too. Which one is used is decided once, at load
// time (src/lib/ordering.cc); nothing here costs a per-call branch.
#ifndef VCLOCK_DETAIL_ARCH_X86_64_H_
#define VCLOCK_DETAIL_ARCH_X86_64_H_

#include <cstdint>

namespace vclock::arch {

enum class counter_ordering : std::uint32_t { none = 0, lfence = 1, mfence = 2, rdtscp = 3 };

// The strongest ordering: what the careful paths use (never hot).
inline constexpr counter_ordering strongest_ordering = counter_ordering::mfence;
// The ordered variants of every entry point, bound by an ifunc to the one
// the CPU gets (src/lib/ordering.h); the first is the default.
inline constexpr counter_ordering ordered_variants[] = {
    counter_ordering::lfence, counter_ordering::mfence, counter_ordering::rdtscp};
#define VCLOCK_ARCH_CHOOSES_ORDERING 1
// The read that waits for every earlier instruction: the bracket of a
// timed call (the CLI's and the benchmarks' timers).
inline constexpr counter_ordering bracket_ordering = counter_ordering::lfence;

struct counter_read {
  std::uint64_t value;
  std::uint64_t zero;  // 0, data-dependent on value (Lutomirski's trick)
};

inline constexpr bool has_counter = true;
// TSCs are synchronised across CPUs, but not to the tick: a reader on
// another CPU can see a value a few ticks behind the writer's cycle_last.
inline constexpr bool counter_may_lag_cycle_last = true;
// 2^20 ticks: 0.44 ms at 2.4 GHz, far more than any skew between CPUs.
inline constexpr std::uint64_t counter_max_lag_ticks = std::uint64_t{1} << 20;
inline constexpr const char* counter_name = "tsc";
// The fixed-point shift of every page on x86-64. A constant saves the
// reader a load and lets the shift be an immediate (no %cl); 32 works for
// any TSC of 1.01 GHz or more, i.e. every x86-64 part with an invariant TSC.
inline constexpr unsigned fixed_shift = 32;

// The second `shl $32` turns rdx into 0, but the CPU cannot know that: an
// address built from `zero` makes the load wait for RDTSC. The "memory"
// clobber keeps the compiler from moving earlier page loads past the fence.
template <counter_ordering O>
[[gnu::always_inline]] inline counter_read read_counter() noexcept {
  std::uint64_t lo, hi;
  if constexpr (O == counter_ordering::none) {
    asm volatile("rdtsc\n\tshl $32, %%rdx\n\tor %%rdx, %%rax\n\tshl $32, %%rdx"
                 : "=a"(lo), "=d"(hi)::"cc");
  } else if constexpr (O == counter_ordering::lfence) {
    asm volatile("lfence\n\trdtsc\n\tshl $32, %%rdx\n\tor %%rdx, %%rax\n\tshl $32, %%rdx"
                 : "=a"(lo), "=d"(hi)::"cc", "memory");
  } else if constexpr (O == counter_ordering::mfence) {
    asm volatile("mfence\n\trdtsc\n\tshl $32, %%rdx\n\tor %%rdx, %%rax\n\tshl $32, %%rdx"
                 : "=a"(lo), "=d"(hi)::"cc", "memory");
  } else {
    asm volatile("rdtscp\n\tshl $32, %%rdx\n\tor %%rdx, %%rax\n\tshl $32, %%rdx"
                 : "=a"(lo), "=d"(hi)::"rcx", "cc", "memory");
  }
  return {lo, hi};
}

// For the writer: MFENCE makes its earlier stores (the odd seq) globally
// visible, LFENCE keeps RDTSC from starting before MFENCE is done.
inline std::uint64_t read_counter_after_stores() noexcept {
  std::uint64_t lo, hi;
  asm volatile("mfence\n\tlfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
  return lo | (hi << 32);
}

inline void relax() noexcept { asm volatile("pause" ::: "memory"); }

// One instruction: a signal handler that runs on this thread cannot fall
// between a load and a store and have its own increment lost.
[[gnu::always_inline]] inline void increment_in_place(std::uint64_t& n) noexcept {
  asm("addq $1, %0" : "+m"(n));
}

// CLFLUSH evicts the line from every cache level of every CPU; MFENCE
// waits until every earlier flush is done. For benchmarks of a cold read.
inline void flush_cache_line(const void* p) noexcept {
  asm volatile("clflush %0" : : "m"(*static_cast<const char*>(p)) : "memory");
}
inline void flush_cache_lines_done() noexcept { asm volatile("mfence" ::: "memory"); }

// A system call without libc (no errno, no TLS, no PLT): for what runs in
// the middle of the dynamic linker's work. -errno on failure.
inline constexpr bool has_raw_syscall = true;
[[gnu::always_inline]] inline long raw_syscall(long number, long a, long b, long c) noexcept {
  long result = 0;
  asm volatile("syscall"
               : "=a"(result)
               : "a"(number), "D"(a), "S"(b), "d"(c)
               : "rcx", "r11", "memory");
  return result;
}

inline const char* ordering_name(counter_ordering o) noexcept {
  switch (o) {
    case counter_ordering::none:
      return "rdtsc";
    case counter_ordering::lfence:
      return "lfence;rdtsc";
    case counter_ordering::mfence:
      return "mfence;rdtsc";
    case counter_ordering::rdtscp:
      return "rdtscp";
  }
  return "unknown";
}

}  // namespace vclock::arch

#endif  // VCLOCK_DETAIL_ARCH_X86_64_H_
