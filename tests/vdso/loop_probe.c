/* clock_gettime(CLOCK_MONOTONIC) in a tight loop (tests/vdso/bench.sh): one line,
 * "ns_per_call X", the fastest of 5 rounds of 2,000,000 calls (with the argument "realtime",
 * CLOCK_REALTIME). Built twice: static with glibc,
 * so that under `vclock run` each call goes through the vclock vDSO image as glibc finds it;
 * and with -DVCLOCK_DIRECT against libvclock, calling vclock_gettime itself, the figure the
 * image is held to (docs/performance.md). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef VCLOCK_DIRECT
#  include <vclock/vclock.h>
#  define READ_CLOCK vclock_gettime
#else
#  define READ_CLOCK clock_gettime
#endif

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  const clockid_t clock =
      argc > 1 && strcmp(argv[1], "realtime") == 0 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
  enum { calls = 2000000, rounds = 5 };
  double best = 0;
  long long sink = 0;
  for (int r = 0; r < rounds; ++r) {
    struct timespec ts;
    const long long t0 = now_ns();
    for (int i = 0; i < calls; ++i) {
      READ_CLOCK(clock, &ts);
      sink += ts.tv_nsec;
    }
    const double per_call = (double)(now_ns() - t0) / calls;
    if (r == 0 || per_call < best) best = per_call;
  }
  printf("ns_per_call %.2f sink %lld\n", best, sink & 1);
  return 0;
}
