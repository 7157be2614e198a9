// Issue 20: a stopped, preempted or restarted vclockd costs its readers nothing. The real
// daemon is stopped (SIGSTOP) for 0.05, 0.2 and 1 s, then killed and restarted on the same
// page, while two reader threads read its page the library's way, each reading bracketed by
// two kernel reads. A writer that relearns its rate after a stall (the bug this test was
// written for) leaves seconds of p99 errors near 1 us, or, while relearning, readers that the
// kernel answers; a reader that waits on a stopped writer shows in the call durations.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/kernel_clock.h"
#include "support/daemon_process.h"
#include "support/emulation.h"
#include "support/mapped_page.h"
#include "support/page_mode.h"
#include "support/sanitizers.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/page.h"

namespace {

using namespace std::chrono_literals;
using vclock::detail::clock_kind;
using vclock::test::daemon_process;
using vclock::test::mapped_page;
using vclock::test::temp_dir;

// Errors in 1 ns bins up to 4 us, call durations in 100 ns bins up to 400 us; the last bin
// of each holds everything beyond.
constexpr std::size_t error_bins = 4096;
constexpr std::size_t duration_bins = 4096;
constexpr std::int64_t duration_bin_ns = 100;

struct window {
  std::array<std::uint64_t, error_bins> error{};
  std::array<std::uint64_t, duration_bins> duration{};
  std::uint64_t readings = 0;
  std::uint64_t kernel_answers = 0;
  std::int64_t max_error = 0;

  void add(std::int64_t err, std::int64_t took, bool kernel_answered) {
    ++readings;
    kernel_answers += kernel_answered ? 1 : 0;
    max_error = std::max(max_error, err);
    ++error[static_cast<std::size_t>(std::clamp<std::int64_t>(err, 0, error_bins - 1))];
    ++duration[static_cast<std::size_t>(
        std::clamp<std::int64_t>(took / duration_bin_ns, 0, duration_bins - 1))];
  }
  void merge(const window& w) {
    for (std::size_t i = 0; i < error_bins; ++i) error[i] += w.error[i];
    for (std::size_t i = 0; i < duration_bins; ++i) duration[i] += w.duration[i];
    readings += w.readings;
    kernel_answers += w.kernel_answers;
    max_error = std::max(max_error, w.max_error);
  }
  template <std::size_t n>
  static std::int64_t percentile(const std::array<std::uint64_t, n>& h, std::uint64_t total,
                                 double q, std::int64_t bin_ns) {
    const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < n; ++i) {
      seen += h[i];
      if (seen > rank) return static_cast<std::int64_t>(i) * bin_ns;
    }
    return static_cast<std::int64_t>(n) * bin_ns;
  }
  std::int64_t error_p99() const { return percentile(error, readings, 0.99, 1); }
  std::int64_t duration_p9999() const {
    return percentile(duration, readings, 0.9999, duration_bin_ns) + duration_bin_ns;
  }
  double kernel_share() const {
    return readings == 0 ? 0.0
                         : static_cast<double>(kernel_answers) / static_cast<double>(readings);
  }
};

// The phases of the run; readers file each reading under the phase current when it began.
enum phase : int {
  settling,
  undisturbed,
  stopped_50ms,
  after_50ms,
  stopped_200ms,
  after_200ms,
  stopped_1s,
  after_1s,
  restarting,
  after_restart,
  phase_count
};
constexpr std::array<const char*, phase_count> phase_names{
    "settling",    "undisturbed", "stopped 0.05 s", "after 0.05 s", "stopped 0.2 s",
    "after 0.2 s", "stopped 1 s", "after 1 s",      "restarting",   "after restart"};

class bracketed_readers {
 public:
  bracketed_readers(const vclock::page& p, int threads) : page_(p) {
    windows_.resize(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i) {
      pool_.emplace_back([this, i] { run(windows_[static_cast<std::size_t>(i)]); });
    }
  }
  ~bracketed_readers() { stop(); }
  bracketed_readers(const bracketed_readers&) = delete;
  bracketed_readers& operator=(const bracketed_readers&) = delete;

  void enter(phase p) { phase_.store(p, std::memory_order_relaxed); }
  void stop() {
    stop_.store(true);
    for (std::thread& t : pool_) {
      if (t.joinable()) t.join();
    }
  }
  window total(phase p) const {
    window w;
    for (const auto& per_thread : windows_) w.merge((*per_thread)[static_cast<std::size_t>(p)]);
    return w;
  }
  long backwards() const { return backwards_.load(); }

 private:
  using windows = std::array<window, phase_count>;

  void run(std::unique_ptr<windows>& mine) {
    mine = std::make_unique<windows>();
    std::int64_t last = 0;
    constexpr auto ordered = vclock::arch::strongest_ordering;
    const auto counter = [] { return vclock::arch::read_counter<ordered>(); };
    while (!stop_.load(std::memory_order_relaxed)) {
      const int p = phase_.load(std::memory_order_relaxed);
      bool kernel_answered = false;
      const std::int64_t k1 = vclock::kernel::now_ns(CLOCK_MONOTONIC);
      const std::int64_t v = vclock::detail::read_fast<clock_kind::monotonic>(page_, counter, [&] {
        return vclock::detail::read_careful<clock_kind::monotonic>(page_, counter, [&] {
          kernel_answered = true;
          return vclock::kernel::now_ns(CLOCK_MONOTONIC);
        });
      });
      const std::int64_t k2 = vclock::kernel::now_ns(CLOCK_MONOTONIC);
      const std::int64_t err = v < k1 ? k1 - v : (v > k2 ? v - k2 : 0);
      (*mine)[static_cast<std::size_t>(p)].add(err, k2 - k1, kernel_answered);
      if (v < last) backwards_.fetch_add(1);
      last = std::max(last, v);
    }
  }

