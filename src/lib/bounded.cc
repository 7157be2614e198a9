// vclock_now_bounded (include/vclock/vclock.h): REALTIME or TAI and its
// error bound, from the page's hot line and bound line under one seq
// (detail/bounded_reader.h). Bound to the variant of the chosen counter
// ordering by an ifunc, as the other ordered entry points are.
#include <errno.h>

#include <climits>
#include <cstdint>

#include "lib/kernel_clock.h"
#include "lib/ordering.h"
#include "lib/runtime.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/bounded_reader.h"
#include "vclock/detail/reader.h"
#include "vclock/vclock.h"

namespace vclock::detail {
namespace {

using arch::counter_ordering;

__extension__ typedef __int128 i128;

std::int64_t saturate(i128 v) noexcept {
  return v > INT64_MAX ? INT64_MAX : (v < INT64_MIN ? INT64_MIN : static_cast<std::int64_t>(v));
}

void unbounded(vclock_bounds* b) noexcept {
  b->earliest_ns = INT64_MIN;
  b->latest_ns = INT64_MAX;
  b->status = VCLOCK_SYNC_UNKNOWN;
}

// Unknown is unbounded: no interval is vouched for, so none is given.
void fill(vclock_bounds* b, std::int64_t ns, std::int64_t half_width, sync_status status) noexcept {
  if (status == sync_status::unknown) {
    unbounded(b);
    return;
  }
  // Saturating (the ends of int64 ns, years 1677 and 2262): one flag test each.
  if (__builtin_sub_overflow(ns, half_width, &b->earliest_ns)) [[unlikely]] {
    b->earliest_ns = INT64_MIN;
  }
  if (__builtin_add_overflow(ns, half_width, &b->latest_ns)) [[unlikely]] {
    b->latest_ns = INT64_MAX;
  }
  b->status = static_cast<int>(status);
}

// Everything the fast path does not answer: the time from the careful
// path, and the bound grown (128-bit) to now while the page is fresh (a
// counter a few ticks behind cycle_last); a page that is off, stale or
// mid-update has no bound (unknown), nor has a process in a virtual-time
// namespace (its clocks are not the true time).
template <clock_kind K>
[[gnu::cold, gnu::noinline]] int now_bounded_careful(vclock_bounds* b) noexcept {
  ensure_started();
  if (joined_namespace != nullptr) {
    unbounded(b);
    return 0;
  }
  const auto counter = [] { return arch::read_counter<arch::strongest_ordering>(); };
  const page& p = the_page;
  // A writer mid-update (a few microseconds): wait for it, as read_careful
  // does, but no longer than max_spins.
  for (int spins = 0; (load(p.hot.seq) & 1u) != 0 && spins < max_spins; ++spins) {
    arch::relax();
  }
  const std::int64_t ns =
      read_careful<K>(the_page, counter, [] { return kernel::now_ns(kernel_clock_of(K)); });
  const std::uint32_t seq = load(p.hot.seq);
  const std::uint64_t cycle_last = load(p.hot.cycle_last);
  const std::uint64_t max_delta = load(p.hot.max_delta);
  const auto status = static_cast<sync_status>(load(p.bound.status));
  const std::int64_t bound_ns = load(p.bound.bound_ns);
  const std::uint64_t growth_mult = load(p.bound.growth_mult);
  const std::uint32_t growth_shift = load(p.bound.growth_shift);
  const std::uint64_t void_delta = load(p.bound.void_delta);
  const auto now = counter();
  if ((seq & 1u) != 0 || load_relaxed((&p.hot.seq)[now.zero]) != seq || max_delta == 0 ||
      status == sync_status::unknown) {
    unbounded(b);
    return 0;
  }
  std::uint64_t delta = now.value - cycle_last;
  if (static_cast<std::int64_t>(delta) < 0 && std::uint64_t{0} - delta <= max_lag_ticks) {
    delta = 0;  // another CPU's counter, a few ticks behind the writer's
  }
  const i128 grown =
      static_cast<i128>(bound_ns) + ((static_cast<i128>(delta) * growth_mult) >> growth_shift);
  const bool fresh = delta < max_delta && delta < void_delta;
  fill(b, ns, saturate(grown), fresh ? status : sync_status::unknown);
  return 0;
}

template <clock_kind K, counter_ordering O>
[[gnu::always_inline]] inline int now_bounded_k(vclock_bounds* b) noexcept {
  bounded_read r;
  if (try_read_bounded<K>(
          the_page, [] { return arch::read_counter<O>(); }, r)) [[likely]] {
    fill(b, r.ns, r.half_width, r.status);
    return 0;
  }
  return now_bounded_careful<K>(b);
}

// TAI out of line: inlined beside REALTIME, its extra field made the whole
// function save four callee-saved registers.
template <counter_ordering O>
[[gnu::noinline]] int now_bounded_tai(vclock_bounds* b) noexcept {
  return now_bounded_k<clock_kind::tai, O>(b);
}

// Out of line, so that the common path makes no call of its own (and needs
// no stack frame for one).
[[gnu::cold, gnu::noinline]] int fail(int error) noexcept {
  errno = error;
  return -1;
}

template <counter_ordering O>
int now_bounded(clockid_t clock, vclock_bounds* b) noexcept {
  if (b == nullptr) [[unlikely]] {
    return fail(EFAULT);
  }
  if (clock == CLOCK_REALTIME) [[likely]] {
    return now_bounded_k<clock_kind::realtime, O>(b);
  }
  if (clock == CLOCK_TAI) return now_bounded_tai<O>(b);
  return fail(EINVAL);
}

}  // namespace

using now_bounded_fn = int (*)(clockid_t, vclock_bounds*) noexcept;

struct bounded_set {
  template <counter_ordering O>
  VCLOCK_RESOLVER_SAFE static now_bounded_fn make() noexcept {
    return now_bounded<O>;
  }
};

// Only returns addresses: safe in an ifunc resolver (see api.cc).
VCLOCK_RESOLVER_SAFE now_bounded_fn now_bounded_for(counter_ordering ordering) noexcept {
  return for_ordering<bounded_set>(ordering);
}

}  // namespace vclock::detail

extern "C" {

#if VCLOCK_ARCH_CHOOSES_ORDERING
__attribute__((visibility("hidden"), no_sanitize("address", "thread", "undefined")))
vclock::detail::now_bounded_fn
resolve_now_bounded() {
  return vclock::detail::now_bounded_for(vclock::chosen_ordering());
}

VCLOCK_API int vclock_now_bounded(clockid_t clock, vclock_bounds* b) noexcept
    __attribute__((ifunc("resolve_now_bounded")));
#else
VCLOCK_API int vclock_now_bounded(clockid_t clock, vclock_bounds* b) noexcept {
  return vclock::detail::now_bounded_for(vclock::arch::ordered_variants[0])(clock, b);
}
#endif

}  // extern "C"
