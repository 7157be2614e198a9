// Drives a timekeeper in real time: a tick every config().tick_ns, and one
// at once when the kernel's REALTIME is set or the system resumes
// (TFD_TIMER_CANCEL_ON_SET, how systemd learns of steps). Used by the
// library's own thread and by vclockd.
#ifndef VCLOCK_SRC_LIB_TICK_LOOP_H_
#define VCLOCK_SRC_LIB_TICK_LOOP_H_

#include <pthread.h>
#include <signal.h>

#include <cstdint>

#include "lib/timekeeper.h"

namespace vclock {

class tick_loop {
 public:
  explicit tick_loop(timekeeper& tk) noexcept;
  ~tick_loop();
  tick_loop(const tick_loop&) = delete;
  tick_loop& operator=(const tick_loop&) = delete;

  // One period's work, under `lock` if not null. True if it was a
  // clock-was-set wake-up (the kernel stepped REALTIME, or resumed).
  bool run_once(pthread_mutex_t* lock) noexcept;

  // Sleeps until the next period or a clock-was-set event. Periods are
  // kept on a fixed grid from construction; one overslept is not caught
  // up. `sigmask` is ppoll's: a signal it leaves unblocked ends the wait
  // early. With `watch_fd` (>= 0), true if that descriptor became readable
  // (vclockd's pidfd of the process it serves alone).
  bool wait(const sigset_t* sigmask, int watch_fd = -1) noexcept;

 private:
  timekeeper& tk_;
  int fd_ = -1;                 // the clock-was-set timerfd; -1 if unavailable
  int period_fd_ = -1;          // the period's timerfd; -1: a ppoll timeout instead
  bool woken_by_step_ = false;  // the last wait() ended on fd_
  std::int64_t next_ = 0;       // the next period's end, without period_fd_
};

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_TICK_LOOP_H_
