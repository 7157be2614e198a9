/* clock_gettime(CLOCK_MONOTONIC) in a tight loop (tests/vdso/bench.sh): one line,
 * "ns_per_call X", the fastest of 100 rounds of 100,000 calls (with the argument "realtime",
 * CLOCK_REALTIME). Short rounds: on a loaded machine most of them still run unpreempted, so
 * the fastest is stable. Built twice: static with glibc,
 * so that under `vclock run` each call goes through the vclock vDSO image as glibc finds it;
 * and with -DVCLOCK_DIRECT against libvclock, calling vclock_gettime itself, the figure the
 * image is held to (docs/performance.md).
 *
 * With the argument "check" (tests/vdso/handover.sh): MONOTONIC and REALTIME in turn, as fast as
 * it can, for 1.5 s of MONOTONIC, so that reads land just after whole seconds, where the hot
 * path carries its elapsed time into tv_sec; one line, "reads N seconds S out_of_range R
 * backwards B": R counts a tv_nsec outside [0, 1e9), B a MONOTONIC below the one before it. */
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

static int check(void) {
  struct timespec first, prev, m, r;
  long long reads = 0, out_of_range = 0, backwards = 0;
  clock_gettime(CLOCK_MONOTONIC, &first);
  prev = first;
  do {
    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_REALTIME, &r);
    reads += 2;
    if (m.tv_nsec < 0 || m.tv_nsec >= 1000000000L) ++out_of_range;
    if (r.tv_nsec < 0 || r.tv_nsec >= 1000000000L) ++out_of_range;
    if (m.tv_sec < prev.tv_sec || (m.tv_sec == prev.tv_sec && m.tv_nsec < prev.tv_nsec)) {
      ++backwards;
    }
    prev = m;
  } while ((m.tv_sec - first.tv_sec) * 1000000000LL + (m.tv_nsec - first.tv_nsec) < 1500000000LL &&
           reads < 1000000000LL); /* a clock stuck or gone back still ends */
  printf("reads %lld seconds %lld out_of_range %lld backwards %lld\n", reads,
         (long long)(m.tv_sec - first.tv_sec), out_of_range, backwards);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "check") == 0) return check();
  const clockid_t clock =
      argc > 1 && strcmp(argv[1], "realtime") == 0 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
  enum { calls = 100000, rounds = 100 };
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
