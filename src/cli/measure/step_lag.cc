// `vclock track --steps`: the lag between a step of the kernel's REALTIME
// and vclock's REALTIME following it (API: "REALTIME agrees with the kernel
// within 1 ms of a step").
//
// The sampler spins, with no sleep, on tight probes: kernel MONOTONIC,
// kernel REALTIME, vclock REALTIME, kernel MONOTONIC (the kernel through its
// vDSO). REALTIME minus MONOTONIC is the kernel's REALTIME offset: it moves
// only when REALTIME is stepped (NTP slews both clocks alike), so a move
// larger than the threshold is a step. The step happened after the last
// probe that still saw the old offset began (or, for an injected step,
// after the injector began it, if later) and before the first probe with
// the new offset ended. vclock has caught up once its REALTIME is within the
// threshold of the kernel's in one probe: after the previous probe began,
// before this one ended. The lag reported is the upper bound, from the
// earliest the step can have happened; both brackets are kept per step, and
// they widen only where the sampler was preempted. Against the 1 ms promise
// a step is then certainly on time (upper bound), certainly late (lower
// bound), or unresolved: a busy machine cannot fail --check by preempting
// the sampler. Probes wider than a quarter of the threshold were preempted
// themselves and are dropped: their offsets are not to be trusted.
//
// The floor (step_lag_floor.h): a bare thread at vclockd's policy and
// priority, blocked on a TFD_TIMER_CANCEL_ON_SET timerfd, counts its
// wake-ups, and the sampler reads the count in every probe beside vclock's
// REALTIME: its lag, measured as vclock's, is what a writer that published
// the instant it woke would show. Its own wake-up times, and the page's
// publish time by its writer's clock, are reported beside it: they tell the
// writer's delay from the sampler's (a sampler preempted by the waking
// threads sees both late).
//
// With --inject-steps a thread makes the steps itself: every 50 ms it
// steps REALTIME by +US, then by -US, with clock_adjtime(ADJ_SETOFFSET),
// which adds the offset in the kernel, so each pair puts the clock back
// exactly. The run always ends after a -US step, also when SIGINT, SIGTERM
// or SIGHUP stops it: those signals are blocked in every thread and taken
// by the injecting thread with sigtimedwait, between steps.
#include "cli/measure/step_lag.h"

#include <signal.h>
#include <sys/timex.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cpu.h"
#include "cli/measure/step_lag_floor.h"
#include "cli/measure/track.h"
#include "lib/kernel_clock.h"
#include "lib/runtime.h"
#include "tool/args.h"
#include "tool/json.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/vclock.h"

