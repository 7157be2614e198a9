/* What a static program sees of time (tests/vdso/handover.sh builds it static with glibc, musl
 * and as static-pie): one line, "realtime NS monotonic NS secure 0|1 ehdr HEX later NS", the
 * last REALTIME again after a 20 ms nanosleep (a system call: real time, whatever the rate).
 * With an argument N it then sleeps N seconds before printing, so that `vclock status --pid`
 * can look at it (and see the three calls counted). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

static long long clock_ns(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0) return -1;
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  const long long realtime = clock_ns(CLOCK_REALTIME);
  const long long monotonic = clock_ns(CLOCK_MONOTONIC);
  const struct timespec pause = {0, 20000000};
  nanosleep(&pause, NULL);
  const long long later = clock_ns(CLOCK_REALTIME);
  if (argc > 1) sleep((unsigned)atoi(argv[1]));
  printf("realtime %lld monotonic %lld secure %lu ehdr %lx later %lld\n", realtime, monotonic,
         getauxval(AT_SECURE), getauxval(AT_SYSINFO_EHDR), later);
  return 0;
}
