// Issue 10: vclockd as a real process (started and stopped by pid, reaped on failure), its
// page as readers see it (mapped read-only, read with the library's own reader code), and the
// attach checks on pages that are short, foreign, loose, stale or garbage.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "lib/kernel_clock.h"
#include "lib/page_identity.h"
#include "lib/shared_page.h"
#include "support/child_process.h"
#include "support/daemon_process.h"
#include "support/emulation.h"
#include "support/mapped_page.h"
#include "support/page_mode.h"
#include "support/sanitizers.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/page.h"

namespace {

using namespace std::chrono_literals;
using vclock::machine_identity;
using vclock::page;
using vclock::page_refusal;
using vclock::detail::clock_kind;
using vclock::test::daemon_process;
using vclock::test::mapped_page;
using vclock::test::temp_dir;

constexpr std::int64_t tolerance_ns = 50'000;  // functional (sanitizer builds are slow)

ino_t inode_of(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// Reader threads on a mapped page: every reading bracketed by the kernel (within tolerance)
// and never below the same thread's previous one. A reader must never wait on the daemon; the
// read path has no system call that can block, so such a wait is spinning, and shows as the
// thread's own CPU time in one reading (busiest_ns). Wall time in one reading (slowest_ns)
// also counts the thread's preemption, which a loaded 2-core CI machine stretched to 116 ms.
class readers {
 public:
  readers(const mapped_page& page, int threads) : page_(page) {
    for (int i = 0; i < threads; ++i) pool_.emplace_back([this] { run(); });
  }
  ~readers() { stop(); }
  void stop() {
    stop_.store(true);
    for (std::thread& t : pool_) {
      if (t.joinable()) t.join();
    }
  }
  long failures() const { return failures_.load(); }
  long readings() const { return readings_.load(); }
  std::int64_t slowest_ns() const { return slowest_.load(); }
  std::int64_t busiest_ns() const { return busiest_.load(); }
  std::string first_failure() const { return first_failure_; }

 private:
  void run() {
    std::int64_t last = 0;
    long n = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      const std::int64_t c1 = vclock::kernel::now_ns(CLOCK_THREAD_CPUTIME_ID);
      const std::int64_t k1 = vclock::kernel::now_ns(CLOCK_MONOTONIC);
      const std::int64_t v = page_.monotonic();
      const std::int64_t k2 = vclock::kernel::now_ns(CLOCK_MONOTONIC);
      const std::int64_t c2 = vclock::kernel::now_ns(CLOCK_THREAD_CPUTIME_ID);
      ++n;
      keep_max(slowest_, k2 - k1);
      keep_max(busiest_, c2 - c1);
      if (v < last || v < k1 - tolerance_ns || v > k2 + tolerance_ns) {
        if (failures_.fetch_add(1) == 0) {
          const page& p = *page_.get();
          first_failure_ =
              "reading " + std::to_string(v) + " after " + std::to_string(last) + ", kernel [" +
              std::to_string(k1) + ", " + std::to_string(k2) + "]; page now: hot seq " +
              std::to_string(p.hot.seq) + " max_delta " + std::to_string(p.hot.max_delta) +
              ", backup seq " + std::to_string(p.backup.seq) + ", mode " +
              std::to_string(p.mode_reason) + ", lead " + std::to_string(p.lead_ns) + " lag " +
              std::to_string(p.lag_ns) + ", updates " + std::to_string(p.updates);
        }
      }
      last = std::max(last, v);
    }
    readings_.fetch_add(n);
  }
  static void keep_max(std::atomic<std::int64_t>& max, std::int64_t value) {
    std::int64_t cur = max.load();
    while (value > cur && !max.compare_exchange_weak(cur, value)) {
    }
  }
  const mapped_page& page_;
  std::vector<std::thread> pool_;
  std::atomic<bool> stop_{false};
  std::atomic<long> failures_{0};
  std::atomic<long> readings_{0};
  std::atomic<std::int64_t> slowest_{0};
  std::atomic<std::int64_t> busiest_{0};
  std::string first_failure_;
};

// A page-aligned target for attach_shared_page(): an anonymous mapping, so a MAP_FIXED over it
// touches nothing else.
class attach_target {
 public:
  attach_target() {
    void* m = mmap(nullptr, vclock::page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    p_ = m == MAP_FAILED ? nullptr : static_cast<page*>(m);
  }
  ~attach_target() {
    if (p_ != nullptr) munmap(p_, vclock::page_bytes);
  }
  attach_target(const attach_target&) = delete;
  attach_target& operator=(const attach_target&) = delete;
  page* get() { return p_; }

 private:
  page* p_ = nullptr;
};

std::vector<std::string> daemon_args(const std::string& page_path) {
  return {"--page", page_path, "--realtime", "off"};
}

// --- the daemon as a process -----------------------------------------------------------------

TEST(Daemon, PublishesAPageThatAClientAttachesTo) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  daemon_process d(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();

  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_size, static_cast<off_t>(vclock::page_bytes));
  EXPECT_EQ(st.st_uid, geteuid());