namespace vclock::cli {
namespace {

using detail::ns_per_s;
constexpr std::int64_t step_period_ns = 50'000'000;    // between injected steps
constexpr std::int64_t default_threshold_ns = 20'000;  // what counts as a step, and as caught up
constexpr std::int64_t settle_ns = 100'000'000;        // how long the end waits for a pending step
constexpr std::int64_t promised_lag_ns = 1'000'000;    // README: within 1 ms of a step

// ---- Probes and steps -----------------------------------------------------------------------

struct probe {
  std::int64_t mono0_ns;
  std::int64_t mono1_ns;
  std::int64_t kernel_offset_ns;  // kernel REALTIME - MONOTONIC (the bracket's midpoint)
  std::int64_t vclock_error_ns;   // vclock REALTIME - kernel REALTIME
  std::uint64_t floor_wakes;      // the floor thread's wake-ups so far (0 without one)
  std::int64_t publish_mono_ns;   // the page's last publish, by its writer's clock
  std::int64_t width_ns() const { return mono1_ns - mono0_ns; }
};

// Both REALTIME readings lie inside the MONOTONIC bracket, so each figure is
// good to the bracket's width.
// The floor's count is read beside vclock's REALTIME, so that both are
// seen as late as each other.
probe take_probe(const step_floor* floor) noexcept {
  const std::int64_t m0 = kernel::now_ns(CLOCK_MONOTONIC);
  const std::int64_t k = kernel::now_ns(CLOCK_REALTIME);
  const std::int64_t v = vclock_gettime_ns(CLOCK_REALTIME);
  const std::uint64_t wakes = floor != nullptr ? floor->wake_count() : 0;
  const std::int64_t published = detail::load_relaxed(detail::host_page->last_update_mono_ns);
  const std::int64_t m1 = kernel::now_ns(CLOCK_MONOTONIC);
  return {m0, m1, k - (m0 + (m1 - m0) / 2), v - k, wakes, published};
}

// A step the injector made: kernel MONOTONIC just before it began, and its
// sign (steps alternate, so the sign tells one from the next).
struct injected_step {
  std::int64_t start_ns = INT64_MIN;
  bool negative = false;
};

struct step_record {
  std::int64_t from_ns;              // the earliest the step can have happened (MONOTONIC)
  std::int64_t size_ns;              // how far the kernel's REALTIME offset moved
  std::int64_t step_bracket_ns;      // when the step can have happened: its uncertainty
  std::int64_t catch_up_bracket_ns;  // when vclock can have caught up: its uncertainty
  std::int64_t lag_ns;               // upper bound; -1: vclock never caught up
  std::int64_t lag_min_ns;           // lower bound (0 where the brackets overlap)
  // The floor thread's wake-up after the step, from from_ns: as the
  // sampler saw it (as vclock's lag), and as the thread itself timed it.
  // -1: it did not wake for this step.
  std::int64_t floor_lag_ns = -1;
  std::int64_t floor_wake_ns = -1;
  // The publish vclock caught up with, from from_ns, by its writer's
  // clock (the page's last_update_mono_ns): the writer's side of the lag,
  // beside floor_wake_ns. -1: not caught, or a publish before from_ns.
  std::int64_t publish_ns = -1;
};

// Finds the kernel's steps in a stream of trusted probes and times
// vclock's catching up with each.
class step_detector {
 public:
  explicit step_detector(std::int64_t threshold_ns) : threshold_ns_(threshold_ns) {}

  // `injected`: the injector's latest step, if any; it narrows a step that
  // the probes bracket only loosely (the sampler was preempted just before
  // it), when it is that step: same sign, started inside the bracket.
  void add(const probe& p, const injected_step& injected) {
    if (have_last_ && std::llabs(p.kernel_offset_ns - last_.kernel_offset_ns) > threshold_ns_) {
      // A step; one still pending (stepped again before vclock caught up)
      // stays uncaught.
      const std::int64_t size = p.kernel_offset_ns - last_.kernel_offset_ns;
      step_from_ns_ = last_.mono0_ns;
      if (injected.negative == (size < 0) && injected.start_ns > step_from_ns_ &&
          injected.start_ns < p.mono1_ns) {
        step_from_ns_ = injected.start_ns;
      }
      step_to_ns_ = p.mono1_ns;
      steps_.push_back({step_from_ns_, size, step_to_ns_ - step_from_ns_, 0, -1, 0});
      pending_ = true;
      floor_pending_ = true;
      floor_wakes_before_ = last_.floor_wakes;
    }
    if (floor_pending_ && p.floor_wakes > floor_wakes_before_) {
      // Seen in this probe, not in the one before the step.
      steps_.back().floor_lag_ns = p.mono1_ns - step_from_ns_;
      floor_pending_ = false;
    }
    const bool agrees = std::llabs(p.vclock_error_ns) <= threshold_ns_;
    if (pending_ && agrees) {
      // vclock was still behind when the previous probe began (or the step
      // had not happened yet), and caught up by the end of this one.
      step_record& current = steps_.back();
      const std::int64_t caught_from = std::max(last_.mono0_ns, step_from_ns_);
      current.catch_up_bracket_ns = p.mono1_ns - caught_from;
      current.lag_ns = p.mono1_ns - step_from_ns_;
      current.lag_min_ns = std::max<std::int64_t>(0, caught_from - step_to_ns_);
      if (p.publish_mono_ns >= step_from_ns_)
        current.publish_ns = p.publish_mono_ns - step_from_ns_;
      pending_ = false;
    } else if (!pending_ && !agrees) {
      ++off_probes_;
    }
    last_ = p;
    have_last_ = true;
  }

  // Ends the run: a step still pending was never caught up with.
  void finish() {
    pending_ = false;
    floor_pending_ = false;
  }

