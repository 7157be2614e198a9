// The real timekeeper and the real reader code, driven through the scenarios
// of tests/support/scenarios.h by a simulated counter and kernel
// (tests/support/sim_world.h). Deterministic: no sleeps, no real clocks.
//
// How 24 h fit in a few seconds. Each scenario runs twice:
//  - fine: its first fine_duration_ns (2-12 min, plus any suspend) with the
//    production config (4 ms tick). Scenarios put their events there.
//  - long: its whole duration (>= 24 h awake) with tick_ns = 250 ms: 345 600
//    ticks a day instead of 21.6 M. Settle times are scaled by the tick
//    ratio (the same number of ticks). phase_time_ns is 4 ticks (1 s), not
//    64 ms: the rate fit lags a frequency ramp by half its 32-tick window,
//    and the phase error that lag leaves grows as tick^2, so a 16-tick phase
//    time would measure the 250 ms tick, not the timekeeper (134 ns p99 in
//    FrequencyWander against 50 ns at 4 ticks and 15 ns in the fine run).
//    The 1 ms bound on a counter fault is scaled to 62.5 ms: a fault grows
//    an error for up to a tick before any timekeeper can see it. Every other
//    bound is the issue's, in both runs.
//
// Between ticks the driver makes 6 reads per tick at seeded random times, in
// sim-time order, rotating over the clock kinds and the simulated CPUs,
// through detail::read_fast<K> -> read_careful<K>. It also reads from inside
// the timekeeper's own time_sources calls (1 in 16, 1 in 2 in NoisySamples),
// i.e. while the writer is mid-update, so the backup line is exercised.
// Just before and right after each step, leap, suspend or counter fault, and
// right after each clock_was_set() and 1 ms later, it reads every clock.
//
// Invariants:
//  - monotonic: MONOTONIC, MONOTONIC_RAW, BOOTTIME, MONOTONIC_COARSE never go
//    back, per CPU and across CPUs; REALTIME likewise except where the page
//    mirrors a kernel step or leap second, TAI except at a kernel step. A
//    CPU whose counter leads the writer's by s ticks can read past the
//    switch point with the old parameters, so on it (and across CPUs, by
//    their spread) a step back of s ticks + 1 ns is tolerated: the one thing
//    a simulation with instant reads cannot hide. CPU 0 shares the writer's
//    counter and is held strictly. A counter jump back smaller than the time
//    since the last update is invisible to readers (it looks like time going
//    slower), so a step back of that size is allowed for two ticks after it.
//  - continuity: around every tick() and clock_was_set(), the old hot line
//    evaluated at the new cycle_last equals the new base within 1 ns
//    (MONOTONIC and RAW) unless the old line was stale; the REALTIME,
//    BOOTTIME and TAI offsets change only while a kernel step, leap second
//    or resume is being mirrored, and TAI not at all at a leap second.
//  - error vs the kernel once settled (2 s after the start and after each
//    event, 5 s after a counter fault, at 4 ms; scenarios.h):
//    p99 <= 100 ns and max <= 1 us for MONOTONIC, REALTIME, RAW, BOOTTIME and
//    TAI; coarse clocks at most 1 us ahead and 2 ticks behind.
//  - always, except in the 1 ms after a step, leap or resume: every fine
//    clock within 1 ms of the kernel. This is "after a step, REALTIME and TAI
//    agree within 1 ms" and "a misbehaving counter never gives a time more
//    than 1 ms from the kernel".
//  - always: no reader ahead of the kernel by more than the page's validity
//    window (max_delta in ns), e.g. right after an 8 h suspend.
//  - a counter fault (rate change, jump) is detected (max_delta 0 or reason
//    counter_jumped/counter_rate_wrong) by the end of the first tick that
//    starts a full tick after it.
// Each run prints one summary line ("[ sim      ] ...") and records its
// main figures as test properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/timekeeper.h"
#include "support/scenarios.h"
#include "support/sim_world.h"
#include "vclock/detail/reader.h"
#include "vclock/page.h"

namespace vclock::sim {
namespace {

using detail::clock_kind;

constexpr int kind_count = 7;
constexpr clock_kind kinds[kind_count] = {
    clock_kind::monotonic,      clock_kind::realtime, clock_kind::monotonic_raw,
    clock_kind::boottime,       clock_kind::tai,      clock_kind::monotonic_coarse,
    clock_kind::realtime_coarse};

// The page stores each clock's base; the kernel's offsets from MONOTONIC,
// which must not move without a kernel step, are their differences.
std::int64_t realtime_offset(const clock_line& l) { return l.realtime_ns - l.mono_ns; }
std::int64_t boottime_offset(const clock_line& l) { return l.boottime_ns - l.mono_ns; }

const char* kind_name(clock_kind k) {
  switch (k) {
    case clock_kind::realtime:
      return "realtime";
    case clock_kind::monotonic:
      return "monotonic";
    case clock_kind::monotonic_raw:
      return "raw";
    case clock_kind::boottime:
      return "boottime";
    case clock_kind::tai:
      return "tai";
    case clock_kind::realtime_coarse:
      return "realtime_coarse";
    case clock_kind::monotonic_coarse:
      return "monotonic_coarse";
  }
  return "?";
}

// The kernel clock a reader's fallback asks, and the one its answer is
// measured against (coarse clocks: against the fine clock).
clockid_t fallback_clock(clock_kind k) { return vclock::detail::kernel_clock_of(k); }
clockid_t reference_clock(clock_kind k) {
  if (k == clock_kind::realtime_coarse) return CLOCK_REALTIME;
  if (k == clock_kind::monotonic_coarse) return CLOCK_MONOTONIC;
  return fallback_clock(k);
}

struct run_config {
  const char* label = "";
  std::int64_t duration_ns = 0;
  int reads_per_tick = 6;
  double tick_ratio = 1;  // tick / 4 ms: settle times scale with it
  std::int64_t fault_bound_ns = ns_per_ms;
  timekeeper_config tk;
};

run_config fine_config(const scenario& s) {
  run_config rc;
  rc.label = "fine";
  rc.duration_ns = s.fine_duration_ns;
  return rc;
}

run_config long_config(const scenario& s) {
  run_config rc;
  rc.label = "long";
  rc.duration_ns = s.duration_ns;
  const timekeeper_config production;
  rc.tk.tick_ns = 250 * ns_per_ms;
  rc.tick_ratio = static_cast<double>(rc.tk.tick_ns) / static_cast<double>(production.tick_ns);
  rc.tk.phase_time_ns = 4 * rc.tk.tick_ns;
  rc.fault_bound_ns = static_cast<std::int64_t>(ns_per_ms * rc.tick_ratio);
  return rc;
}

// A failed invariant: how often, the worst size (ns) and the first few.
struct violations {
  std::uint64_t count = 0;
  std::int64_t worst_ns = 0;
  std::vector<std::string> first;
  void add(const std::string& what, std::int64_t size_ns = 0) {
    worst_ns = std::max(worst_ns, std::abs(size_ns));
    if (count++ < 5) first.push_back(what);
  }
};

// Error distribution of non-negative values in ns: exact below 4096 ns,
// then 64 buckets per power of two (1.6%); the max is exact. Cheap to fill
// (the long runs add millions of values, in Debug builds).
class histogram {
 public:
  void add(std::int64_t v) {
    v = std::max<std::int64_t>(v, 0);
    ++counts_[bucket(v)];
    ++n_;
    max_ = std::max(max_, v);
  }
  std::uint64_t n() const { return n_; }
  std::int64_t max() const { return max_; }
  // The smallest value v such that at least q of the values are <= v (its
  // bucket's upper end above 4096 ns).
  std::int64_t percentile(double q) const {
    if (n_ == 0) return 0;
    const auto want = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n_)));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < counts_.size(); ++b) {
      seen += counts_[b];
      if (seen >= std::max<std::uint64_t>(want, 1)) return std::min(upper(b), max_);
    }
    return max_;
  }

 private:
  static constexpr std::int64_t exact = 4096;
  static std::size_t bucket(std::int64_t v) {
    if (v < exact) return static_cast<std::size_t>(v);
    const int e = 63 - __builtin_clzll(static_cast<unsigned long long>(v));  // >= 12
    const auto m = static_cast<std::size_t>((v >> (e - 6)) & 63);
    return static_cast<std::size_t>(exact) + static_cast<std::size_t>(e - 12) * 64 + m;
  }
  static std::int64_t upper(std::size_t b) {
    if (b < static_cast<std::size_t>(exact)) return static_cast<std::int64_t>(b);
    const auto i = b - static_cast<std::size_t>(exact);
    const auto e = static_cast<int>(i / 64) + 12;
    const auto m = static_cast<std::int64_t>(i % 64);
    return ((64 + m + 1) << (e - 6)) - 1;
  }
  std::vector<std::uint64_t> counts_ = std::vector<std::uint64_t>(exact + std::size_t{52} * 64);
  std::uint64_t n_ = 0;
  std::int64_t max_ = 0;
};

