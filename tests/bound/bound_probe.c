/* vclock_now_bounded from a plain C program linked to libvclock, for
 * tests/bound/run.sh (VCLOCK_PAGE chooses the daemon's page).
 *   bound_probe sandwich N          N readings, each between two kernel REALTIME
 *                                   reads: "samples N outside O disjoint D min_half A
 *                                   max_half B status S unknown U wide W".
 *                                   The kernel's time at the moment vclock read its
 *                                   counter lies between the two reads, so the
 *                                   interval must meet them (disjoint: it does not;
 *                                   exit 1). Where the bound is much wider than the
 *                                   sandwich it also holds both (outside: it does
 *                                   not). A reading whose two kernel reads are more
 *                                   than 20 us apart (the probe was preempted, or
 *                                   waited for the writer) is dropped (wide).
 *   bound_probe wait STATUS MS      until the status is STATUS (a number): exit 0 and
 *                                   "after X us", or exit 1 after MS ms
 *   bound_probe wait-below NS MS    until the half-width is below NS
 *   bound_probe adjtimex            "state X unsync Y maxerror_us Z" */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>

#include "vclock/vclock.h"

static int64_t kernel_now(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t half_width(const vclock_bounds* b) {
  if (b->earliest_ns == INT64_MIN || b->latest_ns == INT64_MAX) return -1;
  return (b->latest_ns - b->earliest_ns) / 2;
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "sandwich") == 0) {
    const long n = atol(argv[2]);
    long outside = 0, disjoint = 0, unknown = 0, wide = 0;
    int64_t min_half = INT64_MAX, max_half = 0;
    int status = -1;
    for (long i = 0; i < n; ++i) {
      vclock_bounds b;
      const int64_t before = kernel_now(CLOCK_REALTIME);
      if (vclock_now_bounded(CLOCK_REALTIME, &b) != 0) {
        perror("vclock_now_bounded");
        return 2;
      }
      const int64_t after = kernel_now(CLOCK_REALTIME);
      if (after - before > 20000) {
        ++wide;
        continue;
      }
      status = b.status;
      if (b.status == VCLOCK_SYNC_UNKNOWN) {
        ++unknown;
        continue;
      }
      if (b.earliest_ns > after || b.latest_ns < before) ++disjoint;
      if (b.earliest_ns > before || b.latest_ns < after) {
        if (outside++ < 5) {
          fprintf(stderr, "outside: earliest %lld before %lld after %lld latest %lld\n",
                  (long long)b.earliest_ns, (long long)before, (long long)after,
                  (long long)b.latest_ns);
        }
      }
      const int64_t h = half_width(&b);
      if (h < min_half) min_half = h;
      if (h > max_half) max_half = h;
    }
    printf(
        "samples %ld outside %ld disjoint %ld min_half %lld max_half %lld status %d unknown "
        "%ld wide %ld\n",
        n, outside, disjoint, (long long)min_half, (long long)max_half, status, unknown, wide);
    return disjoint == 0 ? 0 : 1;
  }
  if (argc >= 4 && (strcmp(argv[1], "wait") == 0 || strcmp(argv[1], "wait-below") == 0)) {
    const int below = strcmp(argv[1], "wait-below") == 0;
    const long long want = atoll(argv[2]);
    const int64_t start = kernel_now(CLOCK_MONOTONIC);
    const int64_t limit = atoll(argv[3]) * 1000000;
    vclock_bounds b;
    do {
      vclock_now_bounded(CLOCK_REALTIME, &b);
      const int64_t h = half_width(&b);
      if (below ? (h >= 0 && h < want) : b.status == want) {
        printf("after %lld us: status %d half %lld\n",
               (long long)((kernel_now(CLOCK_MONOTONIC) - start) / 1000), b.status, (long long)h);
        return 0;
      }
    } while (kernel_now(CLOCK_MONOTONIC) - start < limit);
    printf("timeout: status %d half %lld\n", b.status, (long long)half_width(&b));
    return 1;
  }
  if (argc >= 2 && strcmp(argv[1], "adjtimex") == 0) {
    struct timex t;
    memset(&t, 0, sizeof(t));
    const int state = adjtimex(&t);
    printf("state %d unsync %d maxerror_us %ld\n", state, (t.status & STA_UNSYNC) != 0,
           (long)t.maxerror);
    return 0;
  }
  fprintf(stderr, "usage: bound_probe sandwich N | wait STATUS MS | wait-below NS MS | adjtimex\n");
  return 2;
}
