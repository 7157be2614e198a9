// Reading a namespace page (vclock/ns_page.h): which line a clock follows,
// and one consistent view of it. Used by the careful path of a process that
// joined a namespace; a process in none never reaches it.
#ifndef VCLOCK_DETAIL_NS_READER_H_
#define VCLOCK_DETAIL_NS_READER_H_

#include <cstdint>

#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/ns_page.h"

namespace vclock::detail {

inline constexpr ns_family family_of(clock_kind k) noexcept {
  switch (k) {
    case clock_kind::monotonic:
    case clock_kind::monotonic_coarse:
      return ns_family::monotonic;
    case clock_kind::monotonic_raw:
      return ns_family::raw;
    case clock_kind::boottime:
      return ns_family::boottime;
    case clock_kind::realtime:
    case clock_kind::realtime_coarse:
    case clock_kind::tai:
      return ns_family::realtime;
  }
  return ns_family::monotonic;
}

struct ns_view {
  ns_line line;
  std::uint64_t rate_before_q32;
  std::uint64_t rate_after_q32;
  std::uint32_t current;  // ns_header::current, and the copy's seq, when
  std::uint32_t seq;      // the view was read: still_current()
};

// The copy in force, read under its seq. The writer never writes the copy
// in force: a retry means two changes overlapped this read (each takes
// microseconds), so the loop ends as soon as changes pause.
[[gnu::always_inline]] inline ns_view load_ns_view(const ns_page& p, ns_family f) noexcept {
  for (;;) {
    ns_view v;
    v.current = load(p.header.current);
    const ns_params& c = p.copies[v.current & 1u];
    v.seq = load(c.seq);
    if ((v.seq & 1u) != 0) {
      arch::relax();
      continue;
    }
    const ns_line& l = c.lines[static_cast<std::uint32_t>(f)];
    v.rate_before_q32 = load(c.rate_before_q32);
    v.rate_after_q32 = load(c.rate_after_q32);
    v.line.before.host_ns = load(l.before.host_ns);
    v.line.before.virtual_ns = load(l.before.virtual_ns);
    v.line.after.host_ns = load(l.after.host_ns);
    v.line.after.virtual_ns = load(l.after.virtual_ns);
    if (load(c.seq) == v.seq) return v;
  }
}

// Whether `v` is still the copy in force. A host time read between
// load_ns_view() and a true answer here was read while `v` was in force,
// so before any later change's switch point (each is published before its
// switch point comes): `v` maps it as every other reader does. A reader
// preempted across a change must read again.
[[gnu::always_inline]] inline bool still_current(const ns_page& p, const ns_view& v) noexcept {
  return load(p.header.current) == v.current && load(p.copies[v.current & 1u].seq) == v.seq;
}

[[gnu::always_inline]] inline std::int64_t to_virtual(const ns_view& v,
                                                      std::int64_t host_ns) noexcept {
  return ns_map(v.line, v.rate_before_q32, v.rate_after_q32, host_ns);
}

// The clock read's form of the same protocol, shaped for speed: before the
// host clock is read, one load (ns_header::current, at a link-time address:
// no chain of loads for an ordered counter read to wait for, one word to
// keep across it); the copy's line after, then the same word again. The
// writer writes only the copy not in force and moves `current` on by one
// at every change, so an unchanged `current` means the copy was in force,
// and whole, from before the host time was read until after its line was
// loaded: it maps that time as every other reader does.
//
// piece_if_unchanged(): the piece of family F's line that applies at host time `at` in the copy
// `current` names: its anchor and rate, and the switch point. False when a
// change came meanwhile (`current` moved on).
template <ns_family F>
[[gnu::always_inline]] inline bool piece_if_unchanged(const ns_page& p, std::uint32_t current,
                                                      std::int64_t at, ns_anchor& a,
                                                      std::uint64_t& rate,
                                                      std::int64_t& switch_host) noexcept {
  const ns_params& c = p.copies[current & 1u];
  const ns_line& l = c.lines[static_cast<std::uint32_t>(F)];
  switch_host = load(l.after.host_ns);
  const bool after = at >= switch_host;
  a = after ? ns_anchor{switch_host, load(l.after.virtual_ns)}
            : ns_anchor{load(l.before.host_ns), load(l.before.virtual_ns)};
  rate = after ? load(c.rate_after_q32) : load(c.rate_before_q32);
  return load(p.header.current) == current;
}

template <ns_family F>
[[gnu::always_inline]] inline bool map_if_unchanged(const ns_page& p, std::uint32_t current,
                                                    std::int64_t host_ns,
                                                    std::int64_t& out) noexcept {
  ns_anchor a;
  std::uint64_t rate = 0;
  std::int64_t switch_host = 0;
  if (!piece_if_unchanged<F>(p, current, host_ns, a, rate, switch_host)) [[unlikely]] {
    return false;  // a change came meanwhile: read the host clock again
  }
  out = ns_map(a, rate, host_ns);
  return true;
}

}  // namespace vclock::detail

#endif  // VCLOCK_DETAIL_NS_READER_H_