  bool pending() const { return pending_; }
  const std::vector<step_record>& steps() const { return steps_; }
  // Probes in which vclock disagreed with the kernel while no step was
  // pending: should be none.
  std::int64_t off_probes() const { return off_probes_; }

 private:
  std::int64_t threshold_ns_;
  bool have_last_ = false;
  probe last_{};
  bool pending_ = false;        // vclock has not caught up with steps_.back()
  bool floor_pending_ = false;  // the floor thread has not been seen to wake for it
  std::uint64_t floor_wakes_before_ = 0;
  std::int64_t step_from_ns_ = 0;  // the earliest the latest step can have happened
  std::int64_t step_to_ns_ = 0;    // the latest
  std::vector<step_record> steps_;
  std::int64_t off_probes_ = 0;
};

// ---- Stepping REALTIME ----------------------------------------------------------------------

// Adds `ns` (either sign) to REALTIME in the kernel. 0 or errno.
int step_realtime(std::int64_t ns) noexcept {
  // The kernel wants the ns field in [0, 1 s): -500 us is -1 s + 999'500'000 ns.
  std::int64_t s = ns / ns_per_s;
  std::int64_t rem = ns % ns_per_s;
  if (rem < 0) {
    rem += ns_per_s;
    --s;
  }
  timex tx{};
  tx.modes = ADJ_SETOFFSET | ADJ_NANO;
  tx.time.tv_sec = static_cast<time_t>(s);
  tx.time.tv_usec = static_cast<suseconds_t>(rem);  // ns, with ADJ_NANO
  return clock_adjtime(CLOCK_REALTIME, &tx) < 0 ? errno : 0;
}

// Whether this process may step REALTIME, asked without stepping it: the
// kernel checks CAP_SYS_TIME before it validates the offset, so a negative
// ns field fails with EINVAL when stepping is permitted and EPERM when not.
// 0, or the errno that refuses.
int realtime_step_permission() noexcept {
  timex tx{};
  tx.modes = ADJ_SETOFFSET | ADJ_NANO;
  tx.time.tv_usec = -1;
  if (clock_adjtime(CLOCK_REALTIME, &tx) >= 0) {
    return step_realtime(1);  // a kernel that took it stepped by -1 ns: undo
  }
  return errno == EINVAL ? 0 : errno;
}

// The signals that stop an injecting run, blocked in the constructing
// thread (and so in threads it creates next) until destruction. One that is
// ignored (SIGHUP under nohup) stays out: it must not stop the run.
class stop_signals_blocked {
 public:
  stop_signals_blocked() {
    sigemptyset(&set_);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction sa {};
      if (sigaction(sig, nullptr, &sa) == 0 && sa.sa_handler != SIG_IGN) sigaddset(&set_, sig);
    }
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~stop_signals_blocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  stop_signals_blocked(const stop_signals_blocked&) = delete;
  stop_signals_blocked& operator=(const stop_signals_blocked&) = delete;
  const sigset_t& set() const { return set_; }

 private:
  sigset_t set_;
  sigset_t old_;
};

// Sleeps until kernel MONOTONIC reaches `when_ns`. Returns a stop signal
// that arrived meanwhile (taking it), 0 otherwise.
int wait_until(std::int64_t when_ns, const sigset_t& stop_set) noexcept {
  for (;;) {
    const std::int64_t left = when_ns - kernel::now_ns(CLOCK_MONOTONIC);
    if (left <= 0) return 0;
    const timespec t{left / ns_per_s, left % ns_per_s};
    const int sig = sigtimedwait(&stop_set, nullptr, &t);
    if (sig > 0) return sig;
    // EAGAIN (timed out) or EINTR: look at the clock again.
  }
}

// The thread that steps REALTIME: +step, 50 ms later -step, and so on
// while the next step is due before `until_ns`; always an even number of
// steps, so the clock ends where it was.
class step_injector {
 public:
  step_injector(std::int64_t step_ns, std::int64_t until_ns, const sigset_t& stop_set)
      : step_ns_(step_ns), until_ns_(until_ns), stop_set_(stop_set), thread_([this] { run(); }) {}
  ~step_injector() { thread_.join(); }
  step_injector(const step_injector&) = delete;
  step_injector& operator=(const step_injector&) = delete;

