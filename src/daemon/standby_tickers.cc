// Standby tickers: why, standby_tickers.h.
#include "daemon/standby_tickers.h"

#include <sched.h>
#include <time.h>

#include "lib/kernel_clock.h"
#include "vclock/detail/reader.h"

namespace vclock::daemon {

int standby_tickers::start() noexcept {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return 0;
  // Fewer than two CPUs: nowhere else to tick from.
  if (CPU_COUNT(&allowed) < 2) return 0;
  ticked();
  for (int cpu = 0; cpu < CPU_SETSIZE && started_ < max_threads; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) break;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    // The creator's policy and priority (vclockd's SCHED_FIFO, when it has
    // it): a standby must preempt what the ticking thread preempts.
    pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
    const bool pinned = pthread_attr_setaffinity_np(&attr, sizeof(one), &one) == 0;
    args_[started_] = {this, started_};
    if (pinned && pthread_create(&threads_[started_], &attr, &thread_main, &args_[started_]) == 0) {
      cpus_[started_] = cpu;
      ++started_;
    }
    pthread_attr_destroy(&attr);
  }
  return started_;
}

void standby_tickers::stop() noexcept {
  stopping_.store(true, std::memory_order_relaxed);
  for (int i = 0; i < started_; ++i) pthread_join(threads_[i], nullptr);
  started_ = 0;
}

void standby_tickers::ticked() noexcept {
  last_tick_ns_.store(kernel::now_ns(CLOCK_MONOTONIC), std::memory_order_relaxed);
  tick_count_.fetch_add(1, std::memory_order_release);
}

void* standby_tickers::thread_main(void* arg) noexcept {
  const start_arg* a = static_cast<const start_arg*>(arg);
  a->self->run(a->index);
  return nullptr;
}

void standby_tickers::run(int index) noexcept {
  pthread_setname_np(pthread_self(), "vclockd-standby");
  const std::int64_t period = tk_.config().tick_ns;
  // Each plans to wake an eighth of a period after the one before it, the
  // first an eighth after the next tick is due, and ticks only if no tick
  // was taken meanwhile: while the ticking thread keeps time the standbys
  // only wake; when its CPU vanishes, the first standby whose CPU runs ticks
  // at most a quarter of a period late, and then every period and an
  // eighth (within the coarse clocks' promise, the kernel's lag + 1 ms, for
  // periods up to 8 ms: docs/design.md). The ticking thread's return ends
  // it at its next tick. A tick's lock still held then is held by a ticker
  // stopped inside its tick (a moment's preemption is over long before):
  // the standby continues the line on the page, on the same schedule.
  const std::int64_t after = period * (index + 1) / 8;
  while (!stopping_.load(std::memory_order_relaxed)) {
    const std::uint64_t seen = tick_count_.load(std::memory_order_acquire);
    const std::int64_t due = last_tick_ns_.load(std::memory_order_relaxed) + period + after;
    // Never a shorter sleep: a tick held up (its holder's CPU vanished
    // inside it) must not make a standby spin.
    const std::int64_t soonest = kernel::now_ns(CLOCK_MONOTONIC) + period / 8;
    const std::int64_t wake = due > soonest ? due : soonest;
    const timespec at{wake / detail::ns_per_s, wake % detail::ns_per_s};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr);
    const auto ticked_meanwhile = [&] {
      return tick_count_.load(std::memory_order_acquire) != seen;
    };
    // Never wait for the tick's lock: its holder is ticking, or stopped
    // inside its tick, and then the line is continued instead (only the
    // page's stores wait for one another, under the publish lock).
    if (stopping_.load(std::memory_order_relaxed) || ticked_meanwhile()) {
      continue;
    }
    if (pthread_mutex_trylock(&lock_) != 0) {
      if (!ticked_meanwhile() && tk_.continue_line()) {
        ticked();
        continued_.fetch_add(1, std::memory_order_relaxed);
      }
      continue;
    }
    if (!ticked_meanwhile()) {
      tk_.tick();
      ticked();
      taken_.fetch_add(1, std::memory_order_relaxed);
    }
    pthread_mutex_unlock(&lock_);
  }
}

}  // namespace vclock::daemon