struct kind_stats {
  histogram settled;         // |error| (coarse: lag) in settled windows
  std::int64_t max_abs = 0;  // over every read
  std::uint64_t reads = 0;
  std::uint64_t fallbacks = 0;  // reads the kernel answered
  std::int64_t last = 0;
  std::int64_t last_epoch = -1;
  std::vector<std::int64_t> last_cpu;
  std::vector<std::int64_t> last_cpu_epoch;
};

struct percentiles {
  std::int64_t p50 = 0, p99 = 0, max = 0;
  std::uint64_t n = 0;
};

percentiles summarize(const histogram& h) {
  return {h.percentile(0.50), h.percentile(0.99), h.max(), h.n()};
}

std::string fmt(const char* f, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}

class driver {
 public:
  driver(const scenario& s, run_config rc)
      : s_(s),
        rc_(rc),
        page_(std::make_unique<page>()),
        world_(s.counter, s.kernel, s.noise, s.events, s.seed),
        tk_(*page_, world_, rc_.tk),
        rng_(s.seed * 7919 + static_cast<std::uint64_t>(rc_.tk.tick_ns)) {
    for (auto& k : stats_) {
      k.last_cpu.assign(static_cast<std::size_t>(world_.cpus()), 0);
      k.last_cpu_epoch.assign(static_cast<std::size_t>(world_.cpus()), -1);
    }
    std::int64_t lo = 0, hi = 0;
    for (std::int64_t o : s.counter.cpu_offset_ticks) {
      lo = std::min(lo, o);
      hi = std::max(hi, o);
    }
    for (std::int64_t o : world_.cpu_offsets()) {
      cpu_ahead_ns_.push_back(
          o > 0 ? static_cast<std::int64_t>(static_cast<double>(o) * 1e9 / s.counter.nominal_hz) + 1
                : 0);
    }
    cross_cpu_slack_ns_ =
        static_cast<std::int64_t>(static_cast<double>(hi - lo) * 1e9 / s.counter.nominal_hz) + 1;
    settled_from_ = scaled(s.settle_ns);
  }

  void run() {
    world_.set_hook([](void* self) { static_cast<driver*>(self)->on_source_call(); }, this);
    tk_.start();
    next_tick_ = 1'700'000;  // ticks do not line up with the events' round times
    while (true) {
      const std::int64_t t_read = next_read_ < reads_.size() ? reads_[next_read_] : never;
      const std::int64_t t_burst = bursts_.empty() ? never : bursts_.front().first;
      // Stop at each event too, so that the reads right after it happen.
      const std::int64_t t = std::min(
          {next_tick_, t_read, t_burst, world_.clock_was_set_at(), world_.next_event_at()});
      if (t >= rc_.duration_ns) break;
      if (t > world_.now()) {
        world_.advance_to(t);
        if (after_world_moved()) continue;  // a suspend moved the schedule
      }
      const std::int64_t now = world_.now();
      if (world_.clock_was_set_pending() && world_.clock_was_set_at() <= now) {
        do_clock_was_set();
      } else if (next_tick_ <= now) {
        do_tick();
      } else if (t_burst <= now) {
        const clock_kind k = bursts_.front().second;
        bursts_.erase(bursts_.begin());
        do_read(k, static_cast<int>(rng_() % static_cast<unsigned>(world_.cpus())), false);
      } else if (t_read <= now) {
        ++next_read_;
        do_read(kinds[rr_kind_++ % kind_count], rr_cpu_++ % world_.cpus(), false);
      }
      after_world_moved();
    }
    world_.set_hook(nullptr, nullptr);
  }

  // The one-line summary and the assertions.
  void report_and_check() {
    const percentiles mono = summarize(stats(clock_kind::monotonic).settled);
    const percentiles real = summarize(stats(clock_kind::realtime).settled);
    const percentiles raw = summarize(stats(clock_kind::monotonic_raw).settled);
    std::uint64_t reads = 0, fallbacks = 0;
    for (const auto& k : stats_) {
      reads += k.reads;
      fallbacks += k.fallbacks;
    }
    const percentiles mcoarse = summarize(stats(clock_kind::monotonic_coarse).settled);
    std::printf("[ sim      ] %s/%s: %.1f h, tick %" PRId64 " ms: mono p50/p99/max %" PRId64
                "/%" PRId64 "/%" PRId64 " ns, realtime %" PRId64 "/%" PRId64 "/%" PRId64
                " ns, raw %" PRId64 "/%" PRId64 "/%" PRId64
                " ns (settled); worst |err| any time mono %" PRId64 " realtime %" PRId64
                " ns; coarse lag max %.2f ms; reads %" PRIu64 " (%" PRIu64
                " mid-update, max frozen %" PRId64 " ns), fallbacks %" PRIu64 ", publishes %" PRIu64
                ", resyncs %" PRIu64 ", faults %zu, preemptions %" PRIu64 ", %.2f s\n",
                s_.name, rc_.label, static_cast<double>(rc_.duration_ns) / ns_per_h,
                rc_.tk.tick_ns / ns_per_ms, mono.p50, mono.p99, mono.max, real.p50, real.p99,
                real.max, raw.p50, raw.p99, raw.max, stats(clock_kind::monotonic).max_abs,
                stats(clock_kind::realtime).max_abs, static_cast<double>(mcoarse.max) / 1e6, reads,
                mid_update_reads_, mid_update_max_lag_, fallbacks, publishes_, resyncs_,
                faults_.size(), world_.preemptions(), wall_s);
    std::fflush(stdout);
    const std::string prefix = std::string(rc_.label) + "_";
    ::testing::Test::RecordProperty(prefix + "mono_p99_ns", std::to_string(mono.p99));
    ::testing::Test::RecordProperty(prefix + "mono_max_ns", std::to_string(mono.max));
    ::testing::Test::RecordProperty(prefix + "realtime_p99_ns", std::to_string(real.p99));
    ::testing::Test::RecordProperty(prefix + "realtime_max_ns", std::to_string(real.max));
    ::testing::Test::RecordProperty(prefix + "reads", std::to_string(reads));
    ::testing::Test::RecordProperty(prefix + "fallbacks", std::to_string(fallbacks));
    ::testing::Test::RecordProperty(prefix + "publishes", std::to_string(publishes_));

    EXPECT_GT(publishes_, 0u) << rc_.label << ": the timekeeper never published";
    for (int i = 0; i < kind_count; ++i) {
      if (detail::is_coarse(kinds[i])) continue;
      const percentiles p = summarize(stats(kinds[i]).settled);
      EXPECT_GT(p.n, 0u) << rc_.label << ": no settled " << kind_name(kinds[i]) << " reads";
      if (p.p99 > 100) {
        v_["error p99 > 100 ns"].add(fmt("%s: p99 %" PRId64 " ns over %" PRIu64 " settled reads",
                                         kind_name(kinds[i]), p.p99, p.n),
                                     p.p99);
      }
      if (p.max > 1000) {
        v_["error max > 1 us"].add(fmt("%s: max %" PRId64 " ns over %" PRIu64 " settled reads",
                                       kind_name(kinds[i]), p.max, p.n),
                                   p.max);
      }
    }
    for (const auto& [what, v] : v_) {
      std::string first;
      for (const auto& f : v.first) first += "\n    " + f;
      ADD_FAILURE() << s_.name << "/" << rc_.label << ": " << what << ": " << v.count
                    << " times, worst " << v.worst_ns << " ns; first:" << first;
    }
  }

