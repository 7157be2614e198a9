/* Timers under the shim, for tests/ns/run.sh: arms one, waits for it with
 * calls the shim leaves alone (read, sigwaitinfo, the raw nanosleep and
 * rt_sigtimedwait), and says how long that took in host time (the raw
 * system call) and in the program's time (libc's clock_gettime: virtual in
 * a namespace).
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
 * begins). Exit 2 on a failed call.
 * With TIMER_PROBE_CHANGES=1 (timerfd, posix, interval, churn's last
 * timer), the wait polls every ms instead of blocking, and follows the
 * shim's watcher thread ("vclock-timers"): after each of its re-arming
 * runs (it woke, and is back in its futex wait) it reads the kernel's
 * timer again, and 20 ms later (past the change's switch point) a pair of
 * the host's and the program's time on the deadline's clock. The line then
 * gains deadline_lo/deadline_hi (the virtual deadline the shim recorded
 * lies within: the program's time before and after arming, plus the
 * span; an absolute deadline exactly), changes N, and per change I:
 * change_I, then ep (the watcher's run: its CPU time plus its time
 * runnable, from /proc's schedstat), nv (its voluntary switches in it: 1
 * for one uninterrupted run), left (the kernel's time left), iv (its
 * interval), dlo/dhi (the kernel's deadline less the pair's host time lies
 * within) and v (the pair's program time). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* --- following the shim's watcher (TIMER_PROBE_CHANGES) ------------------- */

static int following(void) {
  const char* v = getenv("TIMER_PROBE_CHANGES");
  return v != NULL && strcmp(v, "1") == 0;
}

static int read_small(const char* path, char* text, size_t size) {
  const int f = open(path, O_RDONLY | O_CLOEXEC);
  if (f < 0) return 0;
  const ssize_t n = read(f, text, size - 1);
  close(f);
  if (n <= 0) return 0;
  text[n] = '\0';
  return 1;
}

static char watcher_dir[64];

static void find_watcher(void) {
  for (int tries = 0; tries < 2000 && watcher_dir[0] == '\0'; ++tries) {
    DIR* d = opendir("/proc/self/task");
    check(d != NULL, "opendir /proc/self/task");
    for (struct dirent* e; (e = readdir(d)) != NULL;) {
      const long tid = atol(e->d_name);
      char path[96], comm[64];
      snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", tid);
      if (tid > 0 && read_small(path, comm, sizeof(comm)) && strcmp(comm, "vclock-timers\n") == 0) {
        snprintf(watcher_dir, sizeof(watcher_dir), "/proc/self/task/%ld", tid);
      }
    }
    closedir(d);
    const struct timespec ms = {0, 1000000};
    if (watcher_dir[0] == '\0') syscall(SYS_nanosleep, &ms, NULL);
  }
  if (watcher_dir[0] == '\0') {
    fprintf(stderr, "timer_probe: no vclock-timers thread\n");
    exit(2);
  }
}

/* The watcher as /proc shows it: blocked in futex, its voluntary switches,
 * its CPU time plus its time runnable but not running (ns). */
struct watcher_state {
  int in_futex;
  long long switches, runnable_ns;
};

static struct watcher_state watcher_now(void) {
  struct watcher_state w = {0, -1, -1};
  char path[96], text[2048];
  snprintf(path, sizeof(path), "%s/syscall", watcher_dir);
  if (read_small(path, text, sizeof(text))) w.in_futex = atol(text) == SYS_futex;
  snprintf(path, sizeof(path), "%s/status", watcher_dir);
  const char* at =
      read_small(path, text, sizeof(text)) ? strstr(text, "\nvoluntary_ctxt_switches:") : NULL;
  if (at != NULL) w.switches = atoll(at + strlen("\nvoluntary_ctxt_switches:"));
  snprintf(path, sizeof(path), "%s/schedstat", watcher_dir);
  long long run = 0, delay = 0;
  if (read_small(path, text, sizeof(text)) && sscanf(text, "%lld %lld", &run, &delay) == 2) {
    w.runnable_ns = run + delay;
  }
  check(w.switches >= 0 && w.runnable_ns >= 0, "reading the watcher's /proc files");
  return w;
}

/* Asleep in its futex wait: the state a run is measured from. */
static struct watcher_state watcher_asleep(void) {
  for (;;) {
    const struct watcher_state w = watcher_now();
    if (w.in_futex) return w;
    const struct timespec ms = {0, 1000000};
    syscall(SYS_nanosleep, &ms, NULL);
  }
}

