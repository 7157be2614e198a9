// The robust list: a head and one entry, in static storage (the kernel
// reads them when the thread exits). The kernel finds the futex word at the
// entry's address plus the head's futex_offset, so the entry lives here and
// the offset spans to the page's mapping, wherever that is.
#include "daemon/coarse_owner.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace vclock::daemon {
namespace {

robust_list_head head;
robust_list entry;

}  // namespace

std::uint32_t claim_coarse_owner(const page& p, bool& registered) noexcept {
  const auto tid = static_cast<std::uint32_t>(gettid());
  // The owner word is the low half of time_word: first in memory on the
  // little-endian machines vclock runs on.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  const auto* word = reinterpret_cast<const char*>(&p.coarse.time_word);
  entry.next = &head.list;  // one entry: back to the head ends the walk
  head.list.next = &entry;
  head.futex_offset = word - reinterpret_cast<const char*>(&entry);
  head.list_op_pending = nullptr;
  registered = syscall(SYS_set_robust_list, &head, sizeof(head)) == 0;
  return tid & FUTEX_TID_MASK;
}

}  // namespace vclock::daemon
