// The vclock vDSO image (src/vdso/, docs/vdso.md), mapped into this process
// as `vclock run` maps it into a static program and called as Go and musl
// call it: the kernel's answers without a config, the host page's with
// one, virtual time with a namespace page, and the counters.
#include "support/vdso_image.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

#include "lib/ordering.h"
#include "lib/runtime.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/ns_page.h"
#include "vclock/page.h"
#include "vclock/vclock.h"

namespace {

using vclock::test::mapped_vdso_image;
using vclock::test::vdso_functions;

using vclock::detail::ns_per_s;

std::int64_t timespec_ns(const timespec& ts) { return ts.tv_sec * ns_per_s + ts.tv_nsec; }

std::int64_t kernel_ns(clockid_t c) {
  timespec ts{};
  syscall(SYS_clock_gettime, c, &ts);
  return timespec_ns(ts);
}

constexpr clockid_t page_clocks[] = {CLOCK_REALTIME,        CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
                                     CLOCK_BOOTTIME,        CLOCK_TAI,       CLOCK_REALTIME_COARSE,
                                     CLOCK_MONOTONIC_COARSE};

bool is_coarse(clockid_t c) { return c == CLOCK_REALTIME_COARSE || c == CLOCK_MONOTONIC_COARSE; }

class vdso_image : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef VCLOCK_VDSO_IMAGE
    GTEST_SKIP() << "no vDSO image in this build (x86-64 only)";
#else
    image_ = std::make_unique<mapped_vdso_image>(VCLOCK_VDSO_IMAGE);
    ASSERT_TRUE(image_->ok()) << image_->error();
    f_ = image_->functions(false);
    ASSERT_NE(f_.clock_gettime, nullptr);
    ASSERT_NE(f_.gettimeofday, nullptr);
    ASSERT_NE(f_.time, nullptr);
    ASSERT_NE(f_.clock_getres, nullptr);
#endif
  }

  // Readings of `clock` inside the kernel's brackets, `slack` ns allowed.
  void expect_in_brackets(clockid_t clock, std::int64_t slack) {
    SCOPED_TRACE(clock);
    const std::int64_t before = kernel_ns(clock);
    timespec ts{};
    ASSERT_EQ(f_.clock_gettime(clock, &ts), 0);
    const std::int64_t after = kernel_ns(clock);
    EXPECT_GE(ts.tv_nsec, 0);
    EXPECT_LT(ts.tv_nsec, ns_per_s);
    EXPECT_GE(timespec_ns(ts), before - slack);
    EXPECT_LE(timespec_ns(ts), after + slack);
  }

  std::unique_ptr<mapped_vdso_image> image_;
  vdso_functions f_;
};

TEST_F(vdso_image, FindsTheSameFunctionsThroughBothHashTables) {
  const vdso_functions g = image_->functions(true);
  EXPECT_EQ(g.clock_gettime, f_.clock_gettime);
  EXPECT_EQ(g.gettimeofday, f_.gettimeofday);
  EXPECT_EQ(g.time, f_.time);
  EXPECT_EQ(g.clock_getres, f_.clock_getres);
  // The plain names, as the kernel exports them too.
  EXPECT_EQ(vclock::test::find_vdso_symbol(image_->ehdr(), "clock_gettime", "LINUX_2.6", false),
            reinterpret_cast<std::uintptr_t>(f_.clock_gettime));
  EXPECT_EQ(
      vclock::test::find_vdso_symbol(image_->ehdr(), "__vdso_clock_gettime", "LINUX_2.5", false),
      0u);
}

