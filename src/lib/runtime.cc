// The page, the timekeeper thread and their life cycle.
//
// Why a thread, and not readers refreshing the page themselves: the coarse
// clocks read no counter, so only a periodic writer keeps them within one
// tick of the truth; readers stay pure loads (nothing to deadlock on in a
// signal handler, no try-lock on the fast path); and the kernel samples
// (several vDSO calls per tick) never land on a caller's latency. The cost
// is one wake-up per tick (4 ms) in a thread nobody has to start: it is
// created on the first call and re-created in a child after fork().
#include "runtime.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>

#include "kernel_clock.h"
#include "trust.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/seqlock.h"

namespace vclock::detail {

alignas(4096) page the_page{};

namespace {

class system_sources final : public time_sources {
 public:
  std::uint64_t read_counter() override { return arch::read_counter_after_stores(); }
  std::int64_t read_kernel(clockid_t clock) override { return kernel::now_ns(clock); }
};

enum : int { not_started = 0, starting = 1, running = 2, stopped = 3 };

std::atomic<int> run_state{not_started};
pthread_mutex_t timekeeper_lock = PTHREAD_MUTEX_INITIALIZER;
bool created = false;   // guarded by timekeeper_lock
trust_verdict verdict;  // written once, before run_state becomes running/stopped

// Static storage, never destroyed: the thread may still tick while the
// process runs its exit handlers.
alignas(timekeeper) unsigned char timekeeper_storage[sizeof(timekeeper)];
alignas(system_sources) unsigned char sources_storage[sizeof(system_sources)];

timekeeper& the_timekeeper() noexcept {
  return *std::launder(reinterpret_cast<timekeeper*>(timekeeper_storage));
}

timekeeper_config config_from_environment() noexcept {
  timekeeper_config config;
  if (const char* v = std::getenv("VCLOCK_TICK_US")) {
    const long us = std::strtol(v, nullptr, 10);
    if (us >= 100 && us <= 1'000'000) {
      config.tick_ns = us * 1000;
    }
  }
  return config;
}

// A timerfd that the kernel cancels whenever REALTIME is set or the system
// resumes: how systemd learns of steps. -1 if unavailable.
int open_clock_was_set_fd() noexcept {
  const int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) return -1;
  itimerspec far{};
  far.it_value.tv_sec = std::int64_t{1} << 40;  // never expires
  if (timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &far, nullptr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Returns true if the clock was set since the last call (and re-arms).
bool clock_was_set(int& fd) noexcept {
  std::uint64_t expirations = 0;
  if (read(fd, &expirations, sizeof(expirations)) < 0 && errno == ECANCELED) {
    close(fd);
    fd = open_clock_was_set_fd();
    return true;
  }
  return false;
}

void* thread_main(void*) {
  timekeeper& tk = the_timekeeper();
  int fd = open_clock_was_set_fd();
  const std::int64_t tick_ns = tk.config().tick_ns;
  std::int64_t next = kernel::now_ns(CLOCK_MONOTONIC);
  for (;;) {
    pthread_mutex_lock(&timekeeper_lock);
    if (fd >= 0 && clock_was_set(fd)) {
      tk.clock_was_set();  // ticks at once
    } else {
      tk.tick();
    }
    pthread_mutex_unlock(&timekeeper_lock);

    const std::int64_t now = kernel::now_ns(CLOCK_MONOTONIC);
    next += tick_ns;
    if (next < now) next = now + tick_ns;  // overslept: don't try to catch up
    const std::int64_t wait = next - now;
    const timespec timeout{wait / 1'000'000'000, wait % 1'000'000'000};
    pollfd pfd{fd, POLLIN, 0};
    ppoll(&pfd, fd >= 0 ? 1 : 0, &timeout, nullptr);
  }
  return nullptr;
}

void before_fork() { pthread_mutex_lock(&timekeeper_lock); }
void after_fork_in_parent() { pthread_mutex_unlock(&timekeeper_lock); }
void after_fork_in_child() {
  // Only this thread exists now; the timekeeper thread did not survive.
  // Its state is intact (fork happened between ticks, under the lock), so
  // turn the page off with its floor and let the next call restart it.
  pthread_mutex_unlock(&timekeeper_lock);
  if (run_state.load(std::memory_order_relaxed) == running) {
    the_timekeeper().pause_after_fork();
    run_state.store(not_started, std::memory_order_release);
  }
}

bool start_thread() noexcept {
  // The thread blocks every signal, so no handler ever runs on the writer
  // in the middle of an update.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  const int r = pthread_create(&thread, &attr, thread_main, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (r == 0) {
    pthread_setname_np(thread, "vclock-tk");
  }
  return r == 0;
}

void start() noexcept {
  pthread_mutex_lock(&timekeeper_lock);
  if (!created) {
    verdict = decide_trust();
    auto* sources = new (sources_storage) system_sources();
    auto* tk = new (timekeeper_storage) timekeeper(the_page, *sources, config_from_environment());
    store_relaxed(the_page.counter_trusted, verdict.reason == fallback_reason::none ? 1u : 0u);
    tk->start();
    if (verdict.reason != fallback_reason::none) {
      tk->disable(verdict.reason);
    }
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    created = true;
  }
  int result = stopped;
  if (the_timekeeper().reason() == fallback_reason::disabled ||
      verdict.reason != fallback_reason::none) {
    result = stopped;
  } else if (start_thread()) {
    result = running;
  } else {
    the_timekeeper().disable(fallback_reason::timekeeper_failed);
  }
  pthread_mutex_unlock(&timekeeper_lock);
  run_state.store(result, std::memory_order_release);
}

}  // namespace

void ensure_started() noexcept {
  int state = run_state.load(std::memory_order_acquire);
  if (state != not_started) [[likely]] {
    return;
  }
  if (run_state.compare_exchange_strong(state, starting, std::memory_order_acq_rel)) {
    start();
  }
}

timekeeper* lock_timekeeper() noexcept {
  pthread_mutex_lock(&timekeeper_lock);
  if (!created) {
    pthread_mutex_unlock(&timekeeper_lock);
    return nullptr;
  }
  return &the_timekeeper();
}

void unlock_timekeeper() noexcept { pthread_mutex_unlock(&timekeeper_lock); }

const char* trust_note() noexcept {
  return run_state.load(std::memory_order_acquire) >= running ? verdict.note.c_str() : "";
}

}  // namespace vclock::detail
