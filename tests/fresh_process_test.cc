// Issue 20: a process's first readings are as good as its later ones. Each of 20 fresh
// processes starts its own timekeeper (VCLOCK_PAGE=off) and reports the error of its first
// 100 ms of counter-mode readings against the kernel's bracket (tests/fresh_process). A
// timekeeper that entered counter mode with its rate still ~9 ppm off (the bug this was
// written for) drifted ~0.9 us in those 100 ms.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "support/child_process.h"
#include "support/daemon_process.h"
#include "support/emulation.h"

namespace {

using vclock::test::exec_args;
using vclock::test::temp_dir;

// Issue 20's target. Settled, the in-process page reads p99 ~26 ns and max < 100 ns on this
// project's VMs (docs/performance.md); the bracket itself is ~40-110 ns wide, and a reading
// inside it counts as error 0, so 200 ns leaves room for one noisy calibration sample but not
// for a rate a few ppm off.
constexpr long long first_readings_max_error_ns = 200;
constexpr int processes = 20;

struct probe_result {
  long long counter_mode_after_ms = -1;
  long long readings = 0;
  long long max_error_ns = -1;
  long long p99_error_ns = -1;
};

bool run_probe(const std::string& out_path, probe_result& r, std::string& text) {
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return false;
  const exec_args args({VCLOCK_FRESH_PROCESS_PROBE_PATH, "100"}, {"VCLOCK_PAGE=off"});
  const pid_t pid = args.spawn(out, STDOUT_FILENO);
  close(out);
  if (pid < 0) return false;
  const int status = vclock::test::wait_with_watchdog(pid, std::chrono::seconds(60));
  text.clear();
  if (FILE* f = std::fopen(out_path.c_str(), "r")) {
    char line[256] = {};
    if (std::fgets(line, sizeof(line), f) != nullptr) text = line;
    std::fclose(f);
  }
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
  return std::sscanf(text.c_str(),
                     "counter_mode_after_ms %lld readings %lld max_error_ns %lld p99_error_ns %lld",
                     &r.counter_mode_after_ms, &r.readings, &r.max_error_ns, &r.p99_error_ns) == 4;
}

TEST(FreshProcess, FirstCounterReadingsAreAccurate) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  for (int i = 0; i < processes; ++i) {
    probe_result r;
    std::string text;
    ASSERT_TRUE(run_probe(dir.file("probe.out"), r, text)) << "process " << i << ": " << text;
    std::printf(
        "process %2d: counter mode after %lld ms, %lld readings, error max %lld p99 %lld ns\n", i,
        r.counter_mode_after_ms, r.readings, r.max_error_ns, r.p99_error_ns);
    EXPECT_GT(r.readings, 1000) << "process " << i;
    EXPECT_LE(r.max_error_ns, first_readings_max_error_ns) << "process " << i << ": " << text;
  }
}

}  // namespace