// Without a config (no magic), everything is the kernel's: results and
// -errno values exactly, nothing counted.
TEST_F(vdso_image, WithoutConfigGivesTheKernelsAnswers) {
  for (const clockid_t c : page_clocks) expect_in_brackets(c, 0);
  timespec ts{};
  EXPECT_EQ(f_.clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts), 0);
  EXPECT_EQ(f_.clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
  EXPECT_EQ(f_.clock_gettime(12345, &ts), -EINVAL);
  EXPECT_EQ(f_.clock_gettime(CLOCK_REALTIME, nullptr), -EFAULT);
  EXPECT_EQ(f_.clock_getres(12345, &ts), -EINVAL);
  for (const clockid_t c : page_clocks) {
    timespec mine{};
    timespec kernel{};
    ASSERT_EQ(f_.clock_getres(c, &mine), 0);
    syscall(SYS_clock_getres, c, &kernel);
    EXPECT_EQ(timespec_ns(mine), timespec_ns(kernel)) << c;
  }
  long t = 0;
  const long before = static_cast<long>(::time(nullptr));
  const long r = f_.time(&t);
  EXPECT_EQ(r, t);
  EXPECT_GE(r, before);
  EXPECT_LE(r, static_cast<long>(::time(nullptr)));
  EXPECT_EQ(f_.time(nullptr) >= r, true);
  timeval tv{};
  struct timezone tz {};
  struct timezone kernel_tz {};
  EXPECT_EQ(f_.gettimeofday(&tv, &tz), 0);
  syscall(SYS_gettimeofday, nullptr, &kernel_tz);
  EXPECT_EQ(tz.tz_minuteswest, kernel_tz.tz_minuteswest);
  EXPECT_EQ(tz.tz_dsttime, kernel_tz.tz_dsttime);
  EXPECT_NEAR(static_cast<double>(tv.tv_sec), static_cast<double>(::time(nullptr)), 1.0);
  EXPECT_EQ(image_->config().stats.served, 0u);
  EXPECT_EQ(image_->config().stats.fallback, 0u);
}

// With the in-process page (this test binary's own timekeeper), every page
// clock comes from it, inside the kernel's brackets, and is counted.
TEST_F(vdso_image, ServesTheHostPage) {
  timespec warm{};
  vclock_gettime(CLOCK_MONOTONIC, &warm);  // starts the library's timekeeper
  if (vclock::detail::current_source() == vclock::detail::page_source::kernel) {
    GTEST_SKIP() << "no page in this process (the kernel answers vclock here)";
  }
  auto& c = image_->config().config;
  c.host_page = reinterpret_cast<std::uintptr_t>(&vclock::detail::the_page);
  c.ordering = static_cast<std::uint32_t>(vclock::chosen_ordering());
  image_->publish();
  for (const clockid_t clock : page_clocks) {
    // A coarse clock is the last tick's: up to a tick (4 ms at HZ=250)
    // apart from the kernel's coarse reading across a tick. A fine one
    // within the page's bound of the kernel (1 ms: far above it).
    expect_in_brackets(clock, is_coarse(clock) ? 10'000'000 : 1'000'000);
  }
  const std::uint64_t served = image_->config().stats.served;
  EXPECT_EQ(served, std::size(page_clocks));
  timespec ts{};
  EXPECT_EQ(f_.clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts), 0);
  EXPECT_EQ(f_.clock_gettime(12345, &ts), -EINVAL);
  EXPECT_EQ(f_.clock_gettime(CLOCK_MONOTONIC, nullptr), -EFAULT);
  EXPECT_EQ(image_->config().stats.fallback, 3u);
  EXPECT_EQ(image_->config().stats.served, served);
  timeval tv{};
  // The timezone is the kernel's even when the time is the page's.
  struct timezone tz {
    - 1, -1
  };
  struct timezone kernel_tz {};
  syscall(SYS_gettimeofday, nullptr, &kernel_tz);
  ASSERT_EQ(f_.gettimeofday(&tv, &tz), 0);
  EXPECT_EQ(tz.tz_minuteswest, kernel_tz.tz_minuteswest);
  EXPECT_EQ(tz.tz_dsttime, kernel_tz.tz_dsttime);
  EXPECT_NEAR(static_cast<double>(tv.tv_sec), static_cast<double>(::time(nullptr)), 1.0);
  EXPECT_NEAR(static_cast<double>(f_.time(nullptr)), static_cast<double>(::time(nullptr)), 1.0);
  EXPECT_EQ(image_->config().stats.served, served + 2);
}