  double wall_s = 0;

 private:
  kind_stats& stats(clock_kind k) { return stats_[static_cast<std::size_t>(k)]; }

  std::int64_t scaled(std::int64_t ns) const {
    return static_cast<std::int64_t>(static_cast<double>(ns) * rc_.tick_ratio);
  }

  std::int64_t settle_for(const event& e) const {
    if (e.settle_ns >= 0) return scaled(e.settle_ns);
    return scaled(is_counter_fault(e.kind) ? s_.fault_settle_ns : s_.event_settle_ns);
  }

  // Bookkeeping after true time moved (by the driver or inside the
  // timekeeper's calls). Returns true when a suspend moved the schedule.
  bool after_world_moved() {
    bool moved = false;
    while (events_seen_ < world_.events_applied()) {
      const event& e = world_.events()[events_seen_];
      const std::int64_t at = world_.applied_at()[events_seen_];
      ++events_seen_;
      unsettled_until_ = std::max(unsettled_until_, at + settle_for(e));
      if (sets_clock(e.kind)) {
        exempt_until_ = std::max(exempt_until_, at + ns_per_ms);
        offsets_may_change_until_ = never;  // until clock_was_set() and two ticks
      }
      if (is_counter_fault(e.kind)) faults_.push_back({at, false, false});
      if (e.kind == event_kind::counter_jump && e.amount < 0) {
        jump_allowance_ns_ = static_cast<std::int64_t>(static_cast<double>(-e.amount) * 1e9 /
                                                       s_.counter.nominal_hz) +
                             1;
        jump_allowance_until_ = at + 2 * rc_.tk.tick_ns;
      }
      if (e.kind == event_kind::realtime_step || e.kind == event_kind::suspend)
        ++steps_applied_;  // TAI moves
      if (e.kind == event_kind::writer_stall) {
        // No tick until it ends; a read every 1 ms meanwhile (in the long
        // run, every 1/8 tick), every clock in turn.
        const std::int64_t end = at + e.amount;
        while (next_tick_ < end) next_tick_ += rc_.tk.tick_ns;
        // The coarse clocks read no counter: they stand still while nothing
        // publishes (documented), behind the kernel, never ahead.
        coarse_stalled_until_ = std::max(coarse_stalled_until_, next_tick_ + rc_.tk.tick_ns);
        const std::int64_t every = std::max<std::int64_t>(ns_per_ms, rc_.tk.tick_ns / 8);
        int i = 0;
        for (std::int64_t t = at + every / 2; t < next_tick_; t += every, ++i) {
          bursts_.push_back({t, kinds[i % kind_count]});
        }
        // And MONOTONIC every 1 us (in the long run, 4000 reads a tick)
        // over the tick in which the page goes stale,
        // where a reader's last page value and its first kernel-based one
        // meet: closer than the page can drift from the kernel in a window.
        const std::int64_t window = validity_ns();
        const std::int64_t step = std::max<std::int64_t>(ns_per_us, rc_.tk.tick_ns / 4000);
        for (std::int64_t t = at + window - rc_.tk.tick_ns; t < at + window && t < next_tick_;
             t += step) {
          bursts_.push_back({t, clock_kind::monotonic});
        }
        std::sort(bursts_.begin(), bursts_.end());
      }
      if (sets_clock(e.kind) || is_counter_fault(e.kind)) {
        // Read every clock right after the event, before the notification.
        for (int i = 0; i < kind_count; ++i)
          bursts_.push_back({at + 1000 + std::int64_t{500} * i, kinds[i]});
        std::sort(bursts_.begin(), bursts_.end());
      }
    }
    // And every clock just before the next such event.
    const std::size_t next = world_.events_applied();
    if (next < world_.events().size() && next != pre_burst_for_) {
      const event& e = world_.events()[next];
      if (sets_clock(e.kind) || is_counter_fault(e.kind)) {
        pre_burst_for_ = next;
        for (int i = 0; i < kind_count; ++i) {
          const std::int64_t at = e.at_ns - 4000 + std::int64_t{500} * i;
          if (at > world_.now()) bursts_.push_back({at, kinds[i]});
        }
        std::sort(bursts_.begin(), bursts_.end());
      }
    }
    if (world_.suspended_ns() != suspended_seen_) {
      const std::int64_t d = world_.suspended_ns() - suspended_seen_;
      suspended_seen_ = world_.suspended_ns();
      next_tick_ += d;  // the tick timer is on CLOCK_MONOTONIC: it slept too
      for (std::size_t i = next_read_; i < reads_.size(); ++i) reads_[i] += d;
      moved = true;
    }
    return moved;
  }

  clock_line snapshot() const { return page_->hot; }  // single-threaded: a plain copy

  void do_tick() {
    const std::int64_t start = world_.now();
    world_.set_calibrating(tk_.reason() == fallback_reason::calibrating ||
                           tk_.reason() == fallback_reason::not_started);
    const clock_line before = snapshot();
    in_tk_ = true;
    tk_.tick();
    in_tk_ = false;
    if (deferred_read_) finish_deferred_read();
    check_publish(before, snapshot(), "tick");
    check_faults(start);

    // Schedule this period's reads.
    reads_.clear();
    next_read_ = 0;
    for (int i = 0; i < rc_.reads_per_tick; ++i) {
      reads_.push_back(next_tick_ + static_cast<std::int64_t>(
                                        rng_() % static_cast<std::uint64_t>(rc_.tk.tick_ns)));
    }
    std::sort(reads_.begin(), reads_.end());
    next_tick_ += rc_.tk.tick_ns;
  }

  void do_clock_was_set() {
    world_.ack_clock_was_set();
    const clock_line before = snapshot();
    in_tk_ = true;
    tk_.clock_was_set();
    in_tk_ = false;
    if (deferred_read_) finish_deferred_read();
    check_publish(before, snapshot(), "clock_was_set");
    // Offsets may still move in the next two ticks (the timekeeper may
    // re-measure them there).
    offsets_may_change_until_ = world_.now() + 2 * rc_.tk.tick_ns;
    // Read every clock right after the notification, and right after the
    // 1 ms in which the page may still show the old offsets.
    const std::int64_t now = world_.now();
    for (int i = 0; i < kind_count; ++i) {
      bursts_.push_back({now + 1000 + std::int64_t{500} * i, kinds[i]});
      bursts_.push_back({exempt_until_ + 1000 + std::int64_t{500} * i, kinds[i]});
    }
    std::sort(bursts_.begin(), bursts_.end());
  }

