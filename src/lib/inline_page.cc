// What vclock.hpp's inline reader needs from the library: the page's
// address and the ordering the entry points' ifuncs chose, as one word
// (vclock/detail/inline_reader.h). Asked once per process, at static
// initialisation of the program that includes the header.
#include <cstdint>

#include "lib/ordering.h"
#include "lib/runtime.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/inline_reader.h"
#include "vclock/page.h"

// The word packs the ordering into the page address's low bits.
static_assert(alignof(vclock::page) >= vclock::page_bytes);
static_assert([] {
  for (const auto o : vclock::arch::ordered_variants) {
    if (static_cast<std::uintptr_t>(o) > vclock::detail::inline_ordering_mask) return false;
  }
  return true;
}());

extern "C" VCLOCK_API std::uintptr_t vclock_detail_inline_word(unsigned abi_major) noexcept {
  // A header of another page ABI major would read fields that moved: it
  // gets 0 and takes the call path for good.
  if (abi_major != vclock::page_abi_major || !vclock::arch::has_counter) {
    return 0;
  }
  // the_page never moves (a shared page is mapped over it) and, in a
  // process that joined a namespace, never lets a fast read finish: the
  // inline reader, which runs the very same fast path, then calls too.
  const auto ordering = static_cast<std::uintptr_t>(vclock::chosen_ordering());
  return reinterpret_cast<std::uintptr_t>(&vclock::detail::the_page) | ordering;
}
