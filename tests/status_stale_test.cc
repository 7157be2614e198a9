// `vclock status` on a stale page: a vclockd stopped (SIGSTOP) leaves its page in counter
// mode, but past its window, and every fine reader answers from the kernel. A new process's
// status must say so (mode fallback, the reason with the page's age, sync_status unknown:
// API.md), and say counter again once the daemon runs on (SIGCONT).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "support/child_process.h"
#include "support/daemon_process.h"
#include "support/emulation.h"
#include "support/page_mode.h"

namespace {

using namespace std::chrono_literals;
using vclock::test::daemon_process;
using vclock::test::temp_dir;

// The value of a JSON field of `vclock status --json` as it is written ("..." for a string).
std::string json_field(const std::string& json, const std::string& name) {
  const std::regex field("\"" + name + "\": (\"[^\"]*\"|[^,\\n]*)");
  std::smatch m;
  return std::regex_search(json, m, field) ? m[1].str() : std::string();
}

vclock::test::program_result status_of(const std::string& page) {
  return vclock::test::run_program({VCLOCK_CLI_PATH, "status", "--json"}, 30s,
                                   {"VCLOCK_PAGE=" + page});
}

TEST(StatusStale, AStoppedDaemonsPageIsReportedAsTheReadersSeeIt) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  daemon_process d(VCLOCKD_PATH, {"--page", path, "--realtime", "off"}, dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  ASSERT_TRUE(vclock::test::wait_for_counter_mode(path)) << d.log();

  const auto fresh = status_of(path);
  ASSERT_EQ(json_field(fresh.output, "source"), "\"shared\"") << fresh.output;
  EXPECT_EQ(json_field(fresh.output, "mode"), "\"counter\"") << fresh.output;
  EXPECT_EQ(json_field(fresh.output, "page_stale"), "false") << fresh.output;

  // Stopped for 300 ms: 75 ticks of 4 ms, far past the window of three.
  ASSERT_EQ(kill(d.pid(), SIGSTOP), 0);
  ASSERT_TRUE(d.wait_until_stopped(5s));
  std::this_thread::sleep_for(300ms);
  const auto stale = status_of(path);
  EXPECT_EQ(json_field(stale.output, "source"), "\"shared\"") << stale.output;
  EXPECT_EQ(json_field(stale.output, "mode"), "\"fallback\"") << stale.output;
  EXPECT_EQ(json_field(stale.output, "counter_mode"), "false") << stale.output;
  EXPECT_EQ(json_field(stale.output, "page_stale"), "true") << stale.output;
  EXPECT_EQ(json_field(stale.output, "sync_status"), "\"unknown\"") << stale.output;
  EXPECT_EQ(json_field(stale.output, "bound_ns"), "-1") << stale.output;
  const std::string reason = json_field(stale.output, "reason");
  std::smatch age;
  ASSERT_TRUE(std::regex_match(
      reason, age, std::regex("\"page stale: vclockd has not updated it for ([0-9]+) ms\"")))
      << stale.output;
  EXPECT_GE(std::stol(age[1].str()), 300) << stale.output;

  // Running again: counter mode at its next publish (within a few ticks; allow for a loaded
  // machine).
  ASSERT_EQ(kill(d.pid(), SIGCONT), 0);
  vclock::test::program_result again;
  for (int attempt = 0; attempt < 50; ++attempt) {
    again = status_of(path);
    if (json_field(again.output, "mode") == "\"counter\"") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(json_field(again.output, "mode"), "\"counter\"") << again.output;
  EXPECT_EQ(json_field(again.output, "page_stale"), "false") << again.output;
  EXPECT_EQ(json_field(again.output, "reason"), "\"\"") << again.output;
  EXPECT_NE(json_field(again.output, "sync_status"), "\"unknown\"") << again.output;

  EXPECT_EQ(d.stop(SIGTERM), 0) << d.log();
}

}  // namespace