  mapped_page m(path);
  ASSERT_NE(m.get(), nullptr);
  EXPECT_EQ(m.get()->header.magic, vclock::page_magic);
  EXPECT_EQ(m.get()->header.abi_major, vclock::page_abi_major);
  EXPECT_EQ(m.get()->header.writer_pid, d.pid());
  ASSERT_TRUE(m.wait_for_counter_mode()) << d.log();

  // A client process attaches: `vclock status` reports the shared page and its daemon, and the
  // counter answers at once (no calibration of its own).
  const auto status = vclock::test::run_program({VCLOCK_CLI_PATH, "status", "--json"}, 30s,
                                                {"VCLOCK_PAGE=" + path});
  EXPECT_NE(status.output.find("\"source\": \"shared\""), std::string::npos) << status.output;
  EXPECT_NE(status.output.find("\"daemon_pid\": " + std::to_string(d.pid())), std::string::npos)
      << status.output;
  EXPECT_NE(status.output.find("\"counter_mode\": true"), std::string::npos) << status.output;

  // A program whose first call is in a signal handler, attached.
  const auto probe = vclock::test::run_program({VCLOCK_FIRST_CALL_PROBE_PATH, "malloc"}, 30s,
                                               {"VCLOCK_PAGE=" + path});
  EXPECT_EQ(probe.status, 0) << probe.output;

  EXPECT_EQ(d.stop(SIGTERM), 0) << d.log();
  EXPECT_EQ(vclock::detail::load(m.get()->hot.max_delta), 0u) << "a clean stop turns the page off";
  EXPECT_EQ(m.get()->mode_reason,
            static_cast<std::uint32_t>(vclock::fallback_reason::daemon_stopped));
}

// API.md: READY=1 "after its first calibrated publish": at READY the page answers from the
// counter, so a unit ordered after vclockd gets the page's accuracy from its first call.
TEST(Daemon, ReadyMeansTheCounterIsCalibrated) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  const auto started = std::chrono::steady_clock::now();
  daemon_process d(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  const auto ready_after = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  mapped_page m(path);
  ASSERT_NE(m.get(), nullptr);
  EXPECT_EQ(static_cast<vclock::fallback_reason>(m.get()->mode_reason),
            vclock::fallback_reason::none)
      << "mode " << m.get()->mode_reason << " at READY=1: " << d.log();
  EXPECT_EQ(m.get()->header.writer_pid, d.pid());
  // The log says so in that order: calibrated, then ready.
  const std::string log = d.log();
  const auto calibrated_at = log.find("calibrated: counter");
  const auto ready_at = log.find("vclockd: ready");
  ASSERT_NE(calibrated_at, std::string::npos) << log;
  ASSERT_NE(ready_at, std::string::npos) << log;
  EXPECT_LT(calibrated_at, ready_at) << log;
  readers r(m, 2);
  std::this_thread::sleep_for(20ms);
  r.stop();
  EXPECT_EQ(r.failures(), 0) << r.first_failure();
  EXPECT_GT(r.readings(), 1000);
  std::printf("READY=1 %lld ms after start, in counter mode\n",
              static_cast<long long>(ready_after.count()));
  RecordProperty("ready_after_ms", std::to_string(ready_after.count()));
}

// A counter refused for good (here by VCLOCK_COUNTER=distrust) has nothing to calibrate: READY=1
// comes with the page in fallback mode, saying why, rather than never.
TEST(Daemon, ReadyComesAtOnceWhenTheCounterIsRefused) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  daemon_process d(VCLOCKD_PATH, daemon_args(path), dir.path(), {"VCLOCK_COUNTER=distrust"});
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  mapped_page m(path);
  ASSERT_NE(m.get(), nullptr);
  EXPECT_EQ(static_cast<vclock::fallback_reason>(m.get()->mode_reason),
            vclock::fallback_reason::disabled)
      << d.log();
  EXPECT_NE(d.log().find("counter not used"), std::string::npos) << d.log();
}

