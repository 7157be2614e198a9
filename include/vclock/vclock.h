/* vclock: clock_gettime() from the CPU counter, in user space.
 *
 * The C API. Every function has the contract of the system call it is
 * named after; see docs/api.md (the reference) in the source tree. All functions are
 * thread-safe and async-signal-safe, and never block, allocate, take a lock
 * or make a system call on the fast path. Usable from C99 and C++. */
#ifndef VCLOCK_VCLOCK_H_
#define VCLOCK_VCLOCK_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#  define VCLOCK_NOEXCEPT noexcept
#else
#  define VCLOCK_NOEXCEPT
#endif

/* A build may define VCLOCK_API itself (the LD_PRELOAD shim compiles the
 * library in with every symbol hidden). */
#if !defined(VCLOCK_API)
#  if defined(__GNUC__)
#    define VCLOCK_API __attribute__((visibility("default")))
#  else
#    define VCLOCK_API
#  endif
#endif

/* clock_gettime(2): 0, or -1 with errno (EINVAL for an unknown clock,
 * EFAULT is not detected, as in the vDSO). Ordered: a reading taken after
 * observing another thread's earlier reading is never smaller. REALTIME,
 * MONOTONIC, MONOTONIC_RAW, BOOTTIME, TAI and the two coarse clocks come from
 * the page; every other clock id goes to the kernel, errno included. */
VCLOCK_API int vclock_gettime(clockid_t clock, struct timespec* ts) VCLOCK_NOEXCEPT;

/* The same time as one signed count of nanoseconds; the fastest form (no
 * division). -1 with errno = EINVAL for an unknown clock; for other
 * kernel-served clocks, -1 with the kernel's errno. */
VCLOCK_API int64_t vclock_gettime_ns(clockid_t clock) VCLOCK_NOEXCEPT;

/* As above without the cross-CPU ordering: a bare counter read. A thread
 * still never sees its own clock go backwards. */
VCLOCK_API int vclock_gettime_relaxed(clockid_t clock, struct timespec* ts) VCLOCK_NOEXCEPT;
VCLOCK_API int64_t vclock_gettime_ns_relaxed(clockid_t clock) VCLOCK_NOEXCEPT;

/* clock_getres(2). res may be NULL. */
VCLOCK_API int vclock_getres(clockid_t clock, struct timespec* res) VCLOCK_NOEXCEPT;

/* gettimeofday(2). tz, if not NULL, is filled with zeros as on Linux. */
VCLOCK_API int vclock_gettimeofday(struct timeval* tv, void* tz) VCLOCK_NOEXCEPT;

/* time(2). */
VCLOCK_API time_t vclock_time(time_t* t) VCLOCK_NOEXCEPT;

/* Error-bounded time: an interval that contains the true time whenever the
 * synchronisation source's own error claims hold (vclock's deviation from
 * the kernel clock included). The midpoint is not "the true time": use the
 * interval (wait out `latest` before acting on an order, as commit-wait
 * does). See README.md, "Error-bounded time". */
typedef struct vclock_bounds {
  int64_t earliest_ns; /* the true time is not before this ... */
  int64_t latest_ns;   /* ... and not after this (ns since the epoch) */
  int status;          /* VCLOCK_SYNC_* */
} vclock_bounds;

enum {
  VCLOCK_SYNC_UNKNOWN = 0,      /* no bound: earliest INT64_MIN, latest INT64_MAX */
  VCLOCK_SYNC_SYNCED = 1,       /* the source vouches for its error */
  VCLOCK_SYNC_FREE_RUNNING = 2, /* the source stopped; its error grows at its drift */
  VCLOCK_SYNC_UNSYNCED = 3,     /* not synchronised: the bound is the kernel's maximum error */
  VCLOCK_SYNC_DISRUPTED = 4     /* REALTIME was stepped, until the source confirms */
};

/* CLOCK_REALTIME or CLOCK_TAI: 0, or -1 with errno (EINVAL another clock,
 * EFAULT a null `b`). A few ns more than vclock_gettime_ns. */
VCLOCK_API int vclock_now_bounded(clockid_t clock, vclock_bounds* b) VCLOCK_NOEXCEPT;

/* Stamps: the bare counter now, the exact time later (docs/stamps.md).
 * A stamp is the counter value and the epoch it belongs to (the boot, and
 * the counter's epoch: a counter jump starts a new one). Taking one costs
 * the counter read; converting it gives the time vclock_gettime_ns would
 * have returned at that counter value. */
typedef struct vclock_stamp_t {
  uint64_t counter; /* the raw counter value */
  uint64_t epoch;   /* 0: taken before the page had a history */
} vclock_stamp_t;

