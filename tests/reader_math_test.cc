// The conversion math and the reader, driven by hand-built pages, a fake counter and a fake
// kernel (STYLE.md 3.9: pure functions first). Every answer is checked against a 128-bit
// reference computed here independently of reader.h.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "lib/mult_shift.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/page.h"

namespace {

__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 i128;

using vclock::clock_line;
using vclock::page;
using vclock::detail::clock_kind;

constexpr u128 two_pow_64 = u128{1} << 64;

// Seeded so that a failure reproduces; the seed is printed with every failure.
constexpr std::uint64_t seed = 0x5eed'0c10'c4a7'0001ULL;

// The timekeeper's rate headroom: choose_mult_shift() is given the largest rate the
// timekeeper may use, mult_for() then any rate up to it.
constexpr double rate_headroom = 2000e-6;

// A counter rate in Hz, log-uniform from `min_hz` (1 MHz by default) to 10 GHz.
std::uint64_t random_hz(std::mt19937_64& rng, double min_hz = 1e6) {
  std::uniform_real_distribution<double> log_hz(std::log(min_hz), std::log(1e10));
  return static_cast<std::uint64_t>(std::llround(std::exp(log_hz(rng))));
}

// The slowest counter this architecture's pages can describe: with a fixed shift s,
// mult = ns_per_tick * 2^s must stay below 2^32 for every rate up to the headroom.
constexpr double min_page_hz =
    vclock::arch::fixed_shift == 0
        ? 1e6
        : 1e9 * (1 + rate_headroom) *
              static_cast<double>(std::uint64_t{1} << vclock::arch::fixed_shift) / 4294967296.0 *
              1.001;

// What the timekeeper publishes: choose_mult_shift() restricted to the arch's fixed shift.
vclock::mult_shift page_mult_shift(double max_ns_per_tick, std::uint64_t wanted) {
  return vclock::choose_mult_shift(max_ns_per_tick, wanted, vclock::arch::fixed_shift);
}

std::uint64_t random_below(std::mt19937_64& rng, std::uint64_t bound) {
  return std::uniform_int_distribution<std::uint64_t>(0, bound - 1)(rng);
}

// A delta in [0, max_delta), biased towards the edges, where overflow would show.
std::uint64_t random_delta(std::mt19937_64& rng, std::uint64_t max_delta) {
  switch (random_below(rng, 4)) {
    case 0:
      return random_below(rng, std::min<std::uint64_t>(max_delta, 1000));
    case 1:
      return max_delta - 1 - random_below(rng, std::min<std::uint64_t>(max_delta, 1000));
    default:
      return random_below(rng, max_delta);
  }
}

// The reference: the exact product, shifted, in 128 bits.
std::int64_t reference_ns(std::uint64_t delta, std::uint32_t mult, unsigned shift) {
  const u128 product = u128{delta} * mult;
  EXPECT_LT(product, two_pow_64) << "delta " << delta << " mult " << mult;
  return static_cast<std::int64_t>(product >> shift);
}

// What line `l` says clock K is when the counter reads `now`, from first principles.
std::int64_t expected_time(clock_kind k, const clock_line& l, std::uint64_t now) {
  std::int64_t base = l.mono_ns;
  if (k == clock_kind::realtime || k == clock_kind::realtime_coarse) {
    base = l.realtime_ns;
  } else if (k == clock_kind::boottime) {
    base = l.boottime_ns;
  } else if (k == clock_kind::tai) {
    base = l.realtime_ns + std::int64_t{l.tai_offset_s} * 1'000'000'000;
  } else if (k == clock_kind::monotonic_raw) {
    base = l.raw_ns;
  }
  if (vclock::detail::is_coarse(k)) {
    return base;
  }
  const bool raw = k == clock_kind::monotonic_raw;
  return base + reference_ns(now - l.cycle_last, raw ? l.raw_mult : l.mult, l.shift);
}

// The last time line `l` can give for clock K: the cap the careful path floors at.
std::int64_t cap_time(clock_kind k, const clock_line& l) {
  if (vclock::detail::is_coarse(k)) {
    return expected_time(k, l, 0);
  }
  return expected_time(k, l, l.cycle_last + l.max_delta - 1);
}

struct fake_counter {
  std::uint64_t value = 0;
  int calls = 0;
  vclock::arch::counter_read operator()() noexcept {
    ++calls;
    return {value, 0};
  }
};

struct fake_kernel {
  std::int64_t value = 0;
  int calls = 0;
  std::int64_t operator()() noexcept {
    ++calls;
    return value;
  }
};

// Calls f.operator()<K>() for every clock the page serves.
template <class F>
void for_each_kind(F&& f) {
  f.template operator()<clock_kind::realtime>();
  f.template operator()<clock_kind::monotonic>();
  f.template operator()<clock_kind::monotonic_raw>();
  f.template operator()<clock_kind::boottime>();
  f.template operator()<clock_kind::tai>();
  f.template operator()<clock_kind::realtime_coarse>();
  f.template operator()<clock_kind::monotonic_coarse>();
}

// A plausible line for a 3 GHz counter: realistic offsets, parameters from mult_shift.h.
clock_line typical_line(std::uint32_t seq) {
  const double ns_per_tick = 1e9 / 3e9;
  const vclock::mult_shift ms = page_mult_shift(ns_per_tick * (1 + rate_headroom), 48'000'000);
  return clock_line{
      .seq = seq,
      .mult = vclock::mult_for(ns_per_tick * (1 + 13e-6), ms.shift),
      .cycle_last = 0x0000'1234'5678'9abcULL,
      .max_delta = ms.max_delta,
      .mono_ns = 123'456'789'012'345,
      .realtime_ns = 123'456'789'012'345 + 1'700'000'000'000'000'000,
      .boottime_ns = 123'456'789'012'345 + 9'876'543'210,
      .raw_ns = 123'450'000'000'000,
      .raw_mult = vclock::mult_for(ns_per_tick * (1 - 7e-6), ms.shift),
      .shift = static_cast<std::uint8_t>(ms.shift),
      .reserved = 0,
      .tai_offset_s = 37,
  };
}

std::unique_ptr<page> make_page() { return std::make_unique<page>(); }

// One read the way the library does it: the fast path, falling back to the careful one.
template <clock_kind K>
std::int64_t read(const page& p, fake_counter& counter, fake_kernel& kernel, int& careful_calls) {
  return vclock::detail::read_fast<K>(p, counter, [&]() noexcept {
    ++careful_calls;
    return vclock::detail::read_careful<K>(p, counter, kernel);
  });
}

// --- choose_mult_shift / mult_for / delta_to_ns ---------------------------------------------

TEST(MultShift, KnownRatesGetTheLargestShift) {
  // 1 GHz: mult = 2^32 does not fit, so shift 31 and mult 2^31.
  vclock::mult_shift ms = vclock::choose_mult_shift(1.0, 1'000'000'000);
  EXPECT_EQ(ms.shift, 31u);
  EXPECT_EQ(ms.max_delta, 1'000'000'000u);
  EXPECT_EQ(vclock::mult_for(1.0, ms.shift), 1u << 31);
  // 1 MHz: 1000 * 2^22 < 2^32 <= 1000 * 2^23.
  ms = vclock::choose_mult_shift(1000.0, 16'000);
  EXPECT_EQ(ms.shift, 22u);
  EXPECT_EQ(ms.max_delta, 16'000u);
  // 10 GHz: the largest shift allowed.
  ms = vclock::choose_mult_shift(0.1, 160'000'000);
  EXPECT_EQ(ms.shift, 32u);
  EXPECT_EQ(ms.max_delta, 160'000'000u);
}

TEST(MultShift, ChoosesLargestShiftThatCannotOverflow) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t hz = i == 0 ? 1'000'000'000 : random_hz(rng);
    const double max_ns = 1e9 / static_cast<double>(hz) * (1 + rate_headroom);
    // Up to 4 s of ticks: every rate in range fits that whole interval.
    const std::uint64_t wanted = 1 + random_below(rng, 4 * hz);
    const vclock::mult_shift ms = vclock::choose_mult_shift(max_ns, wanted);
    SCOPED_TRACE(testing::Message() << "seed " << seed << " i " << i << " hz " << hz << " wanted "
                                    << wanted << " shift " << ms.shift);
    ASSERT_LE(ms.shift, 32u);
    ASSERT_EQ(ms.max_delta, wanted);
    const double max_mult = std::ceil(std::ldexp(max_ns, static_cast<int>(ms.shift)));
    ASSERT_LT(max_mult, 4294967296.0);
    // The proof obligation: the largest mult times the largest delta fits in 64 bits.
    ASSERT_LT(u128{ms.max_delta - 1} * static_cast<std::uint64_t>(max_mult), two_pow_64);
    if (ms.shift < 32) {
      // One more bit of shift would break one of the two conditions.
      const double next = std::ceil(std::ldexp(max_ns, static_cast<int>(ms.shift) + 1));
      const bool next_fits =
          next < 4294967296.0 && u128{wanted - 1} * static_cast<std::uint64_t>(next) < two_pow_64;
      ASSERT_FALSE(next_fits) << "shift " << ms.shift + 1 << " would have worked";
    }
  }
}

TEST(MultShift, MultForRoundsToNearestAndStaysBelowTheBound) {
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> used(-rate_headroom, rate_headroom);
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t hz = random_hz(rng);
    const double ns_per_tick = 1e9 / static_cast<double>(hz);
    const double max_ns = ns_per_tick * (1 + rate_headroom);
    const vclock::mult_shift ms = vclock::choose_mult_shift(max_ns, hz / 50);
    const double rate = ns_per_tick * (1 + used(rng));
    const std::uint32_t mult = vclock::mult_for(rate, ms.shift);
    const double scaled = std::ldexp(rate, static_cast<int>(ms.shift));
    SCOPED_TRACE(testing::Message() << "seed " << seed + 1 << " i " << i << " hz " << hz);
    ASSERT_LE(std::abs(static_cast<double>(mult) - scaled), 0.5);
    ASSERT_LE(mult, std::ceil(std::ldexp(max_ns, static_cast<int>(ms.shift))));
  }
  EXPECT_EQ(vclock::mult_for(0.0, 32), 0u);
  EXPECT_EQ(vclock::mult_for(-1.0, 10), 0u);
  EXPECT_EQ(vclock::mult_for(2.0, 32), 4294967295u);  // saturates rather than wrapping
}

// delta_to_ns against the 128-bit reference and against the exact rational delta * 1e9 / hz:
// the error is at most 1 ns (the floor) plus delta times the quantisation of mult
// ((0.5 + 2^-21) / 2^shift ns per tick: half a unit of rounding, plus the double rounding
// of 1e9 / hz).
TEST(MultShift, DeltaToNsMatches128BitReferenceWithinQuantisation) {
  std::mt19937_64 rng(seed + 2);
  long double worst_excess = -1;
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t hz = i == 0 ? 1'000'000'000 : random_hz(rng);
    const double ns_per_tick = 1e9 / static_cast<double>(hz);
    const std::uint64_t wanted = 1 + random_below(rng, 4 * hz);
    const vclock::mult_shift ms =
        vclock::choose_mult_shift(ns_per_tick * (1 + rate_headroom), wanted);
    const std::uint32_t mult = vclock::mult_for(ns_per_tick, ms.shift);
    // mult is within half a unit (plus the double's rounding) of 1e9 * 2^shift / hz.
    const i128 mult_error =
        i128{mult} * static_cast<i128>(hz) - (i128{1'000'000'000} << static_cast<int>(ms.shift));
    const i128 abs_mult_error = mult_error < 0 ? -mult_error : mult_error;
    ASSERT_LE(abs_mult_error * 2 * (1 << 20), static_cast<i128>(hz) * ((1 << 20) + 1))
        << "hz " << hz << " shift " << ms.shift << " mult " << mult;
    for (int j = 0; j < 200; ++j) {
      const std::uint64_t delta =
          j == 0 ? 0 : (j == 1 ? ms.max_delta - 1 : random_delta(rng, ms.max_delta));
      SCOPED_TRACE(testing::Message() << "seed " << seed + 2 << " hz " << hz << " shift "
                                      << ms.shift << " mult " << mult << " delta " << delta);
      const std::int64_t ns = vclock::detail::delta_to_ns(delta, mult, ms.shift);
      ASSERT_EQ(ns, reference_ns(delta, mult, ms.shift));
      ASSERT_GE(ns, 0);
      // Exact: delta * 1e9 / hz = q + r / hz.
      const u128 numerator = u128{delta} * 1'000'000'000u;
      const auto q = static_cast<i128>(numerator / hz);
      const auto r = static_cast<long double>(static_cast<std::uint64_t>(numerator % hz));
      const long double error =
          static_cast<long double>(static_cast<i128>(ns) - q) - r / static_cast<long double>(hz);
      const long double bound = 1.0L + static_cast<long double>(delta) *
                                           (0.5L + std::ldexp(1.0L, -21)) /
                                           std::ldexp(1.0L, static_cast<int>(ms.shift));
      ASSERT_LE(std::fabs(error), bound);
      worst_excess = std::max(worst_excess, std::fabs(error) - bound);
    }
  }
  RecordProperty("worst_error_minus_bound_ns", std::to_string(static_cast<double>(worst_excess)));
}

TEST(MultShift, NanosecondCounterIsExact) {
  const vclock::mult_shift ms = vclock::choose_mult_shift(1.0 * (1 + rate_headroom), 1ULL << 33);
  const std::uint32_t mult = vclock::mult_for(1.0, ms.shift);
  ASSERT_EQ(std::uint64_t{mult}, std::uint64_t{1} << ms.shift);
  std::mt19937_64 rng(seed + 3);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t delta =
        i == 0 ? 0 : (i == 1 ? ms.max_delta - 1 : random_delta(rng, ms.max_delta));
    ASSERT_EQ(vclock::detail::delta_to_ns(delta, mult, ms.shift), static_cast<std::int64_t>(delta));
  }
}

// arm64's generic timer (issue 24): a 25 MHz counter (40 ns a tick, common on Cortex-A parts)
// and a 1 GHz one (Armv8.6 and later) have whole nanoseconds per tick, so mult is exact,
// ns_per_tick << shift, and every delta of the window converts without error. The shift is the
// largest that fits the timekeeper's headroom (40.08 * 2^26 < 2^32 <= 40.08 * 2^27; 1.002 * 2^31
// < 2^32), and even the fastest rate the headroom allows cannot overflow at the window's end.
TEST(MultShift, Arm64CounterRatesAreExactOverTheWindow) {
  struct arm64_rate {
    double hz;
    std::uint32_t shift;
    std::uint64_t ns_per_tick;
  };
  std::mt19937_64 rng(seed + 7);
  for (const arm64_rate r : {arm64_rate{25e6, 26, 40}, arm64_rate{1e9, 31, 1}}) {
    const double ns_per_tick = 1e9 / r.hz;
    const double max_ns = ns_per_tick * (1 + rate_headroom);
    const auto wanted = static_cast<std::uint64_t>(4 * r.hz);  // 4 s of ticks
    const vclock::mult_shift ms = vclock::choose_mult_shift(max_ns, wanted);
    SCOPED_TRACE(testing::Message() << "hz " << r.hz << " shift " << ms.shift);
    ASSERT_EQ(ms.shift, r.shift);
    ASSERT_EQ(ms.max_delta, wanted);
    const std::uint32_t mult = vclock::mult_for(ns_per_tick, ms.shift);
    ASSERT_EQ(std::uint64_t{mult}, r.ns_per_tick << r.shift);
    const auto max_mult =
        static_cast<std::uint32_t>(std::ceil(std::ldexp(max_ns, static_cast<int>(ms.shift))));
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t delta =
          i == 0 ? 0 : (i == 1 ? ms.max_delta - 1 : random_delta(rng, ms.max_delta));
      ASSERT_EQ(vclock::detail::delta_to_ns(delta, mult, ms.shift),
                static_cast<std::int64_t>(delta * r.ns_per_tick))
          << "delta " << delta;
      ASSERT_EQ(vclock::detail::delta_to_ns(delta, max_mult, ms.shift),
                reference_ns(delta, max_mult, ms.shift))
          << "delta " << delta << " at the headroom's fastest rate";
    }
  }
}

TEST(MultShift, CounterTooSlowForTheIntervalShortensMaxDelta) {
  // 1 tick per second: even at shift 2, 2^64 / (1e9 * 4) ticks is all that fits.
  const std::uint64_t wanted = std::uint64_t{1} << 62;
  const vclock::mult_shift ms = vclock::choose_mult_shift(1e9, wanted);
  ASSERT_GT(ms.max_delta, 0u);
  EXPECT_LT(ms.max_delta, wanted);
  const double max_mult = std::ceil(std::ldexp(1e9, static_cast<int>(ms.shift)));
  EXPECT_LT(u128{ms.max_delta - 1} * static_cast<std::uint64_t>(max_mult), two_pow_64);
}

// With a fixed shift (arch::fixed_shift, 32 on x86-64): the whole interval or nothing.
TEST(MultShift, FixedShiftCoversTheIntervalOrRefuses) {
  std::mt19937_64 rng(seed + 6);
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t hz = random_hz(rng);
    const double max_ns = 1e9 / static_cast<double>(hz) * (1 + rate_headroom);
    const std::uint64_t wanted = 1 + random_below(rng, 4 * hz);
    const vclock::mult_shift ms = vclock::choose_mult_shift(max_ns, wanted, 32);
    SCOPED_TRACE(testing::Message() << "seed " << seed + 6 << " i " << i << " hz " << hz);
    const double max_mult = std::ceil(std::ldexp(max_ns, 32));
    if (max_mult >= 4294967296.0) {
      ASSERT_EQ(ms.max_delta, 0u);  // too slow for shift 32: the page is never used
      continue;
    }
    ASSERT_EQ(ms.shift, 32u);
    // Up to 4 s of a counter of 1 GHz or more: 2^64 / 2^32 ticks always suffice.
    ASSERT_EQ(ms.max_delta, wanted);
    ASSERT_LT(u128{ms.max_delta - 1} * static_cast<std::uint64_t>(max_mult), two_pow_64);
  }
  // 1 GHz is just too slow for shift 32 once there is headroom; 1.01 GHz is not.
  EXPECT_EQ(vclock::choose_mult_shift(1.0 * (1 + rate_headroom), 1000, 32).max_delta, 0u);
  EXPECT_EQ(vclock::choose_mult_shift(1 / 1.01 * (1 + rate_headroom), 1000, 32).max_delta, 1000u);
  // A huge interval is shortened to what fits, as without a fixed shift.
  const vclock::mult_shift ms = vclock::choose_mult_shift(0.5, ~std::uint64_t{0}, 32);
  EXPECT_EQ(ms.shift, 32u);
  EXPECT_EQ(ms.max_delta, ~std::uint64_t{0} / (std::uint64_t{1} << 31));
}

