/* Reads the clocks through libc (the shim answers, in virtual time) and the
 * host's through the raw system call (nobody answers but the kernel), for
 * tests/ns/run.sh.
 *   ns_probe now        one line: virtual and host REALTIME, MONOTONIC,
 *                       BOOTTIME, and virtual TAI - REALTIME, in ns; each
 *                       host figure is the midpoint of the narrowest of 100
 *                       host brackets around the virtual read (a preemption
 *                       widens one try, not the pair), and bracket_ns the
 *                       widest of the three brackets kept
 *   ns_probe bracket    virtual MONOTONIC between two host reads, the
 *                       narrowest of 1000 tries: "host0 H0 virtual V host1 H1"
 *   ns_probe watch MS   reads every clock in a loop for MS host ms; exit 1
 *                       if a monotonic clock went back; one line: reads,
 *                       backward, the virtual time each clock advanced,
 *                       host ms elapsed, first and last virtual REALTIME,
 *                       the host MONOTONIC at the start and the end, and
 *                       each clock's rate in ppm (ppm_monotonic, ppm_raw,
 *                       ppm_boottime, ppm_realtime: its virtual advance over
 *                       the host's between bracketed pairs at the start and
 *                       the end; 1000000 is rate 1)
 *   ns_probe unshare-fork S   reads the clocks once ("before"), then enters
 *                       a new kernel time namespace with MONOTONIC and
 *                       BOOTTIME S seconds ahead (unshare and fork, no
 *                       exec: the library loaded before must notice), and
 *                       the child prints `now`'s line; exit 77 where
 *                       unshare(CLONE_NEWTIME) is not permitted */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_clocks.h"

/* A program read of clock `c` between two host reads. */
struct bracket {
  int64_t host0, program, host1;
};

/* The narrowest of `tries` brackets: a preemption widens one try, not the
 * one kept. */
static struct bracket narrowest(clockid_t c, int tries) {
  struct bracket best = {0, 0, INT64_MAX};
  for (int i = 0; i < tries; ++i) {
    const int64_t h0 = host_ns(c);
    const int64_t v = program_ns(c);
    const int64_t h1 = host_ns(c);
    if (h1 - h0 < best.host1 - best.host0) {
      best.host0 = h0;
      best.program = v;
      best.host1 = h1;
    }
  }
  return best;
}

/* The program's reading of clock `c` and the host's at the same instant: the
 * midpoint of the narrowest of 100 host brackets around the program's read. */
