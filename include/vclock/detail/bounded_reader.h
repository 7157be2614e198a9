// Reading REALTIME (or TAI) with its error bound (page.h, bound_line): the
// fast path of vclock_now_bounded(), which is try_read_fast() plus the
// bound line's fields under the same seq, one multiply, one shift and one
// compare on the counter value the time itself was computed from.
#ifndef VCLOCK_DETAIL_BOUNDED_READER_H_
#define VCLOCK_DETAIL_BOUNDED_READER_H_

#include <cstdint>

#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/page.h"

namespace vclock::detail {

struct bounded_read {
  std::int64_t ns;          // vclock's time
  std::int64_t half_width;  // the true time is within ns +- half_width
  sync_status status;
};

// The half-width `delta` ticks past cycle_last (delta < the writer's
// overflow limit: bound_math.h), and whether the bound still holds.
[[gnu::always_inline]] inline std::int64_t grown_bound(std::int64_t bound_ns,
                                                       std::uint64_t growth_mult,
                                                       std::uint32_t growth_shift,
                                                       std::uint64_t delta) noexcept {
  // Unsigned (modular): a stale reader's huge delta computes garbage that
  // is thrown away, never undefined behaviour.
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(bound_ns) +
                                   ((delta * growth_mult) >> growth_shift));
}

template <clock_kind K, class Counter>
[[gnu::always_inline]] inline bool try_read_bounded(const page& p, Counter&& counter,
                                                    bounded_read& out) noexcept {
  static_assert(K == clock_kind::realtime || K == clock_kind::tai);
  const clock_line& l = p.hot;
  const bound_line& b = p.bound;
  const std::uint32_t seq = load(l.seq);
  if (seq & 1u) [[unlikely]] {
    return false;
  }
  const auto now = counter();
  // The writer keeps void_delta <= max_delta (page.h), so one compare is
  // the staleness check, the clamp and the void point together; a void
  // bound goes to the careful path, which answers with the time and status
  // unknown. Few values are live at once: no callee-saved register.
  const std::uint64_t delta = now.value - load(l.cycle_last);
  std::int64_t ns = load_base_ns<K>(l) + delta_to_ns(delta, load_mult<K>(l), load_shift(l));
  // Computed here, before the bound's fields are loaded: GCC would
  // otherwise load every field first and save three callee-saved
  // registers (the empty asm only pins where the value is computed).
  asm volatile("" : "+r"(ns));
  out.ns = ns;
  std::int64_t half =
      grown_bound(load(b.bound_ns), load(b.growth_mult), load(b.growth_shift), delta);
  asm volatile("" : "+r"(half));  // likewise, before the last fields
  out.half_width = half;
  out.status = static_cast<sync_status>(load(b.status));
  const std::uint64_t void_delta = load(b.void_delta);
  // After every field: a writer that began meanwhile changed it.
  const std::uint32_t seq_after = load_relaxed((&l.seq)[now.zero]);
  return delta < void_delta && seq_after == seq;
}

}  // namespace vclock::detail

#endif  // VCLOCK_DETAIL_BOUNDED_READER_H_