TEST(MultShift, ImpossibleRatesGiveMaxDeltaZero) {
  // 2^32 ns per tick and more: mult >= 2^32 at every shift. max_delta 0 means "never used".
  EXPECT_EQ(vclock::choose_mult_shift(4294967296.0, 10).max_delta, 0u);
  EXPECT_EQ(vclock::choose_mult_shift(1e12, 10).max_delta, 0u);
  EXPECT_EQ(vclock::choose_mult_shift(0.0, 10).max_delta, 0u);
}

// --- clock ids ------------------------------------------------------------------------------

// kind_of() and kernel_clock_of() against a table written here from clock_gettime(2), and
// against each other: every page clock goes to its kernel id and back, and no other id (the
// CPU-time clocks, the alarms, unknown ids, the negative ids of per-process CPU clocks and of
// dynamic clocks such as a PTP device's fd) comes to a page clock.
TEST(Reader, KindOfIsTheInverseOfKernelClockOf) {
  using vclock::detail::kernel_clock_of;
  using vclock::detail::kind_of;
  struct pair {
    clockid_t id;
    clock_kind kind;
  };
  constexpr pair page_clocks[] = {
      {CLOCK_REALTIME, clock_kind::realtime},
      {CLOCK_MONOTONIC, clock_kind::monotonic},
      {CLOCK_MONOTONIC_RAW, clock_kind::monotonic_raw},
      {CLOCK_BOOTTIME, clock_kind::boottime},
      {CLOCK_TAI, clock_kind::tai},
      {CLOCK_REALTIME_COARSE, clock_kind::realtime_coarse},
      {CLOCK_MONOTONIC_COARSE, clock_kind::monotonic_coarse},
  };
  for (const pair& c : page_clocks) {
    SCOPED_TRACE(testing::Message() << "clock " << c.id);
    EXPECT_TRUE(kind_of(c.id).served);
    EXPECT_EQ(kind_of(c.id).kind, c.kind);
    EXPECT_EQ(kernel_clock_of(c.kind), c.id);
  }
  int kinds = 0;
  for_each_kind([&]<clock_kind K>() {
    ++kinds;
    SCOPED_TRACE(testing::Message() << "kind " << static_cast<unsigned>(K));
    EXPECT_TRUE(kind_of(kernel_clock_of(K)).served);
    EXPECT_EQ(kind_of(kernel_clock_of(K)).kind, K);
  });
  EXPECT_EQ(kinds, static_cast<int>(std::size(page_clocks)));

  // A dynamic clock is ((~fd) << 3) | 3 and a process's CPU clock ((~pid) << 3) | 0..2
  // (clock_getcpuclockid(3)): negative, never a page clock.
  const auto dynamic_clock = [](int fd) { return static_cast<clockid_t>((~fd) * 8 + 3); };
  const auto process_cpu_clock = [](int pid) { return static_cast<clockid_t>((~pid) * 8 + 2); };
  for (const clockid_t id :
       {clockid_t{CLOCK_PROCESS_CPUTIME_ID}, clockid_t{CLOCK_THREAD_CPUTIME_ID},
        clockid_t{CLOCK_REALTIME_ALARM}, clockid_t{CLOCK_BOOTTIME_ALARM}, clockid_t{10},
        clockid_t{12}, clockid_t{99}, clockid_t{-1}, dynamic_clock(3), dynamic_clock(1000),
        process_cpu_clock(1), process_cpu_clock(4'000'000), std::numeric_limits<clockid_t>::min(),
        std::numeric_limits<clockid_t>::max()}) {
    EXPECT_FALSE(kind_of(id).served) << "clock " << id;
  }
  // And across a range of ids: exactly the seven are served, each by the kind that maps back.
  int served = 0;
  for (clockid_t id = -4096; id <= 4096; ++id) {
    const vclock::detail::served_kind k = kind_of(id);
    if (!k.served) continue;
    ++served;
    EXPECT_EQ(kernel_clock_of(k.kind), id) << "clock " << id;
  }
  EXPECT_EQ(served, static_cast<int>(std::size(page_clocks)));
}