static int64_t paired(clockid_t c, int64_t* host, int64_t* widest) {
  const struct bracket b = narrowest(c, 100);
  *host = b.host0 + (b.host1 - b.host0) / 2;
  if (b.host1 - b.host0 > *widest) *widest = b.host1 - b.host0;
  return b.program;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "now") == 0) {
    int64_t host_real = 0, host_mono = 0, host_boot = 0, widest = 0;
    const int64_t real = paired(CLOCK_REALTIME, &host_real, &widest);
    const int64_t mono = paired(CLOCK_MONOTONIC, &host_mono, &widest);
    const int64_t boot = paired(CLOCK_BOOTTIME, &host_boot, &widest);
    printf(
        "virtual_realtime %lld host_realtime %lld virtual_monotonic %lld host_monotonic %lld "
        "virtual_boottime %lld host_boottime %lld tai_minus_realtime %lld bracket_ns %lld\n",
        (long long)real, (long long)host_real, (long long)mono, (long long)host_mono,
        (long long)boot, (long long)host_boot,
        (long long)(program_ns(CLOCK_TAI) - program_ns(CLOCK_REALTIME)), (long long)widest);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "bracket") == 0) {
    const struct bracket b = narrowest(CLOCK_MONOTONIC, 1000);
    printf("host0 %lld virtual %lld host1 %lld\n", (long long)b.host0, (long long)b.program,
           (long long)b.host1);
    return 0;
  }
  if (argc >= 3 && strcmp(argv[1], "watch") == 0) {
    const clockid_t mono[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME,
                              CLOCK_MONOTONIC_COARSE};
    const int n = (int)(sizeof(mono) / sizeof(mono[0]));
    /* Each clock's rate: its virtual advance over the host's, between a
     * bracketed pair at the start and one at the end (before the first reads, which come
     * a few us before host_start). */
    const clockid_t rated[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME,
                               CLOCK_REALTIME};
    int64_t v0[4], h0[4], widest = 0;
    for (int i = 0; i < 4; ++i) v0[i] = paired(rated[i], &h0[i], &widest);
    int64_t first[4], last[4];
    for (int i = 0; i < n; ++i) first[i] = last[i] = program_ns(mono[i]);
    const int64_t real_first = program_ns(CLOCK_REALTIME);
    int64_t real_last = real_first;
    const int64_t start = host_ns(CLOCK_MONOTONIC);
    const int64_t span = atoll(argv[2]) * 1000000;
    long long reads = 0, backward = 0;
    while (host_ns(CLOCK_MONOTONIC) - start < span) {
      for (int i = 0; i < n; ++i) {
        const int64_t v = program_ns(mono[i]);
        if (v < last[i]) {
          ++backward;
          fprintf(stderr, "clock %d went back by %lld ns\n", (int)mono[i],
                  (long long)(last[i] - v));
        }
        last[i] = v;
      }
      real_last = program_ns(CLOCK_REALTIME);
      ++reads;
    }
    const int64_t elapsed = host_ns(CLOCK_MONOTONIC) - start;
    long long ppm[4];
    for (int i = 0; i < 4; ++i) {
      int64_t h1 = 0;
      const int64_t v1 = paired(rated[i], &h1, &widest);
      ppm[i] = h1 > h0[i] ? (long long)((v1 - v0[i]) * 1000000 / (h1 - h0[i])) : -1;
    }
    printf(
        "reads %lld backward %lld monotonic %lld raw %lld boottime %lld coarse %lld "
        "host_ms %lld realtime_first %lld realtime_last %lld host_start %lld host_end %lld "
        "ppm_monotonic %lld ppm_raw %lld ppm_boottime %lld ppm_realtime %lld bracket_ns %lld\n",
        reads, backward, (long long)(last[0] - first[0]), (long long)(last[1] - first[1]),
        (long long)(last[2] - first[2]), (long long)(last[3] - first[3]),
        (long long)(elapsed / 1000000), (long long)real_first, (long long)real_last,
        (long long)start, (long long)(start + elapsed), ppm[0], ppm[1], ppm[2], ppm[3],
        (long long)widest);
    return backward == 0 ? 0 : 1;
  }
  if (argc >= 3 && strcmp(argv[1], "unshare-fork") == 0) {
    (void)program_ns(CLOCK_MONOTONIC);  // the library is loaded and in use
    if (unshare(CLONE_NEWTIME) != 0) {
      perror("unshare(CLONE_NEWTIME)");
      return 77;
    }
    FILE* f = fopen("/proc/self/timens_offsets", "w");
    if (f == NULL || fprintf(f, "monotonic %s 0\nboottime %s 0\n", argv[2], argv[2]) < 0 ||
        fclose(f) != 0) {
      perror("/proc/self/timens_offsets");
      return 77;
    }
    const pid_t child = fork();
    if (child == 0) {
      int64_t host_mono = 0, host_boot = 0, widest = 0;
      const int64_t mono = paired(CLOCK_MONOTONIC, &host_mono, &widest);
      const int64_t boot = paired(CLOCK_BOOTTIME, &host_boot, &widest);
      printf(
          "virtual_monotonic %lld host_monotonic %lld virtual_boottime %lld host_boottime "
          "%lld bracket_ns %lld\n",
          (long long)mono, (long long)host_mono, (long long)boot, (long long)host_boot,
          (long long)widest);
      fflush(stdout);
      _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) return 2;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
  }
  fprintf(stderr, "usage: ns_probe now | bracket | watch MS | unshare-fork S\n");
  return 2;
}