TEST(Daemon, UsageErrorsExitTwoWithOneLine) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--no-such-option"}, {"--tick-us", "0"}, {"--bound-source", "gps"}, {"--page"}}) {
    temp_dir dir;
    daemon_process d(VCLOCKD_PATH, args, dir.path());
    const int status = d.stop(0, 10s);  // signal 0: just wait for it to exit
    ASSERT_TRUE(WIFEXITED(status)) << args[0];
    EXPECT_EQ(WEXITSTATUS(status), 2) << args[0];
    const std::string log = d.log();
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_EQ(log.rfind("vclockd: ", 0), 0u) << log;
  }
}

TEST(Daemon, ASecondDaemonOnThePageRefusesAndNamesTheFirst) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  daemon_process first(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(first.wait_for_notification("READY=1", 30s)) << first.log();
  daemon_process second(VCLOCKD_PATH, daemon_args(path), dir.path());
  const int status = second.stop(0, 10s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(second.log().find("pid " + std::to_string(first.pid())), std::string::npos)
      << second.log();
  EXPECT_FALSE(first.has_exited());
}

// Restarts (clean and kill -9) while readers run, in this process and in `vclock warp`
// attached to the page: the same inode, never a step back, no warp, the counter again after
// each restart.
TEST(Daemon, RestartsKeepTheInodeAndReadersNeverGoBack) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  auto d = std::make_unique<daemon_process>(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d->wait_for_notification("READY=1", 30s)) << d->log();
  const ino_t inode = inode_of(path);
  mapped_page m(path);
  ASSERT_NE(m.get(), nullptr);
  daemon_process warp(VCLOCK_CLI_PATH, {"warp", "--seconds", "2", "--threads", "2"}, dir.path(),
                      {"VCLOCK_PAGE=" + path});
  readers r(m, 2);
  // Under TSan each daemon takes ~0.7 s to start: six restarts there, every pairing of signal
  // and pause once (2 x 3); twenty in the other presets.
#if defined(VCLOCK_TEST_TSAN)
  constexpr int restarts = 6;
#else
  constexpr int restarts = 20;
#endif
  for (int i = 0; i < restarts; ++i) {
    const int signo = i % 2 == 0 ? SIGTERM : SIGKILL;
    d->stop(signo);
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + 7 * (i % 3)));
    d = std::make_unique<daemon_process>(VCLOCKD_PATH, daemon_args(path), dir.path());
    ASSERT_TRUE(d->wait_for_notification("READY=1", 30s)) << "restart " << i << ": " << d->log();
    EXPECT_EQ(inode_of(path), inode) << "restart " << i;
    EXPECT_NE(d->log().find("continuing the existing page"), std::string::npos) << d->log();
  }
  EXPECT_TRUE(m.wait_for_counter_mode()) << d->log();
  r.stop();
  EXPECT_EQ(r.failures(), 0) << r.first_failure();
  EXPECT_GT(r.readings(), 1000);
  const int warp_status = warp.stop(0, 30s);  // signal 0: wait for its own end
  ASSERT_TRUE(WIFEXITED(warp_status)) << warp.log();
  EXPECT_EQ(WEXITSTATUS(warp_status), 0) << "vclock warp saw an ordered clock warp:\n"
                                         << warp.log();
}