// with_kind(), the switch the vDSO image and the shim dispatch kind_of()'s answer through,
// reaches each kind's own instance.
TEST(Reader, WithKindCallsTheInstanceOfItsKind) {
  using vclock::detail::with_kind;
  int kinds = 0;
  for_each_kind([&]<clock_kind K>() {
    ++kinds;
    EXPECT_EQ(with_kind(K, []<clock_kind J>() noexcept { return J; }), K)
        << "kind " << static_cast<unsigned>(K);
  });
  EXPECT_EQ(kinds, 7);
}

// --- read_fast / read_careful ---------------------------------------------------------------

TEST(Reader, FastPathAddsTheRightOffsetForEachClock) {
  auto p = make_page();
  p->hot = typical_line(42);
  std::mt19937_64 rng(seed + 4);
  for_each_kind([&]<clock_kind K>() {
    for (int i = 0; i < 1000; ++i) {
      fake_counter counter{p->hot.cycle_last + random_delta(rng, p->hot.max_delta)};
      fake_kernel kernel{};
      int careful = 0;
      const std::int64_t t = read<K>(*p, counter, kernel, careful);
      SCOPED_TRACE(testing::Message() << "kind " << static_cast<unsigned>(K) << " delta "
                                      << counter.value - p->hot.cycle_last);
      ASSERT_EQ(t, expected_time(K, p->hot, counter.value));
      ASSERT_EQ(careful, 0);
      ASSERT_EQ(kernel.calls, 0);
      // Coarse clocks never read the counter; fine clocks read it exactly once.
      ASSERT_EQ(counter.calls, vclock::detail::is_coarse(K) ? 0 : 1);
    }
  });
}

