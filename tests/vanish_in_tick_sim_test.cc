// A vanish inside a tick (docs/design.md, "A vanish inside a tick"; issue
// 20): the ticking thread stops for 100 ms while it holds the tick's lock,
// in the middle of its samples, and a standby continues the line
// (timekeeper::continue_line()) on its schedule, a period and an eighth
// after the last update. The real timekeeper, reader and history code in
// the simulated world (tests/support/sim_world.h); the vanish is the
// world's hook, inside one of the tick's own source calls, so the ticker
// comes back to its tick with the samples it took before. Held:
//  - the coarse clocks lag the kernel by no more than a period and an
//    eighth (+ 0.2 ms) throughout, and the fine clocks are the counter's,
//    never the kernel's: the line never goes stale;
//  - no clock ever goes back (MONOTONIC, RAW, REALTIME, BOOTTIME, TAI, both
//    coarse clocks), across the continuations and across the returning
//    ticker's publish, with readers inside its update too;
//  - every fine reading converts back from the history to exactly the
//    value it was given (stamps: vclock_stamp_to_ns);
//  - the page stays within its lead and lag of the kernel (what a stale or
//    frozen reader's kernel answer relies on).
#include <errno.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "lib/history.h"
#include "lib/timekeeper.h"
#include "support/scenarios.h"
#include "support/sim_world.h"
#include "vclock/detail/reader.h"
#include "vclock/page.h"

namespace vclock::sim {
namespace {

using detail::clock_kind;

constexpr std::int64_t tick_ns = 4 * ns_per_ms;
constexpr std::int64_t standby_after_ns = tick_ns + tick_ns / 8;  // standby_tickers.cc
constexpr std::int64_t vanish_at = 3 * ns_per_s;                  // settled by then
constexpr std::int64_t vanish_ns = 100 * ns_per_ms;
constexpr std::int64_t read_every_ns = 37 * ns_per_us;
constexpr std::int64_t run_after_ns = 300 * ns_per_ms;
// Readings from here on are converted at the end, all within the history
// (990 ms: stamp_history_test.cc).
constexpr std::int64_t stamps_from = vanish_at - 100 * ns_per_ms;

constexpr clock_kind kinds[] = {
    clock_kind::monotonic,      clock_kind::monotonic_raw, clock_kind::realtime,
    clock_kind::boottime,       clock_kind::tai,           clock_kind::monotonic_coarse,
    clock_kind::realtime_coarse};
constexpr int kind_count = sizeof(kinds) / sizeof(kinds[0]);

struct reading {
  std::uint64_t counter = 0;
  clock_kind kind = clock_kind::monotonic;
  std::int64_t value = 0;
  bool kernel = false;     // the page could not answer
  bool in_update = false;  // an update under way (the history open)
};

template <clock_kind K>
std::int64_t read_as(const page& p, const world& w, std::uint64_t c, bool& kernel_called) {
  const auto counter = [c]() noexcept { return arch::counter_read{c, 0}; };
  const auto kernel = [&]() noexcept {
    kernel_called = true;
    return w.kernel_now(detail::kernel_clock_of(K));
  };
  const auto careful = [&]() noexcept { return detail::read_careful<K>(p, counter, kernel); };
  if constexpr (detail::is_coarse(K)) {
    return detail::read_coarse<K, detail::as_ns>(p, careful);
  } else {
    return detail::read_fast<K>(p, counter, careful);
  }
}

struct outcome {
  std::uint64_t continued = 0;
  std::int64_t worst_coarse_lag = 0;  // during the vanish
  std::uint64_t kernel_answers_in_vanish = 0;
  std::uint64_t backwards = 0;
  std::int64_t worst_backwards = 0;
  std::uint64_t stamps_checked = 0;
  std::uint64_t stamps_wrong = 0;
  // Estimates of readings taken during a resync's update, after the old
  // line went stale (its readers asked the kernel: docs/stamps.md).
  std::uint64_t stamps_estimated_in_update = 0;
  std::uint64_t outside_lead_lag = 0;
  std::uint64_t readings_in_vanish = 0;
  std::uint64_t readings_in_return = 0;  // inside the returning ticker's tick
};

class run_state {
 public:
  run_state(std::uint64_t seed, unsigned vanish_call, bool standby,
            std::int64_t vanish_for = vanish_ns, std::vector<event> events = {},
            std::int64_t lead_lag_from = ns_per_s)
      : w_(typical_vm().counter, typical_vm().kernel, typical_vm().noise, std::move(events), seed),
        lead_lag_from_(lead_lag_from),
        vanish_call_(vanish_call),
        standby_(standby),
        vanish_for_(vanish_for) {
    config_.tick_ns = tick_ns;
    config_.validity_ticks = 3;  // vclockd's
    tk_ = std::make_unique<timekeeper>(*p_, w_, config_);
    tk_->share_publish_lock(&lock_);
    tk_->start();
  }

