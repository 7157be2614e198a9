// Stamps against the page's history (issue 23): the real timekeeper writes
// a page in the simulated world (tests/support/sim_world.h), readers read
// it with the real reader (fast and careful paths, from the counter value
// of a stamp), and every reading is converted back from the history at
// once, 0.5 s and 0.99 s later (within the history: the very same value),
// and 2 s later (beyond it: an estimate within its bound, never a value
// called exact). The world has NTP slews, a REALTIME step, a writer stall
// longer than the page's validity, readers inside the writer's updates
// (the backup line) and a counter jump (a new epoch: the old stamps are
// refused).
#include <errno.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
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

constexpr clock_kind kinds[] = {clock_kind::monotonic, clock_kind::realtime,
                                clock_kind::monotonic_raw, clock_kind::boottime, clock_kind::tai};

struct reading {
  std::uint64_t counter = 0;
  std::uint64_t epoch = 0;
  clock_kind kind = clock_kind::monotonic;
  std::int64_t value = 0;
  bool kernel = false;  // the reader asked the kernel (the page could not answer)
  std::int64_t at = 0;  // true time of the reading
  int checks = 0;       // how many of the ages below it has been converted at
};

template <clock_kind K>
std::int64_t read_at(const page& p, const world& w, std::uint64_t c, bool& kernel_called) {
  const auto counter = [c]() noexcept { return arch::counter_read{c, 0}; };
  const auto kernel = [&]() noexcept {
    kernel_called = true;
    return w.kernel_now(detail::kernel_clock_of(K));
  };
  return detail::read_fast<K>(
      p, counter, [&]() noexcept { return detail::read_careful<K>(p, counter, kernel); });
}

reading read_now(clock_kind k, const page& p, const world& w) {
  reading r;
  r.counter = w.counter_now(0);
  r.epoch = detail::load_relaxed(p.history.header.epoch);
  r.kind = k;
  r.at = w.now();
  r.value =
      detail::with_kind(k, [&]<clock_kind K>() { return read_at<K>(p, w, r.counter, r.kernel); });
  return r;
}

struct tally {
  std::uint64_t exact = 0;
  std::uint64_t estimates = 0;
  std::uint64_t stale_epoch = 0;
  std::uint64_t no_data = 0;
  std::uint64_t frozen_below_kernel = 0;  // see check()
  std::uint64_t wrong = 0;                // exact but not the reader's value, or missing
  std::uint64_t outside_bound = 0;
  std::uint64_t mid_update_readings = 0;
  std::int64_t worst_estimate_error = 0;
};

// The history must cover this much (page.h: history_slots -
// history_key_every entries at the default 4 ms tick is 1.024 s).
constexpr std::int64_t covered_ns = 990 * ns_per_ms;