  void check_faults(std::int64_t tick_start) {
    const auto reason = static_cast<fallback_reason>(page_->mode_reason);
    // Detected: the page off for the fault's own reason. An off page alone is not a
    // detection (a timekeeper still calibrating, or never started, has one too).
    const bool detected =
        page_->hot.max_delta == 0 && (reason == fallback_reason::counter_jumped ||
                                      reason == fallback_reason::counter_rate_wrong);
    for (auto& f : faults_) {
      if (f.detected || f.reported) continue;
      if (detected && tick_start > f.at) {
        f.detected = true;
      } else if (tick_start >= f.at + rc_.tk.tick_ns) {
        f.reported = true;
        v_["counter fault not detected within one tick"].add(
            fmt("fault at %.6f s; tick at %.6f s left max_delta %" PRIu64 ", reason %u",
                static_cast<double>(f.at) / 1e9, static_cast<double>(tick_start) / 1e9,
                page_->hot.max_delta, page_->mode_reason));
      }
    }
  }

  // Continuity at the switch point: the old line at the new cycle_last.
  void check_publish(const clock_line& before, const clock_line& after, const char* what) {
    if (after.seq != before.seq) publishes_ += (after.seq - before.seq) / 2;
    const double t_s = static_cast<double>(world_.now()) / 1e9;
    if (before.max_delta == 0 && after.max_delta != 0 && before.seq != 0) {
      if (after.mono_ns < before.mono_ns || after.raw_ns < before.raw_ns) {
        v_["leaving fallback below the floor"].add(fmt("%s at %.6f s: mono %" PRId64
                                                       " < floor %" PRId64,
                                                       what, t_s, after.mono_ns, before.mono_ns));
      }
    }
    if (before.max_delta == 0 || after.max_delta == 0) return;
    const std::uint64_t d = after.cycle_last - before.cycle_last;
    if (d >= before.max_delta) {
      ++resyncs_;  // stale page or a counter behind: a forward step is allowed
      // ... but not in a settled window: there no fault explains a page left stale, and
      // a timekeeper that lets it go stale has every reader ask the kernel meanwhile.
      if (world_.now() >= settled_from_ && world_.now() >= unsettled_until_) {
        v_["page went stale (resync) in a settled window"].add(
            fmt("%s at %.6f s: %" PRIu64 " ticks since the last switch point, max_delta %" PRIu64,
                what, t_s, d, before.max_delta));
      }
      return;
    }
    const unsigned shift = detail::load_shift(before);
    const std::int64_t old_mono = before.mono_ns + detail::delta_to_ns(d, before.mult, shift);
    const std::int64_t old_raw = before.raw_ns + detail::delta_to_ns(d, before.raw_mult, shift);
    if (std::abs(after.mono_ns - old_mono) > 1) {
      v_["MONOTONIC discontinuous at a publish"].add(
          fmt("%s at %.6f s: new base %" PRId64 " - old(c) %" PRId64 " = %" PRId64 " ns (d %" PRIu64
              " ticks)",
              what, t_s, after.mono_ns, old_mono, after.mono_ns - old_mono, d),
          after.mono_ns - old_mono);
    }
    if (std::abs(after.raw_ns - old_raw) > 1) {
      v_["MONOTONIC_RAW discontinuous at a publish"].add(
          fmt("%s at %.6f s: new base - old(c) = %" PRId64 " ns", what, t_s,
              after.raw_ns - old_raw),
          after.raw_ns - old_raw);
    }
    // TAI does not move at a leap second, only at a REALTIME step.
    const std::int64_t tai_before = realtime_offset(before) + before.tai_offset_s * ns_per_s;
    const std::int64_t tai_after = realtime_offset(after) + after.tai_offset_s * ns_per_s;
    if (tai_after != tai_before && steps_applied_ != steps_at_last_tai_change_) {
      steps_at_last_tai_change_ = steps_applied_;  // the step the kernel made
    } else if (std::abs(tai_after - tai_before) > 1) {
      v_["TAI offset moved without a REALTIME step"].add(
          fmt("%s at %.6f s: TAI moved %+" PRId64 " ns (realtime offset %+" PRId64
              " ns, tai %+d s)",
              what, t_s, tai_after - tai_before, realtime_offset(after) - realtime_offset(before),
              after.tai_offset_s - before.tai_offset_s),
          tai_after - tai_before);
    }
    const bool offsets_changed = realtime_offset(after) != realtime_offset(before) ||
                                 boottime_offset(after) != boottime_offset(before) ||
                                 after.tai_offset_s != before.tai_offset_s;
    if (offsets_changed && world_.now() > offsets_may_change_until_) {
      v_["offset changed with no kernel step (REALTIME/BOOTTIME/TAI discontinuous)"].add(
          fmt("%s at %.6f s: realtime %+" PRId64 " ns, boottime %+" PRId64 " ns, tai %+d s", what,
              t_s, realtime_offset(after) - realtime_offset(before),
              boottime_offset(after) - boottime_offset(before),
              after.tai_offset_s - before.tai_offset_s));
    }
  }

  // A reader that finds both lines odd spins until the writer closes the
  // backup (a few instructions later). This single thread cannot spin, so
  // such a read is made at the next point the writer reaches instead, which
  // is when the spinning reader would read its counter.
  void on_source_call() {
    if (!in_tk_ || in_hook_) return;
    const bool both_odd = ((page_->hot.seq & page_->backup.seq) & 1u) != 0;
    // Once per update: the first counter read after the backup closed.
    const bool backup_closed = (page_->hot.seq & 1u) != 0 && (page_->backup.seq & 1u) == 0;
    if (s_.preempt_after_switch_point_ns > 0 && backup_closed && world_.last_call_read_counter() &&
        page_->hot.seq != preempted_seq_) {
      preempted_seq_ = page_->hot.seq;
      world_.delay_next_call(s_.preempt_after_switch_point_ns);
    }
    if (deferred_read_ && !both_odd) finish_deferred_read();
    if (rng_() % static_cast<std::uint64_t>(s_.mid_update_read_one_in) != 0) return;
    if (both_odd) {
      deferred_read_ = true;
      return;
    }
    in_hook_ = true;
    do_read(kinds[rng_() % kind_count],
            static_cast<int>(rng_() % static_cast<unsigned>(world_.cpus())), true);
    in_hook_ = false;
  }

  void finish_deferred_read() {
    deferred_read_ = false;
    in_hook_ = true;
    do_read(kinds[rng_() % kind_count],
            static_cast<int>(rng_() % static_cast<unsigned>(world_.cpus())), true);
    in_hook_ = false;
  }

  template <clock_kind K>
  std::int64_t read_as(int cpu, bool& kernel_called) {
    const auto base_counter = world_.reader_counter(cpu);
    int calls = 0;
    auto counter = [&]() noexcept {
      if (++calls > 100000) {
        std::fprintf(stderr, "reader spins forever at t=%" PRId64 " (seq %u, backup seq %u)\n",
                     world_.now(), page_->hot.seq, page_->backup.seq);
        std::abort();
      }
      return base_counter();
    };
    const auto base_kernel = world_.reader_kernel(fallback_clock(K));
    auto kernel = [&]() noexcept {
      kernel_called = true;
      return base_kernel();
    };
    return detail::read_fast<K>(*page_, counter, [&]() noexcept {
      return detail::read_careful<K>(*page_, counter, kernel);
    });
  }

