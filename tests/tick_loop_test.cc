// The tick loop (src/lib/tick_loop.h): its periods are a fixed grid, never
// short; an overslept period is not caught up; a watched descriptor and an
// unblocked signal end the wait. A real timekeeper on a page in memory.
// (A REALTIME step ending the wait is tests/step_lag/run.sh's: stepping
// the clock here would disturb the tests run beside this one.)
#include "lib/tick_loop.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "lib/kernel_clock.h"
#include "lib/time_sources.h"
#include "lib/timekeeper.h"
#include "vclock/detail/arch.h"
#include "vclock/page.h"

namespace {

using vclock::kernel::now_ns;

class real_sources final : public vclock::time_sources {
 public:
  std::uint64_t read_counter() override { return vclock::arch::read_counter_after_stores(); }
  std::int64_t read_kernel(clockid_t clock) override { return now_ns(clock); }
};

constexpr std::int64_t tick_ns = 2'000'000;

struct fixture {
  std::unique_ptr<vclock::page> p = std::make_unique<vclock::page>();
  real_sources sources;
  vclock::timekeeper_config config = [] {
    vclock::timekeeper_config c;
    c.tick_ns = tick_ns;
    return c;
  }();
  vclock::timekeeper tk{*p, sources, config};
  fixture() { tk.start(); }
};

// Lateness only adds to a wait, so these bounds hold on a loaded machine:
// each is a least time.
TEST(TickLoop, PeriodsAreNeverShort) {
  fixture f;
  // Before the loop: its grid starts when it is made.
  const std::int64_t start = now_ns(CLOCK_MONOTONIC);
  vclock::tick_loop loop(f.tk);
  constexpr int waits = 20;
  for (int i = 0; i < waits; ++i) {
    loop.run_once(nullptr);
    EXPECT_FALSE(loop.wait(nullptr));
  }
  // The grid starts at construction: 20 waits end at its 20th point or later.
  EXPECT_GE(now_ns(CLOCK_MONOTONIC) - start, waits * tick_ns);
}

TEST(TickLoop, AnOversleptPeriodIsNotCaughtUp) {
  fixture f;
  vclock::tick_loop loop(f.tk);
  loop.run_once(nullptr);
  std::this_thread::sleep_for(std::chrono::nanoseconds(10 * tick_ns));
  // Ten periods passed unwaited: the first wait ends at once, and each
  // later one at the grid's next point, as though the ten had been one
  // (caught up, all four would end at once).
  const std::int64_t start = now_ns(CLOCK_MONOTONIC);
  for (int i = 0; i < 4; ++i) {
    loop.wait(nullptr);
    loop.run_once(nullptr);
  }
  EXPECT_GE(now_ns(CLOCK_MONOTONIC) - start, 2 * tick_ns);
}

TEST(TickLoop, AWatchedDescriptorEndsTheWaitAndIsReported) {
  fixture f;
  vclock::tick_loop loop(f.tk);
  const int efd = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  // Not readable: the period ends the wait, not the descriptor.
  EXPECT_FALSE(loop.wait(nullptr, efd));
  const std::uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  EXPECT_TRUE(loop.wait(nullptr, efd));
  close(efd);
}

std::atomic<int> signals_taken{0};
void take_signal(int) { signals_taken.fetch_add(1); }

TEST(TickLoop, ASignalTheMaskLeavesUnblockedEndsTheWait) {
  fixture f;
  struct sigaction sa {};
  sa.sa_handler = take_signal;
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  sigset_t blocked;
  sigset_t previous;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &blocked, &previous), 0);
  sigset_t waiting;
  pthread_sigmask(SIG_BLOCK, nullptr, &waiting);
  sigdelset(&waiting, SIGUSR2);
  {
    // A period of 10 s: only the signal can end this wait in time.
    f.config.tick_ns = 10'000'000'000;
    vclock::timekeeper slow{*f.p, f.sources, f.config};
    vclock::tick_loop loop(slow);
    const pthread_t self = pthread_self();
    std::thread sender([self] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      pthread_kill(self, SIGUSR2);
    });
    const std::int64_t start = now_ns(CLOCK_MONOTONIC);
    EXPECT_FALSE(loop.wait(&waiting));
    EXPECT_LT(now_ns(CLOCK_MONOTONIC) - start, 5'000'000'000);
    sender.join();
  }
  EXPECT_EQ(signals_taken.load(), 1);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  sigaction(SIGUSR2, &old, nullptr);
}

}  // namespace
