/* Timers under the shim, for tests/ns/run.sh: arms one, waits for it with
 * calls the shim leaves alone (read, sigwaitinfo, the raw nanosleep), and
 * says how long that took in host time (the raw system call) and in the
 * program's time (libc's clock_gettime: virtual in a namespace).
 *   timer_probe timerfd CLOCK rel|abs MS   a timerfd, MS of CLOCK's time
 *   timer_probe posix CLOCK rel|abs MS     a POSIX timer (SIGEV_SIGNAL)
 *   timer_probe interval MS COUNT         a MONOTONIC timerfd every MS ms,
 *                                         until COUNT expirations
 *   timer_probe frozen MS HOST_MS         a MONOTONIC timerfd of MS ms;
 *                                         after HOST_MS host ms, fired?
 *   timer_probe churn HOST_MS MS          re-arms a MONOTONIC timerfd (700 or
 *                                         900 ms, relative) as fast as it can
 *                                         for HOST_MS host ms (while the test
 *                                         changes the namespace: the shim's
 *                                         watcher re-arms it too); then arms
 *                                         MS ms and waits for it. Adds
 *                                         "arms N" to the line.
 * CLOCK: realtime, monotonic, boottime. One line of "name value" pairs:
 * host_ms, virtual_ms, left_ms (what *_gettime said right after arming),
 * interval_ms, fired, then the kernel's own view of the host timer the shim
 * armed (the raw *_gettime system call, which the shim does not see):
 * host_left_ns and host_interval_ns, and arm_ns, the host time from just
 * before arming to just after that call (the timer's deadline was computed
 * somewhere in it); before it, "armed" once the timer is armed (the churn
 * begins). Exit 2 on a failed call. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "probe_clocks.h"

static struct timespec timespec_of(int64_t ns) {
  struct timespec t = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  return t;
}

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "timer_probe: %s: %s\n", what, strerror(errno));
    exit(2);
  }
}

static clockid_t clock_named(const char* name) {
  if (strcmp(name, "realtime") == 0) return CLOCK_REALTIME;
  if (strcmp(name, "monotonic") == 0) return CLOCK_MONOTONIC;
  if (strcmp(name, "boottime") == 0) return CLOCK_BOOTTIME;
  fprintf(stderr, "timer_probe: unknown clock %s\n", name);
  exit(2);
}

static struct itimerspec arming(clockid_t c, int absolute, int64_t ms, int64_t interval_ms) {
  struct itimerspec want;
  const int64_t span = ms * 1000000;
  want.it_value = timespec_of(absolute ? program_ns(c) + span : span);
  want.it_interval = timespec_of(interval_ms * 1000000);
  return want;
}

/* "armed" on a line of its own, at once: the test times its changes from
 * here, not from the start of `vclock run` (slow on a loaded machine). */
static void armed(void) {
  fputs("armed\n", stdout);
  fflush(stdout);
}

/* The host timer as the kernel holds it: what the rate and the offsets
 * made of the program's arming, free of any wake-up's lateness. */
struct kernel_view {
  struct itimerspec left;
  int64_t arm_ns; /* host ns from before the arming to after the reading */
};

static struct kernel_view timerfd_kernel_view(int fd, int64_t host0) {
  struct kernel_view k;
  check(syscall(SYS_timerfd_gettime, fd, &k.left) == 0, "SYS_timerfd_gettime");
  k.arm_ns = host_ns(CLOCK_MONOTONIC) - host0;
  return k;
}

/* glibc (2.34 and later) hands out a SIGEV_SIGNAL timer's kernel id as its
 * timer_t; SIGEV_THREAD timers (the top bit set) are not used here. */
static struct kernel_view posix_kernel_view(timer_t id, int64_t host0) {
  struct kernel_view k;
  check(syscall(SYS_timer_gettime, (int)(intptr_t)id, &k.left) == 0, "SYS_timer_gettime");
  k.arm_ns = host_ns(CLOCK_MONOTONIC) - host0;
  return k;
}

static void report(int64_t host0, int64_t virtual0, clockid_t c, const struct itimerspec* left,
                   int fired, const struct kernel_view* k) {
  printf(
      "host_ms %lld virtual_ms %lld left_ms %lld interval_ms %lld fired %d host_left_ns %lld "
      "host_interval_ns %lld arm_ns %lld\n",
      (long long)((host_ns(CLOCK_MONOTONIC) - host0) / 1000000),
      (long long)((program_ns(c) - virtual0) / 1000000),
      (long long)(timespec_ns(&left->it_value) / 1000000),
      (long long)(timespec_ns(&left->it_interval) / 1000000), fired,
      (long long)timespec_ns(&k->left.it_value), (long long)timespec_ns(&k->left.it_interval),
      (long long)k->arm_ns);
}