  std::int64_t read(clock_kind k, int cpu, bool& kernel_called) {
    return detail::with_kind(k, [&]<clock_kind K>() { return read_as<K>(cpu, kernel_called); });
  }

  void do_read(clock_kind k, int cpu, bool mid_update) {
    const std::int64_t t = world_.now();
    bool kernel_called = false;
    const std::int64_t v = read(k, cpu, kernel_called);
    const std::int64_t err = v - world_.kernel_now(reference_clock(k));
    const double t_s = static_cast<double>(t) / 1e9;
    kind_stats& st = stats(k);
    ++st.reads;
    if (kernel_called) ++st.fallbacks;
    st.max_abs = std::max(st.max_abs, std::abs(err));
    const bool hot_odd = (page_->hot.seq & 1u) != 0;
    if (mid_update) {
      ++mid_update_reads_;
      if (!detail::is_coarse(k)) mid_update_max_lag_ = std::max(mid_update_max_lag_, -err);
    }
    // A backward step seen by a reader that answered from the backup line
    // while the writer was mid-update gets its own label.
    const char* how =
        mid_update ? (hot_odd ? ", mid-update, from the backup line" : ", mid-update, from hot")
                   : "";

    // Monotonic, in sim-time order: per CPU strictly, across CPUs within
    // their counter offsets.
    // REALTIME may step back where the kernel's did, once, when the page (or
    // the kernel, in fallback) shows the step; TAI only on a REALTIME step.
    const bool is_real = k == clock_kind::realtime || k == clock_kind::realtime_coarse;
    // The page's offsets count only while a kernel step is being mirrored;
    // a change at any other time is not a step. (That TAI does not move at
    // a leap second is check_publish()'s job.)
    if (t <= offsets_may_change_until_) {
      realtime_key_ = realtime_offset(page_->hot);
      tai_key_ = realtime_offset(page_->hot) + page_->hot.tai_offset_s * ns_per_s;
    }
    std::int64_t epoch = 0;
    if (is_real) {
      epoch = world_.realtime_epoch() * std::int64_t{1'000'003} + realtime_key_;
    } else if (k == clock_kind::tai) {
      epoch = world_.tai_epoch() * std::int64_t{1'000'003} + tai_key_;
    }
    // A counter that jumps back by less than the time since the last update
    // looks to a reader like time passing slower: it cannot see it, and
    // time steps back by up to the jump until the timekeeper does.
    const std::int64_t slack = t < jump_allowance_until_ ? jump_allowance_ns_ : 0;
    const auto c = static_cast<std::size_t>(cpu);
    if (st.last_epoch == epoch && v < st.last - cross_cpu_slack_ns_ - slack) {
      v_[backward_key(k, mid_update && hot_odd, "across CPUs")].add(
          fmt("%s at %.6f s: %" PRId64 " ns back (err now %" PRId64 " ns)%s", kind_name(k), t_s,
              st.last - v, err, how),
          st.last - v);
    }
    if (st.last_cpu_epoch[c] == epoch && v < st.last_cpu[c] - slack - cpu_ahead_ns_[c]) {
      v_[backward_key(k, mid_update && hot_odd, "one CPU")].add(
          fmt("%s at %.6f s cpu %d: %" PRId64 " ns back (err now %" PRId64 " ns)%s", kind_name(k),
              t_s, cpu, st.last_cpu[c] - v, err, how),
          st.last_cpu[c] - v);
    }
    if (st.last_epoch != epoch || v > st.last) st.last = v;
    st.last_epoch = epoch;
    st.last_cpu[c] = v;
    st.last_cpu_epoch[c] = epoch;

    // Never ahead by more than the validity window.
    const std::int64_t validity = validity_ns();
    const bool realtime_family = is_real || k == clock_kind::tai;
    if (err > validity + 1000 && !(realtime_family && t < exempt_until_)) {
      v_["ahead of the kernel by more than the validity window"].add(
          fmt("%s at %.6f s: %" PRId64 " ns ahead, window %" PRId64 " ns", kind_name(k), t_s, err,
              validity),
          err);
    }
    const bool coarse = detail::is_coarse(k);
    if (s_.max_ahead_ns > 0 && err > s_.max_ahead_ns && !(realtime_family && t < exempt_until_)) {
      v_["ahead of the kernel by more than the scenario's max_ahead_ns"].add(
          fmt("%s at %.6f s: %" PRId64 " ns ahead%s", kind_name(k), t_s, err, how), err);
    }
    // Within 1 ms (scaled in the long run) except just after a step, and
    // for the coarse clocks (behind) while the writer stalls.
    if (t >= exempt_until_ && !(coarse && err < 0 && t < coarse_stalled_until_)) {
      const std::int64_t low =
          coarse ? -(2 * rc_.tk.tick_ns + rc_.fault_bound_ns) : -rc_.fault_bound_ns;
      if (err < low || err > rc_.fault_bound_ns) {
        v_["more than 1 ms from the kernel"].add(
            fmt("%s at %.6f s: err %" PRId64 " ns%s", kind_name(k), t_s, err, how), err);
      }
    }
    // Settled error statistics: of the counter's answers only. A kernel answer (a fallback)
    // has no error to measure, and in a settled window it is itself the failure: the
    // timekeeper never finished calibrating, or fell back for good.
    if (!mid_update && t >= settled_from_ && t >= unsettled_until_ && kernel_called) {
      v_["settled read answered by the kernel (fallback)"].add(
          fmt("%s at %.6f s: mode reason %u", kind_name(k), t_s, page_->mode_reason), 0);
    } else if (!mid_update && t >= settled_from_ && t >= unsettled_until_) {
      if (coarse) {
        st.settled.add(-err);
        if (err > 1000 || err < -(2 * rc_.tk.tick_ns)) {
          v_["coarse clock ahead or more than 2 ticks behind"].add(
              fmt("%s at %.6f s: err %" PRId64 " ns", kind_name(k), t_s, err), err);
        }
      } else {
        st.settled.add(std::abs(err));
      }
    }
  }

  static std::string backward_key(clock_kind k, bool from_backup, const char* scope) {
    if (from_backup)
      return std::string("went backwards answering from the backup line (") + scope + ")";
    return std::string(kind_name(k)) + " went backwards (" + scope + ")";
  }

  // The extrapolation bound readers are held to: the page's max_delta in ns.
  std::int64_t validity_ns() {
    if (page_->hot.max_delta > max_delta_seen_) max_delta_seen_ = page_->hot.max_delta;
    if (page_->backup.max_delta > max_delta_seen_) max_delta_seen_ = page_->backup.max_delta;
    return static_cast<std::int64_t>(static_cast<double>(max_delta_seen_) * 1e9 /
                                     s_.counter.nominal_hz * 1.02);
  }

  struct fault_record {
    std::int64_t at;
    bool detected;
    bool reported;
  };

  const scenario& s_;
  run_config rc_;
  std::unique_ptr<page> page_;
  world world_;
  timekeeper tk_;
  prng rng_;

  std::int64_t next_tick_ = 0;
  std::vector<std::int64_t> reads_;
  std::size_t next_read_ = 0;
  std::vector<std::pair<std::int64_t, clock_kind>> bursts_;
  unsigned rr_kind_ = 0;
  int rr_cpu_ = 0;
  bool in_tk_ = false;
  bool in_hook_ = false;
  bool deferred_read_ = false;
  std::uint32_t preempted_seq_ = 0;  // the update preempted after its switch point

