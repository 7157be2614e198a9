// clock_gettime from a signal handler while the interrupted thread is inside clock_gettime
// too: SIGALRM every 100 us (10 kHz) for 1 s. A shim that takes a lock, allocates or
// initialises lazily on its path would deadlock here (run.sh's watchdog ends it); one that
// answers from two states at once would go back. As fork_signal_test.cc's on_signal: the
// handler loads the main thread's last reading before taking its own, which must not be less.
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Atomic int64_t main_last, handler_last;
static _Atomic long handler_calls;
static _Atomic int64_t went_back_by;  // the first backward step seen by a handler, in ns

static int64_t monotonic_ns(void) {
  struct timespec ts = {0, 0};
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return -1;
  return ts.tv_sec * (int64_t)1000000000 + ts.tv_nsec;
}

static void on_alarm(int signo) {
  (void)signo;
  const int saved_errno = errno;
  const int64_t main_before = atomic_load_explicit(&main_last, memory_order_relaxed);
  const int64_t handler_before = atomic_load_explicit(&handler_last, memory_order_relaxed);
  const int64_t v = monotonic_ns();
  const int64_t bound = main_before > handler_before ? main_before : handler_before;
  if (v < bound && atomic_load_explicit(&went_back_by, memory_order_relaxed) == 0) {
    atomic_store_explicit(&went_back_by, bound - v, memory_order_relaxed);
  }
  atomic_store_explicit(&handler_last, v, memory_order_relaxed);
  atomic_fetch_add_explicit(&handler_calls, 1, memory_order_relaxed);
  errno = saved_errno;
}

int main(void) {
  struct sigaction sa;
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  const struct itimerval every_100us = {{0, 100}, {0, 100}};
  if (sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &every_100us, NULL) != 0) {
    perror("FAIL: arming SIGALRM");
    return 1;
  }
  // 1 s, and on (up to 10 s more) until 1000 handlers ran: a loaded machine may deliver few.
  const int64_t start = monotonic_ns();
  long main_calls = 0;
  int64_t last = 0;
  for (int64_t now = start; now < start + 1000000000 ||
                            (atomic_load(&handler_calls) < 1000 && now < start + 11000000000);) {
    const int64_t handler_before = atomic_load_explicit(&handler_last, memory_order_relaxed);
    now = monotonic_ns();
    ++main_calls;
    if (now < last || now < handler_before) {
      fprintf(stderr,
              "FAIL: main thread went back: %" PRId64 " after %" PRId64 " (own) and %" PRId64
              " (handler)\n",
              now, last, handler_before);
      return 1;
    }
    last = now;
    atomic_store_explicit(&main_last, now, memory_order_relaxed);
  }
  const struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  if (atomic_load(&went_back_by) != 0 || atomic_load(&handler_calls) < 1000) {
    fprintf(stderr, "FAIL: handler went back by %" PRId64 " ns; %ld handler calls\n",
            atomic_load(&went_back_by), atomic_load(&handler_calls));
    return 1;
  }
  struct timespec ts = {0, 0};
  clock_gettime(CLOCK_REALTIME, &ts);
  printf("pid %ld\nmain_calls %ld\nhandler_calls %ld\nrealtime clock_gettime %" PRId64 " 1\n",
         (long)getpid(), main_calls, atomic_load(&handler_calls),
         ts.tv_sec * (int64_t)1000000000 + ts.tv_nsec);
  return 0;
}
