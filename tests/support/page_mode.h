// Waiting for a page's counter mode. vclockd's READY=1 comes after its first
// calibrated publish, but a page can leave counter mode afterwards (a stall,
// a restart continuing it, a page written by `vclock run` before its daemon
// runs), so a test that needs the counter's answers waits for them here,
// with a timeout.
#ifndef VCLOCK_TESTS_SUPPORT_PAGE_MODE_H_
#define VCLOCK_TESTS_SUPPORT_PAGE_MODE_H_

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "lib/runtime.h"
#include "vclock/detail/seqlock.h"
#include "vclock/page.h"
#include "vclock/vclock.h"

namespace vclock::test {

// Readers answer from the counter: a line published, and no fallback reason.
inline bool page_in_counter_mode(const page& p) {
  return detail::load(p.hot.max_delta) != 0 && detail::load_relaxed(p.mode_reason) == 0;
}

// Polls every millisecond; false if `timeout` passes first.
inline bool wait_for_counter_mode(const page& p,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!page_in_counter_mode(p)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// The same for the page file at `path`, mapped read-only for the wait.
inline bool wait_for_counter_mode(const std::string& path,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  void* m = mmap(nullptr, page_bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return false;
  const bool counting = wait_for_counter_mode(*static_cast<const page*>(m), timeout);
  munmap(m, page_bytes);
  return counting;
}

// This process's own page counts, and stamps have their epoch: false if
// the page is not in counter mode within the wait above (a machine whose
// counter vclock does not use), or no stamp epoch comes a second after.
inline bool counting() {
  vclock_gettime_ns(CLOCK_MONOTONIC);  // the first call starts the timekeeper
  if (!wait_for_counter_mode(detail::the_page)) return false;
  // Its first tick after counting begins gives stamps their epoch.
  for (int i = 0; i < 1000 && vclock_stamp().epoch == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return vclock_stamp().epoch != 0;
}

}  // namespace vclock::test

#endif  // VCLOCK_TESTS_SUPPORT_PAGE_MODE_H_