  std::size_t events_seen_ = 0;
  std::size_t pre_burst_for_ = ~std::size_t{0};
  std::int64_t suspended_seen_ = 0;
  std::int64_t settled_from_ = 0;
  std::int64_t unsettled_until_ = 0;
  std::int64_t exempt_until_ = 0;
  std::int64_t coarse_stalled_until_ = 0;
  std::int64_t offsets_may_change_until_ = 0;
  std::int64_t realtime_key_ = 0;
  std::int64_t tai_key_ = 0;
  std::int64_t cross_cpu_slack_ns_ = 1;
  std::vector<std::int64_t> cpu_ahead_ns_;  // per CPU: how far its counter leads the writer's
  std::int64_t jump_allowance_ns_ = 0;
  std::int64_t jump_allowance_until_ = 0;
  int steps_applied_ = 0;
  int steps_at_last_tai_change_ = 0;
  std::uint64_t max_delta_seen_ = 0;
  std::vector<fault_record> faults_;

  kind_stats stats_[kind_count];
  std::uint64_t publishes_ = 0;
  std::uint64_t resyncs_ = 0;
  std::uint64_t mid_update_reads_ = 0;
  std::int64_t mid_update_max_lag_ = 0;
  std::map<std::string, violations> v_;
};

void run_scenario(const scenario& s) {
  for (const run_config& rc : {fine_config(s), long_config(s)}) {
    const auto t0 = std::chrono::steady_clock::now();
    driver d(s, rc);
    d.run();
    d.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    d.report_and_check();
  }
}

// One TEST per scenario (scenarios.h). Each once caught a defect of the
// timekeeper or the reader: steps mirrored a tick late, leap seconds moving
// TAI by sampling noise, a resume forcing a needless resync, and stale pages
// answering from the end of the validity window. Keep them all.
TEST(TimekeeperSim, QuietDay) { run_scenario(quiet_day()); }
TEST(TimekeeperSim, ChronyStartupSlew) { run_scenario(chrony_startup_slew()); }
TEST(TimekeeperSim, FrequencyWander) { run_scenario(frequency_wander()); }
TEST(TimekeeperSim, RealtimeStepBack) { run_scenario(realtime_step_back()); }
TEST(TimekeeperSim, RealtimeStepForward) { run_scenario(realtime_step_forward()); }
TEST(TimekeeperSim, LeapSecondInserted) { run_scenario(leap_second_inserted()); }
TEST(TimekeeperSim, LeapSecondDeleted) { run_scenario(leap_second_deleted()); }
TEST(TimekeeperSim, SuspendCounterStopped) { run_scenario(suspend_counter_stopped()); }
TEST(TimekeeperSim, SuspendCounterReset) { run_scenario(suspend_counter_reset()); }
TEST(TimekeeperSim, SuspendCounterRunning) { run_scenario(suspend_counter_running()); }
TEST(TimekeeperSim, CounterMigration) { run_scenario(counter_migration()); }
TEST(TimekeeperSim, CounterJumpsBackward) { run_scenario(counter_jumps_backward()); }
TEST(TimekeeperSim, NoisySamples) { run_scenario(noisy_samples()); }
TEST(TimekeeperSim, WriterStalls) { run_scenario(writer_stalls()); }
TEST(TimekeeperSim, PreemptedAtSwitchPoints) { run_scenario(preempted_at_switch_points()); }

// --- arm64's counter rates (issue 24) -------------------------------------------------------
// The generic timer runs at 1 MHz to 1 GHz (25 MHz is common on Cortex-A parts, Armv8.6 fixes 1
// GHz), far from the TSC's 2-4 GHz: the same scenarios again at 25 MHz and 1 GHz, so that the
// mult/shift choice, the rate fit and the jump and suspend handling hold where one tick is 40 ns
// or 1 ns instead of 0.4 ns. Every bound is the same.
// They need a reader that takes the shift from the page (arch::fixed_shift == 0, as on arm64):
// x86-64's fixed shift of 32 refuses any counter below 1.01 GHz (counter_too_slow), so they
// skip there and run in the arm64 preset. The long run stops 2 h after the fine one (its
// events past that are left out): under qemu-user a day-long run takes a minute, and the arm64
// preset runs these alone of the simulations (CMakePresets.json).
void run_at_counter_rate(scenario s, double hz, const char* name) {
  if constexpr (arch::fixed_shift != 0) {
    GTEST_SKIP() << "this architecture's reader uses a fixed shift of " << arch::fixed_shift
                 << ", for counters of 1.01 GHz and more; arm64's rates run where the shift "
                    "comes from the page (the arm64 preset)";
  }
  // What the scenario gives in ticks keeps its time: the readers' offsets from the writer's
  // counter (a few ns; 25 ticks of a 2.4 GHz TSC would be 1 us at 25 MHz, where arm64 has one
  // counter for the whole system) and the counter's jumps (past the jump threshold, past the
  // validity window: the same in ns at every rate).
  const double scale = hz / s.counter.nominal_hz;
  for (std::int64_t& offset : s.counter.cpu_offset_ticks) {
    offset = std::llround(static_cast<double>(offset) * scale);
  }
  for (event& e : s.events) {
    if (e.kind == event_kind::counter_jump) {
      e.amount = std::llround(static_cast<double>(e.amount) * scale);
    }
  }
  s.counter.nominal_hz = hz;
  s.name = name;
  s.duration_ns = std::min(s.duration_ns, s.fine_duration_ns + 2 * ns_per_h);
  run_scenario(s);
}

constexpr double arm64_slow_hz = 25e6;  // a common Cortex-A generic timer
constexpr double arm64_fast_hz = 1e9;   // Armv8.6 and later: 1 GHz by definition

TEST(TimekeeperSim, Arm64QuietDayAt25MHz) {
  run_at_counter_rate(quiet_day(), arm64_slow_hz, "Arm64QuietDayAt25MHz");
}
TEST(TimekeeperSim, Arm64QuietDayAt1GHz) {
  run_at_counter_rate(quiet_day(), arm64_fast_hz, "Arm64QuietDayAt1GHz");
}
TEST(TimekeeperSim, Arm64FrequencyWanderAt25MHz) {
  run_at_counter_rate(frequency_wander(), arm64_slow_hz, "Arm64FrequencyWanderAt25MHz");
}
TEST(TimekeeperSim, Arm64FrequencyWanderAt1GHz) {
  run_at_counter_rate(frequency_wander(), arm64_fast_hz, "Arm64FrequencyWanderAt1GHz");
}
TEST(TimekeeperSim, Arm64CounterJumpsBackwardAt25MHz) {
  run_at_counter_rate(counter_jumps_backward(), arm64_slow_hz, "Arm64CounterJumpsBackwardAt25MHz");
}
TEST(TimekeeperSim, Arm64CounterJumpsBackwardAt1GHz) {
  run_at_counter_rate(counter_jumps_backward(), arm64_fast_hz, "Arm64CounterJumpsBackwardAt1GHz");
}
TEST(TimekeeperSim, Arm64SuspendCounterStoppedAt25MHz) {
  run_at_counter_rate(suspend_counter_stopped(), arm64_slow_hz,
                      "Arm64SuspendCounterStoppedAt25MHz");
}
TEST(TimekeeperSim, Arm64SuspendCounterStoppedAt1GHz) {
  run_at_counter_rate(suspend_counter_stopped(), arm64_fast_hz, "Arm64SuspendCounterStoppedAt1GHz");
}