int main(int argc, char** argv) {
  if (argc == 5 && (strcmp(argv[1], "timerfd") == 0 || strcmp(argv[1], "posix") == 0)) {
    const clockid_t c = clock_named(argv[2]);
    const int absolute = strcmp(argv[3], "abs") == 0;
    const int64_t ms = atoll(argv[4]);
    struct itimerspec left;
    if (strcmp(argv[1], "timerfd") == 0) {
      const int fd = timerfd_create(c, 0);
      check(fd >= 0, "timerfd_create");
      const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(c);
      const struct itimerspec want = arming(c, absolute, ms, 0);
      check(timerfd_settime(fd, absolute ? TFD_TIMER_ABSTIME : 0, &want, NULL) == 0,
            "timerfd_settime");
      check(timerfd_gettime(fd, &left) == 0, "timerfd_gettime");
      const struct kernel_view k = timerfd_kernel_view(fd, host0);
      armed();
      uint64_t expirations = 0;
      check(read(fd, &expirations, sizeof(expirations)) == sizeof(expirations), "read");
      report(host0, virtual0, c, &left, (int)expirations, &k);
      return 0;
    }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGRTMIN);
    check(sigprocmask(SIG_BLOCK, &signals, NULL) == 0, "sigprocmask");
    struct sigevent event;
    memset(&event, 0, sizeof(event));
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = SIGRTMIN;
    timer_t id;
    check(timer_create(c, &event, &id) == 0, "timer_create");
    const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(c);
    const struct itimerspec want = arming(c, absolute, ms, 0);
    check(timer_settime(id, absolute ? TIMER_ABSTIME : 0, &want, NULL) == 0, "timer_settime");
    check(timer_gettime(id, &left) == 0, "timer_gettime");
    const struct kernel_view k = posix_kernel_view(id, host0);
    armed();
    siginfo_t info;
    check(sigwaitinfo(&signals, &info) == SIGRTMIN, "sigwaitinfo");
    report(host0, virtual0, c, &left, 1, &k);
    check(timer_delete(id) == 0, "timer_delete");
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "interval") == 0) {
    const int64_t ms = atoll(argv[2]);
    const uint64_t count = (uint64_t)atoll(argv[3]);
    const int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    check(fd >= 0, "timerfd_create");
    const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(CLOCK_MONOTONIC);
    const struct itimerspec want = arming(CLOCK_MONOTONIC, 0, ms, ms);
    check(timerfd_settime(fd, 0, &want, NULL) == 0, "timerfd_settime");
    struct itimerspec left;
    check(timerfd_gettime(fd, &left) == 0, "timerfd_gettime");
    const struct kernel_view k = timerfd_kernel_view(fd, host0);
    armed();
    uint64_t total = 0;
    while (total < count) {
      uint64_t expirations = 0;
      check(read(fd, &expirations, sizeof(expirations)) == sizeof(expirations), "read");
      total += expirations;
    }
    report(host0, virtual0, CLOCK_MONOTONIC, &left, (int)total, &k);
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "frozen") == 0) {
    const int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    check(fd >= 0, "timerfd_create");
    const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(CLOCK_MONOTONIC);
    const struct itimerspec want = arming(CLOCK_MONOTONIC, 0, atoll(argv[2]), 0);
    check(timerfd_settime(fd, 0, &want, NULL) == 0, "timerfd_settime");
    struct itimerspec left;
    check(timerfd_gettime(fd, &left) == 0, "timerfd_gettime");
    const struct kernel_view k = timerfd_kernel_view(fd, host0);
    const struct timespec wait = timespec_of(atoll(argv[3]) * 1000000);
    syscall(SYS_nanosleep, &wait, NULL);
    uint64_t expirations = 0;
    const int fired = read(fd, &expirations, sizeof(expirations)) == sizeof(expirations);
    report(host0, virtual0, CLOCK_MONOTONIC, &left, fired, &k);
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "churn") == 0) {
    const int64_t churn_ns = atoll(argv[2]) * 1000000;
    const int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    check(fd >= 0, "timerfd_create");
    long arms = 0;
    armed(); /* the churn starts */
    for (const int64_t start = host_ns(CLOCK_MONOTONIC);
         host_ns(CLOCK_MONOTONIC) - start < churn_ns; ++arms) {
      const int64_t ms = arms % 2 ? 700 : 900;
      const struct itimerspec want = arming(CLOCK_MONOTONIC, 0, ms, 0);
      check(timerfd_settime(fd, 0, &want, NULL) == 0, "timerfd_settime");
    }
    const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(CLOCK_MONOTONIC);
    const struct itimerspec want = arming(CLOCK_MONOTONIC, 0, atoll(argv[3]), 0);
    check(timerfd_settime(fd, 0, &want, NULL) == 0, "timerfd_settime");
    struct itimerspec left;
    check(timerfd_gettime(fd, &left) == 0, "timerfd_gettime");
    const struct kernel_view k = timerfd_kernel_view(fd, host0);
    uint64_t expirations = 0;
    check(read(fd, &expirations, sizeof(expirations)) == sizeof(expirations), "read");
    printf("arms %ld ", arms);
    report(host0, virtual0, CLOCK_MONOTONIC, &left, (int)expirations, &k);
    return 0;
  }
  fprintf(stderr,
          "usage: timer_probe timerfd|posix CLOCK rel|abs MS | interval MS COUNT | "
          "frozen MS HOST_MS | churn HOST_MS MS\n");
  return 2;
}
