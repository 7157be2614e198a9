// The one place that picks the architecture. Each arch header provides, in
// namespace vclock::arch:
//
//   enum class counter_ordering : std::uint32_t   the ordered-read variants;
//       `none` must exist (the relaxed read).
//   inline constexpr counter_ordering strongest_ordering;  the careful
//       paths' ordering (never hot, so the safest one).
//   inline constexpr counter_ordering ordered_variants[];  the orderings
//       each ordered entry point is compiled in, the default first.
//   VCLOCK_ARCH_CHOOSES_ORDERING  1: more than one, bound by an ifunc.
//   inline constexpr counter_ordering bracket_ordering;  waits for every
//       earlier instruction: the bracket of a timed call.
//   struct counter_read { std::uint64_t value; std::uint64_t zero; };
//       `zero` is 0 but data-dependent on `value`: adding it to an address
//       makes a later load wait for the counter read (see reader.h).
//   template <counter_ordering O> counter_read read_counter() noexcept;
//       O == none: the cheapest read, unordered. Otherwise ordered after
//       every earlier load, as a load would be.
//   std::uint64_t read_counter_after_stores() noexcept;
//       for the writer: after all earlier stores are globally visible.
//   inline constexpr bool has_counter;  false: the timekeeper stays in
//       fallback mode (the kernel answers everything).
//   inline constexpr bool counter_may_lag_cycle_last;  the reader clamps a
//       counter behind cycle_last instead of treating it as stale.
//   inline constexpr std::uint64_t counter_max_lag_ticks;  by how many ticks
//       at most (more is a counter that jumped back).
//   inline constexpr unsigned fixed_shift;  nonzero: every page uses this
//       shift and the reader does not load it.
//   const char* ordering_name(counter_ordering) noexcept;
//   void relax() noexcept;  spin-wait hint.
//   void increment_in_place(std::uint64_t&) noexcept;  n + 1, as one
//       instruction where the CPU has one (signal-safe on this thread).
//   void flush_cache_line(const void*) noexcept;  evicts the line from
//       every cache of every CPU (a no-op where there is no such thing);
//   void flush_cache_lines_done() noexcept;  waits until the flushes are.
//   inline constexpr bool has_raw_syscall;
//   long raw_syscall(long number, long a, long b, long c) noexcept;  a
//       system call without libc (no errno, no TLS); -errno on failure.
//       false: raw_syscall returns -ENOSYS.
// What the library asks the CPU beyond these (CPUID and the like) is in
// arch/cpu_features.h, not included here.
#ifndef VCLOCK_DETAIL_ARCH_H_
#define VCLOCK_DETAIL_ARCH_H_

#if defined(__x86_64__)
#  include "vclock/detail/arch/x86_64.h"
#elif defined(__aarch64__)
#  include "vclock/detail/arch/arm64.h"
#else
#  include "vclock/detail/arch/generic.h"
#endif

#endif  // VCLOCK_DETAIL_ARCH_H_
