// A deterministic simulated machine for the timekeeper: a true time, a CPU
// counter with its own oscillator, and a kernel with NTP, steps, leap seconds
// and suspend. It implements vclock::time_sources (what the timekeeper reads)
// and offers the same world to the reader code through counter_fn/kernel_fn.
//
// Model. True time t (ns) advances only when someone asks it to: advance_to()
// from the driver, and the cost of every time_sources call (a few ns of
// seeded noise, now and then a preemption of ~100 us), so the timekeeper's
// bracketed samples are noisy the way they are on a real machine. Nothing
// here sleeps or reads a real clock.
//
//   counter(t)  = its own oscillator: nominal_hz * scale * (1 + rate_ppm +
//                 wander_ppm * sin(2 pi t / period)) integrated over t, plus
//                 jumps; during a suspend it keeps running, stops, or
//                 restarts near 0.
//   RAW(t)      = integral of (1 + raw_ppm) over awake time.
//   MONOTONIC   = integral of (1 + raw_ppm)(1 + ntp_ppm(t)) over awake time;
//                 ntp_ppm changes by events (chrony's adjtimex calls).
//   REALTIME    = MONOTONIC + offs_real (steps, leap seconds, suspend time)
//   BOOTTIME    = MONOTONIC + offs_boot (suspend time)
//   TAI         = REALTIME + tai_s seconds
// The kernel's clocks do not derive from the counter (as with kvm-clock), so
// a counter that changes rate or jumps is visible against them.
//
// Events that make the kernel's TFD_TIMER_CANCEL_ON_SET timerfd fire (a
// REALTIME step, a leap second, a resume) set clock_was_set_pending(); the
// driver calls timekeeper::clock_was_set() at clock_was_set_at().
#ifndef VCLOCK_TESTS_SUPPORT_SIM_WORLD_H_
#define VCLOCK_TESTS_SUPPORT_SIM_WORLD_H_

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "lib/time_sources.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"

