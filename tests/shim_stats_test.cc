// VCLOCK_SHIM_STATS through a real vclockd: per-thread counts (shim_stats.h) lose no call,
// also of threads that end before the process, of more threads than the table has slots
// (later ones take over the slots of ended ones), and of a child after fork (a line of its
// own); and calls that a stopped daemon's stale page cannot answer are forwarded.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
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

struct stats_line {
  bool found = false;
  std::string source;
  long long served = 0;
  long long forwarded = 0;
  std::string text;
};

stats_line line_of(const std::string& stats_path, long long pid) {
  std::ifstream in(stats_path);
  const std::regex re("\\{\"pid\": " + std::to_string(pid) +
                      ", \"exe\": \"[^\"]*\", \"source\": \"([a-z-]+)\", \"served\": ([0-9]+), "
                      "\"forwarded\": ([0-9]+)\\}");
  stats_line out;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, re)) {
      out = {true, m[1].str(), std::stoll(m[2].str()), std::stoll(m[3].str()), line};
    }
  }
  return out;
}

struct probe_run {
  long long pid = 0, calls = 0, child_calls = 0, child_pid = 0;
  std::string output;
};

probe_run run_probe(const std::string& page, const std::string& stats, const char* threads,
                    const char* calls, const char* child_calls) {
  probe_run r;
  const auto result =
      vclock::test::run_program({VCLOCK_STATS_PROBE_PATH, threads, calls, child_calls}, 120s,
                                {std::string("LD_PRELOAD=") + VCLOCK_SHIM_PATH,
                                 "VCLOCK_PAGE=" + page, "VCLOCK_SHIM_STATS=" + stats});
  r.output = result.output;
  std::smatch m;
  if (result.status == 0 &&
      std::regex_search(result.output, m,
                        std::regex("pid ([0-9]+) calls ([0-9]+) child_calls ([0-9]+) "
                                   "child_pid ([0-9]+)"))) {
    r.pid = std::stoll(m[1].str());
    r.calls = std::stoll(m[2].str());
    r.child_calls = std::stoll(m[3].str());
    r.child_pid = std::stoll(m[4].str());
  }
  return r;
}

TEST(ShimStats, CountsEveryThreadsCallsEndedThreadsAndForkedChildrenIncluded) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string page = dir.file("page");
  const std::string stats = dir.file("stats");
  daemon_process d(VCLOCKD_PATH, {"--page", page, "--realtime", "off"}, dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  ASSERT_TRUE(vclock::test::wait_for_counter_mode(page)) << d.log();

  // 300 threads in waves of 100: the third wave finds 56 free slots and takes over 44.
  const probe_run r = run_probe(page, stats, "300", "1000", "5000");
  ASSERT_GT(r.pid, 0) << r.output;
  const stats_line parent = line_of(stats, r.pid);
  ASSERT_TRUE(parent.found) << r.output;
  EXPECT_EQ(parent.source, "shared") << parent.text;
  // Every call counted once: none lost, none twice. (Served unless the daemon was held off
  // its CPU for three ticks meanwhile, which forwards a few: the sum is what must hold.)
  EXPECT_EQ(parent.served + parent.forwarded, r.calls) << parent.text;
  EXPECT_GT(parent.served, r.calls / 2) << parent.text;
  const stats_line child = line_of(stats, r.child_pid);
  ASSERT_TRUE(child.found) << r.output;
  EXPECT_EQ(child.served + child.forwarded, r.child_calls) << child.text;
  EXPECT_GT(child.served, 0) << child.text;

  EXPECT_EQ(d.stop(SIGTERM), 0) << d.log();
}

TEST(ShimStats, CallsAStoppedDaemonsPageCannotAnswerAreForwarded) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string page = dir.file("page");
  const std::string stats = dir.file("stats");
  daemon_process d(VCLOCKD_PATH, {"--page", page, "--realtime", "off"}, dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  ASSERT_TRUE(vclock::test::wait_for_counter_mode(page)) << d.log();
  ASSERT_EQ(kill(d.pid(), SIGSTOP), 0);
  ASSERT_TRUE(d.wait_until_stopped(5s));
  std::this_thread::sleep_for(100ms);  // 25 ticks: far past the page's window of three

  const probe_run r = run_probe(page, stats, "0", "1000", "0");
  ASSERT_GT(r.pid, 0) << r.output;
  const stats_line line = line_of(stats, r.pid);
  ASSERT_TRUE(line.found) << r.output;
  EXPECT_EQ(line.source, "shared") << line.text;
  EXPECT_EQ(line.served, 0) << line.text;
  EXPECT_EQ(line.forwarded, r.calls) << line.text;

  ASSERT_EQ(kill(d.pid(), SIGCONT), 0);
  EXPECT_EQ(d.stop(SIGTERM), 0) << d.log();
}

}  // namespace