/* Returned by the conversions when the stamp lies outside the kept
 * history (older than about a second, or where readers asked the kernel):
 * *ns is the best estimate, within the bound of
 * vclock_stamp_to_ns_bounded. */
#define VCLOCK_STAMP_ESTIMATE 1

/* The counter, read with the ordering vclock_gettime uses (ordered: a
 * stamp taken after observing another thread's is never smaller). */
VCLOCK_API vclock_stamp_t vclock_stamp(void) VCLOCK_NOEXCEPT;
/* The bare counter read, as vclock_gettime_relaxed. */
VCLOCK_API vclock_stamp_t vclock_stamp_relaxed(void) VCLOCK_NOEXCEPT;

/* The time of `clock` (REALTIME, MONOTONIC, MONOTONIC_RAW, BOOTTIME or
 * TAI) at the stamp. 0: exact (bit for bit what vclock_gettime_ns
 * returned at that counter value); VCLOCK_STAMP_ESTIMATE: an estimate; or
 * a negative errno, *ns untouched: -EINVAL another clock or a null
 * pointer, -ESTALE a stamp of another boot or counter epoch, -ENODATA no
 * history (the page never counted, or a stamp with epoch 0), -EAGAIN this
 * process reads a virtual-time namespace (not supported yet). */
VCLOCK_API int vclock_stamp_to_ns(clockid_t clock, vclock_stamp_t stamp,
                                  int64_t* ns) VCLOCK_NOEXCEPT;
/* The same, and the error bound: the true clock lies within *ns +-
 * *bound_ns (0 when exact); bound_ns may be NULL. */
VCLOCK_API int vclock_stamp_to_ns_bounded(clockid_t clock, vclock_stamp_t stamp, int64_t* ns,
                                          int64_t* bound_ns) VCLOCK_NOEXCEPT;
/* n stamps at once into out[0..n-1]. The worst status:
 * a negative errno if any stamp failed (its out[i] is INT64_MIN), else
 * VCLOCK_STAMP_ESTIMATE if any was estimated, else 0. */
VCLOCK_API int vclock_stamps_to_ns(clockid_t clock, const vclock_stamp_t* stamps, size_t n,
                                   int64_t* out) VCLOCK_NOEXCEPT;
/* The same, and each stamp's own status in status[i] (0, VCLOCK_STAMP_ESTIMATE
 * or a negative errno, as vclock_stamp_to_ns would return for it). A call
 * that fails as a whole, other than for a bad argument (-EINVAL: nothing
 * written), refuses every stamp: status[i] is its errno, out[i] INT64_MIN. */
VCLOCK_API int vclock_stamps_to_ns_each(clockid_t clock, const vclock_stamp_t* stamps, size_t n,
                                        int64_t* out, int* status) VCLOCK_NOEXCEPT;

/* Offline conversion (docs/api.md, "Offline stamps"): the page's history
 * of lines, written to a file now, converts stamps later, in another
 * process or on another machine, to what vclock_stamps_to_ns gave then
 * (bit for bit, status included) for the stamps the file covers.
 * Export (a cold call: one copy of the history, one file written): 0, or
 * -ENODATA no history yet, -EAGAIN virtual time, an open/write errno.
 * Convert: as vclock_stamps_to_ns; or -EBADMSG a file that is not a whole,
 * intact stamp file, -EPROTONOSUPPORT one of another format version (or
 * another architecture's, docs/stamps.md), an open/read errno, -EINVAL a
 * bad argument. */
VCLOCK_API int vclock_stamps_export(const char* path) VCLOCK_NOEXCEPT;
/* One more record after the file's others (a new file: the first), so that
 * the file covers a span: called every 0.5 s or so, each stamp converts
 * with the first record written after it, exactly (docs/stamps.md). As
 * vclock_stamps_export's errors, and -EBADMSG a file that does not begin
 * as a stamp file (left as it was), -EFBIG 16384 records there already.
 * One appender at a time; a converter racing it leaves the record being
 * written out. */
VCLOCK_API int vclock_stamps_export_append(const char* path) VCLOCK_NOEXCEPT;
VCLOCK_API int vclock_stamp_convert_file(const char* path, clockid_t clock,
                                         const vclock_stamp_t* stamps, size_t n,
                                         int64_t* out) VCLOCK_NOEXCEPT;
/* Convert with each stamp's status, as vclock_stamps_to_ns_each (a file that
 * cannot be used refuses every stamp with its errno). */
VCLOCK_API int vclock_stamp_convert_file_each(const char* path, clockid_t clock,
                                              const vclock_stamp_t* stamps, size_t n, int64_t* out,
                                              int* status) VCLOCK_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#undef VCLOCK_NOEXCEPT

#endif /* VCLOCK_VCLOCK_H_ */
