// vclockd: one timekeeper for the machine. It runs the library's timekeeper
// over a page in a file (default /run/vclock/page) that every process maps
// read-only, so that no process needs a thread or a calibration of its own.
// Foreground, logs to stderr, READY=1 to $NOTIFY_SOCKET after its first
// calibrated publish (API.md: counter mode, or the counter refused and the
// kernel answering for good), exit 0 on SIGTERM or SIGINT (the
// page is turned off first, so readers go to the kernel at once rather than
// at the end of the validity window).
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "daemon/chrony_bound.h"
#include "daemon/coarse_owner.h"
#include "daemon/fake_bound.h"
#include "daemon/notify.h"
#include "daemon/page_file.h"
#include "daemon/standby_tickers.h"
#include "daemon/timens_service.h"
#include "lib/fallback_reason_text.h"
#include "lib/kernel_bound.h"
#include "lib/kernel_clock.h"
#include "lib/kernel_frame.h"
#include "lib/page_identity.h"
#include "lib/tick_loop.h"
#include "lib/timekeeper.h"
#include "lib/trust.h"
#include "tool/args.h"
#include "tool/version.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"

namespace vclock::daemon {
namespace {

// How long READY=1 waits for a calibration that does not end: a third of
// systemd's default start timeout (90 s), so that a machine too noisy for
// the rate bound still starts its service, with the kernel answering.
constexpr std::int64_t ready_anyway_ns = 30'000'000'000;

[[gnu::format(printf, 1, 2)]] void log(const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::string line = "vclockd: ";
  char buf[512];
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  line += buf;
  line += '\n';
  std::fputs(line.c_str(), stderr);
}

// The counter and the kernel, as the library's own thread reads them, but
// in the initial time namespace's terms: a daemon started in a kernel time
// namespace (a container's) subtracts its offsets, since every reader adds
// its own (kernel_frame.h). With
// VCLOCKD_TEST_STOP_IN_UPDATE=N (tests only), the daemon stops itself
// (SIGSTOP) inside its Nth update, between turning the hot line odd and
// freezing the backup: where a kill -9 leaves both lines odd.
class daemon_sources final : public time_sources {
 public:
  daemon_sources(const page& p, const time_namespace_offsets& frame) : page_(p), frame_(frame) {
    if (const char* v = std::getenv("VCLOCKD_TEST_STOP_IN_UPDATE")) {
      stop_in_update_.store(std::strtoull(v, nullptr, 10), std::memory_order_relaxed);
    }
  }
  std::uint64_t read_counter() override {
    // Atomic: a standby ticker reads the counter too (continue_line()).
    const std::uint64_t stop_in = stop_in_update_.load(std::memory_order_relaxed);
    if (stop_in != 0 && (detail::load(page_.hot.seq) & 1u) != 0 &&
        detail::load_relaxed(page_.updates) + 1 >= stop_in) {
      stop_in_update_.store(0, std::memory_order_relaxed);
      raise(SIGSTOP);
    }
    return arch::read_counter_after_stores();
  }
  std::int64_t read_kernel(clockid_t clock) override {
    const std::int64_t t = kernel::now_ns(clock);
    const detail::served_kind k = detail::kind_of(clock);
    if (!k.served) return t;
    switch (k.kind) {
      case detail::clock_kind::monotonic:
      case detail::clock_kind::monotonic_raw:
      case detail::clock_kind::monotonic_coarse:
        return t - frame_.monotonic_ns;
      case detail::clock_kind::boottime:
        return t - frame_.boottime_ns;
      case detail::clock_kind::realtime:
      case detail::clock_kind::tai:
      case detail::clock_kind::realtime_coarse:
        return t;
    }
    return t;
  }

  // --bound-source: the kernel's adjtimex, chronyd, or a fake file.
  void use_fake_bound(const std::string& path) {
    fake_ = std::make_unique<fake_bound_source>(path);
  }
  void use_chrony_bound(std::uint16_t port) {
    chrony_ = std::make_unique<chrony_bound_source>(port);
  }
  bound_sample read_bound() override {
    const auto say = [](const char* line) { log("%s", line); };
    if (fake_ != nullptr) return fake_->read(kernel::now_ns(CLOCK_MONOTONIC), say);
    if (chrony_ != nullptr) return chrony_->read(kernel::now_ns(CLOCK_MONOTONIC), say);
    return read_kernel_bound();
  }