// Issue 20: counter mode only once the rate is good enough. Fresh
// timekeepers (a process's first calibration) on this project's VM: samples
// 40-110 ns wide (calls of 15-60 ns, a 2.1 GHz counter in steps of 21
// ticks), the counter 37 ppm off nominal, the kernel's MONOTONIC -12 + 3.5
// ppm. Held, for every seed: the rate of the first counter-mode publish
// (the calibration's, published as is) within 0.5 ppm of the true one, and
// the counter's answers over the first 100 ms of counter mode within 200 ns
// of the kernel (the figure for a fresh process). A timekeeper that
// enters counter mode on a rate known to 20 ppm (the old bound) starts up to
// several ppm off, which grows past 200 ns in those 100 ms.
struct first_counter_mode {
  std::int64_t entered_ns = -1;  // since start(); -1: never within the run
  double rate_error = 0;         // |published / true - 1| at entry
  std::int64_t max_error_ns = 0;
  std::size_t readings = 0;  // counter answers in the first 100 ms
};

first_counter_mode fresh_start(std::uint64_t seed) {
  const machine vm = typical_vm();
  world w(vm.counter, vm.kernel, vm.noise, {}, seed);
  const double true_ns_per_tick = (1 + vm.kernel.raw_ppm * 1e-6) * (1 + vm.kernel.ntp_ppm * 1e-6) *
                                  1e9 / (vm.counter.nominal_hz * (1 + vm.counter.rate_ppm * 1e-6));
  auto p = std::make_unique<page>();
  const timekeeper_config config;  // the production one: the bound under test
  timekeeper tk(*p, w, config);
  const std::int64_t started = w.now();
  tk.start();
  first_counter_mode r;
  std::int64_t next_tick = w.now() + config.tick_ns;
  std::int64_t next_read = w.now();
  std::int64_t entered_at = -1;
  const std::int64_t give_up = started + 10 * ns_per_s;
  while (w.now() < give_up && (entered_at < 0 || w.now() < entered_at + 100 * ns_per_ms)) {
    w.advance_to(std::min(next_tick, next_read));
    if (next_tick <= w.now()) {
      next_tick += config.tick_ns;
      tk.tick();
      if (entered_at < 0 && p->hot.max_delta != 0 && p->mode_reason == 0) {
        entered_at = w.now();
        r.entered_ns = entered_at - started;
        const double published = std::ldexp(static_cast<double>(p->hot.mult), -p->hot.shift);
        r.rate_error = std::fabs(published / true_ns_per_tick - 1);
      }
      continue;
    }
    next_read += 100 * ns_per_us;
    if (entered_at < 0) continue;
    bool kernel_called = false;
    const auto counter_read = w.reader_counter(0);
    const auto base_kernel = w.reader_kernel(CLOCK_MONOTONIC);
    auto kernel_read = [&]() noexcept {
      kernel_called = true;
      return base_kernel();
    };
    const std::int64_t v =
        detail::read_fast<clock_kind::monotonic>(*p, counter_read, [&]() noexcept {
          return detail::read_careful<clock_kind::monotonic>(*p, counter_read, kernel_read);
        });
    if (kernel_called) continue;
    ++r.readings;
    r.max_error_ns = std::max(r.max_error_ns, std::abs(v - w.kernel_now(CLOCK_MONOTONIC)));
  }
  return r;
}

TEST(TimekeeperSim, CounterModeWaitsForAGoodEnoughRate) {
  std::vector<std::int64_t> entered;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const first_counter_mode r = fresh_start(seed);
    std::printf("[ calib    ] seed %2" PRIu64
                ": counter mode at %.1f ms, rate off %.3f ppm, "
                "first 100 ms max |err| %" PRId64 " ns over %zu readings\n",
                seed, static_cast<double>(r.entered_ns) / 1e6, r.rate_error * 1e6, r.max_error_ns,
                r.readings);
    ASSERT_GE(r.entered_ns, 0) << "seed " << seed << ": never calibrated in 10 s";
    EXPECT_LE(r.rate_error, 0.5e-6) << "seed " << seed;
    EXPECT_GT(r.readings, 900u) << "seed " << seed;
    EXPECT_LE(r.max_error_ns, 200) << "seed " << seed;
    entered.push_back(r.entered_ns);
  }
  std::sort(entered.begin(), entered.end());
  RecordProperty("calibration_ms_median", std::to_string(entered[entered.size() / 2] / ns_per_ms));
  RecordProperty("calibration_ms_max", std::to_string(entered.back() / ns_per_ms));
}

// Issue 20, "never backwards": a line turned on again (docs/design.md §7, the coarse clocks'
// rule). Until it is on, the coarse clocks' careful path answers the kernel: the page is off
// (here: pause_after_fork(), a child's), or its writer is dead (FUTEX_OWNER_DIED in the owner
// word) and the line it left goes stale. The writer's resync reads the kernel after its switch
// point and anchors the new line there; held up after that read (preempted: `hold_ns`) and
// before its coarse clocks stand on their own line, readers that still answered the kernel
// would pass the coarse line it then writes by the hold-up. Here the writer is held up right
// after the resync's kernel read (the counter read that closes its last bracket, hot odd, the
// backup closed), and every clock is read there, at each later source call of the update, and
// after it, on CPU 0 (the writer's counter): none may go back. The fine clocks go on from the
// switch point at the line's rate, so a reading after the update is the kernel's time less
// the line's drift over the hold-up (a few ns a ms at most: the lag that lag_ns allows).
struct turn_on_probe {
  page* p = nullptr;
  world* w = nullptr;
  std::int64_t hold_ns = 0;
  bool armed = false;
  bool held = false;
  int kernel_calls_in_a_row = 0;
  bool bracket_opened_closed = false;  // the last counter read: hot odd, the backup closed
  std::int64_t last[kind_count] = {};
  bool seen[kind_count] = {};
  std::int64_t worst_back[kind_count] = {};  // the largest step back per clock, ns
  std::int64_t readings = 0;

  void read_all() {
    for (int i = 0; i < kind_count; ++i) {
      const std::int64_t v = detail::with_kind(kinds[i], [&]<clock_kind K>() {
        const auto counter = w->reader_counter(0);
        const auto kernel = w->reader_kernel(detail::kernel_clock_of(K));
        const auto careful = [&]() noexcept {
          return detail::read_careful<K>(*p, counter, kernel);
        };
        if constexpr (detail::is_coarse(K)) {
          return detail::read_coarse<K, detail::as_ns>(*p, careful);
        } else {
          return detail::read_fast<K>(*p, counter, careful);
        }
      });
      if (seen[i]) worst_back[i] = std::max(worst_back[i], last[i] - v);
      last[i] = v;
      seen[i] = true;
    }
    ++readings;
  }
  void on_source_call() {
    const bool counter_read = w->last_call_read_counter();
    const bool hot_odd = (detail::load(p->hot.seq) & 1u) != 0;
    const bool backup_odd = (detail::load(p->backup.seq) & 1u) != 0;
    // read_kernel_at_switch(), after the backup is closed: counter, MONOTONIC, MONOTONIC_RAW,
    // counter (this one). (A stale line's close_backup() reads the kernel twice too, between
    // a counter read with the backup open and one with it closed.)
    if (armed && !held && hot_odd && !backup_odd && counter_read && kernel_calls_in_a_row == 2 &&
        bracket_opened_closed) {
      held = true;
      w->advance_to(w->now() + hold_ns);
    }
    if (counter_read) bracket_opened_closed = hot_odd && !backup_odd;
    kernel_calls_in_a_row = counter_read ? 0 : kernel_calls_in_a_row + 1;
    // Both lines odd: readers spin (max_spins) for a writer inside three instructions, which
    // a hook inside it would only make them give up on.
    if (!(hot_odd && backup_odd)) read_all();
  }
  static void hook(void* self) { static_cast<turn_on_probe*>(self)->on_source_call(); }
};

