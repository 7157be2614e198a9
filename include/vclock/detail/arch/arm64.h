// arm64: the counter is the generic timer's virtual count, CNTVCT_EL0.
//
// EL0 may read it wherever Linux runs (the kernel sets CNTKCTL_EL1.EL0VCTEN;
// its own vDSO reads it), at the constant rate in CNTFRQ_EL0, the same on
// every CPU of the system.
//
// Ordering. An MRS of the counter is not a memory access: the barriers that
// order loads (DMB, load-acquire) do not order it, and the CPU may read it
// early, ahead of loads before it in program order, or late, after loads
// that follow it. Two fixes, one on each side:
//   before: ISB. Nothing after an ISB starts until everything before it
//     has, so the counter is not read ahead of the seqlock's first load.
//   after: a data dependency. `zero` is value XOR value: 0, but the CPU
//     must wait for the counter to compute it, and the reader adds it to
//     the address of its seq re-check (reader.h), so that load cannot be
//     performed before the counter is read.
// The relaxed read has neither: the cheapest read, for callers that order
// it themselves or do not care.
#ifndef VCLOCK_DETAIL_ARCH_ARM64_H_
#define VCLOCK_DETAIL_ARCH_ARM64_H_

#include <atomic>
#include <cstdint>

namespace vclock::arch {

enum class counter_ordering : std::uint32_t { none = 0, isb = 1 };

// One ordered read (isb; mrs): nothing to choose at load time, no ifunc.
inline constexpr counter_ordering strongest_ordering = counter_ordering::isb;
inline constexpr counter_ordering ordered_variants[] = {counter_ordering::isb};
#define VCLOCK_ARCH_CHOOSES_ORDERING 0
inline constexpr counter_ordering bracket_ordering = counter_ordering::isb;

struct counter_read {
  std::uint64_t value;
  std::uint64_t zero;  // 0, data-dependent on value (see above)
};

inline constexpr bool has_counter = true;
// CNTVCT_EL0 is one system-wide count (each CPU's view is of the same
// counter), but a reader on another CPU may still read it a few ticks
// before the writer's read lands in cycle_last: clamp, as on x86.
inline constexpr bool counter_may_lag_cycle_last = true;
// 2^12 ticks: 164 us at 25 MHz, 4 us at 1 GHz. The TSC's 2^20 would be 42 ms
// at 25 MHz, and hide a counter that jumped back that far
// (TimekeeperSim.Arm64CounterJumpsBackwardAt25MHz).
inline constexpr std::uint64_t counter_max_lag_ticks = std::uint64_t{1} << 12;
inline constexpr const char* counter_name = "cntvct_el0";
// Rates run from 1 MHz (some SoCs) to 1 GHz (Armv8.6 and later fix 1 GHz):
// no one shift suits them all, so each page carries its own.
inline constexpr unsigned fixed_shift = 0;

template <counter_ordering O>
[[gnu::always_inline]] inline counter_read read_counter() noexcept {
  std::uint64_t value, zero;
  if constexpr (O == counter_ordering::none) {
    asm volatile("mrs %0, cntvct_el0\n\teor %1, %0, %0" : "=r"(value), "=r"(zero));
  } else {
    // "memory": the compiler must not move the page's loads past the ISB.
    asm volatile("isb\n\tmrs %0, cntvct_el0\n\teor %1, %0, %0" : "=r"(value), "=r"(zero)::"memory");
  }
  return {value, zero};
}

// For the writer: DSB (not DMB: the counter read is no memory access, so
// only a DSB makes it wait) completes the earlier stores, ISB keeps the
// counter read after the DSB.
inline std::uint64_t read_counter_after_stores() noexcept {
  std::uint64_t value;
  asm volatile("dsb ish\n\tisb\n\tmrs %0, cntvct_el0" : "=r"(value)::"memory");
  return value;
}

// The counter's rate in Hz, as firmware programmed it (the kernel's vDSO
// trusts the same register).
inline std::uint64_t counter_frequency() noexcept {
  std::uint64_t hz;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
  return hz & 0xffffffffu;  // the upper half is RES0
}

inline void relax() noexcept { asm volatile("yield" ::: "memory"); }

// A relaxed load and store: arm64 has no add-to-memory instruction outside
// the LSE atomics (Armv8.1, and atomic: dearer than this needs), so a
// signal handler that runs on this thread between the load and the store
// loses its own increment.
[[gnu::always_inline]] inline void increment_in_place(std::uint64_t& n) noexcept {
  std::atomic_ref<std::uint64_t> a(n);
  a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// DC CIVAC cleans and invalidates the line to the point of coherency (out
// of every cache of every CPU); DSB waits until it is done. EL0 may use it
// where the kernel sets SCTLR_EL1.UCI, which Linux does.
inline void flush_cache_line(const void* p) noexcept {
  asm volatile("dc civac, %0" : : "r"(p) : "memory");
}
inline void flush_cache_lines_done() noexcept { asm volatile("dsb ish" ::: "memory"); }

// A system call without libc: number in x8, arguments in x0..x2, result
// (or -errno) in x0.
inline constexpr bool has_raw_syscall = true;
[[gnu::always_inline]] inline long raw_syscall(long number, long a, long b, long c) noexcept {
  register long x8 asm("x8") = number;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
}

inline const char* ordering_name(counter_ordering o) noexcept {
  return o == counter_ordering::none ? "mrs cntvct_el0" : "isb;mrs cntvct_el0";
}

}  // namespace vclock::arch

#endif  // VCLOCK_DETAIL_ARCH_ARM64_H_
