// Any other architecture, until it has its own header: the "counter" is the
// kernel's CLOCK_MONOTONIC_RAW in nanoseconds, so everything builds and the
// simulation tests run. The timekeeper keeps such a page in fallback mode
// (has_counter is false): a system call per read would be slower than the
// kernel's own vDSO. (arm64 has its own header: arm64.h.)
#ifndef VCLOCK_DETAIL_ARCH_GENERIC_H_
#define VCLOCK_DETAIL_ARCH_GENERIC_H_

#include <time.h>

#include <atomic>
#include <cstdint>

namespace vclock::arch {

enum class counter_ordering : std::uint32_t { none = 0, ordered = 1 };

// The strongest ordering: what the careful paths use (never hot).
inline constexpr counter_ordering strongest_ordering = counter_ordering::ordered;
// One ordered variant: nothing to choose, no ifunc.
inline constexpr counter_ordering ordered_variants[] = {counter_ordering::ordered};
#define VCLOCK_ARCH_CHOOSES_ORDERING 0
inline constexpr counter_ordering bracket_ordering = counter_ordering::ordered;

struct counter_read {
  std::uint64_t value;
  std::uint64_t zero;
};

inline constexpr bool has_counter = false;
inline constexpr bool counter_may_lag_cycle_last = false;
inline constexpr std::uint64_t counter_max_lag_ticks = std::uint64_t{1} << 20;
inline constexpr const char* counter_name = "monotonic-raw";
inline constexpr unsigned fixed_shift = 0;  // 0: the shift comes from the page

template <counter_ordering O>
inline counter_read read_counter() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return {
      static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec),
      0};
}

inline std::uint64_t read_counter_after_stores() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return read_counter<counter_ordering::ordered>().value;
}

inline void relax() noexcept {}

// A relaxed load and store: a signal handler that runs on this thread
// between them loses its own increment.
[[gnu::always_inline]] inline void increment_in_place(std::uint64_t& n) noexcept {
  std::atomic_ref<std::uint64_t> a(n);
  a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// No cache flush here: a benchmark's "cold" read is as warm as the others.
inline void flush_cache_line(const void*) noexcept {}
inline void flush_cache_lines_done() noexcept {}

// No system call without libc here: callers do without (-ENOSYS).
inline constexpr bool has_raw_syscall = false;
inline long raw_syscall(long, long, long, long) noexcept { return -38; }  // -ENOSYS

inline const char* ordering_name(counter_ordering o) noexcept {
  return o == counter_ordering::none ? "relaxed" : "ordered";
}

}  // namespace vclock::arch

#endif  // VCLOCK_DETAIL_ARCH_GENERIC_H_