// The daemon stops itself (test hook) inside an update, between turning the hot line odd and
// freezing the backup: both seqs odd, the one place where readers wait. They wait a bounded
// time, then go on; kill -9 there; a restarted daemon finishes the half-written update.
TEST(Daemon, KilledMidUpdateNeverBlocksReaders) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  auto d =
      std::make_unique<daemon_process>(VCLOCKD_PATH, daemon_args(path), dir.path(),
                                       std::vector<std::string>{"VCLOCKD_TEST_STOP_IN_UPDATE=20"});
  ASSERT_TRUE(d->wait_until_stopped(10s)) << d->log();
  mapped_page m(path);
  ASSERT_NE(m.get(), nullptr);
  EXPECT_EQ(m.get()->hot.seq & 1u, 1u) << "stopped mid-update";
  EXPECT_EQ(m.get()->backup.seq & 1u, 1u) << "before the backup was frozen";
  {
    readers r(m, 2);
    std::this_thread::sleep_for(100ms);  // past the validity window, still stopped
    d->stop(SIGKILL);
    std::this_thread::sleep_for(50ms);
    r.stop();
    EXPECT_EQ(r.failures(), 0) << r.first_failure();
    EXPECT_GT(r.readings(), 100);
    // The first reader to find the writer stuck spins at most max_spins pauses (well under a
    // millisecond); none waits for the daemon itself (it is dead). 20 ms of one reading's own
    // CPU time is a reader spinning on the stopped writer, not a preempted one.
    std::printf("slowest reading %lld ns wall, %lld ns on the reader's CPU time\n",
                static_cast<long long>(r.slowest_ns()), static_cast<long long>(r.busiest_ns()));
    EXPECT_LT(r.busiest_ns(), 20'000'000) << "a reader spun on a stopped writer";
  }
  mapped_page again(path);
  readers r(again, 2);
  d = std::make_unique<daemon_process>(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d->wait_for_notification("READY=1", 30s)) << d->log();
  EXPECT_EQ(again.get()->hot.seq & 1u, 0u) << "the restart finished the half-written update";
  EXPECT_EQ(again.get()->backup.seq & 1u, 0u);
  EXPECT_TRUE(again.wait_for_counter_mode()) << d->log();
  r.stop();
  EXPECT_EQ(r.failures(), 0) << r.first_failure();
}

// The coarse clocks read no counter, so only the kernel can tell them that their writer
// died: vclockd's owner word on its robust futex list (page.h). Killed with SIGKILL, its
// coarse line is dead at once, and past the validity window time() and the coarse clocks,
// read the library's way, follow the kernel instead of standing still.
TEST(Daemon, KilledDaemonsCoarseClocksFollowTheKernel) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  daemon_process d(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  mapped_page m(path);
  ASSERT_NE(m.get(), nullptr);
  ASSERT_TRUE(m.wait_for_counter_mode()) << d.log();  // the coarse line is published with it
  const page& p = *m.get();
  using vclock::detail::as_ns;
  const auto coarse_realtime = [&p] {
    return vclock::detail::read_coarse<clock_kind::realtime_coarse, as_ns>(p, [&p] {
      return vclock::detail::read_careful<clock_kind::realtime_coarse>(
          p, [] { return vclock::arch::read_counter<vclock::arch::counter_ordering::none>(); },
          [] { return vclock::kernel::now_ns(CLOCK_REALTIME_COARSE); });
    });
  };
  std::int64_t seconds = 0;
  ASSERT_TRUE(vclock::detail::try_read_time(p, seconds)) << "a live owner";
  EXPECT_EQ(static_cast<std::uint32_t>(p.coarse.time_word), static_cast<std::uint32_t>(d.pid()))
      << "the owner word is the daemon's thread id";
  d.stop(SIGKILL);
  EXPECT_FALSE(vclock::detail::try_read_time(p, seconds)) << "the kernel marked the owner dead";
  EXPECT_NE(static_cast<std::uint32_t>(p.coarse.time_word) & 0x40000000u, 0u) << "FUTEX_OWNER_DIED";
  std::this_thread::sleep_for(200ms);  // well past the validity window (3 ticks of 4 ms)
  const std::int64_t k1 = vclock::kernel::now_ns(CLOCK_REALTIME_COARSE);
  const std::int64_t v = coarse_realtime();
  const std::int64_t k2 = vclock::kernel::now_ns(CLOCK_REALTIME);
  EXPECT_GE(v, k1) << "REALTIME_COARSE stood still after the daemon died";
  EXPECT_LE(v, k2 + tolerance_ns);
}