// The hot path, on a page built here: one ns per tick, cycle_last the
// counter now, and each base 1 ns short of a whole second, so that the
// elapsed time of any read carries into tv_sec (the carry as_timespec
// makes after the counter read). The test's own page, not the process's:
// that one may not be calibrated yet, and a read then goes to the careful
// path, which answers in ns and splits them itself.
TEST_F(vdso_image, HotPathCarriesIntoTheNextSecond) {
  constexpr std::size_t size = (sizeof(vclock::page) + 4095) / 4096 * 4096;
  auto* p = static_cast<vclock::page*>(std::aligned_alloc(4096, size));
  ASSERT_NE(p, nullptr);
  std::memset(static_cast<void*>(p), 0, size);
  vclock::clock_line& l = p->hot;
  l.mult = 1u << 31;  // half a ns per tick (shift 32): whatever the counter's rate, under 1 s
  l.shift = 32;
  l.max_delta = std::uint64_t{1} << 40;
  l.mono_ns = 7 * ns_per_s - 1;
  l.realtime_ns = 9 * ns_per_s - 1;
  l.cycle_last =
      vclock::arch::read_counter<vclock::arch::strongest_ordering>().value - 4;  // >= 2 ns in
  auto& c = image_->config().config;
  c.host_page = reinterpret_cast<std::uintptr_t>(p);
  c.ordering = static_cast<std::uint32_t>(vclock::chosen_ordering());
  image_->publish();
  timespec m{};
  timespec r{};
  ASSERT_EQ(f_.clock_gettime(CLOCK_MONOTONIC, &m), 0);
  ASSERT_EQ(f_.clock_gettime(CLOCK_REALTIME, &r), 0);
  EXPECT_EQ(m.tv_sec, 7);
  EXPECT_GE(m.tv_nsec, 0);
  EXPECT_LT(m.tv_nsec, ns_per_s / 2);
  EXPECT_EQ(r.tv_sec, 9);
  EXPECT_GE(r.tv_nsec, 0);
  EXPECT_LT(r.tv_nsec, ns_per_s / 2);
  EXPECT_EQ(image_->config().stats.served, 2u);
  EXPECT_EQ(image_->config().stats.fallback, 0u);
  timeval tv{};
  ASSERT_EQ(f_.gettimeofday(&tv, nullptr), 0);
  EXPECT_EQ(tv.tv_sec, 9);
  EXPECT_LT(tv.tv_usec, 500'000);
  EXPECT_EQ(image_->config().stats.served, 3u);
  EXPECT_EQ(image_->config().stats.fallback, 0u);
  c.host_page = 0;
  std::free(p);
}

// A namespace page built here (one copy in force, the same line before
// and after the switch point): the image maps the kernel's host time.
class vdso_image_namespace : public vdso_image {
 protected:
  void SetUp() override {
    vdso_image::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ns_ = static_cast<vclock::ns_page*>(std::aligned_alloc(4096, sizeof(vclock::ns_page)));
    std::memset(static_cast<void*>(ns_), 0, sizeof(vclock::ns_page));
    image_->config().config.ns_page = reinterpret_cast<std::uintptr_t>(ns_);
  }
  void TearDown() override { std::free(ns_); }

  // Every family: virtual = v0 + rate * (host - h0), h0 the host clock now.
  void set_line(std::int64_t offset_ns, std::uint64_t rate_q32, clockid_t only_realtime_offset) {
    vclock::ns_params& p = ns_->copies[0];
    p.rate_before_q32 = rate_q32;
    p.rate_after_q32 = rate_q32;
    const clockid_t host_clocks[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME,
                                     CLOCK_REALTIME};
    for (int f = 0; f < vclock::ns_family_count; ++f) {
      const std::int64_t h0 = kernel_ns(host_clocks[f]);
      const std::int64_t off = host_clocks[f] == only_realtime_offset ? offset_ns : 0;
      p.lines[f].before = {h0, h0 + off};
      p.lines[f].after = {INT64_MAX, INT64_MAX};
    }
    image_->publish();
  }

  vclock::ns_page* ns_ = nullptr;
};

TEST_F(vdso_image_namespace, RealtimeOffsetOfOneDay) {
  constexpr std::int64_t day = 86'400 * ns_per_s;
  set_line(day, vclock::rate_one_q32, CLOCK_REALTIME);
  timespec ts{};
  const std::int64_t before = kernel_ns(CLOCK_REALTIME);
  ASSERT_EQ(f_.clock_gettime(CLOCK_REALTIME, &ts), 0);
  const std::int64_t after = kernel_ns(CLOCK_REALTIME);
  EXPECT_GE(timespec_ns(ts), before + day);
  EXPECT_LE(timespec_ns(ts), after + day);
  const long now = static_cast<long>(::time(nullptr));
  EXPECT_NEAR(static_cast<double>(f_.time(nullptr)), static_cast<double>(now + 86'400), 1.0);
  timeval tv{};
  ASSERT_EQ(f_.gettimeofday(&tv, nullptr), 0);
  EXPECT_NEAR(static_cast<double>(tv.tv_sec), static_cast<double>(now + 86'400), 1.0);
  // MONOTONIC is not moved by a REALTIME offset.
  expect_in_brackets(CLOCK_MONOTONIC, 0);
  EXPECT_EQ(image_->config().stats.served, 4u);
}

// A virtual REALTIME before 1970 (an offset past the host's time): the
// image floors, as the kernel would give a negative time: tv_sec -2 and a
// tv_nsec in [0, 1e9) for -1.5 s, not -1 and -0.5 s.
TEST_F(vdso_image_namespace, NegativeTimeFloors) {
  const std::int64_t offset = -kernel_ns(CLOCK_REALTIME) - 1'500'000'000;
  set_line(offset, vclock::rate_one_q32, CLOCK_REALTIME);
  timespec ts{};
  const std::int64_t before = kernel_ns(CLOCK_REALTIME);
  ASSERT_EQ(f_.clock_gettime(CLOCK_REALTIME, &ts), 0);
  const std::int64_t after = kernel_ns(CLOCK_REALTIME);
  EXPECT_GE(ts.tv_nsec, 0);
  EXPECT_LT(ts.tv_nsec, ns_per_s);
  EXPECT_GE(timespec_ns(ts), before + offset);
  EXPECT_LE(timespec_ns(ts), after + offset);
  EXPECT_EQ(ts.tv_sec, -2);  // the test reads within 0.5 s of set_line()
  timeval tv{};
  ASSERT_EQ(f_.gettimeofday(&tv, nullptr), 0);
  EXPECT_EQ(tv.tv_sec, -2);
  EXPECT_GE(tv.tv_usec, 0);
  EXPECT_LT(tv.tv_usec, 1'000'000);
  EXPECT_EQ(f_.time(nullptr), -2);
}

TEST_F(vdso_image_namespace, RateTwo) {
  set_line(0, 2 * vclock::rate_one_q32, -1);
  timespec a{};
  timespec b{};
  const std::int64_t h0 = kernel_ns(CLOCK_MONOTONIC);
  ASSERT_EQ(f_.clock_gettime(CLOCK_MONOTONIC, &a), 0);
  usleep(20'000);
  ASSERT_EQ(f_.clock_gettime(CLOCK_MONOTONIC, &b), 0);
  const std::int64_t h1 = kernel_ns(CLOCK_MONOTONIC);
  const std::int64_t virtual_elapsed = timespec_ns(b) - timespec_ns(a);
  EXPECT_GE(virtual_elapsed, 2 * 20'000'000);
  EXPECT_LE(virtual_elapsed, 2 * (h1 - h0));
}

TEST_F(vdso_image_namespace, Frozen) {
  set_line(0, 0, -1);
  timespec a{};
  timespec b{};
  ASSERT_EQ(f_.clock_gettime(CLOCK_REALTIME, &a), 0);
  usleep(5'000);
  ASSERT_EQ(f_.clock_gettime(CLOCK_REALTIME, &b), 0);
  EXPECT_EQ(timespec_ns(a), timespec_ns(b));
  EXPECT_EQ(f_.clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a), 0);  // CPU time is never moved
  EXPECT_EQ(f_.clock_gettime(-1000, &a), -EINVAL);
}

}  // namespace
