// Clock ids the shim does not serve must behave exactly as without it (API.md): for each one,
// the call the program makes (the shim's, when preloaded) against glibc's own function, found
// in libc.so.6 itself so that no shim can stand in between: the same return value, the same
// errno, the same resolution, and a reading between two raw kernel readings. glibc, not the
// raw system call, is the reference, as the two may differ (Linux 6.17's vDSO gives
// clock_getres(16) a resolution the system call refuses); the system call's result is shown.
// `--null-tp` adds a NULL `tp` for the seven page clocks, -1 and EFAULT: run.sh passes it only
// under the shim, as glibc's vDSO path would crash on it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

// The kernel's encodings of CPU-time and fd clock ids (include/linux/posix-timers.h),
// computed unsigned: shifting a negative int is undefined in C.
#define CPUCLOCK_SCHED 2u
#define CPUCLOCK_PERTHREAD 4u
static clockid_t cpu_clock(unsigned pid, unsigned type) { return (clockid_t)((~pid << 3) | type); }
static clockid_t fd_clock(int fd) { return cpu_clock((unsigned)fd, 3u); }

typedef int clock_fn(clockid_t, struct timespec*);
typedef int gettimeofday_fn(struct timeval*, void*);

// What the program calls: through volatile pointers, because glibc declares `tp` and `tv`
// nonnull and the compiler would otherwise assume so (and warn) where NULL is the point.
static clock_fn* volatile called_gettime = clock_gettime;
static clock_fn* volatile called_getres = clock_getres;
static gettimeofday_fn* volatile called_gettimeofday = gettimeofday;
// The reference: glibc's own definitions.
static clock_fn* glibc_gettime;
static clock_fn* glibc_getres;
static gettimeofday_fn* glibc_gettimeofday;

static int cases, failures;

static int64_t timespec_ns(struct timespec ts) {
  return ts.tv_sec * (int64_t)1000000000 + ts.tv_nsec;
}

// One result, errno when it is -1.
struct outcome {
  long r;
  int e;
};
static const char* text(struct outcome o, char* buf, size_t size) {
  const char* name = o.r == -1 ? strerrorname_np(o.e) : "";
  snprintf(buf, size, "%ld%s%s", o.r, o.r == -1 ? " " : "", name != NULL ? name : "errno ?");
  return buf;
}
static int same(struct outcome a, struct outcome b) {
  return a.r == b.r && (a.r == 0 || a.e == b.e);
}

static void report(int ok, const char* what, const char* name, struct outcome got,
                   struct outcome glibc, struct outcome kernel) {
  char a[64], b[64], c[64];
  ++cases;
  failures += !ok;
  printf("%s %s(%s): %s; glibc %s", ok ? "ok" : "FAIL", what, name, text(got, a, sizeof(a)),
         text(glibc, b, sizeof(b)));
  if (!same(glibc, kernel)) printf(" (system call: %s)", text(kernel, c, sizeof(c)));
  printf("\n");
}

// clock_gettime(id) between two raw readings; a NULL `tp` when `null_tp`.
static void compare_gettime(const char* name, clockid_t id, int null_tp) {
  struct timespec k1 = {0, 0}, v = {0, 0}, k2 = {0, 0}, g = {0, 0};
  struct timespec* tp = null_tp ? NULL : &v;
  errno = 0;
  const long kr = syscall(SYS_clock_gettime, id, null_tp ? NULL : &k1);
  const struct outcome kernel = {kr, errno};
  errno = 0;
  const struct outcome got = {called_gettime(id, tp), errno};
  errno = 0;
  const struct outcome glibc = {glibc_gettime(id, null_tp ? NULL : &g), errno};
  syscall(SYS_clock_gettime, id, null_tp ? NULL : &k2);
  int ok = same(got, glibc);
  // Every clock here only moves forward while this thread watches.
  const int in_bracket = timespec_ns(k1) <= timespec_ns(v) && timespec_ns(v) <= timespec_ns(k2);
  if (got.r == 0 && !null_tp) ok = ok && in_bracket;
  report(ok, null_tp ? "clock_gettime/NULL" : "clock_gettime", name, got, glibc, kernel);
  if (got.r == 0 && !null_tp && !in_bracket) {
    printf("  kernel %" PRId64 " <= %" PRId64 " <= %" PRId64 " does not hold\n", timespec_ns(k1),
           timespec_ns(v), timespec_ns(k2));
  }
}