  // The latest step begun; start_ns INT64_MIN before the first. Relaxed: a
  // stale one only leaves a step's bracket wider (the detector checks it).
  injected_step latest_step() const {
    const std::int64_t word = latest_step_.load(std::memory_order_relaxed);
    if (word == INT64_MIN) return {};
    return {word / 2, word % 2 != 0};
  }
  // The figures below may be read once this is true.
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  int steps() const { return steps_; }
  std::int64_t net_ns() const { return net_ns_; }
  int stop_signal() const { return stop_signal_; }
  const std::string& error() const { return error_; }

 private:
  void run() {
    std::int64_t next = kernel::now_ns(CLOCK_MONOTONIC) + step_period_ns;
    for (;;) {
      const bool closing = steps_ % 2 == 1;
      if (!closing && next >= until_ns_) break;
      const int sig = wait_until(next, stop_set_);
      if (sig != 0) {
        stop_signal_ = sig;
        if (closing) close_pair();
        break;
      }
      if (closing) {
        close_pair();
        if (!error_.empty()) break;
      } else if (!step(step_ns_)) {
        break;
      }
      next += step_period_ns;
    }
    // Pairs with the acquire load in finished(): the figures are complete.
    finished_.store(true, std::memory_order_release);
  }

  bool step(std::int64_t ns) {
    // One word, so that the sampler never pairs a start with another sign.
    const std::int64_t start = kernel::now_ns(CLOCK_MONOTONIC);
    latest_step_.store(start * 2 + (ns < 0 ? 1 : 0), std::memory_order_relaxed);
    const int err = step_realtime(ns);
    if (err != 0) {
      error_ = tool::strformat("clock_adjtime(ADJ_SETOFFSET %+lld ns): %s",
                               static_cast<long long>(ns), std::strerror(err));
      return false;
    }
    ++steps_;
    net_ns_ += ns;
    return true;
  }

  // The -step that puts the clock back. Retried: leaving the machine's
  // clock off by the step is the one outcome this must avoid.
  void close_pair() {
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (step(-step_ns_)) {
        error_.clear();
        return;
      }
      const timespec pause{0, 1'000'000};
      nanosleep(&pause, nullptr);
    }
    error_ += tool::strformat("; REALTIME is left %+lld ns off", static_cast<long long>(net_ns_));
  }

