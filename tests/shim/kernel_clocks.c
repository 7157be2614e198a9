// The kernel's clocks for run.sh's brackets, read with the raw system call (no shim, no vDSO:
// nothing of vclock's can answer): run.sh runs it just before and just after each program and
// checks every clock the program printed against these readings. Prints one line per clock,
// `NAME NS OFFSET_NS`, OFFSET being the clock minus the midpoint of REALTIME readings taken
// just before and just after it (how run.sh checks a program's clock against its own REALTIME
// reading), and `tick NS`, the kernel's coarse resolution (one tick).
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int64_t kernel_ns(clockid_t id) {
  struct timespec ts = {0, 0};
  if (syscall(SYS_clock_gettime, id, &ts) != 0) return -1;
  return ts.tv_sec * (int64_t)1000000000 + ts.tv_nsec;
}

int main(void) {
  static const struct {
    clockid_t id;
    const char* name;
  } clocks[] = {{CLOCK_REALTIME, "REALTIME"},
                {CLOCK_MONOTONIC, "MONOTONIC"},
                {CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW"},
                {CLOCK_BOOTTIME, "BOOTTIME"},
                {CLOCK_TAI, "TAI"},
                {CLOCK_REALTIME_COARSE, "REALTIME_COARSE"},
                {CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE"}};
  for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); ++i) {
    const int64_t r1 = kernel_ns(CLOCK_REALTIME);
    const int64_t ns = kernel_ns(clocks[i].id);
    const int64_t r2 = kernel_ns(CLOCK_REALTIME);
    if (r1 < 0 || ns < 0 || r2 < 0) {
      fprintf(stderr, "kernel_clocks: clock_gettime(%s) failed\n", clocks[i].name);
      return 1;
    }
    printf("%s %" PRId64 " %" PRId64 "\n", clocks[i].name, ns, ns - (r1 + (r2 - r1) / 2));
  }
  struct timespec res = {0, 0};
  if (syscall(SYS_clock_getres, CLOCK_MONOTONIC_COARSE, &res) != 0) return 1;
  printf("tick %" PRId64 "\n", res.tv_sec * (int64_t)1000000000 + res.tv_nsec);
  return 0;
}