  outcome run() {
    w_.set_hook(&run_state::hook, this);
    std::int64_t next_tick = 1'700'000;
    std::int64_t next_read = 0;
    const std::int64_t end = vanish_at + vanish_for_ + run_after_ns;
    while (true) {
      const std::int64_t t = std::min(next_tick, next_read);
      if (t >= end) break;
      w_.advance_to(t);
      if (next_tick <= w_.now()) {
        next_tick += tick_ns;
        calls_ = 0;
        armed_ = !vanished_ && w_.now() >= vanish_at;
        in_tick_ = true;
        tk_->tick();
        in_tick_ = false;
        last_update_ = w_.now();
        if (armed_) ADD_FAILURE() << "the tick made fewer source calls than " << vanish_call_;
        // The loop overslept the vanish: on to the next period from now.
        while (next_tick <= w_.now()) next_tick += tick_ns;
        continue;
      }
      next_read += read_every_ns;
      read_one(false);
    }
    w_.set_hook(nullptr, nullptr);
    check_stamps();
    return o_;
  }

 private:
  static void hook(void* ctx) { static_cast<run_state*>(ctx)->on_source_call(); }

  void on_source_call() {
    if (!in_tick_ || in_hook_) return;
    ++calls_;
    if (armed_ && calls_ == vanish_call_) {
      armed_ = false;
      vanished_ = true;
      in_hook_ = true;
      vanish();
      in_hook_ = false;
      returned_ = true;
      return;
    }
    // The returning ticker's tick, from the vanish on: readers at each of
    // its source calls, inside its update too (unless both lines are odd:
    // a real reader would spin there for a few instructions, this one
    // cannot; stamp_history_test.cc does the same).
    if (returned_ && !in_hook_ && ((p_->hot.seq & p_->backup.seq) & 1u) == 0) {
      in_hook_ = true;
      read_one(false);
      ++o_.readings_in_return;
      in_hook_ = false;
    }
  }

  // The ticking thread's CPU is gone for vanish_ns: the world goes on, and
  // so do the standby and the readers.
  void vanish() {
    // Inside the update (the publish lock held): the standby would wait.
    if (pthread_mutex_trylock(&lock_) != 0) {
      ADD_FAILURE() << "call " << vanish_call_ << " is inside the tick's update";
      return;
    }
    pthread_mutex_unlock(&lock_);
    const std::int64_t until = w_.now() + vanish_for_;
    std::int64_t next_standby = last_update_ + standby_after_ns;
    std::int64_t next_read = w_.now();
    while (true) {
      const std::int64_t t = std::min(next_standby, next_read);
      if (t >= until) break;
      w_.advance_to(t);
      if (next_standby <= w_.now()) {
        if (standby_ && tk_->continue_line()) {
          ++o_.continued;
          next_standby = w_.now() + standby_after_ns;
        } else {
          next_standby += tick_ns / 8;
        }
        continue;
      }
      next_read += read_every_ns;
      read_one(true);
    }
    w_.advance_to(until);
  }

