// Stamps (include/vclock/vclock.h): the counter now, the time later, from
// the page's history of lines (lib/history.h, docs/stamps.md).
#include <errno.h>

#include <cstddef>
#include <cstdint>

#include "lib/history.h"
#include "lib/ordering.h"
#include "lib/runtime.h"
#include "lib/stamp_convert.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/vclock.h"

namespace vclock::detail {
namespace {

using arch::counter_ordering;

// The timekeeper of an in-process page starts on a process's first call;
// a stamp is such a call too. Epoch 0 until its first tick.
[[gnu::cold, gnu::noinline]] void start_for_stamps() noexcept { ensure_started(); }

// The epoch is one word, so a relaxed load cannot tear, and no seqlock is
// needed: it changes only when the counter jumps or at a new boot.
template <counter_ordering O>
[[gnu::always_inline]] inline vclock_stamp_t stamp_now() noexcept {
  const std::uint64_t counter = arch::read_counter<O>().value;
  const std::uint64_t epoch = load_relaxed(the_page.history.header.epoch);
  if (epoch == 0) [[unlikely]] {
    start_for_stamps();
  }
  return {counter, epoch};
}

template <counter_ordering O>
vclock_stamp_t stamp_ordered() noexcept {
  return stamp_now<O>();
}

}  // namespace

bool stamp_clock_kind(clockid_t clock, clock_kind& k) noexcept {
  // A stamp converts to the page's fine clocks (vclock.h), not the coarse ones.
  const served_kind s = kind_of(clock);
  if (!s.served || is_coarse(s.kind)) return false;
  k = s.kind;
  return true;
}

namespace {

// What every conversion checks first: the clock, the process, the page's
// history (copied into `s`), and returns 0 or a negative errno.
int prepare(clockid_t clock, clock_kind& k, history_snapshot& s) noexcept {
  if (!stamp_clock_kind(clock, k)) return -EINVAL;
  if (joined_namespace != nullptr) return -EAGAIN;  // virtual time: not yet
  if (!take_snapshot(the_page, s)) return -ENODATA;
  return 0;
}

}  // namespace

using stamp_fn = vclock_stamp_t (*)() noexcept;

struct stamp_set {
  template <counter_ordering O>
  VCLOCK_RESOLVER_SAFE static stamp_fn make() noexcept {
    return stamp_ordered<O>;
  }
};

// Only returns addresses: safe in an ifunc resolver (see api.cc).
VCLOCK_RESOLVER_SAFE stamp_fn stamp_for(counter_ordering ordering) noexcept {
  return for_ordering<stamp_set>(ordering);
}

namespace {

// The batch loop; `each`: status[i] written too (a separate instance, so
// the plain batch's loop stays as it was).
template <bool each>
int convert_loop(const history_snapshot& s, clock_kind k, const vclock_stamp_t* stamps, size_t n,
                 int64_t* out, int* status) noexcept {
  history_segment seg;
  bool have_seg = false;
  exact_range fast;  // the last segment's exact part: most stamps of a batch
  const std::uint64_t epoch = s.h.header.epoch;
  int worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::uint64_t c = stamps[i].counter;
    if (stamps[i].epoch == epoch && c - fast.lo < fast.span) [[likely]] {
      out[i] = fast.base + delta_to_ns(c - fast.cycle_last, fast.mult, fast.shift);
      if constexpr (each) status[i] = stamp_exact;
      continue;
    }
    stamp_time t;
    const int r = stamp_to_time(s, k, stamps[i].epoch, stamps[i].counter, seg, have_seg, t);
    if constexpr (each) status[i] = r;
    if (r < 0) {
      out[i] = INT64_MIN;
      if (worst >= 0) worst = r;
      continue;
    }
    out[i] = t.ns;
    if (r == stamp_exact) fast = exact_range_of(seg, k);
    if (r > worst && worst >= 0) worst = r;
  }
  return worst;
}

}  // namespace

// The batch conversion against one snapshot: live (vclock_stamps_to_ns)
// and from an exported file (stamp_file.cc) alike.
int convert_stamps(const history_snapshot& s, clock_kind k, const vclock_stamp_t* stamps, size_t n,
                   int64_t* out, int* status) noexcept {
  if (status != nullptr) return convert_loop<true>(s, k, stamps, n, out, status);
  return convert_loop<false>(s, k, stamps, n, out, nullptr);
}

int refuse_stamps(int err, size_t n, int64_t* out, int* status) noexcept {
  for (size_t i = 0; i < n; ++i) {
    out[i] = INT64_MIN;
    status[i] = err;
  }
  return err;
}

}  // namespace vclock::detail

namespace d = vclock::detail;

extern "C" {

#if VCLOCK_ARCH_CHOOSES_ORDERING
__attribute__((visibility("hidden"), no_sanitize("address", "thread", "undefined"))) d::stamp_fn
resolve_stamp() {
  return d::stamp_for(vclock::chosen_ordering());
}

VCLOCK_API vclock_stamp_t vclock_stamp(void) noexcept __attribute__((ifunc("resolve_stamp")));
#else
VCLOCK_API vclock_stamp_t vclock_stamp(void) noexcept {
  return d::stamp_for(vclock::arch::ordered_variants[0])();
}
#endif

VCLOCK_API vclock_stamp_t vclock_stamp_relaxed(void) noexcept {
  return d::stamp_now<vclock::arch::counter_ordering::none>();
}

VCLOCK_API int vclock_stamp_to_ns_bounded(clockid_t clock, vclock_stamp_t stamp, int64_t* ns,
                                          int64_t* bound_ns) noexcept {
  if (ns == nullptr) return -EINVAL;
  d::clock_kind k{};
  d::history_snapshot s;
  const int r = d::prepare(clock, k, s);
  if (r != 0) return r;
  d::history_segment seg;
  bool have_seg = false;
  d::stamp_time t;
  const int status = d::stamp_to_time(s, k, stamp.epoch, stamp.counter, seg, have_seg, t);
  if (status < 0) return status;
  *ns = t.ns;
  if (bound_ns != nullptr) *bound_ns = t.bound_ns;
  return status;
}

VCLOCK_API int vclock_stamp_to_ns(clockid_t clock, vclock_stamp_t stamp, int64_t* ns) noexcept {
  return vclock_stamp_to_ns_bounded(clock, stamp, ns, nullptr);
}

VCLOCK_API int vclock_stamps_to_ns(clockid_t clock, const vclock_stamp_t* stamps, size_t n,
                                   int64_t* out) noexcept {
  if (n == 0) return 0;
  if (stamps == nullptr || out == nullptr) return -EINVAL;
  d::clock_kind k{};
  d::history_snapshot s;
  const int r = d::prepare(clock, k, s);
  if (r != 0) return r;
  return d::convert_stamps(s, k, stamps, n, out);
}

VCLOCK_API int vclock_stamps_to_ns_each(clockid_t clock, const vclock_stamp_t* stamps, size_t n,
                                        int64_t* out, int* status) noexcept {
  if (n == 0) return 0;
  if (stamps == nullptr || out == nullptr || status == nullptr) return -EINVAL;
  d::clock_kind k{};
  if (!d::stamp_clock_kind(clock, k)) return -EINVAL;  // a bad argument: nothing written
  d::history_snapshot s;
  const int r = d::prepare(clock, k, s);
  if (r != 0) return d::refuse_stamps(r, n, out, status);
  return d::convert_stamps(s, k, stamps, n, out, status);
}

}  // extern "C"