// One reading converted from a snapshot taken `age` after it. `quiet`: no
// stall nor counter jump since the reading (the line was followed all along,
// so an estimate's bound must hold).
void check(const reading& r, const detail::history_snapshot& s, std::int64_t age, bool quiet,
           tally& t) {
  detail::history_segment seg;
  bool have = false;
  detail::stamp_time st;
  const int status = detail::stamp_to_time(s, r.kind, r.epoch, r.counter, seg, have, st);
  if (r.epoch != s.h.header.epoch) {
    EXPECT_EQ(status, -ESTALE);
    ++t.stale_epoch;
    return;
  }
  if (status == -ENODATA) {  // before the epoch's first line: the page was off
    ++t.no_data;
    if (!r.kernel) ++t.wrong;
    return;
  }
  // The batch's shortcut (exact_range_of) agrees with the conversion.
  if (status >= 0) {
    const detail::exact_range x = detail::exact_range_of(seg, r.kind);
    const bool in_range = r.counter - x.lo < x.span;
    EXPECT_EQ(in_range, status == detail::stamp_exact) << "at " << r.at;
    if (in_range) {
      EXPECT_EQ(x.base + detail::delta_to_ns(r.counter - x.cycle_last, x.mult, x.shift), st.ns);
    }
  }
  if (status == detail::stamp_exact) {
    ++t.exact;
    if (st.ns == r.value) return;
    // The one exact answer a reader may not have had: frozen on the backup
    // line while the writer was mid-update, the reader answered the kernel
    // (lag_ns behind) where that was above the frozen time (reader.h).
    if (r.kernel && st.ns < r.value) {
      ++t.frozen_below_kernel;
      return;
    }
    ++t.wrong;
    ADD_FAILURE() << "exact but " << st.ns - r.value << " ns off, kind " << static_cast<int>(r.kind)
                  << " age " << age << " at " << r.at << " kernel " << r.kernel << " c "
                  << r.counter << " seg " << seg.lo << ".." << seg.hi << " freeze " << seg.freeze
                  << " " << seg.has_freeze << " mult " << seg.line.mult;
    return;
  }
  ASSERT_EQ(status, detail::stamp_estimate);
  ++t.estimates;
  if (!r.kernel && age <= covered_ns) {
    ++t.wrong;
    ADD_FAILURE() << "an estimate within the history: kind " << static_cast<int>(r.kind) << " age "
                  << age << " at " << r.at;
  }
  // REALTIME and TAI were stepped (the step is no rate error): the bound
  // is checked on the clocks that never step.
  const bool steady = r.kind == clock_kind::monotonic || r.kind == clock_kind::monotonic_raw;
  if (steady && quiet && !r.kernel) {
    const std::int64_t err = std::llabs(st.ns - r.value);
    t.worst_estimate_error = std::max(t.worst_estimate_error, err);
    if (err > st.bound_ns) ++t.outside_bound;
  }
}

struct run_result {
  tally t;
  std::uint64_t readings = 0;
  std::uint64_t keys = 0;
  std::uint64_t entries = 0;
};

// The hook: inside the writer's updates, every 5th source call, a reader.
// One that finds both lines odd would spin until the writer closes the
// backup (a few instructions later); this single thread cannot, so it
// reads at the writer's next source call instead (as timekeeper_sim_test.cc
// does).
struct mid_update {
  const page* p;
  const world* w;
  std::vector<reading>* out;
  unsigned calls = 0;
  unsigned turn = 0;
  bool deferred = false;
  static void hook(void* ctx) {
    auto* m = static_cast<mid_update*>(ctx);
    const bool both_odd = ((m->p->hot.seq & m->p->backup.seq) & 1u) != 0;
    if (++m->calls % 5 != 0 && !m->deferred) return;
    m->deferred = both_odd;
    if (both_odd) return;
    m->out->push_back(read_now(kinds[m->turn++ % 5], *m->p, *m->w));
  }
};