  void read_one(bool in_vanish) {
    const clock_kind k = kinds[turn_++ % kind_count];
    reading r;
    r.kind = k;
    r.counter = w_.counter_now(0);
    r.in_update = p_->history.header.open != 0;
    r.value = detail::with_kind(
        k, [&]<clock_kind K>() { return read_as<K>(*p_, w_, r.counter, r.kernel); });
    const auto i = static_cast<std::size_t>(k);
    if (r.value < last_[i]) {
      ++o_.backwards;
      o_.worst_backwards = std::max(o_.worst_backwards, last_[i] - r.value);
    }
    last_[i] = std::max(last_[i], r.value);
    const std::int64_t err = r.value - w_.kernel_now(detail::kernel_clock_of(k));
    if (in_vanish) {
      ++o_.readings_in_vanish;
      if (detail::is_coarse(k)) {
        // Against the kernel's fine clock (not its coarse one).
        const clockid_t fine = k == clock_kind::monotonic_coarse ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        o_.worst_coarse_lag = std::max(o_.worst_coarse_lag, w_.kernel_now(fine) - r.value);
      } else if (r.kernel) {
        ++o_.kernel_answers_in_vanish;
      }
    }
    // Lead and lag bound the page against the kernel (MONOTONIC; RAW's
    // are in the same words) while hot is even and the reader used it;
    // from the first ticks after calibration on (the first publish has
    // none yet).
    if (!r.kernel && w_.now() >= lead_lag_from_ &&
        (k == clock_kind::monotonic || k == clock_kind::monotonic_raw) && (p_->hot.seq & 1u) == 0) {
      const std::int64_t lead = p_->lead_ns;
      const std::int64_t lag = p_->lag_ns;
      if (err > lead || -err > lag) {
        ++o_.outside_lead_lag;
        if (o_.outside_lead_lag <= 3) {
          ADD_FAILURE() << "page " << err << " ns from the kernel, lead " << lead << " lag " << lag
                        << " at " << w_.now();
        }
      }
    }
    if (!detail::is_coarse(k) && !r.kernel && w_.now() >= stamps_from) readings_.push_back(r);
  }

  // Every fine reading the page answered converts to its very value.
  void check_stamps() {
    detail::history_snapshot s;
    ASSERT_TRUE(detail::take_snapshot(*p_, s));
    const std::uint64_t epoch = s.h.header.epoch;
    for (const reading& r : readings_) {
      detail::history_segment seg;
      bool have = false;
      detail::stamp_time st;
      const int status = detail::stamp_to_time(s, r.kind, epoch, r.counter, seg, have, st);
      ++o_.stamps_checked;
      if (status == detail::stamp_estimate && r.in_update) {
        ++o_.stamps_estimated_in_update;
        continue;
      }
      if (status != detail::stamp_exact || st.ns != r.value) {
        if (++o_.stamps_wrong <= 3) {
          ADD_FAILURE() << "stamp: status " << status << ", " << st.ns - r.value << " ns off, kind "
                        << static_cast<int>(r.kind) << " c " << r.counter;
        }
      }
    }
  }

