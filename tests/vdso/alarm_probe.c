/* A static program taking SIGALRM 10,000 times a second (an interval timer of 100 us) while it
 * does a fixed amount of work: "work_ns NS signals N", the work's wall time by CLOCK_MONOTONIC
 * and the signals its handler took. Under `vclock run` every signal stops it once in the
 * tracer; tests/vdso/bench.sh compares the two runs (docs/performance.md). With an argument,
 * that many iterations of work instead of 200,000,000. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t taken;

static void on_alarm(int signal) {
  (void)signal;
  taken = taken + 1;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  const long long iterations = argc > 1 ? atoll(argv[1]) : 200000000LL;
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_handler = on_alarm;
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, NULL);
  const struct itimerval every_100us = {{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &every_100us, NULL);
  const long long start = now_ns();
  volatile unsigned long long sum = 0;
  for (long long i = 0; i < iterations; ++i) sum = sum + (unsigned long long)i;
  const long long work = now_ns() - start;
  const struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  printf("work_ns %lld signals %d\n", work, (int)taken);
  return 0;
}
