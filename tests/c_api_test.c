/* The C API from a C translation unit (C99 with GNU extensions, as `cc` compiles by
 * default): vclock.h must compile as C, and every function must link and work from C.
 * clocks_test.cc calls vclock_c_api_smoke() and reports the line of the first failed check. */
#include <errno.h>
#include <vclock/vclock.h>

int vclock_c_api_smoke(void);

/* Returns the line number of the failed check. */
#define CHECK(cond)    \
  do {                 \
    if (!(cond)) {     \
      return __LINE__; \
    }                  \
  } while (0)

static int valid_timespec(const struct timespec* ts) {
  return ts->tv_sec > 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L;
}

int vclock_c_api_smoke(void) {
  static const clockid_t page_clocks[] = {
      CLOCK_REALTIME, CLOCK_MONOTONIC,       CLOCK_MONOTONIC_RAW,    CLOCK_BOOTTIME,
      CLOCK_TAI,      CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE,
  };
  unsigned i;
  struct timespec ts;
  struct timespec res;
  struct timeval tv;
  int64_t ns;
  int64_t before;
  time_t t;
  time_t out;

  for (i = 0; i < sizeof page_clocks / sizeof page_clocks[0]; ++i) {
    const clockid_t clock = page_clocks[i];
    CHECK(vclock_gettime(clock, &ts) == 0);
    CHECK(valid_timespec(&ts));
    CHECK(vclock_gettime_relaxed(clock, &ts) == 0);
    CHECK(valid_timespec(&ts));
    CHECK(vclock_gettime_ns(clock) > 0);
    CHECK(vclock_gettime_ns_relaxed(clock) > 0);
    CHECK(vclock_getres(clock, &res) == 0);
    CHECK(res.tv_sec >= 0 && res.tv_nsec >= 0 && res.tv_nsec < 1000000000L);
    CHECK(res.tv_sec > 0 || res.tv_nsec > 0);
    CHECK(vclock_getres(clock, NULL) == 0);
  }

  /* A forwarded clock. */
  CHECK(vclock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0);
  CHECK(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
  CHECK(vclock_gettime_ns(CLOCK_THREAD_CPUTIME_ID) > 0);

  /* A bad clock: -1 and EINVAL from every form. */
  errno = 0;
  CHECK(vclock_gettime(12345, &ts) == -1 && errno == EINVAL);
  errno = 0;
  CHECK(vclock_gettime_relaxed(12345, &ts) == -1 && errno == EINVAL);
  errno = 0;
  CHECK(vclock_gettime_ns(12345) == -1 && errno == EINVAL);
  errno = 0;
  CHECK(vclock_gettime_ns_relaxed(12345) == -1 && errno == EINVAL);
  errno = 0;
  CHECK(vclock_getres(12345, &res) == -1 && errno == EINVAL);

  /* MONOTONIC does not go back, and the timespec and ns forms agree. */
  before = vclock_gettime_ns(CLOCK_MONOTONIC);
  CHECK(vclock_gettime(CLOCK_MONOTONIC, &ts) == 0);
  ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  CHECK(ns >= before);
  CHECK(vclock_gettime_ns(CLOCK_MONOTONIC) >= ns);

  /* gettimeofday and time: REALTIME in microseconds and seconds. */
  before = vclock_gettime_ns(CLOCK_REALTIME);
  CHECK(vclock_gettimeofday(&tv, NULL) == 0);
  CHECK(tv.tv_usec >= 0 && tv.tv_usec < 1000000);
  CHECK((int64_t)tv.tv_sec * 1000000 + tv.tv_usec >= before / 1000);
  CHECK(vclock_gettimeofday(NULL, NULL) == 0);
  out = 0;
  t = vclock_time(&out);
  CHECK(t == out);
  CHECK(t > 1500000000); /* after 2017 */
  CHECK(vclock_time(NULL) >= t);
  return 0;
}
