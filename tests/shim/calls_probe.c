// One interposed libc call at a time, for run.sh: `calls_probe FUNC` calls FUNC for ~300 ms,
// long enough for an in-process timekeeper to calibrate and serve, so that the shim's stats
// show FUNC itself served. The probe's own deadline comes from the raw system call, which no
// shim sees: the stats count FUNC's calls and nothing else. Also built -static and with ASan
// by run.sh, and run setuid: hence `secure`, which says whether the loader ignored LD_PRELOAD.
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timeb.h>
#include <time.h>
#include <unistd.h>

#if !defined(CALLS_PROBE_STATIC) && !defined(CALLS_PROBE_NO_OLD_VERSION)
// Programs linked before glibc 2.17 took clock_gettime from librt and still reference
// clock_gettime@GLIBC_2.2.5; the shim must serve that version too, not only the default one.
// A static link has no symbol versions, hence the guard.
int clock_gettime_2_2_5(clockid_t id, struct timespec* ts);
__asm__(".symver clock_gettime_2_2_5, clock_gettime@GLIBC_2.2.5");
#endif

static const int64_t ns_per_s = 1000000000;

static int64_t timespec_ns(struct timespec ts) { return ts.tv_sec * ns_per_s + ts.tv_nsec; }

static int64_t raw_monotonic_ns(void) {
  struct timespec ts = {0, 0};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return timespec_ns(ts);
}

// ftime() is deprecated, and that is why old programs are the ones that still call it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int64_t ftime_ns(void) {
  struct timeb tb;
  ftime(&tb);
  return tb.time * ns_per_s + tb.millitm * (int64_t)1000000;
}
#pragma GCC diagnostic pop

// Every clock the shim serves, each read through `gettime` between two raw system calls
// (which no shim sees): a reading outside [before - slack, after + slack] is a clock answered
// from another clock's line (MONOTONIC from REALTIME's is 56 years off). Slack: vclock may
// lead or lag the kernel by its error (tens of ns; 100 us is ample, as run.sh's bracket);
// a coarse clock is a tick's snapshot, the kernel's and vclock's taken at different ticks, so
// either may lead by up to a tick: 10 ms (as run.sh). Returns the calls made, or -1 with the
// failure printed.
typedef int (*gettime_fn)(clockid_t, struct timespec*);
static int check_every_clock(const char* func, gettime_fn gettime) {
  static const struct {
    clockid_t id;
    const char* name;
    int64_t slack_ns;
  } clocks[] = {{CLOCK_REALTIME, "REALTIME", 100000},
                {CLOCK_MONOTONIC, "MONOTONIC", 100000},
                {CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW", 100000},
                {CLOCK_BOOTTIME, "BOOTTIME", 100000},
                {CLOCK_TAI, "TAI", 100000},
                {CLOCK_REALTIME_COARSE, "REALTIME_COARSE", 10000000},
                {CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE", 10000000}};
  for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); ++i) {
    struct timespec k1 = {0, 0}, v = {0, 0}, k2 = {0, 0};
    syscall(SYS_clock_gettime, clocks[i].id, &k1);
    gettime(clocks[i].id, &v);
    syscall(SYS_clock_gettime, clocks[i].id, &k2);
    if (timespec_ns(v) < timespec_ns(k1) - clocks[i].slack_ns ||
        timespec_ns(v) > timespec_ns(k2) + clocks[i].slack_ns) {
      fprintf(stderr,
              "FAIL: %s(CLOCK_%s) %" PRId64 " outside the kernel's [%" PRId64 ", %" PRId64 "]\n",
              func, clocks[i].name, timespec_ns(v), timespec_ns(k1), timespec_ns(k2));
      return -1;
    }
  }
  return (int)(sizeof(clocks) / sizeof(clocks[0]));
}

// One round of `func`: its REALTIME reading in *real and, when the call has one, MONOTONIC in
// *mono (else -1); clock_gettime checks every clock against the kernel too. Returns the
// number of interposed calls made, 0 for an unknown name, -1 when a clock failed its check.
static int read_once(const char* func, int64_t* real, int64_t* mono) {
  struct timespec ts = {0, 0};
  *mono = -1;
  if (strcmp(func, "clock_gettime") == 0) {
    const int checked = check_every_clock(func, clock_gettime);
    if (checked < 0) return -1;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *mono = timespec_ns(ts);
    clock_gettime(CLOCK_REALTIME, &ts);
    *real = timespec_ns(ts);
    return 2 + checked;
  }
#if !defined(CALLS_PROBE_STATIC) && !defined(CALLS_PROBE_NO_OLD_VERSION)
  if (strcmp(func, "clock_gettime@GLIBC_2.2.5") == 0) {
    const int checked = check_every_clock(func, clock_gettime_2_2_5);
    if (checked < 0) return -1;
    clock_gettime_2_2_5(CLOCK_MONOTONIC, &ts);
    *mono = timespec_ns(ts);
    clock_gettime_2_2_5(CLOCK_REALTIME, &ts);
    *real = timespec_ns(ts);
    return 2 + checked;
  }
#endif
  if (strcmp(func, "time") == 0) {
    *real = time(NULL) * ns_per_s;
    return 1;
  }
  if (strcmp(func, "gettimeofday") == 0) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    *real = tv.tv_sec * ns_per_s + tv.tv_usec * 1000;
    return 1;
  }
  if (strcmp(func, "timespec_get") == 0) {
    timespec_get(&ts, TIME_UTC);
    *real = timespec_ns(ts);
    return 1;
  }
  if (strcmp(func, "ftime") == 0) {
    *real = ftime_ns();
    return 1;
  }
  return 0;
}

// How much each call truncates REALTIME: run.sh widens the lower bracket by this much.
static int64_t grain_ns(const char* func) {
  if (strcmp(func, "time") == 0) return ns_per_s;
  if (strcmp(func, "gettimeofday") == 0) return 1000;
  if (strcmp(func, "ftime") == 0) return 1000000;
  return 1;
}

int main(int argc, char** argv) {
  const char* func = argc > 1 ? argv[1] : "clock_gettime";
  int64_t real = 0, mono = 0, last_real = INT64_MIN, last_mono = INT64_MIN;
  long calls = 0;
  const int64_t end = raw_monotonic_ns() + 300000000;
  do {
    const int n = read_once(func, &real, &mono);
    if (n < 0) return 1;
    if (n == 0) {
      fprintf(stderr,
              "usage: calls_probe [clock_gettime|clock_gettime@GLIBC_2.2.5|time|"
              "gettimeofday|timespec_get|ftime]\n");
      return 2;
    }
    calls += n;
    if (real < last_real || mono < last_mono) {
      fprintf(stderr,
              "FAIL: %s went back: realtime %" PRId64 " after %" PRId64 ", monotonic %" PRId64
              " after %" PRId64 "\n",
              func, real, last_real, mono, last_mono);
      return 1;
    }
    last_real = real;
    last_mono = mono;
  } while (raw_monotonic_ns() < end);
  printf("pid %ld\nsecure %lu\ncalls %ld\nrealtime %s %" PRId64 " %" PRId64 "\n", (long)getpid(),
         getauxval(AT_SECURE), calls, func, real, grain_ns(func));
  return 0;
}
