// A virtual-time namespace's page: the parameters that turn the host's
// clocks into a namespace's (API.md, "Virtual time"), one small read-only
// file per namespace, mapped by every process in it.
//
// Each clock family maps host time h to virtual time v by a line that is
// re-anchored at every change:
//
//     v = before.virtual_ns + rate_before * (h - before.host_ns)   h <  after.host_ns
//     v = after.virtual_ns  + rate_after  * (h - after.host_ns)    h >= after.host_ns
//
// The writer (`vclock ns set`, `vclock run`) puts the switch point
// `after.host_ns` a little in the future and publishes before the host
// clock reaches it, so a reader that still holds the previous parameters
// computes, for every h it can read, what the new ones give: a change never
// splits readers. after.virtual_ns is the old line's value at the switch
// point (plus the change of offset, if any), computed with the very
// function readers use: changing the rate, freezing (rate 0) and thawing
// are continuous to the nanosecond, and a monotonic clock steps only by an
// offset change that the writer allows (forward, or --allow-backward).
//
// Rates are unsigned Q32.32 fixed point (virtual ns per host ns, times
// 2^32): a product of a host span and a rate is 128-bit, floored, so v is
// non-decreasing in h.
#ifndef VCLOCK_NS_PAGE_H_
#define VCLOCK_NS_PAGE_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace vclock {

inline constexpr std::uint64_t ns_page_magic = 0x0000534e4b4c4356ULL;  // "VCLKNS\0\0"
// ABI history: 1 `current` was the copy's index; 2 it counts changes (its
// low bit is the copy), so that one load of it tells a reader whether a
// change came.
inline constexpr std::uint16_t ns_abi_major = 2;
inline constexpr std::uint16_t ns_abi_minor = 0;
inline constexpr std::uint32_t ns_page_bytes = 4096;
inline constexpr std::uint64_t rate_one_q32 = std::uint64_t{1} << 32;

// The clock families an offset moves together (API.md): MONOTONIC,
// MONOTONIC_RAW and MONOTONIC_COARSE follow `monotonic` (RAW has its own
// line: it runs at its own host rate); BOOTTIME `boottime`; REALTIME,
// REALTIME_COARSE and TAI `realtime`.
enum class ns_family : std::uint32_t { monotonic = 0, raw = 1, boottime = 2, realtime = 3 };
inline constexpr int ns_family_count = 4;

struct ns_anchor {
  std::int64_t host_ns;
  std::int64_t virtual_ns;
};

struct ns_line {
  ns_anchor before;
  ns_anchor after;  // after.host_ns: the switch point
};

// One generation of the parameters. The writer fills the copy not in
// force, under its seq, then makes it the one in force (ns_header::current
// moves on by one): a reader never meets a half-written copy unless two
// changes overlap its read, and then retries.
//   generation   counts changes (1 for the first): a process that waits
//                in virtual time re-computes its deadline when it moves.
//   flags        ns_flag_*: frozen after the switch point.
//   rate_*_q32   virtual ns per host ns, Q32.32; 0 while frozen.
//   rate_running_q32  the rate as last set: what a thaw restores.
//   offset_*_ns  the offsets as last set, for `vclock ns show`: what the
//                lines add on top of the rate, from the namespace's start.
struct alignas(64) ns_params {
  std::uint32_t seq;
  std::uint32_t flags;
  std::uint64_t generation;
  std::uint64_t rate_before_q32;
  std::uint64_t rate_after_q32;
  std::int64_t offset_monotonic_ns;
  std::int64_t offset_boottime_ns;
  std::int64_t offset_realtime_ns;
  std::uint64_t rate_running_q32;
  ns_line lines[ns_family_count];
};
inline constexpr std::uint32_t ns_flag_frozen = 1;

// The page's header, validated once when a process joins:
//   magic, abi_major, abi_minor, header_size, page_size: as page_header's.
//   creator_uid   the uid that created it: a process joins only a page of
//                 its own uid or root's (the file's owner is checked too).
//   name          the namespace's name, NUL-terminated ("" anonymous).
struct alignas(64) ns_header {
  std::uint64_t magic;
  std::uint16_t abi_major;
  std::uint16_t abi_minor;
  std::uint32_t header_size;
  std::uint32_t page_size;
  std::uint32_t creator_uid;
  std::uint32_t current;  // changes so far; current & 1: the copy in force
  std::uint32_t reserved0;
  char name[64];
};

struct alignas(4096) ns_page {
  ns_header header;
  ns_params copies[2];
  std::uint8_t reserved[4096 - sizeof(ns_header) - 2 * sizeof(ns_params)];
};

static_assert(sizeof(ns_header) == 128);
static_assert(sizeof(ns_params) == 192);
static_assert(sizeof(ns_page) == ns_page_bytes);
static_assert(std::is_standard_layout_v<ns_page> && std::is_trivially_copyable_v<ns_page>);

// Virtual time for host time `h` on one line: the function readers use and
// writers re-anchor with. Floors, so it is non-decreasing in h for any
// rate; exact (no rounding) when the rate is 1.
__extension__ typedef __int128 ns_int128;  // GCC and clang on 64-bit targets
__extension__ typedef unsigned __int128 ns_uint128;

// Saturates at the ends of int64 ns (years 1678 and 2262), which a fast
// rate reaches: the writer refuses parameters that start beyond them.
[[gnu::always_inline]] inline std::int64_t ns_map(const ns_anchor& a, std::uint64_t rate_q32,
                                                  std::int64_t h) noexcept {
  std::int64_t v = 0;
  if (rate_q32 == rate_one_q32 && !__builtin_add_overflow(a.virtual_ns, h - a.host_ns, &v)) {
    return v;  // offsets only: an add (h - host_ns cannot overflow: both are times)
  }
  const ns_int128 span = static_cast<ns_int128>(h) - a.host_ns;
  const ns_int128 w = a.virtual_ns + ((span * static_cast<ns_int128>(rate_q32)) >> 32);
  constexpr ns_int128 hi = INT64_MAX;
  constexpr ns_int128 lo = INT64_MIN;
  return static_cast<std::int64_t>(w > hi ? hi : (w < lo ? lo : w));
}

[[gnu::always_inline]] inline std::int64_t ns_map(const ns_line& l, std::uint64_t rate_before_q32,
                                                  std::uint64_t rate_after_q32,
                                                  std::int64_t h) noexcept {
  return h < l.after.host_ns ? ns_map(l.before, rate_before_q32, h)
                             : ns_map(l.after, rate_after_q32, h);
}

}  // namespace vclock

#endif  // VCLOCK_NS_PAGE_H_