enum { max_changes = 16 };
struct change_view {
  long long ep, nv, left, iv, dlo, dhi, v;
};
static struct change_view changes[max_changes];
static int change_count;
static struct watcher_state watcher_base;
static clockid_t deadline_clock;
static int64_t deadline_lo, deadline_hi;

static int64_t raw_gettime(int is_posix, int fd, timer_t id, struct itimerspec* t) {
  if (is_posix) return syscall(SYS_timer_gettime, (int)(intptr_t)id, t);
  return syscall(SYS_timerfd_gettime, fd, t);
}

/* The clock whose virtual time the shim keeps the deadline on
 * (virtual_timers.cc: relative timers count MONOTONIC, or BOOTTIME), and
 * the host timer's own clock base: the kernel runs a relative REALTIME
 * timer on MONOTONIC too. */
static clockid_t clock_of_deadline(clockid_t c, int absolute) {
  if (absolute) return c;
  return c == CLOCK_BOOTTIME ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
}

/* Before arming: the watcher asleep, the program's time on the deadline's
 * clock. After: the deadline's bracket. */
static void follow_before(clockid_t c, int absolute) {
  if (!following()) return;
  find_watcher();
  watcher_base = watcher_asleep();
  deadline_clock = clock_of_deadline(c, absolute);
  deadline_lo = program_ns(deadline_clock);
}

static void follow_after(int absolute, const struct itimerspec* want) {
  if (!following()) return;
  const int64_t span = timespec_ns(&want->it_value);
  if (absolute) {
    deadline_lo = deadline_hi = span;
  } else {
    deadline_hi = program_ns(deadline_clock) + span;
    deadline_lo += span;
  }
}

/* A re-arming run of the watcher that has ended: the kernel's timer now,
 * then (20 ms on) the pair. */
static void follow_changes(int is_posix, int fd, timer_t id) {
  const struct watcher_state w = watcher_now();
  if (!w.in_futex || w.switches == watcher_base.switches) return;
  struct change_view c;
  c.ep = w.runnable_ns - watcher_base.runnable_ns;
  c.nv = w.switches - watcher_base.switches;
  watcher_base = w;
  struct itimerspec k;
  const int64_t k0 = host_ns(deadline_clock);
  check(raw_gettime(is_posix, fd, id, &k) == 0, "raw *_gettime");
  const int64_t k1 = host_ns(deadline_clock);
  c.left = timespec_ns(&k.it_value);
  c.iv = timespec_ns(&k.it_interval);
  const struct timespec wait = {0, 20000000};
  syscall(SYS_nanosleep, &wait, NULL);
  const int64_t p0 = host_ns(deadline_clock), v = program_ns(deadline_clock);
  const int64_t p1 = host_ns(deadline_clock);
  c.dlo = k0 + c.left - p1;
  c.dhi = k1 + c.left - p0;
  c.v = v;
  if (change_count < max_changes) changes[change_count++] = c;
}

/* After the timer fired: a re-arming run that ended unseen (the probe
 * starved while the watcher re-armed and the timer fired) is recorded all
 * the same, its kernel view that of a fired timer, so that the runs seen
 * stay in step with the changes made. */
static void follow_last(int is_posix, int fd, timer_t id) {
  watcher_asleep();
  follow_changes(is_posix, fd, id);
}

/* Waits for `count` expirations (a timerfd's) or the signal (a POSIX
 * timer's), polling every ms while following the watcher. */
static uint64_t wait_timer(int is_posix, int fd, timer_t id, const sigset_t* signals,
                           uint64_t count) {
  if (!following()) {
    if (is_posix) {
      siginfo_t info;
      check(sigwaitinfo(signals, &info) == SIGRTMIN, "sigwaitinfo");
      return 1;
    }
    uint64_t total = 0;
    while (total < count) {
      uint64_t expirations = 0;
      check(read(fd, &expirations, sizeof(expirations)) == sizeof(expirations), "read");
      total += expirations;
    }
    return total;
  }
  if (!is_posix) check(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0, "fcntl");
  uint64_t total = 0;
  for (;;) {
    follow_changes(is_posix, fd, id);
    if (is_posix) {
      const struct timespec none = {0, 0};
      siginfo_t info;
      if (syscall(SYS_rt_sigtimedwait, signals, &info, &none, 8) == SIGRTMIN) {
        follow_last(is_posix, fd, id);
        return 1;
      }
    } else {
      uint64_t expirations = 0;
      if (read(fd, &expirations, sizeof(expirations)) == sizeof(expirations)) {
        total += expirations;
      }
      if (total >= count) {
        follow_last(is_posix, fd, id);
        return total;
      }
    }
    const struct timespec ms = {0, 1000000};
    syscall(SYS_nanosleep, &ms, NULL);
  }
}

