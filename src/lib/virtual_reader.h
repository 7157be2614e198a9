// Reading virtual time (vclock/ns_page.h) in a process that joined a
// namespace: its host time from the_host_page, mapped by the_ns_page's line
// for the clock's family. Two forms:
//   virtual_ns()       every clock, every case: the careful path of a
//                      process whose the_page is left odd (api.cc), and the
//                      fallback of the other form;
//   try_read_virtual_line() and finish_virtual(): the fine clocks' common case, for the entry
//   points
//                      that the shim binds in a namespace (src/shim/
//                      virtual_clock.cc): the host page's fast path, and the
//                      namespace's line applied around it with nothing
//                      before the counter read but one load, and no division
//                      after it for a timespec.
// The pages are the link-time ones, not pointers to them: one load less in
// the chain an ordered counter read waits for.
#ifndef VCLOCK_SRC_LIB_VIRTUAL_READER_H_
#define VCLOCK_SRC_LIB_VIRTUAL_READER_H_

#include <time.h>

#include <cstdint>
#include <type_traits>

#include "lib/kernel_clock.h"
#include "lib/runtime.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/ns_reader.h"
#include "vclock/detail/reader.h"

namespace vclock::detail {

// What this process's kernel time namespace adds to family F's host time
// (runtime.h: 0 unless the host page is the daemon's and the namespace
// offsets the clocks).
template <clock_kind K>
[[gnu::always_inline]] inline std::int64_t frame_offset() noexcept {
  return frame_offset_ns[static_cast<std::uint32_t>(family_of(K))];
}

// Host time, when the host page's fast path cannot answer. The careful
// path compares the kernel's answers with the page's values, so it asks
// for the kernel's in the page's frame.
template <clock_kind K>
[[gnu::cold, gnu::noinline]] std::int64_t host_careful_ns() noexcept {
  const std::int64_t offset = frame_offset<K>();
  return read_careful<K>(
             the_host_page, [] { return arch::read_counter<arch::strongest_ordering>(); },
             [offset] { return kernel::now_ns(kernel_clock_of(K)) - offset; }) +
         offset;
}

template <clock_kind K, arch::counter_ordering O>
[[gnu::always_inline]] inline std::int64_t host_ns() noexcept {
  std::int64_t h = 0;
  if constexpr (is_coarse(K)) {
    if (!try_read_coarse<K, as_ns>(the_host_page, h)) [[unlikely]] {
      return host_careful_ns<K>();
    }
  } else {
    if (!try_read_fast<K>(
            the_host_page, [] { return arch::read_counter<O>(); }, h)) [[unlikely]] {
      return host_careful_ns<K>();
    }
  }
  return h + frame_offset<K>();
}

// Virtual time in ns. TAI maps as REALTIME does, at REALTIME's host value
// (TAI's offset, whole seconds, is kept as it is): a rate scales elapsed
// time, not the 37 s between the two.
template <clock_kind K, arch::counter_ordering O>
[[gnu::noinline]] std::int64_t virtual_ns() noexcept {
  constexpr ns_family family = family_of(K);
  for (;;) {
    const std::uint32_t current = load(the_ns_page.header.current);
    std::int64_t host = 0;
    std::int64_t tai_offset = 0;
    if constexpr (K == clock_kind::tai) {
      const std::int64_t real = host_ns<clock_kind::realtime, O>();
      const std::int64_t tai = host_ns<clock_kind::tai, O>();
      tai_offset = (tai - real + ns_per_s / 2) / ns_per_s * ns_per_s;
      host = tai - tai_offset;
    } else {
      host = host_ns<K, O>();
    }
    std::int64_t v = 0;
    if (map_if_unchanged<family>(the_ns_page, current, host, v)) [[likely]] {
      return v + tai_offset;
    }
  }
}

// The host fast path's result kept in its two parts: the host time at the
// line's cycle_last (known before the counter is read) and the ns elapsed
// since (known after).
struct host_parts {
  std::int64_t base;
  std::int64_t elapsed;
};

struct as_host_parts {
  using result = host_parts;
  using prepared = std::int64_t;
  [[gnu::always_inline]] static prepared prepare(std::int64_t base,
                                                 std::int64_t whole_seconds) noexcept {
    return base + whole_seconds * ns_per_s;
  }
  [[gnu::always_inline]] static result finish(prepared base, std::int64_t elapsed) noexcept {
    return {base, elapsed};
  }
  static result from_ns(std::int64_t ns) noexcept { return {ns, 0}; }
};

// The virtual time of host time base + elapsed on the piece (a, rate), as
// `Out` (as_ns or as_timespec); false where the fast form does not apply
// (a negative or saturating result, or at a rate other than 1 a host base
// before the anchor: virtual_ns() answers those).
//
// Exactly ns_map(a, rate, base + elapsed): with W = (base - a.host_ns) *
// rate, a Q32.32 number whose whole part is the virtual ns at `base` and
// whose fraction f is kept,
//   floor((base + elapsed - a.host_ns) * rate) = floor(W) + floor(f + elapsed * rate).
// Everything about W depends on the pages alone, so it runs while the
// counter is read, the split of a timespec's seconds included; after it
// come one multiply (none at rate 1) and one add with a carry.
//
// virtual_at_base(): W's part, at a rate other than 1.
struct virtual_parts {
  std::int64_t at_base;   // virtual ns at the host line's base, floored; < 0: none here
  std::uint64_t elapsed;  // virtual ns from there, floored with W's fraction
};

[[gnu::always_inline]] inline virtual_parts virtual_at_base(ns_anchor a, std::uint64_t rate,
                                                            host_parts h) noexcept {
  // A host base before the anchor (a host line older than the piece, when
  // two changes come within a host tick) is declined rather than computed
  // signed: unsigned, the product is one multiply in few registers, which
  // keeps the entry points' rate path shorter (docs/performance.md, "Why
  // the code is shaped so").
  const std::uint64_t span =
      static_cast<std::uint64_t>(h.base) - static_cast<std::uint64_t>(a.host_ns);
  if (span > INT64_MAX) return {-1, 0};
  const ns_uint128 w = static_cast<ns_uint128>(span) * rate;
  const auto whole = static_cast<std::uint64_t>(w >> 32);
  std::int64_t at_base = 0;
  if ((w >> 95) != 0 ||
      __builtin_add_overflow(a.virtual_ns, static_cast<std::int64_t>(whole), &at_base)) {
    return {-1, 0};
  }
  const auto fraction = static_cast<std::uint64_t>(w) & 0xffffffffu;
  return {at_base,
          static_cast<std::uint64_t>(
              (static_cast<ns_uint128>(static_cast<std::uint64_t>(h.elapsed)) * rate + fraction) >>
              32)};
}

// The two parts added, as `Out`.
template <class Out>
[[gnu::always_inline]] inline bool finish_parts(std::int64_t at_base, std::uint64_t elapsed,
                                                typename Out::result& out) noexcept {
  if (at_base < 0) [[unlikely]] {
    return false;  // before 1970 or before boot: the careful path's
  }
  if constexpr (std::is_same_v<Out, as_ns>) {
    std::int64_t v = 0;
    if (__builtin_add_overflow(at_base, static_cast<std::int64_t>(elapsed), &v)) return false;
    out = v;
  } else {
    const auto u = static_cast<std::uint64_t>(at_base);
    std::uint64_t sec = u / 1'000'000'000u;
    std::uint64_t nsec = u % 1'000'000'000u + elapsed;
    if (nsec >= 1'000'000'000u) [[unlikely]] {
      if (elapsed < 1'000'000'000u) {
        nsec -= 1'000'000'000u;
        ++sec;
      } else {  // a fast rate over a long host tick: more than a second
        sec += nsec / 1'000'000'000u;
        nsec %= 1'000'000'000u;
      }
    }
    out.tv_sec = static_cast<time_t>(sec);
    out.tv_nsec = static_cast<long>(nsec);
  }
  return true;
}

// At rate 1 (an add), or another (virtual_at_base()).
template <class Out>
[[gnu::always_inline]] inline bool finish_virtual(const ns_anchor& a, std::uint64_t rate,
                                                  const host_parts& h,
                                                  typename Out::result& out) noexcept {
  if (rate == rate_one_q32) [[likely]] {
    std::int64_t at_base = 0;
    if (__builtin_add_overflow(a.virtual_ns, h.base - a.host_ns, &at_base)) return false;
    return finish_parts<Out>(at_base, static_cast<std::uint64_t>(h.elapsed), out);
  }
  const virtual_parts v = virtual_at_base(a, rate, h);
  return finish_parts<Out>(v.at_base, v.elapsed, out);
}

// The fine clocks but TAI, in a namespace: the host line's parts and the
// namespace's piece that applies to them. False (go to virtual_ns()) when
// the host fast path cannot answer, a change came meanwhile, or the read
// crosses the namespace's switch point. The caller finishes with
// finish_virtual(), at rate 1 inline and otherwise out of line (keeping
// the rare multiply off the common path spares every entry point the
// callee-saved registers it would need: checked in the disassembly).
template <clock_kind K, arch::counter_ordering O>
[[gnu::always_inline]] inline bool try_read_virtual_line(ns_anchor& a, std::uint64_t& rate,
                                                         host_parts& h) noexcept {
  static_assert(!is_coarse(K) && K != clock_kind::tai);
  const std::uint32_t current = load(the_ns_page.header.current);
  if (!try_read_fast<K, as_host_parts>(
          the_host_page, [] { return arch::read_counter<O>(); }, h)) [[unlikely]] {
    return false;
  }
  h.base += frame_offset<K>();  // page values only: overlaps the counter read
  std::int64_t switch_host = 0;
  if (!piece_if_unchanged<family_of(K)>(the_ns_page, current, h.base, a, rate, switch_host))
      [[unlikely]] {
    return false;
  }
  // Else the switch point lies between the line's base and now.
  return h.base >= switch_host || h.base + h.elapsed < switch_host;
}

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_VIRTUAL_READER_H_