// Ticks `tk` every tick_ns until `until` (true time), reading every clock between ticks.
void run_until(timekeeper& tk, world& w, turn_on_probe& probe, std::int64_t until,
               std::int64_t& next_tick) {
  while (w.now() < until) {
    w.advance_to(std::min(next_tick, w.now() + 500 * ns_per_us));
    if (next_tick <= w.now()) {
      next_tick += tk.config().tick_ns;
      tk.tick();
    }
    probe.read_all();
  }
}

enum class turned_off_by { pause_after_fork, dead_writer };

turn_on_probe turn_on_held_up(turned_off_by how, std::int64_t hold_ns) {
  machine vm = typical_vm();
  vm.counter.step_ticks = 1;
  world w(vm.counter, vm.kernel, vm.noise, {}, 7);
  auto p = std::make_unique<page>();
  timekeeper_config config;
  config.coarse_owner = 1000;  // vclockd's thread id
  auto tk = std::make_unique<timekeeper>(*p, w, config);
  tk->start();
  turn_on_probe probe;
  probe.p = p.get();
  probe.w = &w;
  probe.hold_ns = hold_ns;
  std::int64_t next_tick = w.now() + config.tick_ns;
  run_until(*tk, w, probe, w.now() + 500 * ns_per_ms, next_tick);
  EXPECT_NE(p->hot.max_delta, 0u) << "never calibrated";
  if (how == turned_off_by::pause_after_fork) {
    tk->pause_after_fork();
    next_tick = w.now() + 3 * ns_per_ms;
  } else {
    // SIGKILL: the kernel marks the owner word dead; the page keeps the line, which goes
    // stale. A new daemon (another thread id) takes the page over 30 ms later.
    detail::store(p->coarse.time_word,
                  (detail::load(p->coarse.time_word) >> 32 << 32) | 0x40000000u);
    tk.reset();
    for (std::int64_t end = w.now() + 30 * ns_per_ms; w.now() < end;) {
      w.advance_to(w.now() + 500 * ns_per_us);
      probe.read_all();
    }
    config.coarse_owner = 2000;
    tk = std::make_unique<timekeeper>(*p, w, config);
    tk->start();
    next_tick = w.now() + config.tick_ns;
  }
  EXPECT_FALSE(coarse_owner_alive(static_cast<std::uint32_t>(p->coarse.time_word)));
  probe.armed = true;
  w.set_hook(&turn_on_probe::hook, &probe);
  run_until(*tk, w, probe, w.now() + 200 * ns_per_ms, next_tick);
  w.set_hook(nullptr, nullptr);
  EXPECT_TRUE(probe.held) << "the turn-on's resync was not seen";
  EXPECT_NE(p->hot.max_delta, 0u) << "not on again";
  EXPECT_TRUE(coarse_owner_alive(static_cast<std::uint32_t>(p->coarse.time_word)));
  return probe;
}

void expect_never_back(const turn_on_probe& probe, const char* what) {
  static constexpr const char* names[kind_count] = {
      "MONOTONIC", "REALTIME",         "MONOTONIC_RAW",  "BOOTTIME",
      "TAI",       "MONOTONIC_COARSE", "REALTIME_COARSE"};
  for (int i = 0; i < kind_count; ++i) {
    std::printf("[ turn-on  ] %s: %s back by at most %" PRId64 " ns over %" PRId64 " readings\n",
                what, names[i], probe.worst_back[i], probe.readings);
    EXPECT_LE(probe.worst_back[i], 0) << what << ": " << names[i] << " went back";
  }
}

TEST(TimekeeperSim, CoarseClocksNeverGoBackAcrossATurnOnHeldUp) {
  for (const std::int64_t hold : {10 * ns_per_ms, 20 * ns_per_ms}) {
    const std::string ms = std::to_string(hold / ns_per_ms) + " ms";
    expect_never_back(turn_on_held_up(turned_off_by::pause_after_fork, hold),
                      ("off, held up " + ms).c_str());
    expect_never_back(turn_on_held_up(turned_off_by::dead_writer, hold),
                      ("dead writer, held up " + ms).c_str());
  }
}

// The tick loop's order on a step (src/lib/tick_loop.cc): clock_was_set() publishes it, the
// notification is re-armed, and recheck_clock_was_set() looks once more, for a step made in
// between (which the re-armed notification would not report). The recheck publishes only
// such a step: publishing an unmoved REALTIME again sends readers round the seqlock for
// nothing, and came, measured per step, before the first reader met the first publish.
std::int64_t page_realtime(const page& p, world& w) {
  const auto counter_read = w.reader_counter(0);
  const auto kernel_read = w.reader_kernel(CLOCK_REALTIME);
  return detail::read_fast<clock_kind::realtime>(p, counter_read, [&]() noexcept {
    return detail::read_careful<clock_kind::realtime>(p, counter_read, kernel_read);
  });
}

TEST(TimekeeperSim, ARecheckAfterAStepPublishesOnlyAnotherStep) {
  const machine vm = typical_vm();
  const std::int64_t first = 5 * ns_per_s;
  const std::int64_t second = first + 2 * ns_per_ms;
  world w(vm.counter, vm.kernel, vm.noise,
          {ev::step(first, 500 * ns_per_us), ev::step(second, -300 * ns_per_us)}, 1);
  auto p = std::make_unique<page>();
  const timekeeper_config config;
  timekeeper tk(*p, w, config);
  tk.start();
  for (std::int64_t next = w.now() + config.tick_ns; next < first; next += config.tick_ns) {
    w.advance_to(next);
    tk.tick();
  }
  ASSERT_EQ(p->mode_reason, 0u) << "not calibrated before the step";
  constexpr std::int64_t agree_ns = 2 * ns_per_us;  // the sim's bracket noise, widely

  w.advance_to(first + 100 * ns_per_us);
  ASSERT_TRUE(w.clock_was_set_pending());
  w.ack_clock_was_set();
  const std::uint64_t before = p->updates;
  tk.clock_was_set();
  EXPECT_EQ(p->updates, before + 1) << "the step is published";
  EXPECT_LE(std::llabs(page_realtime(*p, w) - w.kernel_now(CLOCK_REALTIME)), agree_ns);
  tk.recheck_clock_was_set();
  EXPECT_EQ(p->updates, before + 1) << "REALTIME did not move again: nothing to publish";
  EXPECT_LE(std::llabs(page_realtime(*p, w) - w.kernel_now(CLOCK_REALTIME)), agree_ns);

  // A step between the first call and the recheck (the re-arm): published.
  w.advance_to(second + 100 * ns_per_us);
  ASSERT_TRUE(w.clock_was_set_pending());
  w.ack_clock_was_set();
  tk.recheck_clock_was_set();
  EXPECT_EQ(p->updates, before + 2) << "the second step is published";
  EXPECT_LE(std::llabs(page_realtime(*p, w) - w.kernel_now(CLOCK_REALTIME)), agree_ns);
}

}  // namespace
}  // namespace vclock::sim