static void compare_getres(const char* name, clockid_t id, int null_res) {
  struct timespec k = {-1, -1}, v = {-1, -1}, g = {-1, -1};
  errno = 0;
  const long kr = syscall(SYS_clock_getres, id, null_res ? NULL : &k);
  const struct outcome kernel = {kr, errno};
  errno = 0;
  const struct outcome got = {called_getres(id, null_res ? NULL : &v), errno};
  errno = 0;
  const struct outcome glibc = {glibc_getres(id, null_res ? NULL : &g), errno};
  const int ok = same(got, glibc) && (got.r != 0 || timespec_ns(v) == timespec_ns(g));
  report(ok, null_res ? "clock_getres/NULL" : "clock_getres", name, got, glibc, kernel);
  if (got.r == 0 && timespec_ns(v) != timespec_ns(g)) {
    printf("  resolution %" PRId64 " ns, glibc's %" PRId64 " ns\n", timespec_ns(v), timespec_ns(g));
  }
}

static void* park(void* arg) {
  // Blocks until main closes the pipe: a thread whose CPU clock stands still.
  char c;
  return read(*(int*)arg, &c, 1) < 0 ? NULL : arg;
}

// dlsym's object pointer into a function pointer, the way POSIX allows (ISO C does not).
static int glibc_symbol(void* libc, const char* name, void* fn, size_t size) {
  void* p = libc != NULL ? dlsym(libc, name) : NULL;
  memcpy(fn, &p, size);
  return p != NULL;
}