 private:
  const page& page_;
  time_namespace_offsets frame_;
  std::atomic<std::uint64_t> stop_in_update_{0};
  std::unique_ptr<fake_bound_source> fake_;
  std::unique_ptr<chrony_bound_source> chrony_;
};

std::atomic<int> stop_signal{0};
void on_stop_signal(int signo) { stop_signal.store(signo, std::memory_order_relaxed); }

// SIGTERM and SIGINT are blocked except while the loop waits (ppoll's
// mask): a stop request ends the wait, never an update.
sigset_t install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigset_t stop_set, waiting;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGINT);
  sigprocmask(SIG_BLOCK, &stop_set, &waiting);
  sigdelset(&waiting, SIGTERM);
  sigdelset(&waiting, SIGINT);
  return waiting;
}

// Real-time scheduling where permitted (systemd's CPUSchedulingPolicy, or
// CAP_SYS_NICE / RLIMIT_RTPRIO): a REALTIME step is mirrored as soon as the
// kernel wakes the daemon, not after whatever else runs on that CPU.
void try_realtime_scheduling() {
  if (sched_getscheduler(0) == SCHED_FIFO || sched_getscheduler(0) == SCHED_RR) {
    log("real-time scheduling (set by the service manager)");
    return;
  }
  sched_param param{};
  param.sched_priority = 10;
  if (sched_setscheduler(0, SCHED_FIFO, &param) == 0) {
    log("real-time scheduling: SCHED_FIFO, priority %d", param.sched_priority);
  } else {
    log("no real-time scheduling (%s): steps are mirrored at normal priority",
        std::strerror(errno));
  }
}

// The page's mode for the log: "counter", or why not (status.cc's phrases).
std::string mode_text(fallback_reason r) {
  if (r == fallback_reason::none) return "counter";
  std::string text = fallback_reason_text(r);
  if (r == fallback_reason::counter_jumped || r == fallback_reason::counter_rate_wrong) {
    text += " (recalibrating after 1 s)";
  }
  return text;
}

struct options {
  std::string page = "/run/vclock/page";
  std::int64_t tick_us = 4000;
  std::string bound_source = "kernel";
  long chrony_port = 0;  // from bound_source chrony[:PORT]
  bool realtime = true;
  // A private daemon (`vclock run` starts one when no vclockd serves the
  // machine): stop when this process exits, and remove the page and its
  // directory on the way out.
  std::int64_t exit_with_pid = 0;
  bool remove_on_exit = false;
};

// A pidfd that becomes readable when `pid` exits; -1 if it already has.
int open_pidfd(std::int64_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
}

// The page, then its directory if that is now empty: what --remove-on-exit
// cleans up (a private daemon's temporary directory).
void remove_page_and_directory(const std::string& page) {
  if (unlink(page.c_str()) != 0) return;
  const std::size_t slash = page.rfind('/');
  if (slash != std::string::npos && slash > 0) rmdir(page.substr(0, slash).c_str());
}

int usage(const std::string& message) {
  std::fprintf(stderr, "vclockd: %s\n", message.c_str());
  return tool::exit_usage;
}

// Root's named namespaces, beside the page (timens_service.h). A private
// daemon (vclock run's) keeps none: its directory goes when it stops. Nor
// does one in a kernel time namespace that moves the clocks: it would write
// their lines in its namespace's terms, which are not its readers'.
void keep_root_namespaces(const options& o, const detail::kernel_frame& frame) {
  if (o.exit_with_pid != 0 || o.remove_on_exit) return;
  if (frame.offsets_clocks()) {
    log("not keeping root's named namespaces (this daemon's clocks are offset by its time "
        "namespace): root's vclock ns writes them itself");
    return;
  }
  const std::size_t slash = o.page.rfind('/');
  // "" for a page in "/": the namespaces are then /ns.
  const std::string directory = slash == std::string::npos ? "." : o.page.substr(0, slash);
  const auto say = [](const std::string& line) { log("%s", line.c_str()); };
  std::string error;
  if (start_timens_service(directory, say, error)) {
    log("keeping root's named namespaces in %s/ns (vclock ns asks on %s/ns.sock)",
        directory.c_str(), directory.c_str());
  } else {
    log("not keeping root's named namespaces (%s): root's vclock ns writes them itself",
        error.c_str());
  }
}