TEST(Reader, FastPathAnswersFromZeroToMaxDeltaMinusOne) {
  auto p = make_page();
  p->hot = typical_line(2);
  for_each_kind([&]<clock_kind K>() {
    if constexpr (!vclock::detail::is_coarse(K)) {
      for (const std::uint64_t delta : {std::uint64_t{0}, std::uint64_t{1}, p->hot.max_delta - 1}) {
        fake_counter counter{p->hot.cycle_last + delta};
        fake_kernel kernel{};
        int careful = 0;
        EXPECT_EQ(read<K>(*p, counter, kernel, careful), expected_time(K, p->hot, counter.value));
        EXPECT_EQ(careful, 0) << "delta " << delta;
      }
      // At max_delta the fast path gives up.
      fake_counter counter{p->hot.cycle_last + p->hot.max_delta};
      fake_kernel kernel{0};
      int careful = 0;
      read<K>(*p, counter, kernel, careful);
      EXPECT_EQ(careful, 1);
    }
  });
}

TEST(Reader, CounterSlightlyBehindCycleLastIsClampedWithoutTheKernel) {
  auto p = make_page();
  p->hot = typical_line(2);
  for_each_kind([&]<clock_kind K>() {
    if constexpr (!vclock::detail::is_coarse(K)) {
      for (const std::uint64_t lag :
           {std::uint64_t{1}, std::uint64_t{21}, vclock::detail::max_lag_ticks}) {
        fake_counter counter{p->hot.cycle_last - lag};
        fake_kernel kernel{std::numeric_limits<std::int64_t>::max()};
        int careful = 0;
        EXPECT_EQ(read<K>(*p, counter, kernel, careful),
                  expected_time(K, p->hot, p->hot.cycle_last))
            << "lag " << lag;
        EXPECT_EQ(careful, 1);
        EXPECT_EQ(kernel.calls, 0);
      }
    }
  });
}

// What a reader of a stale (or lost) line answers when the kernel says k:
// at least the base, at least k + lead, and at least what the line may have
// given by now: its cap, reached no faster than 1/512 ahead of the kernel.
std::int64_t expected_stale(std::int64_t k, std::int64_t lead, std::int64_t base,
                            std::int64_t cap) {
  const std::int64_t est = k + lead;
  if (est <= base) return base;
  const std::int64_t reach = est + (est - base) / 512;
  return std::max(est, std::min(reach, cap));
}

