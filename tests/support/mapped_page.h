// A vclock page file mapped read-only, as a client maps it, and read the library's way
// (fast path, else careful path), for the tests that run vclockd as a real process.
#ifndef VCLOCK_TESTS_SUPPORT_MAPPED_PAGE_H_
#define VCLOCK_TESTS_SUPPORT_MAPPED_PAGE_H_

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "lib/kernel_clock.h"
#include "support/page_mode.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/page.h"

namespace vclock::test {

// The page file mapped read-only, as a client maps it.
class mapped_page {
 public:
  explicit mapped_page(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    void* m = mmap(nullptr, vclock::page_bytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m != MAP_FAILED) p_ = static_cast<const vclock::page*>(m);
  }
  ~mapped_page() {
    if (p_ != nullptr) munmap(const_cast<vclock::page*>(p_), vclock::page_bytes);
  }
  mapped_page(const mapped_page&) = delete;
  mapped_page& operator=(const mapped_page&) = delete;
  const vclock::page* get() const { return p_; }

  // One MONOTONIC reading the way the library makes it: fast path, else careful path.
  std::int64_t monotonic() const {
    using vclock::arch::counter_ordering;
    constexpr counter_ordering ordered = vclock::arch::strongest_ordering;
    return vclock::detail::read_fast<vclock::detail::clock_kind::monotonic>(
        *p_, [] { return vclock::arch::read_counter<ordered>(); },
        [this] {
          return vclock::detail::read_careful<vclock::detail::clock_kind::monotonic>(
              *p_, [] { return vclock::arch::read_counter<ordered>(); },
              [] { return vclock::kernel::now_ns(CLOCK_MONOTONIC); });
        });
  }

  bool counter_mode() const { return vclock::test::page_in_counter_mode(*p_); }
  // Tests that need the counter's answers wait for them (page_mode.h says why).
  bool wait_for_counter_mode() const { return vclock::test::wait_for_counter_mode(*p_); }

 private:
  const vclock::page* p_ = nullptr;
};

}  // namespace vclock::test

#endif  // VCLOCK_TESTS_SUPPORT_MAPPED_PAGE_H_