int run(const options& o) {
  int pidfd = -1;
  if (o.exit_with_pid != 0) {
    pidfd = open_pidfd(o.exit_with_pid);
    // `vclock run` does not wait for its private daemon: a short command
    // may be gone before the daemon looks. Nothing to serve then, and the
    // page it was given is cleaned up as at any other exit.
    if (pidfd < 0 && errno == ESRCH && o.remove_on_exit) {
      log("process %lld exited before this daemon started",
          static_cast<long long>(o.exit_with_pid));
      remove_page_and_directory(o.page);
      return 0;
    }
    if (pidfd < 0) {
      log("--exit-with-pid %lld: %s", static_cast<long long>(o.exit_with_pid),
          std::strerror(errno));
      return 1;
    }
  }
  const machine_identity me = read_machine_identity();
  const trust_verdict verdict = decide_trust();
  writable_page wp;
  std::string error;
  if (!open_page_for_writing(o.page.c_str(), me, wp, error)) {
    log("%s", error.c_str());
    return 1;
  }
  if (!wp.created_directory.empty()) log("created %s (0755)", wp.created_directory.c_str());
  log("publishing %s (inode %llu, %s)", o.page.c_str(), static_cast<unsigned long long>(wp.inode),
      !wp.reinitialised.empty() ? ("rewritten: " + wp.reinitialised).c_str()
      : wp.created              ? "created"
                                : "continuing the existing page");

  // In a kernel time namespace: publish the initial namespace's time. A
  // daemon that cannot tell its namespace's offsets (started between an
  // unshare and the next exec) would publish another namespace's time.
  const detail::kernel_frame frame = detail::read_kernel_frame();
  if (!frame.readable) {
    log("cannot read this process's time namespace offsets (/proc/self/ns/time differs from "
        "time_for_children): start vclockd from a fresh exec");
    return 1;
  }
  if (frame.offsets_clocks()) {
    log("in a kernel time namespace (MONOTONIC %+lld ns, BOOTTIME %+lld ns): publishing the "
        "initial namespace's time, as every reader expects",
        static_cast<long long>(frame.offsets.monotonic_ns),
        static_cast<long long>(frame.offsets.boottime_ns));
  }
  keep_root_namespaces(o, frame);
  // After the namespace thread started: it stays at normal priority.
  if (o.realtime) try_realtime_scheduling();
  daemon_sources sources(*wp.p, frame.offsets);
  if (o.bound_source.starts_with("fake:")) sources.use_fake_bound(o.bound_source.substr(5));
  if (o.chrony_port != 0) sources.use_chrony_bound(static_cast<std::uint16_t>(o.chrony_port));
  timekeeper_config config;
  config.tick_ns = o.tick_us * 1000;
  config.validity_ticks = 3;  // API.md: stale after at most 3 ticks
  bool robust = false;
  config.coarse_owner = claim_coarse_owner(*wp.p, robust);
  if (!robust) {
    log("set_robust_list failed (%s): the coarse clocks will not notice this daemon's death",
        std::strerror(errno));
  }
  timekeeper tk(*wp.p, sources, config);
  detail::store_relaxed(wp.p->counter_trusted, verdict.reason == fallback_reason::none ? 1u : 0u);
  tk.start();
  if (verdict.reason != fallback_reason::none) {
    tk.disable(verdict.reason);
    log("counter not used: %s; readers ask the kernel", verdict.note);
  }

  const sigset_t waiting = install_stop_handlers();
  tick_loop loop(tk);
  // After the stop handlers: the standbys inherit the blocked stop signals.
  standby_tickers standbys(tk);
  if (const int n = standbys.start(); n != 0) {
    log("standby tickers on CPU %d%s: they tick when this thread's CPU does not run",
        standbys.cpu(0), n > 1 ? (" and " + std::to_string(standbys.cpu(1))).c_str() : "");
  }
  bool ready = false;
  bool calibrated = false;
  const std::int64_t started_ns = kernel::now_ns(CLOCK_MONOTONIC);
  auto last_mode = static_cast<fallback_reason>(detail::load_relaxed(wp.p->mode_reason));
  while (stop_signal.load(std::memory_order_relaxed) == 0) {
    loop.run_once(standbys.lock());
    standbys.ticked();
    const auto mode = static_cast<fallback_reason>(detail::load_relaxed(wp.p->mode_reason));
    if (mode != last_mode) {
      log("mode: %s", mode_text(mode).c_str());
      last_mode = mode;
    }
    // Ready after the first calibrated publish (API.md): the page then
    // answers from the counter, or the counter was refused and the kernel
    // answers for good. Not before: a unit ordered After=vclockd.service
    // expects the page's accuracy from its first call. A calibration that
    // has not ended after ready_anyway_ns (a machine too noisy for the rate
    // bound) does not hold the service manager's start-up for ever: the page
    // is valid meanwhile, its readers are answered by the kernel, exactly.
    const std::int64_t now_ns = kernel::now_ns(CLOCK_MONOTONIC);
    if (!calibrated && mode == fallback_reason::none) {
      calibrated = true;
      log("calibrated: counter %.6f MHz, %lld ms after start", tk.counter_hz() / 1e6,
          static_cast<long long>((now_ns - started_ns) / 1'000'000));
    }
    const bool settled =
        mode != fallback_reason::calibrating && mode != fallback_reason::not_started;
    if (!ready && (settled || now_ns - started_ns >= ready_anyway_ns)) {
      ready = true;
      if (settled) {
        log("ready");
      } else {
        log("ready, still calibrating after %lld s: the kernel answers until the counter is "
            "calibrated",
            static_cast<long long>(ready_anyway_ns / 1'000'000'000));
      }
      if (!notify_service_manager("READY=1")) log("cannot notify $NOTIFY_SOCKET");
    }
    if (loop.wait(&waiting, pidfd)) {
      log("process %lld exited", static_cast<long long>(o.exit_with_pid));
      break;
    }
  }
  notify_service_manager("STOPPING=1");
  standbys.stop();
  if (standbys.ticks_taken() != 0 || standbys.lines_continued() != 0) {
    log("standby tickers took %llu ticks and continued the line %llu times",
        static_cast<unsigned long long>(standbys.ticks_taken()),
        static_cast<unsigned long long>(standbys.lines_continued()));
  }
  tk.disable(fallback_reason::daemon_stopped);
  if (stop_signal.load() != 0) {
    log("stopped by %s; page turned off", strsignal(stop_signal.load()));
  } else {
    log("page turned off");
  }
  stop_timens_service();
  if (o.remove_on_exit) remove_page_and_directory(o.page);
  return 0;
}

}  // namespace
}  // namespace vclock::daemon