// SIGSTOP past the validity window: readers answer from the kernel (floored), and return to
// the page after SIGCONT.
TEST(Daemon, StoppedPastTheValidityWindowReadersFollowTheKernel) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  daemon_process d(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  mapped_page m(path);
  ASSERT_NE(m.get(), nullptr);
  ASSERT_TRUE(m.wait_for_counter_mode()) << d.log();
  const page& p = *m.get();
  readers r(m, 2);
  kill(d.pid(), SIGSTOP);
  std::this_thread::sleep_for(100ms);
  const std::uint64_t updates_while_stopped = vclock::detail::load_relaxed(m.get()->updates);
  // SIGSTOP took effect: no update for 50 ms more (12 ticks of 4 ms).
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(vclock::detail::load_relaxed(m.get()->updates), updates_while_stopped)
      << "the daemon kept publishing: SIGSTOP did nothing";
  // 150 ms stale, far past the validity window (3 ticks): a reader must ask the kernel, not
  // extrapolate the counter (a reader that ignores max_delta never would).
  int kernel_calls = 0;
  const auto counter = [] {
    return vclock::arch::read_counter<vclock::arch::strongest_ordering>();
  };
  const std::int64_t v = vclock::detail::read_fast<clock_kind::monotonic>(p, counter, [&] {
    return vclock::detail::read_careful<clock_kind::monotonic>(p, counter, [&] {
      ++kernel_calls;
      return vclock::kernel::now_ns(CLOCK_MONOTONIC);
    });
  });
  const std::int64_t k = vclock::kernel::now_ns(CLOCK_MONOTONIC);
  EXPECT_GT(kernel_calls, 0) << "a reader of a page stale for 150 ms did not fall back";
  EXPECT_LE(v, k + tolerance_ns);
  kill(d.pid(), SIGCONT);
  std::this_thread::sleep_for(50ms);
  EXPECT_GT(vclock::detail::load_relaxed(m.get()->updates), updates_while_stopped);
  EXPECT_TRUE(m.counter_mode());
  r.stop();
  EXPECT_EQ(r.failures(), 0) << r.first_failure();
}

// A page left by another boot (/run need not be a tmpfs): refused by readers, rewritten in
// place by the daemon, same inode.
TEST(Daemon, RewritesAPageFromAnotherBoot) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  const std::string path = dir.file("page");
  const machine_identity me = vclock::read_machine_identity();
  page old{};
  vclock::write_header(old.header, me, vclock::page_flag_shared);
  old.header.boot_id[0] ^= 0xff;
  old.hot.max_delta = 123;  // something a reader must not use
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, &old, sizeof(old)), static_cast<ssize_t>(sizeof(old)));
  close(fd);
  const ino_t inode = inode_of(path);

  {
    attach_target t;
    EXPECT_EQ(vclock::attach_shared_page(path.c_str(), t.get(), me).refusal,
              page_refusal::other_boot);
  }

  daemon_process d(VCLOCKD_PATH, daemon_args(path), dir.path());
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  EXPECT_NE(d.log().find("another boot"), std::string::npos) << d.log();
  EXPECT_EQ(inode_of(path), inode);
  mapped_page m(path);
  EXPECT_EQ(std::memcmp(m.get()->header.boot_id, me.boot_id, 16), 0);
}

