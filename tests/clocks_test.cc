// The C++ clocks of vclock.hpp: what the type system can check is checked at compile time
// (Cpp17TrivialClock, nanoseconds, is_steady, noexcept now()); the rest against the kernel.
// Also runs the C API smoke test of c_api_test.c.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <limits>
#include <ratio>
#include <type_traits>
#include <utility>

#include "support/realtime_steps.h"
#include "vclock/vclock.h"
#include "vclock/vclock.hpp"

extern "C" int vclock_c_api_smoke(void);

namespace {

// The Cpp17Clock and Cpp17TrivialClock requirements that a type can show, plus the
// contract's own: duration is std::chrono::nanoseconds and now() is noexcept.
template <class C, bool Steady>
constexpr bool meets_clock_contract() {
  using rep = typename C::rep;
  using duration = typename C::duration;
  using time_point = typename C::time_point;
  static_assert(std::chrono::is_clock_v<C>);
  static_assert(std::is_same_v<duration, std::chrono::nanoseconds>);
  static_assert(std::is_same_v<typename C::period, std::nano>);
  static_assert(std::is_same_v<rep, std::chrono::nanoseconds::rep>);
  static_assert(std::is_same_v<typename time_point::clock, C> ||
                std::is_same_v<typename time_point::duration, duration>);
  static_assert(std::is_same_v<typename time_point::duration, duration>);
  static_assert(std::is_same_v<decltype(C::is_steady), const bool>);
  static_assert(C::is_steady == Steady);
  static_assert(std::is_same_v<decltype(C::now()), time_point>);
  static_assert(noexcept(C::now()));
  // Cpp17TrivialClock: rep is arithmetic (a type with numeric_limits), and copying rep,
  // duration and time_point cannot throw. (Comparisons and arithmetic "do not throw" too, but
  // libstdc++ does not declare them noexcept, not even for std::chrono::steady_clock.)
  static_assert(std::is_arithmetic_v<rep> && std::numeric_limits<rep>::is_specialized);
  static_assert(std::is_nothrow_copy_constructible_v<rep>);
  static_assert(std::is_nothrow_copy_constructible_v<duration>);
  static_assert(std::is_nothrow_copy_assignable_v<duration>);
  static_assert(std::is_nothrow_copy_constructible_v<time_point>);
  static_assert(std::is_nothrow_copy_assignable_v<time_point>);
  static_assert(std::is_trivially_copyable_v<time_point>);
  return true;
}

// The wall clocks: to_time_t / from_time_t and std::chrono::system_clock conversions.
template <class C>
constexpr bool meets_system_clock_contract() {
  static_assert(std::is_same_v<decltype(C::to_time_t(C::now())), std::time_t>);
  static_assert(std::is_same_v<decltype(C::from_time_t(std::time_t{})), typename C::time_point>);
  static_assert(noexcept(C::to_time_t(std::declval<typename C::time_point>())));
  static_assert(noexcept(C::from_time_t(std::time_t{})));
  static_assert(std::is_same_v<decltype(C::to_sys(std::declval<typename C::time_point>())),
                               std::chrono::system_clock::time_point>);
  static_assert(
      std::is_same_v<decltype(C::from_sys(std::declval<std::chrono::system_clock::time_point>())),
                     typename C::time_point>);
  return true;
}

// The checks themselves are fair: the standard's clocks pass them.
static_assert(meets_clock_contract<std::chrono::steady_clock, true>());
static_assert(meets_clock_contract<std::chrono::system_clock, false>());

static_assert(meets_clock_contract<vclock::steady_clock, true>());
static_assert(meets_clock_contract<vclock::system_clock, false>());
static_assert(meets_clock_contract<vclock::boot_clock, true>());
static_assert(meets_clock_contract<vclock::tai_clock, false>());
static_assert(meets_clock_contract<vclock::raw_clock, true>());
static_assert(meets_clock_contract<vclock::coarse_steady_clock, true>());
static_assert(meets_clock_contract<vclock::coarse_system_clock, false>());
static_assert(meets_clock_contract<vclock::relaxed::steady_clock, true>());
static_assert(meets_clock_contract<vclock::relaxed::system_clock, false>());
static_assert(meets_clock_contract<vclock::relaxed::boot_clock, true>());
static_assert(meets_clock_contract<vclock::relaxed::tai_clock, false>());
static_assert(meets_clock_contract<vclock::relaxed::raw_clock, true>());
static_assert(meets_clock_contract<vclock::relaxed::coarse_steady_clock, true>());
static_assert(meets_clock_contract<vclock::relaxed::coarse_system_clock, false>());
static_assert(meets_system_clock_contract<vclock::system_clock>());
static_assert(meets_system_clock_contract<vclock::coarse_system_clock>());
static_assert(meets_system_clock_contract<vclock::relaxed::system_clock>());
static_assert(meets_system_clock_contract<vclock::relaxed::coarse_system_clock>());

// Distinct clocks have distinct time_points: mixing them does not compile.
static_assert(!std::is_same_v<vclock::steady_clock, vclock::relaxed::steady_clock>);
static_assert(!std::is_same_v<vclock::steady_clock::time_point, vclock::boot_clock::time_point>);
static_assert(
    !std::is_same_v<vclock::system_clock::time_point, vclock::coarse_system_clock::time_point>);
static_assert(
    !std::is_same_v<vclock::system_clock::time_point, vclock::relaxed::system_clock::time_point>);

constexpr std::int64_t tolerance_ns = 50'000;  // as in api_test.cc: functional, not precision

std::int64_t kernel_ns(clockid_t clock) {
  timespec ts{};
  EXPECT_EQ(clock_gettime(clock, &ts), 0);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// now() of clock C lies between two kernel readings of `id` (coarse clocks may trail by
// `lag`).
template <class C>
void expect_sandwiched(clockid_t id, std::int64_t lag = tolerance_ns) {
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t k1 = kernel_ns(id);
    const std::int64_t v = C::now().time_since_epoch().count();
    const std::int64_t k2 = kernel_ns(id);
    if ((id == CLOCK_REALTIME || id == CLOCK_TAI) && vclock::test::realtime_stepped_recently()) {
      continue;
    }
    ASSERT_GE(v, k1 - lag) << "clock id " << id;
    ASSERT_LE(v, k2 + tolerance_ns) << "clock id " << id;
  }
}

TEST(CApi, SmokeTestFromC) {
  EXPECT_EQ(vclock_c_api_smoke(), 0) << "the check at that line of tests/c_api_test.c failed";
}

TEST(Clocks, NowAgreesWithTheKernelClock) {
  // One timekeeper tick, one kernel jiffy and a scheduling allowance, for the coarse clocks.
  timespec res{};
  ASSERT_EQ(vclock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
  const std::int64_t coarse_lag = res.tv_sec * 1'000'000'000 + res.tv_nsec + 4'000'000 + 20'000'000;
  expect_sandwiched<vclock::steady_clock>(CLOCK_MONOTONIC);
  expect_sandwiched<vclock::system_clock>(CLOCK_REALTIME);
  expect_sandwiched<vclock::boot_clock>(CLOCK_BOOTTIME);
  expect_sandwiched<vclock::tai_clock>(CLOCK_TAI);
  expect_sandwiched<vclock::raw_clock>(CLOCK_MONOTONIC_RAW);
  expect_sandwiched<vclock::coarse_steady_clock>(CLOCK_MONOTONIC, coarse_lag);
  expect_sandwiched<vclock::coarse_system_clock>(CLOCK_REALTIME, coarse_lag);
  expect_sandwiched<vclock::relaxed::steady_clock>(CLOCK_MONOTONIC);
  expect_sandwiched<vclock::relaxed::system_clock>(CLOCK_REALTIME);
  expect_sandwiched<vclock::relaxed::boot_clock>(CLOCK_BOOTTIME);
  expect_sandwiched<vclock::relaxed::tai_clock>(CLOCK_TAI);
  expect_sandwiched<vclock::relaxed::raw_clock>(CLOCK_MONOTONIC_RAW);
  expect_sandwiched<vclock::relaxed::coarse_steady_clock>(CLOCK_MONOTONIC, coarse_lag);
  expect_sandwiched<vclock::relaxed::coarse_system_clock>(CLOCK_REALTIME, coarse_lag);
}

TEST(Clocks, SteadyClockNeverGoesBack) {
  auto last = vclock::steady_clock::now();
  auto last_relaxed = vclock::relaxed::steady_clock::now();
  for (int i = 0; i < 100'000; ++i) {
    const auto now = vclock::steady_clock::now();
    const auto now_relaxed = vclock::relaxed::steady_clock::now();
    ASSERT_GE(now, last);
    ASSERT_GE(now_relaxed, last_relaxed);
    last = now;
    last_relaxed = now_relaxed;
  }
}

TEST(Clocks, SystemClockTimeTRoundTrips) {
  using vclock::system_clock;
  for (const std::time_t t :
       {std::time_t{0}, std::time_t{1}, std::time_t{1'000'000'000}, std::time_t{1'700'000'000},
        std::time_t{4'102'444'800}, std::time_t{-1}, std::time_t{-86'400}}) {
    EXPECT_EQ(system_clock::to_time_t(system_clock::from_time_t(t)), t);
    EXPECT_EQ(system_clock::from_time_t(t).time_since_epoch(), std::chrono::seconds(t));
  }
  // to_time_t truncates towards the past, like std::chrono::system_clock.
  const system_clock::time_point tp(std::chrono::nanoseconds(1'700'000'000'999'999'999));
  EXPECT_EQ(system_clock::to_time_t(tp), 1'700'000'000);
  const system_clock::time_point before_1970(std::chrono::nanoseconds(-1));
  EXPECT_EQ(system_clock::to_time_t(before_1970), -1);
  // now(): within a second (plus the coarse tick) of time(2).
  const std::time_t t1 = std::time(nullptr);
  const std::time_t v = system_clock::to_time_t(system_clock::now());
  const std::time_t t2 = std::time(nullptr);
  EXPECT_GE(v, t1 - 1);
  EXPECT_LE(v, t2 + 1);
  EXPECT_EQ(vclock::coarse_system_clock::to_time_t(vclock::coarse_system_clock::from_time_t(t1)),
            t1);
}

TEST(Clocks, SystemClockConvertsToStdSystemClock) {
  using vclock::system_clock;
  for (const std::int64_t ns : {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1},
                                std::int64_t{1'700'000'000'123'456'789}}) {
    const system_clock::time_point tp{std::chrono::nanoseconds(ns)};
    const std::chrono::system_clock::time_point sys = system_clock::to_sys(tp);
    EXPECT_EQ(std::chrono::duration_cast<std::chrono::nanoseconds>(sys.time_since_epoch()).count(),
              ns)
        << "std::chrono::system_clock counts nanoseconds in libstdc++: exact";
    EXPECT_EQ(system_clock::from_sys(sys), tp);
  }
  // The same epoch: now() agrees with std::chrono::system_clock::now().
  const auto s1 = std::chrono::system_clock::now();
  const auto v = system_clock::to_sys(system_clock::now());
  const auto s2 = std::chrono::system_clock::now();
  EXPECT_GE(v, s1 - std::chrono::microseconds(50));
  EXPECT_LE(v, s2 + std::chrono::microseconds(50));
  // And std::chrono's own time_t conversions agree with vclock's.
  const std::time_t t = system_clock::to_time_t(system_clock::from_sys(s1));
  EXPECT_EQ(t, std::chrono::system_clock::to_time_t(s1));
}

}  // namespace