// A counter far behind cycle_last (a reset, a jump back) is not clamped: the
// page cannot say where it is, so the kernel answers, plus the page's lead
// over the kernel, and never below the base (what the page gave at
// cycle_last).
TEST(Reader, CounterFarBehindCycleLastAsksTheKernelFlooredAtTheBase) {
  auto p = make_page();
  p->hot = typical_line(2);
  p->lead_ns = 250;
  for_each_kind([&]<clock_kind K>() {
    if constexpr (!vclock::detail::is_coarse(K)) {
      const std::int64_t base = expected_time(K, p->hot, p->hot.cycle_last);
      for (const std::uint64_t lag :
           {vclock::detail::max_lag_ticks + 1, std::uint64_t{1} << 40, p->hot.cycle_last}) {
        for (const std::int64_t k : {base - 1'000'000, base + 1'000'000}) {
          fake_counter counter{p->hot.cycle_last - lag};
          fake_kernel kernel{k};
          int careful = 0;
          EXPECT_EQ(read<K>(*p, counter, kernel, careful),
                    expected_stale(k, 250, base, cap_time(K, p->hot)))
              << "lag " << lag;
          EXPECT_EQ(kernel.calls, 1);
        }
      }
    }
  });
}

// A stale page (delta >= max_delta: a stalled timekeeper, a suspend) is never
// extrapolated: the kernel answers, plus the lead, floored at the base.
TEST(Reader, StalePageAsksTheKernelAndNeverExtrapolates) {
  auto p = make_page();
  p->hot = typical_line(2);
  p->lead_ns = 40;
  for_each_kind([&]<clock_kind K>() {
    if constexpr (!vclock::detail::is_coarse(K)) {
      const std::int64_t base = expected_time(K, p->hot, p->hot.cycle_last);
      const std::int64_t cap = cap_time(K, p->hot);
      for (const std::uint64_t delta :
           {p->hot.max_delta, p->hot.max_delta + 1, p->hot.max_delta * 1000}) {
        fake_counter counter{p->hot.cycle_last + delta};
        // The kernel stood still (a VM pause): the base, not the cap.
        fake_kernel still{base - 5'000};
        int careful = 0;
        EXPECT_EQ(read<K>(*p, counter, still, careful), base) << "delta " << delta;
        EXPECT_LT(read<K>(*p, counter, still, careful), cap);
        EXPECT_EQ(still.calls, 2);
        // The kernel past all the page gave: its own answer (the lead is
        // a bound on the page's error, not one: stale_answer()).
        fake_kernel ahead{cap + 5'000'000'000};
        EXPECT_EQ(read<K>(*p, counter, ahead, careful), cap + 5'000'000'000);
        EXPECT_EQ(ahead.calls, 1);
        EXPECT_EQ(careful, 3);
      }
    }
  });
}

// A stale line whose page ran ahead of the kernel after its last sample (the
// kernel's rate changed: an NTP slew began while the writer stalled): the
// readers before went up to the cap, past kernel + lead, so the answer is the
// cap, not kernel + lead, or time would step back. A line whose counter raced
// ahead of the kernel (a jump) is held to 1/512 of the kernel's progress past
// the base, not the cap.
TEST(Reader, StalePageNeverUndercutsWhatTheLineGave) {
  auto p = make_page();
  p->hot = typical_line(2);
  p->lead_ns = 40;
  for_each_kind([&]<clock_kind K>() {
    if constexpr (!vclock::detail::is_coarse(K)) {
      const std::int64_t base = expected_time(K, p->hot, p->hot.cycle_last);
      const std::int64_t cap = cap_time(K, p->hot);
      fake_counter counter{p->hot.cycle_last + p->hot.max_delta + 10};
      int careful = 0;
      // The kernel (plus lead) 3 us behind the cap, having advanced a whole window.
      fake_kernel behind{cap - 3'000 - 40};
      EXPECT_EQ(read<K>(*p, counter, behind, careful), cap);
      // The kernel advanced 1 ms only: 1 ms / 512 past it, far below the cap.
      fake_kernel slow{base + 1'000'000 - 40};
      EXPECT_EQ(read<K>(*p, counter, slow, careful), base + 1'000'000 + 1'000'000 / 512);
      EXPECT_LT(read<K>(*p, counter, slow, careful), cap);
    }
  });
}

// The coarse line answers the coarse clocks with loads only (time(2) with one); off, its
// owner dead (page.h: the kernel set FUTEX_OWNER_DIED) or mid-write, it hands over to the
// careful path.
TEST(Reader, CoarseLineAnswersWithoutTheCounter) {
  auto p = make_page();
  constexpr std::uint64_t owner = 4242;  // a thread id
  p->coarse.valid = owner;
  p->coarse.time_word = std::uint64_t{1'700'000'000} << 32 | owner;
  p->coarse.mono_ns = 5'123'456'789;
  p->coarse.mono_sec = 5;
  p->coarse.mono_nsec = 123'456'789;
  p->coarse.realtime_ns = 1'700'000'000'987'654'321;
  p->coarse.realtime_sec = 1'700'000'000;
  p->coarse.realtime_nsec = 987'654'321;
  int careful = 0;
  const auto careful_fn = [&careful] {
    ++careful;
    return std::int64_t{42'000'000'007};
  };
  using vclock::detail::as_ns;
  using vclock::detail::as_seconds;
  using vclock::detail::as_timespec;
  using vclock::detail::read_coarse;
  using vclock::detail::try_read_time;
  EXPECT_EQ((read_coarse<clock_kind::monotonic_coarse, as_ns>(*p, careful_fn)), 5'123'456'789);
  EXPECT_EQ((read_coarse<clock_kind::realtime_coarse, as_seconds>(*p, careful_fn)), 1'700'000'000);
  const timespec ts = read_coarse<clock_kind::realtime_coarse, as_timespec>(*p, careful_fn);
  EXPECT_EQ(ts.tv_sec, 1'700'000'000);
  EXPECT_EQ(ts.tv_nsec, 987'654'321);
  std::int64_t seconds = 0;
  EXPECT_TRUE(try_read_time(*p, seconds));
  EXPECT_EQ(seconds, 1'700'000'000);
  EXPECT_EQ(careful, 0);
  // What the kernel writes when the owner dies: FUTEX_OWNER_DIED, the id cleared (and
  // FUTEX_WAITERS kept, were it set). Every coarse read, time() included, turns careful.
  for (const std::uint32_t dead : {0x40000000u, 0xc0000000u, 0u}) {
    p->coarse.time_word = std::uint64_t{1'700'000'000} << 32 | dead;
    EXPECT_FALSE(try_read_time(*p, seconds)) << dead;
    EXPECT_EQ((read_coarse<clock_kind::monotonic_coarse, as_ns>(*p, careful_fn)), 42'000'000'007)
        << dead;
  }
  EXPECT_EQ(careful, 3);
  p->coarse.time_word = std::uint64_t{1'700'000'000} << 32 | owner;
  p->coarse.seq = 3;  // mid-write
  const timespec odd = read_coarse<clock_kind::monotonic_coarse, as_timespec>(*p, careful_fn);
  EXPECT_EQ(odd.tv_sec, 42);
  EXPECT_EQ(odd.tv_nsec, 7);
  EXPECT_EQ(careful, 4);
}

// A coarse clock's careful path checks the hot line's staleness as a fine clock's does: a
// dead writer's coarse line sends readers there, and a frozen base must not be returned
// once the hot line is stale too.
TEST(Reader, CoarseCarefulPathFollowsTheKernelOnceTheLineIsStale) {
  for_each_kind([&]<clock_kind K>() {
    if constexpr (vclock::detail::is_coarse(K)) {
      auto p = make_page();
      p->hot = typical_line(2);
      const std::int64_t base = vclock::detail::load_base_ns<K>(p->hot);
      fake_counter fresh{p->hot.cycle_last + 1000};
      fake_kernel kernel{base + 5'000'000'000};
      EXPECT_EQ(vclock::detail::read_careful<K>(*p, fresh, kernel), base);
      fake_counter stale{p->hot.cycle_last + p->hot.max_delta};
      EXPECT_GT(vclock::detail::read_careful<K>(*p, stale, kernel), base + 4'000'000'000);
    }
  });
}

// The coarse line as timekeeper.cc's write_coarse() leaves it for line `l`, with a live owner.
void write_coarse_line(page& p, const clock_line& l, std::uint32_t seq) {
  constexpr std::uint64_t owner = 4242;  // a thread id
  constexpr std::int64_t s = 1'000'000'000;
  p.coarse.seq = seq;
  p.coarse.valid = owner;
  p.coarse.mono_ns = l.mono_ns;
  p.coarse.realtime_ns = l.realtime_ns;
  p.coarse.mono_sec = l.mono_ns / s;
  p.coarse.mono_nsec = l.mono_ns % s;
  p.coarse.realtime_sec = l.realtime_ns / s;
  p.coarse.realtime_nsec = l.realtime_ns % s;
  p.coarse.time_word = static_cast<std::uint64_t>(l.realtime_ns / s) << 32 | owner;
}

// A live writer held up inside its update, past the line's validity (its vCPU gone for
// 20 ms), driven step by step as publish() writes the page: the coarse line is written
// after hot, from hot's bases at the switch point c, however late. A coarse reader that
// meets the coarse line mid-write, or was held up in its careful path until the next
// update, must not answer the kernel's time of now (hot stale, or frozen past c): the
// readers after it get c's time from the line. Under TSan, with the writer slowed past the
// line's validity, StandbyTickers saw the coarse clocks go back by 2 to 24 ms so.
TEST(Reader, CoarseClocksNeverGoBackAcrossAWriterHeldUpInItsUpdate) {
  for_each_kind([&]<clock_kind K>() {
    if constexpr (vclock::detail::is_coarse(K)) {
      const auto coarse = [](const page& p, fake_counter& counter, fake_kernel& kernel) {
        return vclock::detail::read_coarse<K, vclock::detail::as_ns>(
            p, [&]() noexcept { return vclock::detail::read_careful<K>(p, counter, kernel); });
      };
      auto p = make_page();
      const clock_line k = typical_line(2);
      p->hot = k;
      write_coarse_line(*p, k, 2);
      // publish(): the backup opened with line k, hot odd, the switch point c read, the
      // backup frozen at c, the new line (bases: line k at c) stored, hot even again.
      const std::uint64_t c = k.cycle_last + k.max_delta / 2;
      clock_line next = k;
      next.cycle_last = c;
      const std::int64_t at_c = expected_time(clock_kind::monotonic, k, c);
      next.realtime_ns += at_c - k.mono_ns;
      next.boottime_ns += at_c - k.mono_ns;
      next.mono_ns = at_c;
      next.seq = 4;
      p->backup = k;
      p->backup.max_delta = c - k.cycle_last + 1;
      p->backup.seq = 4;
      p->hot = next;
      const std::int64_t next_base = vclock::detail::load_base_ns<K>(next);
      // Held up for 20 ms there, then write_coarse() begins: the coarse line odd.
      p->coarse.seq = 3;
      fake_counter now{c + next.max_delta + 60'000'000};  // 20 ms at 3 GHz
      fake_kernel kernel{next_base + 20'000'000};
      const std::int64_t mid_write = coarse(*p, now, kernel);
      // write_coarse() ends: the coarse line holds c's time.
      write_coarse_line(*p, next, 4);
      const std::int64_t after = coarse(*p, now, kernel);
      EXPECT_EQ(after, next_base);
      EXPECT_LE(mid_write, after) << "the coarse clock went back";
      EXPECT_EQ(mid_write, next_base);
      // The next publish: the backup frozen at c2, hot odd, the writer held up 20 ms. A
      // reader that met the coarse line mid-write above and was held up in its careful path
      // until now answers no more than the line holds (readers after it get the line).
      p->backup = next;
      p->backup.max_delta = 1000;
      p->backup.seq = 6;
      p->hot.seq = 5;
      fake_counter later{c + 1000 + 60'000'000};
      fake_kernel later_kernel{next_base + 20'000'000};
      const std::int64_t held_up = vclock::detail::read_careful<K>(*p, later, later_kernel);
      EXPECT_LE(held_up, coarse(*p, later, later_kernel)) << "the coarse clock went back";
      EXPECT_EQ(held_up, next_base);
      // Its writer dead (FUTEX_OWNER_DIED), the coarse line is no one's: the careful path
      // follows the kernel, lag_ns behind, as before.
      p->coarse.time_word = p->coarse.time_word >> 32 << 32 | 0x40000000u;
      p->backup_lag_ns = 300;
      EXPECT_EQ(coarse(*p, later, later_kernel), next_base + 20'000'000 - 300);
    }
  });
}

// A line turned on again: the writer makes the coarse line its own (owner word alive) while
// hot and the backup are both odd, from a kernel read made after the coarse seq turned odd
// (timekeeper.cc, take_over_coarse()). A coarse reader that gave up waiting for that writer
// (both lines odd past max_spins: here another reader of this process already did) and asks
// the kernel meanwhile must not count that answer: it can be above the line the writer is
// writing, which every reader after it answers. It reads the coarse line again after the
// kernel and, the line taken over, answers the line.
TEST(Reader, ACoarseKernelAnswerCountsOnlyIfItsLineWasNotTakenOverMeanwhile) {
  for_each_kind([&]<clock_kind K>() {
    if constexpr (vclock::detail::is_coarse(K)) {
      auto p = make_page();
      clock_line off = typical_line(5);  // hot odd: the writer's update under way
      off.max_delta = 0;
      p->hot = off;
      p->backup = off;
      p->backup.seq = 3;  // still open
      p->coarse.seq = 2;  // off: no owner
      vclock::detail::stuck_writer_seq.store(5, std::memory_order_relaxed);
      const std::int64_t floor = vclock::detail::load_base_ns<K>(off);
      clock_line taken = off;  // the writer's kernel read, 1 us past the floor
      taken.mono_ns += 1'000;
      taken.realtime_ns += 1'000;
      int kernel_calls = 0;
      auto kernel = [&]() noexcept {
        if (kernel_calls++ == 0) write_coarse_line(*p, taken, 4);  // ends while this reads
        return floor + 5'000;                                      // read after the writer's
      };
      fake_counter counter{off.cycle_last + 10};
      const std::int64_t t = vclock::detail::read_careful<K>(*p, counter, kernel);
      fake_kernel unused{0};
      const auto careful = [&]() noexcept {
        return vclock::detail::read_careful<K>(*p, counter, unused);
      };
      const std::int64_t next = vclock::detail::read_coarse<K, vclock::detail::as_ns>(*p, careful);
      EXPECT_LE(t, next) << "the coarse clock went back";
      EXPECT_EQ(t, floor + 1'000);
      EXPECT_EQ(kernel_calls, 1);
      vclock::detail::stuck_writer_seq.store(0, std::memory_order_relaxed);
    }
  });
}

TEST(Reader, PageOffAnswersFromTheKernelFlooredAtTheBase) {
  auto p = make_page();
  p->hot = typical_line(8);
  p->hot.max_delta = 0;
  for_each_kind([&]<clock_kind K>() {
    // With max_delta 0 the base is the floor the writer left.
    const std::int64_t floor = expected_time(K, p->hot, p->hot.cycle_last);
    for (const std::uint64_t delta : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 50}) {
      fake_counter counter{p->hot.cycle_last + delta};
      fake_kernel behind{floor - 1};
      int careful = 0;
      EXPECT_EQ(read<K>(*p, counter, behind, careful), floor);
      EXPECT_EQ(behind.calls, 1);
      fake_kernel ahead{floor + 123};
      EXPECT_EQ(read<K>(*p, counter, ahead, careful), floor + 123);
      EXPECT_EQ(careful, 2);
    }
  });
}

TEST(Reader, WriterMidUpdateAnswersFromTheFrozenBackupLine) {
  auto p = make_page();
  p->backup = typical_line(6);
  // The backup is frozen where the writer started: a short max_delta.
  p->backup.max_delta = 1000;
  // hot is being rewritten: odd seq, fields half-way to nonsense.
  p->hot = typical_line(7);
  p->hot.mono_ns = -1;
  p->hot.raw_ns = -1;
  p->hot.max_delta = 0;
  for_each_kind([&]<clock_kind K>() {
    for (const std::uint64_t delta : {std::uint64_t{0}, std::uint64_t{999}}) {
      fake_counter counter{p->backup.cycle_last + delta};
      fake_kernel kernel{std::numeric_limits<std::int64_t>::max()};
      int careful = 0;
      EXPECT_EQ(read<K>(*p, counter, kernel, careful), expected_time(K, p->backup, counter.value));
      EXPECT_EQ(careful, 1);
      EXPECT_EQ(kernel.calls, 0);
    }
    // Past the freeze point: time stands still at the cap while the kernel, less the page's
    // lag, is behind it; a writer stalled there longer is followed lag_ns behind the kernel
    // (the lag copied when the backup was opened: backup_lag_ns). The coarse clocks too:
    // their cap is the base, and a dead writer must not freeze them.
    p->backup_lag_ns = 300;
    const std::int64_t cap = cap_time(K, p->backup);
    for (const std::uint64_t delta : {std::uint64_t{1000}, std::uint64_t{1} << 40}) {
      fake_counter counter{p->backup.cycle_last + delta};
      int careful = 0;
      fake_kernel behind{cap - 1000};
      EXPECT_EQ(read<K>(*p, counter, behind, careful), cap);
      fake_kernel stalled{cap + 1'000'000};
      EXPECT_EQ(read<K>(*p, counter, stalled, careful), cap + 1'000'000 - 300);
      EXPECT_EQ(behind.calls + stalled.calls, 2);
    }
  });
}

// A reader held up between its checks and its kernel read (here: the writer turns the page
// off from inside the kernel call, leaving a floor and lead 0) must not return that later
// kernel time plus the old lead: the parameters published meanwhile may be below it. It reads
// again, and answers from the off line.
TEST(Reader, RereadsWhenTheWriterPublishesDuringTheKernelRead) {
  auto p = make_page();
  p->hot = typical_line(10);
  p->lead_ns = 2'000;
  const std::int64_t base = expected_time(clock_kind::monotonic, p->hot, p->hot.cycle_last);
  const std::int64_t floor = base + 50'000'000;  // the off line's floor
  int kernel_calls = 0;
  const std::int64_t k = floor + 100;
  auto kernel = [&]() noexcept {
    if (kernel_calls++ == 0) {
      const std::uint32_t odd = vclock::detail::write_begin(p->hot.seq);
      vclock::detail::store(p->hot.max_delta, std::uint64_t{0});
      vclock::detail::store(p->hot.mono_ns, floor);
      vclock::detail::store(p->lead_ns, std::int64_t{0});
      vclock::detail::write_end(p->hot.seq, odd);
    }
    return k;
  };
  // Stale: the counter is past the window.
  fake_counter counter{p->hot.cycle_last + p->hot.max_delta + 5};
  const std::int64_t t = vclock::detail::read_careful<clock_kind::monotonic>(*p, counter, kernel);
  EXPECT_EQ(kernel_calls, 2);
  EXPECT_EQ(t, k) << "the off line's answer, max(kernel + 0, floor), not kernel + the old lead";
}

TEST(Reader, RereadsWhenTheWriterPublishesDuringTheRead) {
  auto p = make_page();
  p->hot = typical_line(10);
  const clock_line before = p->hot;
  // The counter read is where a concurrent writer would slip in: publish a whole new
  // generation from inside the first counter call.
  int calls = 0;
  const std::uint64_t now = before.cycle_last + 500;
  auto counter = [&]() noexcept {
    if (calls++ == 0) {
      const std::uint32_t odd = vclock::detail::write_begin(p->hot.seq);
      vclock::detail::store(p->hot.mono_ns, before.mono_ns + 1'000'000);
      vclock::detail::store(p->hot.cycle_last, before.cycle_last + 100);
      vclock::detail::write_end(p->hot.seq, odd);
    }
    return vclock::arch::counter_read{now, 0};
  };
  // The fast path does not loop: a changed seq goes to the careful path, which re-reads.
  int careful = 0;
  const auto careful_fn = [&]() noexcept {
    ++careful;
    return vclock::detail::read_careful<clock_kind::monotonic>(
        *p, counter, []() noexcept -> std::int64_t { return -1; });
  };
  const std::int64_t t = vclock::detail::read_fast<clock_kind::monotonic>(*p, counter, careful_fn);
  EXPECT_EQ(careful, 1);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(t, expected_time(clock_kind::monotonic, p->hot, now));
  EXPECT_NE(t, expected_time(clock_kind::monotonic, before, now));
}

TEST(Reader, CarefulPathAgreesWithFastPathOnRandomPages) {
  std::mt19937_64 rng(seed + 5);
  auto p = make_page();
  std::uniform_int_distribution<std::int64_t> time_ns(0, std::int64_t{1} << 56);
  std::uniform_int_distribution<std::int64_t> offset_ns(-(std::int64_t{1} << 61),
                                                        std::int64_t{1} << 61);
  std::uniform_real_distribution<double> used(-rate_headroom, rate_headroom);
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t hz = random_hz(rng, min_page_hz);
    const double ns_per_tick = 1e9 / static_cast<double>(hz);
    // Up to 50 ms of ticks, as the timekeeper's validity window.
    const vclock::mult_shift ms =
        page_mult_shift(ns_per_tick * (1 + rate_headroom), 1 + random_below(rng, hz / 20));
    ASSERT_GT(ms.max_delta, 0u) << "hz " << hz;
    const std::int64_t mono = time_ns(rng);
    p->hot = clock_line{
        .seq = static_cast<std::uint32_t>(2 * i),
        .mult = vclock::mult_for(ns_per_tick * (1 + used(rng)), ms.shift),
        .cycle_last = rng(),
        .max_delta = ms.max_delta,
        .mono_ns = mono,
        .realtime_ns = mono + offset_ns(rng),
        .boottime_ns = mono + time_ns(rng),
        .raw_ns = time_ns(rng),
        .raw_mult = vclock::mult_for(ns_per_tick * (1 + used(rng)), ms.shift),
        .shift = static_cast<std::uint8_t>(ms.shift),
        .reserved = 0,
        .tai_offset_s = static_cast<std::int16_t>(random_below(rng, 100)),
    };
    for_each_kind([&]<clock_kind K>() {
      fake_counter counter{p->hot.cycle_last + random_delta(rng, ms.max_delta)};
      fake_kernel kernel{};
      int careful = 0;
      const std::int64_t fast = read<K>(*p, counter, kernel, careful);
      const std::int64_t slow = vclock::detail::read_careful<K>(*p, counter, kernel);
      SCOPED_TRACE(testing::Message()
                   << "seed " << seed + 5 << " i " << i << " kind " << static_cast<unsigned>(K));
      ASSERT_EQ(fast, expected_time(K, p->hot, counter.value));
      ASSERT_EQ(slow, fast);
      ASSERT_EQ(careful, 0);
      ASSERT_EQ(kernel.calls, 0);
    });
  }
}

// The timespec form splits the base into seconds and nanoseconds before the counter read
// and carries at most once afterwards: right as long as the elapsed time is under 1 s (the
// timekeeper keeps max_delta under half a second). Checked against the ns form, with bases
// just below a second boundary, where the carry happens.
TEST(Reader, TimespecFormMatchesNanosecondsAndIsNormalised) {
  std::mt19937_64 rng(seed + 7);
  auto p = make_page();
  std::uniform_int_distribution<std::int64_t> seconds(0, std::int64_t{1} << 32);
  std::uniform_real_distribution<double> used(-rate_headroom, rate_headroom);
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t hz = random_hz(rng, min_page_hz);
    const double ns_per_tick = 1e9 / static_cast<double>(hz);
    const double max_ns = ns_per_tick * (1 + rate_headroom);
    const auto half_second = static_cast<std::uint64_t>(0.5e9 / max_ns);
    const vclock::mult_shift ms = page_mult_shift(max_ns, half_second);
    ASSERT_GT(ms.max_delta, 0u) << "hz " << hz;
    // Bases at, just below and well below a second boundary.
    const std::int64_t sub_second[] = {
        0, 999'999'999, 999'999'999 - static_cast<std::int64_t>(random_below(rng, 1000)),
        static_cast<std::int64_t>(random_below(rng, 1'000'000'000)), 500'000'000};
    const std::int64_t mono = seconds(rng) * 1'000'000'000 + sub_second[random_below(rng, 5)];
    p->hot = clock_line{
        .seq = static_cast<std::uint32_t>(2 * i),
        .mult = vclock::mult_for(ns_per_tick * (1 + used(rng)), ms.shift),
        .cycle_last = rng(),
        .max_delta = ms.max_delta,
        .mono_ns = mono,
        .realtime_ns = mono + 1'700'000'000'000'000'000 + sub_second[random_below(rng, 5)],
        .boottime_ns = mono + sub_second[random_below(rng, 5)],
        .raw_ns = mono - sub_second[random_below(rng, 5)],
        .raw_mult = vclock::mult_for(ns_per_tick * (1 + used(rng)), ms.shift),
        .shift = static_cast<std::uint8_t>(ms.shift),
        .reserved = 0,
        .tai_offset_s = 37,
    };
    for_each_kind([&]<clock_kind K>() {
      for (const std::uint64_t delta :
           {std::uint64_t{0}, ms.max_delta - 1, random_delta(rng, ms.max_delta), ms.max_delta}) {
        fake_counter counter{p->hot.cycle_last + delta};
        fake_kernel kernel{expected_time(K, p->hot, p->hot.cycle_last) + 2'000'000'000};
        int careful = 0;
        const std::int64_t ns = read<K>(*p, counter, kernel, careful);
        const timespec ts = vclock::detail::read_fast<K, vclock::detail::as_timespec>(
            *p, counter,
            [&]() noexcept { return vclock::detail::read_careful<K>(*p, counter, kernel); });
        SCOPED_TRACE(testing::Message() << "seed " << seed + 7 << " i " << i << " kind "
                                        << static_cast<unsigned>(K) << " delta " << delta);
        ASSERT_GE(ts.tv_nsec, 0);
        ASSERT_LT(ts.tv_nsec, 1'000'000'000);
        ASSERT_EQ(ts.tv_sec, ns / 1'000'000'000);
        ASSERT_EQ(ts.tv_nsec, ns % 1'000'000'000);
      }
    });
  }
}

}  // namespace