// --- the attach checks -----------------------------------------------------------------------

// Writes `bytes` to `path` with `mode`.
void write_file(const std::string& path, const void* bytes, std::size_t size, mode_t mode) {
  unlink(path.c_str());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(write(fd, bytes, size), static_cast<ssize_t>(size));
  ASSERT_EQ(fchmod(fd, mode), 0);
  close(fd);
}

page valid_page(const machine_identity& me) {
  page p{};
  vclock::write_header(p.header, me, vclock::page_flag_shared);
  return p;
}

TEST(Attach, AGoodPageIsMappedReadOnly) {
  temp_dir dir;
  const machine_identity me = vclock::read_machine_identity();
  const page good = valid_page(me);
  const std::string path = dir.file("page");
  write_file(path, &good, sizeof(good), 0644);
  attach_target t;
  ASSERT_EQ(vclock::attach_shared_page(path.c_str(), t.get(), me).refusal, page_refusal::none);
  EXPECT_EQ(t.get()->header.magic, vclock::page_magic);
  // The kernel refuses to make it writable: the file was opened read-only.
  EXPECT_NE(mprotect(t.get(), vclock::page_bytes, PROT_READ | PROT_WRITE), 0);
  EXPECT_EQ(errno, EACCES);
}

TEST(Attach, BadPagesAreRefusedWithAReasonAndNeverMapped) {
  temp_dir dir;
  const machine_identity me = vclock::read_machine_identity();
  const page good = valid_page(me);
  const std::string path = dir.file("page");
  const auto expect_refused = [&](const char* name, page_refusal expected) {
    attach_target t;
    const vclock::attach_result r = vclock::attach_shared_page(path.c_str(), t.get(), me);
    EXPECT_EQ(r.refusal, expected) << name << ": " << vclock::page_refusal_text(r.refusal);
    EXPECT_EQ(t.get()->header.magic, 0u) << name << ": the target was touched";
  };

  expect_refused("missing", page_refusal::not_found);

  write_file(path, &good, 100, 0644);
  expect_refused("short", page_refusal::wrong_size);
  write_file(path, &good, sizeof(good) - 1, 0644);
  expect_refused("one byte short", page_refusal::wrong_size);

  std::vector<unsigned char> garbage(vclock::page_bytes);
  for (std::size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = static_cast<unsigned char>(i * 131 + 7);
  write_file(path, garbage.data(), garbage.size(), 0644);
  expect_refused("random bytes", page_refusal::bad_magic);

  page other = good;
  other.header.abi_major = vclock::page_abi_major + 1;
  write_file(path, &other, sizeof(other), 0644);
  expect_refused("another ABI major", page_refusal::other_abi);

  other = good;
  other.header.boot_id[5] ^= 1;
  write_file(path, &other, sizeof(other), 0644);
  expect_refused("another boot", page_refusal::other_boot);

  other = good;
  other.header.counter_signature ^= 0x10;
  write_file(path, &other, sizeof(other), 0644);
  expect_refused("another CPU", page_refusal::other_counter);

  other = good;
  other.header.page_size = 8192;
  write_file(path, &other, sizeof(other), 0644);
  expect_refused("inconsistent header", page_refusal::bad_header);

  write_file(path, &good, sizeof(good), 0666);
  expect_refused("world-writable", page_refusal::loose_mode);
  write_file(path, &good, sizeof(good), 0664);
  expect_refused("group-writable", page_refusal::loose_mode);

  unlink(path.c_str());
  const std::string real = dir.file("real");
  write_file(real, &good, sizeof(good), 0644);
  ASSERT_EQ(symlink(real.c_str(), path.c_str()), 0);
  expect_refused("a symlink", page_refusal::open_failed);

  unlink(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0644), 0);
  expect_refused("a FIFO", page_refusal::not_regular);

  unlink(path.c_str());
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  expect_refused("a directory", page_refusal::not_regular);
  rmdir(path.c_str());

  // A directory anyone may write to: anyone could have put the file there.
  write_file(path, &good, sizeof(good), 0644);
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  expect_refused("a loose directory", page_refusal::loose_directory);
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
}

