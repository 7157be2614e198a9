/* Consumer smoke test: vclock_gettime() from an installed <vclock/vclock.h>. Also built by
 * run.sh with nothing but `cc consumer.c -lvclock` (API.md: no other flags). */
#include <stdio.h>
#include <time.h>
#include <vclock/vclock.h>

int main(void) {
  struct timespec ts;
  if (vclock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
    perror("consumer_c: vclock_gettime");
    return 1;
  }
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L) {
    fprintf(stderr, "consumer_c: bad timespec\n");
    return 1;
  }
  printf("consumer_c: vclock_gettime ok (%lld.%09ld)\n", (long long)ts.tv_sec, ts.tv_nsec);
  return 0;
}
