// Ticks from other CPUs when vclockd's ticking thread is late.
//
// A thread that sleeps until its next period waits on a timer of the CPU it
// last ran on. A hypervisor that takes that vCPU away (a saturated guest
// over its host quota: docs/design.md, "Coarse clocks under saturation")
// stops its ticks, and with them the coarse clocks, while the guest's other
// CPUs run on; the kernel's own tick moves to a CPU that runs. So do these:
// threads pinned to distinct CPUs, each waking once a period shortly after
// a tick is due, tick in its place when none was taken. Every tick, theirs and the ticking
// thread's, takes lock(). Where that lock is held past the tick's time (the
// ticking thread's CPU vanished inside its tick), a standby continues the
// line on the page instead (timekeeper::continue_line()): every page update
// takes a second lock, the standbys', held for the update's stores only.
#ifndef VCLOCK_SRC_DAEMON_STANDBY_TICKERS_H_
#define VCLOCK_SRC_DAEMON_STANDBY_TICKERS_H_

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "lib/timekeeper.h"

namespace vclock::daemon {

class standby_tickers {
 public:
  // At most this many: two cover a 2-CPU guest, and on a larger machine
  // two vanished CPUs at once are rarer than one; each costs a wake-up a
  // period.
  static constexpr int max_threads = 2;

  // Shares the publish lock with `tk` from now until destroyed: construct
  // it before the ticking thread's first tick.
  explicit standby_tickers(timekeeper& tk) noexcept : tk_(tk) {
    tk_.share_publish_lock(&publish_lock_);
  }
  ~standby_tickers() {
    stop();
    tk_.share_publish_lock(nullptr);
  }
  standby_tickers(const standby_tickers&) = delete;
  standby_tickers& operator=(const standby_tickers&) = delete;

  // Starts one thread on each of the first max_threads CPUs this process
  // may run on, at the calling thread's scheduling policy and signal mask.
  // Returns how many started.
  int start() noexcept;
  // Stops and joins them: no tick is taken after it returns.
  void stop() noexcept;

  // The lock every tick takes (tick_loop::run_once's).
  pthread_mutex_t* lock() noexcept { return &lock_; }
  // The ticking thread ticked (after run_once): the standbys stay idle.
  void ticked() noexcept;
  // Ticks the standbys took, and on which CPUs they run.
  std::uint64_t ticks_taken() const noexcept { return taken_.load(std::memory_order_relaxed); }
  // Lines they continued while the tick's lock was held.
  std::uint64_t lines_continued() const noexcept {
    return continued_.load(std::memory_order_relaxed);
  }
  int cpu(int i) const noexcept { return cpus_[i]; }

 private:
  struct start_arg {
    standby_tickers* self;
    int index;
  };
  static void* thread_main(void* arg) noexcept;
  void run(int index) noexcept;

  timekeeper& tk_;
  pthread_mutex_t lock_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t publish_lock_ = PTHREAD_MUTEX_INITIALIZER;  // timekeeper::share_publish_lock
  std::atomic<std::int64_t> last_tick_ns_{0};                 // kernel MONOTONIC
  std::atomic<std::uint64_t> tick_count_{0};                  // ticks taken by anyone
  std::atomic<std::uint64_t> taken_{0};
  std::atomic<std::uint64_t> continued_{0};
  std::atomic<bool> stopping_{false};
  pthread_t threads_[max_threads]{};
  start_arg args_[max_threads]{};
  int cpus_[max_threads]{};
  int started_ = 0;
};

}  // namespace vclock::daemon

#endif  // VCLOCK_SRC_DAEMON_STANDBY_TICKERS_H_