  world w_;
  std::int64_t lead_lag_from_;
  std::unique_ptr<page> p_ = std::make_unique<page>();
  timekeeper_config config_;
  pthread_mutex_t lock_ = PTHREAD_MUTEX_INITIALIZER;
  std::unique_ptr<timekeeper> tk_;
  unsigned vanish_call_;
  bool standby_;
  std::int64_t vanish_for_;
  unsigned calls_ = 0;
  bool armed_ = false;
  bool vanished_ = false;
  bool returned_ = false;
  bool in_tick_ = false;
  bool in_hook_ = false;
  std::int64_t last_update_ = 0;
  unsigned turn_ = 0;
  std::int64_t last_[kind_count] = {};
  std::vector<reading> readings_;
  outcome o_;
};

// Source calls of a tick (timekeeper::tick(), the simulation has no bound
// source): 1-9 the MONOTONIC samples, 10-18 RAW's, 19-25 the offsets. The
// publish that follows holds the publish lock: a vanish there is the
// window left open (docs/design.md). At 9 the MONOTONIC sample is taken
// before the vanish and RAW's after it.
constexpr unsigned vanish_calls[] = {1, 9, 14, 25};

void check(bool standby) {
  for (const unsigned call : vanish_calls) {
    for (const std::uint64_t seed : {1u, 2u}) {
      run_state s(seed, call, standby);
      const outcome o = s.run();
      std::printf("[ vanish   ] at call %u, seed %" PRIu64 ": %" PRIu64
                  " continuations, coarse lag max %.3f ms, %" PRIu64 " of %" PRIu64
                  " readings from the kernel, %" PRIu64 " stamps checked, %" PRIu64
                  " readings inside the returning tick\n",
                  call, seed, o.continued, static_cast<double>(o.worst_coarse_lag) / 1e6,
                  o.kernel_answers_in_vanish, o.readings_in_vanish, o.stamps_checked,
                  o.readings_in_return);
      const std::string where =
          "vanish at call " + std::to_string(call) + ", seed " + std::to_string(seed);
      EXPECT_LE(o.worst_coarse_lag, standby_after_ns + 200 * ns_per_us) << where;
      EXPECT_EQ(o.kernel_answers_in_vanish, 0u) << where;
      EXPECT_EQ(o.backwards, 0u) << where << ": worst " << o.worst_backwards << " ns";
      EXPECT_EQ(o.stamps_wrong, 0u) << where;
      EXPECT_EQ(o.stamps_estimated_in_update, 0u) << where;
      EXPECT_EQ(o.outside_lead_lag, 0u) << where;
      EXPECT_GT(o.stamps_checked, 10000u) << where;
      EXPECT_GT(o.readings_in_return, 0u) << where;
    }
  }
}

TEST(VanishInTickSim, AStandbyContinuesTheLineWhileTheTickerIsGoneInsideItsTick) { check(true); }

// A ticker gone for longer than vanishes last: the line is continued for
// a quarter of a second after its last publish (timekeeper.cc,
// max_continued_ns), and then left to go stale, the kernel answering.
TEST(VanishInTickSim, ALineIsContinuedForAQuarterSecondAtMost) {
  run_state s(1, 1, true, 400 * ns_per_ms);
  const outcome o = s.run();
  std::printf("[ vanish   ] 400 ms: %" PRIu64 " continuations, %" PRIu64 " of %" PRIu64
              " readings from the kernel\n",
              o.continued, o.kernel_answers_in_vanish, o.readings_in_vanish);
  EXPECT_GE(o.continued, 50u);
  EXPECT_LE(o.continued, 56u);
  EXPECT_GT(o.kernel_answers_in_vanish, 0u);
  EXPECT_EQ(o.backwards, 0u);
  EXPECT_EQ(o.stamps_wrong, 0u);
  EXPECT_EQ(o.outside_lead_lag, 0u);
}

// A line being slewed when its ticker vanishes (an NTP frequency step of
// 50 ppm 20 ms before, still being corrected): it drifts from the kernel
// while it is continued, more than its lead and lag allowed for its own
// validity window, and each continuation widens them by that drift. From
// the vanish on (the frequency step itself is no drift of the line's: the
// kernel changed, as at any tick).
TEST(VanishInTickSim, ContinuationsWidenTheLeadAndLagByTheLinesDrift) {
  for (const std::uint64_t seed : {1u, 2u}) {
    run_state s(seed, 1, true, vanish_ns, {ev::ntp(vanish_at - 20 * ns_per_ms, 53.5)}, vanish_at);
    const outcome o = s.run();
    EXPECT_GE(o.continued, 20u) << "seed " << seed;
    EXPECT_EQ(o.outside_lead_lag, 0u) << "seed " << seed;
    EXPECT_EQ(o.backwards, 0u) << "seed " << seed;
    EXPECT_EQ(o.stamps_wrong, 0u) << "seed " << seed;
  }
}

// What the continuation closes: with no standby, the coarse clocks stand
// still for the vanish and the fine ones go to the kernel (the line stale).
TEST(VanishInTickSim, WithoutAStandbyTheCoarseClocksStandStill) {
  run_state s(1, 9, false);
  const outcome o = s.run();
  EXPECT_EQ(o.continued, 0u);
  EXPECT_GT(o.worst_coarse_lag, vanish_ns / 2);
  EXPECT_GT(o.kernel_answers_in_vanish, 0u);
  EXPECT_EQ(o.backwards, 0u);
}

}  // namespace
}  // namespace vclock::sim