// Squatting: a page owned by a user who is neither root nor the directory's owner. Needs root
// (chown); a child drops to another uid to check that a reader cannot write the page either.
TEST(Attach, ForeignOwnersAreRefusedAndReadersCannotWrite) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create files owned by another user";
  temp_dir dir;
  const machine_identity me = vclock::read_machine_identity();
  const page good = valid_page(me);
  const std::string path = dir.file("page");
  write_file(path, &good, sizeof(good), 0644);
  const uid_t nobody = 65534;
  ASSERT_EQ(chown(path.c_str(), nobody, nobody), 0);
  {
    attach_target t;
    EXPECT_EQ(vclock::attach_shared_page(path.c_str(), t.get(), me).refusal,
              page_refusal::foreign_owner);
  }
  // Owned by the directory's owner: accepted (the daemon's own directory).
  ASSERT_EQ(chown(dir.path().c_str(), nobody, nobody), 0);
  {
    attach_target t;
    EXPECT_EQ(vclock::attach_shared_page(path.c_str(), t.get(), me).refusal, page_refusal::none);
  }
  ASSERT_EQ(chown(dir.path().c_str(), 0, 0), 0);
  ASSERT_EQ(chown(path.c_str(), 0, 0), 0);

  // Another uid may read and map a root-owned page, never write it.
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (setresgid(nobody, nobody, nobody) != 0 || setresuid(nobody, nobody, nobody) != 0) _exit(10);
    attach_target t;
    if (vclock::attach_shared_page(path.c_str(), t.get(), me).refusal != page_refusal::none) {
      _exit(11);
    }
    if (mprotect(t.get(), vclock::page_bytes, PROT_READ | PROT_WRITE) == 0) _exit(12);
    if (open(path.c_str(), O_RDWR) >= 0 || errno != EACCES) _exit(13);
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) _exit(14);
    if (mmap(nullptr, vclock::page_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) !=
        MAP_FAILED) {
      _exit(15);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 setresuid, 11 attach, 12 mprotect, 13 open O_RDWR, "
                                       "14 open, 15 writable mmap";
}

TEST(Attach, TimeNamespaceOffsetsAreRecognised) {
  const auto offsets = [](const char* text) {
    return vclock::time_namespace_offsets_clocks(text, std::strlen(text));
  };
  EXPECT_FALSE(offsets("monotonic           0         0\nboottime            0         0\n"));
  EXPECT_TRUE(offsets("monotonic        3600         0\nboottime            0         0\n"));
  EXPECT_TRUE(offsets("monotonic           0         0\nboottime            0         1\n"));
  EXPECT_TRUE(offsets("1 -5 0\n7 0 0\n"));  // older kernels print clock ids
  EXPECT_FALSE(offsets(""));
  EXPECT_FALSE(offsets("garbage without numbers\n"));
  // Not NUL-terminated: nothing past `length` is read.
  const char cut[] = {'m', ' ', '0', ' ', '0', '\n', 'b', ' ', '9'};
  EXPECT_FALSE(vclock::time_namespace_offsets_clocks(cut, 6));
}

TEST(Attach, BootIdsParseOnlyFromTheirExactForm) {
  std::uint8_t id[16] = {};
  EXPECT_TRUE(vclock::parse_boot_id("8540e915-2c71-4985-bb4c-31a8813381f2\n", 37, id));
  EXPECT_EQ(id[0], 0x85);
  EXPECT_EQ(id[15], 0xf2);
  EXPECT_FALSE(vclock::parse_boot_id("8540e915-2c71-4985-bb4c-31a8813381f", 35, id));
  EXPECT_FALSE(vclock::parse_boot_id("8540e915x2c71-4985-bb4c-31a8813381f2", 36, id));
  EXPECT_FALSE(vclock::parse_boot_id("8540e915-2c71-4985-bb4c-31a8813381g2", 36, id));
  EXPECT_TRUE(vclock::read_machine_identity().have_boot_id);
}

}  // namespace
