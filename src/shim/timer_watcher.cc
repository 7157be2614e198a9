// The timer watcher (timer_watcher.h). A timer armed in virtual time is a
// host timer set where the namespace's line reached its deadline; after a
// change (`vclock ns set`) the line is another, and nothing in the program
// calls the shim (it waits in read, epoll or sigwaitinfo, on the kernel's
// timer). So a thread waits on the futex of the page's `current` word,
// which the writer moves on and wakes after every change, and re-arms.
//
// Why a thread only here: a thread the program did not make can change its
// behaviour (unshare(CLONE_NEWUSER) refuses a multi-threaded process;
// Python warns at fork), so a process in no namespace, or one that makes no
// timer, never has it.
#include "shim/timer_watcher.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "lib/quiet_thread.h"
#include "shim/virtual_time.h"

namespace vclock::shim {
namespace {

// The process whose watcher runs (a fork child has none: it starts its own).
std::atomic<pid_t> watcher_pid{0};
std::atomic<void (*)()> change_handler{nullptr};

void* watch_changes(void*) {
  const ns_page& ns = *joined();
  const auto* word = const_cast<std::uint32_t*>(&ns.header.current);
  std::uint32_t seen = __atomic_load_n(&ns.header.current, __ATOMIC_ACQUIRE);
  for (;;) {
    // A shared mapping of the page's file: the writer's FUTEX_WAKE on its
    // own mapping reaches this one (not FUTEX_PRIVATE_FLAG).
    syscall(SYS_futex, word, FUTEX_WAIT, seen, nullptr, nullptr, 0);
    const std::uint32_t now = __atomic_load_n(&ns.header.current, __ATOMIC_ACQUIRE);
    if (now == seen) continue;  // a spurious wake-up, or a signal
    seen = now;
    change_handler.load(std::memory_order_acquire)();
  }
  return nullptr;
}

}  // namespace

void start_timer_watcher(void (*on_change)()) noexcept {
  if (joined() == nullptr) return;
  const pid_t self = getpid();
  pid_t running = watcher_pid.load(std::memory_order_acquire);
  if (running == self) return;
  if (!watcher_pid.compare_exchange_strong(running, self, std::memory_order_acq_rel)) return;
  change_handler.store(on_change, std::memory_order_release);
  if (!detail::start_quiet_thread(watch_changes, "vclock-timers")) {
    watcher_pid.store(0, std::memory_order_release);  // the next timer tries again
  }
}

}  // namespace vclock::shim
