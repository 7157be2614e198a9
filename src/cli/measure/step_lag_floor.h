// The floor of `vclock track --steps`: how soon after a REALTIME step any
// thread can know of it. A bare thread blocked on a timerfd armed with
// TFD_TIMER_CANCEL_ON_SET (as vclockd's is, tick_loop.cc), at vclockd's
// policy and priority (SCHED_FIFO 10), woken by the same steps, counts
// each wake-up (a word the sampler reads in every probe, as it reads
// vclock's REALTIME) and notes the kernel's MONOTONIC time then, and does
// nothing else. Seen by the sampler, it is the lag of a writer that
// published the instant it woke: the floor of vclockd's, measured the same
// way (issue 20 holds vclockd to it; docs/performance.md, round 3, has
// what it measured). On a VM it is mostly the vCPU's wake-up.
#ifndef VCLOCK_SRC_CLI_MEASURE_STEP_LAG_FLOOR_H_
#define VCLOCK_SRC_CLI_MEASURE_STEP_LAG_FLOOR_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace vclock::cli {

// vclockd's real-time priority (src/daemon/main.cc).
inline constexpr int floor_fifo_priority = 10;

class step_floor {
 public:
  // Starts the thread; it blocks until the first step. `max_wakes` bounds
  // what it records (preallocated: nothing allocates after a wake-up).
  explicit step_floor(std::size_t max_wakes);
  ~step_floor();
  step_floor(const step_floor&) = delete;
  step_floor& operator=(const step_floor&) = delete;

  // Stops the thread; the figures below may be read after it.
  void stop();

  bool available() const { return timer_fd_ >= 0; }
  // "SCHED_FIFO 10", or the normal policy and why (not permitted).
  const std::string& policy() const { return policy_; }
  // Wake-ups by a step so far: the sampler's view (relaxed: a probe that
  // misses the latest one sees it in the next).
  std::uint64_t wake_count() const { return wake_count_.load(std::memory_order_relaxed); }
  // Kernel MONOTONIC at each wake-up by a step, in order: the thread's view.
  const std::vector<std::int64_t>& wakes() const { return wakes_; }

 private:
  void run();

  int timer_fd_ = -1;
  int stop_fd_ = -1;
  std::string policy_;
  std::vector<std::int64_t> wakes_;
  std::atomic<std::uint64_t> wake_count_{0};
  std::atomic<bool> policy_set_{false};
  std::thread thread_;  // last: starts once every member above is ready
};

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_MEASURE_STEP_LAG_FLOOR_H_