int main(int argc, char** argv) {
  using vclock::daemon::options;
  options o;
  std::string realtime = "auto";
  vclock::tool::option_parser parser("vclockd");
  parser.add_string(
      "page", "PATH", &o.page,
      "the page to publish (default /run/vclock/page; a missing directory is created, 0755)");
  parser.add_int("tick-us", "N", 100, 1'000'000, &o.tick_us,
                 "timekeeper period in microseconds (default 4000)");
  parser.add_string("bound-source", "SRC", &o.bound_source,
                    "where the error bound comes from: kernel (adjtimex, the default), "
                    "chrony[:PORT] (chronyd's tracking, 127.0.0.1, port 323) or fake:PATH (a "
                    "JSON file, read at every update)");
  parser.add_choice("realtime", {"auto", "off"}, &realtime,
                    "try SCHED_FIFO (auto, the default) or not (off)");
  parser.add_int("exit-with-pid", "PID", 1, 4'194'304, &o.exit_with_pid,
                 "stop when process PID exits (a private daemon: vclock run)");
  parser.add_flag("remove-on-exit", &o.remove_on_exit,
                  "remove the page, and its directory if empty, when stopping");
  bool version = false;
  parser.add_flag("version", &version, "print the version and the page ABI, one line, and exit");
  if (!parser.parse(std::span<char* const>(argv + 1, argv + argc))) {
    return vclock::daemon::usage(parser.error());
  }
  if (parser.help_requested()) {
    std::printf(
        "Usage: vclockd [options]\n\n"
        "One timekeeper for the machine: publishes vclock's page for every process.\n"
        "Runs in the foreground; exits 0 on SIGTERM or SIGINT.\n\noptions:\n%s",
        parser.options_help().c_str());
    return 0;
  }
  if (version) {
    std::fputs(vclock::tool::version_line("vclockd").c_str(), stdout);
    return 0;
  }
  if (o.page.empty()) return vclock::daemon::usage("--page: empty path");
  long& chrony_port = o.chrony_port;
  if (o.bound_source == "chrony") {
    chrony_port = 323;
  } else if (o.bound_source.starts_with("chrony:")) {
    char* end = nullptr;
    chrony_port = std::strtol(o.bound_source.c_str() + 7, &end, 10);
    if (*end != '\0' || chrony_port < 1 || chrony_port > 65535) {
      return vclock::daemon::usage("--bound-source: '" + o.bound_source +
                                   "': the port is 1 to 65535");
    }
  } else if (o.bound_source != "kernel" &&
             (!o.bound_source.starts_with("fake:") || o.bound_source.size() == 5)) {
    return vclock::daemon::usage("--bound-source: '" + o.bound_source +
                                 "' is not kernel, chrony[:PORT] or fake:PATH");
  }
  o.realtime = realtime == "auto";
  return vclock::daemon::run(o);
}
