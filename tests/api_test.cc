// The C API against the real kernel (STYLE.md 3.9: the system tests). Every reading of a
// page clock is sandwiched between two kernel readings of the same clock; every other clock
// id must give exactly the kernel's return value and errno (kernel selftest
// vdso_test_correctness.c does the same for the vDSO).
//
// Tolerance: kernel_before - 50 us <= vclock <= kernel_after + 50 us. This is a functional
// test, not a precision one (the accuracy target, 1 us, is measured by `vclock status` and
// the benchmark): 50 us is far below any bug (a wrong offset, a wrong rate, a stale page)
// and far above scheduling noise between two adjacent calls. Until the timekeeper has
// calibrated, the kernel answers and the sandwich is exact.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "lib/entry_points.h"
#include "lib/runtime.h"
#include "lib/status.h"
#include "support/child_process.h"
#include "support/emulation.h"
#include "support/page_mode.h"
#include "support/realtime_steps.h"
#include "vclock/detail/arch/cpu_features.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/vclock.h"

extern char** environ;

namespace {

using vclock::test::run_child_test;
using vclock::test::wait_with_watchdog;

constexpr std::int64_t tolerance_ns = 50'000;
using vclock::detail::ns_per_s;

// The exit status of a child test run (run_child_test) that ran and passed. Not 0: a
// --gtest_filter that matches nothing also exits 0.
constexpr int child_passed = 3;

std::int64_t to_ns(const timespec& ts) { return std::int64_t{ts.tv_sec} * ns_per_s + ts.tv_nsec; }

std::int64_t kernel_ns(clockid_t clock) {
  timespec ts{};
  EXPECT_EQ(clock_gettime(clock, &ts), 0) << "clock " << clock;
  return to_ns(ts);
}

struct page_clock {
  clockid_t id;
  const char* name;
  bool steady;  // never goes back (REALTIME and TAI may be stepped by an administrator)
};

constexpr page_clock fine_clocks[] = {
    {CLOCK_REALTIME, "REALTIME", false},
    {CLOCK_MONOTONIC, "MONOTONIC", true},
    {CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW", true},
    {CLOCK_BOOTTIME, "BOOTTIME", true},
    {CLOCK_TAI, "TAI", false},
};

constexpr page_clock coarse_clocks[] = {
    {CLOCK_REALTIME_COARSE, "REALTIME_COARSE", false},
    {CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE", true},
};

// The four ways to read a clock, as ns (-1 on error, errno set).
enum class form { timespec_ordered, ns_ordered, timespec_relaxed, ns_relaxed };
constexpr form all_forms[] = {form::timespec_ordered, form::ns_ordered, form::timespec_relaxed,
                              form::ns_relaxed};

const char* form_name(form f) {
  switch (f) {
    case form::timespec_ordered:
      return "vclock_gettime";
    case form::ns_ordered:
      return "vclock_gettime_ns";
    case form::timespec_relaxed:
      return "vclock_gettime_relaxed";
    case form::ns_relaxed:
      return "vclock_gettime_ns_relaxed";
  }
  return "?";
}

std::int64_t vclock_read(form f, clockid_t clock) {
  timespec ts{};
  switch (f) {
    case form::timespec_ordered:
      return vclock_gettime(clock, &ts) == 0 ? to_ns(ts) : -1;
    case form::ns_ordered:
      return vclock_gettime_ns(clock);
    case form::timespec_relaxed:
      return vclock_gettime_relaxed(clock, &ts) == 0 ? to_ns(ts) : -1;
    case form::ns_relaxed:
      return vclock_gettime_ns_relaxed(clock);
  }
  return -1;
}

// The largest coarse lag to allow: one timekeeper tick (vclock_getres reports it for the
// coarse clocks) plus one kernel jiffy, plus a scheduling allowance for the timekeeper
// thread, which may be late on a loaded machine.
std::int64_t coarse_tolerance_ns(clockid_t coarse) {
  timespec ours{};
  timespec kernels{};
  EXPECT_EQ(vclock_getres(coarse, &ours), 0);
  EXPECT_EQ(clock_getres(coarse, &kernels), 0);
  return to_ns(ours) + to_ns(kernels) + 20'000'000;
}

// Ends a child test run: flushes gtest's output and exits with child_passed or 1.
[[noreturn]] void end_child_test() {
  std::printf("[ CHILD    ] %s\n", testing::Test::HasFailure() ? "FAILED" : "passed");
  std::fflush(nullptr);
  std::_Exit(testing::Test::HasFailure() ? 1 : child_passed);
}

// For TEST(Api, ...) that start a child: the child's verdict.
testing::AssertionResult child_passed_status(int status) {
  if (status == -1) return testing::AssertionFailure() << "child timed out (hung?)";
  if (WIFEXITED(status) && WEXITSTATUS(status) == child_passed) {
    return testing::AssertionSuccess();
  }
  if (WIFSIGNALED(status)) {
    return testing::AssertionFailure() << "child killed by signal " << WTERMSIG(status);
  }
  return testing::AssertionFailure() << "child exit status " << WEXITSTATUS(status);
}

// --- page clocks against the kernel ---------------------------------------------------------

// Runs for 300 ms from the first call and on until the counter has answered for 100 ms (5 s
// at most: calibration waits for a good enough rate, a few hundred ms), so it covers
// calibration (kernel answers), the switch and counter mode, and each form of each fine clock
// thousands of times.
TEST(Api, FineClocksAreSandwichedByTheKernel) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto counting_since = clock::time_point::max();
  const auto more = [&] {
    const auto now = clock::now();
    if (counting_since == clock::time_point::max() &&
        vclock::test::page_in_counter_mode(*vclock::detail::host_page)) {
      counting_since = now;
    }
    const bool counted = counting_since != clock::time_point::max() &&
                         now - counting_since >= std::chrono::milliseconds(100);
    return now - start < std::chrono::seconds(5) &&
           (now - start < std::chrono::milliseconds(300) || !counted);
  };
  std::int64_t worst_below = 0;  // largest k1 - v
  std::int64_t worst_above = 0;  // largest v - k2
  long samples = 0;
  while (more()) {
    for (const page_clock& c : fine_clocks) {
      for (const form f : all_forms) {
        const std::int64_t k1 = kernel_ns(c.id);
        const std::int64_t v = vclock_read(f, c.id);
        const std::int64_t k2 = kernel_ns(c.id);
        if (!c.steady && vclock::test::realtime_stepped_recently()) continue;
        ++samples;
        worst_below = std::max(worst_below, k1 - v);
        worst_above = std::max(worst_above, v - k2);
        ASSERT_GE(v, k1 - tolerance_ns) << c.name << " " << form_name(f) << ": " << k1 - v
                                        << " ns before the kernel's earlier reading";
        ASSERT_LE(v, k2 + tolerance_ns) << c.name << " " << form_name(f) << ": " << v - k2
                                        << " ns after the kernel's later reading";
      }
    }
  }
  const vclock::status_snapshot s = vclock::read_status(0);
  std::printf("[          ] %ld samples; worst: %lld ns early, %lld ns late; mode %s%s\n", samples,
              static_cast<long long>(worst_below), static_cast<long long>(worst_above),
              s.counter_mode ? "counter" : "fallback: ", s.reason.c_str());
}

// Once the counter answers (if it does on this machine), the same sandwich again.
TEST(Api, FineClocksAreSandwichedByTheKernelInCounterMode) {
  const vclock::status_snapshot s = vclock::read_status(2000);
  if (!s.counter_mode) {
    GTEST_SKIP() << "the counter is not used on this machine: " << s.reason;
  }
  for (const page_clock& c : fine_clocks) {
    for (const form f : all_forms) {
      for (int i = 0; i < 10000; ++i) {
        const std::int64_t k1 = kernel_ns(c.id);
        const std::int64_t v = vclock_read(f, c.id);
        const std::int64_t k2 = kernel_ns(c.id);
        if (!c.steady && vclock::test::realtime_stepped_recently()) continue;
        ASSERT_GE(v, k1 - tolerance_ns) << c.name << " " << form_name(f);
        ASSERT_LE(v, k2 + tolerance_ns) << c.name << " " << form_name(f);
      }
    }
  }
}

// Coarse clocks read only the page's base times: at most one tick behind the kernel's fine
// clock, never ahead of it.
TEST(Api, CoarseClocksTrailTheKernelByAtMostATick) {
  (void)vclock::read_status(500);
  for (const page_clock& c : coarse_clocks) {
    const clockid_t fine = c.id == CLOCK_REALTIME_COARSE ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    const std::int64_t lag = coarse_tolerance_ns(c.id);
    for (const form f : all_forms) {
      for (int i = 0; i < 2000; ++i) {
        const std::int64_t k1 = kernel_ns(fine);
        const std::int64_t v = vclock_read(f, c.id);
        const std::int64_t k2 = kernel_ns(fine);
        if (!c.steady && vclock::test::realtime_stepped_recently()) continue;
        ASSERT_GE(v, k1 - lag) << c.name << " " << form_name(f);
        ASSERT_LE(v, k2 + tolerance_ns) << c.name << " " << form_name(f);
      }
    }
  }
}

TEST(Api, SteadyClocksNeverGoBackOverAMillionCalls) {
  const page_clock steady[] = {fine_clocks[1], fine_clocks[2], fine_clocks[3], coarse_clocks[1]};
  for (const page_clock& c : steady) {
    for (const form f : all_forms) {
      // A million calls of the main entry point; fewer of the others.
      const int calls = f == form::ns_ordered ? 1'000'000 : 200'000;
      std::int64_t last = vclock_read(f, c.id);
      for (int i = 0; i < calls; ++i) {
        const std::int64_t v = vclock_read(f, c.id);
        if (v < last) {
          FAIL() << c.name << " " << form_name(f) << " went back by " << last - v << " ns at call "
                 << i;
        }
        last = v;
      }
    }
  }
}

// The timespec forms are normalised.
TEST(Api, TimespecIsNormalised) {
  for (const page_clock& c : fine_clocks) {
    for (int i = 0; i < 10000; ++i) {
      timespec ts{};
      ASSERT_EQ(vclock_gettime(c.id, &ts), 0);
      ASSERT_GE(ts.tv_nsec, 0);
      ASSERT_LT(ts.tv_nsec, ns_per_s);
      ASSERT_EQ(vclock_gettime_relaxed(c.id, &ts), 0);
      ASSERT_GE(ts.tv_nsec, 0);
      ASSERT_LT(ts.tv_nsec, ns_per_s);
    }
  }
}

// --- every ordering's variant ------------------------------------------------------------------

// The ordered reads this CPU can execute: the ifunc binds one of them, and the others would
// otherwise never run here (tested on every machine, not only on the one that chooses them).
std::vector<vclock::arch::counter_ordering> ordered_variants() {
  std::vector<vclock::arch::counter_ordering> v;
  for (const vclock::arch::counter_ordering o : vclock::arch::ordered_variants) {
    if (vclock::arch::ordering_available(o)) {
      v.push_back(o);  // e.g. RDTSCP only where CPUID says so
    }
  }
  return v;
}

// Each variant of vclock_gettime_ns, vclock_gettime and vclock_gettimeofday, called
// directly: sandwiched by the kernel for every page clock, both forms agreeing and
// normalised, steady clocks never going back, bad ids failing with EINVAL.
TEST(Api, EveryOrderingVariantServesEveryClock) {
  (void)vclock::read_status(500);  // in counter mode, if this machine gets there
  for (const vclock::arch::counter_ordering o : ordered_variants()) {
    SCOPED_TRACE(vclock::arch::ordering_name(o));
    const vclock::detail::entry_points ep = vclock::detail::entry_points_for(o);
    ASSERT_NE(ep.gettime_ns, nullptr);
    ASSERT_NE(ep.gettime, nullptr);
    ASSERT_NE(ep.gettimeofday, nullptr);
    ASSERT_NE(ep.gettime_or_efault, nullptr);
    for (const page_clock& c : fine_clocks) {
      std::int64_t last = INT64_MIN;
      for (int i = 0; i < 5000; ++i) {
        const std::int64_t k1 = kernel_ns(c.id);
        const std::int64_t v = ep.gettime_ns(c.id);
        timespec ts{};
        ASSERT_EQ(ep.gettime(c.id, &ts), 0) << c.name;
        timespec checked{};
        ASSERT_EQ(ep.gettime_or_efault(c.id, &checked), 0) << c.name;
        const std::int64_t k2 = kernel_ns(c.id);
        if (!c.steady && vclock::test::realtime_stepped_recently()) continue;
        ASSERT_GE(to_ns(checked), to_ns(ts) - (c.steady ? 0 : tolerance_ns)) << c.name;
        ASSERT_LE(to_ns(checked), k2 + tolerance_ns) << c.name;
        ASSERT_GE(ts.tv_nsec, 0) << c.name;
        ASSERT_LT(ts.tv_nsec, ns_per_s) << c.name;
        const std::int64_t t = to_ns(ts);
        ASSERT_GE(v, k1 - tolerance_ns) << c.name;
        ASSERT_LE(t, k2 + tolerance_ns) << c.name;
        if (c.steady) {
          ASSERT_GE(v, last) << c.name << " went back";
          ASSERT_GE(t, v) << c.name << " went back";
          last = t;
        }
      }
    }
    for (const page_clock& c : coarse_clocks) {
      const clockid_t fine = c.id == CLOCK_REALTIME_COARSE ? CLOCK_REALTIME : CLOCK_MONOTONIC;
      const std::int64_t lag = coarse_tolerance_ns(c.id);
      const std::int64_t k1 = kernel_ns(fine);
      const std::int64_t v = ep.gettime_ns(c.id);
      timespec ts{};
      ASSERT_EQ(ep.gettime(c.id, &ts), 0) << c.name;
      const std::int64_t k2 = kernel_ns(fine);
      if (!c.steady && vclock::test::realtime_stepped_recently()) continue;
      ASSERT_GE(v, k1 - lag) << c.name;
      ASSERT_LE(to_ns(ts), k2 + tolerance_ns) << c.name;
    }
    for (const clockid_t id : {12345, -1, 16}) {
      errno = 0;
      EXPECT_EQ(ep.gettime_ns(id), -1) << id;
      EXPECT_EQ(errno, EINVAL) << id;
      timespec ts{};
      errno = 0;
      EXPECT_EQ(ep.gettime(id, &ts), -1) << id;
      EXPECT_EQ(errno, EINVAL) << id;
      errno = 0;
      EXPECT_EQ(ep.gettime_or_efault(id, &ts), -1) << id;
      EXPECT_EQ(errno, EINVAL) << id;
    }
    // A null timespec: the system call's answer, EFAULT for a clock it knows and EINVAL
    // for one it does not (it checks the id first).
    for (const clockid_t id : {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_TAI, 12345}) {
      errno = 0;
      EXPECT_EQ(ep.gettime_or_efault(id, nullptr), -1) << id;
      EXPECT_EQ(errno, id == 12345 ? EINVAL : EFAULT) << id;
    }
    const std::int64_t k1 = kernel_ns(CLOCK_REALTIME);
    timeval tv{};
    ASSERT_EQ(ep.gettimeofday(&tv, nullptr), 0);
    const std::int64_t k2 = kernel_ns(CLOCK_REALTIME);
    const std::int64_t v = std::int64_t{tv.tv_sec} * ns_per_s + std::int64_t{tv.tv_usec} * 1000;
    if (!vclock::test::realtime_stepped_recently()) {
      EXPECT_GE(v, k1 - tolerance_ns - 1000);  // truncated to microseconds
      EXPECT_LE(v, k2 + tolerance_ns);
    }
    std::printf("[          ] %s: every clock served\n", vclock::arch::ordering_name(o));
  }
}

// --- other clock ids: the kernel's answer, errno included ------------------------------------

// clockid_t of a dynamic POSIX clock (clock_gettime(2), "Dynamic clocks").
constexpr clockid_t fd_to_clockid(int fd) { return static_cast<clockid_t>((~fd << 3) | 3); }
// clockid_t of a process's CPU-time clock (CPUCLOCK_SCHED), as clock_getcpuclockid makes it.
constexpr clockid_t pid_cpu_clockid(pid_t pid) { return static_cast<clockid_t>((~pid << 3) | 2); }

bool is_page_clock(clockid_t id) {
  for (const page_clock& c : fine_clocks) {
    if (c.id == id) return true;
  }
  for (const page_clock& c : coarse_clocks) {
    if (c.id == id) return true;
  }
  return false;
}

std::vector<clockid_t> forwarded_clock_ids() {
  std::vector<clockid_t> ids;
  for (clockid_t id = -40; id <= 40; ++id) {
    if (!is_page_clock(id)) ids.push_back(id);
  }
  clockid_t own = 0;
  if (clock_getcpuclockid(getpid(), &own) == 0) ids.push_back(own);
  if (pthread_getcpuclockid(pthread_self(), &own) == 0) ids.push_back(own);
  ids.push_back(pid_cpu_clockid(1));        // init's CPU clock: EPERM or a time
  ids.push_back(pid_cpu_clockid(INT_MAX));  // no such process
  ids.push_back(fd_to_clockid(999'999));    // not an open fd
  ids.push_back(fd_to_clockid(-1));
  ids.insert(ids.end(), {12345, -12345, INT_MAX, INT_MIN, CLOCK_THREAD_CPUTIME_ID,
                         CLOCK_PROCESS_CPUTIME_ID, CLOCK_REALTIME_ALARM, CLOCK_BOOTTIME_ALARM});
  return ids;
}

// One clock id: each entry point gives the kernel's result; a successful reading lies
// between two kernel readings (CPU-time and alarm clocks do not go back between them).
// Returns whether the kernel answered (true) or failed (false).
bool expect_forwarded_like_the_kernel(clockid_t id) {
  SCOPED_TRACE(testing::Message() << "clock id " << id);
  for (const form f : all_forms) {
    timespec k1{};
    timespec k2{};
    errno = 0;
    const int kr = clock_gettime(id, &k1);
    const int kerrno = errno;
    errno = 0;
    timespec ts{};
    std::int64_t v = -1;
    int vr = 0;
    if (f == form::timespec_ordered || f == form::timespec_relaxed) {
      vr = f == form::timespec_ordered ? vclock_gettime(id, &ts) : vclock_gettime_relaxed(id, &ts);
      v = to_ns(ts);
    } else {
      v = f == form::ns_ordered ? vclock_gettime_ns(id) : vclock_gettime_ns_relaxed(id);
      vr = v == -1 ? -1 : 0;
    }
    const int verrno = errno;
    clock_gettime(id, &k2);
    EXPECT_EQ(vr, kr) << form_name(f);
    if (vr != kr) return kr == 0;
    if (kr != 0) {
      EXPECT_EQ(verrno, kerrno) << form_name(f) << ": " << std::strerror(verrno) << " vs "
                                << std::strerror(kerrno);
      if (f == form::ns_ordered || f == form::ns_relaxed) {
        EXPECT_EQ(v, -1);
      }
    } else {
      EXPECT_GE(v, to_ns(k1)) << form_name(f);
      EXPECT_LE(v, to_ns(k2)) << form_name(f);
    }
  }
  // getres: the same result, errno and resolution.
  timespec kres{-1, -1};
  timespec vres{-2, -2};
  errno = 0;
  const int kr = clock_getres(id, &kres);
  const int kerrno = errno;
  errno = 0;
  const int vr = vclock_getres(id, &vres);
  EXPECT_EQ(vr, kr) << "getres";
  if (kr != 0) {
    EXPECT_EQ(errno, kerrno) << "getres";
  } else {
    EXPECT_EQ(to_ns(vres), to_ns(kres)) << "getres";
  }
  timespec ts{};
  return clock_gettime(id, &ts) == 0;
}

TEST(Api, OtherClockIdsBehaveExactlyLikeTheKernel) {
  int answered = 0;
  int failed = 0;
  for (const clockid_t id : forwarded_clock_ids()) {
    (expect_forwarded_like_the_kernel(id) ? answered : failed) += 1;
  }
  std::printf("[          ] %d clock ids the kernel answers, %d it refuses\n", answered, failed);
  EXPECT_GT(answered, 2);  // at least the CPU-time clocks
  EXPECT_GT(failed, 10);
}

TEST(Api, DynamicClockFromANonClockFdFailsLikeTheKernel) {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  expect_forwarded_like_the_kernel(fd_to_clockid(fd));
  timespec ts{};
  errno = 0;
  ASSERT_EQ(clock_gettime(fd_to_clockid(fd), &ts), -1);
  EXPECT_EQ(errno, EINVAL);  // what the kernel says for a fd that is not a posix clock
  close(fd);
}

TEST(Api, CpuTimeClocksAreForwarded) {
  // Burn a little CPU so the clocks visibly advance.
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < 1'000'000; ++i) sink = sink + static_cast<std::uint64_t>(i);
  for (const clockid_t id : {CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID}) {
    const std::int64_t k1 = kernel_ns(id);
    timespec ts{};
    ASSERT_EQ(vclock_gettime(id, &ts), 0);
    const std::int64_t v_ns = vclock_gettime_ns(id);
    const std::int64_t k2 = kernel_ns(id);
    EXPECT_GT(k1, 0);
    EXPECT_GE(to_ns(ts), k1);
    EXPECT_LE(to_ns(ts), v_ns);
    EXPECT_LE(v_ns, k2);
  }
}

TEST(Api, BadClockNsFormReturnsMinusOneWithEinval) {
  // 10 was CLOCK_SGI_CYCLE, removed from Linux; 16 is MAX_CLOCKS.
  for (const clockid_t id : {12345, -1, INT_MAX, 16, 10}) {
    errno = 0;
    EXPECT_EQ(vclock_gettime_ns(id), -1) << id;
    EXPECT_EQ(errno, EINVAL) << id;
    errno = 0;
    EXPECT_EQ(vclock_gettime_ns_relaxed(id), -1) << id;
    EXPECT_EQ(errno, EINVAL) << id;
    timespec ts{};
    errno = 0;
    EXPECT_EQ(vclock_gettime(id, &ts), -1) << id;
    EXPECT_EQ(errno, EINVAL) << id;
  }
}

// --- getres, gettimeofday, time ---------------------------------------------------------------

TEST(Api, GetresMatchesTheKernelForFineClocks) {
  for (const page_clock& c : fine_clocks) {
    timespec k{-1, -1};
    timespec v{-2, -2};
    ASSERT_EQ(clock_getres(c.id, &k), 0);
    ASSERT_EQ(vclock_getres(c.id, &v), 0) << c.name;
    EXPECT_EQ(v.tv_sec, k.tv_sec) << c.name;
    EXPECT_EQ(v.tv_nsec, k.tv_nsec) << c.name;
    EXPECT_EQ(vclock_getres(c.id, nullptr), 0) << c.name;
  }
}

TEST(Api, GetresOfCoarseClocksIsAtLeastTheKernels) {
  for (const page_clock& c : coarse_clocks) {
    timespec k{};
    timespec v{};
    ASSERT_EQ(clock_getres(c.id, &k), 0);
    ASSERT_EQ(vclock_getres(c.id, &v), 0) << c.name;
    EXPECT_GE(to_ns(v), to_ns(k)) << c.name;
    EXPECT_LE(to_ns(v), 1'000'000'000) << c.name;  // a coarse clock still ticks every second
    EXPECT_GE(v.tv_nsec, 0);
    EXPECT_LT(v.tv_nsec, ns_per_s);
    EXPECT_EQ(vclock_getres(c.id, nullptr), 0) << c.name;
  }
}

TEST(Api, GettimeofdayAgreesWithRealtime) {
  for (int i = 0; i < 10000; ++i) {
    const std::int64_t k1 = kernel_ns(CLOCK_REALTIME);
    timeval tv{};
    ASSERT_EQ(vclock_gettimeofday(&tv, nullptr), 0);
    const std::int64_t k2 = kernel_ns(CLOCK_REALTIME);
    ASSERT_GE(tv.tv_usec, 0);
    ASSERT_LT(tv.tv_usec, 1'000'000);
    const std::int64_t v = std::int64_t{tv.tv_sec} * ns_per_s + std::int64_t{tv.tv_usec} * 1000;
    if (vclock::test::realtime_stepped_recently()) continue;
    // Truncated to microseconds: up to 1 us below the ns reading.
    ASSERT_GE(v, k1 - tolerance_ns - 1000);
    ASSERT_LE(v, k2 + tolerance_ns);
  }
  // tz is filled (with the kernel's zeros), and both pointers may be null.
  struct timezone tz {
    - 1, -1
  };
  timeval tv{};
  ASSERT_EQ(vclock_gettimeofday(&tv, &tz), 0);
  EXPECT_EQ(tz.tz_minuteswest, 0);
  EXPECT_EQ(tz.tz_dsttime, 0);
  EXPECT_GT(tv.tv_sec, 1'500'000'000);  // after 2017
  EXPECT_EQ(vclock_gettimeofday(nullptr, nullptr), 0);
}

TEST(Api, TimeAgreesWithRealtime) {
  const std::int64_t lag = coarse_tolerance_ns(CLOCK_REALTIME_COARSE);
  for (int i = 0; i < 10000; ++i) {
    const std::int64_t k1 = kernel_ns(CLOCK_REALTIME);
    time_t out = -1;
    const time_t t = vclock_time(&out);
    const std::int64_t k2 = kernel_ns(CLOCK_REALTIME);
    ASSERT_EQ(out, t);
    if (vclock::test::realtime_stepped_recently()) continue;
    // time(2) is a coarse clock, truncated to seconds.
    ASSERT_GE(t, (k1 - lag) / ns_per_s);
    ASSERT_LE(t, (k2 + tolerance_ns) / ns_per_s);
  }
  EXPECT_GT(vclock_time(nullptr), 1'500'000'000);
}

// --- VCLOCK_DISABLE=1 -------------------------------------------------------------------------

// The child half of Api.DisableSendsEveryCallToTheKernel; skipped when run directly.
TEST(ApiChild, DisabledEveryCallGoesToTheKernel) {
  const char* mode = std::getenv("VCLOCK_TEST_CHILD");
  if (mode == nullptr || std::strcmp(mode, "disabled") != 0) {
    GTEST_SKIP() << "runs only as the child of Api.DisableSendsEveryCallToTheKernel";
  }
  // Kernel answers are exact: the sandwich has no tolerance at all.
  for (int i = 0; i < 2000; ++i) {
    for (const page_clock& c : fine_clocks) {
      for (const form f : all_forms) {
        const std::int64_t k1 = kernel_ns(c.id);
        const std::int64_t v = vclock_read(f, c.id);
        const std::int64_t k2 = kernel_ns(c.id);
        if (!c.steady && vclock::test::realtime_stepped_recently()) continue;
        ASSERT_GE(v, k1) << c.name << " " << form_name(f);
        ASSERT_LE(v, k2) << c.name << " " << form_name(f);
      }
    }
    for (const page_clock& c : coarse_clocks) {
      const std::int64_t k1 = kernel_ns(c.id);
      const std::int64_t v = vclock_gettime_ns(c.id);
      const std::int64_t k2 = kernel_ns(c.id);
      if (!c.steady && vclock::test::realtime_stepped_recently()) continue;
      ASSERT_GE(v, k1) << c.name;
      ASSERT_LE(v, k2) << c.name;
    }
  }
  const vclock::status_snapshot s = vclock::read_status(100);
  EXPECT_FALSE(s.counter_mode);
  EXPECT_EQ(s.reason, "disabled");
  // The page is off: no fast-path answer is possible.
  EXPECT_EQ(vclock::detail::load(vclock::detail::the_page.hot.max_delta), 0u);
  end_child_test();
}

TEST(Api, DisableSendsEveryCallToTheKernel) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  const int status =
      run_child_test("ApiChild.DisabledEveryCallGoesToTheKernel",
                     {"VCLOCK_DISABLE=1", "VCLOCK_TEST_CHILD=disabled"}, std::chrono::seconds(60));
  EXPECT_TRUE(child_passed_status(status));
}

}  // namespace