  const std::int64_t step_ns_;
  const std::int64_t until_ns_;
  const sigset_t stop_set_;
  // Written by the thread, read after finished().
  int steps_ = 0;
  std::int64_t net_ns_ = 0;
  int stop_signal_ = 0;
  std::string error_;
  std::atomic<std::int64_t> latest_step_{INT64_MIN};  // latest_step(), packed
  std::atomic<bool> finished_{false};
  std::thread thread_;  // last: starts once every member above is ready
};

// ---- The run --------------------------------------------------------------------------------

struct step_lag_result {
  std::int64_t threshold_ns = 0;
  std::int64_t width_limit_ns = 0;
  std::int64_t probes = 0;
  std::int64_t discarded = 0;   // wider than width_limit_ns
  std::int64_t off_probes = 0;  // vclock off the kernel with no step pending
  std::vector<step_record> steps;
  // Injection (steps_injected 0 when not injecting).
  std::int64_t inject_ns = 0;
  int steps_injected = 0;
  std::int64_t net_ns = 0;
  int stop_signal = 0;
  std::string inject_error;
  std::string floor_policy;  // "" when there was no floor thread
};

// Each step's floor wake-up as the thread timed it: its first after the
// earliest the step can have happened (the same origin as the lags) and
// before the next step could be. Both lists are in time order.
void match_floor_wakes(std::vector<step_record>& steps, const std::vector<std::int64_t>& wakes) {
  std::size_t w = 0;
  for (step_record& st : steps) {
    while (w < wakes.size() && wakes[w] < st.from_ns) ++w;
    if (w < wakes.size() && wakes[w] - st.from_ns < step_period_ns) {
      st.floor_wake_ns = wakes[w] - st.from_ns;
      ++w;
    }
  }
}

// Spins on probes until the time is up (the injector is done, or the
// deadline passed), then a little longer while a step is still pending.
void sample(step_detector& d, step_lag_result& r, std::int64_t deadline_ns,
            const step_injector* injector, const step_floor* floor) {
  std::int64_t settle_from = -1;
  for (;;) {
    const probe p = take_probe(floor);
    ++r.probes;
    if (p.width_ns() > r.width_limit_ns) {
      ++r.discarded;
    } else {
      d.add(p, injector != nullptr ? injector->latest_step() : injected_step{});
    }
    const bool time_up = injector != nullptr ? injector->finished() : p.mono1_ns >= deadline_ns;
    if (!time_up) continue;
    if (!d.pending()) break;
    if (settle_from < 0) settle_from = p.mono1_ns;
    if (p.mono1_ns - settle_from > settle_ns) break;
  }
  d.finish();
}

// The kernel's offset must move by more than this for a step, and vclock
// must come within it to have caught up: 20 us, or half the injected step
// when smaller, so that no injected step goes unseen.
std::int64_t step_threshold_ns(std::int64_t inject_ns) {
  return inject_ns > 0 ? std::min(default_threshold_ns, inject_ns / 2) : default_threshold_ns;
}

step_lag_result measure(const step_lag_options& o) {
  step_lag_result r;
  r.inject_ns = o.inject_us * 1000;
  r.threshold_ns = step_threshold_ns(r.inject_ns);
  r.width_limit_ns = r.threshold_ns / 4;  // a trusted probe's error stays well inside the threshold
  step_detector d(r.threshold_ns);
  const std::int64_t deadline = kernel::now_ns(CLOCK_MONOTONIC) + o.seconds * ns_per_s;
  // Room for a wake-up every 10 ms, five times the injected steps' rate.
  const auto max_wakes = static_cast<std::size_t>(o.seconds * 100 + 100);
  std::vector<std::int64_t> floor_wakes;
  if (r.inject_ns == 0) {
    step_floor floor(max_wakes);
    sample(d, r, deadline, nullptr, floor.available() ? &floor : nullptr);
    floor.stop();
    if (floor.available()) r.floor_policy = floor.policy();
    floor_wakes = floor.wakes();
  } else {
    // The floor thread, like the injector, is created with the stop
    // signals blocked: only the injector takes them.
    const stop_signals_blocked blocked;
    step_floor floor(max_wakes);
    {
      const step_injector injector(r.inject_ns, deadline, blocked.set());
      sample(d, r, deadline, &injector, floor.available() ? &floor : nullptr);
      r.steps_injected = injector.steps();
      r.net_ns = injector.net_ns();
      r.stop_signal = injector.stop_signal();
      r.inject_error = injector.error();
    }
    floor.stop();
    if (floor.available()) r.floor_policy = floor.policy();
    floor_wakes = floor.wakes();
  }
  r.off_probes = d.off_probes();
  r.steps = d.steps();
  match_floor_wakes(r.steps, floor_wakes);
  return r;
}

// ---- Reporting ------------------------------------------------------------------------------

// p50, p99 and max of one figure over the steps; -1 when there is none.
struct spread {
  std::int64_t p50 = -1;
  std::int64_t p99 = -1;
  std::int64_t max = -1;
};

struct lag_summary {
  int seen = 0;
  int uncaught = 0;
  int within_promise = 0;  // lag certainly under 1 ms (upper bound)
  int over_promise = 0;    // lag certainly 1 ms or more (lower bound)
  spread lag;              // of the caught steps
  spread floor_lag;        // of the steps the floor thread was seen to wake for
  spread floor_wake;       // the same, as the thread timed its wake-up
  spread publish;          // the writer's publish, by its own clock
  // publish_ns - floor_wake_ns of each step that has both (signed): the
  // writer against the floor thread woken by the same step, without the
  // sampler, which on two CPUs sees both only after both have run.
  spread publish_after_floor;
  int publish_after_floor_steps = 0;
  spread step_bracket;      // of every step seen
  spread catch_up_bracket;  // of the caught steps
};

// Nearest rank; `v` not empty.
std::int64_t percentile(std::vector<std::int64_t> v, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  const std::size_t i = std::max<std::size_t>(rank, 1) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

spread spread_of(const std::vector<std::int64_t>& v) {
  if (v.empty()) return {};
  return {percentile(v, 0.50), percentile(v, 0.99), *std::max_element(v.begin(), v.end())};
}

lag_summary summarise(const std::vector<step_record>& steps) {
  lag_summary s;
  std::vector<std::int64_t> lags, floor_lags, floor_wakes, publishes, publish_after_floor,
      step_brackets, catch_up_brackets;
  for (const step_record& st : steps) {
    ++s.seen;
    step_brackets.push_back(st.step_bracket_ns);
    if (st.floor_lag_ns >= 0) floor_lags.push_back(st.floor_lag_ns);
    if (st.floor_wake_ns >= 0) floor_wakes.push_back(st.floor_wake_ns);
    if (st.publish_ns >= 0) publishes.push_back(st.publish_ns);
    if (st.publish_ns >= 0 && st.floor_wake_ns >= 0) {
      publish_after_floor.push_back(st.publish_ns - st.floor_wake_ns);
    }
    if (st.lag_ns < 0) {
      ++s.uncaught;
      continue;
    }
    lags.push_back(st.lag_ns);
    catch_up_brackets.push_back(st.catch_up_bracket_ns);
    s.within_promise += st.lag_ns < promised_lag_ns ? 1 : 0;
    s.over_promise += st.lag_min_ns >= promised_lag_ns ? 1 : 0;
  }
  s.lag = spread_of(lags);
  s.floor_lag = spread_of(floor_lags);
  s.floor_wake = spread_of(floor_wakes);
  s.publish = spread_of(publishes);
  s.publish_after_floor = spread_of(publish_after_floor);
  s.publish_after_floor_steps = static_cast<int>(publish_after_floor.size());
  s.step_bracket = spread_of(step_brackets);
  s.catch_up_bracket = spread_of(catch_up_brackets);
  return s;
}

// The steps whose lag the sampler cannot settle against 1 ms: it was off
// the CPU around the step or the catching up (a busy machine).
int unresolved(const lag_summary& s) {
  return s.seen - s.uncaught - s.within_promise - s.over_promise;
}

// --check: no step left behind or certainly caught late, and at least 80 %
// of the steps (of those injected, when injecting) certainly caught within
// 1 ms. A few unresolved steps are tolerated, so that a busy machine, which
// preempts the sampler, does not fail the check.
bool passes(const step_lag_result& r, const lag_summary& s) {
  const int expected = r.steps_injected > 0 ? r.steps_injected : s.seen;
  return s.uncaught == 0 && s.over_promise == 0 && s.within_promise * 5 >= expected * 4 &&
         r.inject_error.empty();
}

std::string describe_source(const status_snapshot& st) {
  if (st.source == "shared") {
    return tool::strformat("shared page %s (vclockd pid %lld)", st.page.c_str(),
                           static_cast<long long>(st.daemon_pid));
  }
  return st.source;  // "in-process" or "kernel"
}

std::string us(std::int64_t ns) {
  return ns < 0 ? std::string("-") : tool::strformat("%.1f", static_cast<double>(ns) / 1e3);
}

std::string signed_us(std::int64_t ns) {
  return tool::strformat("%+.1f", static_cast<double>(ns) / 1e3);
}

// One "label  value" line of the text report.
void print_line(const char* label, const std::string& value) {
  std::printf("%-28s %s\n", label, value.c_str());
}

void print_text(const step_lag_result& r, const lag_summary& s, const status_snapshot& st) {
  std::printf("%s\n", track_machine_line(st).c_str());
  std::printf("cpu %s; vclock source: %s\n", read_cpu_model().c_str(), describe_source(st).c_str());
  std::printf(
      "lag = from the kernel's REALTIME step (the earliest it can have happened) until vclock's\n"
      "REALTIME agrees with the kernel within %s us: an upper bound (see the brackets)\n\n",
      us(r.threshold_ns).c_str());
  print_line("steps seen", r.inject_ns > 0
                               ? tool::strformat("%d of %d injected (+/-%s us, every 50 ms)",
                                                 s.seen, r.steps_injected, us(r.inject_ns).c_str())
                               : tool::strformat("%d", s.seen));
  print_line("never caught up", tool::strformat("%d", s.uncaught));
  print_line("caught up within 1 ms",
             tool::strformat("%d certainly, %d certainly not, %d unresolved", s.within_promise,
                             s.over_promise, unresolved(s)));
  print_line("lag p50 / p99 / max",
             us(s.lag.p50) + " / " + us(s.lag.p99) + " / " + us(s.lag.max) + " us");
  if (!r.floor_policy.empty()) {
    print_line("floor lag p50 / p99 / max",
               us(s.floor_lag.p50) + " / " + us(s.floor_lag.p99) + " / " + us(s.floor_lag.max) +
                   " us (a bare thread, " + r.floor_policy +
                   ", woken by the same steps: timerfd, TFD_TIMER_CANCEL_ON_SET; seen as vclock)");
    print_line("floor wake p50 / p99 / max", us(s.floor_wake.p50) + " / " + us(s.floor_wake.p99) +
                                                 " / " + us(s.floor_wake.max) +
                                                 " us (its own clock)");
    print_line("publish p50 / p99 / max", us(s.publish.p50) + " / " + us(s.publish.p99) + " / " +
                                              us(s.publish.max) +
                                              " us (the publish vclock caught up with, by its "
                                              "writer's clock)");
    if (s.lag.p50 >= 0 && s.floor_lag.p50 >= 0) {
      print_line("lag - floor p50 / p99", signed_us(s.lag.p50 - s.floor_lag.p50) + " / " +
                                              signed_us(s.lag.p99 - s.floor_lag.p99) + " us");
    }
    if (s.publish_after_floor_steps > 0) {
      print_line("publish - floor wake p50 / p99",
                 signed_us(s.publish.p50 - s.floor_wake.p50) + " / " +
                     signed_us(s.publish.p99 - s.floor_wake.p99) + " us; per step " +
                     signed_us(s.publish_after_floor.p50) + " / " +
                     signed_us(s.publish_after_floor.p99) +
                     tool::strformat(" us (%d steps; the threads' own clocks)",
                                     s.publish_after_floor_steps));
    }
  }
  print_line("step bracket p50 / max", us(s.step_bracket.p50) + " / " + us(s.step_bracket.max) +
                                           " us (when the step happened)");
  print_line("catch-up bracket p50 / max", us(s.catch_up_bracket.p50) + " / " +
                                               us(s.catch_up_bracket.max) +
                                               " us (when vclock caught up)");
  print_line(
      "samples",
      tool::strformat("%lld (%lld wider than %s us dropped)", static_cast<long long>(r.probes),
                      static_cast<long long>(r.discarded), us(r.width_limit_ns).c_str()));
  print_line("vclock off, no step pending",
             tool::strformat("%lld samples", static_cast<long long>(r.off_probes)));
  if (r.inject_ns > 0) {
    std::printf("REALTIME was stepped %d times and %s (net %lld ns)\n", r.steps_injected,
                r.net_ns == 0 ? "restored" : "NOT restored", static_cast<long long>(r.net_ns));
  }
  if (!r.inject_error.empty()) std::printf("injecting failed: %s\n", r.inject_error.c_str());
  if (r.stop_signal != 0) std::printf("interrupted by %s\n", strsignal(r.stop_signal));
  std::printf("no step certainly late, 80 %% of the %s certainly within 1 ms: %s\n",
              r.inject_ns > 0 ? "injected" : "seen", passes(r, s) ? "yes" : "NO");
}

void print_json(const step_lag_result& r, const lag_summary& s, const status_snapshot& st,
                const step_lag_options& o) {
  tool::json_writer j;
  j.begin_object()
      .field("command", "track")
      .field("measure", "steps")
      .field("source", st.source)
      .field("page", st.page);
  if (st.daemon_pid != 0) j.field("daemon_pid", st.daemon_pid);
  j.field("cpu", read_cpu_model())
      .field("mode", st.counter_mode ? "counter" : "fallback")
      .field("reason", st.reason)
      .field("counter_hz", st.counter_hz)
      .field("ordering", st.ordering)
      .field("kernel_clocksource", st.kernel_clocksource)
      .field("seconds", o.seconds)
      .field("threshold_ns", r.threshold_ns)
      .field("sample_width_limit_ns", r.width_limit_ns)
      .field("samples", r.probes)
      .field("samples_dropped", r.discarded)
      .field("samples_off_without_step", r.off_probes)
      .field("inject_step_ns", r.inject_ns)
      .field("steps_injected", r.steps_injected)
      .field("realtime_net_step_ns", r.net_ns)
      .field("realtime_restored", r.net_ns == 0);
  if (!r.inject_error.empty()) j.field("inject_error", r.inject_error);
  if (r.stop_signal != 0) j.field("interrupted_by", strsignal(r.stop_signal));
  j.field("steps_seen", s.seen)
      .field("steps_uncaught", s.uncaught)
      .field("steps_within_1ms", s.within_promise)
      .field("steps_over_1ms", s.over_promise)
      .field("steps_unresolved", unresolved(s))
      .field("lag_p50_ns", s.lag.p50)
      .field("lag_p99_ns", s.lag.p99)
      .field("lag_max_ns", s.lag.max)
      .field("floor_policy", r.floor_policy)
      .field("floor_lag_p50_ns", s.floor_lag.p50)
      .field("floor_lag_p99_ns", s.floor_lag.p99)
      .field("floor_lag_max_ns", s.floor_lag.max)
      .field("floor_wake_p50_ns", s.floor_wake.p50)
      .field("floor_wake_p99_ns", s.floor_wake.p99)
      .field("floor_wake_max_ns", s.floor_wake.max)
      .field("publish_p50_ns", s.publish.p50)
      .field("publish_p99_ns", s.publish.p99)
      .field("publish_max_ns", s.publish.max)
      .field("publish_after_floor_wake_steps", s.publish_after_floor_steps);
  if (s.publish_after_floor_steps > 0) {
    j.field("publish_after_floor_wake_p50_ns", s.publish_after_floor.p50)
        .field("publish_after_floor_wake_p99_ns", s.publish_after_floor.p99);
  }
  j.field("step_bracket_p50_ns", s.step_bracket.p50)
      .field("step_bracket_max_ns", s.step_bracket.max)
      .field("catch_up_bracket_p50_ns", s.catch_up_bracket.p50)
      .field("catch_up_bracket_max_ns", s.catch_up_bracket.max)
      .field("ok", passes(r, s))
      .key("steps")
      .begin_array();
  for (const step_record& x : r.steps) {
    j.begin_object()
        .field("size_ns", x.size_ns)
        .field("lag_ns", x.lag_ns)
        .field("lag_min_ns", x.lag_min_ns)
        .field("floor_lag_ns", x.floor_lag_ns)
        .field("floor_wake_ns", x.floor_wake_ns)
        .field("publish_ns", x.publish_ns)
        .field("step_bracket_ns", x.step_bracket_ns)
        .field("catch_up_bracket_ns", x.catch_up_bracket_ns)
        .end_object();
  }
  j.end_array().end_object();
  std::fputs(j.str().c_str(), stdout);
}

// After an interrupted run has put the clock back and reported: dies of the
// signal, as asked, now that nothing is left to undo (the signal is no
// longer blocked, and its action is still the default one).
void die_of(int sig) {
  std::fflush(stdout);
  raise(sig);
}

}  // namespace

int run_step_lag(const step_lag_options& o, const status_snapshot& st) {
  if (o.inject_us > 0) {
    if (const int err = realtime_step_permission(); err != 0) {
      return tool::usage_error(
          "track", tool::strformat("--inject-steps needs CAP_SYS_TIME (clock_adjtime: %s)",
                                   std::strerror(err)));
    }
  }
  const step_lag_result r = measure(o);
  const lag_summary s = summarise(r.steps);
  if (o.json) {
    print_json(r, s, st, o);
  } else {
    print_text(r, s, st);
  }
  if (!r.inject_error.empty()) {
    std::fprintf(stderr, "vclock: track: %s\n", r.inject_error.c_str());
  }
  if (r.stop_signal != 0) die_of(r.stop_signal);
  if (!r.inject_error.empty() || r.stop_signal != 0) return tool::exit_check_failed;
  return o.check && !passes(r, s) ? tool::exit_check_failed : tool::exit_ok;
}

}  // namespace vclock::cli
