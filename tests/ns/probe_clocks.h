/* The two views of the time the ns probes compare: the program's own (libc's
 * clock_gettime, which the shim answers, in virtual time in a namespace) and
 * the host's (the raw system call, which only the kernel answers). A failed
 * call exits 2. */
#ifndef VCLOCK_TESTS_NS_PROBE_CLOCKS_H_
#define VCLOCK_TESTS_NS_PROBE_CLOCKS_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline int64_t timespec_ns(const struct timespec* t) {
  return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static inline int64_t program_ns(clockid_t c) {
  struct timespec t;
  if (clock_gettime(c, &t) != 0) {
    perror("clock_gettime");
    exit(2);
  }
  return timespec_ns(&t);
}

static inline int64_t host_ns(clockid_t c) {
  struct timespec t;
  if (syscall(SYS_clock_gettime, c, &t) != 0) {
    perror("SYS_clock_gettime");
    exit(2);
  }
  return timespec_ns(&t);
}

#endif /* VCLOCK_TESTS_NS_PROBE_CLOCKS_H_ */