run_result run(std::uint64_t seed) {
  machine vm = typical_vm();
  vm.counter.step_ticks = 1;
  constexpr std::int64_t step_at = 7 * ns_per_s;
  constexpr std::int64_t stall_at = 10 * ns_per_s;
  constexpr std::int64_t stall_len = 100 * ns_per_ms;  // > validity (4 ticks)
  constexpr std::int64_t jump_at = 13 * ns_per_s;
  constexpr std::int64_t end = 19 * ns_per_s;
  const std::vector<event> events = {ev::ntp(3 * ns_per_s, 250), ev::ntp(5 * ns_per_s, -300),
                                     ev::step(step_at, -ns_per_s / 2), ev::ntp(9 * ns_per_s, 40),
                                     ev::jump(jump_at, 21'000'000'000)};
  world w(vm.counter, vm.kernel, vm.noise, events, seed);
  auto p = std::make_unique<page>();
  timekeeper_config config;
  config.tick_ns = 4 * ns_per_ms;
  timekeeper tk(*p, w, config);
  tk.start();

  std::vector<reading> fresh;
  mid_update m{p.get(), &w, &fresh};
  w.set_hook(&mid_update::hook, &m);
  std::deque<reading> aged;
  run_result out;
  constexpr std::int64_t ages[] = {500 * ns_per_ms, covered_ns, 2 * ns_per_s};
  const auto quiet_since = [&](std::int64_t at) {
    const std::int64_t now = w.now();
    const bool stall = at < stall_at + stall_len && now >= stall_at;
    const bool jump = at < jump_at && now >= jump_at;
    return !stall && !jump;
  };
  std::int64_t next_tick = 1'700'000;
  std::int64_t next_read = 0;
  unsigned turn = 0;
  detail::history_snapshot s;
  while (true) {
    const std::int64_t t = std::min(next_tick, next_read);
    if (t >= end) break;
    w.advance_to(t);
    if (next_tick <= w.now()) {
      // Before the writer runs: this interval's readings, converted at
      // once (on the newest line, no later one yet).
      if (detail::take_snapshot(*p, s)) {
        for (reading& r : fresh) {
          check(r, s, w.now() - r.at, true, out.t);
          aged.push_back(r);
        }
        fresh.clear();
        for (reading& r : aged) {
          while (r.checks < 3 && w.now() - r.at >= ages[r.checks]) {
            check(r, s, w.now() - r.at, quiet_since(r.at), out.t);
            ++r.checks;
          }
        }
        while (!aged.empty() && aged.front().checks == 3) aged.pop_front();
      } else {
        fresh.clear();  // no epoch yet
      }
      next_tick += config.tick_ns;
      if (w.now() >= stall_at && w.now() < stall_at + stall_len) continue;
      const std::size_t before = fresh.size();
      if (w.clock_was_set_pending() && w.clock_was_set_at() <= w.now()) {
        w.ack_clock_was_set();
        tk.clock_was_set();
      }
      tk.tick();
      out.t.mid_update_readings += fresh.size() - before;
      continue;
    }
    next_read += 97 * ns_per_us;
    fresh.push_back(read_now(kinds[turn++ % 5], *p, w));
    ++out.readings;
  }
  out.keys = p->history.header.keys;
  out.entries = p->history.header.entries;
  return out;
}

TEST(StampHistory, ExactWithinTheHistoryEstimatedBeyondRefusedAcrossAJump) {
  for (const std::uint64_t seed : {1u, 2u}) {
    const run_result r = run(seed);
    const tally& t = r.t;
    EXPECT_EQ(t.wrong, 0u) << "seed " << seed;
    EXPECT_EQ(t.outside_bound, 0u) << "seed " << seed << " worst " << t.worst_estimate_error;
    // Each kind of event happened: exact and estimated conversions,
    // readers mid-update, stamps of the old epoch refused.
    EXPECT_GT(t.exact, r.readings) << "seed " << seed;
    EXPECT_GT(t.estimates, 0u) << "seed " << seed;
    EXPECT_GT(t.stale_epoch, 0u) << "seed " << seed;
    EXPECT_GT(t.mid_update_readings, 1000u) << "seed " << seed;
    // The compact entries are the rule, keys the exception (steps, the
    // stall's resync, the jump, and one every history_key_every).
    EXPECT_LT(r.keys * 20, r.entries) << "seed " << seed;
    std::printf(
        "seed %llu: %llu readings, %llu exact, %llu estimates (worst %lld ns off), "
        "%llu refused (old epoch), %llu no data, %llu frozen below the kernel, "
        "%llu mid-update; %llu entries, %llu keys\n",
        static_cast<unsigned long long>(seed), static_cast<unsigned long long>(r.readings),
        static_cast<unsigned long long>(t.exact), static_cast<unsigned long long>(t.estimates),
        static_cast<long long>(t.worst_estimate_error),
        static_cast<unsigned long long>(t.stale_epoch), static_cast<unsigned long long>(t.no_data),
        static_cast<unsigned long long>(t.frozen_below_kernel),
        static_cast<unsigned long long>(t.mid_update_readings),
        static_cast<unsigned long long>(r.entries), static_cast<unsigned long long>(r.keys));
  }
}

// qemu-user's CNTVCT_EL0 (the arm64 preset runs the suite under it): the host's
// gettimeofday() in 16 ns ticks, a 62.5 MHz counter that advances once a microsecond, by 62 or
// 63 ticks (63 here). A counter value places its read anywhere within that microsecond, and
// one value may last a whole update of the writer. The world is quiet (no NTP change, step,
// stall nor jump): every reading converted at once is the reader's value or an estimate of a
// reader that asked the kernel; 2 s later, before the history, an estimate within its bound.
TEST(StampHistory, Arm64CounterInMicrosecondStepsAsUnderQemuUser) {
  if constexpr (arch::fixed_shift != 0) {
    GTEST_SKIP() << "this architecture's reader uses a fixed shift of " << arch::fixed_shift
                 << ", for counters of 1.01 GHz and more; a 62.5 MHz counter runs where the "
                    "shift comes from the page (the arm64 preset)";
  }
  machine vm = typical_vm();
  vm.counter.nominal_hz = 62.5e6;
  vm.counter.step_ticks = 63;
  constexpr std::int64_t end = 6 * ns_per_s;
  constexpr std::int64_t later = 2 * ns_per_s;
  for (const std::uint64_t seed : {1u, 2u}) {
    world w(vm.counter, vm.kernel, vm.noise, {}, seed);
    auto p = std::make_unique<page>();
    timekeeper_config config;
    timekeeper tk(*p, w, config);
    tk.start();
    std::vector<reading> fresh;
    mid_update m{p.get(), &w, &fresh};
    w.set_hook(&mid_update::hook, &m);
    std::deque<reading> aged;
    tally t;
    std::uint64_t readings = 0;
    std::uint64_t at_update_end = 0;
    // The kernel's MONOTONIC per counter tick (both rates constant here), and how far the
    // page's rate strays from it once calibrated.
    const double true_ns_per_tick =
        (1.0 + vm.kernel.raw_ppm * 1e-6) * (1.0 + vm.kernel.ntp_ppm * 1e-6) /
        (vm.counter.nominal_hz * (1.0 + vm.counter.rate_ppm * 1e-6)) * 1e9;
    double worst_rate = 0;
    std::int64_t next_tick = 1'700'000;
    std::int64_t next_read = 0;
    unsigned turn = 0;
    detail::history_snapshot s;
    while (true) {
      const std::int64_t at = std::min(next_tick, next_read);
      if (at >= end) break;
      w.advance_to(at);
      if (next_tick <= w.now()) {
        if (detail::take_snapshot(*p, s)) {
          for (const reading& r : fresh) {
            aged.push_back(r);
            // Read after an update's end, with the counter value the writer read there: a
            // reader inside the update may have had it too, so its stamp is an estimate
            // (timekeeper.cc, update_end()), which must hold the reader's value.
            detail::history_segment seg;
            bool have = false;
            detail::stamp_time st;
            if (!r.kernel && r.epoch == s.h.header.epoch &&
                detail::stamp_to_time(s, r.kind, r.epoch, r.counter, seg, have, st) ==
                    detail::stamp_estimate) {
              ++at_update_end;
              EXPECT_LE(std::llabs(st.ns - r.value), st.bound_ns) << "at " << r.at;
              continue;
            }
            check(r, s, w.now() - r.at, true, t);
          }
          while (!aged.empty() && w.now() - aged.front().at >= later) {
            check(aged.front(), s, w.now() - aged.front().at, true, t);
            aged.pop_front();
          }
        }
        fresh.clear();
        next_tick += config.tick_ns;
        tk.tick();
        if (w.now() >= ns_per_s && detail::load(p->hot.max_delta) != 0) {
          worst_rate = std::max(worst_rate, std::fabs(std::ldexp(static_cast<double>(p->hot.mult),
                                                                 -static_cast<int>(p->hot.shift)) /
                                                          true_ns_per_tick -
                                                      1.0));
        }
        continue;
      }
      next_read += 97 * ns_per_us;
      fresh.push_back(read_now(kinds[turn++ % 5], *p, w));
      ++readings;
    }
    EXPECT_EQ(t.wrong, 0u) << "seed " << seed;
    EXPECT_EQ(t.outside_bound, 0u) << "seed " << seed << " worst " << t.worst_estimate_error;
    EXPECT_GT(t.exact, readings) << "seed " << seed;
    EXPECT_EQ(t.stale_epoch, 0u) << "seed " << seed;
    // The rate's slew (at most 100 ppm) and its estimate's error: a line fitted through
    // samples a microsecond wide, not remade from the last two at each tick.
    EXPECT_LT(worst_rate, 150e-6) << "seed " << seed;
    // At most one counter value an update, and most readers miss it.
    EXPECT_LT(at_update_end * 100, readings) << "seed " << seed;
    std::printf(
        "seed %llu: %llu readings, %llu exact, %llu estimates (worst %lld ns off), %llu read "
        "at an update's end; rate at most %.1f ppm off\n",
        static_cast<unsigned long long>(seed), static_cast<unsigned long long>(readings),
        static_cast<unsigned long long>(t.exact), static_cast<unsigned long long>(t.estimates),
        static_cast<long long>(t.worst_estimate_error),
        static_cast<unsigned long long>(at_update_end), worst_rate * 1e6);
  }
}

// The edges of a line, by hand: an update's switch point (still the old
// line), the counters inside it (estimates, at the frozen time), its end
// (the new line), a step (a key), and before the history.
TEST(StampHistory, EdgesOfAnUpdateAndOfTheHistory) {
  auto p = std::make_unique<page>();
  detail::history_writer w(p->history);
  const std::uint8_t boot[16] = {1, 2, 3};
  w.take_over(boot);
  clock_line l0{};
  l0.cycle_last = 1'000'000;
  l0.max_delta = 100'000'000;
  l0.mult = 0x80000000u;  // 0.5 ns per tick
  l0.raw_mult = 0x80000010u;
  l0.shift = 32;
  l0.mono_ns = 5'000'000'000;
  l0.realtime_ns = l0.mono_ns + 1'700'000'000 * ns_per_s;
  l0.boottime_ns = l0.mono_ns + 7;
  l0.raw_ns = l0.mono_ns - 99;
  l0.tai_offset_s = 37;
  w.open();
  w.append(l0, 0, false, l0.cycle_last + 100);  // the first line: a key
  // An ordinary update 8000 ticks on, mult slewed, that ended 160 ticks
  // after its switch point.
  const auto line_at = [](const clock_line& l, std::uint64_t c, std::int32_t dm, std::int32_t dr) {
    const detail::history_line h = detail::advance_line(
        detail::line_of(l), static_cast<std::uint32_t>(c - l.cycle_last), dm, dr);
    clock_line n = l;
    n.cycle_last = h.cycle_last;
    n.mono_ns = h.mono_ns;
    n.realtime_ns = h.realtime_ns;
    n.boottime_ns = h.boottime_ns;
    n.raw_ns = h.raw_ns;
    n.mult = h.mult;
    n.raw_mult = h.raw_mult;
    return n;
  };
  const clock_line l1 = line_at(l0, l0.cycle_last + 8000, 5, -3);
  w.open();
  w.append(l1, l1.cycle_last, true, l1.cycle_last + 160);
  // A REALTIME step 8000 ticks later: a key.
  clock_line l2 = line_at(l1, l1.cycle_last + 8000, 0, 0);
  l2.realtime_ns -= ns_per_s / 2;
  w.open();
  w.append(l2, l2.cycle_last, true, l2.cycle_last + 48);
  EXPECT_EQ(p->history.header.entries, 3u);
  EXPECT_EQ(p->history.header.keys, 2u);  // l0 and the step; l1 is a slot

  detail::history_snapshot s;
  ASSERT_TRUE(detail::take_snapshot(*p, s));
  const std::uint64_t epoch = p->history.header.epoch;
  const auto convert = [&](clock_kind k, std::uint64_t c, detail::stamp_time& t) {
    detail::history_segment seg;
    bool have = false;
    return detail::stamp_to_time(s, k, epoch, c, seg, have, t);
  };
  const auto fast = [](const clock_line& l, std::uint64_t c) {  // MONOTONIC, as the fast path
    return l.mono_ns + detail::delta_to_ns(c - l.cycle_last, l.mult, l.shift);
  };
  detail::stamp_time t;
  // l0 from its update's end on; before it, before the history: inside l0's own update, the
  // line before it frozen at the switch point (l0's time at cycle_last), not l0 run on.
  EXPECT_EQ(convert(clock_kind::monotonic, l0.cycle_last + 99, t), detail::stamp_estimate);
  EXPECT_EQ(t.ns, l0.mono_ns);
  EXPECT_GE(t.bound_ns, fast(l0, l0.cycle_last + 99) - l0.mono_ns);
  ASSERT_EQ(convert(clock_kind::monotonic, l0.cycle_last + 100, t), detail::stamp_exact);
  EXPECT_EQ(t.ns, fast(l0, l0.cycle_last + 100));
  // The switch point: still l0; past it, inside the update: the frozen
  // time, as an estimate; from the update's end: l1.
  ASSERT_EQ(convert(clock_kind::monotonic, l1.cycle_last, t), detail::stamp_exact);
  EXPECT_EQ(t.ns, fast(l0, l1.cycle_last));
  EXPECT_EQ(convert(clock_kind::monotonic, l1.cycle_last + 1, t), detail::stamp_estimate);
  EXPECT_EQ(t.ns, fast(l0, l1.cycle_last));
  EXPECT_EQ(convert(clock_kind::monotonic, l1.cycle_last + 159, t), detail::stamp_estimate);
  ASSERT_EQ(convert(clock_kind::monotonic, l1.cycle_last + 160, t), detail::stamp_exact);
  EXPECT_EQ(t.ns, fast(l1, l1.cycle_last + 160));
  ASSERT_EQ(convert(clock_kind::monotonic_raw, l1.cycle_last + 161, t), detail::stamp_exact);
  EXPECT_EQ(t.ns, l1.raw_ns + detail::delta_to_ns(161, l1.raw_mult, l1.shift));
  ASSERT_EQ(convert(clock_kind::tai, l1.cycle_last + 7000, t), detail::stamp_exact);
  EXPECT_EQ(t.ns, l1.realtime_ns + 37 * ns_per_s + detail::delta_to_ns(7000, l1.mult, l1.shift));
  // Across the step: REALTIME half a second back from l2's end on.
  ASSERT_EQ(convert(clock_kind::realtime, l2.cycle_last, t), detail::stamp_exact);
  EXPECT_EQ(t.ns, l1.realtime_ns + detail::delta_to_ns(8000, l1.mult, l1.shift));
  ASSERT_EQ(convert(clock_kind::realtime, l2.cycle_last + 48, t), detail::stamp_exact);
  EXPECT_EQ(t.ns, l2.realtime_ns + detail::delta_to_ns(48, l2.mult, l2.shift));
  // Past the newest line's validity: an estimate. Its readers asked the kernel, up to
  // lag_ns behind it, while the line may run up to lead_ns ahead: the bound holds both, on
  // top of 1000 ppm of the distance and 1 us.
  EXPECT_EQ(convert(clock_kind::monotonic, l2.cycle_last + l2.max_delta, t),
            detail::stamp_estimate);
  const std::int64_t distance = fast(l2, l2.cycle_last + l2.max_delta) - l2.mono_ns;
  EXPECT_EQ(t.bound_ns, distance / 1000 + 1000);  // this page: no lead, no lag
  p->lead_ns = 3000;
  p->lag_ns = 2000;
  ASSERT_TRUE(detail::take_snapshot(*p, s));
  EXPECT_EQ(convert(clock_kind::monotonic, l2.cycle_last + l2.max_delta, t),
            detail::stamp_estimate);
  EXPECT_EQ(t.bound_ns, distance / 1000 + 1000 + 5000);
  // Another epoch.
  detail::history_segment seg;
  bool have = false;
  EXPECT_EQ(detail::stamp_to_time(s, clock_kind::monotonic, epoch + 1, l2.cycle_last, seg, have, t),
            -ESTALE);
}

}  // namespace
}  // namespace vclock::sim
