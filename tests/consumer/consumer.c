/* Consumer smoke test: an installed <vclock/vclock.h> from C. run.sh builds it against the
 * shared library with nothing but `cc consumer.c -lvclock` (API.md: no other flags), with
 * `pkg-config --libs vclock`, and against libvclock.a with `pkg-config --static --libs vclock`
 * (also fully -static); tests/consumer/ builds it with vclock::vclock_static.
 *
 * It runs for about 100 ms: through the first call and into calibration (the counter takes
 * over later, once its rate is known to 0.5 ppm, about 0.5 s on a VM), and checks that
 * MONOTONIC never goes back and that REALTIME agrees with time(). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include <vclock/vclock.h>

#define NS_PER_S 1000000000LL

int main(void) {
  struct timespec ts;
  if (vclock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
    perror("consumer_c: vclock_gettime");
    return 1;
  }
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= NS_PER_S) {
    fprintf(stderr, "consumer_c: bad timespec\n");
    return 1;
  }

  int64_t prev = vclock_gettime_ns(CLOCK_MONOTONIC);
  const int64_t end = prev + 100 * 1000000LL;
  const struct timespec pause = {0, 1000000L}; /* 1 ms */
  for (;;) {
    const int64_t now = vclock_gettime_ns(CLOCK_MONOTONIC);
    if (now < prev) {
      fprintf(stderr, "consumer_c: MONOTONIC went back: %lld < %lld\n", (long long)now,
              (long long)prev);
      return 1;
    }
    prev = now;
    if (now >= end) break;
    nanosleep(&pause, NULL);
  }

  const time_t before = time(NULL);
  const int64_t real = vclock_gettime_ns(CLOCK_REALTIME);
  const time_t after = time(NULL);
  /* within a second of time(): time() truncates, so the reading lies in [before, after + 1). */
  if (real < ((int64_t)before - 1) * NS_PER_S || real >= ((int64_t)after + 2) * NS_PER_S) {
    fprintf(stderr, "consumer_c: REALTIME %lld ns is not within a second of time() = %lld s\n",
            (long long)real, (long long)before);
    return 1;
  }
  printf("consumer_c: ok (MONOTONIC %lld.%09ld, REALTIME %lld ns, time() %lld)\n",
         (long long)ts.tv_sec, ts.tv_nsec, (long long)real, (long long)before);
  return 0;
}
