// The coarse clocks while every CPU is busy (docs/design.md, "Coarse clocks under
// saturation"). A process keeps all CPUs busy with threads that read clocks, for 2 s
// (coarse_saturation/saturation_probe.cc), and compares how far the coarse MONOTONIC clock
// lags the kernel's fine one, for vclock's and for the kernel's own coarse clock, in the same
// reads. vclockd at SCHED_FIFO promises the kernel's lag + 1 ms: its updates preempt every
// normal thread. The in-process timekeeper is a normal thread, which a saturated machine keeps
// waiting for as long as its scheduler does: its figures are printed, not checked.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <regex>
#include <string>

#include "support/child_process.h"
#include "support/daemon_process.h"
#include "support/emulation.h"
#include "support/page_mode.h"

namespace {

using namespace std::chrono_literals;
using vclock::test::daemon_process;
using vclock::test::temp_dir;

constexpr std::int64_t promised_extra_ns = 1'000'000;  // the kernel's lag + 1 ms

struct saturation {
  bool ok = false;
  long long vclock_max = 0, kernel_max = 0, vclock_p999 = 0, kernel_p999 = 0;
  std::string output;
};

saturation saturate(const std::string& page) {
  saturation s;
  const auto r =
      vclock::test::run_program({VCLOCK_SATURATION_PROBE_PATH, "2"}, 60s, {"VCLOCK_PAGE=" + page});
  s.output = r.output;
  std::smatch m;
  if (r.status == 0 &&
      std::regex_search(r.output, m,
                        std::regex("vclock_max_ns ([0-9]+) kernel_max_ns ([0-9]+) "
                                   "vclock_p999_ns ([0-9]+) kernel_p999_ns ([0-9]+)"))) {
    s.ok = true;
    s.vclock_max = std::stoll(m[1].str());
    s.kernel_max = std::stoll(m[2].str());
    s.vclock_p999 = std::stoll(m[3].str());
    s.kernel_p999 = std::stoll(m[4].str());
  }
  return s;
}

TEST(CoarseSaturation, VclockdsCoarseClocksLagNoMoreThanTheKernelsPlusOneMs) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string page = dir.file("page");
  daemon_process d(VCLOCKD_PATH, {"--page", page}, dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  ASSERT_TRUE(vclock::test::wait_for_counter_mode(page)) << d.log();
  if (d.log().find("real-time scheduling: SCHED_FIFO") == std::string::npos) {
    d.stop(SIGTERM);
    GTEST_SKIP() << "vclockd could not take SCHED_FIFO (not root, or RLIMIT_RTPRIO 0): the "
                    "promise is for a real-time vclockd";
  }
  // One run, and a second only where the first broke the promise. A vCPU that vanishes while
  // vclockd's thread is inside the few stores of an update (docs/design.md, "A vanish inside
  // a tick") holds the coarse line for the vanish, ~100 ms: rare, and documented (no run of
  // 41 by hand showed one). A vclockd that does not keep up under saturation breaks it in
  // every run: the in-process timekeeper below, a normal thread, lags 10-20 ms here.
  saturation s;
  for (int run = 1; run <= 2; ++run) {
    s = saturate(page);
    ASSERT_TRUE(s.ok) << s.output;
    std::cout << "vclockd (SCHED_FIFO), run " << run << ": " << s.output;
    if (s.vclock_max <= s.kernel_max + promised_extra_ns &&
        s.vclock_p999 <= s.kernel_p999 + promised_extra_ns) {
      break;
    }
  }
  EXPECT_LE(s.vclock_max, s.kernel_max + promised_extra_ns) << s.output;
  EXPECT_LE(s.vclock_p999, s.kernel_p999 + promised_extra_ns) << s.output;
  EXPECT_EQ(d.stop(SIGTERM), 0) << d.log();

  // For the record (docs/design.md): the in-process timekeeper in the same conditions.
  const saturation in_process = saturate("off");
  ASSERT_TRUE(in_process.ok) << in_process.output;
  std::cout << "in-process timekeeper: " << in_process.output;
}

}  // namespace