int main(int argc, char** argv) {
  const int null_tp = argc > 1 && strcmp(argv[1], "--null-tp") == 0;
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (!glibc_symbol(libc, "clock_gettime", &glibc_gettime, sizeof(glibc_gettime)) ||
      !glibc_symbol(libc, "clock_getres", &glibc_getres, sizeof(glibc_getres)) ||
      !glibc_symbol(libc, "gettimeofday", &glibc_gettimeofday, sizeof(glibc_gettimeofday))) {
    fprintf(stderr, "FAIL: glibc's own functions not found: %s\n", dlerror());
    return 1;
  }

  struct {
    const char* name;
    clockid_t id;
  } ids[24];
  int n = 0;
#define ADD(label, value)  \
  do {                     \
    ids[n].name = (label); \
    ids[n].id = (value);   \
    ++n;                   \
  } while (0)
  ADD("99", 99);
  ADD("-1", -1);
  ADD("10 (SGI_CYCLE, gone)", 10);
  ADD("12", 12);
  ADD("16 (AUX0 since Linux 6.17)", 16);
  ADD("INT_MAX", INT_MAX);
  ADD("INT_MIN", INT_MIN);
  ADD("PROCESS_CPUTIME_ID", CLOCK_PROCESS_CPUTIME_ID);
  ADD("THREAD_CPUTIME_ID", CLOCK_THREAD_CPUTIME_ID);
  ADD("REALTIME_ALARM", CLOCK_REALTIME_ALARM);
  ADD("BOOTTIME_ALARM", CLOCK_BOOTTIME_ALARM);
  ADD("cpu clock of pid 1", cpu_clock(1, CPUCLOCK_SCHED));
  ADD("cpu clock of no pid", cpu_clock(0x0fffffff, CPUCLOCK_SCHED));
  ADD("cpu clock of bad type", cpu_clock(0, 3));
  ADD("thread clock of no tid", cpu_clock(0x0fffffff, CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD));

  // Two parked threads: one stays until the end, the other is joined once its clock id is
  // known (a thread that already ran off has no clock id to give).
  int parked_pipe[2], gone_pipe[2];
  pthread_t parked, gone;
  clockid_t parked_clock = 0, gone_clock = 0;
  if (pipe(parked_pipe) != 0 || pipe(gone_pipe) != 0) {
    perror("FAIL: pipe");
    return 1;
  }
  int err = pthread_create(&parked, NULL, park, &parked_pipe[0]);
  if (err == 0) err = pthread_getcpuclockid(parked, &parked_clock);
  if (err == 0) err = pthread_create(&gone, NULL, park, &gone_pipe[0]);
  if (err == 0) err = pthread_getcpuclockid(gone, &gone_clock);
  close(gone_pipe[1]);
  if (err == 0) err = pthread_join(gone, NULL);
  if (err != 0) {
    fprintf(stderr, "FAIL: setting up the threads: %s\n", strerror(err));
    return 1;
  }
  ADD("pthread_getcpuclockid", parked_clock);
  ADD("clock of a joined thread", gone_clock);

  // A dynamic clock: a PTP device where there is one, else the error an ordinary fd gets.
  const int ptp = open("/dev/ptp0", O_RDONLY | O_CLOEXEC);
  if (ptp >= 0) ADD("fd of /dev/ptp0", fd_clock(ptp));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ADD("fd of /dev/null", fd_clock(null_fd));
  ADD("fd 1000 (closed)", fd_clock(1000));

  for (int i = 0; i < n; ++i) {
    compare_gettime(ids[i].name, ids[i].id, 0);
    compare_gettime(ids[i].name, ids[i].id, 1);
    compare_getres(ids[i].name, ids[i].id, 0);
    compare_getres(ids[i].name, ids[i].id, 1);
  }

  // The page clocks: resolution as glibc's for the fine ones (the coarse ones follow
  // VCLOCK_TICK_US by design), NULL res accepted, and NULL tp refused with EFAULT.
  const struct {
    const char* name;
    clockid_t id;
  } page[] = {{"REALTIME", CLOCK_REALTIME},
              {"MONOTONIC", CLOCK_MONOTONIC},
              {"MONOTONIC_RAW", CLOCK_MONOTONIC_RAW},
              {"BOOTTIME", CLOCK_BOOTTIME},
              {"TAI", CLOCK_TAI},
              {"REALTIME_COARSE", CLOCK_REALTIME_COARSE},
              {"MONOTONIC_COARSE", CLOCK_MONOTONIC_COARSE}};
  const struct outcome efault = {-1, EFAULT};
  for (size_t i = 0; i < sizeof(page) / sizeof(page[0]); ++i) {
    if (page[i].id != CLOCK_REALTIME_COARSE && page[i].id != CLOCK_MONOTONIC_COARSE) {
      compare_getres(page[i].name, page[i].id, 0);
    }
    compare_getres(page[i].name, page[i].id, 1);
    if (null_tp) {
      errno = 0;
      const struct outcome got = {called_gettime(page[i].id, NULL), errno};
      report(same(got, efault), "clock_gettime/NULL", page[i].name, got, efault, efault);
    }
  }

  // gettimeofday fills the time zone as glibc does, and takes two NULLs.
  struct timeval tv;
  struct timezone tz = {-1, -1}, gtz = {-2, -2};
  errno = 0;
  const struct outcome tz_got = {called_gettimeofday(&tv, &tz), errno};
  const struct outcome tz_glibc = {glibc_gettimeofday(&tv, &gtz), errno};
  report(same(tz_got, tz_glibc) && tz.tz_minuteswest == gtz.tz_minuteswest &&
             tz.tz_dsttime == gtz.tz_dsttime,
         "gettimeofday", "tv, tz", tz_got, tz_glibc, tz_glibc);
  errno = 0;
  const struct outcome nulls_got = {called_gettimeofday(NULL, NULL), errno};
  const struct outcome nulls_glibc = {glibc_gettimeofday(NULL, NULL), errno};
  report(same(nulls_got, nulls_glibc), "gettimeofday", "NULL, NULL", nulls_got, nulls_glibc,
         nulls_glibc);

  // C11 bases: only TIME_UTC is known, any other returns 0; the resolution is REALTIME's.
  struct timespec ts = {0, 0}, res = {0, 0};
  glibc_getres(CLOCK_REALTIME, &res);
  const struct outcome zero = {0, 0}, utc = {TIME_UTC, 0};
  const struct outcome get0 = {timespec_get(&ts, 0), 0};
  report(same(get0, zero), "timespec_get", "base 0", get0, zero, zero);
  const struct outcome get_utc = {timespec_get(&ts, TIME_UTC), 0};
  report(same(get_utc, utc), "timespec_get", "TIME_UTC", get_utc, utc, utc);
  const struct outcome res0 = {timespec_getres(&ts, 0), 0};
  report(same(res0, zero), "timespec_getres", "base 0", res0, zero, zero);
  const struct outcome res_utc = {timespec_getres(&ts, TIME_UTC), 0};
  report(same(res_utc, utc) && timespec_ns(ts) == timespec_ns(res), "timespec_getres", "TIME_UTC",
         res_utc, utc, utc);

  close(parked_pipe[1]);
  pthread_join(parked, NULL);
  clock_gettime(CLOCK_REALTIME, &ts);
  printf("pid %ld\ncases %d\nfailures %d\nrealtime clock_gettime %" PRId64 " 1\n", (long)getpid(),
         cases, failures, timespec_ns(ts));
  return failures == 0 ? 0 : 1;
}