  const vclock::page& page_;
  std::vector<std::unique_ptr<windows>> windows_;
  std::vector<std::thread> pool_;
  std::atomic<int> phase_{settling};
  std::atomic<bool> stop_{false};
  std::atomic<long> backwards_{0};
};

std::vector<std::string> daemon_args(const std::string& page_path) {
  return {"--page", page_path, "--realtime", "off"};
}

// The limits. Error: issue 20 asks p99 <= 200 ns in the second after each resume and max
// <= 1 us over the run; undisturbed, this machine's kvm-clock page reads p99 ~26 ns, max
// ~100 ns (docs/performance.md). Kernel answers: a writer that keeps its rate is back on the
// counter at its first tick after SIGCONT (4 ms of a 1 s window, < 1 %; 5 % leaves room for
// a late wake-up on a loaded 2-CPU VM); one that relearns its rate needs a calibration
// (~0.5 s: 7-43 % of the window). Call durations: the issue asks for the undisturbed
// p99.99 of the same run; on a shared 2-vCPU VM the p99.99 of one second of two threads
// is a scheduling tail (~20 us either way), so twice that plus 20 us is the limit, while a
// reader that waited on the stopped writer would show the stop itself (>= 50 ms).
constexpr std::int64_t max_error_ns = 1'000;
constexpr std::int64_t error_p99_limit_ns = 200;
constexpr double kernel_share_limit = 0.05;
// After a restart the new writer takes the page over and checks the rate it inherits before
// it counts: 0-1.6 % of the window in dev builds, 6.85 % once in a clean-clone release run
// (~70 ms). 10 % still fails a writer that recalibrates from scratch there (~0.5 s); the
// mutant that relearns after every stall is caught by the resumes' 5 %.
constexpr double kernel_share_after_restart_limit = 0.10;

TEST(DaemonStall, ReadersKeepFullAccuracyThroughStopsAndARestart) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  auto d = std::make_unique<daemon_process>(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d->wait_for_notification("READY=1", 30s)) << d->log();
  mapped_page m(path);
  ASSERT_NE(m.get(), nullptr);
  ASSERT_TRUE(m.wait_for_counter_mode()) << d->log();
  bracketed_readers r(*m.get(), 2);
  std::this_thread::sleep_for(1s);  // the rate refines for a while after calibration
  r.enter(undisturbed);
  std::this_thread::sleep_for(1s);
  const std::array<std::pair<phase, std::chrono::milliseconds>, 3> stops{
      {{stopped_50ms, 50ms}, {stopped_200ms, 200ms}, {stopped_1s, 1000ms}}};
  for (const auto& [stopped, how_long] : stops) {
    r.enter(stopped);
    ASSERT_EQ(kill(d->pid(), SIGSTOP), 0);
    std::this_thread::sleep_for(how_long);
    ASSERT_EQ(kill(d->pid(), SIGCONT), 0);
    r.enter(static_cast<phase>(stopped + 1));
    std::this_thread::sleep_for(1s);
  }
  r.enter(restarting);
  d->stop(SIGKILL);
  d = std::make_unique<daemon_process>(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d->wait_for_notification("READY=1", 30s)) << d->log();
  r.enter(after_restart);
  std::this_thread::sleep_for(1s);
  r.stop();

  const window calm = r.total(undisturbed);
  ASSERT_GT(calm.readings, 10'000u);
  std::int64_t worst = 0;
  for (int p = settling; p < phase_count; ++p) {
    const window w = r.total(static_cast<phase>(p));
    std::printf("%-15s readings %9" PRIu64 "  error p99 %4" PRId64 " max %5" PRId64
                " ns  kernel %5.2f %%  call p99.99 %7" PRId64 " ns\n",
                phase_names[static_cast<std::size_t>(p)], w.readings, w.error_p99(), w.max_error,
                100.0 * w.kernel_share(), w.duration_p9999());
    worst = std::max(worst, w.max_error);
  }
  EXPECT_EQ(r.backwards(), 0) << "a reader's MONOTONIC went backwards";
  EXPECT_LE(worst, max_error_ns) << "max error over the run";
  const std::int64_t call_limit = 2 * calm.duration_p9999() + 20'000;
  for (const phase p : {after_50ms, after_200ms, after_1s, after_restart}) {
    const window w = r.total(p);
    const char* name = phase_names[static_cast<std::size_t>(p)];
    ASSERT_GT(w.readings, 1'000u) << name;
    EXPECT_LE(w.error_p99(), error_p99_limit_ns) << name;
    EXPECT_LE(w.kernel_share(),
              p == after_restart ? kernel_share_after_restart_limit : kernel_share_limit)
        << name << ": readers answered by the kernel (the writer relearning its rate?)";
    EXPECT_LE(w.duration_p9999(), call_limit) << name << ": readers waited";
  }
}

}  // namespace