static void print_changes(void) {
  if (!following()) return;
  printf("deadline_lo %lld deadline_hi %lld changes %d ", (long long)deadline_lo,
         (long long)deadline_hi, change_count);
  for (int i = 0; i < change_count; ++i) {
    const struct change_view* c = &changes[i];
    printf("change_%d ep %lld nv %lld left %lld iv %lld dlo %lld dhi %lld v %lld ", i + 1, c->ep,
           c->nv, c->left, c->iv, c->dlo, c->dhi, c->v);
  }
}

static void report(int64_t host0, int64_t virtual0, clockid_t c, const struct itimerspec* left,
                   int fired, const struct kernel_view* k) {
  print_changes();
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
      follow_before(c, absolute);
      const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(c);
      const struct itimerspec want = arming(c, absolute, ms, 0);
      check(timerfd_settime(fd, absolute ? TFD_TIMER_ABSTIME : 0, &want, NULL) == 0,
            "timerfd_settime");
      check(timerfd_gettime(fd, &left) == 0, "timerfd_gettime");
      const struct kernel_view k = timerfd_kernel_view(fd, host0);
      follow_after(absolute, &want);
      armed();
      const uint64_t expirations = wait_timer(0, fd, NULL, NULL, 1);
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
    follow_before(c, absolute);
    const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(c);
    const struct itimerspec want = arming(c, absolute, ms, 0);
    check(timer_settime(id, absolute ? TIMER_ABSTIME : 0, &want, NULL) == 0, "timer_settime");
    check(timer_gettime(id, &left) == 0, "timer_gettime");
    const struct kernel_view k = posix_kernel_view(id, host0);
    follow_after(absolute, &want);
    armed();
    wait_timer(1, -1, id, &signals, 1);
    report(host0, virtual0, c, &left, 1, &k);
    check(timer_delete(id) == 0, "timer_delete");
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "interval") == 0) {
    const int64_t ms = atoll(argv[2]);
    const uint64_t count = (uint64_t)atoll(argv[3]);
    const int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    check(fd >= 0, "timerfd_create");
    follow_before(CLOCK_MONOTONIC, 0);
    const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(CLOCK_MONOTONIC);
    const struct itimerspec want = arming(CLOCK_MONOTONIC, 0, ms, ms);
    check(timerfd_settime(fd, 0, &want, NULL) == 0, "timerfd_settime");
    struct itimerspec left;
    check(timerfd_gettime(fd, &left) == 0, "timerfd_gettime");
    const struct kernel_view k = timerfd_kernel_view(fd, host0);
    follow_after(0, &want);
    armed();
    const uint64_t total = wait_timer(0, fd, NULL, NULL, count);
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
    follow_before(CLOCK_MONOTONIC, 0);
    const int64_t host0 = host_ns(CLOCK_MONOTONIC), virtual0 = program_ns(CLOCK_MONOTONIC);
    const struct itimerspec want = arming(CLOCK_MONOTONIC, 0, atoll(argv[3]), 0);
    check(timerfd_settime(fd, 0, &want, NULL) == 0, "timerfd_settime");
    struct itimerspec left;
    check(timerfd_gettime(fd, &left) == 0, "timerfd_gettime");
    const struct kernel_view k = timerfd_kernel_view(fd, host0);
    follow_after(0, &want);
    const uint64_t expirations = wait_timer(0, fd, NULL, NULL, 1);
    printf("arms %ld ", arms);
    report(host0, virtual0, CLOCK_MONOTONIC, &left, (int)expirations, &k);
    return 0;
  }
  fprintf(stderr,
          "usage: timer_probe timerfd|posix CLOCK rel|abs MS | interval MS COUNT | "
          "frozen MS HOST_MS | churn HOST_MS MS\n");
  return 2;
}
