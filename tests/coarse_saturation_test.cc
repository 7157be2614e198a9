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
#include <cstdlib>
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
  // A known failure, open in issue 20 (docs/design.md, "A vanish inside a tick"): a 2-vCPU
  // guest loses one vCPU at a time for ~100 ms under saturation; vclockd's standby tickers
  // take the ticks then, unless the vCPU vanished inside a tick (holding the tick's lock):
  // 1 of 27 vanishes at load 8 on 2026-12-06, enough to fail some runs. Skipped, and listed
  // in tools/expected-skips, until that is closed; VCLOCK_TEST_KNOWN_FAILURES=1 runs it.
  const char* known = std::getenv("VCLOCK_TEST_KNOWN_FAILURES");
  if (known == nullptr || std::string(known) != "1") {
    GTEST_SKIP() << "known failure (issue 20): a vCPU that vanishes inside vclockd's tick stops "
                    "the coarse line for ~100 ms under saturation; VCLOCK_TEST_KNOWN_FAILURES=1 "
                    "runs it";
  }
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
  const saturation s = saturate(page);
  ASSERT_TRUE(s.ok) << s.output;
  std::cout << "vclockd (SCHED_FIFO): " << s.output;
  EXPECT_LE(s.vclock_max, s.kernel_max + promised_extra_ns) << s.output;
  EXPECT_LE(s.vclock_p999, s.kernel_p999 + promised_extra_ns) << s.output;
  EXPECT_EQ(d.stop(SIGTERM), 0) << d.log();

  // For the record (docs/design.md): the in-process timekeeper in the same conditions.
  const saturation in_process = saturate("off");
  ASSERT_TRUE(in_process.ok) << in_process.output;
  std::cout << "in-process timekeeper: " << in_process.output;
}

}  // namespace