namespace vclock::sim {

inline constexpr std::int64_t ns_per_us = 1'000;
inline constexpr std::int64_t ns_per_ms = 1'000'000;
using detail::ns_per_s;
inline constexpr std::int64_t ns_per_min = 60 * ns_per_s;
inline constexpr std::int64_t ns_per_h = 3600 * ns_per_s;
inline constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();

// The CPU counter's oscillator.
struct counter_params {
  double nominal_hz = 2.4e9;
  double rate_ppm = 0;    // constant error of the true rate vs nominal_hz
  double wander_ppm = 0;  // amplitude of a sinusoidal rate wander
  std::int64_t wander_period_ns = ns_per_h;
  std::uint64_t start = 1'000'000'000'000;  // counter value at t = 0
  std::uint64_t step_ticks = 1;             // granularity: the value advances in steps
  // Reader CPUs' offsets from the writer's counter (CPU 0), in ticks; empty
  // means one CPU. The writer always reads CPU 0.
  std::vector<std::int64_t> cpu_offset_ticks;
};

// The kernel's clocks at t = 0 and their rates.
struct kernel_params {
  double raw_ppm = 0;                       // MONOTONIC_RAW vs true time (the kernel's clocksource)
  double ntp_ppm = 0;                       // MONOTONIC vs MONOTONIC_RAW at t = 0
  std::int64_t mono0_ns = 1000 * ns_per_s;  // uptime at t = 0
  std::int64_t raw0_ns = 1000 * ns_per_s - 123'456;
  std::int64_t realtime_offset_ns = 1'700'000'000 * ns_per_s - 1000 * ns_per_s;
  std::int64_t boottime_offset_ns = 0;
  int tai_offset_s = 37;
  std::int64_t jiffy_ns = 4 * ns_per_ms;            // coarse clocks' resolution (HZ=250)
  std::int64_t jiffy_phase_ns = 1'234'567;          // where the kernel's ticks fall
  std::int64_t notify_latency_ns = 20 * ns_per_us;  // event -> timerfd wakeup
};

// What a time_sources call costs in true time.
struct noise_params {
  std::int64_t cost_min_ns = 8;
  std::int64_t cost_max_ns = 30;
  double preempt_prob = 1e-6;           // per call
  double calibrating_preempt_prob = 0;  // per call while set_calibrating(true)
  std::int64_t preempt_min_ns = 50 * ns_per_us;
  std::int64_t preempt_max_ns = 150 * ns_per_us;
};

enum class event_kind {
  ntp_freq,       // value: the kernel's new NTP frequency, ppm
  counter_rate,   // value: the counter rate becomes `value` times nominal scale
  counter_jump,   // amount: ticks added to the counter (negative: backwards)
  suspend,        // amount: duration; counter_runs: the counter keeps counting
                  // (VM pause); counter_resets: it restarts near 0 (S3)
  realtime_step,  // amount: ns added to REALTIME (settimeofday)
  leap_insert,    // REALTIME steps back 1 s, TAI offset + 1 s
  leap_delete,    // REALTIME steps forward 1 s, TAI offset - 1 s
  writer_stall,   // amount: the timekeeper is not run for this long (a
                  // descheduled thread, a stopped daemon); readers go on
};

struct event {
  std::int64_t at_ns = 0;
  event_kind kind = event_kind::ntp_freq;
  double value = 0;
  std::int64_t amount = 0;
  bool counter_runs = false;
  bool counter_resets = false;
  // How long after the event (after the resume, for a suspend) the error
  // bounds are not applied; -1: the scenario's default for its kind.
  std::int64_t settle_ns = -1;
};

// splitmix64: a seeded, deterministic and cheap PRNG (cheap matters: the
// world draws ~60 numbers per tick, and the suite runs in Debug builds).
class prng {
 public:
  explicit prng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t operator()() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  std::int64_t in(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>((*this)() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  // True with probability p.
  bool chance(double p) { return static_cast<double>((*this)() >> 11) * 0x1.0p-53 < p; }

 private:
  std::uint64_t state_;
};

inline bool is_counter_fault(event_kind k) {
  return k == event_kind::counter_rate || k == event_kind::counter_jump;
}
inline bool sets_clock(event_kind k) {  // fires TFD_TIMER_CANCEL_ON_SET
  return k == event_kind::suspend || k == event_kind::realtime_step ||
         k == event_kind::leap_insert || k == event_kind::leap_delete;
}

class world final : public vclock::time_sources {
 public:
  world(counter_params counter, kernel_params kernel, noise_params noise, std::vector<event> events,
        std::uint64_t seed)
      : cp_(std::move(counter)), kp_(kernel), np_(noise), events_(std::move(events)), rng_(seed) {
    std::stable_sort(events_.begin(), events_.end(),
                     [](const event& a, const event& b) { return a.at_ns < b.at_ns; });
    c_anchor_ = static_cast<long double>(cp_.start);
    mono_anchor_ = kp_.mono0_ns;
    raw_anchor_ = kp_.raw0_ns;
    ntp_ppm_ = kp_.ntp_ppm;
    offs_real_ = kp_.realtime_offset_ns;
    offs_boot_ = kp_.boottime_offset_ns;
    tai_s_ = kp_.tai_offset_s;
    if (cp_.cpu_offset_ticks.empty()) cp_.cpu_offset_ticks.push_back(0);
  }

  // ---- time_sources: what the timekeeper sees. Each call costs true time.
  std::uint64_t read_counter() override {
    spend_before();
    const std::uint64_t v = counter_value(0);
    spend_after();
    ++source_calls_;
    last_call_read_counter_ = true;
    if (hook_ != nullptr) hook_(hook_ctx_);
    return v;
  }

  std::int64_t read_kernel(clockid_t clock) override {
    spend_before();
    const std::int64_t v = kernel_now(clock);
    spend_after();
    ++source_calls_;
    last_call_read_counter_ = false;
    if (hook_ != nullptr) hook_(hook_ctx_);
    return v;
  }

  // ---- The reader's side: the same world at the current instant, free.
  std::uint64_t counter_now(int cpu) const { return counter_value(cpu); }
  int cpus() const { return static_cast<int>(cp_.cpu_offset_ticks.size()); }
  const std::vector<std::int64_t>& cpu_offsets() const { return cp_.cpu_offset_ticks; }

  std::int64_t kernel_now(clockid_t clock) const {
    const std::int64_t mono = mono_ns();
    switch (clock) {
      case CLOCK_MONOTONIC:
        return mono;
      case CLOCK_MONOTONIC_RAW:
        return raw_ns();
      case CLOCK_REALTIME:
        return mono + offs_real_;
      case CLOCK_BOOTTIME:
        return mono + offs_boot_;
      case CLOCK_TAI:
        return mono + offs_real_ + std::int64_t{tai_s_} * ns_per_s;
      case CLOCK_MONOTONIC_COARSE:
        return coarse(mono);
      case CLOCK_REALTIME_COARSE:
        return coarse(mono) + offs_real_;
      default:
        return -22;  // -EINVAL, as kernel::now_ns would
    }
  }

  // Reader functors for detail::read_fast / read_careful.
  struct counter_fn {
    const world* w;
    int cpu;
    vclock::arch::counter_read operator()() const noexcept {
      ++w->reader_counter_calls_;
      return {w->counter_now(cpu), 0};
    }
  };
  struct kernel_fn {
    const world* w;
    clockid_t clock;
    std::int64_t operator()() const noexcept {
      ++w->reader_kernel_calls_;
      return w->kernel_now(clock);
    }
  };
  counter_fn reader_counter(int cpu) const { return {this, cpu}; }
  kernel_fn reader_kernel(clockid_t clock) const { return {this, clock}; }
  std::uint64_t reader_counter_calls() const { return reader_counter_calls_; }
  std::uint64_t reader_kernel_calls() const { return reader_kernel_calls_; }

  // ---- Driving the world.
  std::int64_t now() const { return t_; }

  // Moves true time forward to `t` (never back), applying every event due on
  // the way. A suspend moves time past its end at once.
  void advance_to(std::int64_t t) {
    while (next_event_ < events_.size() && events_[next_event_].at_ns <= t) {
      const event& e = events_[next_event_++];
      if (e.at_ns > t_) move_to(e.at_ns);
      apply(e);
    }
    if (t > t_) move_to(t);
  }

  // Called from inside every time_sources call, after its value was taken:
  // the driver uses it to read the page while the timekeeper is mid-update.
  void set_hook(void (*hook)(void*), void* ctx) {
    hook_ = hook;
    hook_ctx_ = ctx;
  }
  // The next time_sources call starts `ns` later: a preemption at a point of
  // the driver's choosing (the hook tells it where the timekeeper is).
  void delay_next_call(std::int64_t ns) { forced_delay_ns_ = ns; }
  bool last_call_read_counter() const { return last_call_read_counter_; }
  // Calibration samples get their own preemption rate.
  void set_calibrating(bool on) { calibrating_ = on; }

  // TFD_TIMER_CANCEL_ON_SET.
  bool clock_was_set_pending() const { return notify_at_ != never; }
  std::int64_t clock_was_set_at() const { return notify_at_; }
  void ack_clock_was_set() { notify_at_ = never; }

  // What happened so far, for the driver's bookkeeping.
  const std::vector<event>& events() const { return events_; }
  std::size_t events_applied() const { return next_event_; }
  std::int64_t next_event_at() const {
    return next_event_ < events_.size() ? events_[next_event_].at_ns : never;
  }
  std::int64_t suspended_ns() const { return suspended_ns_; }
  // Times (true time, after the fact) when events were applied, in order;
  // for a suspend, the resume time.
  const std::vector<std::int64_t>& applied_at() const { return applied_at_; }
  int realtime_epoch() const { return realtime_epoch_; }  // + on steps and leaps
  int tai_epoch() const { return tai_epoch_; }            // + on steps only
  std::uint64_t source_calls() const { return source_calls_; }
  std::uint64_t preemptions() const { return preemptions_; }
  double counter_nominal_hz() const { return cp_.nominal_hz; }

 private:
  // True time spent before and after a call's value is taken; a preemption
  // lands on either side.
  void spend_before() {
    cost_ = rng_.in(np_.cost_min_ns, np_.cost_max_ns);
    const double p =
        calibrating_ ? std::max(np_.preempt_prob, np_.calibrating_preempt_prob) : np_.preempt_prob;
    preempt_ = 0;
    preempt_before_ = false;
    if (p > 0 && rng_.chance(p)) {
      preempt_ = rng_.in(np_.preempt_min_ns, np_.preempt_max_ns);
      preempt_before_ = (rng_() & 1) != 0;
      ++preemptions_;
    }
    if (forced_delay_ns_ > 0) {
      advance_to(t_ + forced_delay_ns_);
      forced_delay_ns_ = 0;
      ++preemptions_;
    }
    advance_to(t_ + cost_ / 2 + (preempt_before_ ? preempt_ : 0));
  }
  void spend_after() { advance_to(t_ + cost_ - cost_ / 2 + (preempt_before_ ? 0 : preempt_)); }

  // Counter ticks elapsed from the anchor to `t` at the current scale,
  // with the sinusoidal wander integrated exactly.
  long double counter_elapsed(std::int64_t t) const {
    const long double dt = static_cast<long double>(t - t_anchor_);
    long double ticks_ns = dt * (1.0L + 1e-6L * cp_.rate_ppm);
    if (cp_.wander_ppm != 0) {  // |term| < ppm / w: double precision is plenty
      const double w = 2 * 3.14159265358979323846 / static_cast<double>(cp_.wander_period_ns);
      ticks_ns += 1e-6 * cp_.wander_ppm / w * (cos_anchor_ - std::cos(w * static_cast<double>(t)));
    }
    return ticks_ns * static_cast<long double>(cp_.nominal_hz) * scale_ * 1e-9L;
  }
  long double mono_rate() const { return (1.0L + 1e-6L * kp_.raw_ppm) * (1.0L + 1e-6L * ntp_ppm_); }
  long double raw_rate() const { return 1.0L + 1e-6L * kp_.raw_ppm; }

  std::uint64_t counter_value(int cpu) const {
    const long double c = c_anchor_ + counter_elapsed(t_);
    std::uint64_t v = static_cast<std::uint64_t>(std::floor(c));
    if (cp_.step_ticks > 1) v -= v % cp_.step_ticks;
    return v + static_cast<std::uint64_t>(cp_.cpu_offset_ticks[static_cast<std::size_t>(cpu)]);
  }
  std::int64_t mono_ns() const {
    return static_cast<std::int64_t>(
        std::floor(mono_anchor_ + static_cast<long double>(t_ - t_anchor_) * mono_rate()));
  }
  std::int64_t raw_ns() const {
    return static_cast<std::int64_t>(
        std::floor(raw_anchor_ + static_cast<long double>(t_ - t_anchor_) * raw_rate()));
  }
  // The kernel's coarse MONOTONIC: MONOTONIC at its last tick (jiffy), so
  // the same value for every read within a jiffy.
  std::int64_t coarse(std::int64_t mono) const {
    const std::int64_t since_tick =
        ((t_ - kp_.jiffy_phase_ns) % kp_.jiffy_ns + kp_.jiffy_ns) % kp_.jiffy_ns;
    const std::int64_t t_tick = t_ - since_tick;
    if (t_tick < t_anchor_) {
      return std::min(mono, static_cast<std::int64_t>(std::floor(mono_anchor_)));
    }
    return static_cast<std::int64_t>(
        std::floor(mono_anchor_ + static_cast<long double>(t_tick - t_anchor_) * mono_rate()));
  }

  void move_to(std::int64_t t) { t_ = t; }
  // Re-anchors every clock at t_ (so rates can change there).
  void reanchor() {
    c_anchor_ += counter_elapsed(t_);
    mono_anchor_ += static_cast<long double>(t_ - t_anchor_) * mono_rate();
    raw_anchor_ += static_cast<long double>(t_ - t_anchor_) * raw_rate();
    set_anchor_time(t_);
  }
  void set_anchor_time(std::int64_t t) {
    t_anchor_ = t;
    cos_anchor_ = std::cos(2 * 3.14159265358979323846 / static_cast<double>(cp_.wander_period_ns) *
                           static_cast<double>(t));
  }

  void apply(const event& e) {
    reanchor();
    switch (e.kind) {
      case event_kind::ntp_freq:
        ntp_ppm_ = e.value;
        break;
      case event_kind::counter_rate:
        scale_ = static_cast<long double>(e.value);
        break;
      case event_kind::counter_jump:
        c_anchor_ += static_cast<long double>(e.amount);
        break;
      case event_kind::realtime_step:
        offs_real_ += e.amount;
        ++realtime_epoch_;
        ++tai_epoch_;
        break;
      case event_kind::leap_insert:
        offs_real_ -= ns_per_s;
        ++tai_s_;
        ++realtime_epoch_;
        break;
      case event_kind::leap_delete:
        offs_real_ += ns_per_s;
        --tai_s_;
        ++realtime_epoch_;
        break;
      case event_kind::writer_stall:
        break;  // the world goes on; the driver skips the writer's ticks
      case event_kind::suspend: {
        // MONOTONIC and RAW stand still; BOOTTIME and REALTIME take the
        // sleep time at resume (timekeeping_inject_sleeptime).
        const long double c_before = c_anchor_;
        t_ += e.amount;
        if (e.counter_runs) {
          c_anchor_ += counter_elapsed(t_);
        } else if (e.counter_resets) {
          c_anchor_ = 5'000'000;  // firmware restarted it
        } else {
          c_anchor_ = c_before;
        }
        set_anchor_time(t_);
        offs_boot_ += e.amount;
        offs_real_ += e.amount;
        suspended_ns_ += e.amount;
        break;
      }
    }
    applied_at_.push_back(t_);
    if (sets_clock(e.kind)) notify_at_ = std::min(notify_at_, t_ + kp_.notify_latency_ns);
  }

  counter_params cp_;
  kernel_params kp_;
  noise_params np_;
  std::vector<event> events_;
  std::size_t next_event_ = 0;
  prng rng_;
  void (*hook_)(void*) = nullptr;
  void* hook_ctx_ = nullptr;

  std::int64_t t_ = 0;
  std::int64_t t_anchor_ = 0;
  double cos_anchor_ = 1;  // cos(2 pi t_anchor_ / wander_period_ns)
  long double c_anchor_ = 0;
  long double scale_ = 1;
  long double mono_anchor_ = 0;
  long double raw_anchor_ = 0;
  double ntp_ppm_ = 0;
  std::int64_t offs_real_ = 0;
  std::int64_t offs_boot_ = 0;
  int tai_s_ = 0;

  std::int64_t notify_at_ = never;
  std::int64_t suspended_ns_ = 0;
  std::vector<std::int64_t> applied_at_;
  int realtime_epoch_ = 0;
  int tai_epoch_ = 0;
  bool calibrating_ = false;
  std::int64_t cost_ = 0;
  std::int64_t preempt_ = 0;
  bool preempt_before_ = false;
  std::int64_t forced_delay_ns_ = 0;
  bool last_call_read_counter_ = false;
  std::uint64_t source_calls_ = 0;
  std::uint64_t preemptions_ = 0;
  mutable std::uint64_t reader_counter_calls_ = 0;
  mutable std::uint64_t reader_kernel_calls_ = 0;
};

}  // namespace vclock::sim

#endif  // VCLOCK_TESTS_SUPPORT_SIM_WORLD_H_
