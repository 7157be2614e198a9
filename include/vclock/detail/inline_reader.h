// The reader inlined into the program (vclock.hpp): the library's fast
// path on the library's page, with no call and no PLT per read. The
// library hands out, once per process, one word: the page's address
// (4096-aligned) with the counter ordering its ifuncs chose in the low
// bits; 0 means "always call" (another page ABI major, no counter, or a
// read before the word is set). Whatever the fast path cannot answer goes
// to the library's entry point, which has the careful path.
#ifndef VCLOCK_DETAIL_INLINE_READER_H_
#define VCLOCK_DETAIL_INLINE_READER_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <utility>

#include "vclock/detail/reader.h"
#include "vclock/page.h"
#include "vclock/vclock.h"

extern "C" {
// 0, or the address of the page this process reads | its counter ordering
// (arch::counter_ordering), for a reader built against page ABI major
// `abi_major`. Not part of the C API: the inline reader's link to the
// library.
VCLOCK_API std::uintptr_t vclock_detail_inline_word(unsigned abi_major) noexcept;
}

namespace vclock::detail {

inline constexpr std::uintptr_t inline_ordering_mask = page_bytes - 1;

// Set by the program's static initialisation; a read before it (another
// translation unit's initialiser) finds 0 and calls. Atomic (relaxed: a
// plain load on every arch) because a thread that an initialiser started
// may read it while it is set.
// NOLINTNEXTLINE(bugprone-dynamic-static-initializers): 0 before it is set is valid
inline std::atomic<std::uintptr_t> inline_word{vclock_detail_inline_word(page_abi_major)};

inline constexpr clockid_t clock_id_of(clock_kind k) noexcept { return kernel_clock_of(k); }

// try_read_fast with the ordering of `word`, over the ordered variants the
// library may have chosen (arch::ordered_variants), or the relaxed read.
template <clock_kind K, bool Ordered, std::size_t I = 0>
[[gnu::always_inline]] inline bool inline_try(const page& p, std::uintptr_t ordering,
                                              std::int64_t& out) noexcept {
  if constexpr (!Ordered) {
    return try_read_fast<K>(
        p, [] { return arch::read_counter<arch::counter_ordering::none>(); }, out);
  } else if constexpr (I < std::size(arch::ordered_variants)) {
    constexpr arch::counter_ordering o = arch::ordered_variants[I];
    if (ordering == static_cast<std::uintptr_t>(o)) [[likely]] {
      return try_read_fast<K>(
          p, [] { return arch::read_counter<o>(); }, out);
    }
    return inline_try<K, Ordered, I + 1>(p, ordering, out);
  } else {
    return false;
  }
}

// Clock K now, in ns: inline where the page answers, else the library.
template <clock_kind K, bool Ordered>
[[gnu::always_inline]] inline std::int64_t inline_now_ns() noexcept {
  const std::uintptr_t word = inline_word.load(std::memory_order_relaxed);
  if (word != 0) [[likely]] {
    const auto* p = reinterpret_cast<const page*>(word & ~inline_ordering_mask);
    std::int64_t r;
    bool ok;
    if constexpr (is_coarse(K)) {
      ok = try_read_coarse<K, as_ns>(*p, r);
    } else {
      ok = inline_try<K, Ordered>(*p, word & inline_ordering_mask, r);
    }
    if (ok) [[likely]] {
      return r;
    }
  }
  if constexpr (Ordered) {
    return vclock_gettime_ns(clock_id_of(K));
  } else {
    return vclock_gettime_ns_relaxed(clock_id_of(K));
  }
}

}  // namespace vclock::detail

#endif  // VCLOCK_DETAIL_INLINE_READER_H_
